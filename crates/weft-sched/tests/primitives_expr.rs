//! The expression-level primitives (commute_expr, left_reassociate_expr, rewrite_expr,
//! fold_into_reduce, merge_writes, split_write, lift_reduce_constant): each accepted where it
//! must be, with results compared against the original on the reference interpreter (exactly,
//! or up to rounding where the primitive documents a float reassociation), and rejected where
//! it must be, with the primitive, the rule and the counterexample the user sees. Most steps are
//! written in the text form (`weft sched` scripts), which goes through the parser, the
//! primitive table and the dispatch; some through the Rust API.

mod common;

use common::{cex, exec, rejected, same_results, sched, shows, text, var_of, N};
use weft_interp::{Cell, Scalar};
use weft_ir::{BinOp, DType, Expr};
use weft_sched::{SchedError, Schedule};

/// The schedule of `steps` (one per line, in the text form) applied to the last proc of `src`,
/// which must be named `p`; every step rechecked.
fn run(src: &str, steps: &str) -> (Schedule, Result<(), SchedError>) {
    common::scheduled(&format!("{src}\nschedule q = p {{\n{steps}\n}}\n"))
}

/// `steps` are all accepted.
fn accepted(src: &str, steps: &str) -> Schedule {
    let (s, r) = run(src, steps);
    if let Err(e) = r {
        panic!("rejected: {e}\n{}", text(&s));
    }
    s
}

/// The last of `steps` is rejected by `prim` with a message containing `message`.
fn refused(src: &str, steps: &str, prim: &str, message: &str) -> SchedError {
    let (_, r) = run(src, steps);
    rejected(r, prim, message)
}

/// Floats equal up to a relative 1e-4 (NaNs alike), other cells exactly.
fn close(a: &Cell, b: &Cell) -> bool {
    let f = |x: f64, y: f64| {
        (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-4 * x.abs().max(y.abs())
    };
    match (a, b) {
        (Some(Scalar::F32(x)), Some(Scalar::F32(y))) => f(*x as f64, *y as f64),
        (Some(Scalar::F64(x)), Some(Scalar::F64(y))) => f(*x, *y),
        _ => a == b,
    }
}

/// The scheduled proc gives the original's results up to float rounding, at each size `n`.
fn close_results(s: &Schedule, ns: &[i64]) {
    let orig = s.version(0).unwrap();
    for &n in ns {
        for seed in 0..3 {
            let a = exec(orig, &[("n", n)], seed, &Default::default());
            let b = exec(s.proc(), &[("n", n)], seed, &Default::default());
            assert_eq!(a.result.is_ok(), b.result.is_ok());
            for ((name, x), (_, y)) in a.bufs.iter().zip(&b.bufs) {
                for (k, (cx, cy)) in x.iter().zip(y).enumerate() {
                    assert!(close(cx, cy), "{name}[{k}]: {cx:?} vs {cy:?}\n{}", text(s));
                }
            }
        }
    }
}

fn same_for(s: &Schedule, ns: &[i64]) {
    for &n in ns {
        same_results(s, &[("n", n)]);
    }
}

// ----- commute_expr -----

const PROD: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        z[i] = x[i] * y[i] + min(x[i], y[i]) - x[i];
    }
}";

/// `a * b` and `a + b` swap exactly, on floats too; every occurrence in the statement's own
/// expressions (here the index of a read) is rewritten, and the Rust API does the same.
#[test]
fn commute_expr_swaps_the_operands_of_commutative_operations() {
    let s = accepted(
        PROD,
        "    commute_expr(\"z =\", x[i] * y[i]);\n    commute_expr(\"z =\", y[i] * x[i] + min(x[i], y[i]));",
    );
    shows(&s, &["z[i] = min(x[i], y[i]) + y[i] * x[i] - x[i];"]);
    same_for(&s, &[1, 4, 7]);

    let ints = "proc p(n: size, x: i32[n + 1] @ DRAM, z: i32[n] @ DRAM) {
    for i in 0..n {
        z[i] = min(x[1 + i], x[i]) * x[1 + i];
    }
}";
    let s = accepted(
        ints,
        "    commute_expr(\"z =\", 1 + i);\n    commute_expr(\"z =\", min(x[i + 1], x[i]));",
    );
    shows(&s, &["z[i] = min(x[i], x[i + 1]) * x[i + 1];"]);
    same_for(&s, &[1, 3, 6]);

    // The Rust API, on a loop's bound.
    let mut s = sched(
        "proc p(n: size, x: f32[n + 2] @ DRAM) {
    for i in 0..n + 2 {
        x[i] = 1.0;
    }
}",
    );
    let n = common::arg_of(&s, "n");
    let l = s.find("for i").unwrap();
    s.commute_expr(&l, &Expr::binary(BinOp::Add, n, Expr::int(2)))
        .unwrap();
    shows(&s, &["for i in 0..2 + n {"]);
    same_for(&s, &[1, 3]);
}

