//! Acceptance and rejection tests of the checker on procs built with the Rust API. Each
//! rejection test checks the rule and the key parts of the message.

mod common;

use std::sync::Arc;
use weft_check::{check_module, check_proc};
use weft_ir::build::ProcBuilder;
use weft_ir::{DType, Diagnostic, Expr, Memory, Module, Span, Sym, Ty, WinCoord};

fn mem(name: &str, addressable: bool, last_dim: Option<i64>) -> Arc<Memory> {
    Arc::new(Memory {
        name: name.into(),
        header: String::new(),
        alloc: "{type} *{name} = malloc(({size}) * sizeof({type}));".into(),
        free: "free({name});".into(),
        access: "{name}[{offset}]".into(),
        addressable,
        last_dim,
        max_bytes: None,
        isa: Vec::new(),
        dtypes: Vec::new(),
        span: Span::DUMMY,
    })
}

fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

fn one_error(r: Result<(), Vec<Diagnostic>>) -> Diagnostic {
    let d = r.expect_err("the checker accepted an unsafe or ill-formed proc");
    assert!(!d.is_empty());
    d[0].clone()
}

fn sgemm() -> Arc<weft_ir::Proc> {
    let mut p = ProcBuilder::new("sgemm", &dram());
    let m = p.size("M");
    let n = p.size("N");
    let k = p.size("K");
    let a = p.tensor("A", DType::F32, vec![m.clone(), k.clone()]);
    let b = p.tensor("B", DType::F32, vec![k.clone(), n.clone()]);
    let c = p.tensor("C", DType::F32, vec![m.clone(), n.clone()]);
    p.body().for_("i", 0, &m, |bb, i| {
        bb.for_("j", 0, &n, |bb, j| {
            bb.for_("k", 0, &k, |bb, kk| {
                bb.reduce(
                    &c,
                    vec![i.clone(), j.clone()],
                    a.at(vec![i.clone(), kk.clone()]) * b.at(vec![kk.clone(), j.clone()]),
                );
            });
        });
    });
    p.finish()
}

#[test]
fn accepts_sgemm() {
    check_proc(&sgemm()).unwrap();
}

#[test]
fn rejects_out_of_bounds_with_counterexample() {
    let mut p = ProcBuilder::new("oob", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(&x, vec![i + 1], Expr::float(0.0));
    });
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "bounds");
    assert!(d.message.contains("`x`"), "{d}");
    let note = d.notes.join(" ");
    assert!(note.contains("counterexample"), "{d}");
    assert!(note.contains("n = ") && note.contains("i = "), "{d}");
    // The counterexample is a real one: the index equals the extent.
    assert!(note.contains("index = "), "{d}");
}

#[test]
fn accepts_guarded_access_and_rejects_unguarded() {
    // if i + 1 < n { x[i + 1] = 0 } is safe.
    let mut p = ProcBuilder::new("guarded", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        let i = i.clone();
        b.if_((&i + 1).lt(n.clone()), |b| {
            b.assign(&x, vec![&i + 1], Expr::float(0.0));
        });
    });
    check_proc(&p.finish()).unwrap();
}

#[test]
fn rejects_mixed_precision() {
    let mut p = ProcBuilder::new("mixed", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    let y = p.tensor("y", DType::I8, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(
            &x,
            vec![i.clone()],
            x.at(vec![i.clone()]) * y.at(vec![i.clone()]),
        );
    });
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "type");
    assert!(d.message.contains("f32") && d.message.contains("i8"), "{d}");
}

#[test]
fn rejects_data_dependent_loop_bound() {
    let mut p = ProcBuilder::new("datadep", &dram());
    let n = p.size("n");
    let len = p.scalar("len", DType::I32);
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, len.get(), |b, _i| {
        b.assign(&x, vec![Expr::int(0)], Expr::float(1.0));
    });
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "data-dependent-control");
    assert!(d.message.contains("loop bound"), "{d}");
}

#[test]
fn rejects_non_affine_index() {
    let mut p = ProcBuilder::new("nonaffine", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        let i = i.clone();
        b.for_("j", 0, 1, |b, j| {
            b.assign(&x, vec![&i * j], Expr::float(0.0));
        });
    });
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "quasi-affine");
    assert!(d.message.contains("i * j"), "{d}");
}

