//! Each primitive accepted where it must be and rejected where it must be, with the message and
//! counterexample the user sees. Accepted rewrites are also run against the original on the
//! reference interpreter.

mod common;

use common::{cex, rejected, rejected_at, same_results, sched, stack, var_of};
use weft_ir::Expr;
use weft_sched::{Schedule, Tail};

const SGEMM: &str = "proc sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM) {
    for i in 0..M {
        for j in 0..N {
            for k in 0..K {
                C[i, j] += A[i, k] * B[k, j];
            }
        }
    }
}";

#[test]
fn reorder_rejects_a_carried_dependence_with_a_counterexample() {
    let mut s = sched(
        "proc p(n: size, A: f32[n + 1, n + 1] @ DRAM) {
    for i in 0..n {
        for j in 0..n {
            A[i + 1, j] = A[i, j + 1];
        }
    }
}",
    );
    let i = s.find("for i").unwrap();
    let e = rejected(s.reorder_loops(&i), "reorder_loops", "do not commute");
    // The two iterations touch one cell: (i + 1, j) = (i', j' + 1) with i < i', j' < j.
    let (i0, j0, i1, j1) = (cex(&e, "i"), cex(&e, "j"), cex(&e, "i'"), cex(&e, "j'"));
    assert!(i0 < i1 && j1 < j0, "{e}");
    assert!(
        (i0 + 1 == i1 && j0 == j1 + 1) || (i1 + 1 == i0 && j1 == j0 + 1),
        "{e}"
    );
    assert_eq!(e.stmts.len(), 2);
    assert!(e.to_string().contains("counterexample: "), "{e}");
}

#[test]
fn reorder_rejects_an_inner_bound_that_depends_on_the_outer_index() {
    let mut s = sched(
        "proc p(n: size, A: f32[n, n] @ DRAM) {
    for i in 0..n {
        for j in 0..i {
            A[i, j] = 0.0;
        }
    }
}",
    );
    let i = s.find("i").unwrap();
    rejected(
        s.reorder_loops(&i),
        "reorder_loops",
        "depend on the outer index 'i'",
    );
}

#[test]
fn reorder_stmts_rejects_write_write_and_read_after_write() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    x[0] = 1.0;
    x[0] = 2.0;
    y[0] = x[0];
    y[0] += 1.0;
}";
    let mut s = sched(src);
    let first = s.find("x = #0").unwrap();
    rejected(s.reorder_stmts(&first), "reorder_stmts", "do not commute");
    let second = s.find("x = #1").unwrap();
    rejected(s.reorder_stmts(&second), "reorder_stmts", "do not commute");
}

#[test]
fn two_reductions_into_one_cell_commute() {
    let mut s = sched(
        "proc p(n: size, x: i32[n] @ DRAM, a: i32[n] @ DRAM) {
    for i in 0..n {
        x[0] += a[i];
        x[0] += 2 * a[i];
    }
}",
    );
    let r = s.find("x += #0").unwrap();
    s.reorder_stmts(&r).unwrap();
    same_results(&s, &[("n", 5)]);
}

#[test]
fn fission_rejects_a_broken_dependence_and_accepts_a_legal_one() {
    let mut s = sched(
        "proc p(n: size, a: i32[n + 1] @ DRAM, b: i32[n + 1] @ DRAM) {
    for i in 0..n {
        a[i + 1] = b[i];
        b[i + 1] = a[i];
    }
}",
    );
    let w = s.find("a =").unwrap();
    let e = rejected(s.fission(&w), "fission", "do not commute");
    assert!(cex(&e, "i") > cex(&e, "i'"), "{e}");

    let mut ok = sched(
        "proc p(n: size, a: i32[n] @ DRAM, b: i32[n] @ DRAM) {
    for i in 0..n {
        a[i] = 2 * b[i];
        b[i] = a[i] + 1;
    }
}",
    );
    let w = ok.find("a =").unwrap();
    ok.fission(&w).unwrap();
    same_results(&ok, &[("n", 7)]);
}