#[test]
fn commute_expr_rejects_what_does_not_commute_or_is_not_there() {
    refused(
        PROD,
        "    commute_expr(\"z =\", x[i] * y[i] + min(x[i], y[i]) - x[i]);",
        "commute_expr",
        "`-` is not commutative",
    );
    // Float `min` is `a < b ? a : b`: NaN and signed zeros make it one-sided.
    refused(
        PROD,
        "    commute_expr(\"z =\", min(x[i], y[i]));",
        "commute_expr",
        "`min` is not commutative on floats",
    );
    refused(
        PROD,
        "    commute_expr(\"z =\", y[i] * x[i]);",
        "commute_expr",
        "does not occur in the statement",
    );
    refused(
        PROD,
        "    commute_expr(\"z =\", x[i]);",
        "commute_expr",
        "is not a binary operation",
    );
}

// ----- left_reassociate_expr -----

/// On integers (control and data) the regrouping is exact; on floats it is the documented
/// reassociation, equal up to rounding.
#[test]
fn left_reassociate_expr_regroups_to_the_left() {
    let ints = "proc p(n: size, x: i32[n + 2] @ DRAM, z: i8[n] @ DRAM, w: i8[n] @ DRAM) {
    for i in 0..n {
        z[i] = w[i] * (w[i] * (w[i] + w[i]));
        w[i] = min(z[i], min(w[i], 3));
        x[i + (1 + 1)] = x[i];
    }
}";
    let s = accepted(
        ints,
        "    left_reassociate_expr(\"z =\", w[i] * (w[i] * (w[i] + w[i])));
    left_reassociate_expr(\"w =\", min(z[i], min(w[i], 3)));
    left_reassociate_expr(\"x =\", i + (1 + 1));",
    );
    shows(
        &s,
        &[
            "z[i] = w[i] * w[i] * (w[i] + w[i]);",
            "w[i] = min(min(z[i], w[i]), 3);",
            "x[i + 1 + 1] = x[i];",
        ],
    );
    same_for(&s, &[1, 2, 5]);

    let floats = "proc p(n: size, x: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        z[i] = x[i] + (z[i] + 0.1);
    }
}";
    let s = accepted(
        floats,
        "    left_reassociate_expr(\"z =\", x[i] + (z[i] + 0.1));",
    );
    shows(&s, &["z[i] = x[i] + z[i] + 0.1;"]);
    close_results(&s, &[1, 4]);
}

#[test]
fn left_reassociate_expr_rejects_other_shapes_and_operators() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        z[i] = x[i] - (z[i] - 1.0) + max(x[i], max(z[i], 0.0)) + (x[i] + z[i]) * 2.0;
    }
}";
    refused(
        src,
        "    left_reassociate_expr(\"z =\", x[i] - (z[i] - 1.0));",
        "left_reassociate_expr",
        "`-` is not associative",
    );
    refused(
        src,
        "    left_reassociate_expr(\"z =\", max(x[i], max(z[i], 0.0)));",
        "left_reassociate_expr",
        "`max` is not associative on f32",
    );
    refused(
        src,
        "    left_reassociate_expr(\"z =\", (x[i] + z[i]) * 2.0);",
        "left_reassociate_expr",
        "not of the form `a ∘ (b ∘ c)`",
    );
    // The new intermediate `i + 9223372036854775800` overflows the 64-bit control arithmetic
    // (where `9223372036854775800 + -9223372036854775800` did not): the scheduler's control
    // check refuses the step, with the checker's counterexample.
    let of = "proc p(n: size, x: f32[n] @ DRAM) {
    assert n < 100;
    for i in 0..n {
        x[n - 1 - (i + (9223372036854775800 + -9223372036854775800))] = 1.0;
    }
}";
    let e = refused(
        of,
        "    left_reassociate_expr(\"x =\", i + (9223372036854775800 + -9223372036854775800));",
        "left_reassociate_expr",
        "control-arithmetic",
    );
    assert!(!e.counterexample.is_empty(), "{e}");
}

