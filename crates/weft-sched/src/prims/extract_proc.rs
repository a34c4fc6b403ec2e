//! `extract_proc` (Exo's `extract_subproc`): move a block of statements into a new proc and call
//! it in their place.
//!
//! ```text
//! s₁; ...; sₖ   ⇝   g(x₁, ..., xₙ)      where   proc g(x₁': τ₁, ..., xₙ': τₙ) {
//!                                                    assert P₁; ...
//!                                                    (s₁; ...; sₖ)[xᵢ ↦ xᵢ']
//!                                                 }
//! ```
//!
//! The arguments are the free names of the block, in the order the caller declares them:
//!
//! - control names: the caller's control arguments it uses (with their types: `size`, `index`,
//!   `stride`, `bool`) and the enclosing loops' variables it uses (as `index`, which is what the
//!   checker gives a loop variable);
//! - buffers, passed whole: the caller's buffer arguments (with their declared types), earlier
//!   allocations (dense, with their types) and earlier window bindings (as windows, `[T][e...]`,
//!   the extents of their intervals). When the block uses two views of one buffer (the buffer and
//!   a window of it, or two windows), passing both would alias, so the underlying buffer is passed
//!   once and the windows are re-bound, in order, at the top of the new proc;
//! - the control names that these types and windows mention.
//!
//! The new proc's preconditions are facts that hold where the block stands — the caller's
//! preconditions, the enclosing loops' bounds (`lo <= i`, `i < hi`) and the enclosing `if`
//! conditions (negated in an `else`): first those over its arguments alone; if the new proc does
//! not check with these, every fact connected to its arguments (a fact is taken when it mentions
//! an argument, and the names it mentions become arguments too, until nothing changes). Facts
//! that read a config field are left out (the field may change before the block runs).
//!
//! Conditions: the `count` statements exist and are consecutive in one block; the name is a valid
//! identifier other than the caller's; no allocation or window binding among them is used after
//! them (it would go out of scope); none of them frees a buffer allocated outside them; the types
//! of the buffers passed (their extents) and the coordinates of the windows re-bound in the new
//! proc read no config field (nor data): they are evaluated again at the call, where a field may
//! hold another value than where the buffer was declared (and the checker cannot equate two reads
//! of a field); the new proc passes the checker on its own (types, bounds, preconditions); and the
//! caller passes it with the call in place of the statements (the call's arguments have the
//! parameters' types, its preconditions are provable there). Otherwise the step is rejected with
//! the checker's message.
//!
//! Safety: by the semantics of calls, `g(x...)` runs `g`'s body with each control parameter bound
//! to the argument's value and each buffer parameter bound to the argument's view, over the same
//! data store and configs — which is exactly `inline_call` of the new call, and that gives back
//! the original statements (control values are immutable, and a whole-buffer view is a renaming).
//! A re-bound window denotes the view it denoted in the caller: its coordinates read only control
//! values, which are immutable, and the buffers it stands on are passed whole. The call is well
//! formed in the caller (checked): its size arguments are the caller's sizes, its buffer
//! arguments have the parameters' types by construction (extents over immutable control values),
//! its preconditions are facts that hold at the call, and no two buffer arguments share a root, so
//! nothing aliases. The rewrite is an equivalence.

