//! Parsing every construct, the IR it produces, name resolution and diagnostics.

use weft_ir::proc::FieldType;
use weft_ir::{
    ArgKind, BinOp, Const, CtrlType, DType, Diagnostic, ExprKind, Module, StmtKind, Ty, UnOp,
    WinCoord,
};
use weft_syntax::{load_file, parse_module, prelude, std_memory, SourceMap};

fn parse(text: &str) -> Module {
    let mut sm = SourceMap::new();
    match parse_module(&mut sm, "test.weft", text) {
        Ok(m) => m,
        Err(ds) => {
            let shown: Vec<String> = ds.iter().map(|d| sm.render(d)).collect();
            panic!("parse failed:\n{}", shown.join("\n"))
        }
    }
}

fn parse_err(text: &str) -> (Vec<Diagnostic>, SourceMap) {
    let mut sm = SourceMap::new();
    match parse_module(&mut sm, "bad.weft", text) {
        Ok(m) => panic!("expected an error, parsed:\n{m}"),
        Err(ds) => (ds, sm),
    }
}

/// Whether `rendered` shows `source_line` with a caret or pointer under column `col` (1-based).
fn points_at(rendered: &str, source_line: &str, col: usize) -> bool {
    let lines: Vec<&str> = rendered.lines().collect();
    lines.iter().enumerate().any(|(k, l)| {
        l.ends_with(source_line)
            && lines.get(k + 1).is_some_and(|next| {
                let at = l.len() - source_line.len() + col - 1;
                matches!(next.as_bytes().get(at), Some(b'^' | b'|'))
            })
    })
}

fn program(name: &str) -> String {
    let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn prelude_has_std_memories() {
    let m = prelude();
    assert!(m.memory("DRAM").is_some());
    assert!(m.memory("DRAM_STACK").is_some());
    let dram = std_memory("DRAM").unwrap();
    assert!(dram.addressable);
    assert!(dram.alloc.contains("weft_dram_alloc") && dram.header.contains("malloc("));
    assert!(std_memory("NOPE").is_none());
}

#[test]
fn axpy_shape() {
    let m = parse(&program("axpy.weft"));
    let p = &m.procs[0];
    assert_eq!(p.name, "axpy");
    assert_eq!(p.args.len(), 4);
    assert_eq!(p.args[0].kind, ArgKind::Ctrl(CtrlType::Size));
    let ArgKind::Buf(x) = &p.args[2].kind else {
        panic!("x is a buffer")
    };
    assert_eq!(x.elem, DType::F32);
    assert_eq!(x.mem.name, "DRAM");
    assert!(!x.window);
    // The shape refers to the argument `n`, by symbol.
    assert_eq!(x.shape[0].kind, ExprKind::Var(p.args[0].sym.clone()));
    let ArgKind::Buf(a) = &p.args[1].kind else {
        panic!()
    };
    assert_eq!(a.rank(), 0);
    let StmtKind::For {
        var, lo, hi, body, ..
    } = &p.body[0].kind
    else {
        panic!("for")
    };
    assert_eq!(lo.kind, ExprKind::Const(Const::Int(0)));
    assert_eq!(lo.ty, Ty::Int);
    assert_eq!(hi.kind, ExprKind::Var(p.args[0].sym.clone()));
    let StmtKind::Reduce { buf, idx, rhs } = &body[0].kind else {
        panic!("reduce")
    };
    assert_eq!(*buf, p.args[3].sym);
    assert_eq!(idx[0].kind, ExprKind::Var(var.clone()));
    let ExprKind::Binary(BinOp::Mul, l, r) = &rhs.kind else {
        panic!("a * x[i]")
    };
    // A rank-0 buffer in value position is a read with no indices.
    assert_eq!(
        l.kind,
        ExprKind::Read {
            buf: p.args[1].sym.clone(),
            idx: vec![]
        }
    );
    assert_eq!(r.ty, Ty::Data(DType::F32));
    // Spans point into the source.
    let text = program("axpy.weft");
    let s = body[0].span;
    assert_eq!(&text[s.lo as usize..s.hi as usize], "y[i] += a * x[i];");
    let s = rhs.span;
    assert_eq!(&text[s.lo as usize..s.hi as usize], "a * x[i]");
}

#[test]
fn literals_are_typed_by_context() {
    let m = parse(
        "proc f(n: size, x: f32[n], y: i8[n], c: bool @ DRAM) {
            assert n > 2;
            for i in 1..n - 1 {
                x[i] = 2;
                x[i] = -1.5;
                y[i] = -(3);
                y[i + 1] += 4 * y[i];
                c = true;
                if i == 3 { pass; }
            }
        }",
    );
    let p = &m.procs[0];
    assert_eq!(p.preds[0].ty, Ty::Bool);
    let StmtKind::For { lo, hi, body, .. } = &p.body[0].kind else {
        panic!()
    };
    assert_eq!((lo.ty, hi.ty), (Ty::Int, Ty::Int));
    let rhs = |k: usize| match &body[k].kind {
        StmtKind::Assign { rhs, .. } | StmtKind::Reduce { rhs, .. } => rhs.clone(),
        _ => panic!(),
    };
    assert_eq!(rhs(0).kind, ExprKind::Const(Const::Int(2)));
    assert_eq!(rhs(0).ty, Ty::Data(DType::F32));
    assert_eq!(rhs(1).kind, ExprKind::Const(Const::Float(-1.5)));
    assert_eq!(rhs(1).ty, Ty::Data(DType::F32));
    // `-(3)` is a negation of a literal, still retyped as a whole.
    let ExprKind::Unary(UnOp::Neg, inner) = &rhs(2).kind else {
        panic!("-(3) is Unary(Neg)")
    };
    assert_eq!(inner.ty, Ty::Data(DType::I8));
    assert_eq!(rhs(2).ty, Ty::Data(DType::I8));
    let ExprKind::Binary(BinOp::Mul, four, _) = &rhs(3).kind else {
        panic!()
    };
    assert_eq!(four.ty, Ty::Data(DType::I8));
    assert_eq!(rhs(4).ty, Ty::Data(DType::Bool));
    let StmtKind::If { cond, .. } = &body[5].kind else {
        panic!()
    };
    assert_eq!(cond.ty, Ty::Bool);
}

