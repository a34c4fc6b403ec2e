//! `mult_loops`: collapse a loop and the loop of constant extent directly in it into one loop
//! (Exo's `mult_loops`, the inverse of a perfect `split`).
//!
//! ```text
//! for i in lo..hi { for j in l..l + c { s } }
//!   ⇝  for k in 0..(hi - lo) * c { s[i ↦ lo + k / c, j ↦ l + k % c] }
//! ```
//!
//! (`lo + ` is left out when `lo` is 0, `l + ` when `l` is 0.) For `0 <= k < (hi - lo) * c`, the
//! map `k ↦ (lo + k / c, l + k % c)` enumerates the pairs `(i, j)` of the nest in the nest's order
//! (row-major), so the loop runs the same iterations in the same order: an equivalence.
//!
//! Conditions:
//! - the outer loop's body is exactly one loop, whose bounds are integer constants `l` and `h`
//!   with `c = h - l >= 1` (so they do not depend on `i`);
//! - `lo`, now evaluated in every iteration, reads no config field that the body writes;
//! - the new name is a usable name, unused where the loop is;
//! - the new loop's bound `(hi - lo) * c` does not overflow (the control-arithmetic check of every
//!   step proves it).

use super::{describe, for_stmt, ivar, loop_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::subst::Subst;
use weft_ir::{BinOp, Expr, Sym};

const PRIM: &str = "mult_loops";

/// Collapse the loop at `at` and the loop that is its body into one loop over `name`.
pub fn mult_loops(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    name: &str,
) -> Result<Rewrite, SchedError> {
    let outer = loop_at(PRIM, p, at)?;
    let what = describe(outer.stmt);
    if outer.body.len() != 1 {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the body of loop '{}' must be exactly one loop, but it has {} statements",
                outer.var.name(),
                outer.body.len()
            ),
        )
        .at(outer.stmt.span, what));
    }
    let inner = loop_at(PRIM, p, &at.child(0, 0)).map_err(|_| {
        SchedError::new(
            PRIM,
            format!("the body of loop '{}' is not a loop", outer.var.name()),
        )
        .at(outer.stmt.span, what.clone())
    })?;
    let extent = match (inner.lo.as_int_const(), inner.hi.as_int_const()) {
        (Some(l), Some(h)) => h.checked_sub(l).filter(|&c| c >= 1).map(|c| (l, c)),
        _ => None,
    };
    let Some((l, c)) = extent else {
        let msg = format!(
            "the inner loop's bounds {}..{} are not integer constants with a positive extent",
            inner.lo, inner.hi
        );
        return Err(SchedError::new(PRIM, msg).at(inner.stmt.span, describe(inner.stmt)));
    };
    super::require_new_names(PRIM, p, at, &[name])?;
    super::require_unwritten_by_body(
        a,
        PRIM,
        p,
        at,
        &outer,
        &[outer.lo],
        "the outer loop's start",
    )?;
    let k = Sym::new(name);
    let kv = ivar(&k);
    let ce = Expr::int(c);
    let plus = |base: Expr, e: Expr| match base.as_int_const() {
        Some(0) => e,
        _ => Expr::binary(BinOp::Add, base, e),
    };
    let i_of = plus(
        outer.lo.clone(),
        Expr::binary(BinOp::Div, kv.clone(), ce.clone()),
    );
    let j_of = plus(Expr::int(l), Expr::binary(BinOp::Mod, kv, ce.clone()));
    let body = Subst::new()
        .var(outer.var, i_of)
        .var(inner.var, j_of)
        .block(inner.body);
    let extent = match outer.lo.as_int_const() {
        Some(0) => outer.hi.clone(),
        _ => Expr::binary(BinOp::Sub, outer.hi.clone(), outer.lo.clone()),
    };
    let hi = match c {
        1 => extent,
        _ => Expr::binary(BinOp::Mul, extent, ce),
    };
    let new = for_stmt(k, Expr::int(0), hi, body, outer.stmt.span);
    // The inner loop is gone (its paths go to the new loop); its body moves up one level.
    let forward = Forward::replaced(at, 1, |rel| {
        let mut out = vec![rel[0]];
        if rel.len() > 2 {
            out.extend_from_slice(&rel[2..]);
        }
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new]),
        forward,
    })
}
