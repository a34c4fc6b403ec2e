//! Helpers shared by the primitive tests: procs from source, schedules that recheck every step,
//! results compared on the reference interpreter, and the rejections the user sees.

// Each test crate uses its own subset of these.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{random_args, run, ArgValue, Cell, ConfigState, ConfigValue};
use weft_ir::{Config, DType, Expr, Proc, StmtKind, Ty};
use weft_sched::{Cursor, SchedError, Schedule};

pub fn module_of(src: &str) -> weft_ir::Module {
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src)
        .unwrap_or_else(|e| panic!("does not parse: {e:?}\n{src}"));
    weft_check::check_module(&m).unwrap_or_else(|e| panic!("does not check: {e:?}"));
    m
}

/// The last proc of `src`.
pub fn proc_of(src: &str) -> Arc<Proc> {
    module_of(src).procs.last().unwrap().clone()
}

/// A schedule of the last proc of `src` that rechecks the proc after every step.
pub fn sched(src: &str) -> Schedule {
    let mut s = Schedule::new(proc_of(src));
    s.recheck = true;
    s
}

/// The scheduled proc gives the original's results (exactly) at the given sizes.
pub fn same_results(s: &Schedule, sizes: &[(&str, i64)]) {
    let orig = s.version(0).unwrap();
    let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    for seed in 0..3 {
        let mut a = random_args(orig, &sizes, seed).unwrap();
        let mut b = a.clone();
        run(orig, &mut a, &mut ConfigState::default()).unwrap();
        run(s.proc(), &mut b, &mut ConfigState::default()).unwrap();
        for (x, y) in a.iter().zip(&b) {
            if let (ArgValue::Buf(x), ArgValue::Buf(y)) = (x, y) {
                assert_eq!(x.data, y.data, "results differ at {sizes:?}");
            }
        }
    }
}

/// The scheduled proc gives the original's results at each size `n`.
pub fn same_for_n(s: &Schedule, ns: &[i64]) {
    for &n in ns {
        same_results(s, &[("n", n)]);
    }
}

/// The step was rejected by `prim`, with a message containing `message`, whatever it returns.
pub fn rejected<T>(r: Result<T, SchedError>, prim: &str, message: &str) -> SchedError {
    let Err(e) = r else {
        panic!("the step must be rejected");
    };
    assert_eq!(e.primitive, prim, "{e}");
    assert!(
        e.message.contains(message),
        "message '{}' lacks '{message}'",
        e.message
    );
    e
}

/// `step`, applied to the first statement matching `pattern` in a fresh schedule of `src`, is
/// rejected by `prim` with a message containing `message`.
pub fn rejected_at(
    src: &str,
    pattern: &str,
    step: impl FnOnce(&mut Schedule, &Cursor) -> Result<Cursor, SchedError>,
    prim: &str,
    message: &str,
) -> SchedError {
    rejected_in(sched(src), pattern, step, prim, message)
}

/// [`rejected_at`] for a program that may read uninitialised cells ([`sched_reading_uninit`]).
pub fn rejected_at_reading_uninit(
    src: &str,
    pattern: &str,
    step: impl FnOnce(&mut Schedule, &Cursor) -> Result<Cursor, SchedError>,
    prim: &str,
    message: &str,
) -> SchedError {
    rejected_in(sched_reading_uninit(src), pattern, step, prim, message)
}

fn rejected_in(
    mut s: Schedule,
    pattern: &str,
    step: impl FnOnce(&mut Schedule, &Cursor) -> Result<Cursor, SchedError>,
    prim: &str,
    message: &str,
) -> SchedError {
    let at = s.find(pattern).unwrap();
    rejected(step(&mut s, &at), prim, message)
}

/// The value of `name` in the counterexample of `e`.
pub fn cex(e: &SchedError, name: &str) -> i64 {
    e.counterexample
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no value of {name} in {e}"))
        .1
}

pub fn text(s: &Schedule) -> String {
    weft_ir::print::proc_to_string(s.proc())
}

/// The proc's text contains each of `parts`.
pub fn shows_proc(p: &Proc, parts: &[&str]) {
    let t = weft_ir::print::proc_to_string(p);
    for part in parts {
        assert!(t.contains(part), "no '{part}' in\n{t}");
    }
}

/// The scheduled proc's text contains each of `parts`.
pub fn shows(s: &Schedule, parts: &[&str]) {
    shows_proc(s.proc(), parts);
}

