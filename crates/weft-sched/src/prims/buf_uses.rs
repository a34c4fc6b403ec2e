//! What the buffer-layout primitives (`rearrange_dim`, `resize_dim`, `unroll_buffer`) need to
//! know about a local buffer: every place the statements after its allocation name it directly
//! (an access, a window, a stride), with the path of the statement, so that a condition can be
//! proved with the facts that hold there.

use super::set_memory::AllocSite;
use crate::path::Path;
use weft_ir::{Expr, ExprKind, Proc, Stmt, StmtKind, Sym, WinCoord};

/// One direct use of the buffer.
#[derive(Clone, Debug)]
pub(crate) enum Use {
    /// A read, write or reduction `t[idx...]`.
    Access(Vec<Expr>),
    /// A window `t[coords...]` (no coordinates: the whole buffer).
    Window(Vec<WinCoord>),
    /// `stride(t, dim)`.
    Stride(usize),
}

/// Every statement after the allocation at `at` (nested ones included) that names `t` directly,
/// other than `free t`, with its path and its uses of `t`, in program order.
pub(crate) fn uses_after(site: &AllocSite, at: &Path, t: &Sym) -> Vec<(Path, Stmt, Vec<Use>)> {
    let mut out = Vec::new();
    let first = at.last().index + 1;
    for (k, s) in site.rest.iter().enumerate() {
        walk(s, at.sibling(first + k), t, &mut out);
    }
    out
}

fn walk(s: &Stmt, here: Path, t: &Sym, out: &mut Vec<(Path, Stmt, Vec<Use>)>) {
    let mut uses = Vec::new();
    if let StmtKind::Assign { buf, idx, .. } | StmtKind::Reduce { buf, idx, .. } = &s.kind {
        if buf == t {
            uses.push(Use::Access(idx.clone()));
        }
    }
    for e in weft_ir::visit::stmt_exprs(s) {
        weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Read { buf, idx } if buf == t => uses.push(Use::Access(idx.clone())),
            ExprKind::Window { buf, coords } if buf == t => uses.push(Use::Window(coords.clone())),
            ExprKind::Stride { buf, dim } if buf == t => uses.push(Use::Stride(*dim)),
            _ => {}
        });
    }
    if !uses.is_empty() {
        out.push((here.clone(), s.clone(), uses));
    }
    for (b, block) in weft_ir::visit::stmt_blocks(s).into_iter().enumerate() {
        for (k, c) in block.iter().enumerate() {
            walk(c, here.child(b, k), t, out);
        }
    }
}

/// Whether a name is used anywhere in the proc (an argument, a binder, a variable, a buffer): a
/// step that introduces several names at once checks them all against the whole proc.
pub(crate) fn name_in_use(p: &Proc, name: &str) -> bool {
    if p.args.iter().any(|a| a.sym.name() == name) {
        return true;
    }
    let mut found = false;
    weft_ir::visit::walk_block(&p.body, &mut |s| {
        match &s.kind {
            StmtKind::For { var, .. } => found |= var.name() == name,
            StmtKind::Alloc { buf, .. } | StmtKind::Free { buf } => found |= buf.name() == name,
            StmtKind::Window { name: w, .. } => found |= w.name() == name,
            StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } => {
                found |= buf.name() == name
            }
            _ => {}
        }
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
                ExprKind::Var(v) => found |= v.name() == name,
                ExprKind::Read { buf, .. }
                | ExprKind::Window { buf, .. }
                | ExprKind::Stride { buf, .. } => found |= buf.name() == name,
                _ => {}
            });
        }
    });
    found
}

/// Whether the expression reads a config field.
pub(crate) fn reads_config(e: &Expr) -> bool {
    super::inline_assign::reads_config(e)
}
