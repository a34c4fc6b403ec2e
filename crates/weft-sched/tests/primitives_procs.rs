//! The primitives that work across procs: `extract_proc` (a block becomes a new proc and a call),
//! `partial_eval` (control arguments fixed to constants) and `call_eqv` (a call switched to an
//! equivalent proc by provenance), and the effect analysis reading calls through the simplest
//! equivalent callee. Each is accepted where it must be, with results compared against the
//! original on the reference interpreter, and rejected where it must be, with the message and
//! counterexample the user sees.

mod common;

use common::{cex, module_of, rejected, same_for_n, same_results, sched, shows_proc, text};
use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{random_args, run, ArgValue, ConfigState};
use weft_ir::{Origin, Proc, StmtKind};
use weft_sched::Schedule;

// ----- extract_proc -----

const SUMS: &str =
    "proc p(n: size, m: size, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM, z: f32[m] @ DRAM) {
    assert m >= n;
    for i in 0..n {
        y[i] = 0.0;
        for j in 0..8 {
            y[i] += x[i, j];
        }
        z[i] = y[i] * 2.0;
    }
}";

#[test]
fn extract_proc_moves_a_block_into_a_checked_proc() {
    let mut s = sched(SUMS);
    let at = s.find("y =").unwrap();
    let (call, g) = s.extract_proc(&at, 3, "row").unwrap();
    // The cursor designates the call, the only statement of the loop body now.
    let StmtKind::Call { proc, args } = &s.stmt(&call).unwrap().kind else {
        panic!("not a call: {}", text(&s));
    };
    assert!(Arc::ptr_eq(proc, &g));
    assert_eq!(args.len(), g.args.len());
    assert_eq!(s.extracted().len(), 1);
    assert!(Arc::ptr_eq(&s.extracted()[0], &g));
    weft_check::check_proc(&g).unwrap_or_else(|d| panic!("{d:?}"));
    // The facts over the arguments are its preconditions.
    shows_proc(
        &g,
        &[
            "proc row(n: size, m: size, i: index, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM, z: f32[m] @ DRAM) {",
            "assert m >= n;",
            "assert 0 <= i;",
            "assert i < n;",
            "y[i] += x[i, j];",
        ],
    );
    assert!(text(&s).contains("row(n, m, i, x, y, z);"), "{}", text(&s));
    for n in [1, 4] {
        same_results(&s, &[("n", n), ("m", n + 2)]);
    }
}

#[test]
fn extract_proc_takes_the_facts_connected_to_its_arguments_when_it_needs_them() {
    let src = "proc p(n: size, m: size, z: f32[m] @ DRAM) {
    assert m >= n;
    for i in 0..n {
        z[i] = 2.0;
    }
}";
    let mut s = sched(src);
    let (_, g) = s.extract_proc(&s.find("z =").unwrap(), 1, "set").unwrap();
    // `z[i]` needs `i < m`: from `i < n` (the loop) and `m >= n` (the caller's precondition),
    // which pull `n` in although the statement does not mention it.
    shows_proc(
        &g,
        &[
            "proc set(n: size, m: size, i: index, z: f32[m] @ DRAM) {",
            "assert m >= n;",
            "assert 0 <= i;",
            "assert i < n;",
        ],
    );
    for n in [1, 3] {
        same_results(&s, &[("n", n), ("m", n + 1)]);
    }
}

#[test]
fn extract_proc_passes_allocations_and_windows() {
    let src = "proc p(n: size, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[8] @ DRAM_STACK;
        let v = x[i, 0:8];
        for j in 0..8 {
            t[j] = v[j] * 2.0;
        }
        y[i] = t[0] + t[7];
    }
}";
    let mut s = sched(src);
    let (_, g) = s
        .extract_proc(&s.find("for j").unwrap(), 2, "twice")
        .unwrap();
    shows_proc(
        &g,
        &[
            "proc twice(n: size, i: index, y: f32[n] @ DRAM, t: f32[8] @ DRAM_STACK, v: [f32][8] @ DRAM) {",
            "t[j] = v[j] * 2.0;",
        ],
    );
    assert!(text(&s).contains("twice(n, i, y, t, v);"), "{}", text(&s));
    same_for_n(&s, &[1, 3]);
}

