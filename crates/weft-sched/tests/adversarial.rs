//! Review probes for `replace` and `parallelize`: adversarial inputs where an accepted rewrite
//! must keep the proc's results (the interpreter runs parallel loops backwards, so an
//! order-dependent parallel loop shows up as different results), or must be rejected where the
//! interpreter cannot see the problem (a race between reductions).
//!
//! Each probe asserts the sound outcome: either the step is rejected, or the results are the
//! original's.
//!
//! Eleven of them found bugs when they were written (config reads that `replace` turned into
//! arguments evaluated before the block's writes, `-0.0` matching `0.0`, callees with racing
//! parallel loops, an overflow panic, config reads in window coordinates and unknown values
//! shared between the two iterations of a race proof); they now guard the fixes.

mod common;

use common::{module_of, rejected, same_for_n, same_results, sched, text};
use std::sync::Arc;
use weft_ir::Proc;
use weft_sched::{SchedError, Schedule};

/// The schedule of proc `name` of `src` (rechecked after every step), and the module's proc
/// `callee`.
fn setup(src: &str, name: &str, callee: &str) -> (Schedule, Arc<Proc>) {
    let m = module_of(src);
    let mut s = Schedule::new(m.proc(name).unwrap().clone());
    s.recheck = true;
    (s, m.proc(callee).unwrap().clone())
}

/// A sound outcome: the step was rejected, or the scheduled proc gives the original's results
/// at every size assignment of `sizes`.
fn rejected_or_same<T>(r: Result<T, SchedError>, s: &Schedule, sizes: &[&[(&str, i64)]]) {
    match r {
        Err(e) => eprintln!("rejected (sound): {e}"),
        Ok(_) => {
            eprintln!("accepted:\n{}", text(s));
            for sz in sizes {
                same_results(s, sz);
            }
        }
    }
}

// =============================================================================================
// replace
// =============================================================================================