use super::{describe, Rewrite};
use crate::effects::{block_mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::subst::Subst;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_ir::{
    Arg, ArgKind, BinOp, BufType, CtrlType, Expr, ExprKind, Proc, Span, Stmt, StmtKind, Sym, Ty,
    WinCoord,
};

const PRIM: &str = "extract_proc";

/// How a buffer in scope before the block came to be.
#[derive(Clone)]
enum Source {
    /// An argument of the caller or an allocation: its own root.
    Root,
    /// `let name = base[coords]`.
    Window { base: Sym, coords: Vec<WinCoord> },
}

/// A buffer in scope before the block.
#[derive(Clone)]
struct BufInScope {
    sym: Sym,
    ty: BufType,
    source: Source,
}

/// What is known where the block stands.
#[derive(Default)]
struct Context {
    /// Control names in scope, in declaration order, with their types.
    ctrl: Vec<(Sym, CtrlType)>,
    /// Buffers in scope, in declaration order.
    bufs: Vec<BufInScope>,
    /// Preconditions, loop bounds and branch conditions.
    facts: Vec<Expr>,
}

impl Context {
    fn buf(&self, id: u64) -> Option<&BufInScope> {
        self.bufs.iter().rev().find(|b| b.sym.id() == id)
    }

    fn is_ctrl(&self, id: u64) -> bool {
        self.ctrl.iter().any(|(s, _)| s.id() == id)
    }

    /// The buffer a view finally stands on.
    fn root(&self, id: u64) -> u64 {
        match self.buf(id).map(|b| &b.source) {
            Some(Source::Window { base, .. }) => self.root(base.id()),
            _ => id,
        }
    }

    /// Bring an allocation or window binding into scope.
    fn declare(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Alloc { buf, ty } => self.bufs.push(BufInScope {
                sym: buf.clone(),
                ty: ty.clone(),
                source: Source::Root,
            }),
            StmtKind::Window { name, rhs } => {
                let ExprKind::Window { buf, coords } = &rhs.kind else {
                    return;
                };
                let Some(base) = self.buf(buf.id()) else {
                    return;
                };
                let ty = if coords.is_empty() {
                    base.ty.clone()
                } else {
                    BufType {
                        shape: coords
                            .iter()
                            .filter_map(|c| match c {
                                WinCoord::Interval(lo, hi) => Some(crate::simplify::expr(
                                    &Expr::binary(BinOp::Sub, hi.clone(), lo.clone()),
                                )),
                                WinCoord::Point(_) => None,
                            })
                            .collect(),
                        window: true,
                        ..base.ty.clone()
                    }
                };
                self.bufs.push(BufInScope {
                    sym: name.clone(),
                    ty,
                    source: Source::Window {
                        base: buf.clone(),
                        coords: coords.clone(),
                    },
                });
            }
            _ => {}
        }
    }
}

/// The context of the statement at `at`: names in scope and facts.
fn context(p: &Proc, at: &Path) -> Result<Context, SchedError> {
    let mut cx = Context::default();
    for a in &p.args {
        match &a.kind {
            ArgKind::Ctrl(c) => cx.ctrl.push((a.sym.clone(), *c)),
            ArgKind::Buf(t) => cx.bufs.push(BufInScope {
                sym: a.sym.clone(),
                ty: t.clone(),
                source: Source::Root,
            }),
        }
    }
    cx.facts.extend(p.preds.iter().cloned());
    let mut block = &p.body;
    for (k, step) in at.0.iter().enumerate() {
        for s in block.iter().take(step.index) {
            cx.declare(s);
        }
        if k + 1 == at.0.len() {
            break;
        }
        let s = block
            .get(step.index)
            .ok_or_else(|| SchedError::new(PRIM, format!("no statement at {at}")))?;
        let next = at.0[k + 1].block;
        match &s.kind {
            StmtKind::For {
                var, lo, hi, body, ..
            } => {
                let v = Expr::var(var, Ty::Int);
                cx.facts.push(lo.clone().le(v.clone()));
                cx.facts.push(v.lt(hi.clone()));
                cx.ctrl.push((var.clone(), CtrlType::Index));
                block = body;
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                cx.facts.push(if next == 0 {
                    cond.clone()
                } else {
                    cond.clone().not()
                });
                block = if next == 0 { then_body } else { else_body };
            }
            _ => return Err(SchedError::new(PRIM, format!("no statement at {at}"))),
        }
    }
    Ok(cx)
}

