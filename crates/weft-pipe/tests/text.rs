//! The text form of pipelines and of their schedules: what it builds, the boundary-condition
//! funcs, and the diagnostics for malformed text and illegal directives.

mod common;

use common::{add, run, x, Outcome};
use weft_interp::Scalar;
use weft_ir::{BinOp, DType};
use weft_pipe::ast::{Expr, Func, Input, Pipeline};
use weft_pipe::interp::{realize, Args, InputBuffer};
use weft_pipe::parse::parse_pipeline;
use weft_pipe::schedule::{Schedule, Tail};
use weft_pipe::script::parse_schedule;

fn parse(text: &str) -> Pipeline {
    parse_pipeline(0, text, 0).unwrap_or_else(|d| panic!("{d:?}"))
}

fn parse_err(text: &str) -> weft_ir::Diagnostic {
    parse_pipeline(0, text, 0).expect_err(text)
}

const BLUR: &str = "pipeline blur(input: u16[2]) -> by {
    bx(x, y): u16 = (input(x - 1, y) + input(x, y) + input(x + 1, y)) / 3;
    by(x, y): u16 = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) / 3;
}";

/// The text builds what the Rust builder builds.
#[test]
fn the_text_form_builds_the_builders_pipeline() {
    // `x - 1` is a subtraction in the text.
    let off = |v: usize, d: i32| match d {
        0 => x(v),
        d if d < 0 => Expr::binary(BinOp::Sub, x(v), Expr::int(-d)),
        d => add(x(v), Expr::int(d)),
    };
    let three = || Expr::Lit(Scalar::U16(3));
    let input = |dx| Expr::input(0, vec![off(0, dx), x(1)]);
    let bx = Expr::binary(BinOp::Div, add(add(input(-1), input(0)), input(1)), three());
    let row = |dy| Expr::call(0, vec![x(0), off(1, dy)]);
    let by = Expr::binary(BinOp::Div, add(add(row(-1), row(0)), row(1)), three());
    let f = |name: &str, pure| Func {
        name: name.into(),
        vars: vec!["x".into(), "y".into()],
        ty: DType::U16,
        pure,
        updates: vec![],
        place: weft_pipe::ast::Place::NONE,
    };
    let built = Pipeline {
        name: "blur".into(),
        params: vec![],
        inputs: vec![Input {
            name: "input".into(),
            elem: DType::U16,
            rank: 2,
        }],
        funcs: vec![f("bx", bx), f("by", by)],
        outputs: vec![1],
    };
    assert_eq!(parse(BLUR), built);
}

/// Update stages with reduction domains, predicates and `+=`, parameters, casts, saturating
/// casts and math functions: lowered and run against the reference.
#[test]
fn updates_parameters_and_casts_run() {
    let p = parse(
        "pipeline p(k: i32, gain: f32, input: i32[1]) -> out {
            f(x): i32 = input(x) * 2;
            f(x) += input(x + r) for r in 0..k where r < x;
            g(x): f32 = sqrt(f32(abs(f(x)))) * gain + 0.5;
            out(x): u8 = u8_sat(g(x) * 40.0);
        }",
    );
    weft_pipe::validate::validate(&p).unwrap();
    let s = Schedule::new(&p);
    for k in [0, 3] {
        let params = [Scalar::I32(k), Scalar::F32(1.5)];
        assert!(matches!(
            run(&p, &s, &params, &[(-2, 9)], 4, 3),
            Outcome::Matched
        ));
    }
    // A prefix sum over a reduction domain on the left-hand side. As an output it reads f(-1),
    // outside the window: a named assertion (Halide's "accessed before the min"); computed into
    // a buffer of its own and copied out, it runs.
    let p = parse(
        "pipeline scan(input: i32[1]) -> f {
            f(x): i32 = 0;
            f(r) = f(r - 1) + input(r) for r in 0..8;
        }",
    );
    match run(&p, &Schedule::new(&p), &[], &[(0, 8)], 2, 1) {
        Outcome::Asserted(m) => assert!(m.contains("f_0_min"), "{m}"),
        o => panic!("{o:?}"),
    }
    let p = parse(
        "pipeline scan(input: i32[1]) -> out {
            f(x): i32 = 0;
            f(r) = f(r - 1) + input(r) for r in 0..8;
            out(x): i32 = f(x);
        }",
    );
    for w in [(0, 8), (-3, 4), (5, 9)] {
        assert!(matches!(
            run(&p, &Schedule::new(&p), &[], &[w], 12, 1),
            Outcome::Matched
        ));
    }
}

