//! The reference interpreter against hand-computed results, the formalisation's rules (strict
//! select, error order, negative reduction extents) and weft's arithmetic.

use weft_interp::Scalar;
use weft_ir::{BinOp, DType, MathFn};
use weft_pipe::ast::{Expr, Func, Input, Param, Pipeline, RDim, Update};
use weft_pipe::interp::{realize, Args, ErrorValue, InputBuffer, Value};

fn func(name: &str, vars: usize, pure: Expr, updates: Vec<Update>) -> Func {
    Func {
        name: name.into(),
        vars: (0..vars).map(|k| format!("x{k}")).collect(),
        ty: DType::I32,
        pure,
        updates,
        place: weft_pipe::ast::Place::NONE,
    }
}

/// A valid pipeline (checked) whose last func is the output.
fn pipeline(funcs: Vec<Func>, inputs: usize) -> Pipeline {
    let out = funcs.len() - 1;
    let p = Pipeline {
        name: "p".into(),
        params: vec![Param {
            name: "n".into(),
            ty: DType::I32,
        }],
        inputs: (0..inputs)
            .map(|k| Input {
                name: format!("in{k}"),
                elem: DType::I32,
                rank: 1,
            })
            .collect(),
        funcs,
        outputs: vec![out],
    };
    weft_pipe::validate::validate(&p).unwrap_or_else(|d| panic!("{d:?}"));
    p
}

fn ints(vals: &[Value]) -> Vec<Result<i64, ErrorValue>> {
    vals.iter()
        .map(|v| v.map(|s| s.as_i128().unwrap() as i64))
        .collect()
}

fn input(min: i64, data: &[i32]) -> InputBuffer {
    InputBuffer {
        region: vec![(min, data.len() as i64)],
        data: data.iter().map(|&v| Scalar::I32(v)).collect(),
    }
}

fn args(n: i32, inputs: Vec<InputBuffer>) -> Args {
    Args {
        params: vec![Scalar::I32(n)],
        inputs,
    }
}

fn add(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Add, a, b)
}

fn rdim(min: Expr, extent: Expr) -> RDim {
    RDim {
        name: "r".into(),
        min,
        extent,
    }
}

/// The paper's running example: `g(x) = x * x; f(x) = g(x) + g(x + 1)` on a window with a
/// non-zero min.
#[test]
fn a_stencil_of_a_producer() {
    let g = func(
        "g",
        1,
        Expr::binary(BinOp::Mul, Expr::Var(0), Expr::Var(0)),
        vec![],
    );
    let f = func(
        "f",
        1,
        add(
            Expr::call(0, vec![Expr::Var(0)]),
            Expr::call(0, vec![add(Expr::Var(0), Expr::int(1))]),
        ),
        vec![],
    );
    let p = pipeline(vec![g, f], 0);
    let v = realize(&p, &args(0, vec![]), 1, &[(-2, 5)]).unwrap();
    let want: Vec<_> = (-2..3i64).map(|x| Ok(x * x + (x + 1) * (x + 1))).collect();
    assert_eq!(ints(&v), want);
}

/// `h(x) = 0; h(clamp(in(r), 0, 3)) += 1` over the input: a histogram, whose update reads the
/// func at a data-dependent point.
#[test]
fn a_histogram() {
    let data = [1, 3, 3, 0, 7, -2, 3];
    let clamp = |e: Expr| {
        Expr::binary(
            BinOp::Min,
            Expr::binary(BinOp::Max, e, Expr::int(0)),
            Expr::int(3),
        )
    };
    let bin = clamp(Expr::input(0, vec![Expr::RVar(0)]));
    let h = func(
        "h",
        1,
        Expr::int(0),
        vec![Update {
            rdom: vec![rdim(Expr::int(0), Expr::Param(0))],
            wheres: vec![],
            lhs: vec![bin.clone()],
            value: add(Expr::call(0, vec![bin]), Expr::int(1)),
            place: weft_pipe::ast::Place::NONE,
        }],
    );
    let p = pipeline(vec![h], 1);
    let v = realize(&p, &args(7, vec![input(0, &data)]), 0, &[(0, 5)]).unwrap();
    // 0 and -2 → bin 0; 1 → 1; 3, 3, 7, 3 → 3.
    assert_eq!(ints(&v), vec![Ok(2), Ok(1), Ok(0), Ok(4), Ok(0)]);
}