/// A block that writes a config field and then reads it in a control position. Unification
/// turns the read into the callee's control argument, which the call evaluates *before* the
/// callee's own write: the block writes `y[0]`, the call does not.
#[test]
fn replace_config_read_after_a_write_in_the_block_is_not_a_known() {
    let src = "config C { k: index }
proc f(k: index, x: [f32][4] @ DRAM) {
    C.k = 1;
    if k == 1 {
        x[0] = 2.0;
    }
}
proc g(y: f32[4] @ DRAM) {
    C.k = 0;
    C.k = 1;
    if C.k == 1 {
        y[0] = 2.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("C.k = #1").unwrap();
    let r = s.replace(&at, &f);
    rejected_or_same(r, &s, &[&[]]);
}

/// The same through a window offset: the block indexes with a config field it has just written.
#[test]
fn replace_config_read_after_a_write_in_a_window_offset() {
    let src = "config C { k: index }
proc f(x: [f32][1] @ DRAM) {
    C.k = 1;
    x[0] = 2.0;
}
proc g(y: f32[4, 1] @ DRAM) {
    C.k = 0;
    C.k = 1;
    y[C.k % 4, 0] = 2.0;
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("C.k = #1").unwrap();
    let r = s.replace(&at, &f);
    rejected_or_same(r, &s, &[&[]]);
}

/// Float literals are compared with `==` on `f64`, where `0.0 == -0.0`: dividing by `-0.0` is
/// not dividing by `0.0`.
#[test]
fn replace_distinguishes_negative_zero_literals() {
    let src = "proc f(x: [f32][4] @ DRAM, y: [f32][4] @ DRAM) {
    for i in 0..4 {
        y[i] = x[i] / 0.0;
    }
}
proc g(a: f32[4] @ DRAM, b: f32[4] @ DRAM) {
    for i in 0..4 {
        b[i] = a[i] / -0.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    let r = s.replace(&at, &f);
    rejected_or_same(r, &s, &[&[]]);
}

/// The callee's loop is parallel (and races); the block's is sequential. Matching ignores the
/// parallel mark, and nothing proves the callee's parallel loop race-free.
#[test]
fn replace_with_a_callee_whose_parallel_loop_races() {
    let src = "proc f(n: size, x: [f32][n + 1] @ DRAM) {
    for i in par(0..n) {
        x[i + 1] = x[i] * 2.0;
    }
}
proc g(n: size, y: f32[n + 1] @ DRAM) {
    for i in 0..n {
        y[i + 1] = y[i] * 2.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    let r = s.replace(&at, &f);
    rejected_or_same(r, &s, &[&[("n", 2)], &[("n", 5)]]);
}

/// Same, where the race is between reductions (invisible to the interpreter): the step must be
/// rejected.
#[test]
fn replace_with_a_callee_whose_parallel_loop_reduces_into_one_cell() {
    let src = "proc f(n: size, x: [f32][n] @ DRAM, s: [f32][1] @ DRAM) {
    for i in par(0..n) {
        s[0] += x[i];
    }
}
proc g(n: size, a: f32[n] @ DRAM, t: f32[1] @ DRAM) {
    for i in 0..n {
        t[0] += a[i];
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    assert!(
        s.replace(&at, &f).is_err(),
        "a call of a racing parallel loop was accepted:\n{}",
        text(&s)
    );
}

// ----- regressions: replace -----

/// Two parameters bound to overlapping windows of one buffer, one of them written: the call
/// would alias (rejected by the call check).
#[test]
fn replace_rejects_parameters_aliasing_one_buffer() {
    let src = "proc f(a: [f32][2] @ DRAM, b: [f32][2] @ DRAM) {
    a[0] = b[1];
    a[1] = b[0];
}
proc g(y: f32[2] @ DRAM) {
    y[0] = y[1];
    y[1] = y[0];
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("y =").unwrap();
    rejected(s.replace(&at, &f), "replace", "overlap");
}

/// A parameter read at an index that depends on another parameter: `3 = offset + k` has two
/// unknowns, and no guess is made.
#[test]
fn replace_rejects_an_index_with_two_unknowns() {
    let src = "proc f(k: index, x: [f32][8] @ DRAM, y: [f32][1] @ DRAM) {
    assert k < 8;
    assert 0 <= k;
    y[0] = x[k];
}
proc g(a: f32[8] @ DRAM, b: f32[1] @ DRAM) {
    b[0] = a[3];
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("b =").unwrap();
    rejected(s.replace(&at, &f), "replace", "more than one unknown");
}

/// Same, where the loop bound pins the parameter down: `k` from the loop bound, the offset from
/// the index. The call reads `a[k + offset ..]` exactly where the block did.
#[test]
fn replace_solves_a_parameter_used_in_an_index_and_a_bound() {
    let src = "proc f(k: size, x: [f32][8] @ DRAM, y: [f32][8] @ DRAM) {
    assert k <= 4;
    for i in 0..k {
        y[i] = x[i + k];
    }
}
proc g(n: size, a: f32[8] @ DRAM, b: f32[8] @ DRAM) {
    assert n <= 4;
    for i in 0..n {
        b[i] = a[i + n];
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    s.replace(&at, &f).unwrap();
    assert!(text(&s).contains("f(n, a, b);"), "{}", text(&s));
    same_for_n(&s, &[1, 3, 4]);
}

const TWO_LOOPS: &str = "proc f(m: size, x: [f32][m] @ DRAM) {
    for i in 0..m {
        x[i] = 1.0;
    }
    for i in 0..m {
        x[i] += 2.0;
    }
}
proc g(n: size, k: size, y: f32[n] @ DRAM) {
    assert n == k;
    for i in 0..n {
        y[i] = 1.0;
    }
    for i in 0..k {
        y[i] += 2.0;
    }
}
proc h(n: size, k: size, y: f32[n] @ DRAM) {
    assert k <= n;
    for i in 0..n {
        y[i] = 1.0;
    }
    for i in 0..k {
        y[i] += 2.0;
    }
}";

/// Loop bounds that differ as text but are equal under a precondition: accepted; equal only
/// sometimes: rejected with a counterexample.
#[test]
fn replace_uses_context_facts_for_bounds_equal_only_in_context() {
    let (mut s, f) = setup(TWO_LOOPS, "g", "f");
    let at = s.find("for i").unwrap();
    s.replace(&at, &f).unwrap();
    same_results(&s, &[("n", 3), ("k", 3)]);

    let (mut s, f) = setup(TWO_LOOPS, "h", "f");
    let at = s.find("for i").unwrap();
    let e = rejected(s.replace(&at, &f), "replace", "does not hold");
    let n = common::cex(&e, "n");
    let k = common::cex(&e, "k");
    assert_ne!(n, k, "{e}");
}

/// Non-affine known sub-expressions (`/`, `%`) become opaque knowns in window offsets.
#[test]
fn replace_keeps_non_affine_knowns_as_offsets() {
    let src = "proc f(x: [f32][4] @ DRAM) {
    for i in 0..4 {
        x[i] = 3.0;
    }
}
proc g(n: size, y: f32[n + 8] @ DRAM) {
    for i in 0..4 {
        y[n / 2 + i + n % 3] = 3.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    s.replace(&at, &f).unwrap();
    same_for_n(&s, &[1, 2, 5, 7]);
}

/// A callee index that is not affine in the parameters is rejected.
#[test]
fn replace_rejects_a_non_affine_callee_index() {
    let src = "proc f(k: index, x: [f32][8] @ DRAM) {
    assert k < 8;
    assert 0 <= k;
    x[k / 2] = 3.0;
}
proc g(y: f32[8] @ DRAM) {
    y[2] = 3.0;
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("y =").unwrap();
    rejected(s.replace(&at, &f), "replace", "not affine");
}

/// A block through a window of a window: the argument is a window of the window.
#[test]
fn replace_through_a_window_of_a_window() {
    let src = "proc f(x: [f32][4] @ DRAM, z: [f32][4] @ DRAM) {
    for i in 0..4 {
        x[i] = z[i] * 2.0;
    }
}
proc g(y: f32[4, 12] @ DRAM, a: f32[4] @ DRAM) {
    let w = y[2, 1:11];
    let v = w[3:9];
    for i in 0..4 {
        v[i + 1] = a[i] * 2.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    s.replace(&at, &f).unwrap();
    same_results(&s, &[]);
}

/// A callee that allocates a scratch buffer unifies with a block that allocates one.
#[test]
fn replace_unifies_callee_allocations() {
    let src = "proc f(x: [f32][4] @ DRAM, y: [f32][4] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    for i in 0..4 {
        t[i] = x[i] * 2.0;
    }
    for i in 0..4 {
        y[i] = t[3 - i];
    }
}
proc g(a: f32[4] @ DRAM, b: f32[4] @ DRAM) {
    alloc u: f32[4] @ DRAM;
    for i in 0..4 {
        u[i] = a[i] * 2.0;
    }
    for i in 0..4 {
        b[i] = u[3 - i];
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("alloc u").unwrap();
    s.replace(&at, &f).unwrap();
    same_results(&s, &[]);
}

/// An allocation whose buffer is used after the block cannot be swallowed by the call.
#[test]
fn replace_rejects_an_allocation_used_after_the_block() {
    let src = "proc f(x: [f32][4] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    for i in 0..4 {
        t[i] = x[i] * 2.0;
    }
}
proc g(a: f32[4] @ DRAM, b: f32[4] @ DRAM) {
    alloc u: f32[4] @ DRAM;
    for i in 0..4 {
        u[i] = a[i] * 2.0;
    }
    for i in 0..4 {
        b[i] = u[i];
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("alloc u").unwrap();
    {
        let r = s.replace(&at, &f);
        eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
        assert!(r.is_err(), "{}", text(&s));
    }
}

/// Element types must agree: an f64 block is not an f32 callee (the literal types differ), and
/// a cast to another type is not the callee's cast.
#[test]
fn replace_rejects_other_element_types_and_casts() {
    let src = "proc f(x: [f32][4] @ DRAM, y: [f32][4] @ DRAM) {
    for i in 0..4 {
        y[i] = x[i];
    }
}
proc c(x: [i32][4] @ DRAM, y: [f32][4] @ DRAM) {
    for i in 0..4 {
        y[i] = f32(x[i]);
    }
}
proc g(a: f64[4] @ DRAM, b: f64[4] @ DRAM, p: i8[4] @ DRAM, q: f32[4] @ DRAM) {
    for i in 0..4 {
        b[i] = a[i];
    }
    for i in 0..4 {
        q[i] = f32(p[i]);
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    {
        let r = s.replace(&at, &f);
        eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
        assert!(r.is_err(), "{}", text(&s));
    }
    let m = module_of(src);
    let c = m.proc("c").unwrap().clone();
    let at = s.find("for i #1").unwrap();
    {
        let r = s.replace(&at, &c);
        eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
        assert!(r.is_err(), "{}", text(&s));
    }
}

/// A parameter the body never uses cannot be inferred.
#[test]
fn replace_rejects_an_unused_parameter() {
    let src = "proc f(x: [f32][4] @ DRAM, unused: [f32][4] @ DRAM) {
    x[0] = 1.0;
}
proc g(y: f32[4] @ DRAM) {
    y[0] = 1.0;
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("y =").unwrap();
    rejected(s.replace(&at, &f), "replace", "not used");
}

/// A size argument inferred as `n - 1` may be 0: the call check rejects it.
#[test]
fn replace_rejects_a_size_argument_that_may_be_zero() {
    let src = "proc f(m: size, x: [f32][m] @ DRAM) {
    for i in 0..m {
        x[i] = 1.0;
    }
}
proc g(n: size, y: f32[n] @ DRAM) {
    for i in 0..n - 1 {
        y[i] = 1.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    rejected(s.replace(&at, &f), "replace", "positive");
}

/// If conditions over knowns: `k == 2` against `n == 2` binds `k = n`; `<` against `<=` is not
/// unified.
#[test]
fn replace_unifies_conditions_operand_by_operand() {
    let src = "proc f(k: index, x: [f32][4] @ DRAM) {
    if k == 2 {
        x[1] = 5.0;
    }
}
proc f2(k: index, x: [f32][4] @ DRAM) {
    if k <= 2 {
        x[1] = 5.0;
    }
}
proc g(n: size, y: f32[4] @ DRAM) {
    if n == 2 {
        y[1] = 5.0;
    }
    if n < 3 {
        y[1] = 5.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("if").unwrap();
    s.replace(&at, &f).unwrap();
    for n in [1, 2, 3] {
        same_results(&s, &[("n", n)]);
    }
    let f2 = module_of(src).proc("f2").unwrap().clone();
    let at = s.find("if").unwrap();
    {
        let r = s.replace(&at, &f2);
        eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
        assert!(r.is_err(), "{}", text(&s));
    }
}

/// Config writes unify only with the same field.
#[test]
fn replace_rejects_a_write_of_another_config_field() {
    let src = "config C { a: f32, b: f32 }
proc f(x: [f32][1] @ DRAM) {
    C.a = x[0];
}
proc g(y: f32[1] @ DRAM) {
    C.b = y[0];
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("C.b =").unwrap();
    rejected(s.replace(&at, &f), "replace", "does not match");
}

/// A block with a statement the callee does not have (another buffer) does not match.
#[test]
fn replace_rejects_a_block_with_an_extra_buffer() {
    let src = "proc f(x: [f32][4] @ DRAM) {
    for i in 0..4 {
        x[i] = 1.0;
    }
}
proc g(y: f32[4] @ DRAM, z: f32[4] @ DRAM) {
    for i in 0..4 {
        y[i] = 1.0;
        z[i] = 1.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    rejected(s.replace(&at, &f), "replace", "statements");
}

// =============================================================================================
// parallelize
// =============================================================================================

fn par_first(src: &str, pattern: &str) -> (Schedule, Result<weft_sched::Cursor, SchedError>) {
    let mut s = sched(src);
    let at = s.find(pattern).unwrap();
    let r = s.parallelize(&at);
    (s, r)
}

/// A window binding reads a config field in its offset; another iteration writes the field.
/// The window's coordinates are not recorded as reads of the field.
#[test]
fn parallelize_sees_config_reads_in_window_coordinates() {
    let src = "config C { k: index }
proc p(n: size, x: f32[4, 1] @ DRAM, y: f32[n] @ DRAM) {
    C.k = 0;
    for i in 0..n {
        if i == 0 {
            C.k = 1;
        }
        let w = x[C.k % 4, 0:1];
        y[i] = w[0];
    }
}";
    let (s, r) = par_first(src, "for i");
    rejected_or_same(r, &s, &[&[("n", 2)], &[("n", 4)]]);
}

/// The same through the window argument of a call.
#[test]
fn parallelize_sees_config_reads_in_call_window_arguments() {
    let src = "config C { k: index }
proc cp(a: [f32][1] @ DRAM, b: [f32][1] @ DRAM) {
    b[0] = a[0];
}
proc p(n: size, x: f32[4, 1] @ DRAM, y: f32[n] @ DRAM) {
    C.k = 0;
    for i in 0..n {
        if i == 0 {
            C.k = 1;
        }
        cp(x[C.k % 4, 0:1], y[i:i + 1]);
    }
}";
    let (s, r) = par_first(src, "for i");
    rejected_or_same(r, &s, &[&[("n", 2)], &[("n", 4)]]);
}

/// An `if` whose condition has no term (a stride of an allocation) becomes one unknown boolean
/// shared by both iterations, although the condition depends on the iteration: the then-branch
/// of one iteration and the else-branch of another are never compared.
#[test]
fn parallelize_unknown_condition_may_differ_between_iterations() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n + 1] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    for i in 0..n {
        if stride(t, 0) == i {
            y[i] = x[i];
        } else {
            y[i + 1] = x[i];
        }
    }
}";
    let (s, r) = par_first(src, "for i");
    rejected_or_same(r, &s, &[&[("n", 2)], &[("n", 4)]]);
}

/// A window offset without a term (a stride of an allocation) becomes one unknown shared by
/// both iterations, although it depends on the iteration: `w[i]` is the same cell `y[n - 1]`
/// in every iteration.
#[test]
fn parallelize_unknown_window_offset_may_differ_between_iterations() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[2 * n] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    for i in 0..n {
        let w = y[n - i - stride(t, 0):2 * n - i - stride(t, 0)];
        w[i] = x[i];
    }
}";
    let (s, r) = par_first(src, "for i");
    rejected_or_same(r, &s, &[&[("n", 2)], &[("n", 4)]]);
}

/// The same through a control argument of a call that has no term.
#[test]
fn parallelize_unknown_call_argument_may_differ_between_iterations() {
    let src = "proc put(k: index, j: index, m: size, x: [f32][m] @ DRAM, v: [f32][1] @ DRAM) {
    assert k + j < m;
    assert 0 <= k;
    assert 0 <= j;
    x[k + j] = v[0];
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    for i in 0..n {
        put(n - i - stride(t, 0), i, n, y, x[i:i + 1]);
    }
}";
    let (s, r) = par_first(src, "for i");
    rejected_or_same(r, &s, &[&[("n", 2)], &[("n", 4)]]);
}

/// A block constant of `i64::MIN` opposite a callee parameter: solving `MIN - k = 0` negates
/// and divides `MIN` by `-1`, which overflows. The step must fail cleanly, not panic.
#[test]
fn replace_does_not_panic_on_an_extreme_constant() {
    let src = "proc f(k: index, x: [f32][4] @ DRAM) {
    if k == 2 {
        x[0] = 1.0;
    }
}
proc g(y: f32[4] @ DRAM) {
    if -9223372036854775808 == 2 {
        y[0] = 1.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("if").unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.replace(&at, &f).map(|_| ())
    }));
    let r = r.unwrap_or_else(|_| panic!("replace panicked"));
    rejected_or_same(r, &s, &[&[]]);
}

/// The same parameter bound to two different buffers does not unify.
#[test]
fn replace_rejects_one_parameter_for_two_buffers() {
    let src = "proc f(x: [f32][4] @ DRAM) {
    for i in 0..4 {
        x[i] = x[i] + 1.0;
    }
}
proc g(a: f32[4] @ DRAM, b: f32[4] @ DRAM) {
    for i in 0..4 {
        a[i] = b[i] + 1.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    rejected(s.replace(&at, &f), "replace", "would stand for both");
}

/// A control parameter that appears nowhere in the body cannot be inferred.
#[test]
fn replace_rejects_an_uninferable_control_parameter() {
    let src = "proc f(k: index, x: [f32][4] @ DRAM) {
    x[0] = 1.0;
}
proc g(y: f32[4] @ DRAM) {
    y[0] = 1.0;
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("y =").unwrap();
    rejected(s.replace(&at, &f), "replace", "cannot infer");
}

/// A reversed loop (`x[3 - i]`) is not the callee's `x[i]`, and a strided one (`x[2 * i]`) is not
/// a window.
#[test]
fn replace_rejects_reversed_and_strided_accesses() {
    let src = "proc f(x: [f32][4] @ DRAM) {
    for i in 0..4 {
        x[i] = 1.0;
    }
}
proc g(y: f32[8] @ DRAM) {
    for i in 0..4 {
        y[3 - i] = 1.0;
    }
    for i in 0..4 {
        y[2 * i] = 1.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("for i").unwrap();
    {
        let r = s.replace(&at, &f);
        eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
        assert!(r.is_err(), "{}", text(&s));
    }
    let at = s.find("for i #1").unwrap();
    {
        let r = s.replace(&at, &f);
        eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
        assert!(r.is_err(), "{}", text(&s));
    }
}

/// Replacing a block inside a parallel loop by a call: the call's effects are those of its body,
/// so a call that writes a shared cell is rejected by the re-proof of the parallel loop, and one
/// that writes the iteration's own cell is accepted.
#[test]
fn replace_inside_a_parallel_loop_is_re_proved() {
    let src = "proc f(x: [f32][1] @ DRAM, y: [f32][1] @ DRAM) {
    y[0] = x[0] * 3.0;
}
proc g(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM) {
    for i in par(0..n) {
        b[i] = a[i] * 3.0;
    }
}";
    let (mut s, f) = setup(src, "g", "f");
    let at = s.find("b =").unwrap();
    s.replace(&at, &f).unwrap();
    assert!(
        text(&s).contains("f(a[i:i + 1], b[i:i + 1]);"),
        "{}",
        text(&s)
    );
    same_for_n(&s, &[1, 4]);
}

// ----- regressions: parallelize -----

/// Races through a call: the callee writes one cell of its argument in every iteration.
#[test]
fn parallelize_rejects_a_race_through_a_call() {
    let src = "proc put(x: [f32][4] @ DRAM, v: [f32][1] @ DRAM) {
    x[2] = v[0];
}
proc p(n: size, y: f32[4] @ DRAM, a: f32[n] @ DRAM) {
    for i in 0..n {
        put(y, a[i:i + 1]);
    }
}";
    let (_, r) = par_first(src, "for i");
    rejected(r, "parallelize", "may race");
}

/// Reductions into one cell through a call race.
#[test]
fn parallelize_rejects_reductions_into_one_cell_through_a_call() {
    let src = "proc acc(x: [f32][1] @ DRAM, v: [f32][1] @ DRAM) {
    x[0] += v[0];
}
proc p(n: size, s: f32[1] @ DRAM, a: f32[n] @ DRAM) {
    for i in 0..n {
        acc(s, a[i:i + 1]);
    }
}";
    let (_, r) = par_first(src, "for i");
    rejected(r, "parallelize", "may race");
}

/// Overlapping windows: iteration `i` writes `y[i + 1]` through its window, which iteration
/// `i + 1` writes directly.
#[test]
fn parallelize_rejects_a_race_through_overlapping_windows() {
    let src = "proc p(n: size, y: f32[n + 1] @ DRAM, a: f32[n] @ DRAM) {
    for i in 0..n {
        let w = y[i:i + 2];
        w[0] = a[i];
        w[1] = a[i] * 2.0;
    }
}";
    let (_, r) = par_first(src, "for i");
    rejected(r, "parallelize", "may race");
}

/// A window of a window whose composed offset is disjoint per iteration is accepted.
#[test]
fn parallelize_accepts_disjoint_windows_of_windows() {
    let src = "proc p(n: size, y: f32[2 * n + 2] @ DRAM, a: f32[n] @ DRAM) {
    for i in 0..n {
        let w = y[2 * i:2 * i + 2];
        let v = w[1:2];
        v[0] = a[i];
    }
}";
    let (s, r) = par_first(src, "for i");
    r.unwrap();
    same_for_n(&s, &[1, 2, 5]);
}

/// A config field in an inner loop bound, written by one iteration: the bound read races with
/// the write.
#[test]
fn parallelize_rejects_a_config_bound_written_by_one_iteration() {
    let src = "config C { m: index }
proc p(n: size, y: f32[n, 4] @ DRAM) {
    C.m = 4;
    for i in 0..n {
        if i == 0 {
            C.m = 2;
        }
        for j in 0..C.m % 4 {
            y[i, j] = 1.0;
        }
    }
}";
    let (_, r) = par_first(src, "for i");
    rejected(r, "parallelize", "may race");
}

/// A config read in an `if` condition, written by one iteration.
#[test]
fn parallelize_rejects_a_config_condition_written_by_one_iteration() {
    let src = "config C { m: index }
proc p(n: size, y: f32[n] @ DRAM) {
    C.m = 0;
    for i in 0..n {
        if i == 0 {
            C.m = 2;
        }
        if C.m == 2 {
            y[i] = 1.0;
        }
    }
}";
    let (_, r) = par_first(src, "for i");
    rejected(r, "parallelize", "may race");
}

/// Nested parallel loops: the inner one is race-free for a fixed `i`, the outer one is not
/// (every `i` writes the row `y[j]`).
#[test]
fn parallelize_nested_loops_are_proved_separately() {
    let src =
        "proc p(n: size, m: size, y: f32[m] @ DRAM, z: f32[n, m] @ DRAM, a: f32[n, m] @ DRAM) {
    for i in 0..n {
        for j in 0..m {
            y[j] = a[i, j];
            z[i, j] = a[i, j];
        }
    }
}";
    let mut s = sched(src);
    let j = s.find("for j").unwrap();
    s.parallelize(&j).unwrap();
    let i = s.find("for i").unwrap();
    rejected(s.parallelize(&i), "parallelize", "may race");
    same_results(&s, &[("n", 3), ("m", 4)]);
}

/// A race-free parallel loop whose body calls a proc with a parallel loop of its own.
#[test]
fn parallelize_over_calls_of_a_proc_with_a_parallel_loop() {
    let src = "proc row(m: size, x: [f32][m] @ DRAM, y: [f32][m] @ DRAM) {
    for j in par(0..m) {
        y[j] = x[j] + 1.0;
    }
}
proc p(n: size, a: f32[n, 4] @ DRAM, b: f32[n, 4] @ DRAM) {
    for i in 0..n {
        row(4, a[i, 0:4], b[i, 0:4]);
    }
}";
    let (s, r) = par_first(src, "for i");
    r.unwrap();
    same_for_n(&s, &[1, 3]);
}