/// `repeat_edge`, `constant_exterior` and `mirror` read inside the input whatever the window.
#[test]
fn boundary_conditions() {
    let p = parse(
        "pipeline b(input: i32[1]) -> (e, c, m) {
            edge = repeat_edge(input);
            ext = constant_exterior(input, 7);
            mir = mirror(input);
            e(x): i32 = edge(x);
            c(x): i32 = ext(x);
            m(x): i32 = mir(x);
        }",
    );
    let args = Args {
        params: vec![],
        inputs: vec![InputBuffer {
            region: vec![(10, 3)],
            data: [1, 2, 3].iter().map(|&v| Scalar::I32(v)).collect(),
        }],
    };
    let ints = |f: usize| -> Vec<i64> {
        realize(&p, &args, f, &[(7, 10)])
            .unwrap()
            .into_iter()
            .map(|v| v.unwrap().as_i128().unwrap() as i64)
            .collect()
    };
    // x = 7..17 over an input at [10, 13).
    assert_eq!(ints(3), vec![1, 1, 1, 1, 2, 3, 3, 3, 3, 3]);
    assert_eq!(ints(4), vec![7, 7, 7, 1, 2, 3, 7, 7, 7, 7]);
    assert_eq!(ints(5), vec![3, 2, 1, 1, 2, 3, 3, 2, 1, 1]);
    // Lowered, they read only the input's own region, whatever the window.
    let s = Schedule::new(&p);
    for w in [(0, 1), (-20, 50)] {
        assert!(matches!(run(&p, &s, &[], &[w], 0, 5), Outcome::Matched));
    }
}

/// `lerp(a, b, t)` is Halide's float lerp, `a * (1 - t) + b * t`; on integers it is a type error
/// (Halide's integer lerp scales the weight, which weft does not have); of literals alone, f32.
#[test]
fn lerp_of_floats() {
    let p = parse(
        "pipeline l(input: f32[1]) -> out {
            out(x): f32 = lerp(input(x), input(x + 1), f32(x) * 0.25);
        }",
    );
    let args = Args {
        params: vec![],
        inputs: vec![InputBuffer {
            region: vec![(0, 5)],
            data: [2.0f32, 6.0, -1.0, 3.0, 0.5]
                .iter()
                .map(|&v| Scalar::F32(v))
                .collect(),
        }],
    };
    let got: Vec<f32> = realize(&p, &args, 0, &[(0, 4)])
        .unwrap()
        .into_iter()
        .map(|v| match v.unwrap() {
            Scalar::F32(f) => f,
            o => panic!("{o:?}"),
        })
        .collect();
    let lerp = |a: f32, b: f32, t: f32| a * (1.0 - t) + b * t;
    assert_eq!(
        got,
        vec![
            lerp(2.0, 6.0, 0.0),
            lerp(6.0, -1.0, 0.25),
            lerp(-1.0, 3.0, 0.5),
            lerp(3.0, 0.5, 0.75)
        ]
    );
    match run(&p, &Schedule::new(&p), &[], &[(0, 4)], 1, 5) {
        Outcome::Matched => {}
        o => panic!("{o:?}"),
    }
    let d = parse_err(
        "pipeline l(input: i32[1]) -> out {
            out(x): i32 = lerp(input(x), input(x + 1), 1);
        }",
    );
    assert!(d.message.contains("`lerp` takes floats"), "{d:?}");
    // Literals only: a float lerp (127.5), converted to the func's type where it is stored.
    for (ty, want) in [("u8", Scalar::U8(127)), ("f32", Scalar::F32(127.5))] {
        let p = parse(&format!(
            "pipeline l(input: f32[1]) -> out {{
                out(x): {ty} = lerp(0, 255, 0.5);
            }}"
        ));
        let got = realize(&p, &args, 0, &[(0, 2)]).unwrap();
        assert!(
            got.iter().all(|v| *v.as_ref().unwrap() == want),
            "{ty}: {got:?}"
        );
    }
}

