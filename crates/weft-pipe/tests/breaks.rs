//! Holes found by an adversarial review of pipeline lowering (issue 9), kept as regression tests:
//! each failed on the code it was written against; its comment says what went wrong and what
//! the behaviour now is.

mod common;

use common::{dram, run, Outcome};
use weft_pipe::ast::{Expr, Pipeline};
use weft_pipe::parse::parse_pipeline;
use weft_pipe::schedule::Schedule;
use weft_pipe::script::parse_schedule;

fn parse(text: &str) -> Pipeline {
    parse_pipeline(0, text, 0).unwrap_or_else(|d| panic!("{d:?}"))
}

fn sched(p: &Pipeline, text: &str) -> Schedule {
    parse_schedule(0, text, 0, p, Schedule::new(p))
        .unwrap_or_else(|d| panic!("{d:?}"))
        .schedule
}

fn matched(o: Outcome) {
    assert!(matches!(o, Outcome::Matched), "{o:?}");
}

/// `bound` on an output is accepted (schedule.rs does not refuse it, lowering does not either),
/// and lowering replaces the output's region (its window) by the bound with no precondition that
/// the window lies inside the bound. On the window [0, 4) with `bound(x, 0, 2)` the proc writes
/// only f(0), f(1) and returns with f(2), f(3) never written (the harness sees an uninitialised
/// cell where the reference has input(x) + 1). Correct: a precondition that the window lies in
/// the bound (Halide asserts "Output buffer f is accessed at 3, which is beyond the max (1)"), or
/// computing the whole window, or rejecting `bound` on outputs.
#[test]
fn bound_on_an_output_leaves_part_of_the_window_unwritten() {
    let p = parse(
        "pipeline p(input: i32[1]) -> f {
            f(x): i32 = input(x) + 1;
        }",
    );
    let s = sched(&p, "schedule s = p { f.bound(x, 0, 2); }");
    // Now: a precondition that the window lies in the bound.
    match run(&p, &s, &[], &[(0, 4)], 2, 1) {
        Outcome::Asserted(m) => assert!(m.contains("f_0_extent"), "{m}"),
        o => panic!("{o:?}"),
    }
    matched(run(&p, &s, &[], &[(0, 2)], 2, 1));
}

/// Coordinates are i32 and wrap (docs/pipelines.md §1; the reference evaluates them so), but
/// lowering turns index expressions into control expressions in unbounded (i64) arithmetic.
/// `65536 * 65536` is 0 in i32, so `x / (65536 * 65536)` is `x / 0 == 0` and the reference reads
/// input(0) everywhere; lowering folds the divisor to 2^32 and reads input(floor(x / 2^32)),
/// which is input(-1) for x < 0: a different value, no precondition fails (input(-1) is inside the
/// input). Correct: wrap constants (and every coordinate operation) to i32 as the reference does,
/// or reject what may overflow. Likely in `lower/bounds.rs`, `Lower::to_lin` (Lit/Mul/Div).
#[test]
fn index_arithmetic_does_not_wrap_to_i32() {
    let p = parse(
        "pipeline p(input: i32[1]) -> f {
            f(x): i32 = input(x / (65536 * 65536));
        }",
    );
    matched(run(&p, &Schedule::new(&p), &[], &[(-3, 6)], 4, 1));
}

/// The same unbounded arithmetic in an update's quasi-affine `where` predicate, which lowering
/// turns into a control guard (`Lower::to_cond`, used by `emit_store`): at x = 1 the reference
/// computes `1 + 2147483647` = -2^31 < 0, true, and writes 7; the lowered guard compares 2^31 < 0,
/// false, and keeps 5. Correct: evaluate predicates with i32 wrapping (or fall back to the data
/// expression, which `emit_store` already does for predicates that are not quasi-affine).
#[test]
fn where_predicate_arithmetic_does_not_wrap_to_i32() {
    let p = parse(
        "pipeline p(input: i32[1]) -> f {
            f(x): i32 = 5;
            f(x) = 7 where x + 2147483647 < 0;
        }",
    );
    matched(run(&p, &Schedule::new(&p), &[], &[(0, 3)], 2, 1));
}