/// `s(x) = in(x); s(r) = s(r - 1) + s(r)` for r in 1..n: each point reads the point before as the
/// earlier domain points left it (a prefix sum), with a `where` that skips even r.
#[test]
fn a_prefix_sum_reads_the_earlier_points_and_where_filters() {
    let data: Vec<i32> = (1..=6).collect();
    let update = |wheres: Vec<Expr>| Update {
        rdom: vec![rdim(Expr::int(1), add(Expr::Param(0), Expr::int(-1)))],
        wheres,
        lhs: vec![Expr::RVar(0)],
        value: add(
            Expr::call(0, vec![add(Expr::RVar(0), Expr::int(-1))]),
            Expr::call(0, vec![Expr::RVar(0)]),
        ),
        place: weft_pipe::ast::Place::NONE,
    };
    let s = func(
        "s",
        1,
        Expr::input(0, vec![Expr::Var(0)]),
        vec![update(vec![])],
    );
    let p = pipeline(vec![s], 1);
    let v = realize(&p, &args(6, vec![input(0, &data)]), 0, &[(0, 6)]).unwrap();
    assert_eq!(ints(&v), vec![Ok(1), Ok(3), Ok(6), Ok(10), Ok(15), Ok(21)]);
    let odd = Expr::binary(
        BinOp::Eq,
        Expr::binary(BinOp::Mod, Expr::RVar(0), Expr::int(2)),
        Expr::int(1),
    );
    let s = func(
        "s",
        1,
        Expr::input(0, vec![Expr::Var(0)]),
        vec![update(vec![odd])],
    );
    let p = pipeline(vec![s], 1);
    let v = realize(&p, &args(6, vec![input(0, &data)]), 0, &[(0, 6)]).unwrap();
    // r = 1: 1 + 2; r = 3: 3 + 4; r = 5: 5 + 6.
    assert_eq!(ints(&v), vec![Ok(1), Ok(3), Ok(3), Ok(7), Ok(5), Ok(11)]);
}

/// A negative reduction extent makes every point of the func an `RDom` error; extent 0 runs no
/// point (paper §7, flaw 1).
#[test]
fn negative_reduction_extents_are_errors_and_zero_is_nothing() {
    let f = |extent: i32| {
        pipeline(
            vec![func(
                "f",
                1,
                Expr::Var(0),
                vec![Update {
                    rdom: vec![rdim(Expr::int(0), Expr::int(extent))],
                    wheres: vec![],
                    lhs: vec![Expr::RVar(0)],
                    value: Expr::int(100),
                    place: weft_pipe::ast::Place::NONE,
                }],
            )],
            0,
        )
    };
    let v = realize(&f(-1), &args(0, vec![]), 0, &[(0, 3)]).unwrap();
    assert_eq!(ints(&v), vec![Err(ErrorValue::RDom); 3]);
    let v = realize(&f(0), &args(0, vec![]), 0, &[(0, 3)]).unwrap();
    assert_eq!(ints(&v), vec![Ok(0), Ok(1), Ok(2)]);
    let v = realize(&f(2), &args(0, vec![]), 0, &[(0, 3)]).unwrap();
    assert_eq!(ints(&v), vec![Ok(100), Ok(100), Ok(2)]);
}

