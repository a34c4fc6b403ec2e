//! Read-only traversals shared by the analyses and backends.

use crate::expr::{Expr, ExprKind, WinCoord};
use crate::proc::{ArgKind, Config, Memory, Proc};
use crate::stmt::{Block, Stmt, StmtKind};
use std::collections::HashSet;
use std::sync::Arc;

/// The direct sub-expressions of an expression.
pub fn expr_children(e: &Expr) -> Vec<&Expr> {
    expr_children_of(&e.kind)
}

/// The direct sub-expressions of an expression of kind `kind`.
pub fn expr_children_of(kind: &ExprKind) -> Vec<&Expr> {
    let mut out = Vec::new();
    for_each_child(kind, |c| out.push(c));
    out
}

/// Call `f` on each direct sub-expression of an expression of kind `kind`, in order.
pub fn for_each_child<'a>(kind: &'a ExprKind, mut f: impl FnMut(&'a Expr)) {
    match kind {
        ExprKind::Const(_) | ExprKind::Var(_) | ExprKind::Stride { .. } => {}
        ExprKind::ReadConfig { .. } => {}
        ExprKind::Read { idx: v, .. } | ExprKind::Math(_, v) => v.iter().for_each(f),
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => f(a),
        ExprKind::Binary(_, a, b) => {
            f(a);
            f(b)
        }
        ExprKind::Select(c, a, b)
        | ExprKind::DataIndex {
            value: c,
            lo: a,
            hi: b,
        } => {
            f(c);
            f(a);
            f(b)
        }
        ExprKind::Window { coords, .. } => {
            for c in coords {
                match c {
                    WinCoord::Point(p) => f(p),
                    WinCoord::Interval(a, b) => {
                        f(a);
                        f(b)
                    }
                }
            }
        }
    }
}

/// Visit `e` and all its sub-expressions, parents first (left to right). Without recursion, so
/// any depth is fine.
pub fn walk_expr<'a>(e: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    let mut work = vec![e];
    while let Some(e) = work.pop() {
        f(e);
        let at = work.len();
        for_each_child(&e.kind, |c| work.push(c));
        work[at..].reverse();
    }
}

/// The expressions directly held by a statement (not those of nested statements).
pub fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Pass | StmtKind::Free { .. } => vec![],
        StmtKind::Assign { idx, rhs, .. } | StmtKind::Reduce { idx, rhs, .. } => {
            idx.iter().chain(std::iter::once(rhs)).collect()
        }
        StmtKind::WriteConfig { rhs, .. } => vec![rhs],
        StmtKind::If { cond, .. } => vec![cond],
        StmtKind::For { lo, hi, .. } => vec![lo, hi],
        StmtKind::Alloc { ty, .. } => ty.shape.iter().collect(),
        StmtKind::Window { rhs, .. } => vec![rhs],
        StmtKind::Call { args, .. } => args.iter().collect(),
    }
}

/// The nested blocks of a statement.
pub fn stmt_blocks(s: &Stmt) -> Vec<&Block> {
    match &s.kind {
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => vec![then_body, else_body],
        StmtKind::For { body, .. } => vec![body],
        _ => vec![],
    }
}

/// Visit every statement of a block, nested ones included, parents first (each statement
/// before the statements of its blocks, which come before its next sibling). Without recursion,
/// so any nesting is fine.
pub fn walk_block<'a>(b: &'a [Stmt], f: &mut impl FnMut(&'a Stmt)) {
    let mut work = vec![b.iter()];
    while let Some(top) = work.last_mut() {
        let Some(s) = top.next() else {
            work.pop();
            continue;
        };
        f(s);
        for inner in stmt_blocks(s).into_iter().rev() {
            work.push(inner.iter());
        }
    }
}

/// Visit every expression of a block, nested statements included.
pub fn walk_block_exprs<'a>(b: &'a [Stmt], f: &mut impl FnMut(&'a Expr)) {
    walk_block(b, &mut |s| {
        for e in stmt_exprs(s) {
            walk_expr(e, f);
        }
    });
}

/// Everything a proc needs to be compiled on its own: the procs it calls (transitively, callees
/// before callers, the proc itself last), and the memories and configs any of them use, in first
/// use order.
#[derive(Default)]
pub struct Deps {
    pub procs: Vec<Arc<Proc>>,
    pub memories: Vec<Arc<Memory>>,
    pub configs: Vec<Arc<Config>>,
}

impl Deps {
    pub fn of(root: &Arc<Proc>) -> Deps {
        let mut d = Deps::default();
        let mut seen = HashSet::new();
        d.visit(root, &mut seen);
        d
    }

    pub fn of_all(roots: &[Arc<Proc>]) -> Deps {
        let mut d = Deps::default();
        let mut seen = HashSet::new();
        for r in roots {
            d.visit(r, &mut seen);
        }
        d
    }

    fn add_memory(&mut self, m: &Arc<Memory>) {
        if !self.memories.iter().any(|x| x.name == m.name) {
            self.memories.push(m.clone());
        }
    }

    fn add_config(&mut self, c: &Arc<Config>) {
        if !self.configs.iter().any(|x| x.name == c.name) {
            self.configs.push(c.clone());
        }
    }

    fn visit(&mut self, p: &Arc<Proc>, seen: &mut HashSet<String>) {
        if !seen.insert(p.name.clone()) {
            return;
        }
        for a in &p.args {
            if let ArgKind::Buf(b) = &a.kind {
                self.add_memory(&b.mem);
            }
        }
        let mut callees = Vec::new();
        let mut configs = Vec::new();
        let mut mems = Vec::new();
        walk_block(&p.body, &mut |s| match &s.kind {
            StmtKind::Call { proc, .. } => callees.push(proc.clone()),
            StmtKind::Alloc { ty, .. } => mems.push(ty.mem.clone()),
            StmtKind::WriteConfig { config, .. } => configs.push(config.clone()),
            _ => {}
        });
        let mut note_expr = |e: &Expr| {
            if let ExprKind::ReadConfig { config, .. } = &e.kind {
                configs.push(config.clone());
            }
        };
        walk_block_exprs(&p.body, &mut note_expr);
        for e in &p.preds {
            walk_expr(e, &mut note_expr);
        }
        for m in &mems {
            self.add_memory(m);
        }
        for c in &configs {
            self.add_config(c);
        }
        for c in &callees {
            self.visit(c, seen);
        }
        self.procs.push(p.clone());
    }
}