/// Inlining a callee whose parallel loop races in the caller's context (the caller passes a
/// buffer the callee's loop reads at the neighbouring cell) is rejected; the sequential caller
/// keeps its meaning.
#[test]
fn inline_call_of_a_racing_parallel_loop_is_rejected() {
    let src = "proc f(n: size, x: [f32][n + 1] @ DRAM) {
    for i in par(0..n) {
        x[i + 1] = x[i] * 2.0;
    }
}
proc g(n: size, y: f32[n + 1] @ DRAM) {
    f(n, y);
}";
    let mut s = sched(src);
    let c = s.find("call f").unwrap();
    rejected(s.inline_call(&c), "inline_call", "may race");
}

/// Steps that keep the parallel mark: fission, cut and shift of a race-free parallel loop keep
/// the results; a reuse of a buffer shared between iterations is rejected.
#[test]
fn parallel_mark_survives_fission_cut_shift_and_is_re_proved() {
    let src = "proc p(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM, c: f32[n] @ DRAM) {
    for i in 0..n {
        b[i] = a[i] * 2.0;
        c[i] = b[i] + 1.0;
    }
}";
    let mut s = sched(src);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    let b = s.find("b =").unwrap();
    s.fission(&b).unwrap();
    assert_eq!(text(&s).matches("par(").count(), 2, "{}", text(&s));
    same_for_n(&s, &[1, 2, 5]);
    let i1 = s.find("for i #1").unwrap();
    let n = common::arg_of(&s, "n");
    s.cut(
        &i1,
        &weft_ir::Expr::binary(weft_ir::BinOp::Sub, n, weft_ir::Expr::int(1)),
    )
    .unwrap();
    same_for_n(&s, &[1, 2, 5]);
    let i0 = s.find("for i").unwrap();
    s.shift(&i0, &weft_ir::Expr::int(3)).unwrap();
    same_for_n(&s, &[1, 2, 5]);
}