// ----- rewrite_expr -----

/// A control expression is replaced by one the solver proves equal where the statement runs:
/// from the loop bounds, from an enclosing `if`, and for a condition.
#[test]
fn rewrite_expr_replaces_a_control_expression_proved_equal() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[n - 1 - i];
        if i < 4 {
            y[min(i, 3)] = x[i] + 1.0;
        }
        if i < n {
            x[i] = 2.0;
        }
    }
}";
    let s = accepted(
        src,
        "    rewrite_expr(\"y =\", n - 1 - i, n - (i + 1));
    rewrite_expr(\"y = #1\", min(i, 3), i);
    rewrite_expr(\"if #1\", i < n, true);",
    );
    shows(
        &s,
        &["y[i] = x[n - (i + 1)];", "y[i] = x[i] + 1.0;", "if true {"],
    );
    same_for(&s, &[1, 3, 6]);
}

#[test]
fn rewrite_expr_rejects_what_is_not_proved_or_not_control() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[n - 1 - i];
        y[min(i, 3)] = x[i] + 1.0;
    }
}";
    let e = refused(
        src,
        "    rewrite_expr(\"y =\", n - 1 - i, n - i);",
        "rewrite_expr",
        "not proved equal",
    );
    assert!(!e.counterexample.is_empty(), "{e}");
    // Without the guard `i < 4`, `min(i, 3)` is not `i`: the counterexample has i >= 4.
    let e = refused(
        src,
        "    rewrite_expr(\"y = #1\", min(i, 3), i);",
        "rewrite_expr",
        "not proved equal",
    );
    assert!(cex(&e, "i") > 3, "{e}");
    refused(
        src,
        "    rewrite_expr(\"y = #1\", x[i] + 1.0, 1.0 + x[i]);",
        "rewrite_expr",
        "is not a control expression",
    );
    refused(
        src,
        "    rewrite_expr(\"y =\", n - 1 - i, i < n);",
        "rewrite_expr",
        "has type",
    );
    refused(
        src,
        "    rewrite_expr(\"y =\", i + 1, i + 1);",
        "rewrite_expr",
        "does not occur",
    );
}

// ----- fold_into_reduce -----

#[test]
fn fold_into_reduce_turns_an_accumulating_assignment_into_a_reduction() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: i16[n] @ DRAM) {
    for i in 0..n {
        y[i] = y[i] + x[i] * y[i];
        y[i] = x[i] + y[i + 1 - 1];
        z[i] = z[i] + z[i];
    }
}";
    let s = accepted(
        src,
        "    fold_into_reduce(\"y =\");\n    fold_into_reduce(\"y =\");\n    fold_into_reduce(\"z =\");",
    );
    shows(
        &s,
        &["y[i] += x[i] * y[i];", "y[i] += x[i];", "z[i] += z[i];"],
    );
    same_for(&s, &[1, 2, 5]);
}

#[test]
fn fold_into_reduce_rejects_another_cell_or_another_operation() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = y[0] + x[i];
        y[i] = y[i] * x[i];
        y[i] = x[i] + x[i];
    }
}";
    let e = refused(
        src,
        "    fold_into_reduce(\"y =\");",
        "fold_into_reduce",
        "is not of the assigned cell",
    );
    assert_ne!(cex(&e, "i"), 0, "{e}");
    refused(
        src,
        "    fold_into_reduce(\"y = #1\");",
        "fold_into_reduce",
        "is not an addition",
    );
    refused(
        src,
        "    fold_into_reduce(\"y = #2\");",
        "fold_into_reduce",
        "neither operand",
    );
    refused(
        src,
        "    fold_into_reduce(i);",
        "fold_into_reduce",
        "not an assignment",
    );
}

// ----- merge_writes -----

