//! `add_loop` (accepted only for an idempotent statement and a loop that runs, or any statement
//! and a loop that runs once) and
//! `eliminate_dead_code` (a loop proved never to run, a branch proved never taken).

mod common;

use common::{cex, rejected, same_for_n, sched, shows};
use weft_ir::{Expr, Ty};

const COPY: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    x[0] = y[0] * 2.0;
    x[0] += y[0];
    y[0] = y[0] * 2.0;
}";

fn n_of(s: &weft_sched::Schedule) -> Expr {
    Expr::var(&s.proc().arg("n").unwrap().sym, Ty::Int)
}

#[test]
fn add_loop_wraps_an_idempotent_statement() {
    let mut s = sched(COPY);
    let w = s.find("x =").unwrap();
    let n = n_of(&s);
    let l = s.add_loop(&w, "t", &n).unwrap();
    shows(&s, &["for t in 0..n {", "x[0] = y[0] * 2.0;"]);
    // The returned cursor is the new loop.
    let loop_text = weft_ir::print::stmt_to_string(s.stmt(&l).unwrap());
    assert!(loop_text.starts_with("for t"), "{loop_text}");
    same_for_n(&s, &[1, 4]);
}

#[test]
fn add_loop_rejects_a_reduction_a_self_read_and_a_loop_that_may_not_run() {
    let mut s = sched(COPY);
    let n = n_of(&s);
    let r = s.find("x +=").unwrap();
    rejected(s.add_loop(&r, "t", &n), "add_loop", "reduces into x");
    let y = s.find("y =").unwrap();
    rejected(
        s.add_loop(&y, "t", &n),
        "add_loop",
        "reads a location it writes",
    );
    let w = s.find("x =").unwrap();
    let e = rejected(
        s.add_loop(&w, "t", &(n.clone() - 1)),
        "add_loop",
        "may run zero times",
    );
    assert_eq!(cex(&e, "n"), 1, "{e}");
}

#[test]
fn add_loop_of_one_iteration_wraps_any_statement() {
    // `for t in 0..1` runs a reduction or a self-read exactly once: accepted; `0..2` is not.
    let mut s = sched(COPY);
    let r = s.find("x +=").unwrap();
    s.add_loop(&r, "t", &Expr::int(1)).unwrap();
    let y = s.find("y =").unwrap();
    s.add_loop(&y, "u", &Expr::int(1)).unwrap();
    shows(&s, &["for t in 0..1 {", "for u in 0..1 {"]);
    same_for_n(&s, &[1, 3]);
    let y = s.find("y =").unwrap();
    rejected(
        s.add_loop(&y, "v", &Expr::int(2)),
        "add_loop",
        "reads a location it writes",
    );
    // Review hole: a condition is no count (`0..(0 < 3)` read as one iteration).
    let n = n_of(&s);
    let cond = Expr::lt(Expr::int(0), n);
    rejected(s.add_loop(&y, "v", &cond), "add_loop", "not an integer");
}

const TAILS: &str = "proc p(n: size, x: f32[n, 4] @ DRAM) {
    for i in 0..n {
        for j in 0..4 {
            x[i, j] = x[i, j] * 2.0;
        }
    }
}";

#[test]
fn eliminate_dead_code_removes_a_tile_loop_that_never_runs() {
    let mut s = sched(TAILS);
    let j = s.find("for j").unwrap();
    s.split(&j, 32, "jo", "ji", weft_sched::Tail::Cut).unwrap();
    shows(&s, &["for jo in 0..4 / 32 {"]);
    let jo = s.find("for jo").unwrap();
    s.eliminate_dead_code(&jo).unwrap();
    let t = common::text(&s);
    assert!(!t.contains("for jo"), "{t}");
    same_for_n(&s, &[1, 3]);
    // The loop over i runs when n > 0, which every size is.
    let i = s.find("for i").unwrap();
    let e = rejected(s.eliminate_dead_code(&i), "eliminate_dead_code", "may run");
    assert!(cex(&e, "n") >= 1, "{e}");
}

const BRANCH: &str = "proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        if i < n {
            x[i] = 1.0;
        } else {
            x[i] = 2.0;
        }
        if i < 3 {
            x[i] = 3.0;
        }
    }
}";

#[test]
fn eliminate_dead_code_keeps_the_branch_always_taken_and_rejects_an_open_condition() {
    let mut s = sched(BRANCH);
    let first = s.find("if").unwrap();
    s.eliminate_dead_code(&first).unwrap();
    let t = common::text(&s);
    assert!(!t.contains("2.0"), "{t}");
    same_for_n(&s, &[1, 5]);
    let open = s.find("if").unwrap();
    let e = rejected(
        s.eliminate_dead_code(&open),
        "eliminate_dead_code",
        "may be true and may be false",
    );
    assert!(!e.counterexample.is_empty(), "{e}");
}
