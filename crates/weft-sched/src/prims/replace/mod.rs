//! `replace`: substitute a block of statements by a call to a proc (an instruction or any proc)
//! whose body it matches.
//!
//! ```text
//! s_1; ...; s_k  ⇝  f(a_1, ..., a_m)      where k = the number of statements of f's body
//! ```
//!
//! The arguments are inferred by unifying the block with `f`'s body (Exo §5, unification modulo
//! linear equalities):
//!
//! - `f`'s parameters are the unknowns; the block's free variables (sizes, enclosing loop
//!   variables) are knowns; binders on both sides (loop variables, allocations) are unified by
//!   renaming.
//! - Statements and data expressions must match exactly (the same operations, constants, types,
//!   config fields). Every pair of control integer expressions (loop bounds, indices, operands of
//!   conditions) becomes a linear equation instead.
//! - A buffer parameter `x` of rank `r` used as `x[e_1..e_r]` where the block reads or writes
//!   `A[f_1..f_R]` becomes the window of `A` that keeps `r` of `A`'s dimensions as intervals and
//!   fixes the others at points: `f_{k_j} = o_j + e_j` for the interval dimensions and
//!   `f_k = p_k` for the points, with offsets `o_j` and points `p_k` new unknowns. Which
//!   dimensions are intervals is the paper's disjunction; it is decided on the first access by the
//!   loop variables (an interval dimension carries the callee's loop variables, a point dimension
//!   none of them), innermost dimensions preferred.
//! - A dense parameter (not a window) is passed a whole buffer: all its offsets are 0, and its
//!   shape is the buffer's, which gives the sizes it names (the callee `extract_proc` makes of a
//!   loop body takes the enclosing loop's variable and the whole buffer).
//! - A call in `f`'s body matches a call of the same proc in the block: control arguments give
//!   equations, a window argument `x[c...]` against `A[d...]` unifies its start as an access and
//!   each interval's extent (`hi - lo`) as an equation, with points where the binding has points.
//!   A window statement matches one whose window unifies so, and its name then stands for the
//!   block's (a binder). The called procs are the same, so the calls mean the same.
//! - The equations are identities in the block's bound variables, so each bound variable's
//!   coefficients must agree on both sides; what remains is a linear system in the unknowns with
//!   coefficients affine in the knowns, solved by elimination (each unknown becomes an affine
//!   expression of the knowns; integer division must be exact). Equations left without unknowns
//!   are proved in the block's context by the solver (counterexample otherwise).
//!
//! Safety: the block is then, syntactically, `f`'s body with the parameters replaced by the
//! arguments, up to equalities proved in context, which is the meaning of the call. The call is
//! finally checked like any call (weft-check): `f`'s preconditions proved in context, every
//! window in bounds, written arguments not overlapping, the memories of the proc's arguments
//! those of the parameters; a failure is reported with the checker's counterexample. (A buffer
//! the proc allocates may still be in another memory than the parameter: a schedule replaces its
//! accesses by instructions first and then moves it with `set_memory`, which checks the memory
//! rules.)

use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use std::collections::HashMap;
use std::sync::Arc;
use weft_check::smt::Term;
use weft_ir::{
    ArgKind, BinOp, BufType, CtrlType, Expr, ExprKind, Proc, Span, Stmt, StmtKind, Ty, WinCoord,
};

const PRIM: &str = "replace";

mod unify;

use unify::{bound_syms, written_configs, Atom, Lin, Mismatch, Unifier};