#[test]
fn remove_loop_rejects_index_use_zero_trips_and_non_idempotence() {
    let uses =
        "proc p(n: size, x: f32[n] @ DRAM) {\n    for i in 0..n {\n        x[i] = 0.0;\n    }\n}";
    rejected_at(
        uses,
        "i",
        Schedule::remove_loop,
        "remove_loop",
        "uses the loop index 'i'",
    );

    let zero = "proc p(n: size, m: index, x: f32[n] @ DRAM) {\n    assert m >= 0;\n    for i in 0..m {\n        x[0] = 0.0;\n    }\n}";
    let e = rejected_at(
        zero,
        "i",
        Schedule::remove_loop,
        "remove_loop",
        "may run zero times",
    );
    assert!(cex(&e, "m") <= 0, "{e}");

    let reduce =
        "proc p(n: size, x: f32[n] @ DRAM) {\n    for i in 0..n {\n        x[0] += 1.0;\n    }\n}";
    rejected_at(
        reduce,
        "i",
        Schedule::remove_loop,
        "remove_loop",
        "not idempotent",
    );

    let ok = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {\n    for i in 0..n {\n        x[0] = y[0] * 2.0;\n    }\n}";
    let mut s = sched(ok);
    s.remove_loop(&s.find("i").unwrap()).unwrap();
    same_results(&s, &[("n", 3)]);
}

#[test]
fn perfect_split_needs_divisibility() {
    let mut s = sched(SGEMM);
    let i = s.find("for i").unwrap();
    let e = rejected(
        s.split(&i, 8, "io", "ii", Tail::Perfect),
        "split",
        "divisible by 8",
    );
    assert_ne!(cex(&e, "M") % 8, 0, "{e}");

    let mut s = sched(
        "proc p(n: size, x: f32[16 * n] @ DRAM) {\n    assert n % 1 == 0;\n    for i in 0..16 * n {\n        x[i] = 1.0;\n    }\n}",
    );
    s.split(&s.find("i").unwrap(), 8, "io", "ii", Tail::Perfect)
        .unwrap();
    same_results(&s, &[("n", 3)]);
}

#[test]
fn cut_tail_needs_a_non_negative_trip_count() {
    // The checker rejects this loop (rule `extent`: `m` may exceed `n`), so the proc is taken
    // unchecked: split's own condition is the second line of defence.
    let src = "proc p(n: size, m: index, x: f32[n] @ DRAM) {\n    assert m >= 0;\n    for i in m..n {\n        x[i] = 1.0;\n    }\n}";
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src).unwrap();
    let mut s = Schedule::new(m.procs[0].clone());
    let e = rejected(
        s.split(&s.find("i").unwrap(), 4, "io", "ii", Tail::Cut),
        "split",
        "cut tail",
    );
    assert!(cex(&e, "m") > cex(&e, "n"), "{e}");
}

/// Tiling SGEMM: factors from 1 to 7, every tail strategy. `i` is split, the point loop `ii`
/// exchanged with `j` (so the tile loops are outside), then `j` split; each result is compared with
/// the original at sizes that do not divide the factors.
#[test]
fn sgemm_tiles_by_any_factors_with_any_tail() {
    for tail in [Tail::Guard, Tail::Cut, Tail::CutAndGuard] {
        for (fi, fj) in [(1, 1), (2, 3), (4, 4), (5, 7), (7, 2)] {
            let mut s = sched(SGEMM);
            let i = s.find("for i").unwrap();
            s.split(&i, fi, "io", "ii", tail).unwrap();
            let ii = s.find("for ii").unwrap();
            match s.reorder_loops(&ii) {
                Ok(_) => assert_ne!(tail, Tail::Guard),
                // With a guard the body of `ii` is an `if`, not a loop.
                Err(e) => {
                    assert_eq!(tail, Tail::Guard, "{e}");
                    assert!(
                        e.message.contains("does not directly contain a loop"),
                        "{e}"
                    );
                }
            }
            let j = s.find("for j").unwrap();
            s.split(&j, fj, "jo", "ji", tail).unwrap();
            for (m, n, k) in [(9, 10, 3), (1, 1, 1), (fi * 2, fj * 3, 2), (13, 5, 4)] {
                same_results(&s, &[("M", m), ("N", n), ("K", k)]);
            }
        }
    }
}

