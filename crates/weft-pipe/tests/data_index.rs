//! Coordinates computed from data: histograms (`h(input(r)) += 1`), lookup tables
//! (`lut(input(x))`), clamped table reads with parameters. Bounds come from clamps and the
//! ranges of narrow types; the lowered proc (checked for any data) must match the reference on
//! every point, for windows with non-zero mins, sizes 1 and splits that do not divide them.

mod common;

use common::{run, Outcome};
use weft_interp::Scalar;
use weft_pipe::ast::Pipeline;
use weft_pipe::lower::lower;
use weft_pipe::parse::parse_pipeline;
use weft_pipe::schedule::Schedule;
use weft_pipe::script::parse_schedule;

fn parse(text: &str) -> Pipeline {
    parse_pipeline(0, text, 0).unwrap_or_else(|d| panic!("{d:?}"))
}

fn schedule(p: &Pipeline, text: &str) -> Schedule {
    let text = format!("schedule s = {} {{ {text} }}", p.name);
    parse_schedule(0, &text, 0, p, Schedule::new(p))
        .unwrap_or_else(|d| panic!("{text}: {d:?}"))
        .schedule
}

fn matched(p: &Pipeline, sched: &str, params: &[Scalar], window: &[(i64, i64)], seed: u64) {
    let s = schedule(p, sched);
    match run(p, &s, params, window, 3, seed) {
        Outcome::Matched => {}
        // A vectorized output needs a window at least as wide as its vectors (as in Halide).
        Outcome::Asserted(m) if m.ends_with("<= out_0_extent") && window[0].1 < 16 => {}
        Outcome::Asserted(m) => panic!("{sched} on {window:?} stopped: {m}"),
    }
}

const HIST: &str = "pipeline hist(input: u8[1]) -> h {
    h(b): i32 = 0;
    h(input(r)) += 1 for r in input.min(0)..input.min(0) + input.extent(0);
}";

#[test]
fn a_histogram_matches_the_reference() {
    let p = parse(HIST);
    for sched in [
        "",
        "h.vectorize(b, 8);",
        "h.split(b, bo, bi, 7, GuardWithIf).parallel(bo);",
    ] {
        for (seed, window) in [(1, (0, 256)), (2, (-5, 300))] {
            matched(&p, sched, &[], &[window], seed);
        }
    }
}

/// The histogram's writes land anywhere in 0..256: an output window that does not hold them
/// stops at a precondition (as Halide asserts), never writes outside the buffer.
#[test]
fn a_histogram_into_a_smaller_window_stops_at_a_precondition() {
    let p = parse(HIST);
    match run(&p, &Schedule::new(&p), &[], &[(10, 50)], 3, 1) {
        Outcome::Asserted(_) => {}
        Outcome::Matched => panic!("the window cannot hold the histogram"),
    }
}

const LUT: &str = "pipeline lut(input: u8[2], k: i32, n: i32) -> out {
    table(i): i32 = i * i - 3 * i;
    small(i): i16 = i16(i * 7);
    out(x, y): i32 = table(input(x, y)) + i32(small(clamp(i32(input(x, y)) - k, 0, n)));
}";

#[test]
fn lookup_tables_match_the_reference_under_schedules() {
    let p = parse(LUT);
    let scheds = [
        "table.compute_root(); small.compute_root();",
        "table.compute_root(); small.compute_root(); out.split(y, yo, yi, 3, GuardWithIf).parallel(yo).vectorize(x, 8);",
        // Computed per row: the table is recomputed over everything the row may read.
        "table.compute_at(out, y); small.compute_at(out, y).store_root();",
        "out.tile(x, y, xo, yo, xi, yi, 4, 5, GuardWithIf); table.compute_at(out, xo); small.compute_at(out, xo);",
    ];
    for sched in scheds {
        for (seed, window, k, n) in [
            (3, vec![(0, 9), (0, 7)], 2, 40),
            (4, vec![(-3, 1), (5, 1)], -1, 0),
            (5, vec![(2, 13), (-4, 6)], 300, 17),
        ] {
            let params = [Scalar::I32(k), Scalar::I32(n)];
            matched(&p, sched, &params, &window, seed);
        }
    }
}

/// A table read with a negative clamp range (`n < 0`): `clamp(v, 0, n)` is `n`, a point the
/// bounds must still cover.
#[test]
fn an_empty_clamp_range_reads_its_upper_end() {
    let p = parse(LUT);
    let params = [Scalar::I32(0), Scalar::I32(-4)];
    matched(
        &p,
        "table.compute_root(); small.compute_root();",
        &params,
        &[(0, 5), (0, 2)],
        6,
    );
}

const EQUALIZE: &str = "pipeline equalize(input: u8[2]) -> out {
    h(b): i32 = 0;
    h(input(rx, ry)) += 1 for rx in input.min(0)..input.min(0) + input.extent(0), ry in input.min(1)..input.min(1) + input.extent(1);
    cdf(b): i32 = 0;
    cdf(0) = h(0);
    cdf(r) = cdf(r - 1) + h(r) for r in 1..256;
    out(x, y): u8 = u8_sat(cdf(input(x, y)) * 255 / max(cdf(255), 1));
}";