/// Replace the `callee.body.len()` statements starting at `at` by a call to `callee`.
pub fn replace(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    callee: &Arc<Proc>,
) -> Result<Rewrite, SchedError> {
    let first = stmt_at(PRIM, p, at)?;
    let n = callee.body.len();
    let block = path::block_of(p, at).expect("the statement exists");
    let start = at.last().index;
    if n == 0 || start + n > block.len() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{}' has {n} statements, but only {} follow here",
                callee.name,
                block.len() - start
            ),
        )
        .at(first.span, describe(first)));
    }
    let stmts = &block[start..start + n];
    let mut u = Unifier {
        callee,
        ren: HashMap::new(),
        written_configs: written_configs(stmts),
        bound: bound_syms(stmts),
        unknowns: Vec::new(),
        param_unknown: HashMap::new(),
        bufs: HashMap::new(),
        eqs: Vec::new(),
        atom_exprs: HashMap::new(),
    };
    for (k, arg) in callee.args.iter().enumerate() {
        match arg.kind {
            ArgKind::Ctrl(CtrlType::Bool) => {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "'{}' has a boolean parameter '{}', which replace cannot infer",
                        callee.name, arg.sym
                    ),
                )
                .at(first.span, describe(first)))
            }
            ArgKind::Ctrl(_) => {
                u.unknowns.push((format!("'{}'", arg.sym), Some(k)));
                u.param_unknown.insert(arg.sym.id(), u.unknowns.len() - 1);
            }
            ArgKind::Buf(_) => {}
        }
    }
    let fail = |m: Mismatch| {
        SchedError::new(
            PRIM,
            format!(
                "the block does not match the body of '{}': {}",
                callee.name, m.0
            ),
        )
        .at(m.1, "here")
        .at(first.span, describe(first))
    };
    u.block(&callee.body, stmts, first.span).map_err(fail)?;
    // The shapes of the buffers of the proc (arguments and allocations).
    let allocs = alloc_types(p);
    let shapes: HashMap<u64, &Vec<Expr>> = p
        .args
        .iter()
        .filter_map(|a| Some((a.sym.id(), &a.buf()?.shape)))
        .chain(allocs.iter().map(|(id, ty)| (*id, &ty.shape)))
        .collect();
    // A dense parameter is passed a whole buffer (unify.rs fixes its offsets at 0): its shape is
    // the buffer's, which gives the sizes it names (an `extract_proc`'s `n` of `A: f32[n, 8]`).
    for param in &callee.args {
        let ArgKind::Buf(bt) = &param.kind else {
            continue;
        };
        let (false, Some(binding)) = (bt.window, u.bufs.get(&param.sym.id())) else {
            continue;
        };
        let Some(shape) = shapes.get(&binding.buf.id()) else {
            continue;
        };
        if shape.len() == bt.shape.len() {
            let pairs: Vec<(Expr, Expr)> = bt
                .shape
                .iter()
                .cloned()
                .zip(shape.iter().cloned())
                .collect();
            // Only for inference: an extent that is not affine in the parameters gives no
            // equation (the call's check compares the shapes in the end).
            for (x, y) in pairs {
                let _ = u.equate_ctrl(&x, &y);
            }
        }
    }

    let values = solve(a, p, at, &mut u, callee, first)?;
    let mut args = Vec::new();
    for param in &callee.args {
        match &param.kind {
            ArgKind::Ctrl(_) => {
                let uid = u.param_unknown[&param.sym.id()];
                let v = values[uid].clone().ok_or_else(|| {
                    SchedError::new(
                        PRIM,
                        format!(
                            "cannot infer argument '{}' of '{}' from the block",
                            param.sym, callee.name
                        ),
                    )
                    .at(first.span, describe(first))
                })?;
                args.push(to_expr(&u, &v));
            }
            ArgKind::Buf(bt) => {
                let Some(binding) = u.bufs.get(&param.sym.id()) else {
                    return Err(SchedError::new(
                        PRIM,
                        format!(
                            "parameter '{}' of '{}' is not used by its body, so it cannot be \
                             inferred",
                            param.sym, callee.name
                        ),
                    )
                    .at(first.span, describe(first)));
                };
                // The extents of the window: the parameter's shape with the arguments substituted.
                let mut ctrl_map = crate::subst::Subst::new();
                for (q, e) in callee.args.iter().zip(&args) {
                    if q.ctrl().is_some() {
                        ctrl_map = ctrl_map.var(&q.sym, e.clone());
                    }
                }
                let mut shape = bt.shape.iter();
                let mut coords = Vec::new();
                for (uid, interval) in &binding.dims {
                    let start = to_expr(&u, values[*uid].as_ref().expect("solved with the block"));
                    if *interval {
                        let ext = shape.next().expect("rank checked");
                        let ext = crate::simplify::expr(&ctrl_map.expr(ext));
                        let end =
                            crate::simplify::expr(&Expr::binary(BinOp::Add, start.clone(), ext));
                        coords.push(WinCoord::Interval(start, end));
                    } else {
                        coords.push(WinCoord::Point(start));
                    }
                }
                // A window covering the whole buffer is the buffer itself.
                let whole = shapes.get(&binding.buf.id()).is_some_and(|shape| {
                    shape.len() == coords.len()
                        && shape.iter().zip(&coords).all(|(ext, c)| match c {
                            WinCoord::Interval(lo, hi) => {
                                lo.to_string() == "0"
                                    && hi.to_string() == crate::simplify::expr(ext).to_string()
                            }
                            WinCoord::Point(_) => false,
                        })
                });
                if whole {
                    coords.clear();
                }
                args.push(Expr::raw(
                    ExprKind::Window {
                        buf: binding.buf.clone(),
                        coords,
                    },
                    Ty::Data(bt.elem),
                    first.span,
                ));
            }
        }
    }
    let call = |proc: Arc<Proc>| {
        Stmt::new(
            StmtKind::Call {
                proc,
                args: args.clone(),
            },
            first.span,
        )
    };
    let new = path::replace_range(p, at, n, vec![call(callee.clone())]);
    // The call is checked with the parameters' memories set to those of the buffers passed: the
    // memories say how code is emitted, not what it means, and a schedule typically replaces
    // every access of a buffer by instructions before it moves the buffer into their memory
    // (`set_memory`, which then checks the memory rules). The final proc is checked in full.
    let probe = path::replace_range(p, at, n, vec![call(with_arg_memories(&allocs, callee, &u))]);
    super::check_new_call(a, PRIM, p, &probe, at, callee, first)?;
    Ok(finish(new, at, n))
}

