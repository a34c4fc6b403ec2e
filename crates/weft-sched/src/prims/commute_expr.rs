//! `commute_expr`: swap the operands of a commutative operator (Exo's `commute_expr`).
//!
//! ```text
//! a + b    ⇝  b + a          a * b    ⇝  b * a
//! min(a,b) ⇝  min(b,a)       max(a,b) ⇝  max(b,a)     (integers and control values)
//! a and b  ⇝  b and a        a or b   ⇝  b or a
//! a == b   ⇝  b == a         a != b   ⇝  b != a
//! ```
//!
//! Every occurrence of the expression (structurally equal: same operators, symbols, constants
//! and types) among the statement's own expressions is rewritten: an assignment's or
//! reduction's indices and value, a loop's bounds, an `if`'s condition, a call's arguments, an
//! allocation's extents. (Occurrences in the statements nested in a loop or `if` are not: name
//! those statements.)
//!
//! Condition: the expression is a binary operation whose operator is commutative in its type:
//! - `+`, `*`, `==`, `!=` in every type: control arithmetic is mathematical, data integers wrap
//!   (addition and multiplication modulo 2^k commute), and IEEE float addition and
//!   multiplication are commutative (the result is the same value, rounding included; which NaN a
//!   NaN result carries is unspecified by IEEE and not observable in weft);
//! - `and`, `or` (booleans; both operands are always evaluated, and have no effects);
//! - `min`, `max` on integers and control values only: on floats they are `a < b ? a : b` (the
//!   C the backend emits), which is not commutative when an operand is a NaN or for `-0.0` and
//!   `0.0`, so they are refused there.
//!
//! Expressions have no effects and both operands are evaluated in both forms (error values
//! propagate from either), so the rewrite is an exact equivalence.

use super::expr_util::rewrite_occurrences;
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_ir::{BinOp, Expr, ExprKind, Ty};

const PRIM: &str = "commute_expr";

/// Whether `op` is commutative on values of type `ty` (the operands' type).
pub(crate) fn commutes(op: BinOp, ty: Ty) -> bool {
    let float = matches!(ty, Ty::Data(d) if d.is_float());
    match op {
        BinOp::Add | BinOp::Mul | BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or => true,
        BinOp::Min | BinOp::Max => !float,
        _ => false,
    }
}

/// Swap the operands of every occurrence of `e` in the statement at `at`.
pub fn commute_expr(
    _a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    e: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let ExprKind::Binary(op, x, _) = &e.kind else {
        return Err(
            SchedError::new(PRIM, format!("'{e}' is not a binary operation"))
                .at(s.span, describe(s)),
        );
    };
    if !commutes(*op, x.ty) {
        let why = if matches!(op, BinOp::Min | BinOp::Max) {
            "on floats (`a < b ? a : b` differs for NaN and signed zeros)"
        } else {
            "in general"
        };
        return Err(SchedError::new(
            PRIM,
            format!("`{}` is not commutative {why}: '{e}'", op.symbol()),
        )
        .at(s.span, describe(s)));
    }
    let new = rewrite_occurrences(PRIM, s, e, &mut |occ| {
        let ExprKind::Binary(op, x, y) = &occ.kind else {
            unreachable!("an occurrence has the pattern's form")
        };
        Ok(Expr::raw(
            ExprKind::Binary(*op, y.clone(), x.clone()),
            occ.ty,
            occ.span,
        ))
    })?;
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new]),
        forward: Forward::identity(),
    })
}
