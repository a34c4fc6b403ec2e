//! Exo's remaining buffer-layout and loop-shape primitives (rearrange_dim, resize_dim,
//! unroll_buffer, join_loops, mult_loops, lift_scope, lift_alloc over several levels): each
//! accepted where it must be, with results compared against the original on the reference
//! interpreter at several sizes, rejected where it must be with the message (naming the primitive
//! and the rule) and counterexample the user sees, and reachable from a text schedule.

mod common;

use common::{cex, lacks, rejected, rejected_at, same_for_n, same_results, sched, shows, text};
use weft_ir::{BinOp, Expr, StmtKind};
use weft_sched::Schedule;

fn int(v: i64) -> Expr {
    Expr::int(v)
}

/// The text schedule `steps` applied to the proc `p` of `src`: the schedule, or the error.
fn script(src: &str, steps: &str) -> (Schedule, Result<(), weft_sched::SchedError>) {
    common::scheduled(&format!("{src}\nschedule q = p {{\n{steps}\n}}\n"))
}

// ----- rearrange_dim -----

const TRANSPOSE: &str = "proc p(n: size, m: size, x: f32[n, m] @ DRAM, y: f32[m, n] @ DRAM) {
    alloc t: f32[n, m, 2] @ DRAM;
    for i in 0..n {
        for j in 0..m {
            t[i, j, 0] = x[i, j] * 2.0;
            t[i, j, 1] = x[i, j] + 1.0;
        }
    }
    for j in 0..m {
        for i in 0..n {
            y[j, i] = t[i, j, 0] + t[i, j, 1];
        }
    }
}";

#[test]
fn rearrange_dim_permutes_every_access() {
    let mut s = sched(TRANSPOSE);
    let a = s.find("alloc t").unwrap();
    let c = s.rearrange_dim(&a, &[2, 1, 0]).unwrap();
    assert_eq!(c, s.cursor(a.path.clone()));
    shows(
        &s,
        &[
            "alloc t: f32[2, m, n] @ DRAM;",
            "t[0, j, i] = x[i, j] * 2.0;",
            "t[1, j, i] = x[i, j] + 1.0;",
            "y[j, i] = t[0, j, i] + t[1, j, i];",
        ],
    );
    for (n, m) in [(1, 1), (3, 2), (4, 5)] {
        same_results(&s, &[("n", n), ("m", m)]);
    }
    // And back again, by the inverse permutation (new 0 is old 2, ...).
    s.rearrange_dim(&a, &[2, 1, 0]).unwrap();
    shows(&s, &["alloc t: f32[n, m, 2] @ DRAM;", "t[i, j, 0] ="]);
    same_results(&s, &[("n", 2), ("m", 3)]);
}

#[test]
fn rearrange_dim_rejects_non_permutations_and_arguments() {
    for perm in [&[0, 1][..], &[0, 0, 1], &[0, 1, 3], &[0, 1, 2, 3]] {
        rejected_at(
            TRANSPOSE,
            "alloc t",
            |s, c| s.rearrange_dim(c, perm),
            "rearrange_dim",
            "is not a permutation of the 3 dimensions of 't'",
        );
    }
    // A proc argument's layout belongs to the caller.
    rejected_at(
        TRANSPOSE,
        "for i",
        |s, c| s.rearrange_dim(c, &[1, 0]),
        "rearrange_dim",
        "expected an allocation",
    );
}

const WINDOWED: &str = "proc h(k: size, a: [f32][k] @ DRAM) {
    if stride(a, 0) == 1 {
        for r in 0..k {
            a[r] = 1.0;
        }
    } else {
        for r in 0..k {
            a[r] = 2.0;
        }
    }
}
proc p(n: size, y: f32[n, 4] @ DRAM) {
    alloc t: f32[n, 4] @ DRAM;
    for i in 0..n {
        h(4, t[i, 0:4]);
    }
    for i in 0..n {
        for j in 0..4 {
            y[i, j] = t[i, j];
        }
    }
}";

/// A window's strides are visible to the callee (here it writes another value when the stride is
/// not 1), so a permutation that changes them is refused; one that keeps them is accepted.
#[test]
fn rearrange_dim_refuses_a_window_whose_stride_changes() {
    let e = rejected_at(
        WINDOWED,
        "alloc t",
        |s, c| s.rearrange_dim(c, &[1, 0]),
        "rearrange_dim",
        "a window spanning dimension 1 of 't' sees the stride of a dimension whose stride the permutation [1, 0] changes",
    );
    assert_eq!(e.stmts.len(), 2, "{e}");
    // A stride read directly.
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    alloc t: f32[n, 4] @ DRAM;
    for i in 0..n {
        for j in 0..4 {
            t[i, j] = 1.0;
        }
        if stride(t, 0) == 4 {
            y[i] = t[i, 0];
        } else {
            y[i] = 0.0;
        }
    }
}";
    rejected_at(
        src,
        "alloc t",
        |s, c| s.rearrange_dim(c, &[1, 0]),
        "rearrange_dim",
        "stride(t, 0) of 't' sees the stride",
    );
    // The window over the innermost dimension keeps its stride when only outer dimensions move.
    let src3 = "proc h(k: size, a: [f32][k] @ DRAM) {
    if stride(a, 0) == 1 {
        for r in 0..k {
            a[r] = 1.0;
        }
    } else {
        for r in 0..k {
            a[r] = 2.0;
        }
    }
}
proc p(n: size, y: f32[n, 3, 4] @ DRAM) {
    alloc t: f32[n, 3, 4] @ DRAM;
    for i in 0..n {
        for b in 0..3 {
            h(4, t[i, b, 0:4]);
        }
    }
    for i in 0..n {
        for b in 0..3 {
            for j in 0..4 {
                y[i, b, j] = t[i, b, j];
            }
        }
    }
}";
    let mut s = sched(src3);
    s.rearrange_dim(&s.find("alloc t").unwrap(), &[1, 0, 2])
        .unwrap();
    shows(
        &s,
        &["alloc t: f32[3, n, 4] @ DRAM;", "h(4, t[b, i, 0:4]);"],
    );
    same_for_n(&s, &[1, 3]);
}

#[test]
fn rearrange_dim_in_text() {
    let (s, r) = script(TRANSPOSE, "    rearrange_dim(\"alloc t\", 1, 2, 0);");
    r.unwrap();
    shows(&s, &["alloc t: f32[m, 2, n] @ DRAM;", "t[j, 0, i] ="]);
    same_results(&s, &[("n", 3), ("m", 2)]);
    let (_, r) = script(TRANSPOSE, "    rearrange_dim(\"alloc t\", 1, 1, 0);");
    rejected(r, "rearrange_dim", "is not a permutation");
}

// ----- resize_dim -----

const SHIFTED: &str = "proc p(n: size, x: f32[n + 4] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[n + 4] @ DRAM;
    for i in 2..n + 2 {
        t[i] = x[i] * 2.0;
    }
    for i in 0..n {
        y[i] = t[i + 2];
    }
}";

#[test]
fn resize_dim_shrinks_and_shifts_a_dimension() {
    let mut s = sched(SHIFTED);
    let n = common::n_of(&s);
    s.resize_dim(&s.find("alloc t").unwrap(), 0, &n, &int(2))
        .unwrap();
    shows(
        &s,
        &[
            "alloc t: f32[n] @ DRAM;",
            "t[i - 2] = x[i] * 2.0;",
            "y[i] = t[i + 2 - 2];",
        ],
    );
    same_for_n(&s, &[1, 2, 5]);
}

/// An offset one too small makes the last write land past the new extent: refused, with the
/// size and index at which it would.
#[test]
fn resize_dim_refuses_an_access_out_of_the_new_extent_with_a_counterexample() {
    let mut s = sched(SHIFTED);
    let n = common::n_of(&s);
    let a = s.find("alloc t").unwrap();
    let e = rejected(
        s.resize_dim(&a, 0, &n, &int(1)),
        "resize_dim",
        "i - (1) may lie outside 0..n (dimension 0 of 't')",
    );
    let (nv, iv) = (cex(&e, "n"), cex(&e, "i"));
    assert!(iv > nv || iv < 1, "{e}");
    // Too small a size.
    let e = rejected(
        s.resize_dim(&a, 0, &Expr::binary(BinOp::Sub, n.clone(), int(1)), &int(2)),
        "resize_dim",
        "may",
    );
    assert!(!e.counterexample.is_empty(), "{e}");
    // Not a positive extent where the allocation is.
    rejected(
        s.resize_dim(&a, 0, &Expr::binary(BinOp::Sub, n, int(1)), &int(2)),
        "resize_dim",
        "",
    );
    rejected(
        s.resize_dim(&a, 0, &int(0), &int(0)),
        "resize_dim",
        "the new extent 0 may not lie in 1..=2147483647",
    );
    rejected(
        s.resize_dim(&a, 1, &int(4), &int(0)),
        "resize_dim",
        "'t' has 1 dimensions, not a dimension 1",
    );
    assert_eq!(s.steps().len(), 0);
}

