//! Short loops of plain stores, the shape of a pipeline's vectorized loops: which ones the C
//! keeps as loops for GCC's vectorizer (`#pragma GCC unroll 1`) and which ones it marks
//! `#pragma GCC ivdep` because their iterations provably touch different cells.

use crate::emit::{Binding, ProcCx};
use weft_ir::{BinOp, Expr, ExprKind, Stmt, StmtKind, Sym};

impl ProcCx<'_> {
    /// Whether no iteration of `for var: body` (plain stores, see [`vector_shaped`]) touches a
    /// cell another iteration writes, so that `#pragma GCC ivdep` is true: every access to the
    /// memory of a buffer the body writes (any symbol with the same C base pointer) is to the same
    /// symbol, at an index that is one-to-one in `var` (one coordinate is `c var` plus terms
    /// without it, `c != 0` a constant, the others do not mention it) and that differs from the
    /// writes' only in that coordinate's constant, by less than `|c|` (the cells of an unrolled
    /// tile, `2 var` and `2 var + 1`). Anything else answers false.
    pub(crate) fn independent_iterations(&self, var: &Sym, body: &[Stmt]) -> bool {
        let base = |b: &Sym| match self.env.get(b) {
            Some(Binding::Buf(v)) => Some(v.base.clone()),
            _ => None,
        };
        let mut writes: Vec<(&Sym, Access, String)> = Vec::new();
        for s in body {
            let StmtKind::Assign { buf, idx, .. } = &s.kind else {
                return false;
            };
            let (Some(b), Some(a)) = (base(buf), Access::of(var, idx)) else {
                return false;
            };
            writes.push((buf, a, b));
        }
        let agrees = |buf: &Sym, idx: &[Expr]| -> bool {
            let Some(b) = base(buf) else {
                return false;
            };
            if writes.iter().all(|(_, _, wb)| *wb != b) {
                return true;
            }
            let Some(a) = Access::of(var, idx) else {
                return false;
            };
            writes
                .iter()
                .all(|(w, wa, wb)| *wb != b || (*w == buf && wa.meet_only_in_one_iteration(&a)))
        };
        let mut ok = writes.iter().all(|(w, a, _)| agrees(w, a.idx));
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

/// An index one-to-one in a loop's variable: coordinate `dim` is `stride * var + terms + k`
/// (`stride != 0`, `terms` free of the variable), the other coordinates do not mention it.
struct Access<'a> {
    idx: &'a [Expr],
    dim: usize,
    stride: i64,
    terms: Vec<(i64, &'a Expr)>,
    k: i64,
}

impl<'a> Access<'a> {
    fn of(var: &Sym, idx: &'a [Expr]) -> Option<Access<'a>> {
        let mut moving = idx.iter().enumerate().filter(|(_, e)| mentions(e, var));
        let (dim, e) = moving.next()?;
        if moving.next().is_some() {
            return None;
        }
        let mut flat = Vec::new();
        let mut k = 0i64;
        flatten(e, 1, &mut flat, &mut k)?;
        let mut stride = 0i64;
        let mut terms = Vec::new();
        for (sign, t) in flat {
            let c = match &t.kind {
                ExprKind::Var(v) if v == var => 1,
                ExprKind::Binary(BinOp::Mul, a, b) => match (&a.kind, &b.kind) {
                    (_, ExprKind::Var(v)) if v == var => a.as_int_const()?,
                    (ExprKind::Var(v), _) if v == var => b.as_int_const()?,
                    _ if mentions(t, var) => return None,
                    _ => 0,
                },
                _ if mentions(t, var) => return None,
                _ => 0,
            };
            match c {
                0 => terms.push((sign, t)),
                c => stride = stride.checked_add(sign.checked_mul(c)?)?,
            }
        }
        (stride != 0).then_some(Access {
            idx,
            dim,
            stride,
            terms,
            k,
        })
    }

    /// Whether the two accesses touch the same cell only in the same iteration: another
    /// coordinate differs by a constant (they never meet), or they are the same but for the
    /// moving coordinate's constant, which differs by less than the stride.
    fn meet_only_in_one_iteration(&self, o: &Access) -> bool {
        if self.idx.len() != o.idx.len() || self.dim != o.dim {
            return false;
        }
        let mut apart = false;
        for d in (0..self.idx.len()).filter(|d| *d != self.dim) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let (mut ka, mut kb) = (0, 0);
            if flatten(&self.idx[d], 1, &mut a, &mut ka).is_none()
                || flatten(&o.idx[d], 1, &mut b, &mut kb).is_none()
                || !same_terms(&a, &b)
            {
                return false;
            }
            apart |= ka != kb;
        }
        apart
            || (self.stride == o.stride
                && self.k.abs_diff(o.k) < self.stride.unsigned_abs()
                && same_terms(&self.terms, &o.terms))
    }
}

fn same_terms(a: &[(i64, &Expr)], b: &[(i64, &Expr)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((s, x), (t, y))| s == t && weft_ir::alpha::same_expr(x, y))
}

/// The terms of a sum, each with its sign, and its integer constants added into `k`.
pub(crate) fn flatten<'a>(
    e: &'a Expr,
    sign: i64,
    out: &mut Vec<(i64, &'a Expr)>,
    k: &mut i64,
) -> Option<()> {
    match &e.kind {
        ExprKind::Binary(BinOp::Add, a, b) => {
            flatten(a, sign, out, k)?;
            flatten(b, sign, out, k)
        }
        ExprKind::Binary(BinOp::Sub, a, b) => {
            flatten(a, sign, out, k)?;
            flatten(b, -sign, out, k)
        }
        _ => {
            match e.as_int_const() {
                Some(c) => *k = k.checked_add(sign.checked_mul(c)?)?,
                None => out.push((sign, e)),
            }
            Some(())
        }
    }
}

/// Whether an index is affine in the loop variable (`var` only under `+`, `-`, negation and
/// products with expressions free of it): GCC vectorizes such an access as contiguous or
/// strided loads from 64-bit offsets, so it is not narrowed to 32 bits (which would hide the
/// stride from GCC and make a gather of it).
pub(crate) fn affine_in(e: &Expr, var: &Sym) -> bool {
    if !mentions(e, var) {
        return true;
    }
    match &e.kind {
        ExprKind::Var(v) => v == var,
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => affine_in(a, var) && affine_in(b, var),
        ExprKind::Binary(BinOp::Mul, a, b) => {
            (affine_in(a, var) && !mentions(b, var)) || (!mentions(a, var) && affine_in(b, var))
        }
        ExprKind::Unary(weft_ir::UnOp::Neg, a) => affine_in(a, var),
        _ => false,
    }
}

pub(crate) fn mentions(e: &Expr, var: &Sym) -> bool {
    let mut found = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        found |= matches!(&x.kind, ExprKind::Var(v) if v == var)
    });
    found
}

/// A loop of 8 to 64 iterations whose body is only assignments (no loops, conditions, calls or
/// reductions) at indices that read no data: the shape of a vectorized loop of a pipeline.
/// (Reductions are left to GCC: unrolled completely, a register-blocked micro-kernel keeps its
/// accumulators in registers. So are scatters, a histogram's `h[clamp_index(in[x])] = h[..] +
/// 1` over a reduction domain: GCC never vectorizes them, and unrolled they cost less.)
pub(crate) fn vector_shaped(lo: &Expr, hi: &Expr, body: &[Stmt]) -> bool {
    let trips = match (lo.as_int_const(), hi.as_int_const()) {
        (Some(a), Some(b)) => b - a,
        _ => return false,
    };
    (8..=64).contains(&trips)
        && body.iter().all(|s| match &s.kind {
            StmtKind::Assign { idx, .. } => !crate::emit::data_indexed(idx),
            _ => false,
        })
}
