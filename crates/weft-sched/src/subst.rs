//! Substitution of control variables by expressions and of buffer names by other names, over
//! expressions, statements and blocks; optionally giving every binder inside a fresh symbol, which
//! is what a rewrite that duplicates code (unroll, tails, specialisation) needs so that symbols
//! stay unique identities.

use crate::rewrite::Rewriter;
use std::collections::HashMap;
use weft_ir::{BufType, Expr, ExprKind, Stmt, Sym};

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

    pub fn expr(&self, e: &Expr) -> Expr {
        Rewriter::expr(self, e)
    }

    pub fn buf_type(&self, t: &BufType) -> BufType {
        Rewriter::buf_type(self, t)
    }

    /// Substitute in a block. Binders introduced by the block are renamed when freshening; the
    /// renaming is visible to the rest of the block.
    pub fn block(&self, b: &[Stmt]) -> Vec<Stmt> {
        Rewriter::block(&mut self.clone(), b)
    }

    /// Substitute in one statement (its own binder, if any, is renamed when freshening).
    pub fn stmt(&self, s: &Stmt) -> Stmt {
        Rewriter::stmt(&mut self.clone(), s)
    }
}

impl Rewriter for Subst {
    fn buf(&self, s: &Sym) -> Sym {
        self.bufs.get(&s.id()).cloned().unwrap_or_else(|| s.clone())
    }

    fn var(&self, e: &Expr, s: &Sym) -> Expr {
        match self.vars.get(&s.id()) {
            Some(r) => r.clone(),
            None => match self.bufs.get(&s.id()) {
                Some(t) => Expr::raw(ExprKind::Var(t.clone()), e.ty, e.span),
                None => e.clone(),
            },
        }
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

    fn scope<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = self.clone();
        let out = f(self);
        *self = saved;
        out
    }
}
