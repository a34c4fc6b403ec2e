//! `parallelize`: accepted on race-free loops (results compared with the original on the
//! interpreter, which runs parallel loops backwards), rejected on races with the two iterations as
//! counterexample, and later steps that would introduce a race into a parallel loop are rejected.

mod common;

use common::{cex, rejected, rejected_at, same_results, sched, text};
use weft_sched::{SchedError, Schedule};

/// `parallelize` of `for i` in `src` is rejected because iterations may race.
fn parallelize_races(src: &str) -> SchedError {
    rejected_at(
        src,
        "for i",
        Schedule::parallelize,
        "parallelize",
        "may race",
    )
}

const ROWS: &str = "proc rows(m: size, n: size, a: f32[m, n] @ DRAM, y: f32[m] @ DRAM) {
    for i in 0..m {
        y[i] = 0.0;
        for j in 0..n {
            y[i] += a[i, j];
        }
    }
}";

#[test]
fn parallelize_accepts_independent_rows_with_reductions_into_their_own_cells() {
    let mut s = sched(ROWS);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    assert!(text(&s).contains("for i in par(0..m) {"), "{}", text(&s));
    for (m, n) in [(1, 1), (5, 3), (8, 7)] {
        same_results(&s, &[("m", m), ("n", n)]);
    }
}

#[test]
fn parallelize_rejects_a_reduction_into_a_shared_cell() {
    // Two reductions into one cell commute (reorder_loops accepts them) but race in parallel.
    let src = "proc total(n: size, x: f32[n] @ DRAM, s: f32[1] @ DRAM) {
        for i in 0..n {
            s[0] += x[i];
        }
    }";
    let e = parallelize_races(src);
    assert_ne!(cex(&e, "i"), cex(&e, "i'"), "{e}");
    assert!(cex(&e, "n") >= 2, "{e}");
}

#[test]
fn parallelize_rejects_a_loop_carried_dependence_with_the_two_iterations() {
    let src = "proc shift(n: size, x: f32[n + 1] @ DRAM) {
        for i in 0..n {
            x[i + 1] = x[i] * 2.0;
        }
    }";
    let e = parallelize_races(src);
    let (i, i2) = (cex(&e, "i"), cex(&e, "i'"));
    assert_eq!((i - i2).abs(), 1, "{e}");
}

#[test]
fn parallelize_rejects_a_shared_scratch_buffer_and_accepts_a_private_one() {
    let shared = "proc sq(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
        alloc t: f32[1] @ DRAM_STACK;
        for i in 0..n {
            t[0] = x[i] * x[i];
            y[i] = t[0];
        }
    }";
    parallelize_races(shared);
    let private = "proc sq(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
        for i in 0..n {
            alloc t: f32[1] @ DRAM_STACK;
            t[0] = x[i] * x[i];
            y[i] = t[0];
        }
    }";
    let mut s = sched(private);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    same_results(&s, &[("n", 6)]);

    // Lifting the private buffer out of the parallel loop would share it between iterations:
    // lift_alloc alone is an equivalence, but the parallel loop it leaves behind would race.
    let t = s.find("alloc t").unwrap();
    let e = rejected(s.lift_alloc(&t), "lift_alloc", "may race");
    assert!(e.to_string().contains("t"), "{e}");
}

#[test]
fn parallelize_rejects_a_config_write_in_the_body() {
    let src = "config Cfg { scale: f32 }
    proc cw(n: size, x: f32[n] @ DRAM) {
        for i in 0..n {
            Cfg.scale = x[i];
            x[i] = Cfg.scale * 2.0;
        }
    }";
    parallelize_races(src);
}

#[test]
fn parallel_tiles_after_split_and_text_schedule() {
    // Tile, then run the outer tiles in parallel: tiles write disjoint rows.
    let mut s = sched(ROWS);
    let i = s.find("for i").unwrap();
    s.split(&i, 4, "io", "ii", weft_sched::Tail::Guard).unwrap();
    let io = s.find("for io").unwrap();
    s.parallelize(&io).unwrap();
    for m in [1, 4, 9] {
        same_results(&s, &[("m", m), ("n", 3)]);
    }
    // A split of the parallel loop is sequential again (always safe), and the split proc checks.
    let mut s2 = sched(ROWS);
    let i = s2.find("for i").unwrap();
    s2.parallelize(&i).unwrap();
    s2.split(&i, 4, "io", "ii", weft_sched::Tail::Cut).unwrap();
    assert!(!text(&s2).contains("par("), "{}", text(&s2));
    same_results(&s2, &[("m", 7), ("n", 2)]);
}

/// A body of many accesses, each row's own cells but for one statement (`racing`), which the
/// test varies. Many accesses make the race check prove disjointness of whole sets of accesses
/// at once; the one racing pair must still be found, with its two iterations.
fn many_accesses(racing: &str) -> String {
    format!(
        "proc many(n: size, x: f32[n + 1, 4] @ DRAM, y: f32[n, 4] @ DRAM, s: f32[4] @ DRAM) {{
        for i in 0..n {{
            y[i, 0] = x[i, 0] * 2.0;
            y[i, 1] = x[i, 1] + y[i, 0];
            y[i, 2] += x[i + 1, 2];
            y[i, 3] = x[i, 3];
            x[i, 0] = y[i, 1];
            {racing}
        }}
    }}"
    )
}