/// Splitting the outer loop of a split again (legal in schedule.rs) with `ShiftInwards`: for a
/// region of at most 4 points `xo` has extent 1 < 2, so the shifted tile starts at xo = -1 and
/// the stage writes x = min - 4 .. min - 1. Bounds inference (`bind_stage` in lower/bounds.rs)
/// ranges `x` from its own split's tail only (GuardWithIf: [min, last]) and ignores how `xo`
/// itself was split, so the buffer of `f` and the input precondition are too small: the lowered
/// proc fails the checker ("write of `f` may be out of bounds", counterexample extent 1), so
/// `weft::pipeline::lower_checked` rejects a legal schedule with a checker error. Correct: range a
/// split variable over the ranges its outer and inner loops really take (recursively), giving a
/// proc that checks and matches the reference.
#[test]
fn shift_inwards_split_of_a_split_outer_breaks_bounds() {
    let p = parse(
        "pipeline p(input: i32[1]) -> g {
            f(x): i32 = input(x) * 2;
            g(x): i32 = f(x) + 1;
        }",
    );
    let s = sched(
        &p,
        "schedule s = p { f.compute_root().split(x, xo, xi, 4, GuardWithIf).split(xo, xoo, xoi, 2, ShiftInwards); }",
    );
    for w in [(0, 5), (-3, 3), (1, 1)] {
        matched(run(&p, &s, &[], &[w], 8, 1));
    }
}

/// The same root cause with `RoundUp` splitting the inner loop of a `RoundUp` split: `xi` has
/// extent 4, split by 3 rounded up it runs over 0..6, so tile xo writes 4·xo .. 4·xo + 5 (tiles
/// overlap and the last runs 2 points past what `bind_stage` assumes, `min + 4·ceil(ext/4) - 1`).
/// The buffer is too small and the proc fails the checker. Correct: as above (and note that with
/// `parallel(xo)` such overlapping tiles would race, which `schedule::overlaps` does not see
/// because it only looks for `ShiftInwards`).
#[test]
fn round_up_split_of_a_split_inner_breaks_bounds() {
    let p = parse(
        "pipeline p(input: i32[1]) -> g {
            f(x): i32 = input(x) * 2;
            g(x): i32 = f(x) + 1;
        }",
    );
    let s = sched(
        &p,
        "schedule s = p { f.compute_root().split(x, xo, xi, 4, RoundUp).split(xi, xio, xii, 3, RoundUp); }",
    );
    for w in [(0, 5), (-3, 8), (1, 1)] {
        matched(run(&p, &s, &[], &[w], 8, 1));
    }
}

/// The Rust API's `bound(var, min, extent)` takes arbitrary expressions; neither the schedule nor
/// lowering validates them, and `Lower::to_lin` indexes `self.params[k]` directly, so a parameter
/// the pipeline does not have panics (index out of bounds in lower/bounds.rs) instead of being
/// reported. Correct: an error (rule `affine`/`name`) from `FuncHandle::bound` or from lowering.
/// (`Expr::InputDim` with a missing input panics the same way.)
#[test]
fn bound_with_an_unknown_parameter_panics_in_lowering() {
    let p = parse(
        "pipeline p(input: i32[1]) -> g {
            f(x): i32 = input(x);
            g(x): i32 = f(x);
        }",
    );
    let mut s = Schedule::new(&p);
    let mut h = s.func(&p, "f").unwrap();
    h.compute_root().unwrap();
    let e = h
        .bound("x", Expr::Param(3), Expr::int(4))
        .err()
        .expect("rejected");
    assert_eq!(e.rule, "startup", "{e}");
    let e = h
        .bound_extent(
            "x",
            Expr::InputDim {
                input: 5,
                dim: 0,
                extent: true,
            },
        )
        .err()
        .expect("rejected");
    assert_eq!(e.rule, "startup", "{e}");
    assert!(weft_pipe::lower::lower(&p, &s, &dram()).is_ok());
}

/// Review of partitioning split loops: a coordinate `x * -2^31 * 65536 * 65536` has the
/// coefficient -2^63 in the control arithmetic. Partitioning negated it (the steady state's end
/// divides by `-c`), which wraps back to -2^63, and lowering panicked in `Lin::div` ("division
/// by a non-positive constant"); before, only coefficients of ±1 were partitioned. Now a
/// coefficient beyond i32 is not partitioned, and the checker names the overflow.
#[test]
fn a_huge_coefficient_is_not_partitioned() {
    let p = parse(
        "pipeline p(n: i32, input: i32[1]) -> out { c = repeat_edge(input);
        out(x): i32 = c(x * (0 - 2147483647 - 1) * 65536 * 65536); }",
    );
    let s = Schedule::new(&p);
    let l = weft_pipe::lower::lower_with(&p, &s, &dram(), weft_pipe::lower::Engine::Tight)
        .expect("lowers");
    let d = weft_check::check_proc(&l.proc).expect_err("the control arithmetic overflows");
    assert!(format!("{d:?}").contains("overflow"), "{d:?}");
}

