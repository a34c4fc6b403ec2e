//! Lowering against the reference interpreter: scheduled pipelines lowered into procs, checked by
//! the proc checker, run in the proc interpreter and compared point by point with the pipeline
//! interpreter on windows with non-zero mins and sizes that do not divide the split factors.

mod common;

use common::{add, dram, off, run, windows, x, Outcome};
use weft_interp::Scalar;
use weft_ir::{BinOp, DType};
use weft_pipe::ast::{Expr, Func, Input, Pipeline};
use weft_pipe::lower::lower;
use weft_pipe::schedule::{Schedule, Tail};

/// Halide's blur: `bx(x, y) = (in(x-1, y) + in(x, y) + in(x+1, y)) / 3`, `by` the same
/// vertically over `bx`, in u16.
fn blur() -> Pipeline {
    let three = Expr::Lit(Scalar::U16(3));
    let bx = Expr::binary(
        BinOp::Div,
        add(
            add(
                Expr::input(0, vec![off(0, -1), x(1)]),
                Expr::input(0, vec![x(0), x(1)]),
            ),
            Expr::input(0, vec![off(0, 1), x(1)]),
        ),
        three.clone(),
    );
    let by = Expr::binary(
        BinOp::Div,
        add(
            add(
                Expr::call(0, vec![x(0), off(1, -1)]),
                Expr::call(0, vec![x(0), x(1)]),
            ),
            Expr::call(0, vec![x(0), off(1, 1)]),
        ),
        three,
    );
    let f = |name: &str, pure| Func {
        name: name.into(),
        vars: vec!["x".into(), "y".into()],
        ty: DType::U16,
        pure,
        updates: vec![],
        place: weft_pipe::ast::Place::NONE,
    };
    Pipeline {
        name: "blur".into(),
        params: vec![],
        inputs: vec![Input {
            name: "input".into(),
            elem: DType::U16,
            rank: 2,
        }],
        funcs: vec![f("bx", bx), f("by", by)],
        outputs: vec![1],
    }
}

fn check_all(p: &Pipeline, s: &Schedule) {
    for (k, w) in windows().iter().enumerate() {
        match run(p, s, &[], w, 1, 7 + k as u64) {
            Outcome::Matched => {}
            Outcome::Asserted(m) => panic!("window {w:?} stopped: {m}"),
        }
    }
}

#[test]
fn blur_default_inlines_the_producer() {
    let p = blur();
    let s = Schedule::new(&p);
    let l = lower(&p, &s, &dram()).unwrap();
    assert_eq!(l.regions.len(), 1, "{}", l.proc);
    check_all(&p, &s);
}

#[test]
fn blur_compute_root() {
    let p = blur();
    let mut s = Schedule::new(&p);
    s.func(&p, "bx").unwrap().compute_root().unwrap();
    let l = lower(&p, &s, &dram()).unwrap();
    // The paper's tight region: one more row above and below the window.
    let bx = &l.regions.iter().find(|r| r.func == "bx").unwrap().allocated;
    assert_eq!(bx[1].0.to_string(), "by_1_min - 1");
    assert_eq!(bx[1].1.to_string(), "by_1_min + by_1_extent");
    check_all(&p, &s);
}

#[test]
fn blur_tiled_with_producer_per_tile() {
    let p = blur();
    for tail in [Tail::GuardWithIf, Tail::ShiftInwards, Tail::RoundUp] {
        let mut s = Schedule::new(&p);
        s.func(&p, "by")
            .unwrap()
            .tile("x", "y", "xo", "yo", "xi", "yi", 4, 3, tail)
            .unwrap();
        s.func(&p, "bx").unwrap().compute_at("by", "xo").unwrap();
        for (k, w) in windows().iter().enumerate() {
            match run(&p, &s, &[], w, 1, 11 + k as u64) {
                Outcome::Matched => {}
                // Shifted and rounded tiles write outside windows smaller than a tile.
                Outcome::Asserted(_) if tail != Tail::GuardWithIf => {}
                Outcome::Asserted(m) => panic!("{tail:?} on {w:?} stopped: {m}"),
            }
        }
    }
}