/// The scheduled proc's text contains none of `parts`.
pub fn lacks(s: &Schedule, parts: &[&str]) {
    let t = text(s);
    for part in parts {
        assert!(!t.contains(part), "'{part}' still in\n{t}");
    }
}

/// A control argument of the proc, as an expression.
pub fn arg_of(s: &Schedule, name: &str) -> Expr {
    let a = s.proc().arg(name).unwrap();
    Expr::var(&a.sym, Ty::Int)
}

pub fn stack() -> Arc<weft_ir::Memory> {
    weft_syntax::std_memory("DRAM_STACK").unwrap()
}

/// The variable of the first loop matching `pattern`, as an expression.
pub fn var_of(s: &Schedule, loop_pattern: &str) -> Expr {
    match &s.stmt(&s.find(loop_pattern).unwrap()).unwrap().kind {
        StmtKind::For { var, .. } => Expr::var(var, Ty::Int),
        _ => panic!("not a loop"),
    }
}

// =============================================================================================
// The oracle
// =============================================================================================

/// One run: whether it succeeded, the buffers by argument name, the final configs.
pub struct Outcome {
    pub result: Result<(), String>,
    pub bufs: Vec<(String, Vec<Cell>)>,
    pub cfg: ConfigState,
}

/// Run `p` with arguments from `sizes` (by name; names `p` does not take are ignored, so a
/// partially evaluated proc gets the same buffers) and random data from `seed`.
pub fn exec(p: &Proc, sizes: &[(&str, i64)], seed: u64, cfg: &ConfigState) -> Outcome {
    let sizes: HashMap<String, i64> = sizes
        .iter()
        .filter(|(k, _)| p.arg(k).is_some())
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let mut args = random_args(p, &sizes, seed).unwrap_or_else(|e| panic!("{e}"));
    let mut cfg = cfg.clone();
    let result = run(p, &mut args, &mut cfg).map_err(|e| e.to_string());
    let bufs = p
        .args
        .iter()
        .zip(&args)
        .filter_map(|(a, v)| match v {
            ArgValue::Buf(b) => Some((a.sym.name().to_string(), b.data.clone())),
            _ => None,
        })
        .collect();
    Outcome { result, bufs, cfg }
}

/// Initial config states: nothing written, and each listed field set to each listed value.
pub fn cfg_states(fields: &[(&str, usize)], values: &[i64]) -> Vec<ConfigState> {
    let mut out = vec![ConfigState::default()];
    for &v in values {
        let mut c = ConfigState::default();
        for (name, f) in fields {
            c.set(name, *f, ConfigValue::Int(v));
        }
        out.push(c);
    }
    out
}

/// The config fields the schedule's provenance records as polluted between the original and the
/// current proc (empty when the two are not related, as after `partial_eval`).
pub fn polluted(s: &Schedule) -> Vec<(String, usize)> {
    weft_sched::prims::call_eqv::relation(s.version(0).unwrap(), s.proc())
        .unwrap_or_default()
        .into_iter()
        .map(|(c, f)| (c.name.clone(), f))
        .collect()
}

/// The scheduled proc behaves as the original at every size assignment and initial config state:
/// where the original runs without error, so does it, with the same buffers and the same values
/// of the fields `fields` that are not polluted.
pub fn same_everywhere(
    s: &Schedule,
    sizes: &[&[(&str, i64)]],
    cfgs: &[ConfigState],
    fields: &[(&str, usize)],
) {
    let orig = s.version(0).unwrap();
    let new = s.proc();
    let dirty = polluted(s);
    for sz in sizes {
        for c in cfgs {
            for seed in 0..3 {
                let a = exec(orig, sz, seed, c);
                if a.result.is_err() {
                    continue;
                }
                let b = exec(new, sz, seed, c);
                assert!(
                    b.result.is_ok(),
                    "the original runs at {sz:?} from {c:?}, the scheduled proc fails: {:?}\n{}",
                    b.result,
                    text(s)
                );
                for (name, data) in &a.bufs {
                    let other = b
                        .bufs
                        .iter()
                        .find(|(n, _)| n == name)
                        .unwrap_or_else(|| panic!("no buffer {name}"));
                    assert_eq!(
                        data,
                        &other.1,
                        "buffer {name} differs at {sz:?} from {c:?}\n{}",
                        text(s)
                    );
                }
                for (cname, f) in fields {
                    if dirty.iter().any(|(d, g)| d == cname && g == f) {
                        continue;
                    }
                    assert_eq!(
                        a.cfg.get(cname, *f),
                        b.cfg.get(cname, *f),
                        "config {cname}.{f} differs at {sz:?} from {c:?}\n{}",
                        text(s)
                    );
                }
            }
        }
    }
}

