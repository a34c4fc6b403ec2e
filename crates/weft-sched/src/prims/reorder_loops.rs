//! `reorder_loops`: exchange a loop with the single loop nested directly in it.
//!
//! ```text
//! for x in lx..hx { for y in ly..hy { s } }  ⇝  for y in ly..hy { for x in lx..hx { s } }
//! ```
//!
//! Syntactic condition: the outer body is exactly the inner loop, and the inner bounds do not
//! mention `x`.
//!
//! Safety (Exo §4.7): any two iterations whose order the exchange flips must commute. These are
//! the pairs `(x, y)` and `(x', y')` with `x < x'` and `y' < y`, so with `a` the body's effects:
//! `∀ x, y, x', y'. Bd(x, y) ∧ Bd(x', y') ∧ x < x' ∧ y' < y ⇒ Commutes(a[x, y], a[x', y'])`.
//! The bounds themselves are control expressions (never data); a config field they read must not
//! be written by the body, since the exchange changes how often they are evaluated, and where the
//! inner bounds read one, the outer loop must run at least once (`lx < hx`): outermost, they are
//! evaluated even where the outer loop runs no iteration, where the field may never have been
//! written.

use super::{conflict_error, describe, loop_at, Rewrite};
use crate::effects::{index_term, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use std::collections::HashMap;
use weft_check::smt::Term;
use weft_ir::{Stmt, StmtKind};

const PRIM: &str = "reorder_loops";

/// Exchange the loop at `at` with the loop directly inside it.
pub fn reorder_loops(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
) -> Result<Rewrite, SchedError> {
    let outer = loop_at(PRIM, p, at)?;
    let inner_path = at.child(0, 0);
    if outer.body.len() != 1 {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the body of loop '{}' must be exactly one loop, but it has {} statements",
                outer.var.name(),
                outer.body.len()
            ),
        )
        .at(outer.stmt.span, describe(outer.stmt)));
    }
    let inner = loop_at(PRIM, p, &inner_path).map_err(|e| {
        SchedError::new(
            PRIM,
            format!(
                "loop '{}' does not directly contain a loop",
                outer.var.name()
            ),
        )
        .at(outer.stmt.span, describe(outer.stmt))
        .at(
            e.stmts.first().map_or(outer.stmt.span, |s| s.0),
            "this is not a loop",
        )
    })?;
    for bound in [inner.lo, inner.hi] {
        if crate::effects::mentions(bound, outer.var) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "the bounds of loop '{}' depend on the outer index '{}'",
                    inner.var.name(),
                    outer.var.name()
                ),
            )
            .at(inner.stmt.span, describe(inner.stmt))
            .at(outer.stmt.span, describe(outer.stmt)));
        }
    }

    let body_scope = a.scope_at(p, &inner_path.child(0, 0));
    let eff = a.effects(&body_scope, inner.body);

    // Config fields read by the bounds must not be written by the body: the inner bounds are
    // evaluated once per outer iteration, and would then be evaluated once per inner iteration.
    super::require_unwritten_configs(
        PRIM,
        &[outer.lo, outer.hi, inner.lo, inner.hi],
        &eff,
        "the loop bounds",
        "the inner loop's body",
        inner.stmt,
    )?;
    // Outermost after the exchange, the inner bounds are evaluated when the outer loop runs
    // zero times too: a config field they read may never have been written then (an error the
    // original does not make).
    if !super::config_reads(&[inner.lo, inner.hi]).is_empty() {
        let scope = a.scope_at(p, at);
        let lo = super::term_at(a, PRIM, &scope, outer.lo)?;
        let hi = super::term_at(a, PRIM, &scope, outer.hi)?;
        super::require(
            a,
            PRIM,
            &scope.facts,
            &Term::lt(lo, hi),
            || {
                format!(
                    "the bounds of loop '{}' read a config field, and loop '{}' may run zero \
                     times, when the original never evaluates them",
                    inner.var.name(),
                    outer.var.name()
                )
            },
            inner.stmt.span,
            describe(inner.stmt),
        )?;
    }

    // The second iteration: every variable bound at or below the outer loop primed.
    let (x, y) = (index_term(outer.var), index_term(inner.var));
    let mut second = eff.rename_bound();
    let xv = crate::effects::primed(&weft_check::terms::sym_var(outer.var));
    let yv = crate::effects::primed(&weft_check::terms::sym_var(inner.var));
    let map: HashMap<u64, Term> = [
        (outer.var.id(), Term::IntVar(xv.clone())),
        (inner.var.id(), Term::IntVar(yv.clone())),
    ]
    .into_iter()
    .collect();
    second = second.subst(&map);
    let (x2, y2) = (Term::IntVar(xv), Term::IntVar(yv));
    let mut extra = vec![
        Term::lt(x.clone(), x2.clone()),
        Term::lt(y2.clone(), y.clone()),
    ];
    // Bounds of the second iteration.
    let outer_scope = a.scope_at(p, at);
    for (v, lo, hi) in [(&x2, outer.lo, outer.hi), (&y2, inner.lo, inner.hi)] {
        if let (Some(l), Some(h)) = (a.term(&outer_scope, lo), a.term(&outer_scope, hi)) {
            extra.push(Term::le(l, v.clone()));
            extra.push(Term::lt(v.clone(), h));
        }
    }
    if let Some(c) = a.conflict(&body_scope.facts, &extra, &eff, &second, false) {
        return Err(conflict_error(
            PRIM,
            format!(
                "iterations of '{}' and '{}' that the exchange reorders do not commute",
                outer.var.name(),
                inner.var.name()
            ),
            c,
        ));
    }

    let new_inner = Stmt::new(
        StmtKind::For {
            var: outer.var.clone(),
            lo: outer.lo.clone(),
            hi: outer.hi.clone(),
            body: inner.body.to_vec(),
            parallel: false,
        },
        outer.stmt.span,
    );
    let new_outer = Stmt::new(
        StmtKind::For {
            var: inner.var.clone(),
            lo: inner.lo.clone(),
            hi: inner.hi.clone(),
            body: vec![new_inner],
            parallel: false,
        },
        inner.stmt.span,
    );
    // The two loop statements keep their identities (the loop over x is now inside); the body's
    // statements stay at the same depth.
    let forward = Forward::replaced(at, 1, |rel| {
        let mut out = rel.to_vec();
        match rel.len() {
            1 => out.push(Step { block: 0, index: 0 }),
            2 => out.truncate(1),
            _ => {}
        }
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new_outer]),
        forward,
    })
}