/// Windows: an interval in the resized dimension is shifted and proved inside; an interval in an
/// earlier dimension (whose stride includes the extent) is refused; so is the whole buffer.
#[test]
fn resize_dim_shifts_windows_and_refuses_those_whose_stride_changes() {
    let src = "proc h(k: size, a: [f32][k] @ DRAM) {
    for r in 0..k {
        a[r] = 3.0;
    }
}
proc p(n: size, y: f32[n, 4] @ DRAM) {
    alloc t: f32[n, 8] @ DRAM;
    for i in 0..n {
        h(4, t[i, 2:6]);
    }
    for i in 0..n {
        for j in 0..4 {
            y[i, j] = t[i, j + 2];
        }
    }
}";
    let mut s = sched(src);
    s.resize_dim(&s.find("alloc t").unwrap(), 1, &int(4), &int(2))
        .unwrap();
    shows(
        &s,
        &[
            "alloc t: f32[n, 4] @ DRAM;",
            "h(4, t[i, 0:4]);",
            "y[i, j] = t[i, j + 2 - 2];",
        ],
    );
    same_for_n(&s, &[1, 3]);
    // The window would stick out of 0..3.
    rejected_at(
        src,
        "alloc t",
        |s, c| s.resize_dim(c, 1, &int(3), &int(2)),
        "resize_dim",
        "6 - (2) may lie outside 0..3",
    );
    let src2 = "proc h(k: size, a: [f32][k] @ DRAM) {
    for r in 0..k {
        a[r] = 3.0;
    }
}
proc p(n: size, y: f32[4, n] @ DRAM) {
    alloc t: f32[4, n + 1] @ DRAM;
    for i in 0..n {
        h(4, t[0:4, i]);
    }
    for i in 0..n {
        for j in 0..4 {
            y[j, i] = t[j, i];
        }
    }
}";
    rejected_at(
        src2,
        "alloc t",
        |s, c| {
            let n = common::n_of(s);
            s.resize_dim(c, 1, &n, &int(0))
        },
        "resize_dim",
        "a window of 't' spans dimension 0, whose stride includes the extent of dimension 1",
    );
}

#[test]
fn resize_dim_in_text() {
    let (s, r) = script(SHIFTED, "    resize_dim(\"alloc t\", 0, n, 2);");
    r.unwrap();
    shows(&s, &["alloc t: f32[n] @ DRAM;"]);
    same_for_n(&s, &[1, 4]);
    let (_, r) = script(SHIFTED, "    resize_dim(\"alloc t\", 0, n, 3);");
    rejected(r, "resize_dim", "may lie outside");
}

// ----- unroll_buffer -----

const PAIR: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[2, 3] @ DRAM_STACK;
        for j in 0..3 {
            t[0, j] = x[i] * 2.0;
            t[1, j] = x[i] + 1.0;
        }
        y[i] = t[0, 2] * t[1, 1];
        free t;
    }
}";

#[test]
fn unroll_buffer_makes_one_buffer_per_constant_index() {
    let mut s = sched(PAIR);
    let after = s.find("y =").unwrap();
    let c = s.unroll_buffer(&s.find("alloc t").unwrap(), 0).unwrap();
    assert!(matches!(s.stmt(&c).unwrap().kind, StmtKind::Alloc { .. }));
    shows(
        &s,
        &[
            "alloc t_0: f32[3] @ DRAM_STACK;\n        alloc t_1: f32[3] @ DRAM_STACK;",
            "t_0[j] = x[i] * 2.0;",
            "t_1[j] = x[i] + 1.0;",
            "y[i] = t_0[2] * t_1[1];\n        free t_0;\n        free t_1;",
        ],
    );
    lacks(&s, &["t[", "free t;"]);
    // A cursor taken before still finds its statement.
    assert!(text(&s).contains(&weft_ir::print::stmt_to_string(s.stmt(&after).unwrap())));
    assert!(matches!(
        s.stmt(&after).unwrap().kind,
        StmtKind::Assign { .. }
    ));
    same_for_n(&s, &[1, 3]);
    // Down to scalars, along the remaining dimension.
    s.unroll_buffer(&s.find("alloc t_1").unwrap(), 0)
        .unwrap_err();
}

#[test]
fn unroll_buffer_refuses_a_variable_index_and_a_variable_extent() {
    let e = rejected_at(
        PAIR,
        "alloc t",
        |s, c| s.unroll_buffer(c, 1),
        "unroll_buffer",
        "the access indexes dimension 1 of 't' with j, not a constant in 0..3",
    );
    assert!(e.stmts.iter().any(|(_, w)| w.contains("t[0, j] =")), "{e}");
    rejected_at(
        SHIFTED,
        "alloc t",
        |s, c| s.unroll_buffer(c, 0),
        "unroll_buffer",
        "is not an integer constant in 1..=256",
    );
    rejected_at(
        PAIR,
        "alloc t",
        |s, c| s.unroll_buffer(c, 2),
        "unroll_buffer",
        "'t' has 2 dimensions, not a dimension 2",
    );
    // The new names must be free.
    let src = "proc p(n: size, t_1: f32[n] @ DRAM) {
    alloc t: f32[2] @ DRAM_STACK;
    t[0] = 1.0;
    t[1] = 2.0;
    for i in 0..n {
        t_1[i] = t[0] + t[1];
    }
}";
    rejected_at(
        src,
        "alloc t",
        |s, c| s.unroll_buffer(c, 0),
        "unroll_buffer",
        "'t_1', the name of one of the new buffers, is already used",
    );
}

#[test]
fn unroll_buffer_to_scalars_and_in_text() {
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    alloc t: f32[2] @ DRAM_STACK;
    t[0] = 1.0;
    t[1] = 2.0;
    for i in 0..n {
        y[i] = t[0] + t[1];
    }
}";
    let (s, r) = script(src, "    unroll_buffer(\"alloc t\", 0);");
    r.unwrap();
    shows(
        &s,
        &[
            "alloc t_0: f32 @ DRAM_STACK;",
            "t_0 = 1.0;",
            "y[i] = t_0 + t_1;",
        ],
    );
    same_for_n(&s, &[1, 3]);
    let (_, r) = script(PAIR, "    unroll_buffer(\"alloc t\", 1);");
    rejected(r, "unroll_buffer", "not a constant in 0..3");
}

// ----- join_loops -----

const CUT: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n / 2 {
        y[i] = x[i] * 2.0;
    }
    for k in n / 2..n {
        y[k] = x[k] * 2.0;
    }
}";

#[test]
fn join_loops_joins_adjacent_ranges_of_one_body() {
    let mut s = sched(CUT);
    let second = s.find("y = #1").unwrap();
    let c = s.join_loops(&s.find("for i").unwrap()).unwrap();
    assert_eq!(s.proc().body.len(), 1);
    shows(&s, &["for i in 0..n {\n        y[i] = x[i] * 2.0;\n    }"]);
    assert_eq!(
        s.resolve(&second).unwrap(),
        s.resolve(&c).unwrap().child(0, 0)
    );
    same_for_n(&s, &[1, 2, 7]);
    // `cut` then `join_loops` is the identity.
    let mut s = sched(
        "proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        x[i] = x[i] + 1.0;
    }
}",
    );
    let l = s.find("for i").unwrap();
    s.cut(&l, &Expr::binary(BinOp::Div, common::n_of(&s), int(3)))
        .unwrap();
    assert_eq!(s.proc().body.len(), 2);
    s.join_loops(&l).unwrap();
    shows(&s, &["for i in 0..n {"]);
    same_for_n(&s, &[1, 5]);
}

#[test]
fn join_loops_refuses_different_bodies_and_gaps() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n / 2 {
        y[i] = x[i] * 2.0;
    }
    for k in n / 2..n {
        y[k] = x[k] * 3.0;
    }
}";
    rejected_at(
        src,
        "for i",
        Schedule::join_loops,
        "join_loops",
        "the bodies of loops 'i' and 'k' differ",
    );
    let gap = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n / 2 {
        y[i] = x[i] * 2.0;
    }
    for k in (n + 1) / 2..n {
        y[k] = x[k] * 2.0;
    }
}";
    let e = rejected_at(
        gap,
        "for i",
        Schedule::join_loops,
        "join_loops",
        "the first loop ends at n / 2 but the second starts at (n + 1) / 2",
    );
    assert_eq!(cex(&e, "n") % 2, 1, "{e}");
    rejected_at(
        CUT,
        "for k",
        Schedule::join_loops,
        "join_loops",
        "the loop is not followed by a loop",
    );
}

/// The first body writes the config field that the second loop's end reads: joining would read
/// it before the first loop ran.
#[test]
fn join_loops_refuses_a_bound_the_first_body_changes() {
    let src = "config C { k: index }
proc p(n: size, x: f32[n] @ DRAM) {
    C.k = 0;
    for i in 0..0 {
        C.k = 0;
    }
    for j in C.k..C.k {
        C.k = 0;
    }
}";
    rejected_at(
        src,
        "for i",
        Schedule::join_loops,
        "join_loops",
        "config C is read by the second loop's bounds and written by the loop body",
    );
}