#[test]
fn negative_literals_fold_only_directly() {
    let m =
        parse("proc f(x: i64[4]) { x[0] = -9223372036854775808; x[1] = 2 - -3; x[2] = -x[0]; }");
    let p = &m.procs[0];
    let rhs = |k: usize| match &p.body[k].kind {
        StmtKind::Assign { rhs, .. } => rhs.clone(),
        _ => panic!(),
    };
    assert_eq!(rhs(0).kind, ExprKind::Const(Const::Int(i64::MIN)));
    let ExprKind::Binary(BinOp::Sub, _, b) = &rhs(1).kind else {
        panic!()
    };
    assert_eq!(b.kind, ExprKind::Const(Const::Int(-3)));
    assert!(matches!(rhs(2).kind, ExprKind::Unary(UnOp::Neg, _)));
    // Out of range without the minus.
    let (ds, _) = parse_err("proc f(x: i64[4]) { x[0] = 9223372036854775808; }");
    assert_eq!(ds[0].rule, "syntax");
}

#[test]
fn precedence() {
    let m = parse(
        "proc f(n: size, b: bool) {
            assert not b or n + 2 * 3 < 10 and n - 1 - 1 >= 0;
        }",
    );
    let e = &m.procs[0].preds[0];
    // or(not b, and(<(n + 2*3, 10), >=((n-1)-1, 0)))
    let ExprKind::Binary(BinOp::Or, l, r) = &e.kind else {
        panic!("{e}")
    };
    assert!(matches!(l.kind, ExprKind::Unary(UnOp::Not, _)));
    let ExprKind::Binary(BinOp::And, lt, ge) = &r.kind else {
        panic!()
    };
    let ExprKind::Binary(BinOp::Lt, sum, _) = &lt.kind else {
        panic!()
    };
    let ExprKind::Binary(BinOp::Add, _, prod) = &sum.kind else {
        panic!()
    };
    assert!(matches!(prod.kind, ExprKind::Binary(BinOp::Mul, _, _)));
    let ExprKind::Binary(BinOp::Ge, sub, _) = &ge.kind else {
        panic!()
    };
    let ExprKind::Binary(BinOp::Sub, inner, one) = &sub.kind else {
        panic!()
    };
    assert!(matches!(inner.kind, ExprKind::Binary(BinOp::Sub, _, _)));
    assert_eq!(one.kind, ExprKind::Const(Const::Int(1)));
    // `not` applies to the whole comparison.
    let m = parse("proc g(n: size) { assert not n < 3; }");
    let ExprKind::Unary(UnOp::Not, c) = &m.procs[0].preds[0].kind else {
        panic!()
    };
    assert!(matches!(c.kind, ExprKind::Binary(BinOp::Lt, _, _)));
}

