//! `inline_call`: replace a call by the callee's body.
//!
//! ```text
//! f(e..., b[c...], ...)   ⇝   body_f[x ↦ e, ...][y[i...] ↦ b[φ(i...)], ...]
//! ```
//!
//! Control parameters `x` are replaced by the argument expressions. A buffer parameter `y` bound
//! to the window `b[c...]` is translated through the window: a point coordinate `p` fixes that
//! dimension of `b` at `p`, an interval `lo:hi` maps the next index `k` of `y` to `lo + k` (a
//! whole-buffer argument `b` is a plain renaming). Reads, writes and reductions of `y`, windows of
//! `y` (in window statements and in the arguments of nested calls) and `stride(y, d)` (the stride
//! of the corresponding dimension of `b`) are all translated. Every binder of the callee's body
//! (loop variables, allocations, windows) gets a fresh symbol.
//!
//! Conditions: the callee is not an instruction (its body is its meaning, not code to emit), and
//! no argument reads a config field that the callee (or a proc it calls) writes — the call
//! evaluates its arguments once, before the body runs, while the inlined body evaluates them at
//! each use.
//!
//! Safety: by the semantics of calls, the callee's body runs in an environment that binds its
//! control parameters to the arguments' values and its buffer parameters to the argument views,
//! over the same data store and configs; control values are immutable, so substituting the
//! expressions gives the same values at every use, and the window translation is exactly how a
//! view maps its indices to its buffer. The callee's preconditions and argument shapes were
//! proved at the call by the checker, so the checks the call made cannot fail. The rewrite is an
//! equivalence.

use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::rewrite::Rewriter;
use crate::subst::Subst;
use std::collections::{HashMap, HashSet};
use weft_ir::{ArgKind, BinOp, Expr, ExprKind, Stmt, StmtKind, Sym, WinCoord};

const PRIM: &str = "inline_call";

/// Config fields a block writes, through calls too.
pub(super) fn written_configs(b: &[Stmt], out: &mut HashSet<(String, usize)>) {
    let v: Vec<Stmt> = b.to_vec();
    weft_ir::visit::walk_block(&v, &mut |s| match &s.kind {
        StmtKind::WriteConfig { config, field, .. } => {
            out.insert((config.name.clone(), *field));
        }
        StmtKind::Call { proc, .. } => written_configs(&proc.body, out),
        _ => {}
    });
}

/// Inline the call at `at`.
pub fn inline_call(_a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let StmtKind::Call { proc: callee, args } = &s.kind else {
        return Err(SchedError::new(PRIM, "expected a call").at(s.span, what));
    };
    if callee.is_instr() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{}' is an instruction: its body states its meaning, it is not code to inline",
                callee.name
            ),
        )
        .at(s.span, what));
    }
    if args.len() != callee.args.len() {
        return Err(
            SchedError::new(PRIM, "the call has the wrong number of arguments").at(s.span, what),
        );
    }
    let mut written = HashSet::new();
    written_configs(&callee.body, &mut written);
    for arg in args {
        let mut hit = None;
        weft_ir::visit::walk_expr(arg, &mut |x| {
            if let ExprKind::ReadConfig { config, field } = &x.kind {
                if written.contains(&(config.name.clone(), *field)) {
                    hit = Some(config.name.clone());
                }
            }
        });
        if let Some(c) = hit {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "argument {arg} reads config {c}, which '{}' writes",
                    callee.name
                ),
            )
            .at(s.span, what));
        }
    }
    let mut sub = Subst::freshening();
    let mut views: HashMap<u64, (Sym, Vec<WinCoord>)> = HashMap::new();
    for (param, arg) in callee.args.iter().zip(args) {
        match &param.kind {
            ArgKind::Ctrl(_) => sub = sub.var(&param.sym, arg.clone()),
            ArgKind::Buf(_) => match &arg.kind {
                ExprKind::Window { buf, coords } => {
                    views.insert(param.sym.id(), (buf.clone(), coords.clone()));
                }
                _ => {
                    return Err(SchedError::new(
                        PRIM,
                        format!("argument {arg} of a buffer parameter is not a window"),
                    )
                    .at(s.span, what))
                }
            },
        }
    }
    let body = sub.block(&callee.body);
    let mut tr = Translate { views: &views };
    let new: Vec<Stmt> = body.iter().map(|x| tr.stmt(x)).collect();
    let count = new.len();
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, new),
        forward: Forward::replaced(at, count, |_| None),
    })
}

/// The translation of buffer names bound to views (a callee's parameters, a window statement's
/// name) to the views' buffers and coordinates.
pub(super) struct Translate<'a> {
    pub(super) views: &'a HashMap<u64, (Sym, Vec<WinCoord>)>,
}

fn plus(lo: &Expr, i: Expr) -> Expr {
    if lo.as_int_const() == Some(0) {
        i
    } else {
        Expr::binary(BinOp::Add, lo.clone(), i)
    }
}

impl Rewriter for Translate<'_> {
    /// The buffer and indices of `buf[idx]` in the caller.
    fn access(&self, buf: &Sym, idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        let Some((b, coords)) = self.views.get(&buf.id()) else {
            return (buf.clone(), idx);
        };
        if coords.is_empty() {
            return (b.clone(), idx);
        }
        let mut it = idx.into_iter();
        let out = coords
            .iter()
            .map(|c| match c {
                WinCoord::Point(e) => e.clone(),
                WinCoord::Interval(lo, _) => plus(lo, it.next().unwrap_or_else(|| Expr::int(0))),
            })
            .collect();
        (b.clone(), out)
    }

    fn window(&self, buf: &Sym, wc: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        let Some((b, coords)) = self.views.get(&buf.id()) else {
            return (buf.clone(), wc);
        };
        if coords.is_empty() {
            return (b.clone(), wc);
        }
        if wc.is_empty() {
            return (b.clone(), coords.clone());
        }
        let mut it = wc.into_iter();
        let out = coords
            .iter()
            .map(|c| match c {
                WinCoord::Point(e) => WinCoord::Point(e.clone()),
                WinCoord::Interval(lo, hi) => match it.next() {
                    Some(WinCoord::Point(x)) => WinCoord::Point(plus(lo, x)),
                    Some(WinCoord::Interval(x, y)) => WinCoord::Interval(plus(lo, x), plus(lo, y)),
                    None => WinCoord::Interval(lo.clone(), hi.clone()),
                },
            })
            .collect();
        (b.clone(), out)
    }

    fn stride(&self, buf: &Sym, dim: usize) -> (Sym, usize) {
        let Some((b, coords)) = self.views.get(&buf.id()) else {
            return (buf.clone(), dim);
        };
        if coords.is_empty() {
            return (b.clone(), dim);
        }
        let d = coords
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, WinCoord::Interval(..)))
            .nth(dim)
            .map_or(dim, |(d, _)| d);
        (b.clone(), d)
    }
}
