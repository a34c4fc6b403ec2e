//! `unroll`: replace a loop with constant bounds by copies of its body.
//!
//! ```text
//! for x in c0..c1 { s }  ⇝  s[x ↦ c0]; s[x ↦ c0 + 1]; …; s[x ↦ c1 - 1]
//! ```
//!
//! Condition: the bounds are integer constants (after folding) and the trip count is at most
//! [`MAX_UNROLL`]. Each copy gets fresh symbols for what it binds. Always an equivalence: the
//! same iterations run in the same order.

use super::{describe, loop_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::subst::Subst;
use weft_check::terms::const_value;
use weft_ir::Expr;

const PRIM: &str = "unroll";

/// The largest trip count `unroll` accepts.
pub const MAX_UNROLL: i64 = 4096;

/// Unroll the loop at `at`.
pub fn unroll(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    let scope = a.scope_at(p, at);
    let c = |a: &mut Analysis, e: &Expr| a.term(&scope, e).as_ref().and_then(const_value);
    let (Some(lo), Some(hi)) = (c(a, l.lo), c(a, l.hi)) else {
        return Err(SchedError::new(PRIM, "the loop bounds are not constants")
            .at(l.stmt.span, describe(l.stmt)));
    };
    let trips = hi.saturating_sub(lo).max(0);
    if trips > MAX_UNROLL {
        return Err(SchedError::new(
            PRIM,
            format!("the loop runs {trips} times; unroll accepts at most {MAX_UNROLL}"),
        )
        .at(l.stmt.span, describe(l.stmt)));
    }
    let mut new = Vec::new();
    for v in lo..lo + trips {
        new.extend(Subst::freshening().var(l.var, Expr::int(v)).block(l.body));
    }
    let new = crate::simplify::block(&new);
    let per = l.body.len();
    let count = new.len();
    let forward = Forward::replaced(at, count, move |rel| {
        // The statements of the body go to their first copy.
        if rel.len() == 1 || per == 0 {
            None
        } else {
            Some(rel[1..].to_vec())
        }
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, new),
        forward,
    })
}