#[test]
fn join_loops_in_text() {
    let (s, r) = script(CUT, "    join_loops(i);");
    r.unwrap();
    assert_eq!(s.proc().body.len(), 1);
    same_for_n(&s, &[3]);
}

// ----- mult_loops -----

const NEST: &str = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    for i in 0..n {
        for j in 0..4 {
            y[i, j] = x[i, j] + x[i, 3 - j];
        }
    }
}";

#[test]
fn mult_loops_collapses_a_nest() {
    let mut s = sched(NEST);
    let w = s.find("y =").unwrap();
    let c = s.mult_loops(&s.find("for i").unwrap(), "k").unwrap();
    shows(
        &s,
        &["for k in 0..n * 4 {\n        y[k / 4, k % 4] = x[k / 4, k % 4] + x[k / 4, 3 - k % 4];"],
    );
    assert_eq!(s.resolve(&w).unwrap(), s.resolve(&c).unwrap().child(0, 0));
    same_for_n(&s, &[1, 3]);
    // Offsets on both loops.
    let src = "proc p(n: size, y: f32[n + 2, 7] @ DRAM) {
    for i in 2..n + 2 {
        for j in 4..7 {
            y[i, j] = 1.0;
        }
    }
}";
    let mut s = sched(src);
    s.mult_loops(&s.find("for i").unwrap(), "k").unwrap();
    shows(
        &s,
        &["for k in 0..(n + 2 - 2) * 3 {\n        y[2 + k / 3, 4 + k % 3] = 1.0;"],
    );
    same_for_n(&s, &[1, 4]);
}

#[test]
fn mult_loops_refuses_a_variable_inner_extent_and_a_used_name() {
    let src = "proc p(n: size, y: f32[n, n] @ DRAM) {
    for i in 0..n {
        for j in 0..n {
            y[i, j] = 1.0;
        }
    }
}";
    rejected_at(
        src,
        "for i",
        |s, c| s.mult_loops(c, "k"),
        "mult_loops",
        "the inner loop's bounds 0..n are not integer constants",
    );
    rejected_at(
        NEST,
        "for i",
        |s, c| s.mult_loops(c, "n"),
        "mult_loops",
        "'n' is already a name here",
    );
    rejected_at(
        NEST,
        "for j",
        |s, c| s.mult_loops(c, "k"),
        "mult_loops",
        "the body of loop 'j' is not a loop",
    );
}

#[test]
fn mult_loops_in_text() {
    let (s, r) = script(NEST, "    mult_loops(i, k);");
    r.unwrap();
    shows(&s, &["for k in 0..n * 4 {"]);
    same_for_n(&s, &[2]);
}

// ----- lift_scope -----

#[test]
fn lift_scope_exchanges_nested_ifs() {
    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        if i < m {
            if i % 2 == 0 {
                x[i] = 1.0;
            } else {
                x[i] = 2.0;
            }
        } else {
            x[i] = 3.0;
        }
    }
}";
    let mut s = sched(src);
    let inner = s.find("if #1").unwrap();
    let three = s.find("x = #2").unwrap();
    let c = s.lift_scope(&inner).unwrap();
    assert_eq!(s.resolve(&c).unwrap().to_string(), "[0/0]");
    shows(
        &s,
        &["if i % 2 == 0 {\n            if i < m {\n                x[i] = 1.0;\n            } else {\n                x[i] = 3.0;\n            }\n        } else {\n            if i < m {\n                x[i] = 2.0;\n            } else {\n                x[i] = 3.0;\n            }\n        }"],
    );
    assert!(s.stmt(&three).is_some());
    for (n, m) in [(1, 1), (5, 2), (6, 9)] {
        same_results(&s, &[("n", n), ("m", m)]);
    }
}

#[test]
fn lift_scope_moves_a_loop_out_of_an_if() {
    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    if m > 3 {
        for i in 0..n {
            x[i] = x[i] * 2.0;
        }
    }
}";
    let mut s = sched(src);
    s.lift_scope(&s.find("for i").unwrap()).unwrap();
    shows(
        &s,
        &["for i in 0..n {\n        if m > 3 {\n            x[i] = x[i] * 2.0;\n        }"],
    );
    for m in [1, 5] {
        same_results(&s, &[("n", 3), ("m", m)]);
    }
    // Back again: the `if` in the loop is lift_if's case.
    s.lift_scope(&s.find("if").unwrap()).unwrap();
    shows(&s, &["if m > 3 {\n        for i in 0..n {"]);
    same_results(&s, &[("n", 3), ("m", 4)]);
}

/// The loop runs backwards where the condition is false: lifting it out would run it there.
#[test]
fn lift_scope_refuses_a_loop_whose_bounds_need_the_condition() {
    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    if m <= n {
        for i in m..n {
            x[i] = 0.0;
        }
    }
}";
    let e = rejected_at(
        src,
        "for i",
        Schedule::lift_scope,
        "lift_scope",
        "the loop's bounds m..n may run backwards where m <= n is false",
    );
    assert!(cex(&e, "m") > cex(&e, "n"), "{e}");
    let with_else = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    if m > 2 {
        for i in 0..n {
            x[i] = 0.0;
        }
    } else {
        x[0] = 1.0;
    }
}";
    rejected_at(
        with_else,
        "for i",
        Schedule::lift_scope,
        "lift_scope",
        "has an 'else' branch",
    );
    let cfg = "config C { k: index }
proc p(n: size, x: f32[n] @ DRAM) {
    C.k = 0;
    if C.k == 0 {
        for i in 0..n {
            C.k = 1;
            x[i] = 0.0;
        }
    }
}";
    rejected_at(
        cfg,
        "for i",
        Schedule::lift_scope,
        "lift_scope",
        "config C is read by the condition and written by the loop body",
    );
}

#[test]
fn lift_scope_delegates_loop_nests_and_names_the_rule() {
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM) {
    for i in 0..n {
        for j in 0..2 {
            x[i + j] += 1.0;
        }
    }
    for k in 0..n {
        if k > 1 {
            x[k] = 0.0;
        }
    }
}";
    let mut s = sched(src);
    // Reductions commute: the exchange is accepted.
    s.lift_scope(&s.find("for j").unwrap()).unwrap();
    shows(&s, &["for j in 0..2 {\n        for i in 0..n {"]);
    let e = rejected(
        s.lift_scope(&s.find("if").unwrap()),
        "lift_scope",
        "depends on the loop index 'k' (the condition of lift_if)",
    );
    assert!(!e.stmts.is_empty());
    same_for_n(&s, &[1, 4]);
    let dep = "proc p(n: size, x: f32[n + 1] @ DRAM) {
    for i in 0..n {
        for j in 0..2 {
            x[i + j] = x[i + j] * 2.0 + 1.0;
        }
    }
}";
    rejected_at(
        dep,
        "for j",
        Schedule::lift_scope,
        "lift_scope",
        "(the condition of reorder_loops)",
    );
    // Not the whole body.
    let two = "proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        x[i] = 0.0;
        if n > 2 {
            x[i] = 1.0;
        }
    }
}";
    rejected_at(
        two,
        "if",
        Schedule::lift_scope,
        "lift_scope",
        "the statement must be the whole body of the loop around it",
    );
    rejected_at(
        two,
        "for i",
        Schedule::lift_scope,
        "lift_scope",
        "not inside a loop or an 'if'",
    );
}

#[test]
fn lift_scope_in_text() {
    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    if m > 3 {
        for i in 0..n {
            x[i] = 2.0;
        }
    }
}";
    let (s, r) = script(src, "    lift_scope(i);");
    r.unwrap();
    shows(&s, &["for i in 0..n {\n        if m > 3 {"]);
    same_results(&s, &[("n", 2), ("m", 5)]);
}

// ----- lift_alloc over several levels -----

#[test]
fn lift_alloc_lifts_several_levels() {
    let src = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    for i in 0..n {
        for j in 0..4 {
            alloc t: f32[n, 4] @ DRAM;
            t[i, j] = x[i, j] * 2.0;
            y[i, j] = t[i, j] + 1.0;
        }
    }
}";
    let (s, r) = script(src, "    lift_alloc(\"alloc t\", 2);");
    r.unwrap();
    assert!(matches!(s.proc().body[0].kind, StmtKind::Alloc { .. }));
    same_for_n(&s, &[1, 3]);
    let (s, r) = script(src, "    lift_alloc(\"alloc t\", 3);");
    let e = rejected(r, "lift_alloc", "level 3 of 3: ");
    assert!(e.message.contains("is not directly in a loop body"), "{e}");
    // All or nothing: the two levels that were proved are taken back.
    assert_eq!(s.steps().len(), 0);
    assert_eq!(s.proc(), s.version(0).unwrap());
    let (_, r) = script(src, "    lift_alloc(\"alloc t\", 0);");
    rejected(r, "schedule", "a level count is 1 or more");
}

