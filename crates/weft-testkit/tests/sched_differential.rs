//! Differential fuzzing of scheduling: random procs × random sequences of primitives at random
//! cursors. Every step the analysis accepts must leave the proc's results unchanged: the
//! rewritten proc passes the checker and, run by the reference interpreter on random inputs at
//! several sizes (its generated sizes, all sizes 1, and fresh random sizes), produces the same
//! outputs as the original — integers and error cells exactly, floats up to reassociation of
//! reductions (which the analysis allows, as Exo's does).
//!
//! `WEFT_SCHED_CASES` sets the number of procs (default 250), `WEFT_SCHED_STEPS` the number of
//! attempted steps per proc (default 12), `WEFT_SCHED_SEED` the seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{ArgValue, ConfigState, Scalar};
use weft_ir::{Expr, Proc, StmtKind};
use weft_sched::{find, Schedule, Tail};
use weft_testkit::{random_proc_named, random_sizes};

/// One JIT for the whole test, with a cache directory of its own.
fn jit() -> &'static weft_jit::Jit {
    static JIT: std::sync::OnceLock<weft_jit::Jit> = std::sync::OnceLock::new();
    JIT.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sched-diff-cache");
        weft_jit::Jit::with_cache_dir(&dir).expect("a JIT")
    })
}