#[test]
fn reuse_buffer_into_a_parallel_loop_is_re_proved() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc s: f32[1] @ DRAM_STACK;
    s[0] = 0.0;
    y[0] = s[0];
    for i in 0..n {
        alloc t: f32[1] @ DRAM_STACK;
        t[0] = x[i] * 2.0;
        y[i] = t[0];
    }
}";
    let mut s = sched(src);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    let t = s.find("alloc t").unwrap();
    let r = s.reuse_buffer(&t, "s");
    eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
    assert!(
        r.is_err(),
        "a shared buffer replaced a private one:\n{}",
        text(&s)
    );
}

/// A config binding or write inside a parallel loop makes every iteration write the field.
#[test]
fn config_writes_into_a_parallel_loop_are_re_proved() {
    let src = "config C { v: f32 }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] * 2.0;
    }
}";
    let m = module_of(src);
    let cfg = m.configs[0].clone();
    let mut s = sched(src);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    let y = s.find("y =").unwrap();
    let e = weft_ir::Expr::float(2.0).coerce(weft_ir::Ty::Data(weft_ir::DType::F32));
    let r = s.bind_config(&y, &e, &cfg, 0);
    eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
    assert!(r.is_err(), "{}", text(&s));
    let r = s.write_config(&y, &cfg, 0, &e);
    eprintln!("{:?}", r.as_ref().err().map(|e| e.to_string()));
    assert!(r.is_err(), "{}", text(&s));
}