#[test]
fn merge_writes_merges_two_writes_of_one_cell() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: i32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i];
        y[i] += 2.0 * y[i];
        x[i] = y[i] * 3.0;
        x[i] = x[i + 1 - 1] * x[i];
        z[i] += z[i];
        z[i] += 5 * z[i];
        z[i] += 1;
        z[i] = z[i] - 1;
    }
}";
    let s = accepted(
        src,
        "    merge_writes(\"y =\");\n    merge_writes(\"x =\");\n    merge_writes(\"z +=\");\n    merge_writes(\"z += #1\");",
    );
    shows(
        &s,
        &[
            "y[i] = x[i] + 2.0 * x[i];",
            "x[i] = y[i] * 3.0 * (y[i] * 3.0);",
            "z[i] += z[i] + 5 * (z[i] + z[i]);",
            "z[i] = z[i] + 1 - 1;",
        ],
    );
    same_for(&s, &[1, 2, 5]);

    // `+=` twice on floats reassociates (documented): equal up to rounding.
    let floats = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] += x[i];
        y[i] += x[i] * y[i];
    }
}";
    let s = accepted(floats, "    merge_writes(\"y +=\");");
    shows(&s, &["y[i] += x[i] + x[i] * (y[i] + x[i]);"]);
    close_results(&s, &[1, 4]);
}

#[test]
fn merge_writes_rejects_other_cells_and_reads_that_see_the_first_write() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i];
        y[i] = y[0] + 1.0;
        y[i] = 1.0;
        y[0] = 2.0;
        x[i] = 1.0;
        y[i] = 3.0;
    }
}";
    // `y[0]` is the cell when i = 0, and is not replaced (written otherwise).
    let e = refused(
        src,
        "    merge_writes(\"y =\");",
        "merge_writes",
        "reads the cell",
    );
    assert_eq!(cex(&e, "i"), 0, "{e}");
    let e = refused(
        src,
        "    merge_writes(\"y = #2\");",
        "merge_writes",
        "may write different cells",
    );
    assert_ne!(cex(&e, "i"), 0, "{e}");
    refused(
        src,
        "    merge_writes(\"x =\");",
        "merge_writes",
        "different buffers",
    );
    refused(
        src,
        "    merge_writes(\"y = #4\");",
        "merge_writes",
        "no statement follows",
    );
    refused(
        src,
        "    merge_writes(i);",
        "merge_writes",
        "not an assignment or a reduction",
    );
}

// ----- split_write -----

#[test]
fn split_write_splits_a_sum_into_a_write_and_a_reduction() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: u8[n] @ DRAM) {
    for i in 0..n {
        y[i] = y[i] + 2.0 * x[i];
        z[i] += z[i] * 3 + 200;
    }
}";
    let s = accepted(src, "    split_write(\"y =\");\n    split_write(\"z +=\");");
    shows(
        &s,
        &[
            "y[i] = y[i];\n        y[i] += 2.0 * x[i];",
            "z[i] += z[i] * 3;\n        z[i] += 200;",
        ],
    );
    same_for(&s, &[1, 2, 5]);
    // And back.
    let s = accepted(src, "    split_write(\"y =\");\n    merge_writes(\"y =\");");
    shows(&s, &["y[i] = y[i] + 2.0 * x[i];"]);
    same_for(&s, &[3]);

    let floats = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] += x[i] + 0.5;
    }
}";
    let s = accepted(floats, "    split_write(\"y +=\");");
    shows(&s, &["y[i] += x[i];\n        y[i] += 0.5;"]);
    close_results(&s, &[1, 4]);
}

#[test]
fn split_write_rejects_a_second_term_that_reads_the_cell() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] + y[i];
        y[i] = x[i] + y[n - 1];
        y[i] = x[i] * y[i];
    }
}";
    refused(
        src,
        "    split_write(\"y =\");",
        "split_write",
        "reads the cell",
    );
    let e = refused(
        src,
        "    split_write(\"y = #1\");",
        "split_write",
        "reads the cell",
    );
    assert_eq!(cex(&e, "i"), cex(&e, "n") - 1, "{e}");
    refused(
        src,
        "    split_write(\"y = #2\");",
        "split_write",
        "is not an addition",
    );
}

// ----- lift_reduce_constant -----

const SUM: &str = "proc p(n: size, a: T[2] @ DRAM, x: T[n] @ DRAM, y: T[2] @ DRAM) {
    y[1] = 0;
    for k in 0..n {
        y[1] += a[0] * x[k];
    }
}";