/// The names an expression mentions: control variables, and buffers (reads, windows, strides).
/// `None` when it reads a config field or data.
fn expr_names(e: &Expr, ctrl: &mut Vec<u64>, bufs: &mut Vec<u64>) -> Option<()> {
    let mut pure = true;
    weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
        ExprKind::Var(s) => ctrl.push(s.id()),
        ExprKind::Read { buf, .. } => {
            pure = false;
            bufs.push(buf.id());
        }
        ExprKind::Window { buf, .. } | ExprKind::Stride { buf, .. } => bufs.push(buf.id()),
        ExprKind::ReadConfig { .. } => pure = false,
        _ => {}
    });
    pure.then_some(())
}

/// Replace the `count` statements starting at `at` by a call to a new proc `name`; returns the
/// rewrite and the new proc.
pub fn extract_proc(
    _a: &mut Analysis,
    p: &Proc,
    at: &Path,
    count: usize,
    name: &str,
) -> Result<(Rewrite, Arc<Proc>), SchedError> {
    if !weft_ir::print::usable_name(name) {
        return Err(SchedError::new(
            PRIM,
            format!("'{name}' is not a valid proc name"),
        ));
    }
    if name == p.name {
        return Err(SchedError::new(
            PRIM,
            format!("the new proc cannot be named '{name}' like the proc it comes from"),
        ));
    }
    let block = path::block_of(p, at)
        .ok_or_else(|| SchedError::new(PRIM, format!("no statement at {at} in '{}'", p.name)))?;
    let first = at.last().index;
    let end = first
        .checked_add(count)
        .filter(|e| count > 0 && *e <= block.len());
    let Some(end) = end else {
        return Err(SchedError::new(
            PRIM,
            format!(
                "there are no {count} statements from {at} in one block (it has {} from there)",
                block.len().saturating_sub(first)
            ),
        ));
    };
    let stmts: Vec<Stmt> = block[first..end].to_vec();
    let rest = &block[end..];
    let span = stmts[0].span.to(stmts[count - 1].span);
    let what = describe(&stmts[0]);

    // Names declared by the statements must not be needed after them.
    for s in &stmts {
        let declared = match &s.kind {
            StmtKind::Alloc { buf, .. } => Some(buf),
            StmtKind::Window { name, .. } => Some(name),
            _ => None,
        };
        if let Some(d) = declared {
            if block_mentions(rest, d) {
                return Err(SchedError::new(
                    PRIM,
                    format!("'{d}' is declared by the statements and used after them"),
                )
                .at(s.span, describe(s)));
            }
        }
    }

    let cx = context(p, at)?;

    // The free names of the statements.
    let mut used_ctrl: HashSet<u64> = HashSet::new();
    let mut used_bufs: HashSet<u64> = HashSet::new();
    let mut problem = None;
    weft_ir::visit::walk_block(&stmts, &mut |s| {
        match &s.kind {
            StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } => {
                used_bufs.insert(buf.id());
            }
            StmtKind::Free { buf } if cx.buf(buf.id()).is_some() => {
                problem.get_or_insert((s.clone(), buf.clone()));
            }
            _ => {}
        }
        for e in weft_ir::visit::stmt_exprs(s) {
            let (mut c, mut b) = (Vec::new(), Vec::new());
            let _ = expr_names(e, &mut c, &mut b);
            used_ctrl.extend(c);
            used_bufs.extend(b);
        }
    });
    if let Some((s, b)) = problem {
        return Err(SchedError::new(
            PRIM,
            format!("the statements free '{b}', which is allocated before them"),
        )
        .at(s.span, describe(&s)));
    }
    used_ctrl.retain(|id| cx.is_ctrl(*id));
    used_bufs.retain(|id| cx.buf(*id).is_some());

    // Which buffers to pass: one view per root; the windows of a root used through several views
    // are re-bound inside the new proc.
    let mut by_root: HashMap<u64, Vec<u64>> = HashMap::new();
    for id in &used_bufs {
        by_root.entry(cx.root(*id)).or_default().push(*id);
    }
    let mut passed: HashSet<u64> = HashSet::new();
    let mut rebound: HashSet<u64> = HashSet::new();
    for (root, views) in &by_root {
        if views.len() == 1 {
            passed.insert(views[0]);
            continue;
        }
        passed.insert(*root);
        for v in views {
            let mut cur = *v;
            while cur != *root {
                rebound.insert(cur);
                match &cx.buf(cur).expect("in scope").source {
                    Source::Window { base, .. } => cur = base.id(),
                    Source::Root => break,
                }
            }
        }
    }
    // Control names the passed types and the re-bound windows mention. Both are evaluated again
    // at the call (a parameter's extents, a re-bound window's coordinates), so they must not read
    // a config field (or data), whose value may have changed since the buffer was declared, and
    // which the checker cannot equate with an earlier read anyway.
    for b in &cx.bufs {
        let (exprs, (whose, verb)): (Vec<&Expr>, _) = if passed.contains(&b.sym.id()) {
            (b.ty.shape.iter().collect(), ("the type of", "reads"))
        } else if rebound.contains(&b.sym.id()) {
            let exprs = match &b.source {
                Source::Window { coords, .. } => coords
                    .iter()
                    .flat_map(|c| match c {
                        WinCoord::Point(x) => vec![x],
                        WinCoord::Interval(x, y) => vec![x, y],
                    })
                    .collect(),
                Source::Root => vec![],
            };
            (exprs, ("the coordinates of the window", "read"))
        } else {
            (vec![], ("", ""))
        };
        for e in exprs {
            let (mut c, mut bs) = (Vec::new(), Vec::new());
            if expr_names(e, &mut c, &mut bs).is_none() {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "{whose} '{}' {verb} a config field or data ('{e}'): the new proc would evaluate it again at the call, where the value may differ",
                        b.sym
                    ),
                )
                .at(span, what));
            }
            used_ctrl.extend(c.into_iter().filter(|id| cx.is_ctrl(*id)));
        }
    }

    // The new proc, with the facts about its arguments alone as preconditions, or, when it does
    // not check with those, with every fact connected to them.
    let mut failure = String::new();
    for expand in [false, true] {
        let (new, call_args) = build(
            &cx,
            used_ctrl.clone(),
            &passed,
            &rebound,
            &stmts,
            name,
            span,
            expand,
        );
        if let Err(ds) = weft_check::check_proc(&new) {
            failure = format!(
                "the extracted proc '{name}' does not check on its own: {}",
                messages(&ds)
            );
            continue;
        }
        let (rw, new) = finish(p, at, count, new, call_args, span);
        // The call must be well formed in the caller too (its arguments' types, the new proc's
        // preconditions at the call).
        match weft_check::check_proc(&rw.proc) {
            Ok(()) => return Ok((rw, new)),
            Err(ds) => {
                failure = format!(
                    "'{}' does not check with the call of '{name}' in place of the statements: {}",
                    p.name,
                    messages(&ds)
                )
            }
        }
    }
    Err(SchedError::new(PRIM, failure).at(span, what))
}