/// The outer loop of an output's guarded vectorized tile runs as three loops; the middle one
/// (where the whole tile lies inside the window and past the input's clamps) has neither the
/// guard nor the clamps, and every window matches the reference.
#[test]
fn an_outputs_guarded_tile_loses_its_guard_and_clamps_in_the_steady_state() {
    let p = parse(
        "pipeline p(input: i32[1]) -> out { c = repeat_edge(input);
        out(x): i32 = c(x - 1) + c(x + 1); }",
    );
    let s = sched(
        &p,
        "schedule s = p { out.split(x, xo, xi, 8, GuardWithIf).vectorize(xi); }",
    );
    let l = common::lowered(&p, &s, weft_pipe::lower::Engine::Tight);
    let text = format!("{}", l.proc);
    let loops: Vec<&str> = text
        .split("for out_xi in 0..8 {")
        .skip(1)
        .map(|body| &body[..body.find('}').unwrap()])
        .collect();
    assert_eq!(loops.len(), 3, "{text}");
    assert!(
        loops[0].contains("if ") && loops[0].contains("min("),
        "{text}"
    );
    assert!(
        !loops[1].contains("if ") && !loops[1].contains("min("),
        "{text}"
    );
    for w in [(0, 1), (0, 8), (-3, 17), (5, 40), (2, 3)] {
        matched(run(&p, &s, &[], &[w], 2, 7));
        matched(run(&p, &s, &[], &[w], 0, 9));
    }
}

/// Found by the random schedules once `clone_in` changed their sequence: a producer slid inside
/// a fused, twice-shifted tile made the definedness analysis split cases inside cases, and the
/// checker allocated until the machine killed it (memory grows without bound in
/// `init::member`). The elimination now stops at a budget of steps and term size, leaving out
/// the cases it did not reach (a smaller chunk: safe), and a read it then does not prove is
/// reported as undecided: this schedule is rejected so, in seconds.
#[test]
fn nested_case_splits_of_the_definedness_analysis_stop_at_a_budget() {
    let p = parse(
        "pipeline p(input: i32[1]) -> f3 {
            f0(x): i32 = (input(max(min(x, 6), -1) + 1) - 1) + input(x);
            f1(x): i32 = input(x) / f0(x - 1);
            f3(x): i32 = max(x / f0(x / 2 - 1), f1(x + 1));
        }",
    );
    let s = sched(
        &p,
        "schedule s = p {
            f3.split(x, xo1, xi1, 2, ShiftInwards).split(xi1, xi1o2, xi1i2, 5, GuardWithIf)
              .fuse(xi1i2, xi1o2, xi1f2).split(xi1f2, xi1f2o3, xi1f2i3, 1, ShiftInwards);
            f0.split(x, xo1, xi1, 1, GuardWithIf).compute_at(f3, xi1f2o3).store_at(f3, xo1);
            f1.align_bounds(x, 5, 0);
        }",
    );
    // Lowered and checked (which used to exhaust memory): the limits leave the read undecided.
    let l = weft_pipe::lower::lower(&p, &s, &dram()).unwrap();
    let d = weft_check::check_proc(&l.proc).expect_err("undecided within the limits");
    assert!(
        d.iter().all(|d| d.message.contains("could not decide")),
        "{d:?}"
    );
    // Found by review of that budget, which bounded each step's terms but not what the steps
    // return (every leaf of the case tree copies its conditions; 11 GB after 9 minutes): the
    // budget is now per read, over all the chunks, and bounds the nodes returned too.
    let p = parse(
        "pipeline p(n: i32, input: i32[1]) -> f1 {
            f0(x): i32 = min(input(x - 1) * input(x + 1), select(x < input(max(min(x, 2), 0) + 1), x, input(max(min(x, 2), 0) + 1)));
            f0(r) = f0(r - 1) + input(r) for r in 0..3;
            f1(x): i32 = f0(x) / 0;
        }",
    );
    let s = sched(
        &p,
        "schedule s = p {
            f1.split(x, xo1, xi1, 3, ShiftInwards).split(xi1, xi1o2, xi1i2, 1, GuardWithIf)
              .split(xi1i2, xi1i2o3, xi1i2i3, 2, ShiftInwards)
              .reorder(xi1i2i3, xi1i2o3, xi1o2, xo1).vectorize(xi1i2o3).vectorize(xi1o2);
            f0.split(x, xo1, xi1, 3, RoundUp).split(xo1, xo1o2, xo1i2, 1, GuardWithIf)
              .fuse(xo1i2, xo1o2, xo1f2).split(xo1f2, xo1f2o3, xo1f2i3, 4, RoundUp)
              .reorder(xo1f2o3, xi1, xo1f2i3).unroll(xi1).unroll(xo1f2i3)
              .compute_at(f1, xi1i2i3).store_at(f1, xo1);
            f0.update(0).split(r, ro2, ri2, 1, GuardWithIf);
        }",
    );
    let l = weft_pipe::lower::lower(&p, &s, &dram()).unwrap();
    // Accepted or rejected (a read the budget left unproved), but within memory and seconds.
    let _ = weft_check::check_proc(&l.proc);
}
