//! Scheduling speed: applies a long schedule to the naive SGEMM through the Rust API, with every
//! check on, then emits C; reports steps, time, solver queries and time spent in the solver.
//!
//! The schedule (158 steps) covers every edge case of a register-tiled SGEMM, as Exo's x86 SGEMM
//! does: rows in strips of 4 (the main kernel) and a bottom edge of `M % 4` rows in a strip of 2
//! and a strip of 1; in each strip, columns in 64-wide tiles and a right edge of `N % 64`
//! columns cut into strips of 32, 16, 8, 4, 2 and 1. Every one of the 21 tiles is reordered to
//! `k { rows { cols } }`, its C tile staged in a buffer hoisted out of the tile loop, and its rows
//! unrolled. The result is checked and compared with the original on the interpreter.
//!
//! Then the shipped AVX-512 SGEMM (`sgemm_avx512` of `examples/sgemm.weft`), a text schedule
//! with `steps` items and instruction selection by `replace` for every kernel and edge: the file
//! parsed and checked, the schedule's expanded steps applied and proved, the scheduled proc
//! checked in full, and its C emitted, each timed.
//!
//! Run: `cargo run --release -p weft --bin weft-sched-bench`

mod allocator;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use weft::ir::{BinOp, Expr, Memory, StmtKind, Sym};
use weft::sched::subst::Subst;
use weft::sched::{Cursor, SchedError, Schedule, Tail};

/// The variable of the loop under a cursor.
fn loop_sym(s: &Schedule, c: &Cursor) -> Result<Sym, SchedError> {
    match &s.stmt(c).map(|st| &st.kind) {
        Some(StmtKind::For { var, .. }) => Ok(var.clone()),
        _ => Err(SchedError::new("bench", "expected a loop")),
    }
}

/// The first statement inside the loop (or `if`) under `c`.
fn first_in(s: &Schedule, c: &Cursor) -> Result<Cursor, SchedError> {
    s.body(c, 0, 0)
        .ok_or_else(|| SchedError::new("bench", "empty body"))
}

/// The next statement after `c`.
fn next_of(s: &Schedule, c: &Cursor) -> Result<Cursor, SchedError> {
    s.next(c)
        .ok_or_else(|| SchedError::new("bench", "no next statement"))
}

/// Stage the `height` x `width` tile of C that the update inside `rows` touches, around the loop
/// that directly contains `rows` (the reduction loop), hoist the tile buffer out of the loop
/// around that, and unroll the rows. `cols` is the loop over the tile's columns.
fn stage_tile(
    s: &mut Schedule,
    rows: &Cursor,
    cols: &Cursor,
    height: i64,
    width: i64,
    name: &str,
    mem: &Arc<Memory>,
) -> Result<(), SchedError> {
    let update = first_in(s, cols)?;
    let idx = match &s.stmt(&update).map(|st| &st.kind) {
        Some(StmtKind::Reduce { idx, .. }) => idx.clone(),
        _ => {
            return Err(SchedError::new(
                "bench",
                "the tile's body is not the update",
            ))
        }
    };
    let at_zero = Subst::new()
        .var(&loop_sym(s, rows)?, Expr::int(0))
        .var(&loop_sym(s, cols)?, Expr::int(0));
    let (row0, col0) = (at_zero.expr(&idx[0]), at_zero.expr(&idx[1]));
    let plus = |e: &Expr, n: i64| Expr::binary(BinOp::Add, e.clone(), Expr::int(n));
    let region = [
        (row0.clone(), plus(&row0, height)),
        (col0.clone(), plus(&col0, width)),
    ];
    let k = s
        .parent(rows)
        .ok_or_else(|| SchedError::new("bench", "no reduction loop"))?;
    s.stage_mem(&k, 1, "C", &region, name, mem.clone())?;
    s.lift_alloc(&s.find(&format!("alloc {name}"))?)?;
    s.unroll(rows)?;
    Ok(())
}

