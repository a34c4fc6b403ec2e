//! The primitives added after the first set (add_guard, lift_if, specialize, delete_pass,
//! insert_pass, rename, bind_expr, lift_alloc, set_memory, set_precision, expand_dim,
//! inline_call): each accepted where
//! it must be, with results compared against the original on the reference interpreter, and
//! rejected where it must be, with the message and counterexample the user sees.

mod common;

use common::{
    arg_of, cex, module_of, rejected, rejected_at, rejected_at_reading_uninit, same_for_n,
    same_results, sched, shows, stack, text, var_of,
};
use std::sync::Arc;
use weft_ir::{BinOp, DType, Expr, StmtKind, Sym};
use weft_sched::Schedule;

fn dram() -> Arc<weft_ir::Memory> {
    weft_syntax::std_memory("DRAM").unwrap()
}

fn buf_sym(s: &Schedule, name: &str) -> Sym {
    s.proc().arg(name).unwrap().sym.clone()
}

// ----- add_guard -----

const SCALE: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] * 2.0;
    }
}";

#[test]
fn add_guard_wraps_a_proved_condition_and_rejects_an_unproved_one() {
    let mut s = sched(SCALE);
    let w = s.find("y =").unwrap();
    let (i, n) = (var_of(&s, "for i"), arg_of(&s, "n"));
    let e = rejected(
        s.add_guard(&w, &i.clone().lt(&n - 1)),
        "add_guard",
        "not proved to hold",
    );
    assert_eq!(cex(&e, "i"), cex(&e, "n") - 1, "{e}");
    rejected(
        s.add_guard(&w, &(&i + 1)),
        "add_guard",
        "not a control condition",
    );

    let c = s.add_guard(&w, &i.clone().lt(n)).unwrap();
    assert!(matches!(s.stmt(&c).unwrap().kind, StmtKind::If { .. }));
    shows(&s, &["if i < n {"]);
    // The cursor on the write now designates the `if`, with the write inside it.
    assert_eq!(s.resolve(&w), Some(c.path.clone()));
    let inner = s.body(&w, 0, 0).unwrap();
    assert!(matches!(
        s.stmt(&inner).unwrap().kind,
        StmtKind::Assign { .. }
    ));
    same_results(&s, &[("n", 5)]);
}

// ----- lift_if -----

#[test]
fn lift_if_moves_an_invariant_condition_out_and_rejects_a_dependent_one() {
    let src = "proc p(n: size, m: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        if m > 2 {
            y[i] = x[i] * 2.0;
        } else {
            y[i] = x[i] + 1.0;
        }
    }
    for j in 0..n {
        if m < 4 {
            x[j] = 0.0;
        }
    }
}";
    let mut s = sched(src);
    let w = s.find("y = #1").unwrap();
    let c = s.lift_if(&s.find("for i").unwrap()).unwrap();
    assert!(matches!(s.stmt(&c).unwrap().kind, StmtKind::If { .. }));
    // The else branch's write is now in the else branch's loop.
    assert_eq!(s.resolve(&w).unwrap().to_string(), "[0/else.0/0]");
    s.lift_if(&s.find("for j").unwrap()).unwrap();
    shows(&s, &["if m < 4 {\n        for j in 0..n {"]);
    for m in [1, 3, 5] {
        same_results(&s, &[("n", 4), ("m", m)]);
    }

    let dep = "proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        if i < 2 {
            x[i] = 0.0;
        }
    }
}";
    rejected_at(
        dep,
        "for i",
        Schedule::lift_if,
        "lift_if",
        "depends on the loop index 'i'",
    );
    rejected_at(
        SCALE,
        "for i",
        Schedule::lift_if,
        "lift_if",
        "is not an 'if'",
    );
}

#[test]
fn lift_if_rejects_a_condition_on_a_config_field_the_body_writes() {
    let src = "config Cfg { k: index }
proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        if Cfg.k == 0 {
            Cfg.k = 1;
            x[i] = 2.0;
        }
    }
}";
    rejected_at(
        src,
        "for i",
        Schedule::lift_if,
        "lift_if",
        "written by the loop body",
    );
}

// ----- specialize -----