#[test]
fn malformed_pipelines_are_diagnosed_at_the_place() {
    // A reduction bound of another type is named as such (not as the `-` of its extent).
    let text = "pipeline p(input: f32[1]) -> f {\n    f(x): f32 = 0.0;\n    f(x) += 1.0 for r in 0..input(0);\n}";
    let d = parse_err(text);
    assert_eq!(d.rule, "types");
    assert!(
        d.message.contains("a reduction bound has type f32"),
        "{d:?}"
    );
    assert_eq!(&text[d.span.lo as usize..d.span.hi as usize], "input");
    let text = "pipeline p(input: u8[2]) -> f {\n    f(x, y): u8 = input(x, y) + nope;\n}";
    let d = parse_err(text);
    assert_eq!(d.rule, "unknown-name");
    assert_eq!(&text[d.span.lo as usize..d.span.hi as usize], "nope");
    let d = parse_err("pipeline p(input: u8[2]) -> f { f(x): u9 = 1; }");
    assert!(d.message.contains("`u9` is not a type"), "{d:?}");
    let d = parse_err("pipeline p(input: u8[2]) -> f { f(x): u8 = input(x); }");
    assert!(d.message.contains("takes 2 arguments"), "{d:?}");
    let d = parse_err("pipeline p(input: u8[2]) -> g { f(x): u8 = 1; }");
    assert!(d.message.contains("output `g` is not a func"), "{d:?}");
    let d = parse_err("pipeline p(input: u8[2]) -> f { f(x): u8 = 1; input(x): u8 = 2; }");
    assert!(d.message.contains("not a func"), "{d:?}");
    let d = parse_err("pipeline p(input: u8[1]) -> f { f(x): u8 = 300; }");
    assert!(d.message.contains("does not fit u8"), "{d:?}");
    let d = parse_err("pipeline p(input: u8[1]) -> f { f(x, x): u8 = 1; }");
    assert!(d.message.contains("two pure variables"), "{d:?}");
    let d = parse_err("pipeline p(input: u8[1]) -> f { e = wrap(input); f(x): u8 = 1; }");
    assert!(d.message.contains("unknown boundary condition"), "{d:?}");
    // Validity (Def. 4.5) is the validator's: a func used before it is defined.
    let d = parse_err("pipeline p(input: u8[1]) -> f { f(x): u8 = g(x); g(x): u8 = 1; }");
    assert_eq!(d.rule, "unknown-name");
}

fn schedule(p: &Pipeline, text: &str) -> Result<Schedule, weft_ir::Diagnostic> {
    parse_schedule(0, text, 0, p, Schedule::new(p)).map(|s| s.schedule)
}