#[test]
fn extract_proc_rebinds_windows_of_a_buffer_it_also_uses() {
    // Passing both `x` and its window `v` would alias a written buffer: `x` goes alone and `v` is
    // bound again inside.
    let src = "proc p(n: size, x: f32[n, 8] @ DRAM) {
    for i in 0..n {
        let v = x[i, 0:8];
        for j in 0..8 {
            x[i, j] = v[7 - j] + 1.0;
        }
    }
}";
    let mut s = sched(src);
    let (_, g) = s
        .extract_proc(&s.find("for j").unwrap(), 1, "body")
        .unwrap();
    shows_proc(
        &g,
        &[
            "proc body(n: size, i: index, x: f32[n, 8] @ DRAM) {",
            "let v = x[i, 0:8];",
        ],
    );
    same_for_n(&s, &[1, 2]);
}

#[test]
fn extract_proc_then_schedule_the_new_proc_and_call_it_back() {
    let mut s = sched(SUMS);
    let (call, g) = s
        .extract_proc(&s.find("for j").unwrap(), 1, "dot8")
        .unwrap();
    let mut t = Schedule::new(g.clone());
    t.recheck = true;
    let j = t.find("for j").unwrap();
    t.split(&j, 4, "jo", "ji", weft_sched::Tail::Perfect)
        .unwrap();
    t.rename("dot8_split").unwrap();
    s.call_eqv(&call, t.proc()).unwrap();
    assert!(text(&s).contains("dot8_split(n, i, x, y);"), "{}", text(&s));
    for n in [1, 5] {
        same_results(&s, &[("n", n), ("m", n)]);
    }
}

#[test]
fn extract_proc_rejects_escaping_names_bad_ranges_and_unchecked_procs() {
    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[1] @ DRAM_STACK;
        t[0] = x[i];
        y[i] = t[0];
    }
}";
    let mut s = sched(src);
    let at = s.find("alloc t").unwrap();
    let e = rejected(
        s.extract_proc(&at, 2, "g"),
        "extract_proc",
        "used after them",
    );
    assert!(e.stmts[0].1.contains("alloc t"), "{e}");
    rejected(
        s.extract_proc(&at, 4, "g"),
        "extract_proc",
        "there are no 4 statements",
    );
    rejected(
        s.extract_proc(&at, 0, "g"),
        "extract_proc",
        "there are no 0 statements",
    );
    rejected(
        s.extract_proc(&at, 3, "p"),
        "extract_proc",
        "like the proc it comes from",
    );
    rejected(
        s.extract_proc(&at, 3, "9g"),
        "extract_proc",
        "not a valid proc name",
    );
    // Nothing was recorded by the rejected steps; the whole body extracts.
    assert!(s.extracted().is_empty());
    s.extract_proc(&at, 3, "g").unwrap();
    same_results(&s, &[("n", 3)]);

    let src = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[1] @ DRAM_STACK;
        t[0] = x[i];
        y[i] = t[0];
        free t;
    }
}";
    let mut s = sched(src);
    let at = s.find("y =").unwrap();
    let e = rejected(
        s.extract_proc(&at, 2, "g"),
        "extract_proc",
        "the statements free 't', which is allocated before them",
    );
    assert!(e.stmts[0].1.contains("free t"), "{e}");
    s.extract_proc(&at, 1, "g").unwrap();

    // A window that may be empty is fine in the caller, but a parameter's extent must be positive.
    let src = "proc p(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        let v = x[0:i];
        if i > 0 {
            v[0] = 1.0;
        }
    }
}";
    let mut s = sched(src);
    let at = s.find("if").unwrap();
    rejected(
        s.extract_proc(&at, 1, "g"),
        "extract_proc",
        "the extracted proc 'g' does not check on its own: extent 0 of `v` may not be positive",
    );
}

// ----- partial_eval -----

