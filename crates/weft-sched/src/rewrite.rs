//! One structural rewriter for expressions, statements and blocks, shared by the rewrites that
//! change how names are used (substitution, `stage_mem`, `set_precision`, `expand_dim`,
//! `inline_call`).
//!
//! A [`Rewriter`] rebuilds every node it passes; a rewrite overrides only the hooks for the nodes
//! it changes (an access `b[i...]`, a window, a stride, a variable, a binder) and inherits the walk.
//! Expression hooks take `&self`: rewriting an expression never changes what is in scope.
//! Statement methods take `&mut self`, so that a rewrite that renames binders (see
//! [`crate::subst`]) can record the new names for the rest of the block, inside a [`Rewriter::scope`].

use weft_ir::{BufType, Expr, ExprKind, Stmt, StmtKind, Sym, WinCoord};

pub trait Rewriter: Sized {
    /// Whether `e` is returned as it is, without walking it (a fast path for a rewrite that
    /// touches only expressions mentioning some name).
    fn skip(&self, _e: &Expr) -> bool {
        false
    }

    /// A buffer name where it is used: the default of [`Rewriter::access`],
    /// [`Rewriter::window`], [`Rewriter::stride`] and of `free`.
    fn buf(&self, buf: &Sym) -> Sym {
        buf.clone()
    }

    /// The control variable `e`, which is `Var(sym)`.
    fn var(&self, e: &Expr, _sym: &Sym) -> Expr {
        e.clone()
    }

    /// The buffer and indices of an access `buf[idx...]` (a read, a write or a reduction); the
    /// indices are already rewritten.
    fn access(&self, buf: &Sym, idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        (self.buf(buf), idx)
    }

    /// The read `e`, which is `buf[idx...]`: by default the access of the rewritten indices.
    fn read(&self, e: &Expr, buf: &Sym, idx: &[Expr]) -> Expr {
        let (buf, idx) = self.access(buf, self.exprs(idx));
        Expr::raw(ExprKind::Read { buf, idx }, e.ty, e.span)
    }

    /// The buffer and coordinates of a window `buf[coords...]`; the coordinates are already
    /// rewritten.
    fn window(&self, buf: &Sym, coords: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        (self.buf(buf), coords)
    }

    /// The buffer and dimension of `stride(buf, dim)`.
    fn stride(&self, buf: &Sym, dim: usize) -> (Sym, usize) {
        (self.buf(buf), dim)
    }

    /// The value stored by the write or reduction `s` into `buf` (the buffer as `s` names it);
    /// `rhs` is already rewritten.
    fn stored(&self, _s: &Stmt, _buf: &Sym, rhs: Expr) -> Expr {
        rhs
    }

    /// A binder (loop variable, allocation, window name) as it is declared.
    fn bind(&mut self, sym: &Sym) -> Sym {
        sym.clone()
    }

    /// Run `f` in a nested scope: binders it declares are not seen after it.
    fn scope<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        f(self)
    }

    fn exprs(&self, es: &[Expr]) -> Vec<Expr> {
        es.iter().map(|e| self.expr(e)).collect()
    }

    fn expr(&self, e: &Expr) -> Expr {
        if self.skip(e) {
            return e.clone();
        }
        let kind = match &e.kind {
            ExprKind::Var(s) => return self.var(e, s),
            ExprKind::Read { buf, idx } => return self.read(e, buf, idx),
            ExprKind::Const(_) | ExprKind::ReadConfig { .. } => return e.clone(),
            ExprKind::Unary(op, a) => ExprKind::Unary(*op, self.expr(a)),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, self.expr(a), self.expr(b)),
            ExprKind::Select(c, a, b) => ExprKind::Select(self.expr(c), self.expr(a), self.expr(b)),
            ExprKind::DataIndex { value, lo, hi } => ExprKind::DataIndex {
                value: self.expr(value),
                lo: self.expr(lo),
                hi: self.expr(hi),
            },
            ExprKind::Cast(t, a) => ExprKind::Cast(*t, self.expr(a)),
            ExprKind::Math(f, args) => ExprKind::Math(*f, self.exprs(args)),
            ExprKind::Window { buf, coords } => {
                let coords = coords
                    .iter()
                    .map(|c| match c {
                        WinCoord::Point(p) => WinCoord::Point(self.expr(p)),
                        WinCoord::Interval(lo, hi) => {
                            WinCoord::Interval(self.expr(lo), self.expr(hi))
                        }
                    })
                    .collect();
                let (buf, coords) = self.window(buf, coords);
                ExprKind::Window { buf, coords }
            }
            ExprKind::Stride { buf, dim } => {
                let (buf, dim) = self.stride(buf, *dim);
                ExprKind::Stride { buf, dim }
            }
        };
        Expr::raw(kind, e.ty, e.span)
    }

    fn buf_type(&self, t: &BufType) -> BufType {
        BufType {
            shape: self.exprs(&t.shape),
            ..t.clone()
        }
    }

    /// A block, in its own scope.
    fn block(&mut self, b: &[Stmt]) -> Vec<Stmt> {
        self.scope(|r| b.iter().map(|s| r.stmt(s)).collect())
    }

    /// One statement; a binder it declares is visible to the rest of the enclosing scope.
    fn stmt(&mut self, s: &Stmt) -> Stmt {
        let kind = match &s.kind {
            StmtKind::Pass => StmtKind::Pass,
            StmtKind::Assign { buf, idx, rhs } | StmtKind::Reduce { buf, idx, rhs } => {
                let rhs = self.stored(s, buf, self.expr(rhs));
                let (buf, idx) = self.access(buf, self.exprs(idx));
                if matches!(s.kind, StmtKind::Assign { .. }) {
                    StmtKind::Assign { buf, idx, rhs }
                } else {
                    StmtKind::Reduce { buf, idx, rhs }
                }
            }
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
            StmtKind::For {
                var,
                lo,
                hi,
                body,
                parallel,
            } => {
                let (lo, hi) = (self.expr(lo), self.expr(hi));
                self.scope(|r| {
                    let var = r.bind(var);
                    StmtKind::For {
                        var,
                        lo,
                        hi,
                        body: r.block(body),
                        parallel: *parallel,
                    }
                })
            }
            StmtKind::Alloc { buf, ty } => {
                let ty = self.buf_type(ty);
                StmtKind::Alloc {
                    buf: self.bind(buf),
                    ty,
                }
            }
            StmtKind::Free { buf } => StmtKind::Free { buf: self.buf(buf) },
            StmtKind::Window { name, rhs } => {
                let rhs = self.expr(rhs);
                StmtKind::Window {
                    name: self.bind(name),
                    rhs,
                }
            }
            StmtKind::Call { proc, args } => StmtKind::Call {
                proc: proc.clone(),
                args: self.exprs(args),
            },
        };
        Stmt::new(kind, s.span)
    }
}