/// Directives in text build the schedule the Rust API builds.
#[test]
fn text_directives_build_the_apis_schedule() {
    let p = parse(BLUR);
    let s = schedule(
        &p,
        "schedule fast = blur {
            by.split(y, y, yi, 8, GuardWithIf).parallel(y).vectorize(x, 32);
            bx.store_at(by, y).compute_at(by, yi).vectorize(x, 32);
        }",
    )
    .unwrap();
    let mut api = Schedule::new(&p);
    api.func(&p, "by")
        .unwrap()
        .split("y", "y", "yi", 8, Tail::GuardWithIf)
        .unwrap()
        .parallel("y")
        .unwrap()
        .vectorize_by("x", 32)
        .unwrap();
    api.func(&p, "bx")
        .unwrap()
        .store_at("by", "y")
        .unwrap()
        .compute_at("by", "yi")
        .unwrap()
        .vectorize_by("x", 32)
        .unwrap();
    assert_eq!(s, api);
    // Proc-level steps come back as text, after the directives.
    let parsed = parse_schedule(
        0,
        "schedule fast = blur { bx.compute_root(); set_memory(\"alloc bx\", DRAM_STACK); }",
        0,
        &p,
        Schedule::new(&p),
    )
    .unwrap();
    assert_eq!(parsed.proc_steps.len(), 1);
    assert_eq!(
        parsed.proc_steps[0].0,
        "set_memory(\"alloc bx\", DRAM_STACK)"
    );
}

#[test]
fn illegal_directives_are_diagnosed_with_the_rule_and_the_alternatives() {
    let p = parse(
        "pipeline p(input: i32[1]) -> f {
            f(x): i32 = input(x);
            f(x) = f(x) + input(x + r) for r in 0..3;
        }",
    );
    let text = "schedule s = p { f.update(0).split(x, xo, xi, 4, RoundUp); }";
    let d = schedule(&p, text).expect_err("rejected");
    assert!(d.message.contains("split-tail"), "{d:?}");
    assert!(d.notes.iter().any(|n| n.contains("GuardWithIf")), "{d:?}");
    assert_eq!(&text[d.span.lo as usize..d.span.hi as usize], "split");
    let d = schedule(&p, "schedule s = p { f.update(0).parallel(r); }").expect_err("rejected");
    assert!(d.message.contains("parallel-pure"), "{d:?}");
    assert!(
        d.notes.iter().any(|n| n.contains("legal instead: x")),
        "{d:?}"
    );
    let d = schedule(&p, "schedule s = p { f.spilt(x, xo, xi, 4); }").expect_err("rejected");
    assert!(d.message.contains("unknown directive `spilt`"), "{d:?}");
    let d = schedule(&p, "schedule s = p { f.split(x, xo); }").expect_err("rejected");
    assert!(d.message.contains("takes"), "{d:?}");
    let d =
        schedule(&p, "schedule s = p { f.split(x, xo, xi, 4, Sideways); }").expect_err("rejected");
    assert!(d.message.contains("`Sideways` is not one of"), "{d:?}");
    let d = schedule(&p, "schedule s = p { f.split(z, xo, xi, 4); }").expect_err("rejected");
    assert!(d.notes.iter().any(|n| n.contains('x')), "{d:?}");
    let d = schedule(&p, "schedule s = p { f.compute_inline(); }").expect_err("rejected");
    assert!(d.message.contains("output-root"), "{d:?}");
}

