//! `cut`: partition a loop's range at a point.
//!
//! ```text
//! for x in lo..hi { s }  ⇝  for x in lo..c { s }; for x' in c..hi { s[x ↦ x'] }
//! ```
//!
//! Condition: `lo <= c <= hi` is proved in context (so the two ranges are exactly the original
//! one, in order), and `c` is a quasi-affine control expression over names in scope at the loop.
//! An equivalence: the same iterations run in the same order. The second loop's bounds `c..hi` are
//! evaluated after the first loop, where the original evaluated `hi` before the whole loop: `c` and
//! `hi` must not read a config field the body writes.

use super::{describe, for_stmt, ivar, keep_parallel, loop_at, require, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{Expr, Sym};

const PRIM: &str = "cut";

/// Cut the loop at `at` at the point `c`.
pub fn cut(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    c: &Expr,
) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    super::require_unwritten_by_body(
        a,
        PRIM,
        p,
        at,
        &l,
        &[c, l.hi],
        "the cut point and the upper bound",
    )?;
    let scope = a.scope_at(p, at);
    let (lo, hi) = (
        term_at(a, PRIM, &scope, l.lo)?,
        term_at(a, PRIM, &scope, l.hi)?,
    );
    let ct = term_at(a, PRIM, &scope, c)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::And(vec![Term::le(lo, ct.clone()), Term::le(ct, hi)]),
        || {
            format!(
                "the cut point {c} is not proved to lie in {}..{}",
                l.lo, l.hi
            )
        },
        l.stmt.span,
        describe(l.stmt),
    )?;
    let x2 = Sym::new(l.var.name());
    let second = Subst::freshening().var(l.var, ivar(&x2)).block(l.body);
    let new = vec![
        for_stmt(
            l.var.clone(),
            l.lo.clone(),
            c.clone(),
            l.body.to_vec(),
            l.stmt.span,
        ),
        for_stmt(x2, c.clone(), l.hi.clone(), second, l.stmt.span),
    ]
    .into_iter()
    .map(|s| keep_parallel(s, l.parallel))
    .collect();
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, new),
        forward: Forward::replaced(at, 2, |rel| Some(rel.to_vec())),
    })
}
