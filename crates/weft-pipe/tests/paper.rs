//! The Halide formalisation's own examples (Figs. 1-3) with their exact regions, under the tight
//! engine and β0, and the flaws it found in Halide (§7) as regressions.

mod common;

use common::{add, lowered, off, regions, run, x, Outcome};
use std::collections::HashMap;
use weft_interp::Scalar;
use weft_ir::{BinOp, DType, MathFn};
use weft_pipe::ast::{Expr, Func, Input, Param, Pipeline, RDim, Update};
use weft_pipe::lower::Engine;
use weft_pipe::schedule::{Schedule, Tail};

fn func(name: &str, ty: DType, pure: Expr) -> Func {
    Func {
        name: name.into(),
        vars: vec!["x".into()],
        ty,
        pure,
        updates: vec![],
        place: weft_pipe::ast::Place::NONE,
    }
}

fn pipeline(funcs: Vec<Func>, params: Vec<Param>, inputs: usize) -> Pipeline {
    let out = funcs.len() - 1;
    Pipeline {
        name: "p".into(),
        params,
        inputs: (0..inputs)
            .map(|k| Input {
                name: format!("in{k}"),
                elem: DType::I32,
                rank: 1,
            })
            .collect(),
        funcs,
        outputs: vec![out],
    }
}

/// The running example: `g(x) = x * x; f(x) = g(x) + g(x + 1)`; `out` is an identity of `f`
/// when `identity` (so that `f` may overcompute into a buffer of its own).
fn running_example(identity: bool) -> Pipeline {
    let g = func("g", DType::I32, Expr::binary(BinOp::Mul, x(0), x(0)));
    let f = func(
        "f",
        DType::I32,
        add(Expr::call(0, vec![x(0)]), Expr::call(0, vec![off(0, 1)])),
    );
    let mut funcs = vec![g, f];
    if identity {
        funcs.push(func("out", DType::I32, Expr::call(1, vec![x(0)])));
    }
    pipeline(funcs, vec![], 0)
}

