//! The buffer and config primitives (inline_assign, sink_alloc, divide_dim, reuse_buffer,
//! bind_config, write_config): each accepted where it must be, with results compared against the
//! original on the reference interpreter at several sizes, and rejected where it must be, with the
//! message and counterexample the user sees; and each reachable from a text schedule.

mod common;

use common::{
    arg_of, cex, lacks, module_of, module_reading_uninit, rejected, rejected_at,
    rejected_at_reading_uninit, same_for_n, same_results, sched, shows, stack, text, var_of,
};
use std::sync::Arc;
use weft_ir::{Config, DType, Expr, StmtKind, Ty};
use weft_sched::{SchedError, Schedule};

// ----- inline_assign -----

/// `inline_assign` of the statement matching `pattern` in `src` is rejected with a message
/// containing `message`.
fn inline_assign_rejected(src: &str, pattern: &str, message: &str) -> SchedError {
    rejected_at_reading_uninit(
        src,
        pattern,
        Schedule::inline_assign,
        "inline_assign",
        message,
    )
}

#[test]
fn inline_assign_replaces_the_reads_of_a_scalar_and_deletes_it() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32 @ DRAM_STACK;
        t = x[i] * 2.0;
        y[i] = t + 1.0;
        z[i] = t * t;
    }
}";
    let mut s = sched(src);
    let w = s.find("z =").unwrap();
    let c = s.inline_assign(&s.find("t =").unwrap()).unwrap();
    // The cursor lands on the statement after the deleted one.
    assert_eq!(c.path.to_string(), "[0/1]");
    assert_eq!(s.resolve(&w).unwrap().to_string(), "[0/2]");
    shows(
        &s,
        &[
            "y[i] = x[i] * 2.0 + 1.0;",
            "z[i] = x[i] * 2.0 * (x[i] * 2.0);",
        ],
    );
    lacks(&s, &["t = "]);
    same_for_n(&s, &[1, 2, 5]);
}

#[test]
fn inline_assign_is_the_inverse_of_bind_expr() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] += x[i] * 2.0 + x[i] * 2.0 * x[i];
    }
}";
    let mut s = sched(src);
    let w = s.find("y +=").unwrap();
    let x = s.proc().arg("x").unwrap().sym.clone();
    let i = var_of(&s, "for i");
    let pat = Expr::read(&x, DType::F32, vec![i]) * Expr::float(2.0);
    s.bind_expr(&w, &pat, "e", stack()).unwrap();
    s.inline_assign(&s.find("e =").unwrap()).unwrap();
    shows(&s, &["y[i] += x[i] * 2.0 + x[i] * 2.0 * x[i];"]);
    same_for_n(&s, &[1, 3]);
}

#[test]
fn inline_assign_keeps_reads_of_other_cells_and_accepts_an_enclosing_allocation() {
    // `t[0]` is not the inlined cell: its read stays.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[2] @ DRAM_STACK;
        t[0] = x[i];
        t[1] = x[i] * 3.0;
        y[i] = t[0] + t[1];
    }
}";
    let mut s = sched(src);
    s.inline_assign(&s.find("t = #1").unwrap()).unwrap();
    shows(&s, &["t[0] = x[i];", "y[i] = t[0] + x[i] * 3.0;"]);
    same_for_n(&s, &[1, 4]);

    // An allocation outside the loop that nothing else reads.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[n] @ DRAM;
    for i in 0..n {
        t[i] = x[i] * 2.0;
        y[i] = t[i] + 1.0;
    }
}";
    let mut s = sched(src);
    s.inline_assign(&s.find("t =").unwrap()).unwrap();
    shows(&s, &["y[i] = x[i] * 2.0 + 1.0;"]);
    same_for_n(&s, &[1, 3, 7]);
}

#[test]
fn inline_assign_rejects_an_intervening_write() {
    // `x[i]`, which the value reads, changes before the read.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32 @ DRAM_STACK;
        t = x[i];
        x[i] = 0.0;
        y[i] = t;
    }
}";
    let e = inline_assign_rejected(
        src,
        "t =",
        "writes the cell of 't' or a location the value assigned reads",
    );
    assert!(0 <= cex(&e, "i") && cex(&e, "i") < cex(&e, "n"), "{e}");
    assert_eq!(e.stmts.len(), 2);

    // The cell itself is written again before a later read.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32 @ DRAM_STACK;
        t = x[i];
        y[i] = t;
        t = 3.0;
        z[i] = t;
    }
}";
    inline_assign_rejected(src, "t =", "writes the cell of 't'");
}

