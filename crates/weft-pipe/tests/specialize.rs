//! `specialize`: versions of a stage's loops chosen at run time by startup conditions. Each
//! version must compute what the reference computes, the right one must run, the general
//! version's requirements must bind only where it runs, and every misuse is rejected with its
//! rule.

mod common;

use common::{lowered, run, run_proc, windows, Outcome};
use weft_ir::stmt::{Stmt, StmtKind};
use weft_pipe::ast::Pipeline;
use weft_pipe::lower::{lower, Engine, Lowered, MAX_VERSIONS};
use weft_pipe::parse::parse_pipeline;
use weft_pipe::schedule::Schedule;
use weft_pipe::script::parse_schedule;

const BLUR: &str = "pipeline blur(input: u16[2], W: i32) -> by {
    bx(x, y): u16 = (input(x - 1, y) + input(x, y) + input(x + 1, y)) / 3;
    by(x, y): u16 = (bx(x, y - 1) + bx(x, y) + bx(x, y + 1)) / 3 + u16(W);
}";

fn blur() -> Pipeline {
    parse_pipeline(0, BLUR, 0).unwrap_or_else(|d| panic!("{d:?}"))
}

fn schedule(p: &Pipeline, text: &str) -> Result<Schedule, weft_ir::Diagnostic> {
    parse_schedule(0, text, 0, p, Schedule::new(p)).map(|s| s.schedule)
}

fn w(v: i32) -> weft_interp::Scalar {
    weft_interp::Scalar::I32(v)
}

/// `l` matches the reference on every window of `windows()` and every value of `W` given.
fn all_match(l: &Lowered, p: &Pipeline, ws: &[i32]) {
    for (k, win) in windows().iter().enumerate() {
        for &wv in ws {
            let out = run_proc(l, p, &[w(wv)], win, 1, 5 + k as u64);
            assert!(matches!(out, Outcome::Matched), "{win:?} W={wv}: {out:?}");
        }
    }
}

/// The loop variables of every `for` under `stmts`.
fn loop_vars(stmts: &[Stmt], out: &mut Vec<String>) {
    for s in stmts {
        match s.kind() {
            StmtKind::For { var, body, .. } => {
                out.push(var.name().to_string());
                loop_vars(body, out);
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                loop_vars(then_body, out);
                loop_vars(else_body, out);
            }
            _ => {}
        }
    }
}

/// The general version vectorizes by 8 with `ShiftInwards`, which needs an output at least 8
/// wide (a precondition); the specialization for narrow outputs runs plain loops. Without it
/// narrow windows stop at the precondition; with it every window runs, and the versions' loops
/// sit under the `if` of the condition.
#[test]
fn a_specialization_runs_where_its_condition_holds() {
    let p = blur();
    let general = schedule(&p, "schedule s = blur { by.vectorize(x, 8); }").unwrap();
    let narrow = run(&p, &general, &[w(1)], &[(0, 3), (0, 4)], 1, 3);
    assert!(matches!(narrow, Outcome::Asserted(_)), "{narrow:?}");
    let s = schedule(
        &p,
        "schedule s = blur {
            by.specialize(by.extent(0) < 8).split(y, y, yi, 2, GuardWithIf);
            by.vectorize(x, 8);
        }",
    )
    .unwrap();
    let l = lowered(&p, &s, Engine::Tight);
    all_match(&l, &p, &[0, 5]);
    let body = &l.proc.body;
    let (
        1,
        StmtKind::If {
            cond,
            then_body,
            else_body,
        },
    ) = (body.len(), body[0].kind())
    else {
        panic!("one `if` at the top:\n{}", l.proc);
    };
    assert!(cond.to_string().contains("by_0_extent"), "{cond}");
    let (mut then_loops, mut else_loops) = (Vec::new(), Vec::new());
    loop_vars(then_body, &mut then_loops);
    loop_vars(else_body, &mut else_loops);
    assert!(
        then_loops.iter().any(|v| v.ends_with("yi")),
        "{then_loops:?}"
    );
    assert!(
        !then_loops.iter().any(|v| v.ends_with("x_v")),
        "{then_loops:?}"
    );
    assert!(
        else_loops.iter().any(|v| v.ends_with("x_v")),
        "{else_loops:?}"
    );
    assert!(
        !else_loops.iter().any(|v| v.ends_with("yi")),
        "{else_loops:?}"
    );
    assert_eq!(l.versions.len(), 2);
}

/// Specializations are tried in order (the first that holds runs), conditions may use
/// parameters, and a producer computed inside the specialized stage is computed inside every
/// version, with its region inferred for that version's loops.
#[test]
fn several_specializations_and_producers_inside_them() {
    let p = blur();
    let s = schedule(
        &p,
        "schedule s = blur {
            by.split(y, y, yi, 4, GuardWithIf);
            by.specialize(W == 5 and by.extent(0) >= 16).vectorize(x, 16);
            by.specialize(by.extent(0) >= 8).vectorize(x, 8).unroll(yi);
            by.specialize(W > 100).parallel(y);
            bx.compute_at(by, y).store_at(by, y);
        }",
    )
    .unwrap();
    let l = lowered(&p, &s, Engine::Tight);
    assert_eq!(l.versions.len(), 4, "{}", l.proc);
    all_match(&l, &p, &[0, 5, 101]);
    // The β0 engine lowers the same versions.
    let b = lowered(&p, &s, Engine::Beta0);
    assert_eq!(b.versions.len(), 4);
}