#[test]
fn specialize_duplicates_a_loop_with_fresh_binders() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[4] @ DRAM_STACK;
        for j in 0..4 {
            t[j] = x[i] * 2.0;
        }
        y[i] = t[1] + t[2];
    }
}";
    let mut s = sched(src);
    let n = arg_of(&s, "n");
    let c = s
        .specialize(&s.find("for i").unwrap(), &n.clone().gt(Expr::int(2)))
        .unwrap();
    let StmtKind::If {
        then_body,
        else_body,
        ..
    } = &s.stmt(&c).unwrap().kind
    else {
        panic!("not an if")
    };
    let bound = |b: &weft_ir::Stmt| match &b.kind {
        StmtKind::For { var, body, .. } => match &body[0].kind {
            StmtKind::Alloc { buf, .. } => (var.clone(), buf.clone()),
            _ => panic!(),
        },
        _ => panic!(),
    };
    let (v1, t1) = bound(&then_body[0]);
    let (v2, t2) = bound(&else_body[0]);
    assert_ne!(v1, v2);
    assert_ne!(t1, t2);
    same_for_n(&s, &[1, 2, 3, 6]);

    let mut s = sched(src);
    rejected(
        s.specialize(&s.find("for i").unwrap(), &n),
        "specialize",
        "not a control condition",
    );
    rejected(
        s.specialize(&s.find("alloc t").unwrap(), &n.clone().gt(Expr::int(2))),
        "specialize",
        "declares or frees 't'",
    );
    rejected(
        s.add_guard(&s.find("alloc t").unwrap(), &n.clone().gt(Expr::int(0))),
        "add_guard",
        "declares or frees 't'",
    );
    // A loop variable that is not in scope at the statement.
    let j = var_of(&s, "for j");
    rejected(
        s.specialize(&s.find("for i").unwrap(), &j.lt(Expr::int(2))),
        "specialize",
        "not a quasi-affine control condition",
    );
}

// ----- delete_pass -----

#[test]
fn delete_pass_removes_empty_statements_only() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    pass;
    for j in 0..n {
        pass;
        if j < 2 {
            pass;
        }
    }
    x[0] = 1.0;
}";
    let mut s = sched(src);
    let w = s.find("x =").unwrap();
    rejected(s.delete_pass(&w), "delete_pass", "is not 'pass'");
    s.delete_pass(&s.find("pass").unwrap()).unwrap();
    assert_eq!(s.resolve(&w).unwrap().to_string(), "[1]");
    s.delete_pass(&s.find("for j").unwrap()).unwrap();
    assert_eq!(s.resolve(&w).unwrap().to_string(), "[0]");
    assert_eq!(s.proc().body.len(), 1);
    same_results(&s, &[("n", 3)]);
}

// ----- insert_pass -----

/// `insert_pass` puts a `pass` before the statement it names, at the top level and inside a
/// loop, in its text form too; the cursor it returns stays on that statement, `delete_pass`
/// takes the `pass` away again, and every result computes what the original did.
#[test]
fn insert_pass_adds_an_empty_statement_before_the_one_named() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    for j in 0..n {
        x[j] = 2.0;
    }
    x[0] = 1.0;
}";
    let mut s = sched(src);
    let w = s.find("x = #1").unwrap();
    let moved = s.insert_pass(&w).unwrap();
    assert_eq!(s.resolve(&moved).unwrap().to_string(), "[2]");
    let inner = s.insert_pass(&s.find("x =").unwrap()).unwrap();
    assert_eq!(s.resolve(&inner).unwrap().to_string(), "[0/1]");
    let t = text(&s);
    assert!(
        t.contains("for j in 0..n {\n        pass;\n        x[j] = 2.0;\n    }\n    pass;\n    x[0] = 1.0;"),
        "{t}"
    );
    same_results(&s, &[("n", 3)]);
    s.delete_pass(&s.find("pass").unwrap()).unwrap();
    assert_eq!(s.proc().body.len(), 3);
    same_results(&s, &[("n", 1)]);
    // The text form.
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    insert_pass(\"x = #1\");\n}}\n"
    ));
    r.unwrap();
    assert!(
        text(&s).contains("    pass;\n    x[0] = 1.0;"),
        "{}",
        text(&s)
    );
}

// ----- rename -----

#[test]
fn rename_changes_only_the_name() {
    let mut s = sched(SCALE);
    let w = s.find("y =").unwrap();
    s.rename("p_fast").unwrap();
    assert_eq!(s.proc().name, "p_fast");
    assert_eq!(s.resolve(&w), Some(w.path.clone()));
    same_results(&s, &[("n", 4)]);
    let e = s.rename("9lives").unwrap_err();
    assert_eq!(e.primitive, "rename");
    assert!(e.message.contains("not a valid proc name"), "{e}");
}

// ----- bind_expr -----