#[test]
fn inline_assign_rejects_a_write_that_is_read_later() {
    // The second loop reads what the first loop's assignment wrote: j = i'.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    alloc t: f32[n] @ DRAM;
    for i in 0..n {
        t[i] = x[i] * 2.0;
        y[i] = t[i];
    }
    for j in 0..n {
        z[j] = t[j];
    }
}";
    let e = inline_assign_rejected(
        src,
        "t =",
        "is not replaced may see the value this assignment writes",
    );
    assert_eq!(cex(&e, "i'"), cex(&e, "j"), "{e}");

    // A read through another index of the same cell, in the same block.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[4] @ DRAM_STACK;
        t[i % 4] = x[i];
        y[i] = t[i % 4] + t[0];
    }
}";
    let e = inline_assign_rejected(src, "t =", "is not replaced");
    assert_eq!(cex(&e, "i") % 4, 0, "{e}");

    // A proc argument: the caller sees it.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    y[0] = x[0];
    x[0] = y[0] + 1.0;
}";
    inline_assign_rejected(src, "y =", "is an argument of the proc");
}

#[test]
fn inline_assign_rejects_reductions_and_self_reads() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[2] @ DRAM_STACK;
        t[0] = x[i];
        t[0] = t[0] * 2.0;
        t[1] = x[i];
        t[1] += 1.0;
        y[i] = t[0] + t[1];
    }
}";
    inline_assign_rejected(src, "t = #1", "reads the cell of 't' it is assigned to");
    inline_assign_rejected(src, "t +=", "not an assignment");
}

// ----- sink_alloc -----

/// `sink_alloc` of `alloc t` in `src` is rejected with a message containing `message`.
fn sink_alloc_rejected(src: &str, message: &str) -> SchedError {
    rejected_at(src, "alloc t", Schedule::sink_alloc, "sink_alloc", message)
}

const HOISTED: &str = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    alloc t: f32[4] @ DRAM_STACK;
    for i in 0..n {
        for j in 0..4 {
            t[j] = x[i, j] * 2.0;
        }
        for k in 0..4 {
            y[i, k] += t[k] + t[3 - k];
        }
    }
    free t;
}";

#[test]
fn sink_alloc_moves_a_buffer_every_iteration_writes_first_into_the_loop() {
    let mut s = sched(HOISTED);
    let a = s.find("alloc t").unwrap();
    let red = s.find("y +=").unwrap();
    let c = s.sink_alloc(&a).unwrap();
    assert_eq!(c.path.to_string(), "[0/0]");
    assert_eq!(s.resolve(&red).unwrap().to_string(), "[0/2/0]");
    shows(
        &s,
        &[
            "for i in 0..n {\n        alloc t: f32[4] @ DRAM_STACK;",
            "        }\n        free t;\n    }\n}",
        ],
    );
    assert_eq!(s.proc().body.len(), 1);
    same_for_n(&s, &[1, 3, 6]);
    // And back: lift_alloc gives the original text.
    s.lift_alloc(&c).unwrap();
    let orig = weft_ir::print::proc_to_string(s.version(0).unwrap());
    assert_eq!(text(&s), orig);
}

#[test]
fn sink_alloc_puts_an_allocation_in_each_branch_that_uses_it() {
    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM) {
    alloc t: f32[n] @ DRAM;
    if m > 2 {
        for i in 0..n {
            t[i] = x[i];
        }
        for i in 0..n {
            x[i] = t[n - 1 - i];
        }
    } else {
        for i in 0..n {
            t[i] = x[i] * 3.0;
            x[i] = t[i];
        }
    }
}";
    let mut s = sched(src);
    let c = s.sink_alloc(&s.find("alloc t").unwrap()).unwrap();
    assert_eq!(c.path.to_string(), "[0/0]");
    let StmtKind::If {
        then_body,
        else_body,
        ..
    } = &s.proc().body[0].kind
    else {
        panic!("not an if")
    };
    let alloc_of = |b: &weft_ir::Stmt| match &b.kind {
        StmtKind::Alloc { buf, .. } => buf.clone(),
        _ => panic!("not an allocation"),
    };
    assert_ne!(alloc_of(&then_body[0]), alloc_of(&else_body[0]));
    for m in [1, 3, 5] {
        for n in [1, 4] {
            same_results(&s, &[("n", n), ("m", m)]);
        }
    }
}