#[test]
fn cursors_follow_the_statement_through_rewrites() {
    let mut s = sched(SGEMM);
    let red = s.find("C +=").unwrap();
    let k = s.find("for k").unwrap();
    let i = s.find("for i").unwrap();
    s.split(&i, 4, "io", "ii", Tail::Guard).unwrap();
    let j = s.find("for j").unwrap();
    s.cut(&j, &Expr::int(1)).unwrap();
    let e = s.cut(&j, &Expr::int(2)).unwrap_err();
    assert!(e.message.contains("not proved to lie in 0..1"), "{e}");
    assert_eq!(
        weft_ir::print::stmt_to_string(s.stmt(&red).unwrap()).trim(),
        "C[4 * io + ii, j] += A[4 * io + ii, k] * B[k, j];"
    );
    assert!(weft_ir::print::stmt_to_string(s.stmt(&k).unwrap()).starts_with("for k in 0..K"));
    // The original version is unchanged.
    assert!(weft_ir::print::proc_to_string(s.version(0).unwrap()).contains("C[i, j] +="));
}

#[test]
fn stage_mem_stages_a_tile_and_rejects_regions_outside_the_buffer_or_the_accesses() {
    let mut s = sched(SGEMM);
    s.split(&s.find("for i").unwrap(), 4, "io", "ii", Tail::Cut)
        .unwrap();
    s.reorder_loops(&s.find("for ii").unwrap()).unwrap();
    s.split(&s.find("for j").unwrap(), 8, "jo", "ji", Tail::Cut)
        .unwrap();
    s.reorder_loops(&s.find("for ji").unwrap()).unwrap();
    let (io, jo) = (var_of(&s, "for io"), var_of(&s, "for jo"));
    let four_io = Expr::binary(weft_ir::BinOp::Mul, Expr::int(4), io);
    let eight_jo = Expr::binary(weft_ir::BinOp::Mul, Expr::int(8), jo);
    let tile = vec![
        (
            four_io.clone(),
            Expr::binary(weft_ir::BinOp::Add, four_io.clone(), Expr::int(4)),
        ),
        (
            eight_jo.clone(),
            Expr::binary(weft_ir::BinOp::Add, eight_jo.clone(), Expr::int(8)),
        ),
    ];
    let ii = s.find("for ii").unwrap();

    // Half the tile does not cover the accesses.
    let half = vec![
        tile[0].clone(),
        (
            eight_jo.clone(),
            Expr::binary(weft_ir::BinOp::Add, eight_jo.clone(), Expr::int(4)),
        ),
    ];
    let e = rejected(
        s.stage_mem(&ii, 1, "C", &half, "Ct", stack()),
        "stage_mem",
        "outside the staged region",
    );
    assert!(cex(&e, "ji") >= 4, "{e}");
    // An empty region.
    let empty = vec![tile[0].clone(), (eight_jo.clone(), eight_jo.clone())];
    let e = rejected(
        s.stage_mem(&ii, 1, "C", &empty, "Ct", stack()),
        "stage_mem",
        "non-empty",
    );
    assert!(!e.counterexample.is_empty());

    s.stage_mem(&ii, 1, "C", &tile, "Ct", stack()).unwrap();
    let text = weft_ir::print::proc_to_string(s.proc());
    assert!(text.contains("alloc Ct: f32[4, 8] @ DRAM_STACK;"), "{text}");
    assert!(
        text.contains("Ct[ii, ji] += A[4 * io + ii, k] * B[k, 8 * jo + ji];"),
        "{text}"
    );
    for (m, n, k) in [(9, 17, 3), (4, 8, 1), (1, 1, 2), (13, 23, 5)] {
        same_results(&s, &[("M", m), ("N", n), ("K", k)]);
    }
}

