//! Review probes for the buffer, config and cross-proc primitives (inline_assign, sink_alloc,
//! divide_dim, reuse_buffer, bind_config, write_config, extract_proc, partial_eval, call_eqv,
//! add_loop, eliminate_dead_code): adversarial inputs where an accepted rewrite must keep the
//! proc's results, or must be rejected.
//!
//! Each probe asserts the sound outcome: the step is rejected by the primitive itself (not by the
//! schedule's recheck, which reports an "internal error": the primitive produced a proc that does
//! not check), or the scheduled proc gives the original's results — every buffer cell, error
//! values included, and every config field that the provenance does not record as polluted — on
//! the reference interpreter, at several sizes including 1 and from several initial config
//! states, and it runs without error wherever the original does.
//!
//! When they were written, these probes failed (bugs):
//! - `sink_alloc` (and `lift_alloc`, same helper): a config read in an `if` condition or a window
//!   offset is one solver variable shared by the "earlier iteration" and the current one, although
//!   the body changes the field in between;
//! - `inline_assign`: the value reads a window of a buffer freed before the replaced read;
//! - `extract_proc`: a re-bound window re-evaluates config reads in its coordinates at the call;
//!   passed window/allocation types that read a config field make the caller's call unprovable;
//!   window extents simplified with two same-named variables merged; `first + count` overflows;
//! - `call_eqv`: alpha-equivalence compares callees by name, relating procs that differ;
//! - `add_loop`: an `alloc`, `free` or window binding is "idempotent" (no effects) and is wrapped;
//!   a loop name already in scope is accepted, and `simplify` then merges the two names;
//! - `divide_dim`: a memory's fixed innermost extent is not checked;
//! - `write_config`: `stride(t, d)` written after `free t`;
//! - `simplify` (used by `unroll`, `stage_mem`, `extract_proc`, `partial_eval`, `replace`): atoms
//!   are merged by printed text, so two different variables named `i` cancel.

mod common;

use common::*;
use weft_ir::Expr;
use weft_sched::Schedule;

// =============================================================================================
// sink_alloc
// =============================================================================================

/// The write of `t[0]` (iteration 0) and the read (iteration 1) sit in the two branches of one
/// `if C.k == 0`, and the body changes `C.k` in between. The analysis gives the condition's config
/// read one variable, shared by the "earlier iteration" copy of the write and the current read, so
/// the two guards look contradictory (`C.k == 0` and `C.k != 0` at once) and the read looks
/// untouched by earlier iterations. With the allocation inside the loop, iteration 1 reads a fresh
/// (uninitialised) cell instead of 1.0.
#[test]
fn sink_alloc_config_condition_changes_between_iterations() {
    let src = "config C { k: index }
proc p(y: f32[1] @ DRAM) {
    C.k = 0;
    alloc t: f32[1] @ DRAM;
    for i in 0..2 {
        if C.k == 0 {
            t[0] = 1.0;
            C.k = 1;
        } else {
            y[0] = t[0];
        }
    }
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t").unwrap();
    let r = s.sink_alloc(&at);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("C", 0)]);
}

/// Same root cause through a window whose offset reads a config field: the window is re-bound at
/// every iteration, `C.k` changes, but both iterations' accesses are expressed with one variable
/// for the offset, so `t[X % 2]` (written at iteration 0) and `t[X % 2 + 1]` (read at iteration 1)
/// look disjoint. At run time both are `t[1]`.
#[test]
fn sink_alloc_window_offset_reads_a_config_field_the_body_changes() {
    let src = "config C { k: index }
proc p(y: f32[1] @ DRAM) {
    C.k = 1;
    alloc t: f32[3] @ DRAM;
    for i in 0..2 {
        let w = t[C.k % 2 : 3];
        if i == 0 {
            w[0] = 1.0;
        } else {
            y[0] = w[1];
        }
        C.k = C.k % 1000 + 1;
    }
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t").unwrap();
    let r = s.sink_alloc(&at);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("C", 0)]);
}