fn small_callee() -> Arc<weft_ir::Proc> {
    let mut p = ProcBuilder::new("small", &dram());
    let m = p.size("m");
    let x = p.window("x", DType::F32, vec![m.clone()]);
    p.assert(m.clone().le(16));
    p.body().for_("i", 0, &m, |b, i| {
        b.assign(&x, vec![i.clone()], Expr::float(0.0));
    });
    p.finish()
}

#[test]
fn rejects_call_violating_precondition() {
    let callee = small_callee();
    check_proc(&callee).unwrap();
    let mut p = ProcBuilder::new("caller", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().call(
        &callee,
        vec![
            n.clone(),
            x.win(vec![WinCoord::Interval(Expr::int(0), n.clone())]),
        ],
    );
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "precondition");
    assert!(d.message.contains("m <= 16"), "{d}");
    assert!(d.notes.join(" ").contains("n = "), "{d}");
}

#[test]
fn accepts_call_under_caller_precondition() {
    let callee = small_callee();
    let mut p = ProcBuilder::new("caller", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.assert(n.clone().le(8));
    p.body().call(
        &callee,
        vec![
            n.clone(),
            x.win(vec![WinCoord::Interval(Expr::int(0), n.clone())]),
        ],
    );
    check_proc(&p.finish()).unwrap();
}

#[test]
fn rejects_call_shape_mismatch() {
    let callee = small_callee();
    let mut p = ProcBuilder::new("caller", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.assert(n.clone().le(8));
    p.body().call(
        &callee,
        vec![
            n.clone(),
            x.win(vec![WinCoord::Interval(Expr::int(0), n.clone() - 1)]),
        ],
    );
    let d = check_proc(&p.finish()).unwrap_err();
    assert!(
        d.iter()
            .any(|d| d.rule == "call" && d.message.contains("shape")),
        "{d:?}"
    );
}

#[test]
fn rejects_unknown_symbol() {
    let mut p = ProcBuilder::new("unbound", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    let ghost = Sym::new("ghost");
    p.body()
        .assign(&x, vec![Expr::var(&ghost, Ty::Int)], Expr::float(0.0));
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "unknown-name");
    assert!(d.message.contains("ghost"), "{d}");
}

#[test]
fn rejects_duplicate_proc_names() {
    let m = Module {
        procs: vec![sgemm(), sgemm()],
        ..Module::default()
    };
    let d = check_module(&m).unwrap_err();
    assert_eq!(d[0].rule, "duplicate-definition");
    assert!(d[0].message.contains("sgemm"));
}

#[test]
fn rejects_overlapping_written_arguments() {
    let mut c = ProcBuilder::new("copy", &dram());
    let m = c.size("m");
    let dst = c.window("dst", DType::F32, vec![m.clone()]);
    let src = c.window("src", DType::F32, vec![m.clone()]);
    c.body().for_("i", 0, &m, |b, i| {
        b.assign(&dst, vec![i.clone()], src.at(vec![i.clone()]));
    });
    let callee = c.finish();
    let mk = |lo2: i64| {
        let mut p = ProcBuilder::new("caller", &dram());
        let x = p.tensor("x", DType::F32, vec![Expr::int(8)]);
        p.body().call(
            &callee,
            vec![
                Expr::int(4),
                x.win(vec![WinCoord::Interval(Expr::int(0), Expr::int(4))]),
                x.win(vec![WinCoord::Interval(Expr::int(lo2), Expr::int(lo2 + 4))]),
            ],
        );
        p.finish()
    };
    check_proc(&mk(4)).unwrap();
    let d = one_error(check_proc(&mk(2)));
    assert_eq!(d.rule, "alias");
}

#[test]
fn rejects_direct_access_to_non_addressable_memory() {
    let reg = mem("REG", false, Some(16));
    let mut p = ProcBuilder::new("touch", &dram());
    let r = p.buffer(
        "r",
        weft_ir::BufType {
            elem: DType::F32,
            shape: vec![Expr::int(16)],
            window: false,
            mem: reg.clone(),
        },
    );
    p.body().assign(&r, vec![Expr::int(0)], Expr::float(1.0));
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "memory");

    let mut p = ProcBuilder::new("bad_shape", &dram());
    p.body().alloc("r", DType::F32, vec![Expr::int(8)], &reg);
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "memory");
    assert!(d.message.contains("16"));
}

