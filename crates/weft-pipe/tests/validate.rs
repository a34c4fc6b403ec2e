//! The validity rules (the formalisation's Def. 4.5), with the paper's own legal and illegal
//! algorithms, each rejection's message checked.

use weft_interp::Scalar;
use weft_ir::{BinOp, DType};
use weft_pipe::ast::{Expr, Func, Param, Pipeline, RDim, Update};
use weft_pipe::validate::validate;

fn func(name: &str, pure: Expr, updates: Vec<Update>) -> Func {
    Func {
        name: name.into(),
        vars: vec!["x".into()],
        ty: DType::I32,
        pure,
        updates,
        place: weft_pipe::ast::Place::NONE,
    }
}

fn pipeline(funcs: Vec<Func>) -> Pipeline {
    Pipeline {
        name: "p".into(),
        params: vec![Param {
            name: "n".into(),
            ty: DType::I32,
        }],
        inputs: vec![],
        outputs: vec![funcs.len() - 1],
        funcs,
    }
}

fn add(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Add, a, b)
}

fn update(rdom: Vec<RDim>, lhs: Expr, value: Expr) -> Update {
    Update {
        rdom,
        wheres: vec![],
        lhs: vec![lhs],
        value,
        place: weft_pipe::ast::Place::NONE,
    }
}

fn r03() -> Vec<RDim> {
    vec![RDim {
        name: "r".into(),
        min: Expr::int(0),
        extent: Expr::int(3),
    }]
}

/// The first diagnostic of a rejected pipeline, as `rule: message`.
fn rejected(p: &Pipeline) -> String {
    let d = validate(p).expect_err("accepted");
    format!("{}: {}", d[0].rule, d[0].message)
}

fn g() -> Func {
    func("g", Expr::Var(0), vec![])
}

#[test]
fn the_papers_separation_examples() {
    // `{g[x]; (x) <- f[x + 1]}`: diverges.
    let f = func(
        "f",
        Expr::call(0, vec![Expr::Var(0)]),
        vec![update(
            vec![],
            Expr::Var(0),
            Expr::call(1, vec![add(Expr::Var(0), Expr::int(1))]),
        )],
    );
    let m = rejected(&pipeline(vec![g(), f]));
    assert!(
        m.starts_with("syntactic-separation: ")
            && m.contains("coordinate 1 of its reads of `f` must be `x` itself"),
        "{m}"
    );
    // `{g[x]; rdom(r = (0, 3)) in (x) <- f[x] + f[r]}`.
    let f = func(
        "f",
        Expr::call(0, vec![Expr::Var(0)]),
        vec![update(
            r03(),
            Expr::Var(0),
            add(
                Expr::call(1, vec![Expr::Var(0)]),
                Expr::call(1, vec![Expr::RVar(0)]),
            ),
        )],
    );
    let m = rejected(&pipeline(vec![g(), f]));
    assert!(m.contains("syntactic separation"), "{m}");
    // `{0; rdom(r = (0, 3)) in (x) <- f[x] + g[x] + g[r]}`: only self-reads are restricted.
    let f = func(
        "f",
        Expr::int(0),
        vec![update(
            r03(),
            Expr::Var(0),
            add(
                add(
                    Expr::call(1, vec![Expr::Var(0)]),
                    Expr::call(0, vec![Expr::Var(0)]),
                ),
                Expr::call(0, vec![Expr::RVar(0)]),
            ),
        )],
    );
    validate(&pipeline(vec![g(), f])).unwrap();
    // A histogram writes at a reduction coordinate and reads itself there: no pure variable.
    let h = func(
        "h",
        Expr::int(0),
        vec![update(
            r03(),
            Expr::call(0, vec![Expr::RVar(0)]),
            add(
                Expr::call(1, vec![Expr::call(0, vec![Expr::RVar(0)])]),
                Expr::int(1),
            ),
        )],
    );
    validate(&pipeline(vec![g(), h])).unwrap();
    // The left-hand side must be `x` where `x` is used.
    let f = func(
        "f",
        Expr::int(0),
        vec![update(
            vec![],
            add(Expr::Var(0), Expr::int(1)),
            Expr::Var(0),
        )],
    );
    let m = rejected(&pipeline(vec![f]));
    assert!(m.contains("its coordinate 1 must be `x` itself"), "{m}");
}