/// A read of an earlier iteration's value through a call (the callee reads the cell).
#[test]
fn sink_alloc_read_of_an_earlier_iteration_through_a_call() {
    let src = "proc get(a: [f32][2] @ DRAM, y: [f32][1] @ DRAM) {
    y[0] = a[1];
}
proc p(n: size, y: f32[n] @ DRAM) {
    alloc t: f32[2] @ DRAM;
    for i in 0..n {
        if i > 0 {
            get(t[0:2], y[i:i + 1]);
        }
        t[1] = 3.0;
    }
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t").unwrap();
    let r = s.sink_alloc(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The shape reads a config field that a callee in the loop body writes.
#[test]
fn sink_alloc_shape_reads_a_config_field_a_callee_writes() {
    let src = "config C { k: index }
proc bump() {
    C.k = C.k % 1000 + 1;
}
proc p(n: size, y: f32[n] @ DRAM) {
    alloc t: f32[C.k % 3 + 1] @ DRAM;
    for i in 0..n {
        t[0] = 1.0;
        y[i] = t[0];
        bump();
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let r = s.sink_alloc(&at);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 2]), &[("C", 0)]);
}

/// An `if` whose two branches use the buffer, with a `free` further down: each branch gets an
/// allocation, and the reads of uninitialised cells stay reads of uninitialised cells.
#[test]
fn sink_alloc_into_both_branches_keeps_uninitialised_reads() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[2] @ DRAM;
    if n > 2 {
        t[0] = x[0];
        y[0] = t[0] + t[1];
    } else {
        t[1] = x[0];
        y[0] = t[1] * t[0];
    }
    y[n - 1] = x[n - 1];
    free t;
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t").unwrap();
    let r = s.sink_alloc(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The loop runs zero times for `n = 1`; reads in later iterations are covered by a write in the
/// same iteration.
#[test]
fn sink_alloc_covered_reads_in_a_loop_that_may_not_run() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[2] @ DRAM;
    for i in 1..n {
        t[i % 2] = x[i];
        y[i] = t[i % 2];
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let r = s.sink_alloc(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

// =============================================================================================
// inline_assign
// =============================================================================================

/// The value reads `u` through a window, and `u` is freed between the assignment and the read.
/// The "freed buffer" check looks for the buffer's own name in the value, not for windows of it:
/// the copy of the value lands after `free u` and reads freed storage (the checker, which also
/// only looks at names, accepts the result; the interpreter stops with a use-after-free).
#[test]
fn inline_assign_value_reads_a_window_of_a_buffer_freed_later() {
    let src = "proc p(x: f32[2] @ DRAM, y: f32[1] @ DRAM) {
    alloc u: f32[2] @ DRAM;
    u[0] = x[0];
    u[1] = x[1];
    let w = u[0:2];
    alloc t: f32[1] @ DRAM;
    t[0] = w[1];
    free u;
    y[0] = t[0];
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[]);
}

/// The value reads a data config field that a callee, called between the assignment and the
/// read, writes.
#[test]
fn inline_assign_value_reads_a_config_field_a_callee_writes() {
    let src = "config C { s: f32 }
proc set() {
    C.s = 3.0;
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    C.s = 2.0;
    for i in 0..n {
        alloc t: f32 @ DRAM_STACK;
        t = x[i] * C.s;
        set();
        y[i] = t;
    }
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[("C", 0)]);
}

/// The cell is overwritten through a window of the buffer before the read.
#[test]
fn inline_assign_cell_overwritten_through_a_window() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    let w = t[1:3];
    for i in 0..n {
        t[2] = x[i];
        w[1] = 5.0;
        y[i] = t[2];
    }
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The cell is read by a callee (through a window argument) after the assignment, besides the
/// direct read that would be replaced.
#[test]
fn inline_assign_cell_read_by_a_callee() {
    let src = "proc get(a: [f32][1] @ DRAM, y: [f32][1] @ DRAM) {
    y[0] = a[0];
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[1] @ DRAM;
        t[0] = x[i];
        z[i] = t[0];
        get(t[0:1], y[i:i + 1]);
    }
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The buffer lives across iterations of the loop, and the next iteration reads the cell before
/// the assignment runs again.
#[test]
fn inline_assign_cell_read_by_the_next_iteration() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    alloc t: f32[1] @ DRAM;
    for i in 0..n {
        y[i] = t[0];
        t[0] = x[i];
        z[i] = t[0];
    }
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// A conditional later write of what the value reads, under a guard that holds only sometimes.
#[test]
fn inline_assign_value_source_written_under_a_guard() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[1] @ DRAM;
        t[0] = x[0];
        if i == n - 1 {
            x[0] = 7.0;
        }
        y[i] = t[0];
    }
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The value is an uninitialised read: the error value must reach the same cells.
#[test]
fn inline_assign_of_an_uninitialised_value() {
    let src = "proc p(n: size, y: f32[n] @ DRAM) {
    alloc u: f32[n] @ DRAM;
    for i in 0..n {
        alloc t: f32[1] @ DRAM;
        t[0] = u[i] + 1.0;
        y[i] = t[0] * 2.0;
    }
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

// =============================================================================================
// divide_dim
// =============================================================================================

/// A memory that fixes the innermost extent (and allows direct access). Dividing the innermost
/// dimension changes that extent; the primitive does not check the memory's rule (as
/// `set_memory` does), so it hands the schedule a proc the checker rejects.
#[test]
fn divide_dim_of_the_innermost_dimension_of_a_fixed_width_memory() {
    let src = "memory V8 {
    header \"\"
    alloc \"float {name}[{size}];\"
    free \"\"
    access \"{name}[{offset}]\"
    addressable true
    last_dim 8
}
proc p(n: size, x: f32[n, 8] @ DRAM, y: f32[n, 8] @ DRAM) {
    alloc t: f32[n, 8] @ V8;
    for i in 0..n {
        for j in 0..8 {
            t[i, j] = x[i, j] * 2.0;
        }
    }
    for i in 0..n {
        for j in 0..8 {
            y[i, j] = t[i, j];
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let r = s.divide_dim(&at, 1, 2);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
    // Dividing it by the fixed extent itself keeps the innermost extent: accepted.
    let at = s.find("alloc t").unwrap();
    let r = s.divide_dim(&at, 1, 8);
    assert!(r.is_ok(), "{:?}", r.err().map(|e| e.to_string()));
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// Windows with a point in the divided dimension, strides, a callee that receives a window, and
/// reversed (negative-direction) indices.
#[test]
fn divide_dim_through_point_windows_strides_and_calls() {
    let src = "proc row(a: [f32][4] @ DRAM, y: [f32][4] @ DRAM) {
    for j in 0..4 {
        y[j] = a[3 - j];
    }
}
proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM, z: f32[n] @ DRAM) {
    alloc t: f32[2 * n, 4] @ DRAM;
    for i in 0..2 * n {
        for j in 0..4 {
            t[2 * n - 1 - i, j] = x[i / 2, j];
        }
    }
    for i in 0..n {
        let w = t[2 * i + 1, 0:4];
        row(w, y[i, 0:4]);
        z[i] = f32(stride(t, 0) + stride(w, 0));
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let r = s.divide_dim(&at, 0, 2);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// A whole-buffer argument of a call cannot change rank under the callee.
#[test]
fn divide_dim_rejects_a_whole_buffer_call_argument() {
    let src = "proc fill(a: [f32][4] @ DRAM) {
    for j in 0..4 {
        a[j] = 1.0;
    }
}
proc p(y: f32[4] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    fill(t);
    for j in 0..4 {
        y[j] = t[j];
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let r = s.divide_dim(&at, 0, 2);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[]);
}

/// Size 1 and factor 1, and a dimension indexed with a config field.
#[test]
fn divide_dim_by_one_and_config_indices() {
    let src = "config C { k: index }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[n, 3] @ DRAM;
    for i in 0..n {
        t[i, C.k % 3] = x[i];
        y[i] = t[i, C.k % 3];
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let r = s.divide_dim(&at, 0, 1);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[1, 5]), &[("C", 0)]);
    let at = s.find("alloc t").unwrap();
    let r = s.divide_dim(&at, 2, 3);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[1, 5]), &[("C", 0)]);
}

// =============================================================================================
// reuse_buffer
// =============================================================================================

/// `t1` lives outside the loop and is used in the loop body before `t2`'s allocation: a later
/// iteration would read `t2`'s values.
#[test]
fn reuse_buffer_inside_a_loop_that_uses_the_old_buffer_earlier() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    alloc t1: f32[1] @ DRAM;
    t1[0] = 0.0;
    for i in 0..n {
        y[i] = t1[0];
        alloc t2: f32[1] @ DRAM;
        t2[0] = x[i];
        z[i] = t2[0];
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t2").unwrap();
    let r = s.reuse_buffer(&at, "t1");
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// `t2` is allocated in a parallel loop; `t1` outside it: sharing one buffer races.
#[test]
fn reuse_buffer_inside_a_parallel_loop() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    alloc t1: f32[1] @ DRAM;
    t1[0] = 0.0;
    z[0] = t1[0];
    for i in par(0..n) {
        alloc t2: f32[1] @ DRAM;
        t2[0] = x[i];
        z[i] = t2[0] * 2.0;
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t2").unwrap();
    must_reject(s.reuse_buffer(&at, "t1"), &s);
}

/// The covering write is in a loop that may run zero times.
#[test]
fn reuse_buffer_cover_in_a_loop_that_may_not_run() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[1] @ DRAM;
    t1[0] = 5.0;
    y[0] = t1[0];
    alloc t2: f32[1] @ DRAM;
    for i in 1..n {
        t2[0] = x[i];
    }
    y[n - 1] = t2[0];
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t2").unwrap();
    let r = s.reuse_buffer(&at, "t1");
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The covering write is conditional on a config field.
#[test]
fn reuse_buffer_cover_under_a_config_condition() {
    let src = "config C { k: index }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[1] @ DRAM;
    t1[0] = 5.0;
    y[0] = t1[0];
    alloc t2: f32[1] @ DRAM;
    if C.k == 0 {
        t2[0] = x[0];
    }
    y[n - 1] = t2[0];
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t2").unwrap();
    let r = s.reuse_buffer(&at, "t1");
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
}

/// The new buffer is read by a callee (through a window) at a cell nothing wrote.
#[test]
fn reuse_buffer_uncovered_read_through_a_call() {
    let src = "proc get(a: [f32][2] @ DRAM, y: [f32][1] @ DRAM) {
    y[0] = a[1];
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[2] @ DRAM;
    t1[0] = 5.0;
    t1[1] = 6.0;
    y[0] = t1[0] + t1[1];
    alloc t2: f32[2] @ DRAM;
    t2[0] = x[0];
    get(t2[0:2], y[n - 1:n]);
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t2").unwrap();
    let r = s.reuse_buffer(&at, "t1");
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// `t1` used through a window (bound before `t2`) after `t2`'s allocation.
#[test]
fn reuse_buffer_old_buffer_used_through_an_earlier_window() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[2] @ DRAM;
    let w = t1[0:2];
    t1[0] = 5.0;
    t1[1] = 6.0;
    alloc t2: f32[2] @ DRAM;
    t2[0] = x[0];
    t2[1] = x[0];
    y[0] = t2[1] + w[1];
}";
    let mut s = sched(src);
    let at = s.find("alloc t2").unwrap();
    let r = s.reuse_buffer(&at, "t1");
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// A fully covered reuse (accepted), the new buffer freed and the old one freed after it.
#[test]
fn reuse_buffer_covered_and_freed() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[n] @ DRAM;
    for i in 0..n {
        t1[i] = x[i];
    }
    for i in 0..n {
        y[i] = t1[n - 1 - i];
    }
    alloc t2: f32[n] @ DRAM;
    for i in 0..n {
        t2[i] = y[i] * 2.0;
    }
    for i in 0..n {
        y[i] += t2[i];
    }
    free t2;
    free t1;
}";
    let mut s = sched(src);
    let at = s.find("alloc t2").unwrap();
    let r = s.reuse_buffer(&at, "t1");
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

// =============================================================================================
// bind_config and write_config
// =============================================================================================

const CFG: &str = "config Cfg { scale: f32, k: index, st: stride }
";

/// Binding in the body of a parallel loop: every iteration writes the field and reads it back.
#[test]
fn bind_config_in_a_parallel_loop() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    for i in par(0..n) {{
        y[i] = x[i] * 2.0;
    }}
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let at = s.find("y =").unwrap();
    must_reject(s.bind_config(&at, &f32_lit(2.0), &c, 0), &s);
}

/// The statement is a call whose callee reads the field: binding one of the call's arguments to
/// the field changes what the callee reads.
#[test]
fn bind_config_statement_calls_a_reader_of_the_field() {
    let src = format!(
        "{CFG}proc use(m: index, a: [f32][4] @ DRAM) {{
    if Cfg.k == 0 {{
        a[m % 4] = 1.0;
    }}
}}
proc p(x: f32[4] @ DRAM) {{
    Cfg.k = 0;
    use(1, x[0:4]);
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let at = s.find("call use").unwrap();
    let r = s.bind_config(&at, &Expr::int(1), &c, 1);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("Cfg", 1)]);
}

/// A later read of the field in a callee's window coordinate, in a later iteration of an outer
/// loop, after an inner loop that runs zero times for n = 1.
#[test]
fn write_config_read_in_a_callee_window_at_a_later_outer_iteration() {
    let src = format!(
        "{CFG}proc get(a: [f32][4] @ DRAM, y: [f32][1] @ DRAM) {{
    y[0] = a[Cfg.k % 4];
}}
proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n] @ DRAM) {{
    Cfg.k = 1;
    for i in 0..n {{
        get(x[i, 0:4], y[i:i + 1]);
        for j in 1..n {{
            x[i, 0] = 0.0;
        }}
    }}
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let at = s.find("x =").unwrap();
    let r = s.write_config(&at, &c, 1, &Expr::int(2));
    sound(r, &s, N, &cfg_states(&[], &[]), &[("Cfg", 1)]);
}

/// The value written is the stride of a buffer the statement frees: after the `free` the stride
/// is a use of a freed buffer.
#[test]
fn write_config_stride_of_the_buffer_the_statement_frees() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM) {{
    alloc t: f32[n, 4] @ DRAM;
    t[0, 0] = 1.0;
    x[0] = t[0, 0];
    free t;
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let t = match &s.stmt(&s.find("alloc t").unwrap()).unwrap().kind {
        weft_ir::StmtKind::Alloc { buf, .. } => buf.clone(),
        _ => unreachable!(),
    };
    let at = s.find("free t").unwrap();
    let r = s.write_config(&at, &c, 2, &Expr::stride(&t, 0));
    sound(r, &s, N, &cfg_states(&[], &[]), &[("Cfg", 2)]);
}

/// A write in a parallel loop races with the other iterations' writes.
#[test]
fn write_config_in_a_parallel_loop() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    for i in par(0..n) {{
        y[i] = x[i] * 2.0;
    }}
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let at = s.find("y =").unwrap();
    let i = common::var_of(&s, "for i");
    must_reject(s.write_config(&at, &c, 1, &i), &s);
}

