//! `shift`: make a loop start at another value.
//!
//! ```text
//! for x in lo..hi { s }  ⇝  for x' in n..hi - lo + n { s[x ↦ x' + lo - n] }
//! ```
//!
//! An equivalence (the same iterations in the same order, renumbered) when `n` is a quasi-affine
//! control expression over names in scope at the loop and the body writes no config field that
//! `lo` or `n` read: both are evaluated again in the body, where the original evaluated `lo` once.

use super::{for_stmt, ivar, keep_parallel, loop_at, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::subst::Subst;
use weft_ir::{BinOp, Expr, Sym};

const PRIM: &str = "shift";

/// Shift the loop at `at` to start at `n`.
pub fn shift(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    n: &Expr,
) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    super::require_unwritten_by_body(
        a,
        PRIM,
        p,
        at,
        &l,
        &[l.lo, n],
        "the lower bound and the new start",
    )?;
    let scope = a.scope_at(p, at);
    term_at(a, PRIM, &scope, n)?;
    let x2 = Sym::new(l.var.name());
    let delta = Expr::binary(BinOp::Sub, l.lo.clone(), n.clone());
    let body = Subst::new()
        .var(l.var, Expr::binary(BinOp::Add, ivar(&x2), delta.clone()))
        .block(l.body);
    let hi = Expr::binary(BinOp::Sub, l.hi.clone(), delta);
    Ok(Rewrite {
        proc: path::replace_stmt(
            p,
            at,
            vec![keep_parallel(
                for_stmt(x2, n.clone(), hi, body, l.stmt.span),
                l.parallel,
            )],
        ),
        forward: Forward::identity(),
    })
}