#[test]
fn sink_alloc_rejects_a_read_of_an_earlier_iteration() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM_STACK;
    for i in 0..n {
        if i % 2 == 0 {
            t[0] = x[i];
        }
        y[i] = t[0];
    }
}";
    let e = sink_alloc_rejected(src, "that an earlier iteration wrote");
    assert!(
        cex(&e, "i'") < cex(&e, "i") && cex(&e, "i'") % 2 == 0,
        "{e}"
    );
}

#[test]
fn sink_alloc_rejects_a_buffer_used_after_the_loop() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[n] @ DRAM;
    for i in 0..n {
        t[i] = x[i];
    }
    y[0] = t[0];
}";
    sink_alloc_rejected(src, "'t' is used after the statement it would move into");
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM_STACK;
    t[0] = 1.0;
    x[0] = t[0];
}";
    sink_alloc_rejected(src, "is not followed by a loop or an 'if'");
}

// ----- divide_dim -----

#[test]
fn divide_dim_splits_a_padded_dimension() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[8 * ((n + 7) / 8)] @ DRAM;
    for i in 0..n {
        t[i] = x[i] * 2.0;
    }
    t[0] = t[0] + 1.0;
    for i in 0..n {
        y[i] = t[i] + t[n - 1 - i];
    }
}";
    let mut s = sched(src);
    let a = s.find("alloc t").unwrap();
    let c = s.divide_dim(&a, 0, 8).unwrap();
    assert_eq!(c, s.cursor(a.path.clone()));
    shows(
        &s,
        &[
            "alloc t: f32[8 * ((n + 7) / 8) / 8, 8] @ DRAM;",
            "t[i / 8, i % 8] = x[i] * 2.0;",
            "t[0, 0] = t[0, 0] + 1.0;",
            "y[i] = t[i / 8, i % 8] + t[(n - 1 - i) / 8, (n - 1 - i) % 8];",
        ],
    );
    same_for_n(&s, &[1, 5, 8, 13]);
}

#[test]
fn divide_dim_maps_windows_and_strides() {
    let src = "proc h(m: size, a: [f32][m] @ DRAM, b: [f32][m] @ DRAM) {
    for k in 0..m {
        b[k] = a[k] + 1.0;
    }
}
proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    alloc t: f32[4 * n, 4] @ DRAM;
    for i in 0..n {
        for r in 0..4 {
            h(4, x[i, 0:4], t[4 * i + r, 0:4]);
        }
    }
    for i in 0..n {
        for k in 0..4 {
            if stride(t, 0) == 4 {
                y[i, k] = t[4 * i + 3 - k, k];
            } else {
                y[i, k] = 0.0;
            }
        }
    }
}";
    let mut s = sched(src);
    s.divide_dim(&s.find("alloc t").unwrap(), 0, 4).unwrap();
    shows(
        &s,
        &[
            "alloc t: f32[4 * n / 4, 4, 4] @ DRAM;",
            "h(4, x[i, 0:4], t[(4 * i + r) / 4, (4 * i + r) % 4, 0:4]);",
            "if stride(t, 1) == 4 {",
            "y[i, k] = t[(4 * i + 3 - k) / 4, (4 * i + 3 - k) % 4, k];",
        ],
    );
    same_for_n(&s, &[1, 2, 5]);
}