/// Malformed text never panics the parser, the validator or lowering: mutations of valid
/// pipelines and schedules (characters deleted, duplicated, replaced) are parsed, validated and
/// lowered; each either works or is a diagnostic.
#[test]
fn mutated_text_never_panics() {
    let sources = [
        BLUR,
        "pipeline p(k: i32, input: i32[1]) -> out {
            e = repeat_edge(input);
            f(x): i32 = e(x) * 2;
            f(x) += e(x + r) for r in 0..k where r < x;
            out(x): u8 = u8_sat(f(x) / 3);
        }",
    ];
    let schedule_text = "schedule s = blur { by.split(y, y, yi, 8).parallel(y).vectorize(x, 4); bx.compute_at(by, yi); }";
    let alphabet: Vec<char> = "()[]{},;:.=+-*/%<>_ xyzrk0123456789abfiu".chars().collect();
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let dram = common::dram();
    for round in 0..3000 {
        let base = if round % 3 == 2 {
            schedule_text
        } else {
            sources[round % 2]
        };
        let mut chars: Vec<char> = base.chars().collect();
        for _ in 0..1 + next() % 3 {
            let at = (next() as usize) % chars.len().max(1);
            match next() % 3 {
                0 => {
                    chars.remove(at.min(chars.len() - 1));
                }
                1 => chars.insert(at, alphabet[(next() as usize) % alphabet.len()]),
                _ => {
                    let (k, c) = (
                        at.min(chars.len() - 1),
                        alphabet[(next() as usize) % alphabet.len()],
                    );
                    chars[k] = c;
                }
            }
        }
        let text: String = chars.into_iter().collect();
        if round % 3 == 2 {
            let p = parse(BLUR);
            if let Ok(s) = parse_schedule(0, &text, 0, &p, Schedule::new(&p)) {
                let _ = weft_pipe::lower::lower(&p, &s.schedule, &dram);
            }
        } else if let Ok(p) = parse_pipeline(0, &text, 0) {
            if weft_pipe::validate::validate(&p).is_ok() {
                let _ = weft_pipe::lower::lower(&p, &Schedule::new(&p), &dram);
            }
        }
    }
}

/// `clone_in`: the named consumer reads an inlined copy of the func, the others read it where
/// it is computed, so its region (min and max) is only what they need (here the output's window,
/// not the wider stencil `g` reads), and the result is the reference's on every window.
#[test]
fn clone_in_inlines_a_copy_into_one_consumer() {
    let p = parse(
        "pipeline p(input: i32[1]) -> h {
            f(x): i32 = input(x - 1) + 2 * input(x + 1);
            g(x): i32 = f(x - 2) * f(x + 2);
            h(x): i32 = g(x) + f(x);
        }",
    );
    let dram = common::dram();
    let region = |s: &Schedule| {
        let l = weft_pipe::lower::lower(&p, s, &dram).unwrap();
        let f = l.regions.iter().find(|r| r.func == "f").unwrap();
        (f.allocated[0].0.to_string(), f.allocated[0].1.to_string())
    };
    let plain = schedule(&p, "schedule s = p { f.compute_root(); g.compute_root(); }").unwrap();
    assert_eq!(
        region(&plain),
        (
            "h_0_min - 2".to_string(),
            "h_0_min + h_0_extent + 1".to_string()
        )
    );
    let cloned = schedule(
        &p,
        "schedule s = p { f.compute_root().clone_in(g); g.compute_root(); }",
    )
    .unwrap();
    assert_eq!(
        region(&cloned),
        (
            "h_0_min".to_string(),
            "h_0_min + h_0_extent - 1".to_string()
        )
    );
    for (k, w) in common::windows().iter().enumerate() {
        let w = &w[..1];
        match run(&p, &cloned, &[], w, 3, 40 + k as u64) {
            Outcome::Matched => {}
            Outcome::Asserted(m) => panic!("window {w:?} stopped: {m}"),
        }
    }
    // A consumer that does not call the func, and a func with update stages.
    let d = schedule(&p, "schedule s = p { g.clone_in(f); }").expect_err("rejected");
    assert!(d.message.contains("clone-in-caller"), "{d:?}");
    assert!(d.notes.iter().any(|n| n.contains("clone_in(h)")), "{d:?}");
    let d = schedule(&p, "schedule s = p { f.clone_in(f); }").expect_err("rejected");
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("clone_in(g), clone_in(h)")),
        "{d:?}"
    );
    let q = parse(
        "pipeline q(input: i32[1]) -> g {
            f(x): i32 = input(x);
            f(x) = f(x) + input(x + r) for r in 0..3;
            g(x): i32 = f(x) + 1;
        }",
    );
    let d = parse_schedule(
        0,
        "schedule s = q { f.clone_in(g); }",
        0,
        &q,
        Schedule::new(&q),
    )
    .map(|s| s.schedule)
    .expect_err("rejected");
    assert!(d.message.contains("inline-pure"), "{d:?}");
}
