//! Random procs with hazards (uses after `free` through windows, constants near the 64-bit and
//! 2^31 bounds in control expressions, loops that may have negative extents, temporaries read
//! before they are fully written, directly or through helpers whose writes depend on the strides
//! of their window arguments). The checker must never panic, must reject each kind of
//! hazard somewhere (rules `use-after-free`, `overflow`, `extent`, `init`), and whatever it
//! accepts must run in the interpreter without an error (no overflow, no negative extent, no
//! use after free) and leave no error value (no uninitialised read observed) in any output.
//! Printing and parsing back must not panic either.
//!
//! `WEFT_HAZARD_CASES` sets the number of procs (default 300).

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::HashMap;
use weft_interp::{random_args, ArgValue, ConfigState};
use weft_testkit::{random_proc_with, random_sizes, Hazards};

fn cases() -> u64 {
    std::env::var("WEFT_HAZARD_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

#[test]
fn accepted_hazardous_procs_run_without_errors() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let mut rejected_by: HashMap<&'static str, usize> = HashMap::new();
    let mut accepted = 0;
    let mut failures = Vec::new();
    for seed in 0..cases() {
        let mut rng = StdRng::seed_from_u64(seed);
        let name = format!("hz_{seed}");
        let g = random_proc_with(&mut rng, &dram, &name, Hazards::ALL);
        // The text form round-trips whatever the checker says.
        let mut module = weft_ir::Module::default();
        module.procs.extend(g.helper_procs.iter().cloned());
        module.procs.push(g.proc.clone());
        let text = module.to_string();
        let mut sources = weft_syntax::SourceMap::new();
        if let Err(d) = weft_syntax::parse_module(&mut sources, "hz.weft", &text) {
            failures.push(format!(
                "seed {seed}: the printed proc does not parse: {d:?}\n{text}"
            ));
            continue;
        }
        match weft_check::check_module(&module) {
            Err(diags) => {
                for d in diags {
                    *rejected_by.entry(d.rule).or_default() += 1;
                }
            }
            Ok(_) => {
                accepted += 1;
                let mut size_sets = vec![g.sizes.clone()];
                size_sets.push(g.sizes.keys().map(|k| (k.clone(), 1)).collect());
                size_sets.push(random_sizes(&mut rng, &g));
                for sizes in size_sets {
                    if let Err(e) = run_clean(&g.proc, &sizes, seed) {
                        failures.push(format!("seed {seed} at {sizes:?}: {e}\n{text}"));
                    }
                }
            }
        }
    }
    eprintln!("{accepted} accepted; rejections by rule: {rejected_by:?}");
    assert!(
        failures.is_empty(),
        "{} failures; first:\n{}",
        failures.len(),
        failures[0]
    );
    for rule in ["use-after-free", "overflow", "extent", "init"] {
        assert!(
            rejected_by.get(rule).copied().unwrap_or(0) > 0,
            "no hazard was rejected by rule `{rule}` ({rejected_by:?})"
        );
    }
    assert!(
        accepted * 5 > cases() as usize,
        "only {accepted} of {} procs accepted",
        cases()
    );
}

/// Run `p` on random arguments: no interpreter error, and no error value in any output buffer
/// (the inputs are fully defined, so one would come from an uninitialised read).
fn run_clean(p: &weft_ir::Proc, sizes: &HashMap<String, i64>, seed: u64) -> Result<(), String> {
    let mut args = random_args(p, sizes, seed).map_err(|e| e.to_string())?;
    weft_interp::run(p, &mut args, &mut ConfigState::default()).map_err(|e| e.to_string())?;
    for (a, arg) in p.args.iter().zip(&args) {
        if let ArgValue::Buf(b) = arg {
            if b.error_cells() > 0 {
                return Err(format!(
                    "`{}` holds {} error values after the run",
                    a.sym,
                    b.error_cells()
                ));
            }
        }
    }
    Ok(())
}

/// Without hazards the generator makes the same procs as before (the other tests' seeds keep
/// their meaning).
#[test]
fn no_hazards_is_the_plain_generator() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    for seed in 0..30u64 {
        let a = weft_testkit::random_proc_named(&mut StdRng::seed_from_u64(seed), &dram, "p");
        let b = random_proc_with(
            &mut StdRng::seed_from_u64(seed),
            &dram,
            "p",
            Hazards::default(),
        );
        assert_eq!(a.proc.to_string(), b.proc.to_string());
    }
}

/// A focused check of one statement (`Checker::check_control_at`, `check_stmt_but_init`: what a
/// schedule step runs after changing that statement) reports exactly what the full check
/// reports inside the statement: on random procs with hazards, for every top-level statement
/// and every statement one level down.
#[test]
fn focused_checks_report_what_the_full_check_reports_in_their_statement() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let hazards = Hazards {
        use_after_free: true,
        extreme_constants: true,
        negative_extents: true,
        uninit_reads: false,
    };
    let (mut compared, mut failing) = (0, 0);
    let mut failures = Vec::new();
    for seed in 0..cases() / 2 {
        let mut rng = StdRng::seed_from_u64(1000 + seed);
        let name = format!("fz_{seed}");
        let g = random_proc_with(&mut rng, &dram, &name, hazards);
        // Printed and parsed back, so that every statement has a place of its own.
        let mut module = weft_ir::Module::default();
        module.procs.extend(g.helper_procs.iter().cloned());
        module.procs.push(g.proc.clone());
        let mut sources = weft_syntax::SourceMap::new();
        let Ok(parsed) = weft_syntax::parse_module(&mut sources, "fz.weft", &module.to_string())
        else {
            continue;
        };
        let p = parsed.proc(&name).expect("the proc").clone();
        let p = &p;
        let inside = |d: &weft_ir::Diagnostic, s: &weft_ir::Stmt| {
            d.span.file == s.span.file && s.span.lo <= d.span.lo && d.span.hi <= s.span.hi
        };
        let key = |d: &weft_ir::Diagnostic| (d.rule, d.span, d.message.clone());
        let control = weft_check::Checker::new().check_control(p);
        let but_init = weft_check::Checker::new().check_proc_but_init(p);
        let mut stmts: Vec<&weft_ir::Stmt> = p.body.iter().collect();
        for s in &p.body {
            if let weft_ir::StmtKind::For { body, .. } = &s.kind {
                stmts.extend(body.iter());
            }
        }
        for s in stmts {
            compared += 1;
            let focused = weft_check::Checker::new().check_control_at(p, s);
            let want: Vec<_> = control.iter().filter(|d| inside(d, s)).map(key).collect();
            let got: Vec<_> = focused.iter().map(key).collect();
            failing += usize::from(!want.is_empty());
            if got != want {
                failures.push(format!(
                    "seed {seed}, control at {:?}: {got:?} != {want:?}",
                    s.span
                ));
            }
            let focused = weft_check::Checker::new().check_stmt_but_init(p, s);
            let want: Vec<_> = but_init.iter().filter(|d| inside(d, s)).map(key).collect();
            let got: Vec<_> = focused.iter().map(key).collect();
            if got != want {
                failures.push(format!(
                    "seed {seed}, no-init at {:?}: {got:?} != {want:?}",
                    s.span
                ));
            }
        }
    }
    eprintln!("{compared} statements compared, {failing} with control failures");
    assert!(failing > 0, "the hazards must make some statement fail");
    assert!(
        failures.is_empty(),
        "{}",
        failures[..failures.len().min(5)].join("\n")
    );
}