const ROWSUM: &str = "proc p(n: size, k: size, x: f32[n, k] @ DRAM, y: f32[n] @ DRAM) {
    assert k % 4 == 0;
    for i in 0..n {
        y[i] = 0.0;
        for j in 0..k {
            y[i] += x[i, j];
        }
    }
}";

/// The scheduled proc, whose arguments `fixed` were fixed, gives the original's results when the
/// original is called with those values.
fn same_results_fixed(s: &Schedule, sizes: &[(&str, i64)], fixed: &[(&str, i64)]) {
    let orig = s.version(0).unwrap();
    let all: HashMap<String, i64> = sizes
        .iter()
        .chain(fixed)
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    for seed in 0..3 {
        let mut a = random_args(orig, &all, seed).unwrap();
        let mut b: Vec<ArgValue> = orig
            .args
            .iter()
            .zip(&a)
            .filter(|(arg, _)| !fixed.iter().any(|(n, _)| arg.sym.name() == *n))
            .map(|(_, v)| v.clone())
            .collect();
        assert_eq!(b.len(), s.proc().args.len());
        run(orig, &mut a, &mut ConfigState::default()).unwrap();
        run(s.proc(), &mut b, &mut ConfigState::default()).unwrap();
        let bufs = |v: &[ArgValue]| -> Vec<Vec<_>> {
            v.iter()
                .filter_map(|x| match x {
                    ArgValue::Buf(b) => Some(b.data.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(bufs(&a), bufs(&b), "results differ at {all:?}");
    }
}

#[test]
fn partial_eval_fixes_sizes_and_drops_settled_preconditions() {
    let mut s = sched(ROWSUM);
    s.partial_eval(&[("k", 8)]).unwrap();
    let t = text(&s);
    assert!(
        t.contains("proc p(n: size, x: f32[n, 8] @ DRAM, y: f32[n] @ DRAM) {"),
        "{t}"
    );
    assert!(t.contains("for j in 0..8 {"), "{t}");
    assert!(!t.contains("assert"), "{t}");
    // A fixed proc has a new signature: it is no longer derived from the original.
    assert!(s.proc().origin.is_none());
    for n in [1, 3] {
        same_results_fixed(&s, &[("n", n)], &[("k", 8)]);
    }

    // Both sizes, one of them 1.
    let mut s = sched(ROWSUM);
    s.partial_eval(&[("n", 1), ("k", 4)]).unwrap();
    assert!(
        text(&s).contains("proc p(x: f32[1, 4] @ DRAM, y: f32[1] @ DRAM) {"),
        "{}",
        text(&s)
    );
    same_results_fixed(&s, &[], &[("n", 1), ("k", 4)]);
}

#[test]
fn partial_eval_keeps_preconditions_on_the_other_arguments() {
    let src = "proc p(n: size, m: size, x: f32[m] @ DRAM) {
    assert m >= n;
    assert m % 2 == 0;
    for i in 0..n {
        x[i] = 1.0;
    }
}";
    let mut s = sched(src);
    s.partial_eval(&[("n", 3)]).unwrap();
    let t = text(&s);
    assert!(t.contains("assert m >= 3;"), "{t}");
    assert!(t.contains("assert m % 2 == 0;"), "{t}");
    assert!(t.contains("for i in 0..3 {"), "{t}");
    same_results_fixed(&s, &[("m", 4)], &[("n", 3)]);
}

#[test]
fn partial_eval_rejects_values_that_violate_preconditions_or_types() {
    let mut s = sched(ROWSUM);
    let e = rejected(
        s.partial_eval(&[("k", 6)]),
        "partial_eval",
        "with k = 6, the precondition `k % 4 == 0` of 'p' cannot hold",
    );
    assert_eq!(cex(&e, "k"), 6);
    let e = rejected(
        s.partial_eval(&[("k", 0)]),
        "partial_eval",
        "'k' is a size: 0 is not positive",
    );
    assert_eq!(cex(&e, "k"), 0);
    rejected(
        s.partial_eval(&[("n", -2)]),
        "partial_eval",
        "is not positive",
    );
    rejected(
        s.partial_eval(&[("q", 2)]),
        "partial_eval",
        "'p' has no argument 'q'",
    );
    rejected(
        s.partial_eval(&[("x", 2)]),
        "partial_eval",
        "'x' is a buffer",
    );
    rejected(
        s.partial_eval(&[("k", 4), ("k", 8)]),
        "partial_eval",
        "'k' is given more than once",
    );
    rejected(s.partial_eval(&[]), "partial_eval", "no argument to fix");

    // Each precondition can hold on its own, but not both together.
    let src = "proc p(n: size, m: size, x: f32[m] @ DRAM) {
    assert m >= n;
    assert m < 4;
    x[0] = 1.0;
}";
    let mut s = sched(src);
    let e = rejected(
        s.partial_eval(&[("n", 5)]),
        "partial_eval",
        "with n = 5, no values of the other arguments satisfy the preconditions of 'p'",
    );
    assert_eq!(cex(&e, "n"), 5);
    assert_eq!(s.steps().len(), 0);
}

// ----- call_eqv -----

const TWICE: &str = "proc f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] * 2.0;
    }
}
proc h(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] + x[i];
    }
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    f(n, x, y);
    f(n, y, z);
}";