/// The rewrite: the `n` statements at `at` became one call; the first one's cursor designates it.
fn finish(new: Arc<Proc>, at: &Path, n: usize) -> Rewrite {
    let forward = Forward::replaced_range(at, n, 1, |rel| {
        (rel[0].index == 0 && rel.len() == 1).then(|| rel.to_vec())
    });
    Rewrite { proc: new, forward }
}

/// `callee` with each buffer parameter bound to an allocation of `p` in that allocation's memory
/// (`set_memory` can move the allocation later; the proc's own arguments cannot move, so their
/// memories must match the parameters').
fn with_arg_memories(allocs: &HashMap<u64, BufType>, callee: &Arc<Proc>, u: &Unifier) -> Arc<Proc> {
    let mut out = (**callee).clone();
    for arg in &mut out.args {
        let Some(binding) = u.bufs.get(&arg.sym.id()) else {
            continue;
        };
        if let (ArgKind::Buf(bt), Some(t)) = (&mut arg.kind, allocs.get(&binding.buf.id())) {
            bt.mem = t.mem.clone();
        }
    }
    Arc::new(out)
}

/// The type of every allocation of `p`, by symbol id.
fn alloc_types(p: &Proc) -> HashMap<u64, BufType> {
    let mut out = HashMap::new();
    weft_ir::visit::walk_block(&p.body, &mut |s| {
        if let StmtKind::Alloc { buf, ty } = &s.kind {
            out.insert(buf.id(), ty.clone());
        }
    });
    out
}

