//! Calls of scheduled procs from procs of the same file (`weft::link`): a call is switched to the
//! scheduled proc only on `call_eqv`'s terms, and parallel loops are proved again after linking
//! (issue 8, items 3 and 4).

use std::collections::HashMap;
use weft_interp::{random_args, run, ArgValue, ConfigState};

fn load(src: &str) -> Result<weft::Program, weft::Error> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.weft");
    std::fs::write(&path, src).unwrap();
    weft::load(&path)
}

fn rejected(src: &str, rule: &str, fragments: &[&str]) {
    let e = match load(src) {
        Ok(_) => panic!("the program must be rejected"),
        Err(e) => e,
    };
    assert_eq!(e.diagnostics[0].rule, rule, "{e}");
    for f in fragments {
        assert!(e.rendered.contains(f), "no '{f}' in:\n{e}");
    }
}

const POLLUTING: &str = "config C { k: index }
proc f(n: size, x: f32[n]) {
    for i in 0..n { x[i] += 1.0; }
}
schedule g = f { write_config(i, C.k, 5); }
";

/// Item 3: the schedule leaves `C.k` different; a caller that reads it after the call would see
/// another value than it was checked (and scheduled) against.
#[test]
fn a_caller_that_reads_a_polluted_config_field_is_not_linked() {
    let src = format!(
        "{POLLUTING}proc h(n: size, x: f32[n], y: f32[1]) {{
    C.k = 0;
    g(n, x);
    if C.k == 0 {{ y[0] = 2.0; }}
}}
"
    );
    rejected(&src, "schedule", &["`g`", "C.k"]);
}

/// The same schedule links into a caller that does not read the field, and the linked caller
/// computes what the caller as written computes.
#[test]
fn a_caller_that_leaves_the_polluted_field_alone_is_linked() {
    let src = format!(
        "{POLLUTING}proc h(n: size, x: f32[n], y: f32[1]) {{
    g(n, x);
    y[0] = 2.0;
}}
"
    );
    let p = load(&src).unwrap_or_else(|e| panic!("{e}"));
    let h = p.module.proc("h").unwrap();
    let origin = h
        .origin
        .as_ref()
        .expect("the linked caller records its origin");
    assert_eq!(origin.polluted_names(), ["C.k"]);
    let sizes: HashMap<String, i64> = [("n".to_string(), 3)].into();
    for (q, expect_write) in [(h, true), (&origin.parent, false)] {
        let mut args = random_args(q, &sizes, 1).unwrap();
        let before = args.clone();
        let mut cfg = ConfigState::default();
        run(q, &mut args, &mut cfg).unwrap();
        let ArgValue::Buf(x) = &args[1] else { panic!() };
        let ArgValue::Buf(x0) = &before[1] else {
            panic!()
        };
        assert_ne!(x.data, x0.data);
        assert_eq!(cfg.get("C", 0).is_some(), expect_write);
    }
}

/// Item 4: the parallel loop was proved race-free against the stand-in (`f` touches `x[0]`); the
/// scheduled `g` writes the staged region `x[0:2]` back whole, so neighbouring iterations race.
#[test]
fn parallel_loops_are_proved_again_after_linking() {
    let src = "proc f(x: [f32][2]) {
    x[0] += 1.0;
}
schedule g = f { stage_mem(\"x +=\", x[0:2], t); }
proc h(n: size, y: f32[n + 1]) {
    for i in par(0..n) {
        g(y[i:i + 2]);
    }
}
";
    rejected(src, "race", &["`h`", "race"]);
}

/// A schedule that is not an equivalence of its base cannot stand behind its base's stand-in.
#[test]
fn a_schedule_that_changes_precision_is_not_linked() {
    let src = "proc f(n: size, x: f32[n]) {
    alloc t: f32;
    for i in 0..n { t = x[i]; x[i] = t * 3.0; }
}
schedule g = f { set_precision(\"alloc t\", f64); }
proc h(n: size, x: f32[n]) {
    g(n, x);
}
";
    rejected(src, "schedule", &["`g`", "not known to be equivalent"]);
}

/// `h` was checked against the stand-in (`f`'s body writes `x[0]` and reads nothing); the
/// scheduled `g` stages all of `x`, so its copy-in reads `a[1..4]`, which `h` never wrote. The
/// linked caller is checked again, and the failure names the call, the schedule and the rule.
#[test]
fn linked_callers_are_checked_again() {
    let src = "proc f(x: f32[4]) {
    x[0] = 1.0;
}
schedule g = f {
    stage_mem(\"x =\", x[0:4], t, DRAM);
}
proc h(y: f32[1]) {
    alloc a: f32[4];
    g(a);
    y[0] = a[0];
    free a;
}
";
    rejected(
        src,
        "init",
        &["`h`", "schedule `g`", "`f`", "never written", "g(a)"],
    );
    // Written before the call, the staged copy-in reads defined cells: linked.
    let ok = src.replace(
        "alloc a: f32[4];",
        "alloc a: f32[4];\n    for i in 0..4 { a[i] = 0.0; }",
    );
    let p = load(&ok).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.module.proc("h").unwrap().origin.is_some());
}