#[test]
fn bind_expr_binds_every_occurrence_and_rejects_an_absent_expression() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] += x[i] * 2.0 + x[i] * 2.0 * x[i];
    }
}";
    let mut s = sched(src);
    let w = s.find("y +=").unwrap();
    let i = var_of(&s, "for i");
    let x = buf_sym(&s, "x");
    let pat = Expr::binary(
        BinOp::Mul,
        Expr::read(&x, DType::F32, vec![i.clone()]),
        Expr::float(2.0),
    );
    let absent = Expr::binary(
        BinOp::Mul,
        Expr::read(&x, DType::F32, vec![i]),
        Expr::float(3.0),
    );
    rejected(
        s.bind_expr(&w, &absent, "e", stack()),
        "bind_expr",
        "does not occur",
    );
    rejected(
        s.bind_expr(&s.find("for i").unwrap(), &pat, "e", stack()),
        "bind_expr",
        "not an assignment or a reduction",
    );
    let c = s.bind_expr(&w, &pat, "e", stack()).unwrap();
    assert_eq!(c, s.resolve(&w).map(|p| s.cursor(p)).unwrap());
    shows(
        &s,
        &[
            // An allocation and its assignment from one step print as a scalar `let`.
            "let e: f32 @ DRAM_STACK = x[i] * 2.0;",
            "y[i] += e + e * x[i];",
        ],
    );
    same_results(&s, &[("n", 5)]);
}

// ----- lift_alloc -----

const SCRATCH: &str = "proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    for i in 0..n {
        y[i, 0] = 0.0;
        alloc t: f32[4] @ DRAM_STACK;
        for j in 0..4 {
            t[j] = x[i, j] * 2.0;
        }
        for k in 0..4 {
            y[i, k] += t[k] + t[3 - k];
        }
        free t;
    }
}";

#[test]
fn lift_alloc_lifts_a_scratch_buffer_that_every_iteration_writes_first() {
    let mut s = sched(SCRATCH);
    let red = s.find("y +=").unwrap();
    let a = s.find("alloc t").unwrap();
    let c = s.lift_alloc(&a).unwrap();
    assert_eq!(s.resolve(&a), Some(c.path.clone()));
    assert_eq!(c.path.to_string(), "[0]");
    assert_eq!(s.resolve(&red).unwrap().to_string(), "[1/2/0]");
    let t = text(&s);
    assert!(t.starts_with("proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {\n    alloc t: f32[4] @ DRAM_STACK;\n    for i in 0..n {"), "{t}");
    shows(&s, &["    }\n    free t;\n}"]);
    same_for_n(&s, &[1, 3, 6]);
}

/// `lift_alloc` of `alloc t` in `src` is rejected with a message containing `message`.
fn lift_alloc_rejected(src: &str, message: &str) -> weft_sched::SchedError {
    rejected_at_reading_uninit(src, "alloc t", Schedule::lift_alloc, "lift_alloc", message)
}

#[test]
fn lift_alloc_rejects_a_size_that_depends_on_the_index() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[i + 1] @ DRAM;
        t[i] = x[i];
        x[i] = t[i] * 2.0;
    }
}";
    let e = lift_alloc_rejected(src, "depends on the loop index 'i'");
    assert!(e.message.contains("the size i + 1 of 't'"), "{e}");
}

#[test]
fn lift_alloc_rejects_a_read_of_a_value_from_an_earlier_iteration() {
    // In the original, `t[0]` is uninitialised at every iteration but the first.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[n] @ DRAM;
        t[i] = x[i];
        y[i] = t[0];
    }
}";
    let e = lift_alloc_rejected(src, "that an earlier iteration wrote");
    assert_eq!(cex(&e, "i'"), 0, "{e}");
    assert!(cex(&e, "i") > 0, "{e}");
    assert_eq!(e.stmts.len(), 2);

    // A write under a condition does not cover the read: odd iterations read what the last
    // even iteration wrote.
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[4] @ DRAM_STACK;
        if i % 2 == 0 {
            t[0] = x[i];
        }
        y[i] = t[0];
    }
}";
    let e = lift_alloc_rejected(src, "that an earlier iteration wrote");
    assert!(
        cex(&e, "i'") < cex(&e, "i") && cex(&e, "i'") % 2 == 0,
        "{e}"
    );

    // Not in a loop.
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM_STACK;
    t[0] = 1.0;
    x[0] = t[0];
}";
    lift_alloc_rejected(src, "not directly in a loop body");
}

#[test]
fn lift_alloc_accepts_reads_of_cells_no_earlier_iteration_writes() {
    // Each iteration uses its own cell of `t` (after expand_dim, Exo's usual pairing).
    let mut s = sched(SCRATCH);
    let a = s.find("alloc t").unwrap();
    let (i, n) = (var_of(&s, "for i"), arg_of(&s, "n"));
    let e = rejected(
        s.expand_dim(&a, &n, &(&i + 1)),
        "expand_dim",
        "may lie outside 0..n",
    );
    assert_eq!(cex(&e, "i"), cex(&e, "n") - 1, "{e}");
    // `n` rows do not fit the stack's 64 KiB for every `n`.
    rejected(
        s.expand_dim(&a, &n, &i),
        "expand_dim",
        "may not fit memory DRAM_STACK",
    );
    s.set_memory(&a, dram()).unwrap();
    s.expand_dim(&a, &n, &i).unwrap();
    shows(
        &s,
        &[
            "alloc t: f32[n, 4] @ DRAM;",
            "t[i, j] = x[i, j] * 2.0;",
            "y[i, k] += t[i, k] + t[i, 3 - k];",
        ],
    );
    same_results(&s, &[("n", 3)]);
    s.lift_alloc(&a).unwrap();
    same_for_n(&s, &[1, 4]);
}