#[test]
fn comparisons_do_not_chain() {
    let (ds, _) = parse_err("proc f(n: size) { assert 1 < n < 3; }");
    assert_eq!(ds[0].rule, "syntax");
    assert!(ds[0].message.contains("chain"), "{}", ds[0].message);
    parse("proc f(n: size, b: bool) { assert (1 < n) == b; }");
}

#[test]
fn windows_calls_and_configs() {
    let m = parse(&program("gemm.weft"));
    let tiled = m.proc("gemm_tiled").unwrap();
    let gemm = m.proc("gemm").unwrap();
    let StmtKind::For { body, .. } = &tiled.body[0].kind else {
        panic!()
    };
    let StmtKind::Alloc { ty, .. } = &body[0].kind else {
        panic!()
    };
    assert_eq!(ty.mem.name, "DRAM_STACK");
    let StmtKind::Window { name, rhs } = &body[2].kind else {
        panic!()
    };
    assert_eq!(name.name(), "Aw");
    let ExprKind::Window { coords, .. } = &rhs.kind else {
        panic!()
    };
    assert!(matches!(coords[0], WinCoord::Interval(..)));
    assert_eq!(rhs.ty, Ty::Buffer(DType::F32));
    let StmtKind::Call { proc, args } = &body[3].kind else {
        panic!()
    };
    assert!(std::sync::Arc::ptr_eq(proc, gemm));
    assert_eq!(args[0].ty, Ty::Int);
    // Buffer arguments are windows: the let-bound window, whole buffers.
    assert_eq!(
        args[3].kind,
        ExprKind::Window {
            buf: name.clone(),
            coords: vec![]
        }
    );
    assert!(matches!(args[4].kind, ExprKind::Window { .. }));

    let m = parse(&program("exprs.weft"));
    let cfg = &m.configs[0];
    assert_eq!(cfg.fields[0].ty, FieldType::Data(DType::F32));
    assert_eq!(cfg.fields[1].ty, FieldType::Ctrl(CtrlType::Stride));
    let p = &m.procs[0];
    assert_eq!(p.args[3].kind, ArgKind::Ctrl(CtrlType::Bool));
    let ArgKind::Buf(w) = &p.args[8].kind else {
        panic!()
    };
    assert!(w.window);
    let StmtKind::WriteConfig { field, rhs, .. } = &p.body[0].kind else {
        panic!()
    };
    assert_eq!(*field, 0);
    assert_eq!(rhs.ty, Ty::Data(DType::F32));
}

#[test]
fn point_indexed_buffer_argument_is_a_window() {
    let m = parse(
        "proc one(x: f32 @ DRAM) { x = 1.0; }
         proc many(n: size, A: f32[n, n]) { for i in 0..n { one(A[i, i]); } }",
    );
    let StmtKind::For { body, .. } = &m.procs[1].body[0].kind else {
        panic!()
    };
    let StmtKind::Call { args, .. } = &body[0].kind else {
        panic!()
    };
    let ExprKind::Window { coords, .. } = &args[0].kind else {
        panic!("{:?}", args[0])
    };
    assert!(coords.iter().all(|c| matches!(c, WinCoord::Point(_))));
}