/// Solve the equations: each unknown becomes a linear form over the knowns. Equations left
/// without unknowns are proved in context.
fn solve(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    u: &mut Unifier,
    callee: &Proc,
    first: &Stmt,
) -> Result<Vec<Option<Lin>>, SchedError> {
    let err = |m: String, span: Span| {
        SchedError::new(
            PRIM,
            format!(
                "the block does not match the body of '{}': {m}",
                callee.name
            ),
        )
        .at(span, "here")
        .at(first.span, describe(first))
    };
    // Bound variables must agree exactly.
    for (eq, span) in &u.eqs {
        if let Some((Atom::Sym(s), _)) = eq
            .terms
            .iter()
            .find(|(a, _)| matches!(a, Atom::Sym(s) if u.bound.contains(s)))
        {
            let name = u
                .atom_exprs
                .get(&Atom::Sym(*s))
                .map_or("?".to_string(), |e| e.to_string());
            return Err(err(
                format!("the loop variable '{name}' is used differently"),
                *span,
            ));
        }
    }
    let mut values: Vec<Option<Lin>> = vec![None; u.unknowns.len()];
    let mut eqs: Vec<(Lin, Span)> = u.eqs.clone();
    while let Some(k) = eqs.iter().position(|(e, _)| e.unknowns().len() == 1) {
        let (eq, span) = eqs.remove(k);
        let x = eq.unknowns()[0];
        let c = eq.coeff(&Atom::Unknown(x));
        // c·x + rest = 0  ⇒  x = -rest / c, exactly.
        let mut rest = eq.clone();
        rest.terms.retain(|t| t.0 != Atom::Unknown(x));
        let divides = |v: i64| v.checked_rem(c) == Some(0);
        if !divides(rest.constant) || rest.terms.iter().any(|t| !divides(t.1)) {
            return Err(err(
                format!("{} would not be an integer", u.unknowns[x].0),
                span,
            ));
        }
        // x = rest / (-c), every division exact; overflow (i64::MIN / -1) is a mismatch.
        let too_large = || err("an index is too large to unify".into(), span);
        let div = |v: i64| c.checked_neg().and_then(|m| v.checked_div(m));
        let mut v = rest;
        v.constant = div(v.constant).ok_or_else(too_large)?;
        for t in &mut v.terms {
            t.1 = div(t.1).ok_or_else(too_large)?;
        }
        let atom = Atom::Unknown(x);
        for (e, _) in &mut eqs {
            *e = e
                .subst(&atom, &v)
                .ok_or_else(|| err("an index is too large to unify".into(), span))?;
        }
        for w in values.iter_mut().flatten() {
            *w = w
                .subst(&atom, &v)
                .ok_or_else(|| err("an index is too large to unify".into(), span))?;
        }
        values[x] = Some(v);
    }
    let scope = a.scope_at(p, at);
    for (eq, span) in eqs {
        if !eq.unknowns().is_empty() {
            let names: Vec<String> = eq
                .unknowns()
                .iter()
                .map(|x| u.unknowns[*x].0.clone())
                .collect();
            return Err(err(
                format!(
                    "cannot determine {} (more than one unknown)",
                    names.join(" and ")
                ),
                span,
            ));
        }
        let e = to_expr(u, &eq);
        let t = a
            .term(&scope, &e)
            .ok_or_else(|| err(format!("'{e} == 0' is not a control fact"), span))?;
        a.prove(&scope.facts, &Term::eq(t, Term::Int(0)))
            .map_err(|cex| {
                err(
                    format!("'{e} == 0' does not hold here (the index expressions differ)"),
                    span,
                )
                .with_counterexample(cex)
            })?;
    }
    Ok(values)
}

/// The expression of a linear form over known atoms.
fn to_expr(u: &Unifier, l: &Lin) -> Expr {
    let mut out: Option<Expr> = None;
    for (atom, c) in &l.terms {
        let e = u
            .atom_exprs
            .get(atom)
            .cloned()
            .unwrap_or_else(|| Expr::int(0));
        let term = if *c == 1 {
            e
        } else {
            Expr::binary(BinOp::Mul, Expr::int(*c), e)
        };
        out = Some(match out {
            None => term,
            Some(acc) => Expr::binary(BinOp::Add, acc, term),
        });
    }
    let e = match out {
        None => Expr::int(l.constant),
        Some(acc) if l.constant == 0 => acc,
        Some(acc) => Expr::binary(BinOp::Add, acc, Expr::int(l.constant)),
    };
    crate::simplify::expr(&e)
}
