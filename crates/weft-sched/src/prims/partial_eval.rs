//! `partial_eval`: fix control arguments to constants (Exo's `partial_eval(N=64, ...)`).
//!
//! ```text
//! proc f(N: size, x: f32[N] @ M) { assert P; s }   ⇝   proc f(x: f32[64] @ M) { assert P[N ↦ 64]; s[N ↦ 64] }
//! ```
//!
//! Each named argument leaves the signature, and every use of it (in the body, in buffer
//! argument types, in preconditions) becomes the constant. Shapes of the remaining buffer
//! arguments are simplified (so `N * 8` becomes `512`); a precondition that became true whatever
//! the remaining arguments are is dropped (one that does not mention a fixed argument is kept as
//! it is).
//!
//! Conditions: each name is a control integer argument of the proc (`size`, `index` or
//! `stride`), named once; a `size` gets a positive value and every value lies in the entry range
//! (±`ENTRY_MAX`, what an entry point would have checked); the proc is not an instruction (its
//! template names its arguments); and the values are consistent with the preconditions: no
//! precondition becomes false for every value of the remaining arguments, and together they keep
//! a solution (both decided by the solver; the counterexample is the fixed values).
//!
//! Safety: this is a specialisation, not an equivalence of procs (the signature changes, so
//! nothing calls the new proc in place of the old; its provenance is not recorded, as in Exo).
//! For every call of the new proc with arguments satisfying its preconditions, the old proc
//! called with the same arguments plus the fixed values satisfies the old preconditions (each is
//! a kept precondition, or one proved true) and behaves identically: control values are
//! immutable, so substituting a variable by its value everywhere it is used is exact.

use super::Rewrite;
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::Forward;
use crate::subst::Subst;
use std::sync::Arc;
use weft_check::smt::Term;
use weft_ir::{ArgKind, BufType, CtrlType, Expr, Proc};

const PRIM: &str = "partial_eval";

/// Fix the named control arguments of `p` to the given values.
pub fn partial_eval(
    a: &mut Analysis,
    p: &Proc,
    values: &[(String, i64)],
) -> Result<Rewrite, SchedError> {
    if values.is_empty() {
        return Err(SchedError::new(PRIM, "no argument to fix"));
    }
    if p.is_instr() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{}' is an instruction: its template names its arguments",
                p.name
            ),
        ));
    }
    let mut sub = Subst::new();
    let mut fixed = Vec::new();
    for (k, (name, v)) in values.iter().enumerate() {
        if values[..k].iter().any(|(n, _)| n == name) {
            return Err(SchedError::new(
                PRIM,
                format!("'{name}' is given more than once"),
            ));
        }
        let arg = p.arg(name).ok_or_else(|| {
            SchedError::new(PRIM, format!("'{}' has no argument '{name}'", p.name))
        })?;
        match arg.kind {
            ArgKind::Ctrl(CtrlType::Size) if *v <= 0 => {
                return Err(SchedError::new(
                    PRIM,
                    format!("'{name}' is a size: {v} is not positive"),
                )
                .at(arg.span, format!("{name}: size"))
                .with_counterexample(vec![(name.clone(), *v)]))
            }
            // The value replaces an argument an entry would have checked: the same range
            // (a wider value makes the proc compute with values no call could pass).
            ArgKind::Ctrl(CtrlType::Size | CtrlType::Index | CtrlType::Stride)
                if v.unsigned_abs() > weft_ir::types::ENTRY_MAX as u64 =>
            {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "'{name}' = {v} is outside the range of a control argument (±{})",
                        weft_ir::types::ENTRY_MAX
                    ),
                )
                .at(arg.span, format!("the argument '{name}'"))
                .with_counterexample(vec![(name.clone(), *v)]))
            }
            ArgKind::Ctrl(CtrlType::Size | CtrlType::Index | CtrlType::Stride) => {}
            ArgKind::Ctrl(CtrlType::Bool) => {
                return Err(SchedError::new(
                    PRIM,
                    format!("'{name}' is a control boolean, not an integer"),
                ))
            }
            ArgKind::Buf(_) => {
                return Err(SchedError::new(
                    PRIM,
                    format!("'{name}' is a buffer, not a control argument"),
                ))
            }
        }
        sub = sub.var(&arg.sym, Expr::int(*v));
        fixed.push(arg.sym.clone());
    }
    let cex: Vec<(String, i64)> = values.to_vec();
    let args = p
        .args
        .iter()
        .filter(|x| !fixed.contains(&x.sym))
        .map(|x| {
            let mut x = x.clone();
            if let ArgKind::Buf(t) = &x.kind {
                let t = sub.buf_type(t);
                x.kind = ArgKind::Buf(BufType {
                    shape: t.shape.iter().map(crate::simplify::expr).collect(),
                    ..t
                });
            }
            x
        })
        .collect();
    let substituted: Vec<(Expr, Expr)> = p.preds.iter().map(|e| (e.clone(), sub.expr(e))).collect();
    let bare = Proc {
        args,
        preds: vec![],
        body: sub.block(&p.body),
        origin: None,
        ..p.clone()
    };
    // Each precondition on its own: false whatever the remaining arguments (rejected), true
    // whatever they are (dropped), or kept.
    let scope = a.proc_scope(&bare);
    let mut preds = Vec::new();
    for (orig, e) in substituted {
        let Some(t) = a.term(&scope, &e) else {
            preds.push(e);
            continue;
        };
        if a.prove(&scope.facts, &Term::not(t.clone())).is_ok() {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "with {}, the precondition `{orig}` of '{}' cannot hold",
                    assignment(values),
                    p.name
                ),
            )
            .at(orig.span, orig.to_string())
            .with_counterexample(cex));
        }
        let changed = fixed.iter().any(|f| crate::effects::mentions(&orig, f));
        if !changed || a.prove(&scope.facts, &t).is_err() {
            preds.push(e);
        }
    }
    let new = Proc { preds, ..bare };
    let scope = a.proc_scope(&new);
    if a.prove(&scope.facts, &Term::Bool(false)).is_ok() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "with {}, no values of the other arguments satisfy the preconditions of '{}'",
                assignment(values),
                p.name
            ),
        )
        .with_counterexample(cex));
    }
    Ok(Rewrite {
        proc: Arc::new(new),
        forward: Forward::identity(),
    })
}

fn assignment(values: &[(String, i64)]) -> String {
    values
        .iter()
        .map(|(n, v)| format!("{n} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