/// The write ends up right before an overwrite inside the same block; reads after that are fine
/// (accepted, equal modulo the field).
#[test]
fn write_config_before_a_direct_overwrite_then_a_read() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = x[i];
        Cfg.k = i;
        if Cfg.k == 0 {{
            y[i] = 2.0;
        }}
    }}
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let at = s.find("y =").unwrap();
    let r = s.write_config(&at, &c, 1, &Expr::int(7));
    sound(r, &s, N, &cfg_states(&[("Cfg", 1)], &[0, 3]), &[("Cfg", 1)]);
}

/// The statement's own loop bound reads the field (bind_config writes the field *before* it).
#[test]
fn bind_config_statement_loop_bound_reads_the_field() {
    let src = format!(
        "{CFG}proc p(x: f32[2] @ DRAM, y: f32[2] @ DRAM) {{
    Cfg.k = 0;
    for i in 0..Cfg.k % 2 + 1 {{
        y[i] = x[i] * 2.0;
    }}
}}"
    );
    let c = config(&src, "Cfg");
    let mut s = sched(&src);
    let at = s.find("for i").unwrap();
    let r = s.bind_config(&at, &Expr::int(1), &c, 1);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("Cfg", 1)]);
}

// =============================================================================================
// extract_proc
// =============================================================================================