#[test]
fn rejects_literal_out_of_range_and_nonpositive_alloc() {
    let mut p = ProcBuilder::new("lit", &dram());
    let x = p.tensor("x", DType::U8, vec![Expr::int(4)]);
    p.body().assign(&x, vec![Expr::int(0)], Expr::int(300));
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "type");
    assert!(d.message.contains("300"));

    let mut p = ProcBuilder::new("alloc", &dram());
    let n = p.index("n");
    p.body().alloc("t", DType::F32, vec![n.clone()], &dram());
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "size-positive");
}

#[test]
fn window_bounds_and_strides() {
    // A window of a 2-D tensor row, then reads within it: safe.
    let mut p = ProcBuilder::new("rows", &dram());
    let n = p.size("n");
    let a = p.tensor("A", DType::F32, vec![n.clone(), Expr::int(8)]);
    p.assert(Expr::stride(&a.sym, 1).eq_(1));
    p.body().for_("i", 0, &n, |b, i| {
        let w = b.window(
            "row",
            &a,
            vec![
                WinCoord::Point(i.clone()),
                WinCoord::Interval(Expr::int(2), Expr::int(6)),
            ],
        );
        b.for_("j", 0, 4, |b, j| {
            b.assign(&w, vec![j.clone()], Expr::float(1.0));
        });
    });
    check_proc(&p.finish()).unwrap();

    let mut p = ProcBuilder::new("rows_bad", &dram());
    let n = p.size("n");
    let a = p.tensor("A", DType::F32, vec![n.clone(), Expr::int(8)]);
    p.body().for_("i", 0, &n, |b, i| {
        b.window(
            "row",
            &a,
            vec![
                WinCoord::Point(i.clone()),
                WinCoord::Interval(Expr::int(6), Expr::int(10)),
            ],
        );
    });
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "bounds");
    assert!(d.message.contains("window"));
}

#[test]
fn counterexample_is_concrete() {
    let mut p = ProcBuilder::new("oob2", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(&x, vec![i + 1], Expr::float(0.0));
    });
    let d = one_error(check_proc(&p.finish()));
    // In every counterexample to `i + 1 < n` with 0 <= i < n, i = n - 1.
    let note = &d.notes[0];
    let get = |k: &str| -> i64 {
        let at = note.find(&format!("{k} = ")).unwrap() + k.len() + 3;
        note[at..]
            .split(|c: char| c == ',' || c.is_whitespace())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(get("i"), get("n") - 1, "{note}");
    assert_eq!(get("index"), get("n"), "{note}");
}

#[test]
fn rejects_out_of_bounds_read() {
    let mut p = ProcBuilder::new("shift", &dram());
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    let y = p.tensor("y", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(&y, vec![i.clone()], x.at(vec![i + 1]));
    });
    let d = one_error(check_proc(&p.finish()));
    assert_eq!(d.rule, "bounds");
    assert!(d.message.starts_with("read of `x`"), "{d}");
}

/// `check_stmt_but_init` proves the obligations of the one statement it is given (and those
/// inside it), in the context the rest of the proc makes: a bad access elsewhere is not its
/// business, a bad one in the statement is, and so is one that only the context makes safe.
#[test]
fn a_focused_check_proves_one_statement_in_its_context() {
    let text = "proc p(n: size, x: f32[n] @ DRAM, y: f32[8] @ DRAM) {
    assert n <= 8;
    x[n] = 1.0;
    for i in 0..n {
        y[i] = x[i];
    }
    y[n] = 2.0;
}";
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", text).expect("parses");
    let p = m.proc("p").expect("p").clone();
    assert!(weft_check::check_proc_but_init(&p).is_err());
    // The loop reads x[i] and writes y[i]: in bounds because n <= 8 (the assertion's context).
    let the_loop = &p.body[1];
    assert!(weft_check::check_stmt_but_init(&p, the_loop).is_ok());
    for bad in [&p.body[0], &p.body[2]] {
        let d = weft_check::check_stmt_but_init(&p, bad).expect_err("an out-of-bounds write");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "bounds", "{:?}", d[0]);
    }
}