#[test]
fn memories_and_instructions() {
    let m = parse(&program("instr.weft"));
    let vec = &m.memories[0];
    assert_eq!(vec.name, "VEC");
    assert!(!vec.addressable);
    assert_eq!(vec.last_dim, Some(8));
    let load = m.proc("load8").unwrap();
    assert_eq!(
        load.instr.as_ref().unwrap().template,
        "{dst_data} = _mm256_loadu_ps(&{src_data});"
    );
    let ArgKind::Buf(dst) = &load.args[0].kind else {
        panic!()
    };
    assert!(std::sync::Arc::ptr_eq(&dst.mem, vec));
}

#[test]
fn else_if_is_nested() {
    let m = parse(
        "proc f(n: size, x: f32[4]) {
            if n == 1 { x[0] = 1.0; } else if n == 2 { x[0] = 2.0; } else { x[0] = 3.0; }
        }",
    );
    let StmtKind::If { else_body, .. } = &m.procs[0].body[0].kind else {
        panic!()
    };
    assert_eq!(else_body.len(), 1);
    let StmtKind::If { else_body: e2, .. } = &else_body[0].kind else {
        panic!()
    };
    assert_eq!(e2.len(), 1);
}

#[test]
fn scoping() {
    // Sibling loops may reuse a name; each binding is a fresh symbol.
    let m = parse(
        "proc f(n: size, x: f32[n]) {
            for i in 0..n { x[i] = 0.0; }
            for i in 0..n { x[i] = 1.0; }
        }",
    );
    let var = |k: usize| match &m.procs[0].body[k].kind {
        StmtKind::For { var, .. } => var.clone(),
        _ => panic!(),
    };
    assert_ne!(var(0), var(1));
    // A loop variable is not visible after its loop.
    let (ds, _) = parse_err("proc f(n: size, x: f32[n]) { for i in 0..n { pass; } x[i] = 0.0; }");
    assert_eq!(ds[0].rule, "unknown-name");
    // An alloc is visible to the end of its block, not outside.
    let (ds, _) =
        parse_err("proc f(n: size) { if n > 1 { alloc t: f32[2]; t[0] = 1.0; } t[1] = 0.0; }");
    assert_eq!(ds[0].rule, "unknown-name");
    // Shadowing is an error.
    let (ds, _) = parse_err("proc f(n: size) { for n in 0..4 { pass; } }");
    assert_eq!(ds[0].rule, "duplicate-definition");
    // assert only at the start.
    let (ds, _) = parse_err("proc f(n: size) { pass; assert n > 1; }");
    assert_eq!(ds[0].rule, "syntax");
    // Keywords cannot be names.
    let (ds, _) = parse_err("proc f(for: size) { pass; }");
    assert!(ds[0].message.contains("keyword"));
    // Items must be defined before use.
    let (ds, _) = parse_err("proc f() { g(); } proc g() { pass; }");
    assert_eq!(ds[0].rule, "unknown-name");
}

#[test]
fn diagnostics_unknown_name() {
    let text = "proc f(n: size, x: f32[n]) {\n    x[0] = foo;\n}\n";
    let (ds, sm) = parse_err(text);
    assert_eq!(ds[0].rule, "unknown-name");
    assert_eq!(ds[0].message, "unknown name `foo`");
    let r = sm.render(&ds[0]);
    assert!(r.contains("bad.weft:2:12"), "{r}");
    assert!(points_at(&r, "    x[0] = foo;", 12), "{r}");
    assert!(r.contains('^'), "{r}");
    assert!(r.contains("unknown-name"), "{r}");
}

#[test]
fn diagnostics_duplicate_definition() {
    let text = "proc f(n: size) { pass; }\nproc f(m: size) { pass; }\n";
    let (ds, sm) = parse_err(text);
    assert_eq!(ds[0].rule, "duplicate-definition");
    assert_eq!(ds[0].labels.len(), 1);
    let r = sm.render(&ds[0]);
    assert!(r.contains("first defined here"), "{r}");
    assert!(points_at(&r, "proc f(m: size) { pass; }", 6), "{r}");
    assert!(points_at(&r, "proc f(n: size) { pass; }", 6), "{r}");
    // Arguments, too.
    let (ds, sm) = parse_err("proc g(n: size, n: index) { pass; }");
    assert_eq!(ds[0].rule, "duplicate-definition");
    let r = sm.render(&ds[0]);
    assert!(
        points_at(&r, "proc g(n: size, n: index) { pass; }", 17),
        "{r}"
    );
}