/// call_eqv to a scheduled version of the callee that writes a staged region back whole: the
/// write-back of the neighbour's cell races, although the two versions are equivalent.
#[test]
fn call_eqv_to_a_version_that_touches_more_cells_is_re_proved() {
    let src = "proc f(x: [f32][2] @ DRAM) {
    x[0] = x[0] + 1.0;
}
proc p(n: size, y: f32[n + 1] @ DRAM) {
    for i in 0..n {
        f(y[i:i + 2]);
    }
}";
    let m = module_of(src);
    let f = m.proc("f").unwrap().clone();
    let mut t = Schedule::new(f.clone());
    let at = t.find("x =").unwrap();
    let region = [(weft_ir::Expr::int(0), weft_ir::Expr::int(2))];
    t.stage_mem(&at, 1, "x", &region, "xs", common::stack())
        .unwrap();
    let g = t.proc().clone();
    eprintln!("{}", weft_ir::print::proc_to_string(&g));
    let mut s = sched(src);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    let c = s.find("call f").unwrap();
    // The staged version writes both cells of its window back (`x[xs_0_1] = xs[xs_0_1]`), so
    // iteration `i` writes `y[i + 1]`, which iteration `i + 1` updates. The interpreter cannot
    // see this race (the value written back is the one read), so the step must be rejected.
    rejected(s.call_eqv(&c, &g), "call_eqv", "may race");
}