/// Division by zero is 0 (paper §7, flaw 3), integers wrap, and floor division rounds down.
#[test]
fn arithmetic_is_total() {
    let e = |op: BinOp, a: i32, b: i32| {
        let p = pipeline(
            vec![func(
                "f",
                1,
                Expr::binary(op, Expr::int(a), Expr::int(b)),
                vec![],
            )],
            0,
        );
        ints(&realize(&p, &args(0, vec![]), 0, &[(0, 1)]).unwrap())[0]
    };
    assert_eq!(e(BinOp::Div, 7, 0), Ok(0));
    assert_eq!(e(BinOp::Mod, 7, 0), Ok(0));
    assert_eq!(e(BinOp::Div, -7, 2), Ok(-4));
    assert_eq!(e(BinOp::Mod, -7, 2), Ok(1));
    assert_eq!(e(BinOp::Add, i32::MAX, 1), Ok(i32::MIN as i64));
    // Math on floats, cast back.
    let p = pipeline(
        vec![func(
            "f",
            1,
            Expr::cast(
                DType::I32,
                Expr::Math(MathFn::Sqrt, vec![Expr::Lit(Scalar::F32(16.0))]),
            ),
            vec![],
        )],
        0,
    );
    assert_eq!(
        ints(&realize(&p, &args(0, vec![]), 0, &[(0, 1)]).unwrap()),
        vec![Ok(4)]
    );
}

/// `select` evaluates every operand: an error in the branch not taken is the result; `Mem` is
/// larger than `RDom`; a read outside an input is `Mem`; and an update's value is evaluated at
/// every domain point, so its error reaches points it does not write.
#[test]
fn errors_follow_the_formalisation() {
    let oob = Expr::input(0, vec![Expr::int(50)]);
    let f = func(
        "f",
        1,
        Expr::select(Expr::Lit(Scalar::Bool(true)), Expr::Var(0), oob.clone()),
        vec![],
    );
    let p = pipeline(vec![f], 1);
    let v = realize(&p, &args(0, vec![input(0, &[1, 2])]), 0, &[(0, 2)]).unwrap();
    assert_eq!(ints(&v), vec![Err(ErrorValue::Mem); 2]);

    let g = func(
        "g",
        1,
        Expr::int(0),
        vec![Update {
            rdom: vec![rdim(Expr::int(0), Expr::int(-1))],
            wheres: vec![],
            lhs: vec![Expr::RVar(0)],
            value: Expr::int(1),
            place: weft_pipe::ast::Place::NONE,
        }],
    );
    let f = func(
        "f",
        1,
        add(Expr::call(0, vec![Expr::Var(0)]), oob.clone()),
        vec![],
    );
    let p = pipeline(vec![g, f], 1);
    let v = realize(&p, &args(0, vec![input(0, &[1, 2])]), 1, &[(0, 1)]).unwrap();
    assert_eq!(ints(&v), vec![Err(ErrorValue::Mem)]);

    let f = func(
        "f",
        1,
        Expr::int(0),
        vec![Update {
            rdom: vec![],
            wheres: vec![],
            lhs: vec![Expr::int(0)],
            value: oob,
            place: weft_pipe::ast::Place::NONE,
        }],
    );
    let p = pipeline(vec![f], 1);
    let v = realize(&p, &args(0, vec![input(0, &[1, 2])]), 0, &[(3, 1)]).unwrap();
    assert_eq!(ints(&v), vec![Err(ErrorValue::Mem)]);
}

/// Arguments that do not fit the pipeline are errors, not panics.
#[test]
fn misfit_arguments_are_errors() {
    let p = pipeline(vec![func("f", 1, Expr::Var(0), vec![])], 0);
    assert!(realize(&p, &args(0, vec![]), 0, &[(0, 1), (0, 1)]).is_err());
    assert!(realize(&p, &args(0, vec![]), 3, &[(0, 1)]).is_err());
    let bad = Args {
        params: vec![Scalar::F32(1.0)],
        inputs: vec![],
    };
    assert!(realize(&p, &bad, 0, &[(0, 1)]).is_err());
}
