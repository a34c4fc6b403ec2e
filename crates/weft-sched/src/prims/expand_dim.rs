//! `expand_dim`: give an allocation a new leading dimension and index it at every use.
//!
//! ```text
//! alloc t: T[n...] @ M;  s   ⇝   alloc t: T[E, n...] @ M;  s[t[i...] ↦ t[x, i...]]
//! ```
//!
//! Every read, write and reduction `t[i...]` becomes `t[x, i...]`; a window `t[c...]` becomes
//! `t[x, c...]` (a whole-buffer window `t` becomes `t[x, 0:n0, ...]`), and `stride(t, d)` becomes
//! `stride(t, d + 1)` (the strides of the old dimensions do not change in row-major order).
//!
//! Conditions, each proved with the solver (counterexample otherwise):
//! - `E` and `x` are quasi-affine control expressions over names in scope at the allocation, and
//!   read no config field. Their values are therefore the same at every use of `t` as at the
//!   allocation (control names are immutable), so all uses of `t` touch the single slice `x`:
//!   `t[i...] ↦ t[x, i...]` is a bijection between the old cells and that slice, and every read
//!   sees what it saw before. This is the sound form of Exo's `expand_dim`, whose index is a
//!   variable of a loop enclosing the allocation (typically followed by `lift_alloc`).
//! - `0 < E` at the allocation (the new extent is positive).
//! - `0 <= x < E` at every statement that uses `t` (with the facts that hold there: enclosing
//!   loops and conditions), so every new access is in bounds.
//! - The old shape reads no config field if `t` is used as a whole-buffer window (its extents are
//!   repeated at the use).

use super::set_memory::alloc_at;
use super::{describe, require, term_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_check::smt::Term;
use weft_ir::{BufType, Expr, ExprKind, Stmt, StmtKind, Sym, WinCoord};

const PRIM: &str = "expand_dim";

fn reads_config(e: &Expr) -> bool {
    let mut hit = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        hit |= matches!(x.kind, ExprKind::ReadConfig { .. });
    });
    hit
}

/// Add a leading dimension of extent `extent` to the allocation at `at`, indexed by `index`.
pub fn expand_dim(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    extent: &Expr,
    index: &Expr,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    for e in [extent, index] {
        if reads_config(e) {
            return Err(SchedError::new(
                PRIM,
                format!("'{e}' reads a config field, whose value may change while '{t}' is live"),
            )
            .at(site.stmt.span, what));
        }
    }
    let scope = a.scope_at(p, at);
    let ext_t = term_at(a, PRIM, &scope, extent)?;
    term_at(a, PRIM, &scope, index)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::lt(Term::Int(0), ext_t),
        || format!("the new extent {extent} may not be positive"),
        site.stmt.span,
        what.clone(),
    )?;
    // Every statement after the allocation that uses `t` directly.
    let k = at.last().index;
    let depth = at.depth();
    let mut whole = false;
    for (q, s) in crate::find::all_stmts(p) {
        let inside = q.depth() >= depth
            && q.0[..depth - 1] == at.0[..depth - 1]
            && q.0[depth - 1].block == at.last().block
            && q.0[depth - 1].index > k;
        if !inside {
            continue;
        }
        let writes = matches!(&s.kind, StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } if *buf == t);
        let mut uses = writes;
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
                ExprKind::Read { buf, .. } | ExprKind::Stride { buf, .. } => uses |= *buf == t,
                ExprKind::Window { buf, coords } => {
                    uses |= *buf == t;
                    whole |= *buf == t && coords.is_empty();
                }
                _ => {}
            });
        }
        if !uses || matches!(s.kind, StmtKind::Free { .. }) {
            continue;
        }
        let inner = a.scope_at(p, &q);
        let (x, e) = (
            term_at(a, PRIM, &inner, index)?,
            term_at(a, PRIM, &inner, extent)?,
        );
        require(
            a,
            PRIM,
            &inner.facts,
            &Term::And(vec![Term::le(Term::Int(0), x.clone()), Term::lt(x, e)]),
            || format!("the index {index} may lie outside 0..{extent} at a use of '{t}'"),
            s.span,
            describe(s),
        )?;
    }
    if whole && site.ty.shape.iter().any(reads_config) {
        return Err(SchedError::new(
            PRIM,
            format!("'{t}' is used as a whole buffer and its shape reads a config field"),
        )
        .at(site.stmt.span, what));
    }
    let mut shape = vec![extent.clone()];
    shape.extend(site.ty.shape.iter().cloned());
    let new_alloc = Stmt::new(
        StmtKind::Alloc {
            buf: t.clone(),
            ty: BufType {
                shape,
                ..site.ty.clone()
            },
        },
        site.stmt.span,
    );
    let ex = Expander {
        t: &t,
        index,
        shape: &site.ty.shape,
    };
    let mut new = vec![new_alloc];
    new.extend(site.rest.iter().map(|s| ex.stmt(s)));
    let n = new.len();
    Ok(Rewrite {
        proc: path::replace_range(p, at, n, new),
        forward: Forward::identity(),
    })
}