// ----- set_memory -----

const VEC: &str = "memory VEC {
    header \"#include <immintrin.h>\"
    alloc \"__m256 {name}[{size} / 8];\"
    free \"\"
    access \"{name}[({offset}) / 8]\"
    addressable false
    last_dim 8
}
";

#[test]
fn set_memory_moves_an_allocation_and_keeps_the_memory_rules() {
    let mut s = sched(SCRATCH);
    let a = s.find("alloc t").unwrap();
    s.set_memory(&a, dram()).unwrap();
    shows(&s, &["alloc t: f32[4] @ DRAM;"]);
    same_results(&s, &[("n", 3)]);

    let vec = module_of(VEC).memory("VEC").unwrap().clone();
    // `t` has innermost extent 4, VEC requires 8.
    rejected(
        s.set_memory(&a, vec.clone()),
        "set_memory",
        "to be the constant 8",
    );
    let src8 = "proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[8] @ DRAM_STACK;
    t[0] = 1.0;
    x[0] = t[0];
}";
    rejected_at(
        src8,
        "alloc t",
        |s, c| s.set_memory(c, vec),
        "set_memory",
        "is not addressable",
    );
}

// ----- set_precision -----

#[test]
fn set_precision_casts_at_every_use() {
    let src = "proc p(n: size, x: i32[n] @ DRAM, y: i32[n] @ DRAM) {
    alloc acc: i32[n] @ DRAM;
    for i in 0..n {
        acc[i] = x[i] * 3;
        acc[i] += x[i] * x[i];
        y[i] = acc[i] - 1;
    }
}";
    let mut s = sched(src);
    let a = s.find("alloc acc").unwrap();
    s.set_precision(&a, DType::I64).unwrap();
    shows(
        &s,
        &[
            "alloc acc: i64[n] @ DRAM;",
            "acc[i] = i64(x[i] * 3);",
            "acc[i] += i64(x[i] * x[i]);",
            "y[i] = i32(acc[i]) - 1;",
        ],
    );
    // Integer arithmetic wraps, so widening and narrowing back gives the same bits.
    same_results(&s, &[("n", 6)]);
    rejected(
        s.set_precision(&a, DType::Bool),
        "set_precision",
        "is reduced into",
    );
}

#[test]
fn set_precision_rejects_a_buffer_passed_to_a_call() {
    let src = "proc h(m: size, a: [f32][m] @ DRAM) {
    a[0] = 1.0;
}
proc p(n: size, x: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    h(4, t);
    x[0] = t[0];
}";
    rejected_at(
        src,
        "alloc t",
        |s, c| s.set_precision(c, DType::F64),
        "set_precision",
        "passed to a call",
    );
}

// ----- expand_dim -----

#[test]
fn expand_dim_indexes_every_use_including_windows_and_calls() {
    let src = "proc h(m: size, a: [f32][m] @ DRAM, b: [f32][m] @ DRAM) {
    for k in 0..m {
        b[k] = a[k] * 2.0;
    }
}
proc p(n: size, x: f32[n, 4] @ DRAM, y: f32[n, 4] @ DRAM) {
    for i in 0..n {
        alloc t: f32[4] @ DRAM;
        h(4, x[i, 0:4], t);
        let w = t[1:4];
        for k in 0..3 {
            y[i, k] = w[k] + t[0];
        }
    }
}";
    let mut s = sched(src);
    let a = s.find("alloc t").unwrap();
    let (i, n) = (var_of(&s, "for i"), arg_of(&s, "n"));
    // An index that is not in scope at the allocation.
    let k = var_of(&s, "for k");
    rejected(s.expand_dim(&a, &n, &k), "expand_dim", "not a quasi-affine");
    rejected(
        s.expand_dim(&a, &(&n - &n), &i),
        "expand_dim",
        "may not be positive",
    );
    s.expand_dim(&a, &n, &i).unwrap();
    shows(&s, &["h(4, x[i, 0:4], t[i, 0:4]);", "let w = t[i, 1:4];"]);
    same_for_n(&s, &[1, 3]);
}

// ----- inline_call -----