/// The register-tile kernel for a strip of `height` rows: `rows` is
/// `for r in 0..height { for j in 0..N { for k in 0..K { C[.., j] += .. } } }`. The columns are
/// cut into 64-wide tiles and a right edge of `N % 64` columns, which is cut further into strips
/// of 32, 16, 8, 4, 2 and 1 columns; every tile is reordered to `k { rows { cols } }`, staged in
/// a buffer of its own and its rows unrolled.
fn strip_kernel(
    s: &mut Schedule,
    rows: &Cursor,
    height: i64,
    tag: &str,
    mem: &Arc<Memory>,
) -> Result<(), SchedError> {
    let j = first_in(s, rows)?;
    let jo = s.split(&j, 64, &format!("jo{tag}"), &format!("ji{tag}"), Tail::Cut)?;
    let ji = first_in(s, &jo)?;
    s.fission(&jo)?; // rows { jo { ji { k } } }; rows' { jt { k } }
    let edge_rows = next_of(s, rows)?;
    s.reorder_loops(rows)?; // jo { rows { ji { k } } }
    s.reorder_loops(&ji)?; // jo { rows { k { ji } } }
    s.reorder_loops(rows)?; // jo { k { rows { ji } } }
    stage_tile(s, rows, &ji, height, 64, &format!("Ct{tag}"), mem)?;

    // The right edge.
    s.reorder_loops(&edge_rows)?; // jt { rows' { k } }
    let mut tail = s
        .parent(&edge_rows)
        .ok_or_else(|| SchedError::new("bench", "no edge loop"))?;
    for width in [32i64, 16, 8, 4, 2, 1] {
        let outer = s.split(
            &tail,
            width,
            &format!("e{width}o{tag}"),
            &format!("e{width}{tag}"),
            Tail::Cut,
        )?;
        tail = next_of(s, &outer)?;
        let strip = first_in(s, &outer)?; // e { rows' { k } }
        let strip_rows = first_in(s, &strip)?;
        s.reorder_loops(&strip)?; // eo { rows' { e { k } } }
        s.reorder_loops(&strip)?; // eo { rows' { k { e } } }
        s.reorder_loops(&strip_rows)?; // eo { k { rows' { e } } }
        stage_tile(
            s,
            &strip_rows,
            &strip,
            height,
            width,
            &format!("Ce{width}{tag}"),
            mem,
        )?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = weft::load(&root.join("examples/sgemm.weft"))?;
    let base = program.module.proc("sgemm").ok_or("no sgemm")?.clone();
    let stack = weft::syntax::std_memory("DRAM_STACK").ok_or("no DRAM_STACK")?;

    let t0 = Instant::now();
    let mut s = Schedule::new(base);
    let r: Result<(), SchedError> = (|| {
        // Rows in strips of 4 (the main kernel), then the bottom edge of `M % 4` rows in a strip
        // of 2 and a strip of 1.
        let i = s.find("for i")?;
        let io = s.split(&i, 4, "io", "ii", Tail::Cut)?;
        let bottom = next_of(&s, &io)?;
        let ii = first_in(&s, &io)?;
        strip_kernel(&mut s, &ii, 4, "", &stack)?;
        let b2o = s.split(&bottom, 2, "b2o", "b2", Tail::Cut)?;
        let last = next_of(&s, &b2o)?;
        let b2 = first_in(&s, &b2o)?;
        strip_kernel(&mut s, &b2, 2, "b2", &stack)?;
        let b1o = s.split(&last, 1, "b1o", "b1", Tail::Cut)?;
        // A split by 1 leaves a tail that never runs.
        s.eliminate_dead_code(&next_of(&s, &b1o)?)?;
        let b1 = first_in(&s, &b1o)?;
        strip_kernel(&mut s, &b1, 1, "b1", &stack)?;
        s.simplify()?;
        Ok(())
    })();
    let steps = s.steps().len();
    let sched_time = t0.elapsed();
    if let Err(e) = r {
        eprintln!("schedule stopped after {steps} steps: {e}");
        eprintln!("{}", weft::ir::print::proc_to_string(s.proc()));
        return Err(e.into());
    }
    let t1 = Instant::now();
    let unit = weft::c::emit(std::slice::from_ref(s.proc()))?;
    let emit_time = t1.elapsed();
    let stats = s.solver_stats();
    println!(
        "{steps} steps in {:.1} ms ({:.2} ms per step), C emitted in {:.1} ms ({} lines); {} solver queries ({} answered from the cache), {:.1} ms in the solver",
        sched_time.as_secs_f64() * 1e3,
        sched_time.as_secs_f64() * 1e3 / steps.max(1) as f64,
        emit_time.as_secs_f64() * 1e3,
        unit.source.lines().count(),
        stats.queries,
        stats.cache_hits,
        stats.solver_time.as_secs_f64() * 1e3
    );

    // The scheduled proc checks and computes what the original computes (interpreter, sizes that
    // exercise every strip).
    weft::check::check_procs(std::slice::from_ref(s.proc()))
        .map_err(|d| format!("the scheduled proc does not check: {d:?}"))?;
    let orig = s.version(0).expect("original").clone();
    for (m, n, k) in [(7, 127, 3), (4, 64, 2), (9, 65, 1)] {
        let sizes = [("M", m), ("N", n), ("K", k)]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b))
            .collect();
        let mut a = weft::interp::random_args(&orig, &sizes, 1)?;
        let mut b = a.clone();
        weft::interp::run(&orig, &mut a, &mut Default::default())?;
        weft::interp::run(s.proc(), &mut b, &mut Default::default())?;
        if a != b {
            return Err(format!("the schedule changed the result at M={m} N={n} K={k}").into());
        }
    }
    println!("the scheduled proc checks and matches the original on the interpreter");

    // The shipped text schedule, with instruction selection.
    let file = root.join("examples/sgemm.weft");
    let t = Instant::now();
    let parsed = weft::parse(&file)?;
    let parse_time = t.elapsed();
    let t = Instant::now();
    // Every step applied: sgemm_avx512's and those of the schedules it calls (its panel kernel
    // and its matrix-vector product).
    let mut steps = 0;
    let program = weft::load_traced(&file, Some("sgemm_avx512"), |_, _, _| steps += 1)?;
    let load_time = t.elapsed();
    // The lines written for them: the steps of those schedules and of the `steps` items.
    let step_lines = |t: &str| t.lines().filter(|l| l.trim_end().ends_with(';')).count();
    let used = ["sgemm_avx512", "sgemm_panel_avx512", "sgemm_gemv_avx512"];
    let written: usize = parsed
        .module
        .schedules
        .iter()
        .filter(|d| used.contains(&d.name.as_str()))
        .map(|d| d.text.as_deref().map_or(d.steps.len(), step_lines))
        .chain(
            parsed
                .module
                .steps_items
                .iter()
                .map(|i| step_lines(&i.text)),
        )
        .sum();
    let proc = program
        .module
        .proc("sgemm_avx512")
        .ok_or("no sgemm_avx512")?
        .clone();
    // Checked again from nothing: without the answers the load's checks left.
    weft::check::smt::forget_shared_answers();
    let t = Instant::now();
    weft::check::check_procs(std::slice::from_ref(&proc))
        .map_err(|d| format!("sgemm_avx512 does not check: {d:?}"))?;
    let check_time = t.elapsed();
    let t = Instant::now();
    let unit = weft::c::emit(std::slice::from_ref(&proc))?;
    let emit_time = t.elapsed();
    println!(
        "sgemm_avx512 (examples/sgemm.weft): {written} written lines (schedules and steps functions) expand to {steps} steps; parse {:.1} ms, parse + check + schedule {:.1} ms, full check of the result {:.1} ms, C emitted in {:.1} ms ({} lines)",
        parse_time.as_secs_f64() * 1e3,
        load_time.as_secs_f64() * 1e3,
        check_time.as_secs_f64() * 1e3,
        emit_time.as_secs_f64() * 1e3,
        unit.source.lines().count()
    );
    Ok(())
}