/// Every new primitive's step is printed in the schedule's step list with its arguments.
#[test]
fn steps_are_recorded() {
    let mut s = sched(TRANSPOSE);
    s.rearrange_dim(&s.find("alloc t").unwrap(), &[1, 0, 2])
        .unwrap();
    assert_eq!(s.steps(), &["rearrange_dim(1, 0, 2)".to_string()]);
    s.resize_dim(&s.find("alloc t").unwrap(), 2, &int(3), &int(0))
        .unwrap();
    s.unroll_buffer(&s.find("alloc t").unwrap(), 2).unwrap();
    assert_eq!(
        s.steps()[1..],
        [
            "resize_dim(2, 3, 0)".to_string(),
            "unroll_buffer(2)".to_string()
        ]
    );
    same_results(&s, &[("n", 2), ("m", 3)]);
}

// ----- delete_config -----

/// The config fields the provenance of the schedule's result records as polluted.
fn polluted(s: &Schedule) -> Vec<(String, usize)> {
    common::polluted(s)
}

const TWICE: &str = "config C { k: index, s: f32 }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    C.k = n - 1;
    C.s = x[0];
    for i in 0..n {
        y[i] = x[i];
    }
    C.k = n - 1;
    C.s = x[0];
    y[C.k] = C.s;
}";

/// A write of the value the field already holds is deleted as an exact equivalence (nothing
/// polluted); the final config state is the same, which the interpreter shows.
#[test]
fn delete_config_deletes_a_write_of_the_value_the_field_holds() {
    let mut s = sched(TWICE);
    s.delete_config(&s.find("C.k = #1").unwrap()).unwrap();
    assert!(polluted(&s).is_empty(), "{:?}", polluted(&s));
    shows(&s, &["    }\n    C.s = x[0];\n    y[C.k] = C.s;"]);
    // `C.s = x[0]` reads `x`, which the loop does not write: the field still holds it.
    s.delete_config(&s.find("C.s = #1").unwrap()).unwrap();
    assert!(polluted(&s).is_empty());
    shows(&s, &["    }\n    y[C.k] = C.s;"]);
    for n in [1, 3] {
        common::same_everywhere(
            &s,
            &[&[("n", n)]],
            &common::cfg_states(&[("C", 0)], &[0, 2]),
            &[("C", 0), ("C", 1)],
        );
    }
}

#[test]
fn delete_config_refuses_a_write_whose_value_is_read_and_may_differ() {
    // The loop writes x[0], which the second `C.s = x[0]` reads: the field may hold the old value.
    let src = "config C { k: index, s: f32 }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    C.s = x[0];
    for i in 0..n {
        x[i] = y[i];
    }
    C.s = x[0];
    y[0] = C.s;
}";
    let e = rejected_at(
        src,
        "C.s = #1",
        Schedule::delete_config,
        "delete_config",
        "the write is not redundant: C.s is not known to hold the value already (x is written between the two writes, and the value reads it), and C.s is read after the new write",
    );
    assert!(e.stmts.iter().any(|(_, w)| w == "reads C.s"), "{e}");
    // A different value.
    let src2 = "config C { k: index }
proc p(n: size, y: f32[n] @ DRAM) {
    C.k = 0;
    C.k = n - 1;
    y[C.k] = 1.0;
}";
    rejected_at(
        src2,
        "C.k = #1",
        Schedule::delete_config,
        "delete_config",
        "the write before it stores 0, not n - 1",
    );
    // A value that reads the field.
    let src3 = "config C { k: index }
proc p(n: size, y: f32[n + 2] @ DRAM) {
    C.k = 0;
    C.k = C.k + 1;
    y[C.k] = 1.0;
}";
    rejected_at(
        src3,
        "C.k = #1",
        Schedule::delete_config,
        "delete_config",
        "the value written reads the field itself",
    );
    // Read at a later iteration of the loop around it.
    let src4 = "config C { k: index }
proc p(n: size, y: f32[n] @ DRAM) {
    C.k = 0;
    for i in 0..n {
        y[i] = 0.0;
        if C.k == 1 {
            y[i] = 1.0;
        }
        C.k = 1;
    }
}";
    let e = rejected_at(
        src4,
        "C.k = #1",
        Schedule::delete_config,
        "delete_config",
        "is read at a later iteration",
    );
    assert!(cex(&e, "n") >= 2, "{e}");
    rejected_at(
        src4,
        "y =",
        Schedule::delete_config,
        "delete_config",
        "expected a config write",
    );
}

/// A write whose value nothing reads is deleted modulo the field, which the provenance records;
/// every buffer ends the same.
#[test]
fn delete_config_deletes_a_dead_write_modulo_the_field() {
    let src = "config C { k: index }
proc p(n: size, y: f32[n] @ DRAM) {
    C.k = 2;
    for i in 0..n {
        y[i] = 1.0;
    }
    C.k = 0;
    y[C.k] = 2.0;
}";
    let mut s = sched(src);
    s.delete_config(&s.find("C.k =").unwrap()).unwrap();
    assert_eq!(polluted(&s), vec![("C".to_string(), 0)]);
    lacks(&s, &["C.k = 2;"]);
    // Every buffer ends the same, and the other field too.
    common::same_everywhere(
        &s,
        &[&[("n", 1)], &[("n", 3)]],
        &common::cfg_states(&[("C", 0)], &[0, 1]),
        &[("C", 0)],
    );
    // In text.
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    delete_config(\"C.k =\");\n}}\n"
    ));
    r.unwrap();
    lacks(&s, &["C.k = 2;"]);
    let (_, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    delete_config(\"C.k = #1\");\n}}\n"
    ));
    rejected(r, "delete_config", "C.k is read after the new write");
}

// ----- trying to break them -----

/// A callee that writes another value when its argument's innermost stride is not 1: any layout
/// change that reaches it would show in the results.
const STRIDE_PROBE: &str = "proc h(k: size, a: [f32][k] @ DRAM) {
    if stride(a, 0) == 1 {
        for r in 0..k {
            a[r] = 1.0;
        }
    } else {
        for r in 0..k {
            a[r] = 2.0;
        }
    }
}
";

/// The whole buffer passed to a callee, or bound to a window name whose stride is read: every
/// layout primitive refuses to change a stride the code sees, and accepts what keeps them.
#[test]
fn layout_changes_never_reach_a_stride_the_code_sees() {
    let whole = format!(
        "{STRIDE_PROBE}proc g(k: size, a: [f32][k, 2] @ DRAM) {{
    for r in 0..k {{
        a[r, 0] = 1.0;
        a[r, 1] = 1.0;
    }}
}}
proc p(n: size, y: f32[n, 2] @ DRAM) {{
    alloc t: f32[n, 2] @ DRAM;
    g(n, t);
    for i in 0..n {{
        y[i, 0] = t[i, 0];
        y[i, 1] = t[i, 1];
    }}
}}"
    );
    rejected_at(
        &whole,
        "alloc t",
        |s, c| s.rearrange_dim(c, &[1, 0]),
        "rearrange_dim",
        "a window of the whole buffer of 't'",
    );
    rejected_at(
        &whole,
        "alloc t",
        |s, c| s.resize_dim(c, 1, &int(3), &int(0)),
        "resize_dim",
        "a window of the whole buffer 't' would change shape",
    );
    rejected_at(
        &whole,
        "alloc t",
        |s, c| s.unroll_buffer(c, 1),
        "unroll_buffer",
        "a window of the whole buffer 't' spans dimension 1",
    );
    // The identity permutation changes nothing, whole-buffer windows included.
    let mut s = sched(&whole);
    s.rearrange_dim(&s.find("alloc t").unwrap(), &[0, 1])
        .unwrap();
    same_for_n(&s, &[2]);

    // A window name over a column: its stride is the row length.
    let named = format!(
        "{STRIDE_PROBE}proc p(n: size, y: f32[4, n] @ DRAM) {{
    alloc t: f32[4, n] @ DRAM;
    for i in 0..n {{
        let w = t[0:4, i];
        h(4, w);
    }}
    for i in 0..n {{
        for j in 0..4 {{
            y[j, i] = t[j, i];
        }}
    }}
}}"
    );
    rejected_at(
        &named,
        "alloc t",
        |s, c| {
            let n = common::n_of(s);
            s.resize_dim(c, 1, &Expr::binary(BinOp::Add, n, int(0)), &int(0))
        },
        "resize_dim",
        "a window of 't' spans dimension 0",
    );
    rejected_at(
        &named,
        "alloc t",
        |s, c| s.rearrange_dim(c, &[1, 0]),
        "rearrange_dim",
        "a window spanning dimension 0 of 't'",
    );
    // Resizing the first dimension keeps the column's stride (the row length): accepted, and
    // the window is shifted.
    let mut s = sched(&named);
    s.resize_dim(&s.find("alloc t").unwrap(), 0, &int(6), &int(-2))
        .unwrap();
    shows(&s, &["let w = t[2:6, i];", "y[j, i] = t[j - -2, i];"]);
    same_for_n(&s, &[1, 3]);
}