#[test]
fn inline_call_substitutes_arguments_through_windows() {
    let src = "proc h(m: size, a: [f32][m] @ DRAM, b: [f32][m] @ DRAM) {
    assert m >= 2;
    for k in 0..m {
        if stride(b, 0) == 1 {
            b[k] += a[k] * 2.0;
        } else {
            b[k] = a[k];
        }
    }
    let v = a[1:m];
    b[0] = v[0];
}
proc p(n: size, x: f32[n, 8] @ DRAM, y: f32[8, n] @ DRAM, z: f32[8] @ DRAM, u: f32[8] @ DRAM) {
    for i in 0..n {
        h(8, x[i, 0:8], y[0:8, i]);
        h(6, x[i, 2:8], z[1:7]);
    }
    h(8, u, z);
}";
    let mut s = sched(src);
    s.inline_call(&s.find("call h #2").unwrap()).unwrap();
    s.inline_call(&s.find("call h #1").unwrap()).unwrap();
    s.inline_call(&s.find("call h").unwrap()).unwrap();
    let t = text(&s);
    assert!(!t.contains("h("), "{t}");
    shows(
        &s,
        &[
            "if stride(y, 0) == 1 {",
            "y[k, i] += x[i, k] * 2.0;",
            "z[1 + k] += x[i, 2 + k] * 2.0;",
            "let v_1 = x[i, 2 + 1:2 + 6];",
            "let v = x[i, 1:8];",
        ],
    );
    same_for_n(&s, &[1, 4]);
}

#[test]
fn inline_call_rejects_instructions_and_config_hazards() {
    let src = format!(
        "{VEC}instr load8(dst: [f32][8] @ VEC, src: [f32][8] @ DRAM) \"{{dst_data}} = _mm256_loadu_ps(&{{src_data}});\" {{
    for i in 0..8 {{
        dst[i] = src[i];
    }}
}}
proc p(n: size, x: f32[n, 8] @ DRAM) {{
    alloc v: f32[8] @ VEC;
    for i in 0..n {{
        load8(v, x[i, 0:8]);
    }}
}}"
    );
    rejected_at(
        &src,
        "call load8",
        Schedule::inline_call,
        "inline_call",
        "is an instruction",
    );

    let src = "config Cfg { k: index }
proc h(m: index, x: f32[8] @ DRAM) {
    Cfg.k = 0;
    if m >= 0 and m < 8 {
        x[m] = 1.0;
    }
}
proc p(x: f32[8] @ DRAM) {
    h(Cfg.k, x);
}";
    rejected_at(
        src,
        "call h",
        Schedule::inline_call,
        "inline_call",
        "which 'h' writes",
    );
    rejected_at(
        SCALE,
        "for i",
        Schedule::inline_call,
        "inline_call",
        "expected a call",
    );
}

// ----- fission of an `if`, and with a lift count -----

#[test]
fn fission_splits_ifs_and_goes_up_as_many_levels_as_asked() {
    let src = "proc p(n: size, x: f32[n, 16] @ DRAM, y: f32[n, 16] @ DRAM) {
    for i in 0..n {
        for j in 0..16 {
            if j < n {
                x[i, j] = 1.0;
                y[i, j] = x[i, j] + 2.0;
            }
        }
    }
}";
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    fission(\"x = #0\", 3);\n}}\n"
    ));
    r.unwrap();
    shows(
        &s,
        &[
            "    for i in 0..n {\n        for j in 0..16 {\n            if j < n {\n                x[i, j] = 1.0;\n            }\n        }\n    }\n    for i in 0..n {\n        for j in 0..16 {\n            if j < n {\n                y[i, j] = x[i, j] + 2.0;",
        ],
    );
    for n in [1, 3, 20] {
        same_results(&s, &[("n", n)]);
    }
    // One level splits the `if` only.
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    fission(\"x = #0\");\n}}\n"
    ));
    r.unwrap();
    shows(&s, &["            if j < n {\n                x[i, j] = 1.0;\n            }\n            if j < n {\n                y[i, j]"]);
    same_results(&s, &[("n", 5)]);
    // A lift count of 0 is refused.
    let (_, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    fission(\"x = #0\", 0);\n}}\n"
    ));
    assert!(r.unwrap_err().to_string().contains("lift count"));
}