/// The checker's messages, joined.
fn messages(ds: &[weft_ir::Diagnostic]) -> String {
    ds.iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The preconditions: facts over the arguments (`used_ctrl`, `passed`) only, or with `expand`
/// every fact connected to them, whose names join the arguments. Returns which facts are taken.
fn select_facts(
    cx: &Context,
    used_ctrl: &mut HashSet<u64>,
    passed: &HashSet<u64>,
    expand: bool,
) -> Vec<bool> {
    let mut taken = vec![false; cx.facts.len()];
    loop {
        let mut changed = false;
        for (k, f) in cx.facts.iter().enumerate() {
            if taken[k] {
                continue;
            }
            let (mut c, mut b) = (Vec::new(), Vec::new());
            let usable = expr_names(f, &mut c, &mut b).is_some()
                && c.iter().all(|id| cx.is_ctrl(*id))
                && b.iter().all(|id| passed.contains(id))
                && !(c.is_empty() && b.is_empty());
            let wanted = if expand {
                c.iter().any(|id| used_ctrl.contains(id)) || !b.is_empty()
            } else {
                c.iter().all(|id| used_ctrl.contains(id))
            };
            if usable && wanted {
                taken[k] = true;
                changed = true;
                used_ctrl.extend(c);
            }
        }
        if !changed || !expand {
            return taken;
        }
    }
}

/// Build the new proc and the arguments of its call.
#[allow(clippy::too_many_arguments)]
fn build(
    cx: &Context,
    mut used_ctrl: HashSet<u64>,
    passed: &HashSet<u64>,
    rebound: &HashSet<u64>,
    stmts: &[Stmt],
    name: &str,
    span: Span,
    expand: bool,
) -> (Arc<Proc>, Vec<Expr>) {
    let taken = select_facts(cx, &mut used_ctrl, passed, expand);
    // The parameters: control names first, then buffers, in declaration order.
    let mut names: HashSet<String> = HashSet::new();
    let mut fresh = |s: &Sym| {
        let base = s.name().to_string();
        let mut n = base.clone();
        let mut k = 1;
        while names.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        names.insert(n.clone());
        Sym::new(n)
    };
    let mut sub = Subst::new();
    let mut args = Vec::new();
    let mut call_args = Vec::new();
    for (s, c) in &cx.ctrl {
        if !used_ctrl.contains(&s.id()) {
            continue;
        }
        let q = fresh(s);
        sub = sub.var(s, Expr::var(&q, c.ty()));
        call_args.push(Expr::var(s, c.ty()));
        args.push((q, ArgKind::Ctrl(*c)));
    }
    let mut buf_params = Vec::new();
    for b in &cx.bufs {
        if passed.contains(&b.sym.id()) {
            let q = fresh(&b.sym);
            sub = sub.buf(&b.sym, &q);
            call_args.push(Expr::window(&b.sym, b.ty.elem, vec![]));
            buf_params.push((q, b.ty.clone()));
        }
    }
    for (q, ty) in buf_params {
        args.push((q, ArgKind::Buf(sub.buf_type(&ty))));
    }
    // Windows re-bound at the top of the new proc, in declaration order.
    let mut body = Vec::new();
    for b in &cx.bufs {
        if !rebound.contains(&b.sym.id()) {
            continue;
        }
        let Source::Window { base, coords } = &b.source else {
            continue;
        };
        let q = fresh(&b.sym);
        let rhs = sub.expr(&Expr::window(base, b.ty.elem, coords.clone()));
        body.push(Stmt::new(
            StmtKind::Window {
                name: q.clone(),
                rhs,
            },
            span,
        ));
        sub = sub.buf(&b.sym, &q);
    }
    body.extend(sub.block(stmts));
    let preds: Vec<Expr> = cx
        .facts
        .iter()
        .zip(&taken)
        .filter(|(_, t)| **t)
        .map(|(f, _)| sub.expr(f))
        .collect();
    let new = Arc::new(Proc {
        name: name.to_string(),
        args: args
            .into_iter()
            .map(|(sym, kind)| Arg { sym, kind, span })
            .collect(),
        preds,
        body,
        instr: None,
        span,
        origin: None,
    });
    (new, call_args)
}

/// The caller with the call in place of the statements.
fn finish(
    p: &Proc,
    at: &Path,
    count: usize,
    new: Arc<Proc>,
    call_args: Vec<Expr>,
    span: Span,
) -> (Rewrite, Arc<Proc>) {
    let call = Stmt::new(
        StmtKind::Call {
            proc: new.clone(),
            args: call_args,
        },
        span,
    );
    let forward = Forward::replaced_range(at, count, 1, |rel| {
        (rel.len() == 1 && rel[0].index == 0).then(|| rel.to_vec())
    });
    (
        Rewrite {
            proc: path::replace_range(p, at, count, vec![call]),
            forward,
        },
        new,
    )
}