#[test]
fn divide_dim_rejects_an_extent_not_divisible_and_rank_changing_windows() {
    let src = "proc h(m: size, a: [f32][m] @ DRAM) {
    for k in 0..m {
        a[k] = 1.0;
    }
}
proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[n] @ DRAM;
    alloc u: f32[8] @ DRAM;
    h(4, u[0:4]);
    for i in 0..n {
        t[i] = x[i];
        x[i] = t[i] + u[0];
    }
}";
    let e = rejected_at(
        src,
        "alloc t",
        |s, c| s.divide_dim(c, 0, 4),
        "divide_dim",
        "may not be divisible by 4",
    );
    assert_ne!(cex(&e, "n") % 4, 0, "{e}");
    rejected_at(
        src,
        "alloc u",
        |s, c| s.divide_dim(c, 0, 4),
        "divide_dim",
        "spans dimension 0",
    );
    rejected_at(
        src,
        "alloc u",
        |s, c| s.divide_dim(c, 1, 4),
        "divide_dim",
        "not a dimension 1",
    );
    rejected_at(
        src,
        "alloc u",
        |s, c| s.divide_dim(c, 0, 0),
        "divide_dim",
        "not a positive constant",
    );
}

// ----- reuse_buffer -----

/// `reuse_buffer` of `alloc t2` in `src` and the buffer `t1` is rejected with a message containing
/// `message`.
fn reuse_buffer_rejected(src: &str, t1: &str, message: &str) -> SchedError {
    rejected_at_reading_uninit(
        src,
        "alloc t2",
        |s, c| s.reuse_buffer(c, t1),
        "reuse_buffer",
        message,
    )
}

const TWO_TEMPS: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[n] @ DRAM;
    for i in 0..n {
        t1[i] = x[i] * 2.0;
    }
    for i in 0..n {
        y[i] = t1[i] + 1.0;
    }
    alloc t2: f32[n + 0] @ DRAM;
    for i in 0..n {
        t2[i] = y[i] * y[i];
    }
    for i in 0..n {
        x[i] = t2[n - 1 - i];
    }
    free t2;
}";

#[test]
fn reuse_buffer_replaces_a_new_buffer_by_a_dead_one() {
    let mut s = sched(TWO_TEMPS);
    let w = s.find("x =").unwrap();
    s.reuse_buffer(&s.find("alloc t2").unwrap(), "t1").unwrap();
    assert_eq!(s.resolve(&w).unwrap().to_string(), "[4/0]");
    lacks(&s, &["t2"]);
    shows(&s, &["t1[i] = y[i] * y[i];", "x[i] = t1[n - 1 - i];"]);
    assert_eq!(s.proc().body.len(), 5);
    same_for_n(&s, &[1, 4, 7]);
}

#[test]
fn reuse_buffer_accepts_a_buffer_dead_before_a_loop() {
    let src = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    alloc t1: f32[4] @ DRAM_STACK;
    for k in 0..4 {
        t1[k] = x[0, k];
    }
    for k in 0..4 {
        y[0, k] = t1[k];
    }
    for i in 0..n {
        alloc t2: f32[4] @ DRAM_STACK;
        for k in 0..4 {
            t2[k] = x[i, k] * 3.0;
        }
        for k in 0..4 {
            y[i, k] += t2[3 - k];
        }
    }
}";
    let mut s = sched(src);
    s.reuse_buffer(&s.find("alloc t2").unwrap(), "t1").unwrap();
    lacks(&s, &["t2"]);
    same_for_n(&s, &[1, 3]);
}

#[test]
fn reuse_buffer_rejects_a_live_buffer() {
    // `t1` is read after `t2` is allocated.
    let src = TWO_TEMPS.replace("    free t2;\n", "    free t2;\n    y[0] = t1[0];\n");
    reuse_buffer_rejected(&src, "t1", "'t1' is used after the allocation of 't2'");
    // A later iteration of the loop around `t2` uses `t1`.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[4] @ DRAM_STACK;
    for i in 0..n {
        t1[0] = x[i];
        y[i] = t1[0];
        alloc t2: f32[4] @ DRAM_STACK;
        t2[0] = x[i] * 2.0;
        x[i] = t2[0];
    }
}";
    reuse_buffer_rejected(src, "t1", "a later iteration uses it");
}

