//! Text schedules: every primitive reachable from a `schedule` declaration, with its arguments
//! read against the proc as it stands at that step; rejected steps become diagnostics at the step.

use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{random_args, run, ArgValue, ConfigState};
use weft_ir::{Diagnostic, Proc};

fn apply(src: &str, name: &str) -> Result<(Arc<Proc>, Arc<Proc>), Diagnostic> {
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "s.weft", src)
        .unwrap_or_else(|e| panic!("does not parse: {e:?}"));
    weft_check::check_module(&m).unwrap_or_else(|e| panic!("does not check: {e:?}"));
    let decl = m.schedules.iter().find(|d| d.name == name).unwrap();
    let base = m.proc(&decl.base).unwrap().clone();
    let (p, _) =
        weft_sched::script::apply(decl, base.clone(), &weft_syntax::std_memory, |_, _| {})?;
    weft_check::check_procs(std::slice::from_ref(&p)).unwrap_or_else(|e| panic!("{e:?}"));
    Ok((base, p))
}

fn same(a: &Proc, b: &Proc, sizes: &[(&str, i64)]) {
    let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut x = random_args(a, &sizes, 3).unwrap();
    let mut y = x.clone();
    run(a, &mut x, &mut ConfigState::default()).unwrap();
    run(b, &mut y, &mut ConfigState::default()).unwrap();
    for (u, v) in x.iter().zip(&y) {
        if let (ArgValue::Buf(u), ArgValue::Buf(v)) = (u, v) {
            assert_eq!(u.data, v.data);
        }
    }
}

const BLUR: &str = "proc blur(n: size, x: i32[n + 2] @ DRAM, y: i32[n] @ DRAM) {
    for i in 0..n {
        alloc t: i32[3] @ DRAM_STACK;
        for k in 0..3 {
            t[k] = x[i + k];
        }
        y[i] = t[0] + t[1] + t[2];
    }
}
";

#[test]
fn buffer_and_guard_steps_in_text() {
    let src = format!(
        "{BLUR}
schedule a = blur {{
    lift_alloc(\"alloc t\");
    specialize(i, n > 4);
    split(\"for i #1\", 4, io, ii, guard);
    set_memory(\"alloc t\", DRAM);
    unroll(k);
}}
"
    );
    let (base, p) = apply(&src, "a").unwrap();
    let text = weft_ir::print::proc_to_string(&p);
    assert!(
        text.contains("alloc t: i32[3] @ DRAM;\n    if n > 4 {"),
        "{text}"
    );
    for n in [1, 4, 5, 11] {
        same(&base, &p, &[("n", n)]);
    }
}

#[test]
fn lifting_an_allocation_whose_size_depends_on_the_index_is_rejected_at_the_step() {
    let src = "proc p(n: size, y: i32[n] @ DRAM) {
    for i in 0..n {
        alloc t: i32[i + 1] @ DRAM;
        t[i] = 3;
        y[i] = t[i];
    }
}
schedule a = p {
    lift_alloc(\"alloc t\");
}
";
    let d = apply(src, "a").unwrap_err();
    assert_eq!(d.rule, "schedule");
    assert!(d.message.starts_with("lift_alloc:"), "{}", d.message);
    assert!(
        d.message.contains("depends on the loop index 'i'"),
        "{}",
        d.message
    );
}

/// The message of the first diagnostic for `src`: from the parser (arguments are read by the
/// primitive's signature there) or from applying schedule `a`.
fn error_of(src: &str) -> String {
    match weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "s.weft", src) {
        Err(d) => {
            let d = &d[0];
            format!("{} [{}]", d.message, d.notes.join("; "))
        }
        Ok(_) => apply(src, "a").unwrap_err().message,
    }
}

#[test]
fn argument_errors_name_the_argument() {
    let bad = |steps: &str| error_of(&format!("{BLUR}\nschedule a = blur {{\n    {steps}\n}}\n"));
    let e = bad("split(i, four, io, ii);");
    assert!(
        e.contains("expected an integer, found")
            && e.contains("argument 2 of `split` is the factor"),
        "{e}"
    );
    assert!(
        bad("split(i, 4, io, ii, sideways);").contains("`sideways` is not one of `guard`, `cut`")
    );
    assert!(bad("cut(i, q + 1);").contains(
        "`q` is not a control argument, loop variable or buffer in scope here (in scope: n, x, y)"
    ));
    assert!(bad("set_precision(\"alloc t\", f128);").contains("unknown data type `f128`"));
    assert!(bad("set_memory(\"alloc t\", SRAM);").contains("unknown memory `SRAM`"));
    let e = bad("unroll(z);");
    assert!(e.contains("no statement of proc `blur` matches `for z`; the patterns that match here: `for i`, `alloc t`, `for k`, `t =`, `y =`"), "{e}");
    let e = bad("unroll(\"for k #3\");");
    assert!(
        e.contains("only 1 statement of proc `blur` match `for k` (#0 to #0)"),
        "{e}"
    );
    let e = bad("reorder_loops(i, k);");
    assert!(
        e.contains("`reorder_loops` takes 1 argument: the outer loop; got 2"),
        "{e}"
    );
    let e = bad("split(i, 4);");
    assert!(e.contains("`split` takes 4 to 5 arguments: the loop, the factor, the outer loop's name, the inner loop's name, the tail strategy (optional); got 2"), "{e}");
    assert!(
        e.contains("usage: split(loop, factor, outer, inner[, tail])"),
        "{e}"
    );
    assert!(bad("spilt(i, 4, io, ii);")
        .contains("unknown scheduling primitive `spilt`; did you mean `split`"));
    assert!(bad("split(i, 4, for, ii);").contains("keywords cannot be names"));
    let e = bad("cut(i, \"n - 1\");");
    assert!(e.contains("written without quotes"), "{e}");
    // Kinds are checked once the names are known.
    assert!(bad("cut(i, n > 1);").contains("expected a control integer expression, found `n > 1`"));
    assert!(bad("add_guard(i, n + 1);").contains("expected a condition, found `n + 1`"));
    assert!(bad("cut(i, x[0]);").contains("`x[0]` is not a control expression: it reads `x[0]`"));
    assert!(bad("cut(i, n[0]);").contains("`n` is a control value and cannot be indexed"));
    assert!(bad("bind_expr(\"y =\", n + 1, s);").contains("expected a data expression"));
}

/// Every primitive of the signature table is dispatched by the scheduler: a step built from
/// plausible arguments of each parameter's kind is either applied or rejected by the primitive,
/// never by the dispatch.
#[test]
fn every_declared_primitive_is_dispatched() {
    use weft_ir::primitives::{ParamKind, PRIMITIVES};
    let src = "config C { k: index }
proc f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for i in 0..n {
        y[i] = x[i] * 2.0;
    }
}
";
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "s.weft", src).unwrap();
    let mut scope = weft_syntax::Scope::prelude();
    scope.add_module(&m);
    for p in PRIMITIVES {
        let args: Vec<&str> = p
            .params
            .iter()
            .map(|q| match q.kind {
                ParamKind::Stmt => "i",
                ParamKind::Int => "2",
                ParamKind::NewName => "zz",
                ParamKind::Word(w) => w[0],
                ParamKind::IntExpr | ParamKind::Value => "1",
                ParamKind::Cond => "n > 0",
                ParamKind::DataExpr => "x[i]",
                ParamKind::Expr => "x[i] * 2.0",
                ParamKind::Region => "x[0:n]",
                ParamKind::Window => "x[0:n]",
                ParamKind::Memory => "DRAM",
                ParamKind::DType => "f64",
                ParamKind::Proc => "f",
                ParamKind::Buffer => "x",
                ParamKind::ConfigField => "C.k",
                ParamKind::Binding => "n = 4",
                ParamKind::Func | ParamKind::Var => "x",
            })
            .collect();
        let text = format!("{}({})", p.name, args.join(", "));
        let step = weft_syntax::parse_step(0, &text, &mut scope)
            .unwrap_or_else(|d| panic!("{text}: {d:?}"));
        let mut s = weft_sched::Schedule::new(m.proc("f").unwrap().clone());
        let procs = |n: &str| m.proc(n).cloned();
        if let Err(e) =
            weft_sched::script::apply_step_in(&mut s, &step, &weft_syntax::std_memory, &procs)
        {
            assert!(!e.message.contains("does not implement"), "{text}: {e}");
            assert!(!e.message.contains("must be"), "{text}: {e}");
        }
    }
}