#[test]
fn fission_of_an_if_is_rejected_when_the_first_part_writes_what_the_condition_reads() {
    let src = "config Cfg { m: index }
proc p(n: size, x: f32[n] @ DRAM) {
    Cfg.m = 0;
    if Cfg.m < 1 {
        Cfg.m = 5;
        x[0] = 1.0;
    }
}
schedule q = p {
    fission(\"Cfg.m = #1\");
}
";
    let (_, r) = common::scheduled(src);
    let e = r.unwrap_err();
    assert_eq!(e.primitive, "fission");
    assert!(e.message.contains("the condition"), "{e}");
}

// ----- lift_alloc out of an `if` -----

#[test]
fn lift_alloc_moves_an_allocation_out_of_a_branch() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    if n > 3 {
        alloc t: f32[4] @ DRAM_STACK;
        for i in 0..4 {
            t[i] = x[i];
        }
        for i in 0..4 {
            x[i] = t[3 - i];
        }
    }
}";
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    lift_alloc(\"alloc t\");\n}}\n"
    ));
    r.unwrap();
    shows(
        &s,
        &["    alloc t: f32[4] @ DRAM_STACK;\n    if n > 3 {\n        for i in 0..4"],
    );
    for n in [1, 4, 9] {
        same_results(&s, &[("n", n)]);
    }
    // The rejection of lifting `t` out of the branch of `src`.
    let lifted = |src: &str| {
        let (_, r) = common::scheduled(&format!(
            "{src}\nschedule q = p {{\n    lift_alloc(\"alloc t\");\n}}\n"
        ));
        r.unwrap_err()
    };
    // `n - 3` cells in memory `mem`, allocated where `n > 3`.
    let partial = |mem: &str| {
        format!(
            "proc p(n: size, x: f32[n] @ DRAM) {{
    assert n < 1000;
    if n > 3 {{
        alloc t: f32[n - 3] @ {mem};
        for i in 0..n - 3 {{
            t[i] = x[i];
        }}
        for i in 0..n - 3 {{
            x[i] = t[i] * 2.0;
        }}
    }}
}}"
        )
    };
    // A heap allocation: lifted, it could fail where the branch is not taken.
    let e = lifted(&partial("DRAM"));
    assert!(e.message.contains("no capacity"), "{e}");
    // A size that reads a config field, which may be unwritten where the branch is not taken.
    let e = lifted(
        "config Cfg { n: size }
proc p(m: size, x: f32[4] @ DRAM) {
    if m > 3 {
        alloc t: f32[min(max(Cfg.n, 4), 64)] @ DRAM_STACK;
        t[0] = x[0];
        x[1] = t[0];
    }
}",
    );
    assert!(e.message.contains("reads a config field"), "{e}");
    // A size that is positive only where the branch is taken.
    let e = lifted(&partial("DRAM_STACK"));
    assert!(e.message.contains("where the branch is not taken"), "{e}");
    assert!(cex(&e, "n") <= 3, "{e}");
}

// ----- simplify with loop ranges -----

#[test]
fn simplify_folds_quotients_and_remainders_that_loop_ranges_decide() {
    let src = "proc p(x: f32[64] @ DRAM) {
    alloc t: f32[64] @ DRAM_STACK;
    for j in 0..64 {
        t[j] = x[j];
    }
    for j in 0..64 {
        x[j] = t[j] * 2.0;
    }
}";
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    divide_dim(\"alloc t\", 0, 16);\n    split(\"for j #0\", 16, v, l, perfect);\n    split(\"for j #0\", 32, w, m, perfect);\n    simplify();\n}}\n"
    ));
    r.unwrap();
    // 16 * v + l with l in 0..16: the quotient is v, the remainder l.
    shows(&s, &["t[v, l] = x[16 * v + l];"]);
    // 32 * w + m with m in 0..32: the remainder m may reach 16, so nothing folds.
    shows(&s, &["t[(32 * w + m) / 16, (32 * w + m) % 16]"]);
    same_results(&s, &[]);
    // A remainder in [16, 32) folds with its quotient one more: (16 * v + l + 16) / 16 = v + 1.
    let src = "proc p(x: f32[80] @ DRAM) {
    for j in 0..64 {
        x[(j + 16) / 16 + 64] = x[(j + 16) % 16];
    }
}";
    let (s, r) = common::scheduled(&format!(
        "{src}\nschedule q = p {{\n    split(j, 16, v, l, perfect);\n    simplify();\n}}\n"
    ));
    r.unwrap();
    shows(&s, &["x[v + 65] = x[l];"]);
    same_results(&s, &[]);
}

