//! `set_precision`: change the element type of an allocation.
//!
//! ```text
//! alloc t: T[n...] @ M;  s   ⇝   alloc t: T'[n...] @ M;  s'
//! ```
//!
//! where `s'` is `s` with every read `t[i]` replaced by `cast(T, t[i])` (so the expressions that
//! use it keep their type) and every write `t[i] = e` or reduction `t[i] += e` replaced by
//! `t[i] = cast(T', e)` / `t[i] += cast(T', e)`, the explicit casts the checker requires.
//!
//! This is **not an equivalence**: values stored in `t` are rounded (or wrapped, or saturated) to
//! `T'`, and reductions into `t` are computed in `T'`. Like Exo's `set_precision`, it is accepted
//! as the user's explicit choice of precision; no proof is attempted. The conditions are only
//! those that keep the proc well typed:
//! - `t` is used only by reads, writes and reductions: not in windows nor as a call argument
//!   (a window or a callee parameter would need the old element type);
//! - `T'` is `bool` only if `t` is never reduced into (`+=` is not defined on bool).
//!
//! When `T' = T` the proc is returned unchanged.

use super::set_memory::alloc_at;
use super::{describe, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{Forward, Path};
use crate::rewrite::Rewriter;
use weft_ir::{BufType, DType, Expr, ExprKind, Stmt, StmtKind, Sym, Ty};

const PRIM: &str = "set_precision";

/// Give the allocation at `at` the element type `to`, casting at every use.
pub fn set_precision(
    _a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    to: DType,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf;
    let from = site.ty.elem;
    if from == to {
        return Ok(Rewrite {
            proc: std::sync::Arc::new(p.clone()),
            forward: Forward::identity(),
        });
    }
    let rest: Vec<Stmt> = site.rest.to_vec();
    let mut bad: Option<(Stmt, &str)> = None;
    weft_ir::visit::walk_block(&rest, &mut |s| {
        if bad.is_some() {
            return;
        }
        let windowed = weft_ir::visit::stmt_exprs(s).iter().any(|e| {
            let mut hit = false;
            weft_ir::visit::walk_expr(e, &mut |x| {
                if let ExprKind::Window { buf, .. } = &x.kind {
                    hit |= buf == t;
                }
            });
            hit
        });
        if windowed {
            bad = Some((s.clone(), "is used in a window or passed to a call"));
        } else if to == DType::Bool && matches!(&s.kind, StmtKind::Reduce { buf, .. } if buf == t) {
            bad = Some((s.clone(), "is reduced into, which bool does not allow"));
        }
    });
    if let Some((s, why)) = bad {
        return Err(SchedError::new(PRIM, format!("'{}' {why}", t.name())).at(s.span, describe(&s)));
    }
    let ty = BufType {
        elem: to,
        ..site.ty.clone()
    };
    Ok(site.retype(p, at, ty, &mut Retype { t, from, to }))
}

/// Reads of `t` cast back from `to` to `from`, and values stored into `t` cast to `to`.
struct Retype<'a> {
    t: &'a Sym,
    from: DType,
    to: DType,
}

impl Rewriter for Retype<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn read(&self, e: &Expr, buf: &Sym, idx: &[Expr]) -> Expr {
        if buf != self.t {
            let (buf, idx) = (buf.clone(), self.exprs(idx));
            return Expr::raw(ExprKind::Read { buf, idx }, e.ty, e.span);
        }
        let read = Expr::raw(
            ExprKind::Read {
                buf: buf.clone(),
                idx: idx.to_vec(),
            },
            Ty::Data(self.to),
            e.span,
        );
        Expr::raw(ExprKind::Cast(self.from, read), Ty::Data(self.from), e.span)
    }

    fn stored(&self, s: &Stmt, buf: &Sym, rhs: Expr) -> Expr {
        if buf == self.t {
            Expr::raw(ExprKind::Cast(self.to, rhs), Ty::Data(self.to), s.span)
        } else {
            rhs
        }
    }
}