#[test]
fn reuse_buffer_rejects_other_shapes_types_and_uninitialised_reads() {
    let src = TWO_TEMPS.replace("t2: f32[n + 0]", "t2: f32[n + 1]");
    let e = reuse_buffer_rejected(
        &src,
        "t1",
        "dimension 0 of 't1' (n) and of 't2' (n + 1) may differ",
    );
    assert!(cex(&e, "n") > 0, "{e}");
    // (A stack buffer must be proved to fit the stack: bound `n`.)
    let src = TWO_TEMPS
        .replace("t2: f32[n + 0] @ DRAM", "t2: f32[n] @ DRAM_STACK")
        .replace("{\n    alloc t1", "{\n    assert n <= 64;\n    alloc t1");
    reuse_buffer_rejected(&src, "t1", "differ in element type, memory or rank");
    // `t2[n - 1]` is read but only `t2[0..n-1]` written: the original reads an uninitialised
    // cell, the result would read what `t1` held.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[n] @ DRAM;
    for i in 0..n {
        t1[i] = x[i];
    }
    y[0] = t1[0];
    alloc t2: f32[n] @ DRAM;
    for i in 0..n - 1 {
        t2[i] = x[i];
    }
    y[0] = t2[n - 1];
}";
    reuse_buffer_rejected(
        src,
        "t1",
        "is not proved to see a value written since its allocation",
    );
    reuse_buffer_rejected(src, "x", "'x' is an argument of the proc");
    // `t1` is freed while `t2` is still in use.
    let src = TWO_TEMPS.replace(
        "    alloc t2: f32[n + 0] @ DRAM;\n",
        "    alloc t2: f32[n + 0] @ DRAM;\n    free t1;\n",
    );
    reuse_buffer_rejected(&src, "t1", "'t1' is freed while 't2' is still used");
}

// ----- bind_config and write_config -----

const CFG: &str = "config Cfg { scale: f32, k: index }
";

fn cfg(src: &str) -> Arc<Config> {
    module_reading_uninit(src).config("Cfg").unwrap().clone()
}

fn f32_lit(v: f64) -> Expr {
    Expr::typed_const(weft_ir::Const::Float(v), Ty::Data(DType::F32))
}

/// The config fields the last step polluted, as recorded in the proc's provenance.
fn polluted(s: &Schedule) -> Vec<String> {
    s.proc()
        .origin
        .as_ref()
        .map(|o| o.polluted_names())
        .unwrap_or_default()
}

#[test]
fn bind_config_binds_a_data_value_to_a_field() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = x[i] * 2.0 + 2.0;
    }}
}}"
    );
    let cfg = cfg(&src);
    let mut s = sched(&src);
    let w = s.find("y =").unwrap();
    let c = s.bind_config(&w, &f32_lit(2.0), &cfg, 0).unwrap();
    assert_eq!(c.path.to_string(), "[0/1]");
    assert_eq!(s.resolve(&w), Some(c.path.clone()));
    shows(
        &s,
        &["Cfg.scale = 2.0;\n        y[i] = x[i] * Cfg.scale + Cfg.scale;"],
    );
    assert_eq!(polluted(&s), vec!["Cfg.scale"]);
    same_for_n(&s, &[1, 3]);
    // Not present, wrong type.
    rejected(
        s.bind_config(&c, &f32_lit(3.0), &cfg, 0),
        "bind_config",
        "does not occur",
    );
    let n = arg_of(&s, "n");
    rejected(
        s.bind_config(&c, &n, &cfg, 0),
        "bind_config",
        "but field Cfg.scale has type f32",
    );
}

#[test]
fn bind_config_binds_a_control_value_and_accepts_a_read_after_an_overwrite() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    if n > 2 {{
        for i in 0..n {{
            x[i] = 0.0;
        }}
    }}
    Cfg.k = 0;
    if Cfg.k == 0 {{
        y[0] = 1.0;
    }}
}}"
    );
    let cfg = cfg(&src);
    let mut s = sched(&src);
    let n = arg_of(&s, "n");
    s.bind_config(&s.find("if").unwrap(), &n, &cfg, 1).unwrap();
    shows(&s, &["Cfg.k = n;\n    if Cfg.k > 2 {"]);
    assert_eq!(polluted(&s), vec!["Cfg.k"]);
    same_for_n(&s, &[1, 3, 5]);
    // The checker knows a control config field's value where it was just written, so a loop
    // bound read from the field still bounds the accesses.
    s.bind_config(&s.find("for i").unwrap(), &n, &cfg, 1)
        .unwrap();
    same_for_n(&s, &[1, 3, 5]);
}

