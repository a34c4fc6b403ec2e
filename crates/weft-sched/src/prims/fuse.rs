//! `fuse`: merge a loop with the loop that follows it.
//!
//! ```text
//! for x in lo..hi { s1 }; for y in lo'..hi' { s2 }  ⇝  for x in lo..hi { s1; s2[y ↦ x] }
//! ```
//!
//! Condition: the bounds are proved equal (`lo = lo'`, `hi = hi'`) in context, the second loop's
//! bounds read no config field that the first loop's body writes (they were evaluated after it,
//! and the proof reads them before it), and the fused
//! loop satisfies the fission condition (Exo §4.7 uses the same condition both ways): no
//! iteration of `s2` that now runs before an `s1` iteration conflicts with it.

use super::fission::check_fission;
use super::{describe, ivar, loop_at, require, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{Stmt, StmtKind};

const PRIM: &str = "fuse";

/// Fuse the loop at `at` with the next statement, which must be a loop with equal bounds.
pub fn fuse(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let l1 = loop_at(PRIM, p, at)?;
    let next = at.sibling(at.last().index + 1);
    let l2 = loop_at(PRIM, p, &next).map_err(|_| {
        SchedError::new(PRIM, "the loop is not followed by a loop")
            .at(l1.stmt.span, describe(l1.stmt))
    })?;
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
    for (x, y) in [(l1.lo, l2.lo), (l1.hi, l2.hi)] {
        let (tx, ty) = (term_at(a, PRIM, &scope, x)?, term_at(a, PRIM, &scope, y)?);
        require(
            a,
            PRIM,
            &scope.facts,
            &Term::eq(tx, ty),
            || format!("the loops' bounds differ: {x} and {y}"),
            l2.stmt.span,
            describe(l2.stmt),
        )?;
    }
    let mut body = l1.body.to_vec();
    let n1 = body.len();
    body.extend(Subst::new().var(l2.var, ivar(l1.var)).block(l2.body));
    let fused = Stmt::new(
        StmtKind::For {
            var: l1.var.clone(),
            lo: l1.lo.clone(),
            hi: l1.hi.clone(),
            body: body.clone(),
            parallel: false,
        },
        l1.stmt.span,
    );
    let candidate = path::replace_range(p, at, 2, vec![fused]);
    check_fission(a, &candidate, at, &body[..n1], &body[n1..], PRIM)?;
    let forward = Forward::replaced_range(at, 2, 1, move |rel| {
        let mut out = rel.to_vec();
        if rel[0].index == 1 {
            out[0] = Step { block: 0, index: 0 };
            if rel.len() > 1 {
                out[1].index += n1;
            }
        }
        Some(out)
    });
    Ok(Rewrite {
        proc: candidate,
        forward,
    })
}