#[test]
fn diagnostics_syntax_error() {
    let text = "proc f(n: size) {\n    for i in 0 n { pass; }\n}\n";
    let (ds, sm) = parse_err(text);
    assert_eq!(ds[0].rule, "syntax");
    assert_eq!(ds[0].message, "expected `..`, found identifier `n`");
    let r = sm.render(&ds[0]);
    assert!(r.contains("bad.weft:2:16"), "{r}");
    assert!(points_at(&r, "    for i in 0 n { pass; }", 16), "{r}");
    assert!(!points_at(&r, "    for i in 0 n { pass; }", 15), "{r}");
    // A dummy span renders as message and notes only.
    let d = Diagnostic::new("bounds", weft_ir::Span::DUMMY, "out of bounds").with_note("n = 3");
    let r = sm.render(&d);
    assert_eq!(r, "error[bounds]: out of bounds\n  note: n = 3\n");
}

#[test]
fn one_error_per_item_and_recovery() {
    let text = "proc a() { x = 1; }\nproc b() { y = 2; }\nproc c() { pass; }\n";
    let (ds, _) = parse_err(text);
    assert_eq!(ds.len(), 2);
    assert!(ds[0].message.contains('x') && ds[1].message.contains('y'));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!(
        "proc f(x: f32[4]) {{ x[0] = {}1.0{}; }}",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let (ds, _) = parse_err(&deep);
    assert!(ds[0].message.contains("nesting"), "{}", ds[0].message);
    let deep = format!("proc f(x: f32[4]) {{ x[0] = {}1.0; }}", "-".repeat(100_000));
    parse_err(&deep);
    let deep = format!(
        "proc f(n: size) {{ {} pass; {} }}",
        "if n > 0 {".repeat(100_000),
        "}".repeat(100_000)
    );
    parse_err(&deep);
}

/// Input just below the nesting limit parses, even on a thread with a small stack (1 MiB; the
/// default for spawned threads is 2 MiB).
#[test]
fn nesting_at_the_limit_fits_a_small_stack() {
    let programs = vec![
        format!(
            "proc f(x: f32[4]) {{ x[0] = {}1.0{}; }}",
            "(".repeat(250),
            ")".repeat(250)
        ),
        format!("proc f(x: f32[4]) {{ x[0] = {}x[0]; }}", "-".repeat(250)),
        format!(
            "proc f(x: f32[4]) {{ x[0] = {}1.0{}; }}",
            "sqrt(".repeat(250),
            ")".repeat(250)
        ),
        format!("proc f(x: f32[4]) {{ x[0] = {}x[0]; }}", "not ".repeat(250)),
        format!(
            "proc f(n: size) {{ {} pass; {} }}",
            "if n > 0 {".repeat(120),
            "}".repeat(120)
        ),
        format!(
            "proc f(n: size) {{ {} pass; {} }}",
            "for i in 0..n {".to_string() + &"if true {".repeat(100),
            "}".repeat(101)
        ),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            for p in &programs {
                let mut sm = SourceMap::new();
                if let Err(ds) = parse_module(&mut sm, "deep.weft", p) {
                    panic!("{}", sm.render(&ds[0]));
                }
            }
        })
        .unwrap();
    handle.join().unwrap();
}