/// The block uses a buffer and a window of it, so the window is re-bound at the top of the new
/// proc — re-evaluating its coordinates at the call. They read a config field that changed
/// since the window was bound: the new proc writes `x[1]` where the block wrote `x[0]`.
#[test]
fn extract_proc_rebinds_a_window_whose_coordinates_read_a_changed_config_field() {
    let src = "config C { k: index }
proc p(x: f32[4] @ DRAM) {
    C.k = 0;
    let w = x[C.k % 2:3];
    C.k = 1;
    w[0] = 1.0;
    x[3] = 2.0;
}";
    let mut s = sched(src);
    let at = s.find("w =").unwrap();
    let r = s.extract_proc(&at, 2, "g");
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("C", 0)]);
}

/// A window passed whole has the type `[T][hi - lo]`; here `hi` reads a config field, so the
/// parameter's extent is re-evaluated at the call (after the field changed) and the caller's call
/// cannot be proved well formed: the new proc checks on its own, the caller does not.
#[test]
fn extract_proc_passes_a_window_whose_extent_reads_a_config_field() {
    let src = "config C { k: index }
proc p(x: f32[4] @ DRAM) {
    C.k = 0;
    let w = x[0:C.k % 2 + 1];
    C.k = 1;
    w[0] = 1.0;
}";
    let mut s = sched(src);
    let at = s.find("w =").unwrap();
    let r = s.extract_proc(&at, 1, "g");
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("C", 0)]);
}

