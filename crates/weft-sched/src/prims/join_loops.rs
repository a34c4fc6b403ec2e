//! `join_loops`: join two consecutive loops that run the same body over adjacent ranges (Exo's
//! `join_loops`, the inverse of `cut`).
//!
//! ```text
//! for i in lo..m { s }; for j in m'..hi { s' }  ⇝  for i in lo..hi { s }
//! ```
//!
//! Conditions, each proved with the solver in the loops' context (counterexample otherwise):
//! - the bodies are the same code: `s'[j ↦ i]` equals `s` up to the renaming of the symbols they
//!   bind (spans ignored);
//! - `m = m'`, and `lo <= m <= hi`: the two ranges are adjacent and neither runs backwards, so the
//!   joined loop runs exactly the iterations `lo, ..., m - 1` of the first loop and then
//!   `m, ..., hi - 1` of the second, in the same order, each doing what it did;
//! - the second loop's bounds read no config field that the first loop's body writes (they were
//!   evaluated after it; the joined loop evaluates `hi` before).

use super::{describe, ivar, loop_at, require, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{Stmt, StmtKind};

const PRIM: &str = "join_loops";

/// Join the loop at `at` with the loop right after it.
pub fn join_loops(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let l1 = loop_at(PRIM, p, at)?;
    let next = at.sibling(at.last().index + 1);
    let l2 = loop_at(PRIM, p, &next).map_err(|_| {
        SchedError::new(PRIM, "the loop is not followed by a loop")
            .at(l1.stmt.span, describe(l1.stmt))
    })?;
    let renamed = Subst::new().var(l2.var, ivar(l1.var)).block(l2.body);
    if !weft_ir::alpha::same_block(&l1.body.to_vec(), &renamed) {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the bodies of loops '{}' and '{}' differ (other than in the loop variable)",
                l1.var.name(),
                l2.var.name()
            ),
        )
        .at(l1.stmt.span, describe(l1.stmt))
        .at(l2.stmt.span, describe(l2.stmt)));
    }
    super::require_unwritten_by_body(
        a,
        PRIM,
        p,
        at,
        &l1,
        &[l2.lo, l2.hi],
        "the second loop's bounds",
    )?;
    let scope = a.scope_at(p, at);
    let (lo, m1) = (
        term_at(a, PRIM, &scope, l1.lo)?,
        term_at(a, PRIM, &scope, l1.hi)?,
    );
    let (m2, hi) = (
        term_at(a, PRIM, &scope, l2.lo)?,
        term_at(a, PRIM, &scope, l2.hi)?,
    );
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::eq(m1, m2.clone()),
        || {
            format!(
                "the first loop ends at {} but the second starts at {}",
                l1.hi, l2.lo
            )
        },
        l2.stmt.span,
        describe(l2.stmt),
    )?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::And(vec![Term::le(lo, m2.clone()), Term::le(m2, hi)]),
        || {
            format!(
                "{} may lie outside {}..={}: a loop may run backwards",
                l1.hi, l1.lo, l2.hi
            )
        },
        l1.stmt.span,
        describe(l1.stmt),
    )?;
    let joined = Stmt::new(
        StmtKind::For {
            var: l1.var.clone(),
            lo: l1.lo.clone(),
            hi: l2.hi.clone(),
            body: l1.body.to_vec(),
            parallel: l1.parallel && l2.parallel,
        },
        l1.stmt.span,
    );
    // The second loop and what is inside it map to the joined loop and the same place in it.
    let forward = Forward::replaced_range(at, 2, 1, |rel| {
        let mut out = rel.to_vec();
        out[0] = Step { block: 0, index: 0 };
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_range(p, at, 2, vec![joined]),
        forward,
    })
}