#[test]
fn histogram_equalization_matches_the_reference() {
    let p = parse(EQUALIZE);
    for sched in [
        "h.compute_root(); cdf.compute_root();",
        "h.compute_root(); cdf.compute_root(); out.split(y, yo, yi, 4, GuardWithIf).parallel(yo).vectorize(x, 16);",
    ] {
        for (seed, window) in [(7, vec![(0, 20), (0, 9)]), (8, vec![(1, 1), (-2, 1)])] {
            matched(&p, sched, &[], &window, seed);
        }
    }
}

#[test]
fn an_unbounded_data_coordinate_is_rejected_with_the_fix() {
    let p = parse(
        "pipeline f(input: i32[1]) -> out {
            t(i): i32 = i;
            out(x): i32 = t(input(x));
        }",
    );
    let s = schedule(&p, "t.compute_root();");
    let Err(e) = lower(&p, &s, &common::dram()) else {
        panic!("t has no bounds")
    };
    assert_eq!(e.rule, "data-index", "{e}");
    assert!(e.message.contains("clamp"), "{e}");
}

/// Review of the data coordinates: `i32(input(x)) + n` lies in `[n, n + 255]` only while the
/// i32 sum does not wrap. With `n` near 2^31 the reference reads `t` at the wrapped value; the
/// proc must not clamp it to `t(n)`: it stops at the precondition that the range fits i32.
#[test]
fn a_data_coordinate_whose_range_would_wrap_stops_at_a_precondition() {
    let p = parse(
        "pipeline w(input: u8[1], n: i32) -> out {
            t(i): i32 = i;
            out(x): i32 = t(i32(input(x)) + n);
        }",
    );
    let s = schedule(&p, "t.compute_root();");
    match run(&p, &s, &[Scalar::I32(2147483547)], &[(0, 8)], 3, 1) {
        Outcome::Asserted(m) => assert!(m.contains("n <= 2147483392"), "{m}"),
        Outcome::Matched => panic!("the wrapped sum cannot be clamped"),
    }
    // Fixed-point arithmetic: `clamp(...) * 65536` wraps for n >= 32768.
    let p = parse(
        "pipeline fx(input: i32[1], n: i32) -> out {
            t(i): i32 = i;
            out(x): i32 = t(clamp(input(x) * 64, 0, n) * 65536 / 65536);
        }",
    );
    let s = schedule(&p, "t.compute_root();");
    assert!(matches!(
        run(&p, &s, &[Scalar::I32(70000)], &[(0, 16)], 3, 1),
        Outcome::Asserted(_)
    ));
    // Where nothing wraps, both run and match.
    matched(&p, "t.compute_root();", &[Scalar::I32(3000)], &[(0, 16)], 2);
}

/// docs/pipelines.md's `h(clamp(input(r), 0, 255))` with a u8 input: the literals are u8.
#[test]
fn a_clamp_in_the_inputs_own_type_is_bounded() {
    let p = parse(
        "pipeline dh(input: u8[1]) -> (h, g) {
            h(b): i32 = 0;
            h(clamp(input(r), 0, 250)) += 1 for r in 0..8;
            g(b): i32 = h(input(b) + 1);
        }",
    );
    matched(&p, "h.compute_root();", &[], &[(0, 256)], 4);
}

/// Review of loop partitioning: a producer whose reads clamp its loop, split (any tail), must
/// still check and match: loops made by a split are not partitioned.
#[test]
fn split_producers_with_clamped_reads_check_and_match() {
    let p = parse(
        "pipeline p(input: i32[1]) -> out {
            c = repeat_edge(input);
            c2(x): i32 = c(x);
            out(x): i32 = c2(x);
        }",
    );
    for sched in [
        "c2.compute_root().split(x, xo, xi, 3, GuardWithIf);",
        "c2.compute_root().split(x, xo, xi, 4);",
        "c2.compute_root().split(x, xo, xi, 3, RoundUp);",
        // Unsplit: partitioned, and the same values.
        "c2.compute_root();",
    ] {
        for window in [(0, 9), (-4, 1), (3, 20)] {
            matched(&p, sched, &[], &[window], 5);
        }
    }
}

/// Literal arithmetic that wraps bounds a data coordinate by the value it wraps to:
/// `65536 * 65536` is 0 in i32, and `x / 0` is 0 (found by the random pipeline fuzzer).
#[test]
fn wrapped_literal_divisors_bound_data_coordinates() {
    let p = parse(
        "pipeline w(input: i32[2]) -> out {
            table(i): i32 = i * 3;
            out(x, y): i32 = table((clamp(input(x, y), -3, 2) - 2) / (65536 * 65536) + 2);
        }",
    );
    for sched in ["", "table.compute_root();"] {
        matched(&p, sched, &[], &[(0, 5), (-1, 3)], 9);
    }
}

/// A constant factor on either side scales a data coordinate's range (`256 * k` as `k * 256`).
#[test]
fn constant_factors_on_the_left_scale_data_coordinates() {
    let p = parse(
        "pipeline s(input: i32[2]) -> out {
            table(i): i32 = i * 3;
            out(x, y): i32 = table(256 * clamp(input(x, y), 0, 3) + clamp(input(x, y), 0, 255));
        }",
    );
    for sched in ["", "table.compute_root();"] {
        matched(&p, sched, &[], &[(0, 5), (-1, 3)], 11);
    }
}