#[test]
fn blur_strips_with_hoisted_storage() {
    let p = blur();
    let mut s = Schedule::new(&p);
    s.func(&p, "by")
        .unwrap()
        .split("y", "yo", "yi", 4, Tail::GuardWithIf)
        .unwrap()
        .parallel("yo")
        .unwrap();
    s.func(&p, "bx")
        .unwrap()
        .compute_at("by", "yi")
        .unwrap()
        .store_at("by", "yo")
        .unwrap();
    check_all(&p, &s);
}

#[test]
fn compute_at_outside_the_consumer_is_rejected_with_the_legal_levels() {
    let p = blur();
    let mut s = Schedule::new(&p);
    s.func(&p, "by")
        .unwrap()
        .split("y", "yo", "yi", 4, Tail::GuardWithIf)
        .unwrap();
    // bx at a loop of its own consumer is fine; at a loop of itself is not.
    s.func(&p, "bx").unwrap().compute_at("bx", "x").unwrap();
    let e = lower(&p, &s, &dram()).err().expect("rejected");
    assert_eq!(e.rule, "compute-at", "{e}");
}

#[test]
fn shift_and_round_up_are_rejected_on_update_stages() {
    let mut p = blur();
    p.funcs[1].updates.push(weft_pipe::ast::Update {
        rdom: vec![],
        wheres: vec![],
        lhs: vec![x(0), x(1)],
        value: add(Expr::call(1, vec![x(0), x(1)]), Expr::Lit(Scalar::U16(1))),
        place: weft_pipe::ast::Place::NONE,
    });
    let mut s = Schedule::new(&p);
    let mut h = s.func(&p, "by").unwrap().update(0).unwrap();
    let e = h
        .split("x", "xo", "xi", 4, Tail::ShiftInwards)
        .err()
        .expect("rejected");
    assert_eq!(e.rule, "split-tail");
    assert!(e.alternatives.contains(&"GuardWithIf".to_string()));
    h.split("x", "xo", "xi", 4, Tail::GuardWithIf).unwrap();
    check_all(&p, &s);
}

/// `reorder_storage` lays the buffer out in the named order (innermost first): the allocation's
/// extents and every index follow it, and the values do not change. An output's layout is the
/// caller's: refused, with the rule.
#[test]
fn reorder_storage_transposes_the_buffer() {
    let p = blur();
    let mut s = Schedule::new(&p);
    s.func(&p, "bx")
        .unwrap()
        .compute_root()
        .unwrap()
        .reorder_storage(&["y", "x"])
        .unwrap();
    check_all(&p, &s);
    let lp = lower(&p, &s, &dram()).unwrap();
    let text = weft_ir::print::proc_to_string(&lp.proc);
    let alloc = text.lines().find(|l| l.contains("alloc bx")).unwrap();
    // The default layout has y outermost (the window's rows and the stencil's two); transposed,
    // x is outermost.
    assert!(
        alloc.contains("bx: u16[max(1, by_0_extent), max(1, by_1_extent + 2)]"),
        "{alloc}"
    );
    let e = s
        .func(&p, "by")
        .unwrap()
        .reorder_storage(&["y", "x"])
        .err()
        .expect("rejected");
    assert_eq!(e.rule, "reorder-storage", "{e}");
    let e = s
        .func(&p, "bx")
        .unwrap()
        .reorder_storage(&["y", "y"])
        .err()
        .expect("rejected");
    assert_eq!(e.rule, "name", "{e}");
}

/// The reference computes coordinates in i32, wrapping (`3000 * 1000000` is negative); the
/// proc computes them exactly. Where a coordinate's arithmetic would wrap, a precondition stops
/// the proc instead of reading another point (review: it read `input(3000)` where the reference
/// read `input(-1295)`).
#[test]
fn coordinates_that_would_wrap_stop_at_a_precondition() {
    let p = weft_pipe::parse::parse_pipeline(
        0,
        "pipeline ov(input: i32[1]) -> out {
            out(x): i32 = input((x * 1000000) / 1000000) + input(x - 1300);
        }",
        0,
    )
    .unwrap();
    let s = Schedule::new(&p);
    match run(&p, &s, &[], &[(0, 3001)], 1300, 3) {
        Outcome::Asserted(m) => assert!(m.contains("1000000 * out_0_min"), "{m}"),
        o => panic!("{o:?}"),
    }
    assert!(matches!(
        run(&p, &s, &[], &[(0, 2000)], 1300, 3),
        Outcome::Matched
    ));
}