#[test]
fn names_order_startup_bounds_arities_and_types() {
    let m = rejected(&pipeline(vec![g(), func("g", Expr::int(0), vec![])]));
    assert!(
        m.starts_with("unique-names: the name `g` is defined twice"),
        "{m}"
    );
    let m = rejected(&pipeline(vec![func("n", Expr::int(0), vec![])]));
    assert!(m.contains("the name `n` is defined twice"), "{m}");
    // A func reads only earlier funcs; a pure definition not itself.
    let m = rejected(&pipeline(vec![
        func("f", Expr::call(1, vec![Expr::Var(0)]), vec![]),
        g(),
    ]));
    assert!(
        m.starts_with("define-before-use: ")
            && m.contains("a func reads only funcs defined before it"),
        "{m}"
    );
    let m = rejected(&pipeline(vec![func(
        "f",
        Expr::call(0, vec![Expr::Var(0)]),
        vec![],
    )]));
    assert!(
        m.contains("a pure definition cannot read its own func"),
        "{m}"
    );
    // Reduction bounds are startup expressions.
    let bad_bound = |extent: Expr| {
        pipeline(vec![
            g(),
            func(
                "f",
                Expr::int(0),
                vec![update(
                    vec![RDim {
                        name: "r".into(),
                        min: Expr::int(0),
                        extent,
                    }],
                    Expr::RVar(0),
                    Expr::int(1),
                )],
            ),
        ])
    };
    assert!(rejected(&bad_bound(Expr::call(0, vec![Expr::int(0)]))).contains("startup expression"));
    assert!(rejected(&bad_bound(Expr::Var(0))).starts_with("startup-expression: "));
    validate(&bad_bound(Expr::Param(0))).unwrap();
    // Arity and types.
    let m = rejected(&pipeline(vec![
        g(),
        func("f", Expr::call(0, vec![]), vec![]),
    ]));
    assert!(
        m.starts_with("arity: ") && m.contains("reads `g` with 0 coordinates; it has 1 dimensions"),
        "{m}"
    );
    let m = rejected(&pipeline(vec![func(
        "f",
        add(Expr::Var(0), Expr::Lit(Scalar::F32(1.0))),
        vec![],
    )]));
    assert!(
        m.starts_with("types: ") && m.contains("applies `+` to a i32 and a f32"),
        "{m}"
    );
    let m = rejected(&pipeline(vec![func(
        "f",
        Expr::Lit(Scalar::F32(1.0)),
        vec![],
    )]));
    assert!(
        m.contains("its pure definition of `f` has type f32; i32 is expected"),
        "{m}"
    );
    let m = rejected(&pipeline(vec![func(
        "f",
        Expr::int(0),
        vec![Update {
            rdom: r03(),
            wheres: vec![Expr::RVar(0)],
            lhs: vec![Expr::RVar(0)],
            value: Expr::int(1),
            place: weft_pipe::ast::Place::NONE,
        }],
    )]));
    assert!(
        m.contains("a predicate of update 1 of `f` has type i32; bool is expected"),
        "{m}"
    );
}

/// A violation in a pipeline read from text points at the statement that breaks the rule.
#[test]
fn violations_in_text_name_their_statement() {
    let src = "pipeline p(n: i32, input: f32[2]) -> g {
    f(x, y): f32 = input(x, y) + 1.0;
    g(x, y): f32 = f(x, y) * 2.0;
    g(x, y) += g(x + 1, y);
    g(r, y) += f(r, y) for r in 0..x;
}
";
    let p = weft_pipe::parse::parse_pipeline(0, src, 0).expect("parses");
    let ds = validate(&p).expect_err("accepted");
    let at = |d: &weft_ir::Diagnostic| &src[d.span.lo as usize..d.span.hi as usize];
    assert_eq!(ds.len(), 2, "{ds:?}");
    assert_eq!(ds[0].rule, "syntactic-separation");
    assert_eq!(at(&ds[0]), "g(x, y) += g(x + 1, y);");
    assert_eq!(ds[1].rule, "startup-expression");
    assert_eq!(at(&ds[1]), "g(r, y) += f(r, y) for r in 0..x;");
}

/// Math functions take floats of one type: integers are converted to `f32` (as in Halide), a
/// mix of `f32` and `f64` is rejected (found by review: `fma(f32, f64, f64)` narrowed the f64s).
#[test]
fn math_functions_take_floats_of_one_type() {
    let src = "pipeline p(a: f32[1], b: f64[1], c: u8[1]) -> (m, i) {
    m(x): f32 = fma(a(x), b(x), b(x));
    i(x): f32 = fma(c(x), 2, 0.5) + sqrt(c(x));
}
";
    let p = weft_pipe::parse::parse_pipeline(0, src, 0).expect("parses");
    let ds = validate(&p).expect_err("accepted");
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].rule, "types");
    assert!(
        ds[0].message.contains("applies `fma` to a f32 and a f64"),
        "{}",
        ds[0].message
    );
}
