//! The race and commute checks with enough accesses (more than 4 pairs) that they prove whole
//! sets of accesses disjoint at once (`Analysis::conflict`): the known races of adversarial.rs
//! (unknown conditions, window offsets and call arguments, config reads, callee loops), each
//! padded with independent accesses, must still be found, and a padded race-free loop accepted.
//! (Written by a fresh-context review of that change.)

mod common;

use common::{rejected, same_results, sched};
use weft_sched::{SchedError, Schedule};

const PAD: &str = "z[i, 0] = q[i]; z[i, 1] = q[i] + z[i, 0]; z[i, 2] += q[i];";

/// The step's result `r` on `s` must be a rejection by `prim`; an accepted step is first run
/// against the original at `n` in `ns`, so that the failure says whether it changed the results.
fn must_be_rejected<T>(s: &Schedule, r: Result<T, SchedError>, prim: &str, ns: &[i64]) {
    if r.is_ok() {
        for &n in ns {
            same_results(s, &[("n", n)]);
        }
    }
    rejected(r, prim, "");
}

fn must_reject_par(src: &str, pattern: &str) {
    let mut s = sched(src);
    let at = s.find(pattern).unwrap();
    match s.parallelize(&at) {
        Err(e) => assert!(e.message.contains("race"), "{e}"),
        Ok(_) => panic!("accepted:\n{}", common::text(&s)),
    }
}

#[test]
fn padded_unknown_condition() {
    let src = format!(
        "proc p(n: size, x: f32[n] @ DRAM, y: f32[n + 1] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    alloc t: f32[4] @ DRAM;
    for i in 0..n {{
        {PAD}
        if stride(t, 0) == i {{
            y[i] = x[i];
        }} else {{
            y[i + 1] = x[i];
        }}
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_unknown_window_offset() {
    let src = format!(
        "proc p(n: size, x: f32[n] @ DRAM, y: f32[2 * n] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    alloc t: f32[4] @ DRAM;
    for i in 0..n {{
        {PAD}
        let w = y[n - i - stride(t, 0):2 * n - i - stride(t, 0)];
        w[i] = x[i];
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_unknown_call_argument() {
    let src = format!(
        "proc put(k: index, j: index, m: size, x: [f32][m] @ DRAM, v: [f32][1] @ DRAM) {{
    assert k + j < m;
    assert 0 <= k;
    assert 0 <= j;
    x[k + j] = v[0];
}}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    alloc t: f32[4] @ DRAM;
    for i in 0..n {{
        {PAD}
        put(n - i - stride(t, 0), i, n, y, x[i:i + 1]);
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_config_window() {
    let src = format!(
        "config C {{ k: index }}
proc p(n: size, x: f32[4, 1] @ DRAM, y: f32[n] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    C.k = 0;
    for i in 0..n {{
        {PAD}
        if i == 0 {{
            C.k = 1;
        }}
        let w = x[C.k % 4, 0:1];
        y[i] = w[0];
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_callee_inner_loop_overlap() {
    let src = format!(
        "proc two(k: index, m: size, x: [f32][m] @ DRAM) {{
    assert 0 <= k;
    assert k + 2 <= m;
    for j in 0..2 {{
        x[k + j] = 1.0;
    }}
}}
proc p(n: size, y: f32[n + 1] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    for i in 0..n {{
        {PAD}
        two(i, n + 1, y);
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_parity_branches() {
    // Even i writes y[i]; odd i writes y[i - 1]: i = 0 and i = 1 both write y[0].
    let src = format!(
        "proc p(n: size, y: f32[n] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    for i in 0..n {{
        {PAD}
        if i % 2 == 0 {{
            y[i] = 1.0;
        }} else {{
            y[i - 1] = 2.0;
        }}
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_inner_loop_var_shared() {
    // Inner loop writes y[i + j] for j in 0..2: iterations i and i + 1 overlap.
    let src = format!(
        "proc p(n: size, y: f32[n + 1] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    for i in 0..n {{
        {PAD}
        for j in 0..2 {{
            y[i + j] = q[i];
        }}
    }}
}}"
    );
    must_reject_par(&src, "for i");
}

#[test]
fn padded_reorder_loops_dependence() {
    // a[i + 1, j] reads a[i, j + 1] written at (i, j + 1): reordering i and j changes results.
    let src =
        "proc p(n: size, a: f32[n + 1, n + 1] @ DRAM, z: f32[n, n, 3] @ DRAM, q: f32[n] @ DRAM) {
    for i in 0..n {
        for j in 0..n {
            z[i, j, 0] = q[i];
            z[i, j, 1] = q[j] + z[i, j, 0];
            z[i, j, 2] += q[i];
            a[i + 1, j] = a[i, j + 1] + 1.0;
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("for i").unwrap();
    let r = s.reorder_loops(&at);
    must_be_rejected(&s, r, "reorder_loops", &[1, 2, 3, 4]);
}

#[test]
fn padded_fission_dependence() {
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {
    for i in 0..n {
        z[i, 0] = q[i];
        z[i, 1] = q[i] + z[i, 0];
        y[i] = x[i] + z[i, 1];
        x[i + 1] = q[i];
        z[i, 2] += q[i];
    }
}";
    let mut s = sched(src);
    let at = s.find("y =").unwrap();
    let r = s.fission(&at);
    must_be_rejected(&s, r, "fission", &[1, 2, 3, 4]);
}

#[test]
fn padded_reorder_stmts_through_callee() {
    let src = "proc two(k: index, m: size, x: [f32][m] @ DRAM) {
    assert 0 <= k;
    assert k + 2 <= m;
    for j in 0..2 {
        x[k + j] = x[k + j] + 1.0;
    }
}
proc p(n: size, y: f32[n + 4] @ DRAM, z: f32[3] @ DRAM, q: f32[3] @ DRAM) {
    z[0] = q[0];
    z[1] = q[1];
    for k in 0..1 {
        z[2] = q[2];
        y[n + 1] = 5.0 * y[n + 1];
        two(n, n + 4, y);
    }
}";
    let mut s = sched(src);
    let at = s.find("y =").unwrap();
    let r = s.reorder_stmts(&at);
    must_be_rejected(&s, r, "reorder_stmts", &[1, 2, 3]);
}

#[test]
fn padded_remove_loop_not_idempotent() {
    let src = "proc p(n: size, x: f32[8] @ DRAM, z: f32[8] @ DRAM, q: f32[8] @ DRAM) {
    for i in 0..n {
        z[0] = q[0];
        z[1] = q[1] + z[0];
        z[2] = q[2];
        x[1] = x[0] + 1.0;
        x[0] = x[1];
    }
}";
    let mut s = sched(src);
    let at = s.find("for i").unwrap();
    let r = s.remove_loop(&at);
    must_be_rejected(&s, r, "remove_loop", &[1, 2, 3]);
}

/// Accepted cases must stay accepted (and give the same results).
#[test]
fn padded_independent_rows_are_accepted() {
    let src = format!(
        "proc p(n: size, y: f32[n] @ DRAM, z: f32[n, 3] @ DRAM, q: f32[n] @ DRAM) {{
    for i in 0..n {{
        {PAD}
        y[i] = z[i, 2];
    }}
}}"
    );
    let mut s = sched(&src);
    let at = s.find("for i").unwrap();
    s.parallelize(&at).unwrap();
    same_results(&s, &[("n", 5)]);
    let _ = Schedule::parallelize;
}
