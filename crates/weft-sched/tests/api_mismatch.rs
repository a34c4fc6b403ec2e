//! Steps built through the Rust API (`SchedStep` by hand) with every kind of value at every
//! argument position of every primitive: each is applied or refused with an error, never a panic
//! (a config field index past the end panicked once); and new names the parser would refuse are
//! refused too.
use std::sync::Arc;
use weft_ir::{DType, Expr, SchedArg, SchedStep, SchedValue, Span, Sym, Ty};

fn module() -> weft_ir::Module {
    let src = "config C { k: index, v: f32 }
proc f(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[n] @ DRAM;
    for i in 0..n {
        t[i] = x[i];
        y[i] = t[i] * 2.0;
    }
}";
    weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src).unwrap()
}

fn values(m: &weft_ir::Module) -> Vec<(&'static str, SchedValue)> {
    let cfg: Arc<weft_ir::Config> = m.configs[0].clone();
    let i = Sym::new("i");
    let x = Sym::new("x");
    vec![
        ("stmt", SchedValue::Stmt("for i".into())),
        ("stmt-alloc", SchedValue::Stmt("alloc t".into())),
        ("int", SchedValue::Int(2)),
        ("int-neg", SchedValue::Int(-1)),
        ("int-huge", SchedValue::Int(i64::MAX)),
        ("int-min", SchedValue::Int(i64::MIN)),
        ("name", SchedValue::Name("zz".into())),
        ("name-empty", SchedValue::Name("".into())),
        ("name-kw", SchedValue::Name("for".into())),
        ("expr-int", SchedValue::Expr(Expr::int(1))),
        ("expr-var", SchedValue::Expr(Expr::var(&i, Ty::Int))),
        (
            "expr-read",
            SchedValue::Expr(Expr::read(&x, DType::F32, vec![Expr::var(&i, Ty::Int)])),
        ),
        (
            "region",
            SchedValue::Region {
                buf: "x".into(),
                dims: vec![(Expr::int(0), Expr::int(1))],
            },
        ),
        (
            "region-0",
            SchedValue::Region {
                buf: "x".into(),
                dims: vec![],
            },
        ),
        (
            "region-3",
            SchedValue::Region {
                buf: "x".into(),
                dims: vec![(Expr::int(0), Expr::int(1)); 3],
            },
        ),
        (
            "cfg",
            SchedValue::ConfigField {
                config: cfg.clone(),
                field: 0,
            },
        ),
        (
            "cfg-oob",
            SchedValue::ConfigField {
                config: cfg.clone(),
                field: 99,
            },
        ),
        (
            "binding",
            SchedValue::Binding {
                name: "n".into(),
                value: 4,
            },
        ),
    ]
}

#[test]
fn mismatched_kinds_never_panic() {
    let m = module();
    let vals = values(&m);
    let mut panics = Vec::new();
    for p in weft_ir::primitives::PRIMITIVES.iter() {
        let max = p.params.len().max(1);
        for pos in 0..max {
            for (label, v) in &vals {
                // Good-ish defaults elsewhere, the value under test at `pos`.
                let args: Vec<SchedArg> = (0..p.params.len().max(pos + 1))
                    .map(|k| {
                        let value = if k == pos {
                            v.clone()
                        } else {
                            vals[0].1.clone()
                        };
                        SchedArg {
                            text: label.to_string(),
                            value,
                            span: Span::DUMMY,
                        }
                    })
                    .collect();
                let step = SchedStep {
                    primitive: p.name.to_string(),
                    args,
                    span: Span::DUMMY,
                };
                let mut s = weft_sched::Schedule::new(m.procs[0].clone());
                let procs = |n: &str| m.proc(n).cloned();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    weft_sched::script::apply_step_in(
                        &mut s,
                        &step,
                        &weft_syntax::std_memory,
                        &procs,
                    )
                }));
                if r.is_err() {
                    panics.push(format!("{}: arg {pos} = {label}", p.name));
                }
            }
        }
    }
    for x in &panics {
        eprintln!("PANIC {x}");
    }
    assert!(panics.is_empty(), "{} panics", panics.len());
}

/// New names given through the API that the text parser would refuse (keywords, empty, not an
/// identifier): a step that accepts one yields a proc that does not print to parseable text.
#[test]
fn api_new_names_must_be_usable() {
    let m = module();
    let mut bad = Vec::new();
    for name in ["for", "", "a b", "1x", "size"] {
        for (prim, args) in [
            (
                "split",
                vec![
                    SchedValue::Stmt("for i".into()),
                    SchedValue::Int(2),
                    SchedValue::Name(name.into()),
                    SchedValue::Name("ii".into()),
                ],
            ),
            (
                "bind_expr",
                vec![
                    SchedValue::Stmt("y =".into()),
                    SchedValue::Expr(Expr::read(
                        &Sym::new("t"),
                        DType::F32,
                        vec![Expr::var(&Sym::new("i"), Ty::Int)],
                    )),
                    SchedValue::Name(name.into()),
                ],
            ),
            (
                "extract_proc",
                vec![
                    SchedValue::Stmt("y =".into()),
                    SchedValue::Name(name.into()),
                ],
            ),
            ("rename", vec![SchedValue::Name(name.into())]),
        ] {
            let step = SchedStep {
                primitive: prim.into(),
                args: args
                    .into_iter()
                    .map(|value| SchedArg {
                        text: "?".into(),
                        value,
                        span: Span::DUMMY,
                    })
                    .collect(),
                span: Span::DUMMY,
            };
            let mut s = weft_sched::Schedule::new(m.procs[0].clone());
            let procs = |n: &str| m.proc(n).cloned();
            if weft_sched::script::apply_step_in(&mut s, &step, &weft_syntax::std_memory, &procs)
                .is_ok()
            {
                let mut text = weft_ir::print::proc_to_string(s.proc());
                for q in s.extracted() {
                    text = format!("{}\n{text}", weft_ir::print::proc_to_string(q));
                }
                bad.push(format!("{prim} accepted name {name:?}:\n{text}"));
            }
        }
    }
    for b in &bad {
        eprintln!("ACCEPTED {b}");
    }
    assert!(bad.is_empty());
}