/// A region that may reach past the buffer (an edge tile) is staged with guarded copies: only
/// the cells inside the buffer are copied in (the others get zeros) and out, in the form a masked
/// load and store match (`if Ct_1 < N - 8 * jo`).
#[test]
fn stage_mem_guards_the_copies_of_a_region_that_may_leave_the_buffer() {
    let mut s = sched(SGEMM);
    s.split(&s.find("for i").unwrap(), 4, "io", "ii", Tail::Cut)
        .unwrap();
    s.reorder_loops(&s.find("for ii").unwrap()).unwrap();
    s.split(&s.find("for j").unwrap(), 8, "jo", "ji", Tail::Guard)
        .unwrap();
    let (io, jo) = (var_of(&s, "for io"), var_of(&s, "for jo"));
    let four_io = Expr::binary(weft_ir::BinOp::Mul, Expr::int(4), io);
    let eight_jo = Expr::binary(weft_ir::BinOp::Mul, Expr::int(8), jo);
    let edge = vec![
        (
            four_io.clone(),
            Expr::binary(weft_ir::BinOp::Add, four_io, Expr::int(4)),
        ),
        (
            eight_jo.clone(),
            Expr::binary(weft_ir::BinOp::Add, eight_jo, Expr::int(8)),
        ),
    ];
    let ji = s.find("for ji").unwrap();
    s.stage_mem(&ji, 1, "C", &edge, "Ct", stack()).unwrap();
    let text = weft_ir::print::proc_to_string(s.proc());
    assert!(text.contains("if Ct_1 < N - 8 * jo {"), "{text}");
    assert!(text.contains("Ct[Ct_0, Ct_1] = 0"), "{text}");
    for (m, n, k) in [(9, 17, 3), (4, 8, 1), (1, 1, 2), (13, 23, 5), (8, 7, 2)] {
        same_results(&s, &[("M", m), ("N", n), ("K", k)]);
    }
}

/// The configuration hoisting of the Exo paper (§2): a config write inside a loop, read by the
/// rest of the body, is moved out of the loop by fission and remove_loop. Hoisting it past a read
/// of the field is rejected.
#[test]
fn config_write_hoisting_as_in_the_exo_paper() {
    let src = "config Cfg { scale: i32, stride: stride }
proc p(n: size, m: size, x: i32[n, m] @ DRAM, y: i32[n, m] @ DRAM) {
    for i in 0..n {
        Cfg.scale = 3;
        Cfg.stride = m;
        for j in 0..m {
            y[i, j] = x[i, j] * Cfg.scale;
        }
    }
}";
    let mut s = sched(src);
    let w = s.find("Cfg.stride =").unwrap();
    s.fission(&w).unwrap();
    let first = s.find("for i").unwrap();
    s.remove_loop(&first).unwrap();
    let text = weft_ir::print::proc_to_string(s.proc());
    assert!(text.starts_with("proc p(n: size, m: size, x: i32[n, m] @ DRAM, y: i32[n, m] @ DRAM) {\n    Cfg.scale = 3;\n    Cfg.stride = m;\n    for i in 0..n {"), "{text}");
    same_results(&s, &[("n", 4), ("m", 3)]);

    // A write whose value changes with the iteration cannot be hoisted this way.
    let varying = src.replace("Cfg.scale = 3;", "Cfg.scale = 3 * y[i, 0];");
    let mut s = sched(&varying);
    let e = rejected(
        s.fission(&s.find("Cfg.stride =").unwrap()),
        "fission",
        "do not commute",
    );
    assert!(e.to_string().contains("Cfg"), "{e}");

    // Moving the write before a read of the field in the same block is rejected.
    let reader = "config Cfg { scale: i32 }
proc p(n: size, y: i32[n] @ DRAM) {
    y[0] = Cfg.scale;
    Cfg.scale = 3;
}";
    let mut s = sched(reader);
    let e = rejected(
        s.reorder_stmts(&s.find("y =").unwrap()),
        "reorder_stmts",
        "do not commute",
    );
    assert!(e.to_string().contains("Cfg"), "{e}");
}