/// Compile `proc` (with the procs it calls) to C, run it natively and in the interpreter, and
/// compare bit for bit: `Ok(true)` when they match, `Ok(false)` when the proc leaves an output
/// uninitialised (not comparable).
fn compiled_matches(
    helpers: &[Arc<Proc>],
    proc: &Arc<Proc>,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<bool, String> {
    let program = weft::Program {
        module: weft_ir::Module {
            procs: helpers.iter().cloned().chain([proc.clone()]).collect(),
            ..Default::default()
        },
        sources: weft_syntax::SourceMap::new(),
        deps: vec![],
        scope: Default::default(),
    };
    let opts = weft::run::RunOptions {
        sizes: sizes.clone(),
        seed,
        reps: 1,
    };
    match weft::run::run_and_compare(&program, proc, jit(), &opts) {
        Ok(_) => Ok(true),
        Err(e) if e.to_string().contains("uninitialised") => Ok(false),
        Err(e) => Err(format!("compiled C differs from the interpreter: {e}")),
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn close(a: &Option<Scalar>, b: &Option<Scalar>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Scalar::F32(x)), Some(Scalar::F32(y))) => float_close(*x as f64, *y as f64),
        (Some(Scalar::F64(x)), Some(Scalar::F64(y))) => float_close(*x, *y),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn float_close(x: f64, y: f64) -> bool {
    (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-3 * x.abs().max(y.abs()).max(1.0)
}

/// Run both procs on the same random inputs; describe the first difference.
fn compare(orig: &Proc, new: &Proc, sizes: &HashMap<String, i64>, seed: u64) -> Result<(), String> {
    let inputs = weft_interp::random_args(orig, sizes, seed).map_err(|e| e.to_string())?;
    let mut a = inputs.clone();
    let mut b = inputs;
    let ra = weft_interp::run(orig, &mut a, &mut ConfigState::default());
    let rb = weft_interp::run(new, &mut b, &mut ConfigState::default());
    if ra.is_err() != rb.is_err() {
        return Err(format!("interpreter outcome differs: {ra:?} vs {rb:?}"));
    }
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        if let (ArgValue::Buf(x), ArgValue::Buf(y)) = (x, y) {
            for (i, (cx, cy)) in x.data.iter().zip(&y.data).enumerate() {
                if !close(cx, cy) {
                    return Err(format!("argument {k}, cell {i}: {cx:?} vs {cy:?}"));
                }
            }
        }
    }
    Ok(())
}

/// One random step on the current proc; `Ok(None)` when the analysis rejected it.
fn random_step(rng: &mut StdRng, s: &mut Schedule) -> Result<Option<String>, String> {
    let p = s.proc().clone();
    let stmts = find::all_stmts(&p);
    if stmts.is_empty() {
        return Ok(None);
    }
    let (path, stmt) = stmts[rng.gen_range(0..stmts.len())].clone();
    let is_loop = matches!(stmt.kind, StmtKind::For { .. });
    let c = s.cursor(path.clone());
    // Primitives for one kind of statement, which need no other argument.
    let special = match &stmt.kind {
        StmtKind::Alloc { .. } if rng.gen_bool(0.6) => Some("lift_alloc"),
        StmtKind::Call { .. } if rng.gen_bool(0.6) => Some("inline_call"),
        StmtKind::If { .. } | StmtKind::Pass if rng.gen_bool(0.2) => Some("delete_pass"),
        _ => None,
    };
    if let Some(name) = special {
        let r = match name {
            "lift_alloc" => s.lift_alloc(&c),
            "inline_call" => s.inline_call(&c),
            _ => s.delete_pass(&c),
        };
        return Ok(r.ok().map(|_| format!("{name} at {path}")));
    }
    let kind = if is_loop {
        rng.gen_range(0..12)
    } else {
        rng.gen_range(12..14)
    };
    let (name, r) = match kind {
        0 => {
            let tail =
                [Tail::Guard, Tail::Cut, Tail::CutAndGuard, Tail::Perfect][rng.gen_range(0..4)];
            let f = rng.gen_range(1..=5);
            (
                format!("split {f} {}", tail.name()),
                s.split(&c, f, "o", "t", tail),
            )
        }
        1 => ("reorder_loops".into(), s.reorder_loops(&c)),
        2 => ("fuse".into(), s.fuse(&c)),
        3 => ("remove_loop".into(), s.remove_loop(&c)),
        4 => ("unroll".into(), s.unroll(&c)),
        5 | 6 => {
            let StmtKind::For { lo, hi, .. } = &stmt.kind else {
                unreachable!()
            };
            let point = match rng.gen_range(0..3) {
                0 => lo.clone(),
                1 => hi.clone(),
                _ => Expr::binary(weft_ir::BinOp::Add, lo.clone(), Expr::int(1)),
            };
            if kind == 5 {
                (format!("cut {point}"), s.cut(&c, &point))
            } else {
                let start = Expr::int(rng.gen_range(0..3));
                (format!("shift {start}"), s.shift(&c, &start))
            }
        }
        7 => (
            "fission(in loop)".into(),
            match s.body(&c, 0, 0) {
                Some(first) => s.fission(&first),
                None => return Ok(None),
            },
        ),
        8 => ("lift_if".into(), s.lift_if(&c)),
        9 => {
            // `size > 2` for one of the proc's sizes.
            let size = p
                .args
                .iter()
                .find(|a| a.ctrl() == Some(weft_ir::CtrlType::Size));
            let Some(size) = size else { return Ok(None) };
            let cond = Expr::var(&size.sym, weft_ir::Ty::Int).gt(Expr::int(2));
            (format!("specialize {cond}"), s.specialize(&c, &cond))
        }
        10 => ("delete_pass".into(), s.delete_pass(&c)),
        // The interpreter runs parallel loops backwards and the C runs them on threads, so a race
        // the analysis missed shows up as a difference.
        11 => ("parallelize".into(), s.parallelize(&c)),
        12 => ("reorder_stmts".into(), s.reorder_stmts(&c)),
        _ => ("fission".into(), s.fission(&c)),
    };
    Ok(r.ok().map(|_| format!("{name} at {path}")))
}

/// A random 2-deep loop nest over two 2-D buffers with small random offsets: the shape of code
/// where loop reorder, fission and fusion meet real dependences (`A[i+1, j] = A[i, j+1]`).
fn random_nest(rng: &mut StdRng, case: u64) -> Arc<Proc> {
    let mut body = String::new();
    let idx =
        |rng: &mut StdRng| format!("i + {}, j + {}", rng.gen_range(0..3), rng.gen_range(0..3));
    for _ in 0..rng.gen_range(1..=2) {
        let dst = ["A", "B"][rng.gen_range(0..2)];
        let src = ["A", "B"][rng.gen_range(0..2)];
        let op = ["=", "+="][rng.gen_range(0..2)];
        let (d, s1, s2) = (idx(rng), idx(rng), idx(rng));
        body.push_str(&format!(
            "            {dst}[{d}] {op} {src}[{s1}] + {src}[{s2}] * 3;\n"
        ));
    }
    let (ilo, jlo) = (rng.gen_range(0..2), rng.gen_range(0..2));
    let src = format!(
        "proc nest{case}(n: size, m: size, A: i32[n + 3, m + 3] @ DRAM, B: i32[n + 3, m + 3] @ DRAM) {{\n\
         for i in {ilo}..n {{\n        for j in {jlo}..m {{\n{body}        }}\n    }}\n}}\n"
    );
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "nest.weft", &src)
        .unwrap_or_else(|_| panic!("generated nest does not parse:\n{src}"));
    weft_check::check_module(&m)
        .unwrap_or_else(|_| panic!("generated nest does not check:\n{src}"));
    m.procs[0].clone()
}

#[test]
fn loop_nest_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x4e57);
    let (mut accepted, mut rejected, mut native) = (0u64, 0u64, 0u64);
    for case in 0..cases {
        let orig = random_nest(&mut rng, case);
        let mut s = Schedule::new(orig.clone());
        s.recheck = true;
        for _ in 0..4 {
            let Some(desc) = random_step(&mut rng, &mut s).unwrap_or_else(|e| panic!("{e}")) else {
                rejected += 1;
                continue;
            };
            accepted += 1;
            for (k, (n, m)) in [(5, 4), (1, 1), (2, 7), (3, 1)].into_iter().enumerate() {
                let sizes: HashMap<String, i64> =
                    [("n".to_string(), n), ("m".to_string(), m)].into();
                if let Err(e) = compare(&orig, s.proc(), &sizes, case * 7 + k as u64) {
                    panic!(
                        "nest {case}: step '{desc}' changed the result at n={n} m={m}: {e}\n\
                         steps: {:?}\n--- original\n{}\n--- scheduled\n{}",
                        s.steps(),
                        weft_ir::print::proc_to_string(&orig),
                        weft_ir::print::proc_to_string(s.proc())
                    );
                }
            }
        }
        if case % 10 == 0 && !s.steps().is_empty() {
            let sizes: HashMap<String, i64> = [("n".to_string(), 5), ("m".to_string(), 4)].into();
            if let Err(e) = compiled_matches(&[], s.proc(), &sizes, case) {
                panic!(
                    "nest {case}: {e}\n{}",
                    weft_ir::print::proc_to_string(s.proc())
                );
            }
            native += 1;
        }
    }
    eprintln!("{cases} nests: {accepted} steps accepted, {rejected} rejected, {native} compiled-C comparisons");
    assert!(native > 0);
    assert!(accepted > cases / 2 && rejected > cases / 2);
}

