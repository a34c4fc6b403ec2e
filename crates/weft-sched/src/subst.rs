//! Substitution of control variables by expressions and of buffer names by other names, over
//! expressions, statements and blocks; optionally giving every binder inside a fresh symbol, which
//! is what a rewrite that duplicates code (unroll, tails, specialisation) needs so that symbols
//! stay unique identities.

use std::collections::HashMap;
use weft_ir::{BufType, Expr, ExprKind, Stmt, StmtKind, Sym, WinCoord};

#[derive(Clone, Default)]
pub struct Subst {
    vars: HashMap<u64, Expr>,
    bufs: HashMap<u64, Sym>,
    /// Rename binders (loop variables, allocations, window names) to fresh copies.
    fresh: bool,
}

impl Subst {
    pub fn new() -> Subst {
        Subst::default()
    }

    /// A substitution that also gives every binder it passes a fresh symbol.
    pub fn freshening() -> Subst {
        Subst {
            fresh: true,
            ..Subst::default()
        }
    }

    pub fn var(mut self, sym: &Sym, e: Expr) -> Subst {
        self.vars.insert(sym.id(), e);
        self
    }

    pub fn buf(mut self, from: &Sym, to: &Sym) -> Subst {
        self.bufs.insert(from.id(), to.clone());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.bufs.is_empty() && !self.fresh
    }

    fn buf_name(&self, s: &Sym) -> Sym {
        self.bufs.get(&s.id()).cloned().unwrap_or_else(|| s.clone())
    }

    pub fn expr(&self, e: &Expr) -> Expr {
        let kind = match &e.kind {
            ExprKind::Var(s) => {
                return match self.vars.get(&s.id()) {
                    Some(r) => r.clone(),
                    None => match self.bufs.get(&s.id()) {
                        Some(t) => Expr::raw(ExprKind::Var(t.clone()), e.ty, e.span),
                        None => e.clone(),
                    },
                }
            }
            ExprKind::Const(_) | ExprKind::ReadConfig { .. } => return e.clone(),
            ExprKind::Read { buf, idx } => ExprKind::Read {
                buf: self.buf_name(buf),
                idx: idx.iter().map(|i| self.expr(i)).collect(),
            },
            ExprKind::Unary(op, a) => ExprKind::Unary(*op, self.expr(a)),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, self.expr(a), self.expr(b)),
            ExprKind::Select(c, a, b) => ExprKind::Select(self.expr(c), self.expr(a), self.expr(b)),
            ExprKind::Cast(t, a) => ExprKind::Cast(*t, self.expr(a)),
            ExprKind::Math(f, args) => {
                ExprKind::Math(*f, args.iter().map(|a| self.expr(a)).collect())
            }
            ExprKind::Window { buf, coords } => ExprKind::Window {
                buf: self.buf_name(buf),
                coords: coords
                    .iter()
                    .map(|c| match c {
                        WinCoord::Point(p) => WinCoord::Point(self.expr(p)),
                        WinCoord::Interval(lo, hi) => {
                            WinCoord::Interval(self.expr(lo), self.expr(hi))
                        }
                    })
                    .collect(),
            },
            ExprKind::Stride { buf, dim } => ExprKind::Stride {
                buf: self.buf_name(buf),
                dim: *dim,
            },
        };
        Expr::raw(kind, e.ty, e.span)
    }

    pub fn buf_type(&self, t: &BufType) -> BufType {
        BufType {
            shape: t.shape.iter().map(|e| self.expr(e)).collect(),
            ..t.clone()
        }
    }

    /// Substitute in a block. Binders introduced by the block are renamed when freshening; the
    /// renaming is visible to the rest of the block.
    pub fn block(&self, b: &[Stmt]) -> Vec<Stmt> {
        let mut sub = self.clone();
        b.iter().map(|s| sub.stmt_in_block(s)).collect()
    }

    /// Substitute in one statement (its own binder, if any, is renamed when freshening).
    pub fn stmt(&self, s: &Stmt) -> Stmt {
        self.clone().stmt_in_block(s)
    }

    fn bind(&mut self, sym: &Sym) -> Sym {
        if self.fresh {
            let n = sym.fresh_copy();
            self.bufs.insert(sym.id(), n.clone());
            self.vars.remove(&sym.id());
            n
        } else {
            self.vars.remove(&sym.id());
            sym.clone()
        }
    }

    fn stmt_in_block(&mut self, s: &Stmt) -> Stmt {
        let kind = match &s.kind {
            StmtKind::Pass => StmtKind::Pass,
            StmtKind::Assign { buf, idx, rhs } => StmtKind::Assign {
                buf: self.buf_name(buf),
                idx: idx.iter().map(|i| self.expr(i)).collect(),
                rhs: self.expr(rhs),
            },
            StmtKind::Reduce { buf, idx, rhs } => StmtKind::Reduce {
                buf: self.buf_name(buf),
                idx: idx.iter().map(|i| self.expr(i)).collect(),
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
            StmtKind::For { var, lo, hi, body } => {
                let (lo, hi) = (self.expr(lo), self.expr(hi));
                let mut inner = self.clone();
                let var = inner.bind(var);
                StmtKind::For {
                    var,
                    lo,
                    hi,
                    body: inner.block(body),
                }
            }
            StmtKind::Alloc { buf, ty } => {
                let ty = self.buf_type(ty);
                StmtKind::Alloc {
                    buf: self.bind(buf),
                    ty,
                }
            }
            StmtKind::Free { buf } => StmtKind::Free {
                buf: self.buf_name(buf),
            },
            StmtKind::Window { name, rhs } => {
                let rhs = self.expr(rhs);
                StmtKind::Window {
                    name: self.bind(name),
                    rhs,
                }
            }
            StmtKind::Call { proc, args } => StmtKind::Call {
                proc: proc.clone(),
                args: args.iter().map(|a| self.expr(a)).collect(),
            },
        };
        Stmt::new(kind, s.span)
    }
}