/// `f` of the module, split by `factor` and renamed.
fn split_f(m: &weft_ir::Module, factor: i64, name: &str) -> Arc<Proc> {
    let mut t = Schedule::new(m.proc("f").unwrap().clone());
    t.recheck = true;
    let i = t.find("for i").unwrap();
    t.split(&i, factor, "io", "ii", weft_sched::Tail::Guard)
        .unwrap();
    t.rename(name).unwrap();
    t.proc().clone()
}

#[test]
fn call_eqv_switches_between_a_proc_and_its_scheduled_versions() {
    let m = module_of(TWICE);
    let f = m.proc("f").unwrap().clone();
    let f4 = split_f(&m, 4, "f4");
    let f2 = split_f(&m, 2, "f2");
    // The scheduled version records the original as its simplest equivalent.
    assert!(std::ptr::eq(f4.simplest_equivalent(), &*f));
    let mut s = Schedule::new(m.proc("p").unwrap().clone());
    s.recheck = true;
    // f to a version scheduled from it.
    let c = s.call_eqv(&s.find("call f").unwrap(), &f4).unwrap();
    assert!(text(&s).contains("f4(n, x, y);"), "{}", text(&s));
    // Back: a scheduled version to the proc it was scheduled from.
    s.call_eqv(&c, &f).unwrap();
    // Between two versions scheduled from a common ancestor.
    let c2 = s.find("call f #1").unwrap();
    s.call_eqv(&c2, &f4).unwrap();
    s.call_eqv(&c2, &f2).unwrap();
    let t = text(&s);
    assert!(t.contains("f(n, x, y);\n    f2(n, y, z);"), "{t}");
    // The caller's versions are recorded as equivalent to it as well.
    assert!(std::ptr::eq(
        s.proc().simplest_equivalent(),
        &**s.version(0).unwrap()
    ));
    same_for_n(&s, &[1, 7]);
}

#[test]
fn call_eqv_rejects_unrelated_procs_and_other_signatures() {
    let m = module_of(TWICE);
    let h = m.proc("h").unwrap().clone();
    let mut s = Schedule::new(m.proc("p").unwrap().clone());
    let c = s.find("call f").unwrap();
    let e = rejected(
        s.call_eqv(&c, &h),
        "call_eqv",
        "'f' and 'h' are not known to be equivalent",
    );
    assert!(e.stmts[0].1.contains("f(n, x, y)"), "{e}");
    // A scheduled version of an unrelated proc is unrelated too.
    let mut t = Schedule::new(h.clone());
    t.split(
        &t.find("for i").unwrap(),
        2,
        "io",
        "ii",
        weft_sched::Tail::Guard,
    )
    .unwrap();
    rejected(
        s.call_eqv(&c, t.proc()),
        "call_eqv",
        "not known to be equivalent",
    );
    // A version with its sizes fixed has another signature.
    let mut t = Schedule::new(m.proc("f").unwrap().clone());
    t.partial_eval(&[("n", 4)]).unwrap();
    rejected(
        s.call_eqv(&c, t.proc()),
        "call_eqv",
        "does not have the signature of 'f'",
    );
    rejected(
        s.call_eqv(&c, m.proc("p").unwrap()),
        "call_eqv",
        "does not have the signature",
    );
    assert_eq!(s.steps().len(), 0);
}

