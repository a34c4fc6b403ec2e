//! Scheduling speed: applies a long schedule to the naive SGEMM through the Rust API, with every
//! check on, then emits C; reports steps, time, solver queries and time spent in the solver.
//!
//! The schedule: the main 4 x 64 register-tile kernel of `examples/sgemm.weft`, then the edge
//! kernels. The right edge (the last `N % 64` columns) is cut into 32-, 16-, 8-, 4-, 2- and
//! 1-wide column strips, the bottom edge (the last `M % 4` rows) into 2- and 1-high row strips,
//! and every strip gets its own staged, reordered, unrolled kernel.
//!
//! Run: `cargo run --release -p weft --bin weft-sched-bench`

use std::path::Path;
use std::time::Instant;
use weft::ir::{BinOp, Expr, StmtKind, Ty};
use weft::sched::{Cursor, SchedError, Schedule, Tail};

fn loop_var(s: &Schedule, c: &Cursor) -> Expr {
    match &s.stmt(c).expect("cursor").kind {
        StmtKind::For { var, .. } => Expr::var(var, Ty::Int),
        _ => panic!("not a loop"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = weft::load(&root.join("examples/sgemm.weft"))?;
    let base = program.module.proc("sgemm").ok_or("no sgemm")?.clone();
    let stack = weft::syntax::std_memory("DRAM_STACK").ok_or("no DRAM_STACK")?;

    let t0 = Instant::now();
    let mut s = Schedule::new(base);
    let r: Result<(), SchedError> = (|| {
        // The main kernel.
        let i = s.find("for i")?;
        s.split(&i, 4, "io", "ii", Tail::Cut)?;
        s.reorder_loops(&s.find("for ii")?)?;
        let j = s.find("for j")?;
        s.split(&j, 64, "jo", "ji", Tail::CutAndGuard)?;
        s.reorder_loops(&s.find("for ji")?)?;
        s.reorder_loops(&s.find("for ji")?)?;
        s.reorder_loops(&s.find("for ii")?)?;
        let (io, jo) = (
            loop_var(&s, &s.find("for io")?),
            loop_var(&s, &s.find("for jo")?),
        );
        let four_io = Expr::binary(BinOp::Mul, Expr::int(4), io);
        // The C tile of 4 rows from `4 * io` and `width` columns from `col`.
        let tile = |col: Expr, width: i64| {
            let rows = Expr::binary(BinOp::Add, four_io.clone(), Expr::int(4));
            let cols = Expr::binary(BinOp::Add, col.clone(), Expr::int(width));
            vec![(four_io.clone(), rows), (col, cols)]
        };
        let jstart = Expr::binary(BinOp::Mul, Expr::int(64), jo.clone());
        s.stage_mem(
            &s.find("for k")?,
            1,
            "C",
            &tile(jstart, 64),
            "Ct",
            stack.clone(),
        )?;
        s.unroll(&s.find("for ii")?)?;

        // The right edge: `if N % 64 > 0 { for jt in 0..N % 64 { for ii { for k } } }`, cut into
        // strips of 32, 16, 8, 4, 2, 1 columns by repeated splits with cut tails.
        // A cursor on the remaining tail; cursors follow their loop through later steps.
        let mut tail = s.find("for ji #4")?;
        for width in [32i64, 16, 8, 4, 2, 1] {
            let (outer, inner) = (format!("e{width}o"), format!("e{width}"));
            s.split(&tail, width, &outer, &inner, Tail::Cut)?;
            tail = s.find(&format!("for {inner} #1"))?;
            let strip = s.find(&format!("for {inner}"))?;
            s.reorder_loops(&strip)?; // eo { ii { e { k } } }
            s.reorder_loops(&strip)?; // eo { ii { k { e } } }
            let ii = s.find("for ii")?;
            s.reorder_loops(&ii)?; // eo { k { ii { e } } }

            // The strip's first column: the column index of its update with the strip index 0.
            let e = s.find(&format!("for {inner}"))?;
            let update = s
                .body(&e, 0, 0)
                .ok_or_else(|| SchedError::new("bench", "empty strip"))?;
            let col = match &s.stmt(&update).expect("update").kind {
                StmtKind::Reduce { idx, .. } => idx[1].clone(),
                _ => return Err(SchedError::new("bench", "strip body is not the update")),
            };
            let e_sym = match &s.stmt(&e).expect("strip").kind {
                StmtKind::For { var, .. } => var.clone(),
                _ => unreachable!(),
            };
            let start = weft::sched::subst::Subst::new()
                .var(&e_sym, Expr::int(0))
                .expr(&col);
            let region = tile(start, width);
            let k = s
                .parent(&s.find("for ii")?)
                .ok_or_else(|| SchedError::new("bench", "no k loop"))?;
            s.stage_mem(&k, 1, "C", &region, &format!("Ce{width}"), stack.clone())?;
            s.unroll(&s.find("for ii")?)?;
        }
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
    Ok(())
}