/// Windows with a constant point in the unrolled dimension go to the right buffer.
#[test]
fn unroll_buffer_sends_windows_to_the_right_buffer() {
    let src = format!(
        "{STRIDE_PROBE}proc p(n: size, y: f32[3, 4] @ DRAM) {{
    alloc t: f32[3, 4] @ DRAM;
    h(4, t[0, 0:4]);
    for j in 0..4 {{
        t[1, j] = 5.0;
        t[2, j] = 6.0;
    }}
    h(2, t[2, 1:3]);
    for b in 0..3 {{
        for j in 0..4 {{
            y[b, j] = 0.0;
        }}
    }}
    for j in 0..4 {{
        y[0, j] = t[0, j];
        y[1, j] = t[1, j];
        y[2, j] = t[2, j];
    }}
}}"
    );
    let mut s = sched(&src);
    s.unroll_buffer(&s.find("alloc t").unwrap(), 0).unwrap();
    shows(
        &s,
        &["h(4, t_0[0:4]);", "h(2, t_2[1:3]);", "y[1, j] = t_1[j];"],
    );
    same_for_n(&s, &[1]);
    // A window whose point is a loop variable cannot name one buffer.
    let var_point = format!(
        "{STRIDE_PROBE}proc p(n: size, y: f32[3, 4] @ DRAM) {{
    alloc t: f32[3, 4] @ DRAM;
    for b in 0..3 {{
        h(4, t[b, 0:4]);
    }}
    for b in 0..3 {{
        for j in 0..4 {{
            y[b, j] = t[b, j];
        }}
    }}
}}"
    );
    rejected_at(
        &var_point,
        "alloc t",
        |s, c| s.unroll_buffer(c, 0),
        "unroll_buffer",
        "the window indexes dimension 0 of 't' with b, not a constant in 0..3",
    );
}

/// Bodies that allocate (different symbols, the same code) join; the duplicated `else` of
/// `lift_scope` gets fresh symbols, so the result checks (every step is rechecked here).
#[test]
fn binders_in_joined_and_duplicated_code() {
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n + 2] @ DRAM) {
    for i in 0..2 {
        alloc t: f32 @ DRAM_STACK;
        t = x[i] * 2.0;
        y[i] = t;
    }
    for k in 2..n + 2 {
        alloc u: f32 @ DRAM_STACK;
        u = x[k - 2] * 2.0;
        y[k] = u;
    }
}";
    // The bodies differ (`x[k - 2]` is not `x[k]`): refused.
    rejected_at(src, "for i", Schedule::join_loops, "join_loops", "differ");
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n + 2] @ DRAM) {
    for i in 0..2 {
        alloc t: f32 @ DRAM_STACK;
        t = x[i] * 2.0;
        y[i] = t;
    }
    for k in 2..n + 2 {
        alloc u: f32 @ DRAM_STACK;
        u = x[k] * 2.0;
        y[k] = u;
    }
}";
    let mut s = sched(src);
    s.join_loops(&s.find("for i").unwrap()).unwrap();
    shows(&s, &["for i in 0..n + 2 {"]);
    same_for_n(&s, &[1, 4]);

    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        if i < m {
            if i % 3 == 0 {
                x[i] = 1.0;
            } else {
                x[i] = 2.0;
            }
        } else {
            alloc t: f32 @ DRAM_STACK;
            t = x[i] + 1.0;
            x[i] = t * t;
        }
    }
}";
    let mut s = sched(src);
    s.lift_scope(&s.find("if #1").unwrap()).unwrap();
    // Two allocations, of two symbols.
    let mut allocs = Vec::new();
    weft_ir::visit::walk_block(&s.proc().body, &mut |st| {
        if let StmtKind::Alloc { buf, .. } = &st.kind {
            allocs.push(buf.clone());
        }
    });
    assert_eq!(allocs.len(), 2, "{}", text(&s));
    assert_ne!(allocs[0], allocs[1]);
    for (n, m) in [(1, 1), (7, 3), (7, 9)] {
        same_results(&s, &[("n", n), ("m", m)]);
    }
}

/// Odd arguments are refused with a message, never a panic.
#[test]
fn odd_arguments_are_refused() {
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    alloc t: f32 @ DRAM_STACK;
    t = 1.0;
    for i in 0..n {
        for j in 0..0 {
            y[i] = t;
        }
        for j in 9223372036854775807..9223372036854775807 {
            y[i] = t;
        }
    }
    pass;
}";
    let mut s = sched(src);
    let a = s.find("alloc t").unwrap();
    rejected(s.rearrange_dim(&a, &[]), "rearrange_dim", "'t' is a scalar");
    rejected(
        s.unroll_buffer(&a, 0),
        "unroll_buffer",
        "'t' has 0 dimensions, not a dimension 0",
    );
    rejected(
        s.resize_dim(&a, 0, &int(1), &int(0)),
        "resize_dim",
        "'t' has 0 dimensions",
    );
    rejected(
        s.mult_loops(&s.find("for i").unwrap(), "k"),
        "mult_loops",
        "must be exactly one loop, but it has 2 statements",
    );
    rejected(
        s.lift_scope(&s.find("pass").unwrap()),
        "lift_scope",
        "expected a loop or an 'if'",
    );
    rejected(
        s.lift_scope(&s.find("alloc t").unwrap()),
        "lift_scope",
        "expected a loop or an 'if'",
    );
    rejected(
        s.delete_config(&s.find("pass").unwrap()),
        "delete_config",
        "expected a config write",
    );
    rejected(
        s.join_loops(&s.find("pass").unwrap()),
        "join_loops",
        "expected a loop",
    );
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    for i in 0..n {
        for j in 0..0 {
            y[i] = 1.0;
        }
    }
    for i in 0..n {
        for j in 9223372036854775806..9223372036854775807 {
            y[i] = 1.0;
        }
    }
}";
    let mut s = sched(src);
    rejected(
        s.mult_loops(&s.find("for i").unwrap(), "k"),
        "mult_loops",
        "are not integer constants with a positive extent",
    );
    // One iteration: accepted, and `k % 1` is `0` past the constant start.
    s.mult_loops(&s.find("for i #1").unwrap(), "k").unwrap();
    shows(&s, &["for k in 0..n {\n        y[k / 1] = 1.0;"]);
    same_for_n(&s, &[1, 3]);
    assert_eq!(s.steps().len(), 1);
    assert_eq!(s.proc().body.len(), 2);
}

/// `mult_loops` evaluates the outer start in the body: a config field the body writes is refused.
#[test]
fn mult_loops_refuses_a_start_the_body_changes() {
    let src = "config C { k: index }
proc p(n: size, y: f32[n + 4, 2] @ DRAM) {
    C.k = 0;
    for i in C.k..n {
        for j in 0..2 {
            y[i, j] = 1.0;
            C.k = 1;
        }
    }
}";
    rejected_at(
        src,
        "for i",
        |s, c| s.mult_loops(c, "k"),
        "mult_loops",
        "config C is read by the outer loop's start and written by the loop body",
    );
}

// ----- autolift_alloc and autosink_alloc -----

const PER_ITERATION: &str = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    for i in 0..n {
        for j in 1..4 {
            alloc t: f32[2] @ DRAM;
            t[0] = x[i, j] * 2.0;
            t[1] = x[i, j - 1];
            y[i, j] = t[0] + t[1];
        }
    }
}";

/// Each loop gives the buffer a slice per iteration on the way out, so what `lift_alloc` alone
/// refuses (every iteration writes the same cells) is accepted; the cursor follows the buffer.
#[test]
fn autolift_alloc_expands_by_each_loop_on_the_way_out() {
    let mut s = sched(PER_ITERATION);
    let a = s.find("alloc t").unwrap();
    let c = s.autolift_alloc(&a, 2).unwrap();
    assert_eq!(s.resolve(&c).unwrap().to_string(), "[0]");
    shows(
        &s,
        &[
            "alloc t: f32[n, 4 - 1, 2] @ DRAM;\n    for i in 0..n {",
            "t[i, j - 1, 0] = x[i, j] * 2.0;",
            "y[i, j] = t[i, j - 1, 0] + t[i, j - 1, 1];",
        ],
    );
    assert_eq!(s.steps().len(), 4);
    same_for_n(&s, &[1, 3]);
    // In text, one level.
    let (s, r) = script(PER_ITERATION, "    autolift_alloc(\"alloc t\");");
    r.unwrap();
    shows(
        &s,
        &["alloc t: f32[4 - 1, 2] @ DRAM;\n        for j in 1..4 {"],
    );
    same_for_n(&s, &[2]);
}