#[test]
fn call_eqv_does_not_treat_a_precision_change_as_an_equivalence() {
    let src = "proc f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        alloc t: f32[1] @ DRAM_STACK;
        t[0] = x[i] * 3.0;
        y[i] = t[0];
    }
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    f(n, x, y);
}";
    let m = module_of(src);
    let mut t = Schedule::new(m.proc("f").unwrap().clone());
    t.set_precision(&t.find("alloc t").unwrap(), weft_ir::DType::F64)
        .unwrap();
    assert!(t.proc().origin.is_none());
    let mut s = Schedule::new(m.proc("p").unwrap().clone());
    let c = s.find("call f").unwrap();
    rejected(
        s.call_eqv(&c, t.proc()),
        "call_eqv",
        "not known to be equivalent",
    );
}

#[test]
fn call_eqv_modulo_polluted_config_fields() {
    let src = "config Cfg { k: index }
proc f(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        x[i] = 1.0;
    }
}
proc p(n: size, x: f32[n] @ DRAM) {
    f(n, x);
}
proc q(n: size, x: f32[n] @ DRAM) {
    f(n, x);
    if Cfg.k == 0 {
        x[0] = 2.0;
    }
}";
    let m = module_of(src);
    let f = m.proc("f").unwrap().clone();
    let cfg = m.config("Cfg").unwrap().clone();
    // A version of `f` equivalent to it only modulo `Cfg.k` (as a config-writing step records).
    let g = Arc::new(Proc {
        name: "g".into(),
        origin: Some(Origin {
            parent: f.clone(),
            polluted: vec![(cfg, 0)],
        }),
        ..(*f).clone()
    });
    // A polluted version is not the simplest equivalent of anything past the polluting step.
    assert!(std::ptr::eq(g.simplest_equivalent(), &*g));
    let mut s = Schedule::new(m.proc("q").unwrap().clone());
    rejected(
        s.call_eqv(&s.find("call f").unwrap(), &g),
        "call_eqv",
        "equivalent only modulo Cfg.k, and 'q' reads Cfg.k",
    );
    let mut s = Schedule::new(m.proc("p").unwrap().clone());
    s.call_eqv(&s.find("call f").unwrap(), &g).unwrap();
    let o = s.proc().origin.as_ref().unwrap();
    assert_eq!(o.polluted_names(), vec!["Cfg.k".to_string()]);
}

// ----- the effect analysis reads calls through the simplest equivalent -----

#[test]
fn call_effects_use_the_root_of_the_callee_provenance() {
    let src = "proc f(x: f32[4] @ DRAM, y: f32[4] @ DRAM) {
    for i in 0..4 {
        y[i] = x[i] * 2.0;
    }
}
proc p(x: f32[4] @ DRAM, y: f32[4] @ DRAM) {
    f(x, y);
}";
    let m = module_of(src);
    let mut t = Schedule::new(m.proc("f").unwrap().clone());
    t.unroll(&t.find("for i").unwrap()).unwrap();
    let mut s = Schedule::new(m.proc("p").unwrap().clone());
    s.call_eqv(&s.find("call f").unwrap(), t.proc()).unwrap();
    let mut a = weft_sched::effects::Analysis::new();
    let scope = a.proc_scope(s.proc());
    // The unrolled callee has eight accesses as written; its root has one read and one write.
    assert_eq!(a.effects(&scope, &s.proc().body).accesses.len(), 2);
    assert_eq!(
        a.effects_as_written(&scope, &s.proc().body).accesses.len(),
        8
    );
    same_results(&s, &[]);
}

// ----- text schedules -----

