//! `fold_into_reduce`: turn an assignment that adds to the cell it writes into a reduction
//! (Exo's `fold_into_reduce`).
//!
//! ```text
//! x[i] = x[i'] + e   ⇝   x[i] += e
//! x[i] = e + x[i']   ⇝   x[i] += e
//! ```
//!
//! Conditions:
//! - the statement is an assignment whose value is an addition, one of whose operands (the
//!   left one is tried first) is a read of the assigned buffer — the same name, not another
//!   window of it;
//! - that read is of the assigned cell: its indices are written like the assignment's, or
//!   the solver proves them equal from the facts at the statement (an index computed from data,
//!   `clamp_index`, must be written alike);
//! - the buffer holds numbers (not `bool`).
//!
//! Why that suffices: a reduction `x[i] += e` evaluates `e`, then stores `old + e`, where `old`
//! is the cell's value before the statement (error values propagate from either). The assignment
//! evaluated `x[i'] + e` — the same `old` plus the same `e`, in the same store, before its write —
//! or `e + old`, which is the same value: integer addition wraps and commutes, and IEEE addition
//! commutes (the rounding of `a + b` and `b + a` is the same). Whether `e` itself reads the cell
//! does not matter: in both forms every read happens before the write. The rewrite is an exact
//! equivalence.

use super::expr_util::{access_stmt, require_same_cell};
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_ir::{BinOp, DType, Expr, ExprKind, StmtKind, Ty};

const PRIM: &str = "fold_into_reduce";

/// Fold the assignment at `at` into a reduction.
pub fn fold_into_reduce(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let StmtKind::Assign { buf, idx, rhs } = &s.kind else {
        return Err(SchedError::new(PRIM, "the statement is not an assignment").at(s.span, what));
    };
    if rhs.ty == Ty::Data(DType::Bool) {
        return Err(
            SchedError::new(PRIM, "the buffer holds booleans, which do not add").at(s.span, what),
        );
    }
    let ExprKind::Binary(BinOp::Add, l, r) = &rhs.kind else {
        return Err(SchedError::new(
            PRIM,
            format!("the value '{rhs}' is not an addition `{buf}[...] + e`"),
        )
        .at(s.span, what));
    };
    let reads_buf = |x: &Expr| match &x.kind {
        ExprKind::Read { buf: b, idx: i } if b == buf => Some(i.clone()),
        _ => None,
    };
    let cands: Vec<(Vec<Expr>, &Expr)> = [(l, r), (r, l)]
        .into_iter()
        .filter_map(|(x, other)| reads_buf(x).map(|i| (i, other)))
        .collect();
    if cands.is_empty() {
        return Err(
            SchedError::new(PRIM, format!("neither operand of '{rhs}' reads '{buf}'"))
                .at(s.span, what),
        );
    }
    let scope = a.scope_at(p, at);
    let mut last = None;
    for (i, e) in cands {
        match require_same_cell(
            a,
            PRIM,
            &scope,
            idx,
            &i,
            || format!("the read '{buf}[...]' in '{rhs}' is not of the assigned cell"),
            s,
        ) {
            Ok(()) => {
                let new = access_stmt(buf, idx, e.clone(), true, s.span);
                return Ok(Rewrite {
                    proc: path::replace_stmt(p, at, vec![new]),
                    forward: Forward::identity(),
                });
            }
            Err(err) => last = Some(err),
        }
    }
    Err(last.expect("at least one candidate"))
}