#[test]
fn bind_config_rejects_a_later_read_of_the_field() {
    // The field is read after the statement, in the same iteration.
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = x[i] * 2.0;
        z[i] = Cfg.scale;
    }}
}}"
    );
    let c = cfg(&src);
    // Binding `2.0` in `y = ...` to `Cfg.scale` is rejected with a message containing `message`.
    let bind_rejected = |src: &str, message: &str| {
        rejected_at(
            src,
            "y =",
            |s, at| s.bind_config(at, &f32_lit(2.0), &c, 0),
            "bind_config",
            message,
        )
    };
    let e = bind_rejected(
        &src,
        "Cfg.scale is read after the new write before being overwritten",
    );
    assert!(0 <= cex(&e, "i") && cex(&e, "i") < cex(&e, "n"), "{e}");

    // ... or before it, at a later iteration.
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {{
    for i in 0..n {{
        z[i] = Cfg.scale;
        y[i] = x[i] * 2.0;
    }}
}}"
    );
    let e = bind_rejected(&src, "read at a later iteration");
    assert!(cex(&e, "i") < cex(&e, "i'"), "{e}");
    assert!(cex(&e, "i'") < cex(&e, "n"), "{e}");

    // ... or by the statement itself.
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = x[i] * 2.0 + Cfg.scale;
    }}
}}"
    );
    bind_rejected(&src, "Cfg.scale is read after the new write");

    // A read under a condition that cannot hold after the statement is no obstacle.
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = x[i] * 2.0;
        if i >= n {{
            z[i - n] = Cfg.scale;
        }}
    }}
}}"
    );
    let mut s = sched(&src);
    s.bind_config(&s.find("y =").unwrap(), &f32_lit(2.0), &c, 0)
        .unwrap();
    same_for_n(&s, &[1, 3]);
}

#[test]
fn write_config_writes_a_field_after_a_statement() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = x[i] * 2.0;
    }}
    x[0] = 1.0;
}}"
    );
    let c = cfg(&src);
    let mut s = sched(&src);
    let w = s.find("x =").unwrap();
    let n = arg_of(&s, "n");
    let at = s
        .write_config(&s.find("for i").unwrap(), &c, 1, &(&n - 1))
        .unwrap();
    assert_eq!(at.path.to_string(), "[0]");
    assert_eq!(s.resolve(&w).unwrap().to_string(), "[2]");
    shows(&s, &["    }\n    Cfg.k = n - 1;\n    x[0] = 1.0;"]);
    assert_eq!(polluted(&s), vec!["Cfg.k"]);
    s.write_config(&w, &c, 0, &f32_lit(0.5)).unwrap();
    shows(&s, &["x[0] = 1.0;\n    Cfg.scale = 0.5;\n}"]);
    assert_eq!(polluted(&s), vec!["Cfg.scale"]);
    same_for_n(&s, &[1, 4]);

    // The loop variable is not in scope after the loop; a buffer read is not allowed.
    let i = var_of(&s, "for i");
    rejected(
        s.write_config(&s.find("for i").unwrap(), &c, 1, &i),
        "write_config",
        "uses 'i', which is not in scope after the statement",
    );
    let x = s.proc().arg("x").unwrap().sym.clone();
    rejected(
        s.write_config(
            &s.find("for i").unwrap(),
            &c,
            0,
            &Expr::read(&x, DType::F32, vec![Expr::int(0)]),
        ),
        "write_config",
        "reads a buffer",
    );
}