/// Same with an allocation whose shape reads a config field (even unchanged, the checker cannot
/// equate two reads of a field).
#[test]
fn extract_proc_passes_an_allocation_whose_shape_reads_a_config_field() {
    let src = "config C { k: index }
proc p(x: f32[4] @ DRAM) {
    alloc t: f32[C.k % 4 + 1] @ DRAM;
    t[0] = x[0];
    x[1] = t[0];
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.extract_proc(&at, 2, "g");
    sound(r, &s, NONE, &cfg_states(&[("C", 0)], &[0, 3]), &[("C", 0)]);
}

/// Index-typed loop variables, a window of a window with a point, strides, an `else` fact and a
/// config read inside the block: accepted, same results.
#[test]
fn extract_proc_with_loop_variables_windows_strides_and_configs() {
    let src = "config C { k: index }
proc p(n: size, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM) {
    assert stride(x, 1) == 1;
    for i in 0..n {
        let w = x[i, 0:8];
        let v = w[2:6];
        if i < 1 {
            y[i] = 0.0;
        } else {
            for j in 0..4 {
                y[i] += v[j] * f32(stride(v, 0) + C.k % 3);
            }
            v[i % 4] = y[i - 1];
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("for j").unwrap();
    let r = s.extract_proc(&at, 2, "g");
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 4]), &[("C", 0)]);
}

/// A block that frees a buffer allocated before it, or declares a name used after it.
#[test]
fn extract_proc_rejects_escaping_frees_and_names() {
    let src = "proc p(x: f32[4] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    t[0] = x[0];
    free t;
    alloc u: f32[4] @ DRAM;
    u[0] = 1.0;
    x[0] = u[0];
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    must_reject(s.extract_proc(&at, 2, "g"), &s);
    let at = s.find("alloc u").unwrap();
    must_reject(s.extract_proc(&at, 2, "g2"), &s);
}

// =============================================================================================
// call_eqv
// =============================================================================================

/// Two procs recognised as the same by alpha-equivalence, which compares callees by *name*:
/// `h` and `h2` both become `{ g(x); }` by extracting their body into a proc named `g` (and `h2`
/// is renamed `h`), but the two `g`s differ. `call_eqv` then switches a call of the first to the
/// second with nothing polluted: `y[0]` becomes 2.0 instead of 1.0.
#[test]
fn call_eqv_alpha_equivalence_compares_callees_by_name() {
    let src = "proc h(x: f32[1] @ DRAM) {
    x[0] = 1.0;
}
proc h2(x: f32[1] @ DRAM) {
    x[0] = 2.0;
}
proc p(y: f32[1] @ DRAM) {
    h(y);
}";
    let m = module_of(src);
    let mut sh = Schedule::new(m.proc("h").unwrap().clone());
    sh.recheck = true;
    sh.extract_proc(&sh.find("x =").unwrap(), 1, "g").unwrap();
    let mut sh2 = Schedule::new(m.proc("h2").unwrap().clone());
    sh2.recheck = true;
    sh2.extract_proc(&sh2.find("x =").unwrap(), 1, "g").unwrap();
    sh2.rename("h").unwrap();
    let mut s = Schedule::new(m.proc("p").unwrap().clone());
    s.recheck = true;
    let at = s.find("call h").unwrap();
    s.call_eqv(&at, sh.proc()).unwrap();
    same_everywhere(&s, NONE, &cfg_states(&[], &[]), &[]);
    let r = s.call_eqv(&at, sh2.proc());
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[]);
}

const POLLUTER: &str = "config C { k: index, s: f32 }
proc f(x: [f32][4] @ DRAM) {
    x[0] = 1.0;
}
proc reader(x: [f32][4] @ DRAM) {
    if C.k == 5 {
        x[1] = 9.0;
    }
}
proc q(y: f32[4] @ DRAM) {
    f(y[0:4]);
    reader(y[0:4]);
}
proc r(y: f32[4] @ DRAM) {
    C.k = 0;
    f(y[0:4]);
    y[2] = 3.0;
}";

/// `f'` writes `C.k` (write_config): a call of it in `q`, which reads `C.k` afterwards in a
/// callee, must be refused; in `r`, which does not read it, it is accepted modulo `C.k`.
#[test]
fn call_eqv_across_a_polluted_config_field() {
    let m = module_of(POLLUTER);
    let c = m.config("C").unwrap().clone();
    let mut sf = Schedule::new(m.proc("f").unwrap().clone());
    sf.recheck = true;
    sf.write_config(&sf.find("x =").unwrap(), &c, 0, &Expr::int(5))
        .unwrap();
    let f2 = sf.proc().clone();

    let mut s = Schedule::new(m.proc("q").unwrap().clone());
    s.recheck = true;
    let at = s.find("call f").unwrap();
    let r = s.call_eqv(&at, &f2);
    sound(r, &s, NONE, &cfg_states(&[("C", 0)], &[0, 5]), &[("C", 0)]);

    let mut s = Schedule::new(m.proc("r").unwrap().clone());
    s.recheck = true;
    let at = s.find("call f").unwrap();
    let r = s.call_eqv(&at, &f2);
    assert!(r.is_ok(), "{:?}", r.err().map(|e| e.to_string()));
    assert_eq!(polluted(&s), vec![("C".to_string(), 0)]);
    sound(
        r,
        &s,
        NONE,
        &cfg_states(&[("C", 0)], &[0, 5]),
        &[("C", 0), ("C", 1)],
    );
}

/// The reverse direction: the original call is of the polluting version and the new one is of
/// the root; the polluted field is read by the rest of the proc (a later `if`).
#[test]
fn call_eqv_back_to_the_root_when_the_rest_reads_the_field() {
    let m = module_of(POLLUTER);
    let c = m.config("C").unwrap().clone();
    let f = m.proc("f").unwrap().clone();
    let mut sf = Schedule::new(f.clone());
    sf.recheck = true;
    sf.write_config(&sf.find("x =").unwrap(), &c, 0, &Expr::int(5))
        .unwrap();
    let f2 = sf.proc().clone();
    // A caller of f2 that reads C.k after the call; swap back to f.
    let src = format!(
        "{POLLUTER}
proc t(y: f32[4] @ DRAM) {{
    C.k = 0;
    f(y[0:4]);
    if C.k == 5 {{
        y[3] = 7.0;
    }}
}}"
    );
    let m2 = module_of(&src);
    let mut s = Schedule::new(m2.proc("t").unwrap().clone());
    s.recheck = true;
    let at = s.find("call f").unwrap();
    // The module's own `f` is alpha-equivalent to the root of f2's chain.
    let r = s.call_eqv(&at, &f2);
    sound(r, &s, NONE, &cfg_states(&[("C", 0)], &[0, 5]), &[("C", 0)]);
}