#[test]
fn steps_read_expressions_with_the_language_grammar() {
    // Config reads, `stride`, `min`, casts and buffer reads in arguments, parsed by the language's
    // own expression parser and resolved where the step applies.
    let src = "config C { n: index }
proc f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    C.n = 2;
    for i in 0..n {
        y[i] = x[i] * 2.0 + x[i] * 2.0;
    }
}
schedule a = f {
    specialize(\"y =\", C.n == 2 and stride(x, 0) == 1 and min(i, n) >= 0);
    bind_expr(\"y =\", x[i] * 2.0, twice);
    split(i, 4, io, ii, cut);
    cut(\"for ii\", min(2, n / 4 * 0 + 2));
}
";
    let (base, p) = apply(src, "a").unwrap();
    let text = weft_ir::print::proc_to_string(&p);
    assert!(
        text.contains("if C.n == 2 and stride(x, 0) == 1 and min("),
        "{text}"
    );
    assert!(
        text.contains("let twice: f32 @ DRAM_STACK = x[4 * io + ii] * 2.0;"),
        "{text}"
    );
    assert!(text.contains("y[4 * io + ii] = twice + twice;"), "{text}");
    for n in [1, 3, 4, 9] {
        same(&base, &p, &[("n", n)]);
    }
}

/// Names in step arguments are the names `weft sched` prints: after `inline_call` puts the
/// callee's loop `i` inside the caller's loop `i`, the inner one is `i_1` (in expressions and
/// patterns), `i` is the outer one, and a statement's own loop variable is not in scope at it.
#[test]
fn step_arguments_use_the_printed_names() {
    let base = "proc h(n: size, y: f32[n, n], r: index) {
    assert r >= 0 and r < n;
    for i in 0..n {
        y[r, i] = 1.0;
    }
}
proc f(n: size, y: f32[n, n]) {
    for i in 0..n {
        h(n, y, i);
    }
}
";
    let run = |steps: &str| {
        let src = format!("{base}schedule a = f {{ inline_call(\"call h\"); {steps} }}\n");
        apply(&src, "a").map(|(b, p)| (b, weft_ir::print::proc_to_string(&p)))
    };
    let (_, t) = run("specialize(\"y =\", i_1 < 2);").unwrap();
    assert!(t.contains("if i_1 < 2 {"), "{t}");
    let (_, t) = run("specialize(\"y =\", i < 2);").unwrap();
    assert!(t.contains("if i < 2 {") && !t.contains("if i_1"), "{t}");
    let (_, t) = run("specialize(i_1, i < 2);").unwrap();
    assert!(
        t.contains("if i < 2 {\n            for i_1 in 0..n {"),
        "{t}"
    );
    let e = run("cut(i_1, i_1);").unwrap_err();
    assert!(
        e.message.contains("`i_1` is not a control argument, loop variable or buffer in scope here (in scope: n, i, y)"),
        "{}",
        e.message
    );
}