/// A level refused (the stack cannot hold a slice per iteration of a loop of `n`) takes back the
/// levels before it.
#[test]
fn autolift_alloc_is_all_or_nothing() {
    let src = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    for i in 0..n {
        for j in 0..4 {
            alloc t: f32 @ DRAM_STACK;
            t = x[i, j] * 2.0;
            y[i, j] = t;
        }
    }
}";
    let mut s = sched(src);
    let a = s.find("alloc t").unwrap();
    let e = rejected(
        s.autolift_alloc(&a, 2),
        "expand_dim",
        "level 2 of 2: 't' may not fit memory DRAM_STACK",
    );
    assert!(cex(&e, "n") > 1000, "{e}");
    assert!(s.steps().is_empty());
    assert_eq!(s.proc(), s.version(0).unwrap());
    // The first level alone fits.
    s.autolift_alloc(&a, 1).unwrap();
    shows(
        &s,
        &[
            "alloc t: f32[4] @ DRAM_STACK;\n        for j in 0..4 {",
            "t[j] = x[i, j] * 2.0;",
        ],
    );
    same_for_n(&s, &[1, 2]);
    let (_, r) = script(src, "    autolift_alloc(\"alloc t\", 0);");
    rejected(r, "schedule", "a level count is 1 or more");
}

#[test]
fn autosink_alloc_sinks_as_far_as_it_goes() {
    let src = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    alloc t: f32[2] @ DRAM;
    if n > 2 {
        for i in 0..n {
            t[0] = x[i, 0] * 2.0;
            y[i, 0] = t[0] + 1.0;
        }
    }
}";
    let mut s = sched(src);
    let c = s.autosink_alloc(&s.find("alloc t").unwrap()).unwrap();
    assert_eq!(s.resolve(&c).unwrap().to_string(), "[0/0/0]");
    assert_eq!(s.steps().len(), 2);
    shows(
        &s,
        &["for i in 0..n {\n            alloc t: f32[2] @ DRAM;"],
    );
    same_for_n(&s, &[1, 3]);
    let (s, r) = script(src, "    autosink_alloc(\"alloc t\");");
    r.unwrap();
    assert_eq!(s.steps().len(), 2);
    // Nothing to sink into.
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    alloc t: f32[2] @ DRAM;
    t[0] = 1.0;
    for i in 0..n {
        y[i] = t[0];
    }
}";
    rejected_at(
        src,
        "alloc t",
        Schedule::autosink_alloc,
        "sink_alloc",
        "is not followed by a loop or an 'if'",
    );
}

/// Review holes: steps that made the program evaluate what the original did not, where that
/// can fail (a config field never written, a heap allocation). `lift_scope` testing an inner
/// condition or evaluating loop bounds where the outer condition is false, `lift_if` (and
/// `lift_scope` through it) testing a config condition before a loop that may not run,
/// `rewrite_expr` bringing in a config read that the solver sees as an unknown (`C.k * 0 = 0`),
/// `lift_alloc` out of a loop that may not run with a config-read size or a heap memory. Each is
/// refused now, with the reason.
#[test]
fn steps_that_would_evaluate_config_fields_or_allocate_where_the_original_did_not_are_refused() {
    for (name, src, message) in [
        (
            "ls1",
            r#"config C { flag: bool }
proc p(n: size, y: f32[4] @ DRAM) {
    if n > 5 {
        if C.flag {
            y[0] = 1.0;
        }
    }
}
schedule q = p {
    lift_scope("if #1");
}
"#,
            "reads a config field",
        ),
        (
            "ls2",
            r#"config C { k: size }
proc p(n: size, y: f32[4] @ DRAM) {
    if n > 5 {
        for i in 0..max(C.k, 0) {
            y[0] = 1.0;
        }
    }
}
schedule q = p {
    lift_scope("for i");
}
"#,
            "read a config field",
        ),
        (
            "ls3",
            r#"config C { flag: bool }
proc p(m: index, y: f32[4] @ DRAM) {
    assert m >= 0;
    for i in 0..m {
        if C.flag {
            y[0] = 1.0;
        }
    }
}
schedule q = p {
    lift_scope("if");
}
"#,
            "may run zero times",
        ),
        (
            "rw4",
            r#"config C { k: index }
proc p(n: size, y: f32[8] @ DRAM) {
    y[0] = 1.0;
}
schedule q = p {
    rewrite_expr("y =", 0, C.k * 0);
}
"#,
            "does not read",
        ),
        (
            "la5",
            r#"config C { k: index }
proc p(m: index, x: f32[8] @ DRAM, y: f32[8] @ DRAM) {
    assert m >= 0 and m <= 8;
    for i in 0..m {
        alloc t: f32[max(C.k, 1)] @ DRAM;
        t[0] = x[i];
        y[i] = t[0];
    }
}
schedule q = p {
    lift_alloc("alloc t");
}
"#,
            "may run zero times",
        ),
        (
            "la6",
            r#"proc p(n: size, m: index, x: f32[8] @ DRAM, y: f32[8] @ DRAM) {
    assert m >= 0 and m <= 8;
    for i in 0..m {
        alloc t: f32[n, n, n] @ DRAM;
        t[0, 0, 0] = x[i];
        y[i] = t[0, 0, 0];
    }
}
schedule q = p {
    lift_alloc("alloc t");
}
"#,
            "may run zero times",
        ),
    ] {
        let (_, r) = common::scheduled(src);
        let e = r.expect_err(name);
        assert!(e.to_string().contains(message), "{name}: {e}");
    }
}

// ----- divide_with_recompute -----

/// The 1-D three-point blur, whose tiles recompute the iterations they share.
const BLUR: &str = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        y[i] = x[i] + x[i + 1] + x[i + 2];
    }
}";

/// `divide_with_recompute` of the loop matching `pattern` in `src`, its outer bound written as
/// text (resolved where the loop is): the schedule, or the rejection.
fn recompute(
    src: &str,
    pattern: &str,
    outer_hi: &str,
    stride: i64,
) -> (Schedule, Result<(), weft_sched::SchedError>) {
    let steps = format!("    divide_with_recompute({pattern}, {outer_hi}, {stride}, io, ii);");
    script(src, &steps)
}

#[test]
fn divide_with_recompute_tiles_a_blur() {
    let mut s = sched(BLUR);
    let w = s.find("y =").unwrap();
    let n = common::arg_of(&s, "n");
    let h = Expr::binary(BinOp::Div, n, int(4));
    let c = s
        .divide_with_recompute(&s.find("for i").unwrap(), &h, 4, "io", "ii")
        .unwrap();
    shows(
        &s,
        &[
            "for io in 0..n / 4 {\n        for ii in 0..n - 4 * (n / 4) + 4 {\n            \
           y[4 * io + ii] = x[4 * io + ii] + x[4 * io + ii + 1] + x[4 * io + ii + 2];",
        ],
    );
    assert_eq!(s.resolve(&c), Some(weft_sched::Path::top(0)));
    assert_eq!(
        s.resolve(&w).unwrap(),
        s.resolve(&c).unwrap().child(0, 0).child(0, 0)
    );
    // Sizes that 4 divides (no overlap) and that it does not (overlaps of 1, 2 and 3).
    same_for_n(&s, &[4, 5, 6, 7, 8, 11, 13]);
}

/// Exo's own example: the outer bound `(n - 2) / 4` of a loop over `n - 2` points, in text.
#[test]
fn divide_with_recompute_in_text() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 6;
    for i in 0..n - 2 {
        y[i] = x[i] + x[i + 1] + x[i + 2];
    }
}";
    let (s, r) = recompute(src, "i", "(n - 2) / 4", 4);
    r.unwrap();
    shows(&s, &["for io in 0..(n - 2) / 4 {", "y[4 * io + ii] ="]);
    same_for_n(&s, &[6, 7, 8, 9, 10, 14]);
}

/// Sizes below the stride run no loop under the guard around it; a stride of 1 needs no guard,
/// also where the loop runs zero times (`n = 1`).
#[test]
fn divide_with_recompute_at_small_sizes() {
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    if n >= 4 {
        for i in 0..n {
            y[i] = x[i] + x[i + 1] + x[i + 2];
        }
    }
}";
    let (s, r) = recompute(src, "i", "n / 4", 4);
    r.unwrap();
    same_for_n(&s, &[1, 2, 3, 4, 5, 9]);
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n - 1 {
        y[i] = x[i] + x[i + 1] + x[i + 2];
    }
}";
    let (s, r) = recompute(src, "i", "n - 1", 1);
    r.unwrap();
    shows(
        &s,
        &["for io in 0..n - 1 {\n        for ii in 0..1 {\n            y[io + ii] ="],
    );
    same_for_n(&s, &[1, 2, 5]);
    // Two tiles of `n - 2` iterations overlapping by `n - 4`, for every `n >= 2`.
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 2;
    for i in 0..n {
        y[i] = x[i] + x[i + 1] + x[i + 2];
    }
}";
    let (s, r) = recompute(src, "i", "2", 1);
    r.unwrap();
    same_for_n(&s, &[2, 3, 4, 7]);
}