/// Random coordinates whose i32 arithmetic wraps somewhere (`(x * k) / k` for large `k`) on
/// random windows, with inputs wide enough to hold the points the reference's wrapped
/// coordinates reach: the proc matches the reference or stops at a precondition.
#[test]
fn random_wrapping_coordinates_match_or_stop() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut matched, mut stopped) = (0, 0);
    for _ in 0..120 {
        let k = [1i64 << 30, 1 << 20, 1_000_000, 3_000_000, 1 << 12][(next() % 5) as usize];
        let c = (next() % 7) as i64 - 3;
        let d = (next() % 5) as i64;
        let text = format!(
            "pipeline w(input: i32[1]) -> out {{ out(x): i32 = input((x * {k}) / {k} + {c}) + input(x - {d}); }}"
        );
        let p = weft_pipe::parse::parse_pipeline(0, &text, 0).unwrap();
        let lo = (next() % 10_000) as i64 - 5_000;
        let extent = 1 + (next() % 40) as i64;
        match run(&p, &Schedule::new(&p), &[], &[(lo, extent)], 5_000, next()) {
            Outcome::Matched => matched += 1,
            Outcome::Asserted(_) => stopped += 1,
        }
    }
    // Both kinds occur: the generator reaches the wrapping coordinates.
    assert!(
        matched > 10 && stopped > 10,
        "{matched} matched, {stopped} stopped"
    );
}

/// A producer read at rows `y / 2` and `(y + 1) / 2` (an upsampled level) and computed per row
/// of its consumer, stored outside: its rows move by 0 or 1 per row, not by a constant, yet both
/// ends never decrease, so it slides as Halide's does (each row computed once, where it was
/// computed three times over: the rows of both reads in every iteration). The checker proves
/// the rows read were written in an earlier iteration (the one at the end of the quotient's
/// range), and the proc matches the reference, also in strips whose last one is guarded. Its
/// window spans one row or two, so its storage folds into two rows (as Halide's does).
#[test]
fn upsampled_reads_slide_by_steps_that_are_not_constant() {
    let p = weft_pipe::parse::parse_pipeline(
        0,
        "pipeline up(input: i32[2]) -> g {
            f(x, y): i32 = input(x, y) * 3 + input(x + 1, y);
            g(x, y): i32 = f(x / 2, y / 2) + f((x + 1) / 2, (y + 1) / 2);
        }",
        0,
    )
    .unwrap_or_else(|d| panic!("{d:?}"));
    for (schedule, compute) in [
        ("f.compute_at(g, y).store_root();", "y"),
        (
            "g.split(y, yo, yi, 8, GuardWithIf).parallel(yo); f.compute_at(g, yi).store_at(g, yo);",
            "yi",
        ),
    ] {
        let text = format!("schedule s = up {{ {schedule} }}");
        let s = weft_pipe::script::parse_schedule(0, &text, 0, &p, Schedule::new(&p))
            .unwrap_or_else(|d| panic!("{d:?}"))
            .schedule;
        let l = common::lowered(&p, &s, weft_pipe::lower::Engine::Tight);
        let text = l.proc.to_string();
        assert!(
            text.contains(&format!("for f_y in select(g_{compute} == ")),
            "{schedule}: f does not slide:\n{text}"
        );
        let f = l
            .regions
            .iter()
            .find(|r| r.func == "f")
            .expect("f's region");
        assert_eq!(
            f.folded,
            Some((1, 2)),
            "{schedule}: f's rows do not fold into two"
        );
        for (k, w) in windows().iter().enumerate() {
            match run(&p, &s, &[], w, 6, 31 + k as u64) {
                Outcome::Matched => {}
                o => panic!("{schedule} on {w:?}: {o:?}"),
            }
        }
    }
}
