//! `rewrite_expr`: replace a control expression by another that the solver proves equal where
//! the statement runs (Exo's `rewrite_expr`).
//!
//! ```text
//! s[… e …]  ⇝  s[… e' …]        when facts(s) ⇒ e = e'
//! ```
//!
//! Every occurrence of `e` (structurally equal) among the statement's own expressions is
//! replaced by `e'`: an access's indices, a loop's bounds, an `if`'s condition, a call's
//! arguments and window bounds, an allocation's extents.
//!
//! Conditions:
//! - `e` and `e'` are control expressions of the same type (both integers, or both booleans):
//!   index, size and condition arithmetic, never data (the solver reasons about control values
//!   only, as in Exo);
//! - both have a term for the solver (quasi-affine: products by constants, division and
//!   remainder by positive constants, `min`, `max`, `select`; the names they use are in scope
//!   at the statement);
//! - the solver proves `e = e'` (for booleans `e ⇔ e'`) from the facts at the statement: the
//!   proc's preconditions and positive sizes, the bounds of the enclosing loops and the
//!   conditions of the enclosing `if`s (the statement's own expressions are all evaluated there:
//!   a loop evaluates its bounds before its body). A config field read in either is an unknown
//!   value (each read its own), so it equals only what it is written alike with — it is left
//!   where it is by structural matching, never proved equal to anything else.
//!
//! The new statement's expressions must stay within the IR's size limits (rule `depth`). On
//! refusal the solver's counterexample is reported. Control expressions have no effects, so
//! replacing one by a value-equal one wherever it is evaluated is an exact equivalence; the new
//! version's control arithmetic (no overflow in `e'`) is checked by the scheduler as for every
//! step.

use super::expr_util::{require_small, rewrite_occurrences};
use super::{describe, stmt_at, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_check::smt::Term;
use weft_ir::{Expr, Ty};

const PRIM: &str = "rewrite_expr";

/// Replace every occurrence of `e` in the statement at `at` by `new`, proved equal there.
pub fn rewrite_expr(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    e: &Expr,
    new: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    if new.height() > weft_ir::limits::MAX_EXPR_DEPTH {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the new expression nests {} levels deep, more than the limit of {} (rule `depth`)",
                new.height(),
                weft_ir::limits::MAX_EXPR_DEPTH
            ),
        )
        .at(s.span, describe(s)));
    }
    for x in [e, new] {
        if !matches!(x.ty, Ty::Int | Ty::Bool) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "'{x}' is not a control expression (it has type {}); only index, size and \
                     condition expressions are rewritten",
                    x.ty
                ),
            )
            .at(s.span, describe(s)));
        }
    }
    let new = new.clone().coerce(e.ty);
    if new.ty != e.ty {
        return Err(SchedError::new(
            PRIM,
            format!("'{new}' has type {}, and '{e}' has type {}", new.ty, e.ty),
        )
        .at(s.span, describe(s)));
    }
    // A config field the old expression does not read may never have been written where the
    // statement runs (reading it is an error), even where the solver, to which a config read is
    // an unknown value, proves the two equal (`C.k * 0` and `0`).
    let old_reads = super::config_reads(&[e]);
    let mut added = None;
    weft_ir::visit::walk_expr(&new, &mut |x| {
        if added.is_none()
            && !super::config_reads(&[x])
                .iter()
                .all(|f| old_reads.contains(f))
        {
            if let weft_ir::ExprKind::ReadConfig { .. } = x.kind {
                added = Some(x.to_string());
            }
        }
    });
    if let Some(f) = added {
        return Err(SchedError::new(
            PRIM,
            format!("'{new}' reads config field {f}, which '{e}' does not read: it may never have been written where the statement runs"),
        )
        .at(s.span, describe(s)));
    }
    // Find the occurrences first, so that a pattern that is not there is reported as such (and
    // a value too large for the IR before the solver walks it).
    let out = rewrite_occurrences(PRIM, s, e, &mut |occ| Ok(new.with_span(occ.span)))?;
    require_small(PRIM, &out)?;
    let scope = a.scope_at(p, at);
    let te = term_at(a, PRIM, &scope, e)?;
    let tn = term_at(a, PRIM, &scope, &new)?;
    let goal = Term::eq(te, tn);
    a.prove(&scope.facts, &goal).map_err(|cex| {
        SchedError::new(
            PRIM,
            format!("'{e}' and '{new}' are not proved equal where the statement runs"),
        )
        .at(s.span, describe(s))
        .with_counterexample(cex)
    })?;
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![out]),
        forward: Forward::identity(),
    })
}