#[test]
fn accepted_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let steps = env_num("WEFT_SCHED_STEPS", 12);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let dram = weft_syntax::std_memory("DRAM").expect("prelude DRAM");
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut accepted, mut attempted, mut compared, mut native) = (0u64, 0u64, 0u64, 0u64);
    let mut by_primitive: std::collections::BTreeMap<String, u64> = Default::default();
    for case in 0..cases {
        let g = random_proc_named(&mut rng, &dram, &format!("p{case}"));
        let orig: Arc<Proc> = g.proc.clone();
        let mut s = Schedule::new(orig.clone());
        s.recheck = true;
        let mut size_sets = vec![
            g.sizes.clone(),
            g.sizes.keys().map(|k| (k.clone(), 1)).collect(),
        ];
        size_sets.push(random_sizes(&mut rng, &g));
        for _ in 0..steps {
            attempted += 1;
            let step = random_step(&mut rng, &mut s);
            let Some(desc) = step.unwrap_or_else(|e| panic!("{e}")) else {
                continue;
            };
            accepted += 1;
            let prim = desc.split(' ').next().unwrap_or("").to_string();
            *by_primitive.entry(prim).or_default() += 1;
            for (k, sizes) in size_sets.iter().enumerate() {
                compared += 1;
                if let Err(e) = compare(&orig, s.proc(), sizes, case * 31 + k as u64) {
                    panic!(
                        "case {case}: step '{desc}' changed the result at sizes {sizes:?}: {e}\n\
                         steps: {:?}\n--- original\n{}\n--- scheduled\n{}",
                        s.steps(),
                        weft_ir::print::proc_to_string(&orig),
                        weft_ir::print::proc_to_string(s.proc())
                    );
                }
            }
        }
        // Every 5th scheduled proc also goes through the C backend: compiled, run natively and
        // compared with the interpreter bit for bit (which the steps above tied to the original).
        if case % 5 == 0 && !s.steps().is_empty() {
            for sizes in &size_sets[..2] {
                match compiled_matches(&g.helper_procs, s.proc(), sizes, case) {
                    Ok(compared) => native += compared as u64,
                    Err(e) => panic!(
                        "case {case}: {e}\nsteps: {:?}\n{}",
                        s.steps(),
                        weft_ir::print::proc_to_string(s.proc())
                    ),
                }
            }
        }
    }
    eprintln!(
        "{cases} procs: {attempted} steps attempted, {accepted} accepted, {compared} comparisons, {native} compiled-C comparisons; accepted by primitive: {by_primitive:?}"
    );
    assert!(native > 0, "no scheduled proc was compared in C");
    assert!(
        accepted > cases,
        "too few accepted steps ({accepted}) for the test to mean anything"
    );
}
