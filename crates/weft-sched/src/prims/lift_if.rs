//! `lift_if`: move a condition that does not depend on a loop's index out of the loop.
//!
//! ```text
//! for i in lo..hi { if c { s } else { t } }
//!   ⇝  if c { for i in lo..hi { s } } else { for i' in lo..hi { t[i ↦ i'] } }
//! ```
//!
//! (with an empty `t` the result has no `else` loop, just an empty `else`).
//!
//! Syntactic condition: the loop body is exactly one `if`.
//!
//! Safety: `c` is a control expression, so it reads no data; it has the same value in every
//! iteration when it does not mention `i` and reads no config field that the loop body writes
//! (config fields are the only control state that code can change). Under those two conditions,
//! checked here, every iteration takes the same branch as the lifted `if`, so the rewrite is an
//! equivalence. When the loop runs zero times, neither form runs `s` or `t`; `c` is evaluated
//! once more, which has no effect unless it reads a config field (which may never have been
//! written: an error): a condition that reads one is lifted only out of a loop proved to run.

use super::{describe, for_stmt, ivar, loop_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use weft_ir::{Stmt, StmtKind, Sym};

const PRIM: &str = "lift_if";

/// Lift the `if` that is the whole body of the loop at `at` out of the loop.
pub fn lift_if(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    let what = describe(l.stmt);
    let (cond, then_body, else_body, if_stmt) = match l.body {
        [s] => match &s.kind {
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => (cond, then_body, else_body, s),
            _ => {
                return Err(SchedError::new(
                    PRIM,
                    format!("the body of loop '{}' is not an 'if'", l.var.name()),
                )
                .at(l.stmt.span, what))
            }
        },
        _ => {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "the body of loop '{}' must be exactly one 'if', but it has {} statements",
                    l.var.name(),
                    l.body.len()
                ),
            )
            .at(l.stmt.span, what))
        }
    };
    if mentions(cond, l.var) {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the condition {cond} depends on the loop index '{}'",
                l.var.name()
            ),
        )
        .at(if_stmt.span, describe(if_stmt)));
    }
    // The condition, evaluated once per iteration, would be evaluated once before the loop.
    super::require_unwritten_by_body(a, PRIM, p, at, &l, &[cond], "the condition")?;
    // Evaluated before the loop, it is evaluated when the loop runs zero times too: a config
    // field it reads may never have been written then (an error the original does not make).
    if !super::config_reads(&[cond]).is_empty() {
        let scope = a.scope_at(p, at);
        let (lo, hi) = (
            super::term_at(a, PRIM, &scope, l.lo)?,
            super::term_at(a, PRIM, &scope, l.hi)?,
        );
        super::require(
            a,
            PRIM,
            &scope.facts,
            &weft_check::smt::Term::lt(lo, hi),
            || {
                format!(
                    "the condition {cond} reads a config field, and loop '{}' may run zero times, when the original never evaluates it",
                    l.var.name()
                )
            },
            if_stmt.span,
            describe(if_stmt),
        )?;
    }
    let then_loop = for_stmt(
        l.var.clone(),
        l.lo.clone(),
        l.hi.clone(),
        then_body.clone(),
        l.stmt.span,
    );
    let new_else = if else_body.is_empty() {
        vec![]
    } else {
        let i2 = Sym::new(l.var.name());
        let body = Subst::new().var(l.var, ivar(&i2)).block(else_body);
        vec![for_stmt(i2, l.lo.clone(), l.hi.clone(), body, l.stmt.span)]
    };
    let new = Stmt::new(
        StmtKind::If {
            cond: cond.clone(),
            then_body: vec![then_loop],
            else_body: new_else,
        },
        if_stmt.span,
    );
    // Old `loop/if/branch b, k/...` becomes `if/branch b, loop 0/k/...`.
    let forward = Forward::replaced(at, 1, |rel| {
        if rel.len() <= 2 {
            return Some(rel.to_vec());
        }
        let mut out = vec![
            rel[0],
            Step {
                block: rel[2].block,
                index: 0,
            },
            Step {
                block: 0,
                index: rel[2].index,
            },
        ];
        out.extend_from_slice(&rel[3..]);
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new]),
        forward,
    })
}