#[test]
fn parallelize_finds_the_one_racing_pair_among_many_accesses() {
    // Each row writes x[i, 0] and reads x[i + 1, 2]: no race.
    let mut s = sched(&many_accesses("x[i, 1] = y[i, 3];"));
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    for n in [1, 2, 5] {
        same_results(&s, &[("n", n)]);
    }
    // Writing x[i, 2] races with the next row's read of x[i + 1, 2].
    let e = parallelize_races(&many_accesses("x[i, 2] = y[i, 3];"));
    assert_eq!(cex(&e, "i") - cex(&e, "i'"), -1, "{e}");
    // Reductions into a cell every row shares race (they would commute for reorder_loops).
    let e = parallelize_races(&many_accesses("s[0] += y[i, 2];"));
    assert_ne!(cex(&e, "i"), cex(&e, "i'"), "{e}");
}

#[test]
fn a_step_inside_a_parallel_loop_proves_the_loop_again() {
    // A loop marked parallel in source is not proved by `Schedule::new`: the step inside it
    // (several loops deep) must prove it, and find the race.
    let src = "proc p(n: size, x: f32[n, 4, 4] @ DRAM, s: f32[1] @ DRAM) {
        for i in par(0..n) {
            for j in 0..4 {
                for k in 0..4 {
                    s[0] += x[i, j, k];
                }
            }
        }
    }";
    let mut s = sched(src);
    let j = s.find("for j").unwrap();
    rejected(s.reorder_loops(&j), "reorder_loops", "may race");
}

/// A kernel that writes its 4-cell window cell by cell (many accesses, unrolled), called once
/// per iteration: `stride` apart, its windows `[stride * i, stride * i + 4)` are disjoint where
/// `stride >= 4` and meet where it is smaller.
fn window_kernel_loop(stride: i64) -> String {
    format!(
        "proc quad(w: [f32][4] @ DRAM) {{
    w[0] = 1.0;
    w[1] = 2.0;
    w[2] = w[0] + w[1];
    w[3] = w[2] * 2.0;
}}
proc calls(n: size, x: f32[{stride} * n + 4] @ DRAM) {{
    for i in 0..n {{
        quad(x[{stride} * i:{stride} * i + 4]);
    }}
}}"
    )
}

#[test]
fn parallelize_proves_calls_on_disjoint_windows_and_rejects_meeting_ones_at_their_cells() {
    // Disjoint windows: the call's footprint (its window) decides.
    let mut s = sched(&window_kernel_loop(4));
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    for n in [1, 3] {
        same_results(&s, &[("n", n)]);
    }
    // Windows two cells apart: iteration i writes what iteration i + 1 writes too. The
    // footprints meet, and the callee's accesses name a racing pair with its iterations.
    let e = parallelize_races(&window_kernel_loop(2));
    assert_ne!(cex(&e, "i"), cex(&e, "i'"), "{e}");
    assert!(cex(&e, "n") >= 2, "{e}");
}

#[test]
fn parallelize_accepts_meeting_windows_whose_cells_the_callee_keeps_apart() {
    // Windows of 4 cells, 2 apart, but the callee writes only the first two of its window: the
    // footprints meet, the accesses do not.
    let src = "proc half(w: [f32][4] @ DRAM) {
    w[0] = 1.0;
    w[1] = 2.0;
}
proc calls(n: size, x: f32[2 * n + 2] @ DRAM) {
    for i in 0..n {
        half(x[2 * i:2 * i + 4]);
    }
}";
    let mut s = sched(src);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    for n in [1, 4] {
        same_results(&s, &[("n", n)]);
    }
}

/// `k` loops that all reduce into the cells of `s`: every pair of them races.
fn all_racing(k: usize) -> String {
    let mut body = String::new();
    for j in 0..k {
        body += &format!(
            "        for t{j} in 0..4 {{\n            s[t{j}] += x[i, {j}];\n        }}\n"
        );
    }
    format!(
        "proc many(n: size, x: f32[n, {k}] @ DRAM, s: f32[4] @ DRAM) {{\n    for i in 0..n {{\n{body}    }}\n}}"
    )
}

/// From the review of the halved set queries: where the sets of accesses are known to meet,
/// the pairs are asked in order (the first pair races), not halved down to every sub-pair
/// (8,192 queries for 128 racing loops, where 2 do).
#[test]
fn parallelize_rejects_many_racing_accesses_in_a_few_queries() {
    let mut s = sched(&all_racing(128));
    let i = s.find("for i").unwrap();
    let before = s.solver_stats().queries;
    let e = rejected(s.parallelize(&i), "parallelize", "may race");
    let asked = s.solver_stats().queries - before;
    assert!(asked < 20, "{asked} queries");
    assert_ne!(cex(&e, "i"), cex(&e, "i'"), "{e}");
}