/// Staging evaluates the buffer's extents where it stages (for the region's proof and the guards):
/// an extent that reads a config field, which may have changed since the allocation, is refused.
#[test]
fn stage_mem_refuses_guards_on_extents_that_read_config_fields() {
    let src = "config Cfg { n: size }
proc p(x: f32[8] @ DRAM) {
    Cfg.n = 1;
    alloc t: f32[max(Cfg.n, 4)] @ DRAM;
    for i in 0..4 {
        t[i] = x[i];
    }
    Cfg.n = 8;
    for i in 0..4 {
        x[i] = t[i] * 2.0;
    }
}
schedule q = p {
    stage_mem(\"for i #1\", t[0:6], tt);
}
";
    let (_, r) = common::scheduled(src);
    let e = r.unwrap_err();
    assert_eq!(e.primitive, "stage_mem");
    assert!(e.message.contains("reads a config field"), "{e}");
    // Inside the buffer as well: the extent here is 8, the buffer's 4.
    let inside = src.replace("t[0:6]", "t[0:4]");
    let (_, r) = common::scheduled(&inside);
    assert!(r.unwrap_err().message.contains("reads a config field"));
}

// ----- stage_mem, accumulate mode -----

/// In accumulate mode the tile starts at zero and is added into the buffer after the block:
/// integer sums are the same (wrapping addition is associative), on a tile that may leave the
/// buffer too (the add-back guarded); a block that reads or assigns the buffer is refused.
#[test]
fn stage_mem_accumulate_sums_apart_and_adds_back() {
    let src = "proc p(n: size, m: size, a: i32[n, m] @ DRAM, x: i32[m] @ DRAM, y: i32[n] @ DRAM) {
    for i in 0..n {
        for k in 0..m {
            y[i] += a[i, k] * x[k];
        }
    }
}
schedule q = p {
    stage_mem(k, y[i:i + 1], yt, DRAM_STACK, accumulate);
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    common::shows(&s, &["yt[yt_0] = 0;", "y[i + yt_0] += yt[yt_0];"]);
    common::lacks(&s, &["= y[i"]);
    for (n, m) in [(1, 1), (3, 2), (5, 7)] {
        common::same_results(&s, &[("n", n), ("m", m)]);
    }
    // A tile of 4 rows that may leave y: the add-back is guarded.
    let tiled = src.replace(
        "    stage_mem(k, y[i:i + 1], yt, DRAM_STACK, accumulate);",
        "    split(i, 4, io, ii, guard);\n    stage_mem(ii, y[4 * io:4 * io + 4], yt, DRAM_STACK, accumulate);",
    );
    let (s, r) = common::scheduled(&tiled);
    r.unwrap();
    common::shows(&s, &["y[4 * io + yt_0] += yt[yt_0];"]);
    for n in [1, 4, 6, 9] {
        common::same_results(&s, &[("n", n), ("m", 3)]);
    }
    // Reads and plain writes of the buffer are refused.
    for (body, what) in [
        ("y[i] = y[i] + a[i, k] * x[k];", "assigns"),
        ("y[i] += a[i, k] * y[i];", "reads"),
    ] {
        let bad = src.replace("y[i] += a[i, k] * x[k];", body);
        let (_, r) = common::scheduled(&bad);
        let e = common::rejected(r, "stage_mem", "accumulate mode");
        assert!(e.to_string().contains(what), "{e}");
    }
}

// ----- inline_window -----

/// `inline_window` translates every use of a window's name (reads, reductions, windows of it,
/// call arguments) through the window, in either order of two nested windows, with the same
/// results; coordinates that read a config field the rest of the block writes are refused.
#[test]
fn inline_window_translates_uses_through_the_window() {
    let src = "proc sum2(x: [f32][2] @ DRAM, out: [f32][1] @ DRAM) {
    out[0] = x[0] + x[1];
}
proc p(n: size, A: f32[n, 8] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        let w = A[i, 2:6];
        y[i] = w[0] + w[3];
        let v = w[1:3];
        y[i] += v[1];
        sum2(v, z[i:i + 1]);
    }
}
schedule q = p {
    inline_window(\"window w\");
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    common::shows(
        &s,
        &[
            "y[i] = A[i, 2 + 0] + A[i, 2 + 3];",
            "let v = A[i, 2 + 1:2 + 3];",
        ],
    );
    common::lacks(&s, &["let w"]);
    for n in [1, 4] {
        common::same_results(&s, &[("n", n)]);
    }
    let both = src.replace(
        "    inline_window(\"window w\");\n",
        "    inline_window(\"window v\");\n    inline_window(\"window w\");\n",
    );
    let (s, r) = common::scheduled(&both);
    r.unwrap();
    common::shows(
        &s,
        &[
            "y[i] += A[i, 2 + (1 + 1)];",
            "sum2(A[i, 2 + 1:2 + 3], z[i:i + 1]);",
        ],
    );
    common::same_results(&s, &[("n", 3)]);

    let config = "config C { k: index }
proc p(A: f32[8] @ DRAM, y: f32[2] @ DRAM) {
    assert C.k >= 0 and C.k < 7;
    let w = A[C.k:C.k + 2];
    C.k = 0;
    y[0] = w[1];
}
schedule q = p {
    inline_window(\"window w\");
}
";
    let (_, r) = common::scheduled(config);
    common::rejected(r, "inline_window", "written by the statements after it");
}

// ----- bind_expr over several statements -----

/// `bind_expr` with a count binds the occurrences in consecutive statements to one scalar
/// computed before the first, where the statements before the last write nothing the expression
/// reads; a statement that writes what it reads is refused with the conflict.
#[test]
fn bind_expr_over_several_statements() {
    let src =
        "proc p(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = a[i] * b[i] + 1.0;
        z[i] += a[i] * b[i];
        y[i] += 2.0 * (a[i] * b[i]);
    }
}
schedule q = p {
    bind_expr(\"y = #0\", a[i] * b[i], ab, DRAM_STACK, 3);
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    common::shows(
        &s,
        &[
            "let ab: f32 @ DRAM_STACK = a[i] * b[i];",
            "y[i] = ab + 1.0;",
            "z[i] += ab;",
            "y[i] += 2.0 * ab;",
        ],
    );
    for n in [1, 5] {
        common::same_results(&s, &[("n", n)]);
    }
    // The second statement writes a cell the expression reads.
    let bad = src.replace("z[i] += a[i] * b[i];", "a[i] += a[i] * b[i];");
    let (_, r) = common::scheduled(&bad);
    common::rejected(r, "bind_expr", "writes a location");
    // A loop among the statements.
    let bad = src.replace(
        "        z[i] += a[i] * b[i];\n",
        "        for j in 0..1 {\n            z[i] += a[i] * b[i];\n        }\n",
    );
    let (_, r) = common::scheduled(&bad);
    common::rejected(r, "bind_expr", "not an assignment or a reduction");
}

/// Review hole: in accumulate mode a float tile started at +0.0, which turned a cell's -0.0 into
/// +0.0 (`-0.0 + 0.0` is `+0.0`), in cells the block never touched too. It starts at -0.0, the
/// identity of addition: every cell keeps its bits.
#[test]
fn stage_mem_accumulate_keeps_negative_zeros() {
    let src = "proc p(a: f32[4] @ DRAM, x: f32[4] @ DRAM) {
    a[0] = -0.0;
    for i in 1..4 {
        a[i] += x[i];
    }
}
schedule q = p {
    stage_mem(\"for i\", a[0:4], t, DRAM_STACK, accumulate);
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    let orig = s.version(0).unwrap();
    for seed in 0..4 {
        let sizes = std::collections::HashMap::new();
        let mut x = weft_interp::random_args(orig, &sizes, seed).unwrap();
        let mut y = x.clone();
        weft_interp::run(orig, &mut x, &mut Default::default()).unwrap();
        weft_interp::run(s.proc(), &mut y, &mut Default::default()).unwrap();
        let bits = |v: &[weft_interp::ArgValue]| -> Vec<String> {
            v.iter().map(|a| format!("{a:?}")).collect()
        };
        assert_eq!(bits(&x), bits(&y), "seed {seed}");
        assert!(bits(&y)[0].contains("-0.0"), "{:?}", bits(&y));
    }
}

// ----- set_window -----

/// `set_window` makes a dense buffer parameter a window: the body is unchanged, so dense
/// arguments give the same results, and the proc now takes strided views (a column of a matrix);
/// refused where the body needs the density (the whole buffer passed to a dense parameter), for
/// a window already, and for a control parameter.
#[test]
fn set_window_makes_a_dense_parameter_a_window() {
    let src = "proc scale(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        x[i] = x[i] * 2.0;
    }
}
schedule q = scale {
    set_window(x);
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    common::shows(&s, &["x: [f32][n] @ DRAM"]);
    for n in [1, 5] {
        common::same_results(&s, &[("n", n)]);
    }
    // The scheduled proc takes a column of a matrix.
    let column = format!(
        "{}proc col(m: size, a: f32[m, 3] @ DRAM) {{\n    scale(m, a[0:m, 1]);\n}}\n",
        weft_ir::print::proc_to_string(s.proc()).replace("proc q(", "proc scale(")
    );
    weft_check::check_module(&common::module_of(&column)).unwrap();

    let dense_callee = "proc dense(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        x[i] = 0.0;
    }
}
proc p(n: size, x: f32[n] @ DRAM) {
    dense(n, x);
}
schedule q = p {
    set_window(x);
}
";
    let (_, r) = common::scheduled(dense_callee);
    common::rejected(r, "set_window", "does not check");
    for (step, why) in [
        ("set_window(n);", "not a buffer"),
        ("set_window(y);", "no parameter"),
    ] {
        let (_, r) = common::scheduled(&src.replace("set_window(x);", step));
        let e = r.expect_err(step);
        assert!(
            e.to_string().contains(why) || e.to_string().contains("set_window"),
            "{e}"
        );
    }
    let (s, r) =
        common::scheduled(&src.replace("set_window(x);", "set_window(x);\n    set_window(x);"));
    let _ = s;
    common::rejected(r, "set_window", "a window already");
}