// =============================================================================================
// partial_eval
// =============================================================================================

/// Preconditions kept, dropped and contradicted; results equal to the original called with the
/// fixed values.
#[test]
fn partial_eval_with_preconditions() {
    let src = "proc p(n: size, m: size, k: index, x: f32[n, m] @ DRAM, y: f32[n] @ DRAM) {
    assert m == 4;
    assert k < n;
    assert 0 <= k;
    for i in 0..n {
        y[i] = x[i, k % 4] + x[k, m - 1];
    }
}";
    for (vals, ok) in [
        (&[("m", 4), ("k", 0)][..], true),
        (&[("m", 4)][..], true),
        (&[("m", 5)][..], false),
        (&[("n", 2), ("k", 3)][..], false),
        (&[("n", 1), ("k", 0), ("m", 4)][..], true),
    ] {
        let mut s = sched(src);
        let r = s.partial_eval(vals);
        if !ok {
            must_reject(r, &s);
            continue;
        }
        assert!(r.is_ok(), "{vals:?}: {:?}", r.err().map(|e| e.to_string()));
        let text_ = text(&s);
        eprintln!("{text_}");
        for n in [1i64, 2, 5] {
            for k in 0..n {
                let mut sizes: Vec<(&str, i64)> = vec![("n", n), ("m", 4), ("k", k)];
                for (name, v) in vals {
                    sizes.retain(|(x, _)| x != name);
                    sizes.push((name, *v));
                }
                if sizes.iter().any(|(x, v)| *x == "k" && *v >= n) {
                    continue;
                }
                // The fixed values must be the ones the original runs with.
                same_everywhere(&s, &[&sizes[..]], &cfg_states(&[], &[]), &[]);
            }
        }
    }
}

/// Huge values: no panic, and nothing accepted that the original could not run.
#[test]
fn partial_eval_with_extreme_values() {
    let src = "proc p(n: size, s: stride, x: f32[n * 8] @ DRAM) {
    assert s >= -8;
    for i in 0..n {
        x[i * 8] = f32(s);
    }
}";
    let mut s = sched(src);
    let r = s.partial_eval(&[("n", i64::MAX / 4)]);
    eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
    let mut s = sched(src);
    let r = s.partial_eval(&[("s", i64::MIN)]);
    must_reject(r, &s);
    let mut s = sched(src);
    s.partial_eval(&[("s", -8)]).unwrap();
    same_everywhere(
        &s,
        &[&[("n", 1), ("s", -8)], &[("n", 3), ("s", -8)]],
        &cfg_states(&[], &[]),
        &[],
    );
}

// =============================================================================================
// add_loop
// =============================================================================================

/// A `free` has no effects, so it looks idempotent: wrapped in a loop it is freed in a nested
/// block (the checker refuses) and, for n >= 2, freed twice.
#[test]
fn add_loop_around_a_free() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[1] @ DRAM;
    t[0] = 1.0;
    x[0] = t[0];
    free t;
}";
    let mut s = sched(src);
    let at = s.find("free t").unwrap();
    let n = n_of(&s);
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// An allocation (or a window binding, below) wrapped in a loop goes out of scope for the
/// statements after it.
#[test]
fn add_loop_around_an_allocation() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[1] @ DRAM;
    let w = x[0:1];
    t[0] = 1.0;
    w[0] = t[0];
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let n = n_of(&s);
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

#[test]
fn add_loop_around_a_window_binding() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    let w = x[0:1];
    w[0] = 1.0;
}";
    let mut s = sched(src);
    let at = s.find("window w").unwrap();
    let n = n_of(&s);
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// The statement writes a cell that it reads through a window (another name for the same
/// buffer): not idempotent.
#[test]
fn add_loop_reads_the_written_cell_through_a_window() {
    let src = "proc p(n: size, x: f32[n + 2] @ DRAM) {
    let w = x[1:n + 2];
    x[2] = w[1] * 2.0;
}";
    let mut s = sched(src);
    let at = s.find("x =").unwrap();
    let n = n_of(&s);
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

/// A callee that reads and writes one cell, and a callee that writes where a config field says.
#[test]
fn add_loop_around_calls() {
    let src = "config C { k: index }
proc twice(a: [f32][4] @ DRAM) {
    a[1] = a[1] * 2.0;
}
proc put(a: [f32][4] @ DRAM) {
    a[C.k % 4] = a[0];
}
proc p(n: size, x: f32[4] @ DRAM) {
    twice(x[0:4]);
    put(x[0:4]);
}";
    let mut s = sched(src);
    let n = n_of(&s);
    let at = s.find("call twice").unwrap();
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
    let mut s = sched(src);
    let n = n_of(&s);
    let at = s.find("call put").unwrap();
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
}

/// A conditional write whose guard reads a config field the statement writes.
#[test]
fn add_loop_guard_reads_a_config_field_it_writes() {
    let src = "config C { k: index }
proc p(n: size, x: f32[4] @ DRAM) {
    if C.k == 0 {
        x[0] = 1.0;
        C.k = 1;
    } else {
        x[1] = 2.0;
    }
}";
    let mut s = sched(src);
    let n = n_of(&s);
    let at = s.find("if").unwrap();
    let r = s.add_loop(&at, "k", &n);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
}