#[test]
fn lift_reduce_constant_takes_the_factor_out_of_the_sum() {
    // Integers: exact.
    let src = SUM.replace('T', "i32");
    let s = accepted(&src, "    lift_reduce_constant(\"y =\");");
    shows(
        &s,
        &["for k in 0..n {\n        y[1] += x[k];\n    }\n    y[1] = a[0] * y[1];"],
    );
    same_for(&s, &[1, 2, 6]);
    // Floats: the documented distribution, equal up to rounding.
    let src = SUM.replace('T', "f64").replace("= 0;", "= 0.0;");
    let s = accepted(&src, "    lift_reduce_constant(\"y =\");");
    close_results(&s, &[1, 2, 6]);
    // A factor that reads no buffer, over a loop that may not run, on integers.
    let src = "proc p(n: size, x: i32[n] @ DRAM, y: i32[1] @ DRAM) {
    y[0] = 0;
    for k in 0..n - 1 {
        y[0] += 3 * x[k];
    }
}";
    let mut s = sched(src);
    let c = s.find("y =").unwrap();
    s.lift_reduce_constant(&c).unwrap();
    shows(&s, &["y[0] = 3 * y[0];"]);
    same_for(&s, &[1, 2, 5]);
}

#[test]
fn lift_reduce_constant_rejects_a_variant_factor_and_reads_of_the_cell() {
    let src = SUM.replace('T', "f32").replace("= 0;", "= 0.0;");
    let variant = src.replace("a[0] * x[k]", "x[k] * a[0]");
    refused(
        &variant,
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "uses the loop variable",
    );
    refused(
        &src.replace("a[0] * x[k]", "y[1] * x[k]"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "the factor 'y[1]' reads the cell",
    );
    refused(
        &src.replace("a[0] * x[k]", "a[0] * y[1]"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "reads the cell of 'y' the loop accumulates into",
    );
    // Another cell of `y` is fine to read; the cell itself at some iteration is not.
    let s = accepted(
        &src.replace("a[0] * x[k]", "y[0] * x[k]"),
        "    lift_reduce_constant(\"y =\");",
    );
    close_results(&s, &[3]);
    refused(
        &src.replace("a[0] * x[k]", "a[0] * y[k % 2]"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "reads the cell",
    );
    refused(
        &src.replace("y[1] += a[0]", "y[k % 2] += a[0]"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "may not be into the assigned cell",
    );
    refused(
        &src.replace("y[1] = 0.0", "y[1] = 1.0"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "not the number 0",
    );
    refused(
        &src.replace("a[0] * x[k]", "a[0] + x[k]"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "is not a product",
    );
    // A loop that may not run: `a[0] * 0.0` would be computed where it was not.
    let e = refused(
        &src.replace("0..n", "0..n - 1"),
        "    lift_reduce_constant(\"y =\");",
        "lift_reduce_constant",
        "the loop may not run",
    );
    assert_eq!(cex(&e, "n"), 1, "{e}");
}

/// The steps compose: commute the factor to the left, then lift it; split a write, fold one
/// back. Random sizes include 1 (`N`).
#[test]
fn expression_steps_compose() {
    let src = "proc p(n: size, a: i32[1] @ DRAM, x: i32[n] @ DRAM, y: i32[1] @ DRAM) {
    y[0] = 0;
    for k in 0..n {
        y[0] = y[0] + x[k] * a[0];
    }
}";
    let s = accepted(
        src,
        "    fold_into_reduce(\"y = #1\");
    commute_expr(\"y +=\", x[k] * a[0]);
    lift_reduce_constant(\"y =\");",
    );
    shows(&s, &["y[0] += x[k];", "y[0] = a[0] * y[0];"]);
    for sz in N {
        same_results(&s, sz);
    }
}

// ----- probes: aliasing through windows, contexts, odd inputs -----

/// Another name of the same cell (a window of the buffer) is not "the cell written alike": the
/// analysis resolves both to the buffer and refuses.
#[test]
fn probes_a_window_of_the_written_buffer_is_seen() {
    let src = "proc p(n: size, B: f32[n + 4] @ DRAM, x: f32[n] @ DRAM) {
    let w = B[1:n + 4];
    w[0] = 1.0;
    w[0] = B[1] + 1.0;
    w[1] = B[0] + B[2];
    w[2] = 0.0;
    for k in 0..n {
        w[2] += B[3] * x[k];
    }
    w[3] = B[4] + x[0];
}";
    let e = refused(
        src,
        "    merge_writes(\"w =\");",
        "merge_writes",
        "reads the cell",
    );
    assert!(e.stmts.iter().any(|(_, w)| w == "reads B"), "{e}");
    refused(
        src,
        "    split_write(\"w = #2\");",
        "split_write",
        "reads the cell",
    );
    refused(
        src,
        "    lift_reduce_constant(\"w = #3\");",
        "lift_reduce_constant",
        "the factor 'B[3]' reads the cell",
    );
    // Folding needs the same name: conservative.
    refused(
        src,
        "    fold_into_reduce(\"w = #4\");",
        "fold_into_reduce",
        "neither operand",
    );
    // Where the other name is of another cell, the steps are accepted and exact.
    let s = accepted(
        &src.replace("B[1] + 1.0", "B[2] + 1.0")
            .replace("B[0] + B[2]", "B[0] + B[3]"),
        "    merge_writes(\"w =\");\n    split_write(\"w = #1\");",
    );
    shows(
        &s,
        &["w[0] = B[2] + 1.0;", "w[1] = B[0];\n    w[1] += B[3];"],
    );
    same_for(&s, &[1, 3]);
}

/// `rewrite_expr` uses the preconditions and the enclosing `if`; a value proved equal in
/// mathematical integers but that overflows the 64-bit control arithmetic is refused by the
/// scheduler's control check.
#[test]
fn probes_rewrite_expr_context_and_overflow() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    assert n % 4 == 0;
    for i in 0..n / 4 * 4 {
        if i >= 2 {
            x[max(i - 2, 0)] = 1.0;
        }
    }
}";
    let s = accepted(
        src,
        "    rewrite_expr(i, n / 4 * 4, n);\n    rewrite_expr(\"x =\", max(i - 2, 0), i - 2);",
    );
    shows(&s, &["for i in 0..n {", "x[i - 2] = 1.0;"]);
    same_for(&s, &[4, 8]);
    refused(
        src,
        "    rewrite_expr(i, n / 4 * 4, n + 4 - 4 * 1 + 0 * n + (n - n) + 4);",
        "rewrite_expr",
        "not proved equal",
    );
    let e = refused(
        src,
        "    rewrite_expr(i, n / 4 * 4, n + 9223372036854775000 - 9223372036854775000);",
        "rewrite_expr",
        "control-arithmetic",
    );
    assert!(!e.counterexample.is_empty(), "{e}");
    // Without the precondition, `n / 4 * 4` is not `n`.
    let e = refused(
        &src.replace("    assert n % 4 == 0;\n", ""),
        "    rewrite_expr(i, n / 4 * 4, n);",
        "rewrite_expr",
        "not proved equal",
    );
    assert_ne!(cex(&e, "n") % 4, 0, "{e}");
}

/// The remaining case of `merge_writes` (a reduction, then an assignment reading the cell), a
/// scalar buffer, and the messages for statements of other kinds.
#[test]
fn probes_merge_writes_other_forms() {
    let src = "proc p(n: size, z: i32[n] @ DRAM, u: i64[1] @ DRAM) {
    for i in 0..n {
        z[i] += 1;
        z[i] = z[i] * 2 + z[i];
    }
    alloc t: i64 @ DRAM_STACK;
    t = 3;
    t += t;
    u[0] = t;
    for j in 0..n {
        z[j] = 0;
    }
}";
    let s = accepted(
        src,
        "    merge_writes(\"z +=\");\n    merge_writes(\"t =\");",
    );
    shows(&s, &["z[i] = (z[i] + 1) * 2 + (z[i] + 1);", "t = 3 + 3;"]);
    same_for(&s, &[1, 4]);
    refused(
        src,
        "    merge_writes(\"u =\");",
        "merge_writes",
        "the next statement is not an assignment or a reduction",
    );
}

/// Float reassociation is refused in an instruction's body, whose C template computes the body
/// as written; exact rewrites are not.
#[test]
fn probes_float_reassociation_is_refused_in_an_instruction() {
    let src = "instr acc(dst: [f32][8] @ DRAM, src: [f32][8] @ DRAM) \"{dst_data};\" {
    for i in 0..8 {
        dst[i] += src[i] + 1.0;
        dst[i] = src[i] + (dst[i] + 2.0);
    }
}";
    let mut s = sched(src);
    let red = s.find("dst +=").unwrap();
    rejected(s.split_write(&red), "split_write", "is an instruction");
    let w = s.find("dst =").unwrap();
    let (src_sym, dst_sym) = (s.proc().args[1].sym.clone(), s.proc().args[0].sym.clone());
    let i = var_of(&s, "for i");
    let rd = |b| Expr::read(b, DType::F32, vec![i.clone()]);
    let inner = Expr::binary(BinOp::Add, rd(&dst_sym), common::f32_lit(2.0));
    let e = Expr::binary(BinOp::Add, rd(&src_sym), inner.clone());
    rejected(
        s.left_reassociate_expr(&w, &e),
        "left_reassociate_expr",
        "is an instruction",
    );
    // Commuting is exact.
    s.commute_expr(&w, &inner).unwrap();
    shows(&s, &["dst[i] = src[i] + (2.0 + dst[i]);"]);
}

/// Error values (reads of cells never written) propagate alike through the rewritten forms:
/// every cell of the result, error cells included, is the original's.
#[test]
fn probes_error_values_propagate_alike() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[1] @ DRAM) {
    alloc t: f32[n + 1] @ DRAM;
    t[n] = 2.0;
    for i in 0..n {
        y[i] = t[i] + x[i];
        x[i] = x[i] + t[i];
        y[i] += t[n];
        y[i] += t[i];
    }
    z[0] = 0.0;
    for k in 0..n {
        z[0] += t[0] * x[k];
    }
    free t;
}";
    let steps = [
        "split_write(\"y =\")",
        "fold_into_reduce(\"x =\")",
        "merge_writes(\"y +=\")",
        "lift_reduce_constant(\"z =\")",
    ];
    let m = common::module_reading_uninit(src);
    // The original runs, and leaves error cells in `y` and `z` (so the comparison below sees
    // them).
    let o = exec(&m.procs[0], &[("n", 3)], 0, &Default::default());
    assert!(o.result.is_ok(), "{:?}", o.result);
    for name in ["y", "z"] {
        let (_, cells) = o.bufs.iter().find(|(b, _)| b == name).unwrap();
        assert!(cells.iter().all(|c| c.is_none()), "{name}: {cells:?}");
    }
    for step in steps {
        let mut s = Schedule::new(m.procs[0].clone());
        let decl = format!("{src}\nschedule q = p {{\n    {step};\n}}\n");
        let (_, scope) = weft_syntax::parse_module_in(
            &mut weft_syntax::SourceMap::new(),
            "t.weft",
            &decl,
            &weft_syntax::Scope::prelude(),
        )
        .expect("parses");
        let parsed =
            weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", &decl).unwrap();
        let st = &parsed.schedules[0].steps[0];
        let memories = |n: &str| scope.memory(n).cloned();
        weft_sched::script::apply_step(&mut s, st, &memories)
            .unwrap_or_else(|e| panic!("{step}: {e}"));
        common::sound(
            Ok::<(), SchedError>(()),
            &s,
            &[&[("n", 1)], &[("n", 3)]],
            &[Default::default()],
            &[],
        );
    }
}