/// Non-affine indices of the loop variable (`/`, `%`) that collide between iterations race.
#[test]
fn parallelize_rejects_colliding_div_and_mod_indices() {
    for idx in ["i / 2", "i % 2"] {
        let src = format!(
            "proc p(n: size, y: f32[n] @ DRAM, a: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[{idx}] = a[i];
    }}
}}"
        );
        let (_, r) = par_first(&src, "for i");
        rejected(r, "parallelize", "may race");
    }
    // `2 * i` and `2 * i + 1` never collide.
    let src = "proc p(n: size, y: f32[2 * n] @ DRAM, a: f32[n] @ DRAM) {
    for i in 0..n {
        y[2 * i] = a[i];
        y[2 * i + 1] = a[i] * 2.0;
    }
}";
    let (s, r) = par_first(src, "for i");
    r.unwrap();
    same_for_n(&s, &[1, 4]);
}

/// Disjointness that holds only under a precondition: proved with it, rejected without it.
#[test]
fn parallelize_uses_preconditions_and_only_them() {
    let with = "proc p(n: size, m: size, y: f32[2 * m] @ DRAM, a: f32[n] @ DRAM) {
    assert n <= m;
    for i in 0..n {
        y[i] = a[i];
        y[i + m] = a[i] * 2.0;
    }
}";
    let (s, r) = par_first(with, "for i");
    r.unwrap();
    same_results(&s, &[("n", 3), ("m", 3)]);
    same_results(&s, &[("n", 2), ("m", 5)]);
    let without = "proc p(n: size, m: size, y: f32[2 * m + n] @ DRAM, a: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = a[i];
        y[i + m] = a[i] * 2.0;
    }
}";
    let (_, r) = par_first(without, "for i");
    let e = rejected(r, "parallelize", "may race");
    assert!(common::cex(&e, "n") > common::cex(&e, "m"), "{e}");
}