/// Every expression and statement the parser builds carries a real source span.
#[test]
fn every_node_has_a_span() {
    use weft_ir::visit::{stmt_exprs, walk_block, walk_expr};
    for name in ["axpy.weft", "gemm.weft", "exprs.weft", "instr.weft"] {
        let text = program(name);
        let m = parse(&text);
        for p in &m.procs {
            assert!(!p.span.is_dummy());
            let mut exprs = p.preds.clone();
            for a in &p.args {
                assert!(!a.span.is_dummy());
                if let ArgKind::Buf(b) = &a.kind {
                    exprs.extend(b.shape.iter().cloned());
                }
            }
            walk_block(&p.body, &mut |s| {
                assert!(!s.span.is_dummy(), "{s:?}");
                exprs.extend(stmt_exprs(s).into_iter().cloned());
                if let StmtKind::Alloc { ty, .. } = &s.kind {
                    exprs.extend(ty.shape.iter().cloned());
                }
            });
            for e in &exprs {
                walk_expr(e, &mut |x| {
                    assert!(!x.span.is_dummy(), "{name}: `{x}` has no span");
                    let src = &text[x.span.lo as usize..x.span.hi as usize];
                    assert!(!src.trim().is_empty(), "{name}: `{x}` has an empty span");
                });
            }
        }
    }
}

#[test]
fn config_fields_may_be_keywords() {
    let m = parse("config C { size: index, in: f32 } proc f() { C.size = 3; C.in = C.in; }");
    assert_eq!(m.configs[0].fields[0].name, "size");
}

#[test]
fn imports() {
    // `std` is the prelude; importing it explicitly is allowed and recorded.
    let m = parse("import \"std\";\nproc f(x: f32[4] @ DRAM_STACK) { pass; }");
    assert_eq!(m.imports, vec!["std".to_string()]);
    assert!(
        m.memories.is_empty(),
        "imported items are not the module's own"
    );
    let (ds, _) = parse_err("import \"nope\";");
    assert_eq!(ds[0].rule, "import");
    let (ds, _) = parse_err("import \"other.weft\";");
    assert_eq!(ds[0].rule, "import");
}