/// A 2-D stencil: the rows divided with recompute, then the columns of each row.
#[test]
fn divide_with_recompute_on_a_nest() {
    let src = "proc p(n: size, m: size, x: f32[m + 1, n + 1] @ DRAM, y: f32[m, n] @ DRAM) {
    assert m >= 3 and n >= 2;
    for j in 0..m {
        for i in 0..n {
            y[j, i] = x[j, i] + x[j + 1, i] + x[j, i + 1] * x[j + 1, i + 1];
        }
    }
}";
    let (s, r) = script(
        src,
        "    divide_with_recompute(j, m / 3, 3, jo, ji);
    divide_with_recompute(i, n / 2, 2, io, ii);",
    );
    r.unwrap();
    shows(
        &s,
        &[
            "for jo in 0..m / 3 {",
            "for io in 0..n / 2 {",
            "y[3 * jo + ji, 2 * io + ii] =",
        ],
    );
    for (n, m) in [(2, 3), (3, 4), (5, 5), (6, 8), (9, 7)] {
        same_results(&s, &[("n", n), ("m", m)]);
    }
}

/// A loop that does not start at 0: the tiles start at its start; the bounds of an inner loop may
/// depend on an outer one.
#[test]
fn divide_with_recompute_offsets_by_the_start() {
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM, y: f32[n + 1] @ DRAM) {
    assert n >= 4;
    for i in 1..n + 1 {
        y[i] = x[i - 1] + x[i];
    }
}";
    let (s, r) = recompute(src, "i", "n / 3", 3);
    r.unwrap();
    shows(&s, &["y[1 + (3 * io + ii)] = x[1 + (3 * io + ii) - 1]"]);
    same_for_n(&s, &[4, 5, 6, 7, 10]);
    let src = "proc p(n: size, x: f32[n, n + 1] @ DRAM, y: f32[n, n] @ DRAM) {
    for j in 0..n {
        if j >= 2 {
            for i in 0..j {
                y[j, i] = x[j, i] - x[j, i + 1];
            }
        }
    }
}";
    let (s, r) = recompute(src, "i", "j / 2", 2);
    r.unwrap();
    same_for_n(&s, &[1, 2, 3, 6, 7]);
}

/// Scratch space allocated in the body is private to an execution of it: written and read there.
#[test]
fn divide_with_recompute_allows_private_scratch() {
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        alloc t: f32[3] @ DRAM_STACK;
        for k in 0..3 {
            t[k] = x[i + k] * 2.0;
        }
        y[i] = t[0] + t[1] + t[2];
        t[0] = 0.0;
    }
}";
    let (s, r) = recompute(src, "i", "n / 4", 4);
    r.unwrap();
    same_for_n(&s, &[4, 5, 7, 9]);
}

/// Where the tiles provably do not overlap, the rewrite is a perfect split, or one tile: neither
/// condition on the body is needed, not even for a body that is not idempotent.
#[test]
fn divide_with_recompute_without_overlap_is_a_split() {
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM) {
    assert n % 4 == 0;
    for i in 0..n {
        x[i + 1] = x[i + 1] + x[i];
    }
}";
    let (s, r) = recompute(src, "i", "n / 4", 4);
    r.unwrap();
    // The inner bound is the stride where the overlap is proved empty.
    shows(&s, &["for io in 0..n / 4 {\n        for ii in 0..4 {"]);
    same_for_n(&s, &[4, 8, 12]);
    // One tile: the whole loop, once.
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM) {
    for i in 0..n {
        x[i + 1] = x[i + 1] + x[i];
    }
}";
    let (s, r) = recompute(src, "i", "1", 1);
    r.unwrap();
    shows(&s, &["for io in 0..1 {\n        for ii in 0..n {"]);
    same_for_n(&s, &[1, 2, 5]);
    // Two tiles overlap where `n > 2`.
    let src = src.replace("{\n    for", "{\n    assert n >= 2;\n    for");
    let (_, r) = recompute(&src, "i", "2", 1);
    let e = rejected(r, "divide_with_recompute", "may conflict");
    assert!(cex(&e, "n") > 2, "{e}");
}

/// A call counts with its callee's effects: a callee that writes the cell it reads is refused, one
/// that writes another buffer is accepted.
#[test]
fn divide_with_recompute_sees_through_calls() {
    let callees = "proc bump(a: [f32][1] @ DRAM) {
    a[0] = a[0] + 1.0;
}
proc blur3(a: [f32][3] @ DRAM, b: [f32][1] @ DRAM) {
    b[0] = a[0] + a[1] + a[2];
}
";
    let src = format!(
        "{callees}proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {{
    assert n >= 4;
    for i in 0..n {{
        blur3(x[i:i + 3], y[i:i + 1]);
    }}
}}"
    );
    let (s, r) = recompute(&src, "i", "n / 4", 4);
    r.unwrap();
    same_for_n(&s, &[4, 6, 9]);
    let src = format!(
        "{callees}proc p(n: size, x: f32[n] @ DRAM) {{
    assert n >= 4;
    for i in 0..n {{
        bump(x[i:i + 1]);
    }}
}}"
    );
    let (_, r) = recompute(&src, "i", "n / 4", 4);
    rejected(
        r,
        "divide_with_recompute",
        "not idempotent: it reads a location it writes",
    );
}

/// A reduction into one cell is a conflict between iterations (4); a reduction into a cell of
/// its own is independent but not idempotent (5).
#[test]
fn divide_with_recompute_refuses_reductions() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, s: f32[1] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        s[0] += x[i];
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    let e = rejected(r, "divide_with_recompute", "iterations of 'i' may conflict");
    assert!(cex(&e, "n") % 4 != 0, "{e}");
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        y[i] += x[i];
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(
        r,
        "divide_with_recompute",
        "the body is not idempotent: it reduces into y",
    );
}

/// A body that reads what it writes runs twice in the overlaps: refused, with sizes that overlap.
#[test]
fn divide_with_recompute_refuses_a_body_that_reads_what_it_writes() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        x[i] = x[i] + 1.0;
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    let e = rejected(
        r,
        "divide_with_recompute",
        "the body is not idempotent: it reads a location it writes",
    );
    assert!(cex(&e, "n") % 4 != 0, "{e}");
}

/// Dependences between iterations, in both directions.
#[test]
fn divide_with_recompute_refuses_dependent_iterations() {
    for body in ["x[i + 1] = x[i];", "x[i] = x[i + 1];"] {
        let src = format!(
            "proc p(n: size, x: f32[n + 1] @ DRAM) {{
    assert n >= 4;
    for i in 0..n {{
        {body}
    }}
}}"
        );
        let (_, r) = recompute(&src, "i", "n / 4", 4);
        let e = rejected(r, "divide_with_recompute", "iterations of 'i' may conflict");
        assert!(cex(&e, "i") != cex(&e, "i'"), "{e}");
    }
}

/// The tiles must stay within the loop, run forwards, and cover it.
#[test]
fn divide_with_recompute_refuses_wrong_outer_bounds() {
    let (_, r) = recompute(BLUR, "i", "n / 4 + 1", 4);
    let e = rejected(r, "divide_with_recompute", "may exceed the trip count n");
    assert!(cex(&e, "n") >= 4, "{e}");
    let (_, r) = recompute(BLUR, "i", "n", 2);
    rejected(r, "divide_with_recompute", "may exceed the trip count n");
    // Zero tiles for 4 <= n < 8: nothing would run.
    let (_, r) = recompute(BLUR, "i", "n / 8", 4);
    let e = rejected(r, "divide_with_recompute", "may be 0 where the loop runs");
    assert!((4..8).contains(&cex(&e, "n")), "{e}");
    // No guard: one tile of 4 cannot cover n < 4.
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] + x[i + 1] + x[i + 2];
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    let e = rejected(r, "divide_with_recompute", "may be 0 where the loop runs");
    assert!(cex(&e, "n") < 4, "{e}");
    // A bound that depends on an enclosing loop: `j = 1` has one iteration and no tile of 2.
    let src = "proc p(n: size, x: f32[n, n + 1] @ DRAM, y: f32[n, n] @ DRAM) {
    for j in 0..n {
        for i in 0..j {
            y[j, i] = x[j, i] - x[j, i + 1];
        }
    }
}";
    let (_, r) = recompute(src, "i", "j / 2", 2);
    let e = rejected(r, "divide_with_recompute", "may be 0 where the loop runs");
    assert_eq!(cex(&e, "j"), 1, "{e}");
    // Negative where the loop runs zero times (`n = 1`).
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n - 1 {
        y[i] = x[i] + x[i + 1];
    }
}";
    let (_, r) = recompute(src, "i", "n - 2", 1);
    let e = rejected(r, "divide_with_recompute", "may be negative");
    assert_eq!(cex(&e, "n"), 1, "{e}");
}