#[test]
fn text_steps_extract_partial_eval_and_call_eqv() {
    let src = "proc f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] * 2.0;
    }
}
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {
    assert n % 4 == 0;
    f(n, x, y);
    for i in 0..n {
        z[i] = y[i] + 1.0;
    }
}
schedule f4 = f {
    split(i, 4, io, ii, guard);
}
schedule p2 = p {
    call_eqv(\"call f\", f4);
    extract_proc(i, tail, 1);
    partial_eval(n=8);
}
schedule p3 = p {
    call_eqv(\"call f\", p);
}
schedule p4 = p {
    extract_proc(i, f);
}
schedule p5 = p {
    partial_eval(n=6);
}";
    let m = module_of(src);
    let mut procs: Vec<Arc<Proc>> = m.procs.clone();
    let run_decl = |name: &str, procs: &mut Vec<Arc<Proc>>| {
        let decl = m.schedules.iter().find(|d| d.name == name).unwrap();
        let base = procs.iter().find(|q| q.name == decl.base).unwrap().clone();
        let known = procs.clone();
        let resolve = move |n: &str| known.iter().find(|q| q.name == n).cloned();
        let r =
            weft_sched::script::apply_in(decl, base, &weft_syntax::std_memory, &resolve, |_, _| {});
        if let Ok((q, s)) = &r {
            procs.extend(s.extracted().iter().cloned());
            procs.push(q.clone());
        }
        r.map(|(q, s)| (q, s.extracted().to_vec()))
    };
    let (f4, _) = run_decl("f4", &mut procs).unwrap();
    assert_eq!(f4.parent().unwrap().name, "f");
    let (p2, made) = run_decl("p2", &mut procs).unwrap();
    assert_eq!(made.len(), 1);
    let t = weft_ir::print::proc_to_string(&p2);
    assert!(
        t.contains("proc p2(x: f32[8] @ DRAM, y: f32[8] @ DRAM, z: f32[8] @ DRAM) {"),
        "{t}"
    );
    assert!(t.contains("f4(8, x, y);"), "{t}");
    assert!(t.contains("tail(8, y, z);"), "{t}");
    weft_check::check_procs(std::slice::from_ref(&p2)).unwrap_or_else(|d| panic!("{d:?}"));
    shows_proc(
        &made[0],
        &["proc tail(n: size, y: f32[n] @ DRAM, z: f32[n] @ DRAM) {"],
    );

    // The original and the scheduled proc agree at n = 8.
    let p = m.proc("p").unwrap();
    let sizes: HashMap<String, i64> = [("n".to_string(), 8)].into_iter().collect();
    let mut a = random_args(p, &sizes, 1).unwrap();
    let mut b = a[1..].to_vec();
    run(p, &mut a, &mut ConfigState::default()).unwrap();
    run(&p2, &mut b, &mut ConfigState::default()).unwrap();
    for (u, v) in a[1..].iter().zip(&b) {
        if let (ArgValue::Buf(u), ArgValue::Buf(v)) = (u, v) {
            assert_eq!(u.data, v.data);
        }
    }

    let d = run_decl("p3", &mut procs).unwrap_err();
    assert!(
        d.message.contains("does not have the signature of 'f'"),
        "{}",
        d.message
    );
    let d = run_decl("p4", &mut procs).unwrap_err();
    assert!(
        d.message.contains("a proc named `f` already exists"),
        "{}",
        d.message
    );
    let d = run_decl("p5", &mut procs).unwrap_err();
    assert!(
        d.message
            .contains("the precondition `n % 4 == 0` of 'p' cannot hold"),
        "{}",
        d.message
    );
    assert!(d.notes.iter().any(|n| n.contains("n = 6")), "{:?}", d.notes);
    // A binding without its value is refused by the parser, with the parameter's form.
    let bad = src.replace("partial_eval(n=6);", "partial_eval(n);");
    let d =
        weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "p.weft", &bad).unwrap_err();
    assert!(
        d[0].message.contains("expected `=`") && d[0].notes[0].contains("`NAME = integer`"),
        "{:?}",
        d[0]
    );
}