#[test]
fn load_file_resolves_relative_imports() {
    let dir = std::env::temp_dir().join(format!("weft-syntax-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(
        dir.join("lib/hw.weft"),
        "memory SCRATCH { header \"\" alloc \"{type} {name}[{size}];\" free \"\" access \"{name}[{offset}]\" addressable true }\n\
         proc zero(x: f32 @ SCRATCH) { x = 0.0; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.weft"),
        "import \"lib/hw.weft\";\nproc main(y: f32 @ SCRATCH) { zero(y); }\n",
    )
    .unwrap();
    let mut sm = SourceMap::new();
    let loaded = load_file(&mut sm, &dir.join("main.weft")).unwrap();
    assert_eq!(loaded.module.procs.len(), 1);
    assert_eq!(loaded.module.imports, vec!["lib/hw.weft".to_string()]);
    assert_eq!(loaded.deps.len(), 2);
    assert!(loaded.scope.proc("zero").is_some());
    assert!(loaded.scope.memory("SCRATCH").is_some());
    assert!(loaded.scope.memory("DRAM").is_some());

    // A cycle is an error.
    std::fs::write(dir.join("a.weft"), "import \"b.weft\";\n").unwrap();
    std::fs::write(dir.join("b.weft"), "import \"a.weft\";\n").unwrap();
    let ds = load_file(&mut sm, &dir.join("a.weft")).unwrap_err();
    assert_eq!(ds[0].rule, "import");
    assert!(ds[0].message.contains("cycle"), "{}", ds[0].message);
    // A missing file is an error.
    let ds = load_file(&mut sm, &dir.join("missing.weft")).unwrap_err();
    assert_eq!(ds[0].rule, "import");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn schedules_parse_print_and_parse_back() {
    let src = "proc p(n: size, x: f32[n] @ DRAM) {\n    for i in 0..n {\n        x[i] = 0.0;\n    }\n}\n\n\
               schedule q = p {\n    split(i, 4, io, ii, cut);\n    cut(\"for io\", (n / 4) - 1);\n    reorder_stmts(\"x = #1\");\n}\n\n\
               schedule r = q {\n}\n";
    let m = parse(src);
    assert_eq!(m.schedules.len(), 2);
    let q = &m.schedules[0];
    assert_eq!((q.name.as_str(), q.base.as_str()), ("q", "p"));
    let args: Vec<&str> = q.steps[1].args.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(args, ["\"for io\"", "(n / 4) - 1"]);
    assert_eq!(q.steps[2].to_string(), "reorder_stmts(\"x = #1\")");
    let printed = m.to_string();
    let again = parse(&printed);
    assert_eq!(again.to_string(), printed);
    assert_eq!(again.schedules.len(), 2);
    assert_eq!(again.schedules[0].steps.len(), 3);
}

#[test]
fn schedule_errors_name_the_place() {
    let (d, _) = parse_err("schedule q = nothing {\n}\n");
    assert_eq!(d[0].rule, "unknown-name");
    let (d, _) =
        parse_err("proc p(n: size) {\n    pass;\n}\nschedule q = p {\n    split(i, ;\n}\n");
    assert!(d[0].message.contains("expected"), "{:?}", d[0]);
    let (d, _) = parse_err("proc p(n: size) {\n    pass;\n}\nschedule p = p {\n}\n");
    assert_eq!(d[0].rule, "duplicate-definition");
}

#[test]
fn scalar_let_is_an_allocation_and_its_assignment() {
    let m = parse(
        "proc f(n: size, x: f32[n]) {
    for i in 0..n {
        let t: f32 @ DRAM_STACK = x[i] * 2.0;
        x[i] = t;
    }
}",
    );
    let StmtKind::For { body, .. } = &m.procs[0].body[0].kind else {
        panic!("a loop")
    };
    let (StmtKind::Alloc { buf, ty }, StmtKind::Assign { buf: b2, idx, rhs }) =
        (&body[0].kind, &body[1].kind)
    else {
        panic!("alloc then assign: {:?}", body)
    };
    assert!(buf == b2 && idx.is_empty() && ty.shape.is_empty());
    assert_eq!((ty.elem, ty.mem.name.as_str()), (DType::F32, "DRAM_STACK"));
    // The literal takes the declared type.
    assert_eq!(rhs.ty, Ty::Data(DType::F32));
    let text = weft_ir::print::module_to_string(&m);
    assert!(
        text.contains("let t: f32 @ DRAM_STACK = x[i] * 2.0;"),
        "{text}"
    );

    // Only scalars; the value cannot read the name it defines.
    let (ds, _) = parse_err("proc f(x: f32[4]) { let t: f32[4] = x[0]; }");
    assert!(ds[0].message.contains("binds one value"), "{:?}", ds[0]);
    let (ds, _) = parse_err("proc f(x: f32[4]) { let t: f32 = t + 1.0; }");
    assert!(ds[0].message.contains("unknown name `t`"), "{:?}", ds[0]);
}

/// An instruction's clauses after its template (`isa`, `header`, `finish`), in any order; one
/// given twice is an error (review: a second, empty `isa` silently dropped the extension).
#[test]
fn instruction_clauses() {
    let body = "(dst: [f32][16] @ DRAM) \"(void) {dst_data};\"";
    let m = parse(&format!(
        "instr a{body} finish \"f();\" isa \"avx512f, fma\" header \"#include <x.h>\" {{ pass; }}"
    ));
    let i = m.procs[0].instr.as_ref().unwrap();
    assert_eq!(i.isa, vec!["avx512f".to_string(), "fma".to_string()]);
    assert_eq!(
        (i.header.as_str(), i.finish.as_str()),
        ("#include <x.h>", "f();")
    );
    let m = parse(&format!("instr b{body} {{ pass; }}"));
    let i = m.procs[0].instr.as_ref().unwrap();
    assert!(i.isa.is_empty() && i.header.is_empty() && i.finish.is_empty());
    for twice in [
        "isa \"avx2\" isa \"\"",
        "header \"\" header \"\"",
        "finish \"f();\" isa \"avx2\" finish \"\"",
    ] {
        let (ds, _) = parse_err(&format!("instr c{body} {twice} {{ pass; }}"));
        assert!(
            ds[0].message.contains("given twice"),
            "{twice}: {:?}",
            ds[0]
        );
    }
    let (ds, _) = parse_err(&format!("instr d{body} isa \"AVX2\" {{ pass; }}"));
    assert!(ds[0]
        .message
        .contains("not an instruction-set extension name"));
}