/// Merging `y = y * y` again and again doubles the value's tree each time (each read of the
/// cell becomes a copy of the previous value): the merges are exact until the tree would pass
/// the IR's size limit, where `merge_writes` refuses (rule `depth`) instead of building a
/// statement every later pass would walk for ever. A `rewrite_expr` value deeper than the depth
/// limit is refused the same way.
#[test]
fn probes_expressions_grown_past_the_ir_limits_are_refused() {
    let mut src = String::from(
        "proc p(n: size, x: i32[n] @ DRAM, y: i32[n] @ DRAM) {\n    for i in 0..n {\n        y[i] = x[i];\n",
    );
    for _ in 0..16 {
        src.push_str("        y[i] = y[i] * y[i] + 1;\n");
    }
    src.push_str("    }\n}");
    let mut s = sched(&src);
    let mut merged = 0;
    let err = loop {
        match s.merge_writes(&s.find("y =").unwrap()) {
            Ok(_) => merged += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(err.primitive, "merge_writes", "{err}");
    assert!(err.message.contains("nodes (rule `depth`)"), "{err}");
    assert!(
        (10..16).contains(&merged),
        "{merged} merges before the refusal"
    );
    same_for(&s, &[1, 3]);

    let mut s = sched(PROD);
    let i = var_of(&s, "for i");
    let mut deep = i.clone();
    for _ in 0..600 {
        deep = Expr::binary(BinOp::Add, deep, Expr::int(0));
    }
    let w = s.find("z =").unwrap();
    rejected(
        s.rewrite_expr(&w, &i, &deep),
        "rewrite_expr",
        "levels deep, more than the limit",
    );
}
