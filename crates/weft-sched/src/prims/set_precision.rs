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
use crate::path::{self, Forward, Path};
use weft_ir::{BufType, DType, Expr, ExprKind, Stmt, StmtKind, Sym, Ty, WinCoord};

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
    let new_alloc = Stmt::new(
        StmtKind::Alloc {
            buf: t.clone(),
            ty: BufType {
                elem: to,
                ..site.ty.clone()
            },
        },
        site.stmt.span,
    );
    let mut new = vec![new_alloc];
    new.extend(rest.iter().map(|s| retype_stmt(s, t, from, to)));
    let n = new.len();
    Ok(Rewrite {
        proc: path::replace_range(p, at, n, new),
        forward: Forward::identity(),
    })
}

fn retype_expr(e: &Expr, t: &Sym, from: DType, to: DType) -> Expr {
    if !mentions(e, t) {
        return e.clone();
    }
    let r = |x: &Expr| retype_expr(x, t, from, to);
    let kind = match &e.kind {
        ExprKind::Read { buf, idx } if buf == t => {
            let read = Expr::raw(
                ExprKind::Read {
                    buf: buf.clone(),
                    idx: idx.clone(),
                },
                Ty::Data(to),
                e.span,
            );
            return Expr::raw(ExprKind::Cast(from, read), Ty::Data(from), e.span);
        }
        ExprKind::Read { buf, idx } => ExprKind::Read {
            buf: buf.clone(),
            idx: idx.iter().map(r).collect(),
        },
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, r(a)),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, r(a), r(b)),
        ExprKind::Select(c, a, b) => ExprKind::Select(r(c), r(a), r(b)),
        ExprKind::Cast(d, a) => ExprKind::Cast(*d, r(a)),
        ExprKind::Math(f, xs) => ExprKind::Math(*f, xs.iter().map(r).collect()),
        ExprKind::Window { buf, coords } => ExprKind::Window {
            buf: buf.clone(),
            coords: coords
                .iter()
                .map(|c| match c {
                    WinCoord::Point(x) => WinCoord::Point(r(x)),
                    WinCoord::Interval(x, y) => WinCoord::Interval(r(x), r(y)),
                })
                .collect(),
        },
        _ => return e.clone(),
    };
    Expr::raw(kind, e.ty, e.span)
}

fn retype_stmt(s: &Stmt, t: &Sym, from: DType, to: DType) -> Stmt {
    let re = |x: &Expr| retype_expr(x, t, from, to);
    let rb = |b: &[Stmt]| {
        b.iter()
            .map(|x| retype_stmt(x, t, from, to))
            .collect::<Vec<_>>()
    };
    let cast_in = |x: Expr| Expr::raw(ExprKind::Cast(to, x), Ty::Data(to), s.span);
    let kind = match &s.kind {
        StmtKind::Assign { buf, idx, rhs } => StmtKind::Assign {
            buf: buf.clone(),
            idx: idx.clone(),
            rhs: if buf == t { cast_in(re(rhs)) } else { re(rhs) },
        },
        StmtKind::Reduce { buf, idx, rhs } => StmtKind::Reduce {
            buf: buf.clone(),
            idx: idx.clone(),
            rhs: if buf == t { cast_in(re(rhs)) } else { re(rhs) },
        },
        StmtKind::WriteConfig { config, field, rhs } => StmtKind::WriteConfig {
            config: config.clone(),
            field: *field,
            rhs: re(rhs),
        },
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => StmtKind::If {
            cond: cond.clone(),
            then_body: rb(then_body),
            else_body: rb(else_body),
        },
        StmtKind::For { var, lo, hi, body } => StmtKind::For {
            var: var.clone(),
            lo: lo.clone(),
            hi: hi.clone(),
            body: rb(body),
        },
        _ => return s.clone(),
    };
    Stmt::new(kind, s.span)
}