/// The new loop's bound reads a config field that a callee of the statement writes.
#[test]
fn add_loop_bound_reads_a_field_a_callee_writes() {
    let src = "config C { k: index }
proc set(a: [f32][4] @ DRAM) {
    C.k = 3;
    a[0] = 1.0;
}
proc p(n: size, x: f32[4] @ DRAM) {
    C.k = 0;
    set(x[0:4]);
}";
    let c = config(src, "C");
    let mut s = sched(src);
    let at = s.find("call set").unwrap();
    let hi = Expr::read_config(&c, 0) % 2 + 1;
    let r = s.add_loop(&at, "k", &hi);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
}

// =============================================================================================
// eliminate_dead_code
// =============================================================================================

/// The `else` branch is kept: cursors into it, after it and on the `if` itself land on the right
/// statements; the `then` branch's are gone.
#[test]
fn eliminate_dead_code_keeps_the_else_branch_and_forwards_cursors() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    x[0] = 0.0;
    if n < 1 {
        x[0] = 5.0;
    } else {
        x[0] = 1.0;
        for i in 0..n {
            x[i] += 2.0;
        }
    }
    x[0] += 3.0;
}";
    let mut s = sched(src);
    let dead = s.find("x = #1").unwrap();
    let kept = s.find("x = #2").unwrap();
    let inner = s.find("x += #0").unwrap();
    let after = s.find("x += #1").unwrap();
    let at = s.find("if").unwrap();
    s.eliminate_dead_code(&at).unwrap();
    same_everywhere(&s, N, &cfg_states(&[], &[]), &[]);
    let show = |c| weft_ir::print::stmt_to_string(s.stmt(c).unwrap());
    assert!(s.stmt(&dead).is_none(), "{}", show(&dead));
    assert_eq!(show(&kept).trim(), "x[0] = 1.0;");
    assert_eq!(show(&inner).trim(), "x[i] += 2.0;");
    assert_eq!(show(&after).trim(), "x[0] += 3.0;");
}

/// A condition that only looks decided because an enclosing condition read a config field that
/// changed in between.
#[test]
fn eliminate_dead_code_under_an_enclosing_config_condition() {
    let src = "config C { k: index }
proc p(n: size, x: f32[n] @ DRAM) {
    if C.k == 0 {
        C.k = 1;
        if C.k == 0 {
            x[0] = 1.0;
        } else {
            x[0] = 2.0;
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("if #1").unwrap();
    let r = s.eliminate_dead_code(&at);
    sound(r, &s, N, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
}

/// A loop that runs zero times only because of a precondition; a loop with a config bound.
#[test]
fn eliminate_dead_code_of_loops() {
    let src = "config C { k: index }
proc p(n: size, m: size, x: f32[n] @ DRAM) {
    assert m <= n;
    for i in n..max(m, n) {
        x[0] = 1.0;
    }
    for i in 0..C.k % 2 {
        x[0] = 2.0;
    }
}";
    let mut s = sched(src);
    let at = s.find("for i").unwrap();
    s.eliminate_dead_code(&at).unwrap();
    same_everywhere(
        &s,
        &[&[("n", 1), ("m", 1)], &[("n", 3), ("m", 2)]],
        &cfg_states(&[("C", 0)], &[1]),
        &[("C", 0)],
    );
    let at = s.find("for i").unwrap();
    must_reject(s.eliminate_dead_code(&at), &s);
}

// =============================================================================================
// Extreme arguments (no panic)
// =============================================================================================

/// A statement count that overflows `first + count`.
#[test]
fn extract_proc_with_a_huge_count() {
    let src = "proc p(x: f32[4] @ DRAM) {
    x[1] = 1.0;
    x[0] = 2.0;
}";
    let mut s = sched(src);
    let at = s.find("x = #1").unwrap();
    must_reject(s.extract_proc(&at, usize::MAX, "g"), &s);
}

/// Factors at the ends of the range.
#[test]
fn divide_dim_with_extreme_factors() {
    let src = "proc p(x: f32[4] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    t[3] = 1.0;
    x[0] = t[3];
}";
    for c in [i64::MAX, i64::MIN, 0, -1] {
        let mut s = sched(src);
        let at = s.find("alloc t").unwrap();
        must_reject(s.divide_dim(&at, 0, c), &s);
    }
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    must_reject(s.divide_dim(&at, 7, 2), &s);
}

/// A value read through an index that reads a config field a later statement writes.
#[test]
fn inline_assign_value_index_reads_a_config_field_written_later() {
    let src = "config C { k: index }
proc p(x: f32[4] @ DRAM, y: f32[1] @ DRAM) {
    alloc t: f32[1] @ DRAM;
    t[0] = x[C.k % 4];
    C.k = C.k % 1000 + 1;
    y[0] = t[0];
}";
    let mut s = sched(src);
    let at = s.find("t =").unwrap();
    let r = s.inline_assign(&at);
    sound(r, &s, NONE, &cfg_states(&[("C", 0)], &[0, 1]), &[("C", 0)]);
}

// =============================================================================================
// Shadowed names
// =============================================================================================

/// `add_loop` accepts a loop name already in scope (the language itself refuses to shadow a
/// name). The new `i` and the enclosing `i` are different symbols that print alike; after a
/// `fuse` puts both in one expression, `simplify` (whose atoms are merged by their printed text)
/// folds `i_new - i_outer` to 0.
#[test]
fn add_loop_with_a_name_in_scope_then_fuse_and_simplify() {
    let src = "proc p(n: size, x: f32[n, n] @ DRAM, y: f32[n, n] @ DRAM) {
    for i in 0..n {
        x[i, 0] = 1.0;
        for j in 0..n {
            y[i, j] = f32(j - i);
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("x =").unwrap();
    let n = n_of(&s);
    let r = s.add_loop(&at, "i", &n);
    if r.is_err() {
        eprintln!("rejected (sound): {}", r.err().unwrap());
        return;
    }
    let l = r.unwrap();
    s.fuse(&l).unwrap();
    eprintln!("{}", text(&s));
    same_everywhere(&s, N, &cfg_states(&[], &[]), &[]);
    let r = s.simplify();
    sound(r, &s, N, &cfg_states(&[], &[]), &[]);
}

// =============================================================================================
// lift_alloc (not one of the new primitives: it shares sink_alloc's iteration check)
// =============================================================================================

/// The mirror image of `sink_alloc_config_condition_changes_between_iterations`: in the original
/// iteration 1 reads a fresh buffer (the error value); lifted, it sees iteration 0's 1.0.
#[test]
fn lift_alloc_config_condition_changes_between_iterations() {
    let src = "config C { k: index }
proc p(y: f32[1] @ DRAM) {
    C.k = 0;
    for i in 0..2 {
        alloc t: f32[1] @ DRAM;
        if C.k == 0 {
            t[0] = 1.0;
            C.k = 1;
        } else {
            y[0] = t[0];
        }
    }
}";
    let mut s = sched_reading_uninit(src);
    let at = s.find("alloc t").unwrap();
    let r = s.lift_alloc(&at);
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[("C", 0)]);
}

/// No user-chosen name involved: a callee's loop variable `i` inlined into a caller loop over
/// another `i`, then `simplify` merges the two as one atom.
#[test]
fn inline_call_of_a_same_named_loop_then_simplify() {
    let src = "proc f(k: index, y: [f32][4] @ DRAM) {
    for i in 0..4 {
        y[i] = f32(i - k);
    }
}
proc p(y: f32[4, 4] @ DRAM) {
    for i in 0..4 {
        f(i, y[i, 0:4]);
    }
}";
    let mut s = sched(src);
    let at = s.find("call f").unwrap();
    s.inline_call(&at).unwrap();
    eprintln!("{}", text(&s));
    same_everywhere(&s, NONE, &cfg_states(&[], &[]), &[]);
    let r = s.simplify();
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[]);
}

/// The same merge inside `extract_proc`, which simplifies a passed window's extent `hi - lo`:
/// `i + 4 - i_1` (two different `i`s) becomes `4`, and the caller's call no longer checks.
#[test]
fn extract_proc_window_extent_with_two_same_named_variables() {
    let src = "proc f(k: index, y: [f32][8] @ DRAM) {
    assert 0 <= k;
    assert k < 4;
    for i in 0..4 {
        let w = y[i:k + 4];
        w[0] = 1.0;
    }
}
proc p(y: f32[4, 8] @ DRAM) {
    for i in 0..4 {
        f(i, y[i, 0:8]);
    }
}";
    let mut s = sched(src);
    let at = s.find("call f").unwrap();
    s.inline_call(&at).unwrap();
    eprintln!("{}", text(&s));
    let at = s.find("w =").unwrap();
    let r = s.extract_proc(&at, 1, "g");
    sound(r, &s, NONE, &cfg_states(&[], &[]), &[]);
}