/// A focused walk skips the loops before the focus but keeps what they leave known: a config
/// value written before them survives a loop that does not write it, and is forgotten after one
/// that does (as the full walk does); a call or an allocation before the focus is walked.
#[test]
fn a_focused_check_keeps_the_context_the_skipped_code_leaves() {
    let text = "config Cfg { k: index }
proc p(n: size, x: f32[8] @ DRAM) {
    Cfg.k = 4;
    for i in 0..n {
        x[0] = 1.0;
    }
    for j in 0..Cfg.k {
        x[j] = 2.0;
    }
    for i in 0..n {
        Cfg.k = 9;
    }
    for j in 0..Cfg.k {
        x[j] = 3.0;
    }
}";
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", text).expect("parses");
    let p = m.proc("p").expect("p").clone();
    let full = weft_check::check_proc_but_init(&p).expect_err("the last loop may write past x");
    let rules: Vec<&str> = full.iter().map(|d| d.rule).collect();
    assert_eq!(rules, ["extent", "bounds"], "{full:?}");
    // The third statement reads Cfg.k = 4, known across the loop before it.
    assert!(weft_check::check_stmt_but_init(&p, &p.body[2]).is_ok());
    assert!(weft_check::Checker::new()
        .check_control_at(&p, &p.body[2])
        .is_empty());
    // The last one reads a Cfg.k the loop before it may have changed: the full walk's errors.
    let d = weft_check::check_stmt_but_init(&p, &p.body[4]).expect_err("out of bounds");
    let messages = |d: &[Diagnostic]| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>();
    assert_eq!(messages(&d), messages(&full));
    let control = weft_check::Checker::new().check_control_at(&p, &p.body[4]);
    assert_eq!(messages(&control), messages(&full[..1]));
}

/// A focus that is not a statement of the proc (a copy, another proc's) does not make the
/// check vacuous: everything is proved.
#[test]
fn a_focus_outside_the_proc_checks_everything() {
    let text = "proc p(n: size, x: f32[n] @ DRAM) {
    x[n] = 1.0;
}";
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", text).expect("parses");
    let p = m.proc("p").expect("p").clone();
    let elsewhere = p.body[0].clone();
    let copy = weft_ir::Stmt::new(elsewhere.kind.clone(), elsewhere.span);
    let d = weft_check::check_stmt_but_init(&p, &copy).expect_err("out of bounds");
    assert_eq!(d[0].rule, "bounds");
}

/// A call forgets the config values its callee may write (through its calls too), and only
/// those: after a call of a proc that writes none, what was known stays known.
#[test]
fn a_call_forgets_only_the_config_fields_its_callee_writes() {
    let text = |callee_body: &str| {
        format!(
            "config C {{ k: index, m: index }}
proc inner() {{
    {callee_body}
}}
proc outer() {{
    inner();
}}
proc p(x: f32[8] @ DRAM) {{
    C.k = 3;
    outer();
    x[C.k] = 1.0;
}}"
        )
    };
    assert!(common::check(&text("pass;")).is_ok());
    assert!(common::check(&text("C.m = 9;")).is_ok());
    let d = common::check(&text("C.k = 9;")).expect_err("C.k is unknown after the call");
    assert_eq!(d[0].rule, "bounds", "{d:?}");
}

/// `check_procs_trusting` skips the full check of the callees it is told were checked (a
/// schedule's result calls procs of its module), still checks the roots and every other
/// callee, and still summarises the trusted callee where it is called (an out-of-range call
/// is the caller's error).
#[test]
fn trusted_callees_are_not_checked_again_but_roots_and_the_rest_are() {
    let text = "proc bad_trusted(a: [f32][4] @ DRAM) {
    a[4] = 1.0;
}
proc bad_other(a: [f32][4] @ DRAM) {
    a[5] = 1.0;
}
proc root(n: size, a: f32[8] @ DRAM) {
    bad_trusted(a[0:4]);
    bad_other(a[4:8]);
    a[8] = 2.0;
}
";
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", text).unwrap();
    let by_name = |n: &str| m.procs.iter().find(|p| p.name == n).unwrap().clone();
    let (trusted, root) = (by_name("bad_trusted"), by_name("root"));
    let line = |d: &weft_ir::Diagnostic| text[..d.span.lo as usize].lines().count();
    let d = weft_check::check_procs_trusting(std::slice::from_ref(&root), |p| {
        std::sync::Arc::ptr_eq(p, &trusted) || std::sync::Arc::ptr_eq(p, &root)
    })
    .expect_err("the root and bad_other are checked");
    let mut lines: Vec<usize> = d.iter().map(line).collect();
    lines.sort();
    assert_eq!(lines, vec![5, 10], "{d:?}");
    // Trusting nothing, the trusted callee's error is found too.
    let d = weft_check::check_procs(&[root]).expect_err("all three are wrong");
    let mut lines: Vec<usize> = d.iter().map(line).collect();
    lines.sort();
    assert_eq!(lines, vec![2, 5, 10], "{d:?}");
}