/// Two specialized funcs make the product of their versions, each checked.
#[test]
fn specializations_of_two_funcs_combine() {
    let p = blur();
    let s = schedule(
        &p,
        "schedule s = blur {
            by.specialize(by.extent(1) >= 4).split(y, y, yi, 4, GuardWithIf);
            bx.compute_root().specialize(W == 0).vectorize(x, 4, GuardWithIf);
        }",
    );
    // `vectorize` takes no tail: the text is rejected at the argument.
    assert!(s.is_err());
    let s = schedule(
        &p,
        "schedule s = blur {
            by.specialize(by.extent(1) >= 4).split(y, y, yi, 4, GuardWithIf);
            bx.compute_root().specialize(W == 0).split(x, x, xi, 4, GuardWithIf).vectorize(xi);
        }",
    )
    .unwrap();
    let l = lowered(&p, &s, Engine::Tight);
    assert_eq!(l.versions.len(), 4);
    all_match(&l, &p, &[0, 1]);
}

#[test]
fn misuse_is_rejected_with_the_rule() {
    let p = blur();
    let rejected = |text: &str, rule: &str| {
        let d = schedule(&p, text).expect_err(text);
        assert!(d.message.contains(rule), "{text}: {d:?}");
        d
    };
    rejected(
        "schedule s = blur { by.specialize(W > 1).specialize(W > 2); }",
        "specialize-nested",
    );
    rejected(
        "schedule s = blur { bx.specialize(W > 1).compute_root(); }",
        "specialize-stage",
    );
    rejected(
        "schedule s = blur { bx.specialize(W > 1).store_root(); }",
        "specialize-stage",
    );
    // Not a condition, and not a startup expression.
    rejected(
        "schedule s = blur { by.specialize(W + 1); }",
        "rule `specialize`",
    );
    // Conditions the control arithmetic cannot hold, at the directive (not at lowering).
    for cond in ["W * W > 1", "by.extent(0) / W > 0", "by.extent(0) % W == 1"] {
        rejected(
            &format!("schedule s = blur {{ by.specialize({cond}); }}"),
            "quasi-affine",
        );
    }
    for (cond, says) in [
        ("by.extent(-1) > 0", "`by.extent(-1)`"),
        ("by.extent(2) > 0", "`by.extent(2)`"),
        ("input.min(-1) > 0", "`input.min(-1)`"),
    ] {
        let d = schedule(
            &p,
            &format!("schedule s = blur {{ by.specialize({cond}); }}"),
        )
        .expect_err(cond);
        assert!(d.message.contains(says), "{cond}: {d:?}");
    }
    let fine = "schedule s = blur { by.specialize(2 * W + by.extent(0) / 4 > max(W, 3)); }";
    assert!(schedule(&p, fine).is_ok());
    rejected(
        "schedule s = blur { by.specialize(input(0, 0) > 1); }",
        "startup",
    );
    // Only outputs have windows.
    let d = schedule(&p, "schedule s = blur { by.specialize(bx.extent(0) > 1); }")
        .expect_err("bx is no output");
    assert!(d.message.contains("output's window"), "{d:?}");
    // ... and only schedules see them.
    let d = parse_pipeline(
        0,
        "pipeline q(input: u8[1]) -> g { f(x): u8 = input(x); g(x): u8 = f(x) + u8(f.extent(0)); }",
        0,
    )
    .map(|_| ())
    .expect_err("algorithms do not see windows");
    assert!(d.message.contains("expected `(`"), "{d:?}");
    let mut q = blur();
    q.funcs[1].pure = weft_pipe::ast::Expr::cast(
        weft_ir::DType::U16,
        weft_pipe::ast::Expr::OutputDim {
            output: 0,
            dim: 0,
            extent: true,
        },
    );
    let d = weft_pipe::validate::validate(&q).expect_err("nor do built ones");
    assert!(d.iter().any(|d| d.rule == "startup-expression"), "{d:?}");
    // A compute level that only one version has.
    let s = schedule(
        &p,
        "schedule s = blur {
            by.specialize(W > 1).split(y, y, yi, 4, GuardWithIf);
            bx.compute_at(by, yi);
        }",
    )
    .unwrap();
    let e = lower(&p, &s, &common::dram())
        .err()
        .expect("no `yi` in one version");
    assert!(e.message.contains("no loop `yi`"), "{e}");
    // Too many versions.
    let mut text = String::from("schedule s = blur {");
    for k in 0..MAX_VERSIONS {
        text += &format!("by.specialize(W == {k});");
    }
    text += "}";
    let s = schedule(&p, &text).unwrap();
    let e = lower(&p, &s, &common::dram())
        .err()
        .expect("too many versions");
    assert_eq!(e.rule, "specialize");
}

/// An inlined func has no loops: its specializations make no versions (they would be copies).
#[test]
fn specializations_of_inlined_funcs_make_no_versions() {
    let p = blur();
    let s = schedule(
        &p,
        "schedule s = blur { bx.specialize(W > 1).split(x, x, xi, 2, GuardWithIf); }",
    )
    .unwrap();
    let l = lowered(&p, &s, Engine::Tight);
    assert!(l.versions.is_empty());
    all_match(&l, &p, &[0, 2]);
}