struct Expander<'a> {
    t: &'a Sym,
    index: &'a Expr,
    shape: &'a [Expr],
}

impl Expander<'_> {
    fn idx(&self, idx: &[Expr]) -> Vec<Expr> {
        let mut out = vec![self.index.clone()];
        out.extend(idx.iter().map(|i| self.expr(i)));
        out
    }

    fn expr(&self, e: &Expr) -> Expr {
        if !mentions(e, self.t) {
            return e.clone();
        }
        let r = |x: &Expr| self.expr(x);
        let coord = |c: &WinCoord| match c {
            WinCoord::Point(x) => WinCoord::Point(r(x)),
            WinCoord::Interval(x, y) => WinCoord::Interval(r(x), r(y)),
        };
        let kind = match &e.kind {
            ExprKind::Read { buf, idx } if buf == self.t => ExprKind::Read {
                buf: buf.clone(),
                idx: self.idx(idx),
            },
            ExprKind::Read { buf, idx } => ExprKind::Read {
                buf: buf.clone(),
                idx: idx.iter().map(r).collect(),
            },
            ExprKind::Stride { buf, dim } if buf == self.t => ExprKind::Stride {
                buf: buf.clone(),
                dim: dim + 1,
            },
            ExprKind::Window { buf, coords } if buf == self.t => {
                let mut cs = vec![WinCoord::Point(self.index.clone())];
                if coords.is_empty() {
                    cs.extend(
                        self.shape
                            .iter()
                            .map(|n| WinCoord::Interval(Expr::int(0), n.clone())),
                    );
                } else {
                    cs.extend(coords.iter().map(coord));
                }
                ExprKind::Window {
                    buf: buf.clone(),
                    coords: cs,
                }
            }
            ExprKind::Window { buf, coords } => ExprKind::Window {
                buf: buf.clone(),
                coords: coords.iter().map(coord).collect(),
            },
            ExprKind::Unary(op, a) => ExprKind::Unary(*op, r(a)),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, r(a), r(b)),
            ExprKind::Select(c, a, b) => ExprKind::Select(r(c), r(a), r(b)),
            ExprKind::Cast(d, a) => ExprKind::Cast(*d, r(a)),
            ExprKind::Math(f, xs) => ExprKind::Math(*f, xs.iter().map(r).collect()),
            _ => return e.clone(),
        };
        Expr::raw(kind, e.ty, e.span)
    }

    fn block(&self, b: &[Stmt]) -> Vec<Stmt> {
        b.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&self, s: &Stmt) -> Stmt {
        let kind = match &s.kind {
            StmtKind::Assign { buf, idx, rhs } => StmtKind::Assign {
                buf: buf.clone(),
                idx: if buf == self.t {
                    self.idx(idx)
                } else {
                    idx.iter().map(|i| self.expr(i)).collect()
                },
                rhs: self.expr(rhs),
            },
            StmtKind::Reduce { buf, idx, rhs } => StmtKind::Reduce {
                buf: buf.clone(),
                idx: if buf == self.t {
                    self.idx(idx)
                } else {
                    idx.iter().map(|i| self.expr(i)).collect()
                },
                rhs: self.expr(rhs),
            },
            StmtKind::WriteConfig { config, field, rhs } => StmtKind::WriteConfig {
                config: config.clone(),
                field: *field,
                rhs: self.expr(rhs),
            },
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => StmtKind::If {
                cond: self.expr(cond),
                then_body: self.block(then_body),
                else_body: self.block(else_body),
            },
            StmtKind::For { var, lo, hi, body } => StmtKind::For {
                var: var.clone(),
                lo: self.expr(lo),
                hi: self.expr(hi),
                body: self.block(body),
            },
            StmtKind::Alloc { buf, ty } => StmtKind::Alloc {
                buf: buf.clone(),
                ty: BufType {
                    shape: ty.shape.iter().map(|e| self.expr(e)).collect(),
                    ..ty.clone()
                },
            },
            StmtKind::Window { name, rhs } => StmtKind::Window {
                name: name.clone(),
                rhs: self.expr(rhs),
            },
            StmtKind::Call { proc, args } => StmtKind::Call {
                proc: proc.clone(),
                args: args.iter().map(|a| self.expr(a)).collect(),
            },
            StmtKind::Pass | StmtKind::Free { .. } => return s.clone(),
        };
        Stmt::new(kind, s.span)
    }
}
