//! Short loops of plain stores, the shape of a pipeline's vectorized loops: which ones the C
//! keeps as loops for GCC's vectorizer (`#pragma GCC unroll 1`) and which ones it marks
//! `#pragma GCC ivdep` because their iterations provably touch different cells.

use crate::emit::{Binding, ProcCx};
use weft_ir::{BinOp, Expr, ExprKind, Stmt, StmtKind, Sym};

impl ProcCx<'_> {
    /// Whether no iteration of `for var: body` (plain stores, see [`vector_shaped`]) touches a
    /// cell another iteration writes, so that `#pragma GCC ivdep` is true: every access to the
    /// memory of a buffer the body writes (any symbol with the same C base pointer) is to the same
    /// symbol at the same index, and that index is one-to-one in `var` (one coordinate is `var`
    /// plus a term without it, the others do not mention it). Anything else answers false.
    pub(crate) fn independent_iterations(&self, var: &Sym, body: &[Stmt]) -> bool {
        let base = |b: &Sym| match self.env.get(b) {
            Some(Binding::Buf(v)) => Some(v.base.clone()),
            _ => None,
        };
        let mut writes: Vec<(&Sym, &[Expr], String)> = Vec::new();
        for s in body {
            let StmtKind::Assign { buf, idx, .. } = &s.kind else {
                return false;
            };
            let Some(b) = base(buf) else {
                return false;
            };
            if !one_to_one(var, idx) {
                return false;
            }
            writes.push((buf, idx, b));
        }
        let agrees = |buf: &Sym, idx: &[Expr]| -> bool {
            let Some(b) = base(buf) else {
                return false;
            };
            writes.iter().all(|(w, widx, wb)| {
                *wb != b
                    || (*w == buf
                        && widx.len() == idx.len()
                        && widx
                            .iter()
                            .zip(idx)
                            .all(|(x, y)| weft_ir::alpha::same_expr(x, y)))
            })
        };
        let mut ok = writes.iter().all(|(w, idx, _)| agrees(w, idx));
        for s in body {
            if let StmtKind::Assign { idx, rhs, .. } = &s.kind {
                for e in idx.iter().chain([rhs]) {
                    weft_ir::visit::walk_expr(e, &mut |x| {
                        if let ExprKind::Read { buf, idx } = &x.kind {
                            ok &= agrees(buf, idx);
                        }
                    });
                }
            }
        }
        ok
    }
}

/// Whether the index `idx` takes a different cell for each value of `var`.
fn one_to_one(var: &Sym, idx: &[Expr]) -> bool {
    idx.iter().filter(|e| mentions(e, var)).count() == 1 && idx.iter().any(|e| unit_in(e, var))
}

fn mentions(e: &Expr, var: &Sym) -> bool {
    let mut found = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        found |= matches!(&x.kind, ExprKind::Var(v) if v == var)
    });
    found
}

/// Whether `e` is `±var` plus terms without `var`.
fn unit_in(e: &Expr, var: &Sym) -> bool {
    match &e.kind {
        ExprKind::Var(v) => v == var,
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
            (unit_in(a, var) && !mentions(b, var)) || (unit_in(b, var) && !mentions(a, var))
        }
        _ => false,
    }
}

/// A loop of 8 to 64 iterations whose body is only assignments (no loops, conditions, calls or
/// reductions): the shape of a vectorized loop of a pipeline. (Reductions are left to GCC:
/// unrolled completely, a register-blocked micro-kernel keeps its accumulators in registers.)
pub(crate) fn vector_shaped(lo: &Expr, hi: &Expr, body: &[Stmt]) -> bool {
    let trips = match (lo.as_int_const(), hi.as_int_const()) {
        (Some(a), Some(b)) => b - a,
        _ => return false,
    };
    (8..=64).contains(&trips)
        && body
            .iter()
            .all(|s| matches!(s.kind, StmtKind::Assign { .. }))
}
