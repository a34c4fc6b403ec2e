//! `remove_loop`: replace a loop by one copy of its body.
//!
//! ```text
//! for x in lo..hi { s }  ⇝  s
//! ```
//!
//! Condition (Exo §4.7): `x` is not used by `s`; the loop runs at least once (`lo < hi` proved in
//! context); and `s` shadows itself (`Shadows(a, a)`): every location it may modify it definitely
//! writes, and it reads none of them, so running it again changes nothing. weft checks the
//! sufficient form of that: `s` has no reductions, every write is exact (its location does not
//! depend on a config value), and no write overlaps a read of `s` (another execution of `s`, its
//! inner loop variables renamed apart).

use super::{conflict_error, describe, loop_at, require, term_at, Rewrite};
use crate::effects::{block_mentions, AccessKind, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_check::smt::Term;

const PRIM: &str = "remove_loop";

/// Remove the loop at `at`, keeping its body.
pub fn remove_loop(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    let what = describe(l.stmt);
    if block_mentions(l.body, l.var) {
        return Err(SchedError::new(
            PRIM,
            format!("the body uses the loop index '{}'", l.var.name()),
        )
        .at(l.stmt.span, what));
    }
    let scope = a.scope_at(p, at);
    let (lo, hi) = (
        term_at(a, PRIM, &scope, l.lo)?,
        term_at(a, PRIM, &scope, l.hi)?,
    );
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::lt(lo, hi),
        || {
            format!(
                "the loop may run zero times ({} >= {} is possible)",
                l.lo, l.hi
            )
        },
        l.stmt.span,
        what.clone(),
    )?;
    let inner = a.scope_at(p, &at.child(0, 0));
    require_idempotent(a, PRIM, &inner, l.body, l.stmt.span, &what)?;
    let n = l.body.len();
    let forward = Forward::replaced(at, n, |rel| {
        if rel.len() == 1 {
            None
        } else {
            Some(rel[1..].to_vec())
        }
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, l.body.to_vec()),
        forward,
    })
}

/// Prove that running `body` (in `scope`) twice in a row has the effect of running it once: the
/// paper's `Shadows(a, a)`, in the sufficient form stated in the module doc. `add_loop` needs the
/// same condition.
pub(crate) fn require_idempotent(
    a: &mut Analysis,
    prim: &'static str,
    scope: &crate::effects::Scope,
    body: &[weft_ir::Stmt],
    span: weft_ir::Span,
    what: &str,
) -> Result<(), SchedError> {
    let eff = a.effects(scope, body);
    require_idempotent_effects(a, prim, &scope.facts, &eff, span, what)
}

/// [`require_idempotent`] for a body whose effects are `eff`, under `facts` (`divide_with_recompute`
/// passes the effects of calls as written, and a fact of its own).
pub(crate) fn require_idempotent_effects(
    a: &mut Analysis,
    prim: &'static str,
    facts: &[Term],
    eff: &crate::effects::Effects,
    span: weft_ir::Span,
    what: &str,
) -> Result<(), SchedError> {
    if let Some(r) = eff.accesses.iter().find(|x| x.kind == AccessKind::Reduce) {
        return Err(SchedError::new(
            prim,
            format!("the body is not idempotent: it reduces into {}", r.name),
        )
        .at(r.span, "reduction")
        .at(span, what.to_string()));
    }
    if let Some(w) = eff.writes().find(|x| !x.exact) {
        return Err(SchedError::new(
            prim,
            format!(
                "the body writes {} at a location that depends on a config value",
                w.name
            ),
        )
        .at(w.span, "write"));
    }
    let again = eff.rename_bound();
    let writes = crate::effects::Effects {
        accesses: eff.writes().cloned().collect(),
    };
    let reads = crate::effects::Effects {
        accesses: again
            .accesses
            .iter()
            .filter(|x| x.kind == AccessKind::Read)
            .cloned()
            .collect(),
    };
    if let Some(c) = a.conflict(facts, &[], &writes, &reads, false) {
        return Err(conflict_error(
            prim,
            "the body is not idempotent: it reads a location it writes",
            c,
        ));
    }
    Ok(())
}
