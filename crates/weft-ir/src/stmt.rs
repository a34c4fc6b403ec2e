//! Statements and blocks.

use crate::diag::Span;
use crate::expr::Expr;
use crate::proc::{BufType, Config, Proc};
use crate::sym::Sym;
use std::fmt;
use std::sync::Arc;

/// A sequence of statements. Scopes: an `alloc` or window binding is visible from the next
/// statement to the end of its block (or to its `free`).
pub type Block = Vec<Stmt>;

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Pass,
    /// `buf[idx] = rhs`.
    Assign {
        buf: Sym,
        idx: Vec<Expr>,
        rhs: Expr,
    },
    /// `buf[idx] += rhs`: a reduction, treated as commutative and associative by the analyses.
    Reduce {
        buf: Sym,
        idx: Vec<Expr>,
        rhs: Expr,
    },
    /// `Config.field = rhs`.
    WriteConfig {
        config: Arc<Config>,
        field: usize,
        rhs: Expr,
    },
    If {
        cond: Expr,
        then_body: Block,
        else_body: Block,
    },
    /// `for var in lo..hi`: runs `var = lo, lo+1, ..., hi-1`; no iteration when `hi == lo`, and
    /// `hi < lo` (a negative extent) is an error the checker rules out (rule `extent`).
    /// `for var in par(lo..hi)` (`parallel`): the iterations may run at the same time, in any
    /// order; accepted only where they are proved race-free, so the meaning is the sequential one.
    For {
        var: Sym,
        lo: Expr,
        hi: Expr,
        body: Block,
        parallel: bool,
    },
    /// A new buffer, every cell uninitialised.
    Alloc {
        buf: Sym,
        ty: BufType,
    },
    Free {
        buf: Sym,
    },
    /// `let name = window`: binds a view without copying.
    Window {
        name: Sym,
        rhs: Expr,
    },
    Call {
        proc: Arc<Proc>,
        args: Vec<Expr>,
    },
}

#[derive(Debug, PartialEq)]
pub struct StmtNode {
    pub kind: StmtKind,
    pub span: Span,
}

/// Equality is reflexive (float literals compare by their bits), and saying so lets `==` on a
/// shared node (`Stmt`, an `Arc`) answer from the pointer: a step's result shares the
/// statements it left alone, and comparing them by content made the search for what a step
/// changed cost more than some steps.
impl Eq for StmtNode {}

/// Dropping deeply nested statements must not overflow the stack (a builder can nest any
/// depth): the nested blocks this node owns alone are dropped from a work list.
impl Drop for StmtNode {
    fn drop(&mut self) {
        let mut work = Vec::new();
        take_blocks(&mut self.kind, &mut work);
        while let Some(s) = work.pop() {
            if let Ok(mut node) = Arc::try_unwrap(s.0) {
                take_blocks(&mut node.kind, &mut work);
            }
        }
    }
}

fn take_blocks(kind: &mut StmtKind, out: &mut Vec<Stmt>) {
    match kind {
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => {
            out.append(then_body);
            out.append(else_body);
        }
        StmtKind::For { body, .. } => out.append(body),
        _ => {}
    }
}

/// An immutable, shared statement node.
#[derive(Clone, PartialEq)]
pub struct Stmt(Arc<StmtNode>);

impl std::ops::Deref for Stmt {
    type Target = StmtNode;
    fn deref(&self) -> &StmtNode {
        &self.0
    }
}

impl fmt::Debug for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::print::stmt_to_string(self))
    }
}

impl Stmt {
    /// Whether the two are one shared node: a cheap test before `==`, which compares contents.
    pub fn same(&self, other: &Stmt) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub fn new(kind: StmtKind, span: Span) -> Stmt {
        Stmt(Arc::new(StmtNode { kind, span }))
    }

    pub fn kind(&self) -> &StmtKind {
        &self.0.kind
    }

    pub fn ptr_eq(a: &Stmt, b: &Stmt) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    pub fn with_span(&self, span: Span) -> Stmt {
        Stmt::new(self.kind.clone(), span)
    }

    pub fn pass() -> Stmt {
        Stmt::new(StmtKind::Pass, Span::DUMMY)
    }
}
