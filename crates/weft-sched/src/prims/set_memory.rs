//! `set_memory`: change the memory an allocation lives in.
//!
//! ```text
//! alloc t: T[n...] @ M;  ⇝  alloc t: T[n...] @ M';
//! ```
//!
//! Memories only tell the backend how to declare, free and address a buffer; the interpreter and
//! the analyses ignore them, so the rewrite is an equivalence. What can fail is the memory rules
//! the checker enforces, which are checked here with a message of their own:
//! - if `M'` is not addressable, neither `t` nor a window of it is read or written directly
//!   (only instructions may touch it);
//! - if `M'` fixes the innermost dimension, `t`'s innermost extent is that constant;
//! - every call that receives `t` or a window of it declares the parameter in memory `M'`.

use super::{describe, stmt_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::rewrite::Rewriter;
use std::sync::Arc;
use weft_ir::{ArgKind, BufType, Expr, ExprKind, Memory, Stmt, StmtKind, Sym};

const PRIM: &str = "set_memory";

/// An allocation and the statements of its block that follow it (where it can be used).
pub(crate) struct AllocSite<'a> {
    pub stmt: &'a Stmt,
    pub buf: &'a Sym,
    pub ty: &'a BufType,
    pub rest: &'a [Stmt],
}

impl AllocSite<'_> {
    /// The allocation with the type `ty`.
    pub(crate) fn with_type(&self, ty: BufType) -> Stmt {
        Stmt::new(
            StmtKind::Alloc {
                buf: self.buf.clone(),
                ty,
            },
            self.stmt.span,
        )
    }

    /// Give the allocation (at `at`) the type `ty` and pass the statements after it through `r`;
    /// every statement keeps its path.
    pub(crate) fn retype(
        &self,
        p: &weft_ir::Proc,
        at: &Path,
        ty: BufType,
        r: &mut impl Rewriter,
    ) -> Rewrite {
        let mut new = vec![self.with_type(ty)];
        new.extend(self.rest.iter().map(|s| r.stmt(s)));
        let count = new.len();
        Rewrite {
            proc: path::replace_range(p, at, count, new),
            forward: Forward::identity(),
        }
    }
}

/// The allocation at `at`, or an error.
pub(crate) fn alloc_at<'a>(
    prim: &'static str,
    p: &'a weft_ir::Proc,
    at: &Path,
) -> Result<AllocSite<'a>, SchedError> {
    let s = stmt_at(prim, p, at)?;
    let StmtKind::Alloc { buf, ty } = &s.kind else {
        return Err(SchedError::new(prim, "expected an allocation").at(s.span, describe(s)));
    };
    let block = path::block_of(p, at).expect("the statement exists");
    Ok(AllocSite {
        stmt: s,
        buf,
        ty,
        rest: &block[at.last().index + 1..],
    })
}

/// `t` and every window bound (directly or through other windows) from it in `block`.
pub(crate) fn aliases(block: &[Stmt], t: &Sym) -> Vec<Sym> {
    let mut out = vec![t.clone()];
    let b: Vec<Stmt> = block.to_vec();
    weft_ir::visit::walk_block(&b, &mut |s| {
        if let StmtKind::Window { name, rhs } = &s.kind {
            if out.iter().any(|a| mentions(rhs, a)) {
                out.push(name.clone());
            }
        }
    });
    out
}

/// A statement of `block` (nested ones included) that reads or writes one of `bufs` directly.
pub(crate) fn direct_access<'a>(block: &'a [Stmt], bufs: &[Sym]) -> Option<&'a Stmt> {
    fn go<'a>(b: &'a [Stmt], bufs: &[Sym], out: &mut Option<&'a Stmt>) {
        for s in b {
            if out.is_some() {
                return;
            }
            let writes = matches!(&s.kind, StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } if bufs.contains(buf));
            let mut reads = false;
            for e in weft_ir::visit::stmt_exprs(s) {
                weft_ir::visit::walk_expr(e, &mut |x| {
                    if let ExprKind::Read { buf, .. } = &x.kind {
                        reads |= bufs.contains(buf);
                    }
                });
            }
            if writes || reads {
                *out = Some(s);
                return;
            }
            for c in weft_ir::visit::stmt_blocks(s) {
                go(c, bufs, out);
            }
        }
    }
    let mut out = None;
    go(block, bufs, &mut out);
    out
}

/// Move the allocation at `at` into memory `mem` (where it must fit the memory's capacity,
/// `max_bytes`, as the checker requires).
pub fn set_memory(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    mem: Arc<Memory>,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let name = site.buf.name();
    if let Some(want) = mem.last_dim {
        let last = site.ty.shape.last().and_then(Expr::as_int_const);
        if last != Some(want) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "memory {} requires the innermost dimension of '{name}' to be the constant {want}",
                    mem.name
                ),
            )
            .at(site.stmt.span, describe(site.stmt)));
        }
    }
    let bufs = aliases(site.rest, site.buf);
    if !mem.addressable {
        if let Some(s) = direct_access(site.rest, &bufs) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "memory {} is not addressable, but '{name}' is read or written directly",
                    mem.name
                ),
            )
            .at(s.span, describe(s)));
        }
    }
    let mut bad = None;
    let rest: Vec<Stmt> = site.rest.to_vec();
    weft_ir::visit::walk_block(&rest, &mut |s| {
        if let StmtKind::Call { proc, args } = &s.kind {
            for (param, arg) in proc.args.iter().zip(args) {
                if let ArgKind::Buf(bt) = &param.kind {
                    if bufs.iter().any(|b| mentions(arg, b)) && bt.mem.name != mem.name {
                        bad.get_or_insert((
                            s.clone(),
                            param.sym.name().to_string(),
                            bt.mem.name.clone(),
                        ));
                    }
                }
            }
        }
    });
    if let Some((s, param, want)) = bad {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{name}' is passed to parameter '{param}' of a call, which expects memory {want}"
            ),
        )
        .at(s.span, describe(&s)));
    }
    let ty = BufType {
        mem,
        ..site.ty.clone()
    };
    let scope = a.scope_at(p, at);
    super::require_fits(a, PRIM, &scope, name, &ty, site.stmt)?;
    let new = site.with_type(ty);
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new]),
        forward: Forward::identity(),
    })
}