/// The stride is positive, the names new, the outer bound a quasi-affine control expression over
/// names in scope at the loop, and the statement a loop.
#[test]
fn divide_with_recompute_refuses_odd_arguments() {
    for stride in [0, -4] {
        let (_, r) = recompute(BLUR, "i", "n / 4", stride);
        rejected(r, "divide_with_recompute", "the stride must be positive");
    }
    let (_, r) = script(BLUR, "    divide_with_recompute(i, n / 4, 4, n, ii);");
    rejected(r, "divide_with_recompute", "'n' is already a name here");
    let (_, r) = script(BLUR, "    divide_with_recompute(i, n / 4, 4, io, io);");
    rejected(r, "divide_with_recompute", "two new things the name 'io'");
    let (_, r) = script(
        BLUR,
        "    divide_with_recompute(\"y =\", n / 4, 4, io, ii);",
    );
    rejected(r, "divide_with_recompute", "expected a loop");
    let mut s = sched(BLUR);
    let n = common::arg_of(&s, "n");
    let square = Expr::binary(BinOp::Mul, n.clone(), n);
    rejected(
        s.divide_with_recompute(&s.find("for i").unwrap(), &square, 4, "io", "ii"),
        "divide_with_recompute",
        "is not a quasi-affine control expression",
    );
    // Large values: the tiles would run past the end, or there would be none.
    let (_, r) = recompute(BLUR, "i", "4611686018427387904", 4);
    rejected(r, "divide_with_recompute", "may exceed the trip count");
    let (_, r) = recompute(BLUR, "i", "n / 9223372036854775807", 9223372036854775807);
    rejected(r, "divide_with_recompute", "may be 0 where the loop runs");
    // A loop that never runs: no tile, of any stride; one tile would run past its end.
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    for i in 0..0 {
        y[0] = 1.0;
    }
}";
    let (s, r) = recompute(src, "i", "0", 9223372036854775807);
    r.unwrap();
    shows(
        &s,
        &["for io in 0..0 {\n        for ii in 0..9223372036854775807 {"],
    );
    same_for_n(&s, &[1, 2]);
    let (_, r) = recompute(src, "i", "1", 9223372036854775807);
    rejected(r, "divide_with_recompute", "may exceed the trip count 0");
}

/// A config field is one location: written in one iteration and read in the same one, it makes
/// the body not idempotent; written in every iteration, the iterations conflict.
#[test]
fn divide_with_recompute_refuses_config_writes_that_are_read() {
    let src = "config C { v: f32 }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        if i == 0 {
            C.v = x[0];
            y[0] = C.v;
        }
        if i > 0 {
            y[i] = x[i];
        }
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(
        r,
        "divide_with_recompute",
        "the body is not idempotent: it reads a location it writes",
    );
    let src = "config C { v: f32 }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        C.v = x[i];
        y[i] = C.v;
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(r, "divide_with_recompute", "iterations of 'i' may conflict");
    // The same through a call.
    let src = "config C { v: f32 }
proc put(a: [f32][1] @ DRAM) {
    C.v = a[0];
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        put(x[i:i + 1]);
        y[i] = C.v;
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(r, "divide_with_recompute", "iterations of 'i' may conflict");
}

/// The inner bound evaluates the loop's bounds and the outer bound again in every tile: a config
/// field the body writes must not be among what they read.
#[test]
fn divide_with_recompute_refuses_bounds_the_body_changes() {
    let src = "config C { k: index }
proc p(n: size, y: f32[n + 8] @ DRAM) {
    assert n >= 4;
    C.k = n;
    for i in 0..C.k {
        y[i] = 1.0;
        C.k = 4;
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(
        r,
        "divide_with_recompute",
        "config C is read by the loop bounds or the outer bound and written by the loop body",
    );
}

// Attempts to break `divide_with_recompute`: each either rejected or compared with the original.

/// Aliases through windows: a window bound before the loop makes `w[i] = x[i]` the dependence
/// `x[i + 1] = x[i]`, and `w[i] = x[i + 1] * 2.0` a body that reads the cell it writes; a window
/// bound in the body makes `w[0] = w[1]` the anti-dependence `x[i] = x[i + 1]`.
#[test]
fn divide_with_recompute_sees_through_windows() {
    for body in ["w[i] = x[i];", "w[i] = x[i + 1] * 2.0;"] {
        let src = format!(
            "proc p(n: size, x: f32[n + 2] @ DRAM) {{
    assert n >= 4;
    let w = x[1:n + 1];
    for i in 0..n {{
        {body}
    }}
}}"
        );
        let (_, r) = recompute(&src, "i", "n / 4", 4);
        assert!(r.is_err(), "accepted: {body}");
    }
    let src = "proc p(n: size, x: f32[n + 1] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        let w = x[i:i + 2];
        w[0] = w[1];
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(r, "divide_with_recompute", "iterations of 'i' may conflict");
}

/// A buffer allocated before the loop and written by it, read after: the overlapping tiles write
/// every cell (some twice, with the same value), so what follows reads what it read before.
#[test]
fn divide_with_recompute_of_a_producer_loop() {
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    alloc t: f32[n] @ DRAM;
    for i in 0..n {
        t[i] = x[i] + x[i + 1] + x[i + 2];
    }
    for i in 0..n {
        y[i] = t[i] * t[n - 1 - i];
    }
}";
    let (s, r) = recompute(src, "i", "n / 4", 4);
    r.unwrap();
    same_for_n(&s, &[4, 5, 7, 10]);
}

/// A parallel loop keeps its mark on the inner loop only: two tiles may write one cell.
#[test]
fn divide_with_recompute_of_a_parallel_loop() {
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    for i in par(0..n) {
        y[i] = x[i] + x[i + 1] + x[i + 2];
    }
}";
    let (s, r) = recompute(src, "i", "n / 4", 4);
    r.unwrap();
    shows(
        &s,
        &["for io in 0..n / 4 {\n        for ii in par(0..n - 4 * (n / 4) + 4) {"],
    );
    same_for_n(&s, &[4, 7, 9]);
}

/// A write whose cell depends on a config value is refused: the analysis lets another iteration
/// see another value of the field, so the iterations may conflict (and the shadowing rule that
/// `remove_loop` shares refuses it too); a config value read only as data is accepted.
#[test]
fn divide_with_recompute_and_config_reads() {
    let src = "config C { k: index, s: f32 }
proc p(n: size, x: f32[n + 4] @ DRAM, y: f32[n + 4] @ DRAM) {
    assert n >= 4;
    C.k = 2;
    C.s = 3.0;
    for i in 0..n {
        y[i + C.k % 4] = x[i] * C.s;
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(r, "divide_with_recompute", "iterations of 'i' may conflict");
    let src = "config C { s: f32 }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    assert n >= 4;
    C.s = 3.0;
    for i in 0..n {
        y[i] = x[i] * C.s;
    }
}";
    let (s, r) = recompute(src, "i", "n / 4", 4);
    r.unwrap();
    same_for_n(&s, &[4, 6, 9]);
}

/// Bounds read from a config field: each read is an unknown value of its own, so a trip count
/// `n + C.k - C.k` is not proved to be `n` and the step is refused (soundly; weft cannot relate
/// them).
#[test]
fn divide_with_recompute_with_a_config_start() {
    let src = "config C { k: index }
proc p(n: size, x: f32[n + 8] @ DRAM, y: f32[n + 8] @ DRAM) {
    assert n >= 4;
    C.k = 3;
    for i in C.k..n + C.k {
        y[i] = x[i] + x[i + 1];
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(
        r,
        "divide_with_recompute",
        "may exceed the trip count n + C.k - (C.k)",
    );
}

/// The idempotence rule is the simple one: a cell of a buffer from outside the body that one
/// iteration writes and then reads is refused, although its second run would read its own write
/// (allocate such a temporary in the body instead); repeated writes of one cell are accepted.
#[test]
fn divide_with_recompute_refuses_a_write_then_read_of_an_outer_buffer() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, t: f32[n] @ DRAM) {
    assert n >= 4;
    for i in 0..n {
        t[i] = x[i] * 2.0;
        y[i] = t[i] + 1.0;
    }
}";
    let (_, r) = recompute(src, "i", "n / 4", 4);
    rejected(
        r,
        "divide_with_recompute",
        "the body is not idempotent: it reads a location it writes",
    );
    // Four writes of `y[i]`, then (or not) a read of it.
    for read_back in [true, false] {
        let last = if read_back { "y[i] = y[i];" } else { "" };
        let src = format!(
            "proc p(n: size, x: f32[n + 3] @ DRAM, y: f32[n] @ DRAM) {{
    assert n >= 4;
    for i in 0..n {{
        for k in 0..4 {{
            y[i] = x[i + k];
        }}
        {last}
    }}
}}"
        );
        let (s, r) = recompute(&src, "i", "n / 4", 4);
        if read_back {
            rejected(r, "divide_with_recompute", "not idempotent");
        } else {
            r.unwrap();
            same_for_n(&s, &[4, 6, 9]);
        }
    }
}