#[test]
fn write_config_rejects_a_write_before_a_read_of_the_field() {
    let src = format!(
        "{CFG}proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {{
    x[0] = 1.0;
    for i in 0..n {{
        if i == n - 1 {{
            y[i] = Cfg.scale;
        }}
    }}
}}"
    );
    let c = cfg(&src);
    let e = rejected_at(
        &src,
        "x =",
        |s, at| s.write_config(at, &c, 0, &f32_lit(2.0)),
        "write_config",
        "Cfg.scale is read after the new write before being overwritten",
    );
    assert_eq!(cex(&e, "i"), cex(&e, "n") - 1, "{e}");
    assert_eq!(e.stmts.len(), 2);

    // In a loop, the write at the end of one iteration reaches the read at the start of the
    // next.
    let src = format!(
        "{CFG}proc p(n: size, y: f32[n] @ DRAM) {{
    for i in 0..n {{
        y[i] = Cfg.scale;
    }}
}}"
    );
    let e = rejected_at(
        &src,
        "y =",
        |s, at| s.write_config(at, &c, 0, &f32_lit(2.0)),
        "write_config",
        "read at a later iteration",
    );
    assert!(cex(&e, "i") < cex(&e, "i'"), "{e}");
    // After the loop it is fine.
    let mut s = sched(&src);
    s.write_config(&s.find("for i").unwrap(), &c, 0, &f32_lit(2.0))
        .unwrap();
    same_for_n(&s, &[1, 2]);
}

// ----- text schedules -----

fn run_schedule(src: &str, name: &str) -> Result<weft_sched::Schedule, weft_ir::Diagnostic> {
    let m = module_of(src);
    let decl = m.schedules.iter().find(|d| d.name == name).unwrap();
    let base = m.proc(&decl.base).unwrap().clone();
    let (p, s) =
        weft_sched::script::apply_in(decl, base, &weft_syntax::std_memory, &|_| None, |_, _| {})?;
    weft_check::check_procs(std::slice::from_ref(&p)).unwrap_or_else(|e| panic!("{e:?}"));
    Ok(s)
}

#[test]
fn text_schedules_reach_every_new_primitive() {
    let src = "config Cfg { scale: f32, unused: index }
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t1: f32[8] @ DRAM_STACK;
    for i in 0..n {
        alloc s: f32 @ DRAM_STACK;
        s = x[i] * 3.0;
        y[i] = s + 1.0;
    }
    alloc u: f32[8] @ DRAM_STACK;
    for i in 0..n {
        for j in 0..8 {
            u[j] = x[i] * 2.0;
        }
        y[i] = u[i % 8] + u[7 - i % 8];
    }
}
schedule q = p {
    inline_assign(\"s =\");
    sink_alloc(\"alloc u\");
    reuse_buffer(\"alloc u\", t1);
    divide_dim(\"alloc t1\", 0, 4);
    bind_config(\"t1 =\", x[i], Cfg.scale);
    write_config(\"for i #1\", Cfg.unused, n - 1);
}";
    let s = run_schedule(src, "q").unwrap();
    assert_eq!(s.steps().len(), 6);
    shows(
        &s,
        &[
            "y[i] = x[i] * 3.0 + 1.0;",
            "alloc t1: f32[2, 4] @ DRAM_STACK;",
            "Cfg.scale = x[i];\n            t1[j / 4, j % 4] = Cfg.scale * 2.0;",
            "y[i] = t1[i % 8 / 4, i % 8 % 4] + t1[(7 - i % 8) / 4, (7 - i % 8) % 4];",
            "Cfg.unused = n - 1;\n}",
        ],
    );
    lacks(&s, &["alloc u", "s = "]);
    same_for_n(&s, &[1, 3, 9]);
}

#[test]
fn text_schedules_report_config_errors_at_the_step() {
    let src = "config Cfg { scale: f32 }
proc p(n: size, x: f32[n] @ DRAM) {
    x[0] = 1.0;
    x[n - 1] = Cfg.scale;
}
schedule q = p {
    write_config(\"x =\", Cfg.scale, 2.0);
}
";
    let d = run_schedule(src, "q").err().unwrap();
    assert!(
        d.message
            .contains("write_config: Cfg.scale is read after the new write"),
        "{}",
        d.message
    );
    // Config fields are resolved by the parser, at the argument.
    for (field, message) in [
        ("Other.scale", "unknown config `Other`"),
        ("Cfg.speed", "config `Cfg` has no field `speed`"),
    ] {
        let bad = format!("{src}schedule r = p {{\n    write_config(\"x =\", {field}, 2.0);\n}}\n");
        let d = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "c.weft", &bad)
            .unwrap_err();
        assert!(d[0].message.contains(message), "{:?}", d[0]);
        let at = &bad[d[0].span.lo as usize..d[0].span.hi as usize];
        assert!(field.contains(at), "{at}");
    }
}