/// Negative stride values and a negated control-bool condition as facts of the new proc.
#[test]
fn extract_proc_with_a_negative_stride_argument_and_a_bool_fact() {
    let src = "proc p(n: size, s: stride, b: bool, x: f32[n + 8] @ DRAM) {
    assert s >= -2;
    assert s <= 2;
    if b {
        x[0] = 1.0;
    } else {
        for i in 0..n {
            x[i + 3 + s] = x[i + 2] * 2.0;
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("for i").unwrap();
    let r = s.extract_proc(&at, 1, "g");
    let mut sizes: Vec<Vec<(&str, i64)>> = Vec::new();
    for n in [1, 3] {
        for st in [-2, 0, 2] {
            for b in [0, 1] {
                sizes.push(vec![("n", n), ("s", st), ("b", b)]);
            }
        }
    }
    let sizes: Vec<&[(&str, i64)]> = sizes.iter().map(|v| &v[..]).collect();
    sound(r, &s, &sizes, &cfg_states(&[], &[]), &[]);
}

/// (Review.) Inner loop bounds that read a config field: after the exchange they are evaluated
/// even where the outer loop runs no iteration (`m = 1`), where the field was never written, an
/// error the original does not make. Refused unless the outer loop provably runs; with `m >= 2`
/// as a precondition the exchange is accepted and the results agree.
#[test]
fn reorder_loops_with_config_bounds_inside_a_loop_that_may_not_run() {
    let src = "config G { k: index }
proc p(m: size, A: i32[m] @ DRAM) {
    for j in 0..m - 1 {
        for k0 in 0..max(G.k, 0) {
            A[j] += 1;
        }
    }
}";
    let mut s = sched(src);
    let j = s.find("for j").unwrap();
    let e = rejected(s.reorder_loops(&j), "reorder_loops", "may run zero times");
    assert_eq!(cex(&e, "m"), 1, "{e}");
    let runs = src.replace(
        "A: i32[m] @ DRAM) {",
        "A: i32[m] @ DRAM) {\n    assert m >= 2;",
    );
    let mut s = sched(&runs);
    let j = s.find("for j").unwrap();
    s.reorder_loops(&j).unwrap();
    let cfgs = cfg_states(&[("G", 0)], &[0, 3]);
    same_everywhere(&s, &[&[("m", 2)], &[("m", 5)]], &cfgs, &[("G", 0)]);
}