fn env(pairs: &[(&'static str, i64)]) -> HashMap<&'static str, i64> {
    pairs.iter().cloned().collect()
}

/// Fig. 1: every func at the root; on the window [0, 6) `f` needs [0, 6) and `g` [0, 7).
#[test]
fn figure_1_default_schedule() {
    let p = running_example(false);
    let mut s = Schedule::new(&p);
    s.func(&p, "g").unwrap().compute_root().unwrap();
    for engine in [Engine::Tight, Engine::Beta0] {
        let l = lowered(&p, &s, engine);
        let e = env(&[("f_0_min", 0), ("f_0_extent", 6)]);
        assert_eq!(
            regions(&l, "g", &e),
            (vec![(0, 6)], vec![(0, 6)]),
            "{engine:?}"
        );
        assert_eq!(
            regions(&l, "f", &e),
            (vec![(0, 5)], vec![(0, 5)]),
            "{engine:?}"
        );
        // Symbolically: [x_min, x_min + x_len], the paper's tight fill.
        let g = &l.regions[0].allocated[0];
        assert_eq!(
            (g.0.to_string(), g.1.to_string()),
            ("f_0_min".into(), "f_0_min + f_0_extent".into())
        );
    }
    assert!(matches!(
        run(&p, &s, &[], &[(0, 6)], 0, 1),
        Outcome::Matched
    ));
}

/// Fig. 2: `f` split by 3, `g` computed and stored per tile: four values of `g` per tile, and
/// `g(3)` computed by both tiles.
#[test]
fn figure_2_compute_at_a_tile() {
    let p = running_example(false);
    let mut s = Schedule::new(&p);
    s.func(&p, "f")
        .unwrap()
        .split("x", "xo", "xi", 3, Tail::GuardWithIf)
        .unwrap();
    s.func(&p, "g")
        .unwrap()
        .compute_at("f", "xo")
        .unwrap()
        .store_at("f", "xo")
        .unwrap();
    for engine in [Engine::Tight, Engine::Beta0] {
        let l = lowered(&p, &s, engine);
        for (tile, want) in [(0, (0, 3)), (1, (3, 6))] {
            let e = env(&[("f_0_min", 0), ("f_0_extent", 6), ("f_xo", tile)]);
            let (computed, allocated) = regions(&l, "g", &e);
            assert_eq!(computed, vec![want], "{engine:?} tile {tile}");
            assert_eq!(allocated, vec![want], "{engine:?} tile {tile}");
        }
    }
    assert!(matches!(
        run(&p, &s, &[], &[(0, 6)], 0, 1),
        Outcome::Matched
    ));
    // A window the tiles do not divide: the last tile's `g` is clamped by the guard (tight) and
    // not by β0, which ignores conditions.
    let e = env(&[("f_0_min", 0), ("f_0_extent", 7), ("f_xo", 2)]);
    assert_eq!(
        regions(&lowered(&p, &s, Engine::Tight), "g", &e).0,
        vec![(6, 7)]
    );
    assert_eq!(
        regions(&lowered(&p, &s, Engine::Beta0), "g", &e).0,
        vec![(6, 9)]
    );
    assert!(matches!(
        run(&p, &s, &[], &[(0, 7)], 0, 1),
        Outcome::Matched
    ));
}

/// Fig. 3: `f` split by 4 rounding up (and vectorized), realized on [0, 6): `f` is computed and
/// allocated on [0, 8). `g` is allocated on [0, 9); the formalisation computes it on [0, 7) and
/// lets `f(6)`, `f(7)` read uninitialised `g(7)`, `g(8)`, but weft's procs never read
/// uninitialised memory (the proc checker's `init` rule), so weft computes it on what is read,
/// [0, 9) — which is also β0's region.
#[test]
fn figure_3_round_up_overcomputes() {
    let p = running_example(true);
    let mut s = Schedule::new(&p);
    s.func(&p, "f")
        .unwrap()
        .compute_root()
        .unwrap()
        .split("x", "xo", "xi", 4, Tail::RoundUp)
        .unwrap()
        .vectorize("xi")
        .unwrap();
    s.func(&p, "g").unwrap().compute_root().unwrap();
    for engine in [Engine::Tight, Engine::Beta0] {
        let l = lowered(&p, &s, engine);
        let e = env(&[("out_0_min", 0), ("out_0_extent", 6)]);
        assert_eq!(
            regions(&l, "f", &e),
            (vec![(0, 7)], vec![(0, 7)]),
            "{engine:?}"
        );
        assert_eq!(
            regions(&l, "g", &e),
            (vec![(0, 8)], vec![(0, 8)]),
            "{engine:?}"
        );
    }
    assert!(matches!(
        run(&p, &s, &[], &[(0, 6)], 0, 1),
        Outcome::Matched
    ));
}

/// §7.1 (Halide #4385): a negative reduction extent is an error, checked when the pipeline
/// starts (a named precondition); extent 0 is a no-op.
#[test]
fn negative_reduction_extent_is_a_startup_error() {
    let mut f = func("f", DType::I32, Expr::int(7));
    f.updates.push(Update {
        rdom: vec![RDim {
            name: "r".into(),
            min: Expr::int(0),
            extent: Expr::Param(0),
        }],
        wheres: vec![],
        lhs: vec![x(0)],
        value: add(
            Expr::call(0, vec![x(0)]),
            Expr::input(0, vec![add(x(0), Expr::RVar(0))]),
        ),
        place: weft_pipe::ast::Place::NONE,
    });
    let p = pipeline(
        vec![f],
        vec![Param {
            name: "n".into(),
            ty: DType::I32,
        }],
        1,
    );
    let s = Schedule::new(&p);
    match run(&p, &s, &[Scalar::I32(-1)], &[(0, 5)], 4, 1) {
        Outcome::Asserted(m) => assert!(m.contains("0 <= n"), "{m}"),
        o => panic!("{o:?}"),
    }
    for n in [0, 3] {
        assert!(matches!(
            run(&p, &s, &[Scalar::I32(n)], &[(0, 5)], 4, 1),
            Outcome::Matched
        ));
    }
}

/// §7.2 (Halide #3883): an output that overcomputes does not fit the caller's window: weft stops
/// at a named precondition (Halide failed or needed an identity func). Appending an identity
/// func changes nothing on the window where both run.
#[test]
fn identity_funcs_are_not_observable() {
    let plain = running_example(false);
    let mut s = Schedule::new(&plain);
    s.func(&plain, "f")
        .unwrap()
        .split("x", "xo", "xi", 4, Tail::RoundUp)
        .unwrap();
    match run(&plain, &s, &[], &[(0, 6)], 0, 1) {
        Outcome::Asserted(m) => assert!(
            m.contains("precondition") && m.contains("f_0_extent"),
            "{m}"
        ),
        o => panic!("{o:?}"),
    }
    assert!(matches!(
        run(&plain, &s, &[], &[(0, 8)], 0, 1),
        Outcome::Matched
    ));
    let with_id = running_example(true);
    let mut s2 = Schedule::new(&with_id);
    s2.func(&with_id, "f")
        .unwrap()
        .compute_root()
        .unwrap()
        .split("x", "xo", "xi", 4, Tail::RoundUp)
        .unwrap();
    for w in [(0, 6), (0, 8), (-3, 5)] {
        assert!(matches!(
            run(&with_id, &s2, &[], &[w], 0, 1),
            Outcome::Matched
        ));
    }
}

/// §7.3 (Halide #4423): `g(x) = 5; f(x) = 100 / g(x)`, `f` split by 8 rounding up, realized on
/// 25 points: the overcomputed points of `f` read `g` where it was computed (weft computes what
/// is read), and `x / 0 = 0` besides; no crash, the right values.
#[test]
fn division_by_zero_outside_the_computed_region() {
    for gv in [5, 0] {
        let g = func("g", DType::I32, Expr::int(gv));
        let f = func(
            "f",
            DType::I32,
            Expr::binary(BinOp::Div, Expr::int(100), Expr::call(0, vec![x(0)])),
        );
        let out = func("out", DType::I32, Expr::call(1, vec![x(0)]));
        let p = pipeline(vec![g, f, out], vec![], 0);
        let mut s = Schedule::new(&p);
        s.func(&p, "g").unwrap().compute_root().unwrap();
        s.func(&p, "f")
            .unwrap()
            .compute_root()
            .unwrap()
            .split("x", "xo", "xi", 8, Tail::RoundUp)
            .unwrap();
        assert!(matches!(
            run(&p, &s, &[], &[(0, 25)], 0, 1),
            Outcome::Matched
        ));
        let l = lowered(&p, &s, Engine::Tight);
        let e = env(&[("out_0_min", 0), ("out_0_extent", 25)]);
        assert_eq!(regions(&l, "g", &e).0, vec![(0, 31)]);
    }
}

/// §7.4 (Halide #6131): an index computed by a func (`h(x) = clamp(x, lo, lo + 20)`) reads
/// `g` only inside its computed region, even under a rounded-up vectorized split. Inlined, `h`
/// bounds `g` to `[lo, lo + 20]`; computed into a buffer its values are data, of type `i32`,
/// with no bounds: lowering asks for a clamp rather than read outside what it computed.
#[test]
fn index_reads_stay_inside_the_computed_region() {
    let clamp =
        |e: Expr, lo: Expr, hi: Expr| Expr::binary(BinOp::Min, Expr::binary(BinOp::Max, e, lo), hi);
    let lo = Expr::Param(0);
    let h = func(
        "h",
        DType::I32,
        clamp(x(0), lo.clone(), add(lo, Expr::int(20))),
    );
    let g = func(
        "g",
        DType::F32,
        Expr::Math(MathFn::Sin, vec![Expr::cast(DType::F32, x(0))]),
    );
    let f = func(
        "f",
        DType::F32,
        Expr::call(1, vec![Expr::call(0, vec![x(0)])]),
    );
    let out = func("out", DType::F32, Expr::call(2, vec![x(0)]));
    let p = pipeline(
        vec![h, g, f, out],
        vec![Param {
            name: "lo".into(),
            ty: DType::I32,
        }],
        0,
    );
    let mut s = Schedule::new(&p);
    s.func(&p, "g").unwrap().compute_root().unwrap();
    s.func(&p, "f")
        .unwrap()
        .compute_root()
        .unwrap()
        .split("x", "xo", "xi", 64, Tail::RoundUp)
        .unwrap()
        .vectorize("xi")
        .unwrap();
    for w in [(0, 10), (-30, 100)] {
        assert!(matches!(
            run(&p, &s, &[Scalar::I32(3)], &[w], 0, 1),
            Outcome::Matched
        ));
    }
    let l = lowered(&p, &s, Engine::Tight);
    let e = env(&[("out_0_min", -30), ("out_0_extent", 100), ("lo", 3)]);
    assert_eq!(regions(&l, "g", &e).0, vec![(3, 23)]);
    s.func(&p, "h").unwrap().compute_root().unwrap();
    let err = weft_pipe::lower::lower(&p, &s, &common::dram())
        .err()
        .expect("rejected");
    assert_eq!(err.rule, "data-index");
    assert!(err.message.contains("clamp it"), "{err}");
}

/// §7.5 (Halide #6808): `f(x) = 1; r.where(f(0) == 1); f(r) = 2; f.update().parallel(r)` races;
/// `parallel` is legal on pure loops only.
#[test]
fn parallel_reduction_with_a_predicate_is_rejected() {
    let mut f = func("f", DType::I32, Expr::int(1));
    f.updates.push(Update {
        rdom: vec![RDim {
            name: "r".into(),
            min: Expr::int(0),
            extent: Expr::int(10),
        }],
        wheres: vec![Expr::binary(
            BinOp::Eq,
            Expr::call(0, vec![Expr::int(0)]),
            Expr::int(1),
        )],
        lhs: vec![Expr::RVar(0)],
        value: Expr::int(2),
        place: weft_pipe::ast::Place::NONE,
    });
    let p = pipeline(vec![f], vec![], 0);
    weft_pipe::validate::validate(&p).unwrap();
    let mut s = Schedule::new(&p);
    let mut h = s.func(&p, "f").unwrap().update(0).unwrap();
    let e = h.parallel("r").err().expect("rejected");
    assert_eq!(e.rule, "parallel-pure");
    assert!(e.message.contains("reduction loop"), "{e}");
    // Sequential, it computes the reference.
    let s = Schedule::new(&p);
    assert!(matches!(
        run(&p, &s, &[], &[(-2, 14)], 0, 1),
        Outcome::Matched
    ));
}