/// A config write inside a callee called by every iteration races.
#[test]
fn parallelize_rejects_a_config_write_inside_a_callee() {
    let src = "config C { v: f32 }
proc set(x: [f32][1] @ DRAM) {
    C.v = x[0];
}
proc p(n: size, a: f32[n] @ DRAM) {
    for i in 0..n {
        set(a[i:i + 1]);
    }
}";
    let (_, r) = par_first(src, "for i");
    rejected(r, "parallelize", "may race");
}

/// bind_expr in a parallel loop allocates its scalar inside the body: still race-free.
#[test]
fn bind_expr_inside_a_parallel_loop_stays_private() {
    let src = "proc p(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM) {
    for i in 0..n {
        b[i] = a[i] * a[i] + a[i];
    }
}";
    let mut s = sched(src);
    let i = s.find("for i").unwrap();
    s.parallelize(&i).unwrap();
    let b = s.find("b =").unwrap();
    let bb = s.stmt(&b).unwrap().clone();
    let rhs = match &bb.kind {
        weft_ir::StmtKind::Assign { rhs, .. } => rhs.clone(),
        _ => unreachable!(),
    };
    let prod = match &rhs.kind {
        weft_ir::ExprKind::Binary(_, l, _) => l.clone(),
        _ => unreachable!(),
    };
    s.bind_expr(&b, &prod, "sq", common::stack()).unwrap();
    assert!(text(&s).contains("par("), "{}", text(&s));
    same_for_n(&s, &[1, 5]);
}

/// A callee precondition on a stride (as instructions have) is checked at the call: a column of a
/// row-major buffer does not have unit stride.
#[test]
fn replace_checks_stride_preconditions() {
    let src = "proc ld(dst: [f32][4] @ DRAM, src: [f32][4] @ DRAM) {
    assert stride(src, 0) == 1;
    for i in 0..4 {
        dst[i] = src[i];
    }
}
proc g(a: f32[4, 4] @ DRAM, b: f32[4] @ DRAM) {
    for i in 0..4 {
        b[i] = a[i, 1];
    }
    for i in 0..4 {
        b[i] = a[1, i];
    }
}";
    let (mut s, ld) = setup(src, "g", "ld");
    let at = s.find("for i").unwrap();
    rejected(s.replace(&at, &ld), "replace", "precondition");
    let at = s.find("for i #1").unwrap();
    s.replace(&at, &ld).unwrap();
    same_results(&s, &[]);
}
