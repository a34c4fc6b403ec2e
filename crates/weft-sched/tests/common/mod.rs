//! Helpers shared by the primitive tests: procs from source, schedules that recheck every step,
//! results compared on the reference interpreter, and the rejections the user sees.

// Each test crate uses its own subset of these.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{random_args, run, ArgValue, ConfigState};
use weft_ir::{Expr, Proc, StmtKind, Ty};
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
    let mut s = sched(src);
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