/// A sound outcome: the primitive rejected the step (the recheck's "internal error" is not a
/// rejection: it means the primitive produced a proc that does not check), or the scheduled proc
/// behaves as the original ([`same_everywhere`]).
pub fn sound<T>(
    r: Result<T, SchedError>,
    s: &Schedule,
    sizes: &[&[(&str, i64)]],
    cfgs: &[ConfigState],
    fields: &[(&str, usize)],
) {
    match r {
        Err(e) => {
            assert!(
                !e.message.contains("internal error"),
                "the primitive accepted the step and produced a proc that does not check: {e}"
            );
            eprintln!("rejected (sound): {e}");
        }
        Ok(_) => {
            eprintln!("accepted:\n{}", text(s));
            same_everywhere(s, sizes, cfgs, fields);
        }
    }
}

/// The step must be rejected by the primitive (the interpreter cannot show the difference, or the
/// probe is about the rejection itself).
pub fn must_reject<T>(r: Result<T, SchedError>, s: &Schedule) -> SchedError {
    match r {
        Err(e) => {
            assert!(
                !e.message.contains("internal error"),
                "the primitive accepted the step and produced a proc that does not check: {e}"
            );
            eprintln!("rejected: {e}");
            e
        }
        Ok(_) => panic!("the step must be rejected; accepted:\n{}", text(s)),
    }
}

pub const N: &[&[(&str, i64)]] = &[&[("n", 1)], &[("n", 2)], &[("n", 5)]];
pub const NONE: &[&[(&str, i64)]] = &[&[]];

pub fn n_of(s: &Schedule) -> Expr {
    Expr::var(&s.proc().arg("n").unwrap().sym, Ty::Int)
}

pub fn config(src: &str, name: &str) -> Arc<Config> {
    module_of(src).config(name).unwrap().clone()
}

pub fn f32_lit(v: f64) -> Expr {
    Expr::typed_const(weft_ir::Const::Float(v), Ty::Data(DType::F32))
}

/// The schedule of the last `schedule` declaration of `src`, its steps applied in order (every
/// result rechecked) until one is rejected: the schedule so far, and that rejection.
pub fn scheduled(src: &str) -> (Schedule, Result<(), SchedError>) {
    scheduled_with(src, true)
}

/// [`scheduled`], rechecking every step when `recheck`; without, only the last proc must check
/// (as `weft::load` does), for schedules whose steps pass through procs that do not check, such
/// as instruction selection before the registers' `set_memory`.
pub fn scheduled_with(src: &str, recheck: bool) -> (Schedule, Result<(), SchedError>) {
    let m = module_of(src);
    // What the module sees, imported libraries included.
    let (_, scope) = weft_syntax::parse_module_in(
        &mut weft_syntax::SourceMap::new(),
        "t.weft",
        src,
        &weft_syntax::Scope::prelude(),
    )
    .expect("parses");
    let decl = m.schedules.last().expect("a schedule declaration");
    let mut s = Schedule::new(m.proc(&decl.base).expect("the base proc").clone());
    s.recheck = recheck;
    let procs = |n: &str| m.proc(n).or_else(|| scope.procs.get(n)).cloned();
    let memories = |n: &str| scope.memory(n).cloned();
    for step in &decl.steps {
        let r = weft_sched::script::apply_step_in(&mut s, step, &memories, &procs);
        if let Err(e) = r {
            return (s, Err(e));
        }
    }
    (s, Ok(()))
}

/// [`module_of`] for programs whose only fault is reading cells that may be uninitialised (rule
/// `init`): the probes written before that rule study how rewrites keep such reads' error values,
/// which the interpreter still defines.
pub fn module_reading_uninit(src: &str) -> weft_ir::Module {
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src)
        .unwrap_or_else(|e| panic!("does not parse: {e:?}\n{src}"));
    if let Err(ds) = weft_check::check_module(&m) {
        assert!(
            ds.iter().all(|d| d.rule == "init"),
            "does not check for another reason than `init`: {ds:?}"
        );
    }
    m
}

/// [`sched`] for a program that reads cells that may be uninitialised: no recheck (the results
/// read them too); [`sound`] still compares every cell, error values included.
pub fn sched_reading_uninit(src: &str) -> Schedule {
    Schedule::new(module_reading_uninit(src).procs.last().unwrap().clone())
}
