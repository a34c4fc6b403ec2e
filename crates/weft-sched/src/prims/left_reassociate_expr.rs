//! `left_reassociate_expr`: regroup a chain of one associative operator to the left (Exo's
//! `left_reassociate_expr`).
//!
//! ```text
//! a + (b + c)  ⇝  (a + b) + c          a * (b * c)  ⇝  (a * b) * c
//! min(a, min(b, c))  ⇝  min(min(a, b), c)      (also max, and, or)
//! ```
//!
//! Every occurrence of the expression (structurally equal) among the statement's own
//! expressions is rewritten, as for `commute_expr`.
//!
//! Condition: the expression is `a ∘ (b ∘ c)` with one operator `∘` that is associative in its
//! type:
//! - control values (mathematical integers, booleans): `+`, `*`, `min`, `max`, `and`, `or` are
//!   associative. The intermediate `a ∘ b` is a new value; every step's result must still fit
//!   the 64-bit control arithmetic, which the scheduler proves of every new version (a rewrite
//!   whose `a + b` may overflow is refused with the checker's counterexample);
//! - data integers (wrapping arithmetic modulo 2^k): `+`, `*`, `min`, `max` are associative, so
//!   the result is exact;
//! - data booleans: `and`, `or`;
//! - floats, `+` and `*` only: **this changes the rounding** (IEEE addition and multiplication are
//!   not associative). weft follows Exo and DESIGN.md §2: reassociating float `+` and `*` is a
//!   user-visible choice, made by calling this primitive, and the new proc counts as an
//!   equivalent of the old one (as reductions reordered by the loop primitives do). It is refused
//!   in an instruction's body, whose C template computes the body as written. Float `min`/`max`
//!   (`a < b ? a : b`) are refused: they are not associative for NaNs.
//!
//! Expressions have no effects and every operand is still evaluated exactly once, so, the
//! float rounding aside, the rewrite is an exact equivalence (error values propagate alike).

use super::expr_util::{require_not_instr_for_float, require_small, rewrite_occurrences};
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_ir::{BinOp, Expr, ExprKind, Ty};

const PRIM: &str = "left_reassociate_expr";

/// Whether `op` is associative on values of type `ty` (floats: `+` and `*`, by the documented
/// reassociation choice).
pub(crate) fn associates(op: BinOp, ty: Ty) -> bool {
    let float = matches!(ty, Ty::Data(d) if d.is_float());
    match op {
        BinOp::Add | BinOp::Mul => true,
        BinOp::And | BinOp::Or => true,
        BinOp::Min | BinOp::Max => !float,
        _ => false,
    }
}

/// Regroup every occurrence of `e`, which must be `a ∘ (b ∘ c)`, as `(a ∘ b) ∘ c`.
pub fn left_reassociate_expr(
    _a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    e: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let shape_error = || {
        SchedError::new(
            PRIM,
            format!("'{e}' is not of the form `a ∘ (b ∘ c)` with one operator ∘"),
        )
        .at(s.span, describe(s))
    };
    let ExprKind::Binary(op, x, y) = &e.kind else {
        return Err(shape_error());
    };
    match &y.kind {
        ExprKind::Binary(inner, _, _) if inner == op && y.ty == x.ty => {}
        _ => return Err(shape_error()),
    }
    if !associates(*op, x.ty) {
        return Err(SchedError::new(
            PRIM,
            format!("`{}` is not associative on {}: '{e}'", op.symbol(), x.ty),
        )
        .at(s.span, describe(s)));
    }
    let float = matches!(x.ty, Ty::Data(d) if d.is_float());
    require_not_instr_for_float(PRIM, p, float, s)?;
    let new = rewrite_occurrences(PRIM, s, e, &mut |occ| {
        let ExprKind::Binary(op, a, bc) = &occ.kind else {
            unreachable!("an occurrence has the pattern's form")
        };
        let ExprKind::Binary(_, b, c) = &bc.kind else {
            unreachable!("an occurrence has the pattern's form")
        };
        let ab = Expr::raw(ExprKind::Binary(*op, a.clone(), b.clone()), bc.ty, bc.span);
        Ok(Expr::raw(
            ExprKind::Binary(*op, ab, c.clone()),
            occ.ty,
            occ.span,
        ))
    })?;
    // `(a ∘ b) ∘ c` may be one level higher than `a ∘ (b ∘ c)`.
    require_small(PRIM, &new)?;
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new]),
        forward: Forward::identity(),
    })
}
