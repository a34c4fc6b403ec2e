//! `lift_alloc`: move an allocation out of the loop that directly contains it.
//!
//! ```text
//! for i in lo..hi { s0; alloc t: T[n...]; s1; free t; s2 }
//!   ⇝  alloc t': T[n...];  for i in lo..hi { s0; s1[t ↦ t']; s2 };  free t'
//! ```
//!
//! (the `free` is optional; `t'` is a fresh symbol for the same buffer). The statements `s0` before
//! the allocation cannot use `t`, and those after a `free t` do not use it (the checker rejects a
//! use after `free`), so only `s1` changes meaning: in the original every iteration starts from a
//! fresh buffer whose cells are uninitialised, in the result an iteration sees what earlier
//! iterations left in `t`.
//!
//! Conditions, each proved with the solver (counterexample otherwise):
//! - the shape `n...` does not mention `i`, and reads no config field that the loop body writes,
//!   so it has the same value in every iteration;
//! - every extent is positive in the loop's context (`0 < n_k` without the loop bounds as facts:
//!   the lifted allocation runs even when the loop runs zero times);
//! - no read sees a value from an earlier iteration. For every read (or reduction, which reads)
//!   `R` of `t` in the top-level statement `s_j` of `s1`, at iteration `i`, one of:
//!   - *covered*: an exact write `W` of `t` in an earlier top-level statement `s_m` (`m < j`) of
//!     `s1` definitely writes the cell `R` reads in the same iteration: with `W`'s own loop
//!     variables solved from `W.idx[d] = R.idx[d]` (a witness `v := R.idx[d] - W.idx[d][v ↦ 0]`
//!     for each variable `v` of `W`, taken from a dimension whose index mentions only `v`), the
//!     solver proves `facts ∧ guard(R) ⇒ guard(W)[σ] ∧ W.idx[σ] = R.idx`. Only statements
//!     without `stride(...)` expressions serve as covers (the analysis drops guards it cannot
//!     translate, which would make a conditional write look definite);
//!   - *untouched*: no write or reduction of `t` at an iteration `i' < i` may touch the cell
//!     `R` reads (`facts ∧ lo <= i' < i ∧ guards ∧ idx = idx'` is unsatisfiable).
//!
//!   Either way the read sees the same value as in the original: the one written earlier in the
//!   same iteration, or (untouched) the same write of this iteration or none at all.
//! - no window of `t` has coordinates that use `stride(...)` (the analysis cannot translate
//!   them, and would lose the accesses made through such a window);
//! - where the shape reads a config field or the memory has no capacity (a heap), the loop is
//!   proved to run at least once: lifted, the size is evaluated and the buffer allocated when
//!   the loop runs zero times too, where a config read may be of a field never written and a
//!   heap allocation may fail.
//!
//! [`super::sink_alloc`] and [`super::reuse_buffer`] reason the same way, with the checks below.
//!
//! Out of an `if` (the allocation in either branch):
//!
//! ```text
//! if c { s0; alloc t: T[n...]; s1; free t; s2 } else { e }
//!   ⇝  alloc t': T[n...];  if c { s0; s1[t ↦ t']; s2 } else { e };  free t'
//! ```
//!
//! The branch runs at most once, so no read can see an earlier run's value: the buffer starts
//! uninitialised in both. The shape is now evaluated and the buffer allocated before the `if`,
//! when the branch is not taken too: every extent must be positive in the `if`'s context, the
//! shape must read no config field (one the branch's path never wrote would be an error), and
//! the memory must have a capacity (`max_bytes`: a stack or registers, whose allocation cannot
//! fail at run time; a heap allocation could fail where the original allocated nothing).

use super::set_memory::{aliases, alloc_at, AllocSite};
use super::{describe, for_stmt, keep_parallel, loop_at, require, term_at, Loop, Rewrite};
use crate::effects::{
    mentions, primed, subst_term, Access, AccessKind, Analysis, Effects, Root, Scope,
};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use std::collections::HashMap;
use weft_check::smt::{Term, Var};
use weft_check::terms::sym_var;
use weft_ir::{ExprKind, Proc, Stmt, StmtKind, Sym};

const PRIM: &str = "lift_alloc";

/// Lift the allocation at `at` out of its directly enclosing loop.
pub fn lift_alloc(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    let not_in_loop = || {
        SchedError::new(
            PRIM,
            format!("the allocation of '{t}' is not directly in a loop body or a branch"),
        )
        .at(site.stmt.span, what.clone())
    };
    let parent = at.parent().ok_or_else(not_in_loop)?;
    if let Some(StmtKind::If { .. }) = path::get(p, &parent).map(|x| &x.kind) {
        return lift_from_if(a, p, at, &parent, &site);
    }
    let loop_path = Some(parent)
        .filter(|_| at.last().block == 0)
        .ok_or_else(not_in_loop)?;
    let l = loop_at(PRIM, p, &loop_path).map_err(|_| not_in_loop())?;
    let k = at.last().index;

    // The shape: independent of the loop, unchanged by the body, positive outside the loop.
    for e in &site.ty.shape {
        if mentions(e, l.var) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "the size {e} of '{t}' depends on the loop index '{}'",
                    l.var.name()
                ),
            )
            .at(site.stmt.span, what));
        }
    }
    check_shape_configs(a, PRIM, p, &loop_path, &l, &site)?;
    let outer = a.scope_at(p, &loop_path);
    require_positive_shape(a, &outer, &site, "when the loop runs zero times")?;
    // Lifted, the size is evaluated and the buffer allocated even when the loop runs zero
    // times: a config field read there may never have been written, and a heap allocation may
    // fail where the original allocated nothing. Such an allocation is lifted only out of a loop
    // proved to run.
    let shape: Vec<&weft_ir::Expr> = site.ty.shape.iter().collect();
    let reads_config = !super::config_reads(&shape).is_empty();
    if reads_config || site.ty.mem.max_bytes.is_none() {
        let (lo, hi) = (
            term_at(a, PRIM, &outer, l.lo)?,
            term_at(a, PRIM, &outer, l.hi)?,
        );
        let why = if reads_config {
            "its size reads a config field, which may not be written when the loop does not run"
        } else {
            "its memory has no capacity, and the allocation could fail when the loop does not run"
        };
        require(
            a,
            PRIM,
            &outer.facts,
            &Term::lt(lo, hi),
            || {
                format!(
                    "loop '{}' may run zero times, and '{t}' cannot be allocated then: {why}",
                    l.var.name()
                )
            },
            site.stmt.span,
            what.clone(),
        )?;
    }

    // A window whose coordinates the analysis cannot translate would hide its accesses.
    refuse_stride_windows(PRIM, &l.body[k + 1..], &t)?;

    // The statements after the allocation, each with its accesses of `t`.
    let free = l
        .body
        .iter()
        .position(|s| matches!(&s.kind, StmtKind::Free { buf } if *buf == t));
    let stmts = stmt_accesses(
        a,
        p,
        at,
        l.body,
        (k + 1..l.body.len()).filter(|j| Some(*j) != free),
        &t,
    );
    let facts = a.scope_at(p, at).facts;
    no_read_of_earlier_iteration(a, PRIM, &outer, &l, &facts, &stmts, &t)?;

    // Build the new code.
    let span = l.stmt.span;
    let (l_var, l_lo, l_hi, parallel) = (l.var.clone(), l.lo.clone(), l.hi.clone(), l.parallel);
    let new = lifted(&site, l.body, k, free, |body| {
        keep_parallel(for_stmt(l_var, l_lo, l_hi, body, span), parallel)
    });
    Ok(Rewrite {
        forward: lifted_forward(&loop_path, new.len(), 0, k, free),
        proc: path::replace_stmt(p, &loop_path, new),
    })
}

/// `alloc t'; parent'; free t'` for the allocation `site` at index `k` (and its `free` at `free`)
/// of `body`: `parent'` is what `rebuild` makes of the rest of `body`, `t` renamed `t'`.
fn lifted(
    site: &AllocSite,
    body: &[Stmt],
    k: usize,
    free: Option<usize>,
    rebuild: impl FnOnce(Vec<Stmt>) -> Stmt,
) -> Vec<Stmt> {
    let t2 = site.buf.fresh_copy();
    let sub = Subst::new().buf(site.buf, &t2);
    let rest: Vec<Stmt> = body
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != k && Some(*j) != free)
        .map(|(_, s)| sub.stmt(s))
        .collect();
    let mut new = vec![
        Stmt::new(
            StmtKind::Alloc {
                buf: t2.clone(),
                ty: site.ty.clone(),
            },
            site.stmt.span,
        ),
        rebuild(rest),
    ];
    if let Some(f) = free {
        new.push(Stmt::new(StmtKind::Free { buf: t2 }, body[f].span));
    }
    new
}

/// Lift the allocation at `at` out of the `if` at `if_path` (see the module comment).
fn lift_from_if(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    if_path: &Path,
    site: &AllocSite,
) -> Result<Rewrite, SchedError> {
    let t = site.buf.clone();
    let stmt = path::get(p, if_path).expect("the parent");
    let StmtKind::If {
        cond,
        then_body,
        else_body,
    } = &stmt.kind
    else {
        unreachable!("lift_from_if is called on an `if`")
    };
    let branch = at.last().block;
    let body = if branch == 0 { then_body } else { else_body };
    let k = at.last().index;
    // Lifted, the size is evaluated and the buffer allocated where the branch is not taken:
    // a config field read there may never have been written, and a heap allocation may fail
    // where the original allocated nothing. Only sizes of the control arguments and loop
    // variables, in memories with a capacity (stack, registers), are lifted.
    let shape: Vec<&weft_ir::Expr> = site.ty.shape.iter().collect();
    if !super::config_reads(&shape).is_empty() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the size of '{t}' reads a config field, which may not be written where the branch is not taken"
            ),
        )
        .at(site.stmt.span, describe(site.stmt)));
    }
    if site.ty.mem.max_bytes.is_none() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{t}' is in memory {}, which has no capacity: lifted out of the branch, its allocation could fail where the branch is not taken",
                site.ty.mem.name
            ),
        )
        .at(site.stmt.span, describe(site.stmt)));
    }
    let outer = a.scope_at(p, if_path);
    require_positive_shape(a, &outer, site, "where the branch is not taken")?;
    let free = body
        .iter()
        .position(|s| matches!(&s.kind, StmtKind::Free { buf } if *buf == t));
    let new = lifted(site, body, k, free, |rest| {
        let (then_body, else_body) = if branch == 0 {
            (rest, else_body.clone())
        } else {
            (then_body.clone(), rest)
        };
        Stmt::new(
            StmtKind::If {
                cond: cond.clone(),
                then_body,
                else_body,
            },
            stmt.span,
        )
    });
    Ok(Rewrite {
        forward: lifted_forward(if_path, new.len(), branch, k, free),
        proc: path::replace_stmt(p, if_path, new),
    })
}

/// Every extent of the lifted allocation is positive in the scope `outer` it moves to (`when`
/// says which runs the original did not allocate in, for the message).
fn require_positive_shape(
    a: &mut Analysis,
    outer: &Scope,
    site: &AllocSite,
    when: &str,
) -> Result<(), SchedError> {
    for e in &site.ty.shape {
        let n = term_at(a, PRIM, outer, e)?;
        require(
            a,
            PRIM,
            &outer.facts,
            &Term::lt(Term::Int(0), n),
            || format!("the size {e} of '{}' may not be positive {when}", site.buf),
            site.stmt.span,
            describe(site.stmt),
        )?;
    }
    Ok(())
}

/// Paths after lifting the allocation at index `k` (and its `free` at `free`) of block `block`
/// of the statement at `parent`, which became `alloc; parent'; free`: the allocation moves to
/// the first new statement, the `free` to the third, and the other statements of the block one
/// or two places up inside `parent'` (the second); the parent's other block stays as it was.
fn lifted_forward(
    parent: &Path,
    count: usize,
    block: usize,
    k: usize,
    free: Option<usize>,
) -> Forward {
    Forward::replaced(parent, count, move |rel| {
        if rel.len() == 1 {
            return Some(vec![Step { block: 0, index: 1 }]);
        }
        if rel[1].block != block {
            let mut out = vec![Step { block: 0, index: 1 }];
            out.extend_from_slice(&rel[1..]);
            return Some(out);
        }
        let m = rel[1].index;
        if m == k {
            return Some(vec![Step { block: 0, index: 0 }]);
        }
        if Some(m) == free {
            return Some(vec![Step { block: 0, index: 2 }]);
        }
        let shift = usize::from(m > k) + usize::from(free.is_some_and(|f| m > f));
        let mut out = vec![
            Step { block: 0, index: 1 },
            Step {
                block,
                index: m - shift,
            },
        ];
        out.extend_from_slice(&rel[2..]);
        Some(out)
    })
}

/// The shape of the allocation `site` reads no config field that the body of the loop `l` (at
/// `loop_path`) writes, so it has the same value at every iteration.
pub(crate) fn check_shape_configs(
    a: &mut Analysis,
    prim: &'static str,
    p: &Proc,
    loop_path: &Path,
    l: &Loop,
    site: &AllocSite,
) -> Result<(), SchedError> {
    let mut shape_configs = Vec::new();
    for e in &site.ty.shape {
        weft_ir::visit::walk_expr(e, &mut |x| {
            if let ExprKind::ReadConfig { config, field } = &x.kind {
                shape_configs.push(Root::Config(config.name.clone(), *field));
            }
        });
    }
    if shape_configs.is_empty() {
        return Ok(());
    }
    let scope = a.scope_at(p, &loop_path.child(0, 0));
    let eff = a.effects(&scope, l.body);
    if let Some(w) = eff.writes().find(|w| shape_configs.contains(&w.root)) {
        return Err(SchedError::new(
            prim,
            format!(
                "the size of '{}' reads config {} and the loop body writes it",
                site.buf, w.name
            ),
        )
        .at(w.span, "writes the config field")
        .at(site.stmt.span, describe(site.stmt)));
    }
    Ok(())
}

/// Refuse a window of `t` (or of a window of it) in `block` whose coordinates use `stride(...)`:
/// the analysis cannot translate them, and would lose the accesses made through the window.
pub(crate) fn refuse_stride_windows(
    prim: &'static str,
    block: &[Stmt],
    t: &Sym,
) -> Result<(), SchedError> {
    let views = aliases(block, t);
    let mut opaque = None;
    let b: Vec<Stmt> = block.to_vec();
    weft_ir::visit::walk_block(&b, &mut |s| {
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| {
                if let ExprKind::Window { buf, .. } = &x.kind {
                    if views.contains(buf) && has_stride_expr(x) {
                        opaque.get_or_insert_with(|| s.clone());
                    }
                }
            });
        }
    });
    if let Some(s) = opaque {
        return Err(SchedError::new(
            prim,
            format!("a window of '{t}' has coordinates that use 'stride', which the analysis cannot follow"),
        )
        .at(s.span, describe(&s)));
    }
    Ok(())
}

/// The accesses of a buffer in one top-level statement, and whether that statement may serve as
/// a cover (it holds no `stride(...)` expression).
pub(crate) struct StmtAccesses {
    pub accesses: Vec<Access>,
    pub usable: bool,
}

/// The accesses of `t` in each statement `block[j]` for `j` in `js`, in that order; `in_block` is
/// the path of any statement of `block`.
pub(crate) fn stmt_accesses(
    a: &mut Analysis,
    p: &Proc,
    in_block: &Path,
    block: &[Stmt],
    js: impl IntoIterator<Item = usize>,
    t: &Sym,
) -> Vec<StmtAccesses> {
    let root = Root::Buf(t.id());
    js.into_iter()
        .map(|j| {
            let scope = a.scope_at(p, &in_block.sibling(j));
            let accesses = a
                .effects(&scope, &block[j..j + 1])
                .accesses
                .into_iter()
                .filter(|x| x.root == root)
                .collect();
            StmtAccesses {
                accesses,
                usable: !has_stride(&block[j..j + 1]),
            }
        })
        .collect()
}

/// Whether the read (or reduction) `r` is *covered*: an exact write in one of the statements
/// `before` that may serve as covers definitely writes the cell it reads ([`covers`]).
pub(crate) fn covered(
    a: &mut Analysis,
    facts: &[Term],
    before: &[StmtAccesses],
    r: &Access,
) -> bool {
    before
        .iter()
        .filter(|s| s.usable)
        .flat_map(|s| s.accesses.iter())
        .filter(|w| w.kind == AccessKind::Write && w.exact)
        .any(|w| covers(a, facts, w, r))
}

/// No read of `t` in the statements `stmts` of the body of the loop `l` sees a value an earlier
/// iteration wrote: each read (or reduction) is [`covered`] by an earlier statement, or
/// *untouched* by the writes and reductions of `stmts` at every iteration `i' < i` (see the
/// module comment). `outer` is the scope of the loop, `facts` those of its body.
pub(crate) fn no_read_of_earlier_iteration(
    a: &mut Analysis,
    prim: &'static str,
    outer: &Scope,
    l: &Loop,
    facts: &[Term],
    stmts: &[StmtAccesses],
    t: &Sym,
) -> Result<(), SchedError> {
    let iv = sym_var(l.var);
    let iv2 = primed(&iv);
    let earlier_map: HashMap<u64, Term> = [(iv.id, Term::IntVar(iv2.clone()))].into();
    let earlier = Effects {
        accesses: stmts
            .iter()
            .flat_map(|s| {
                s.accesses
                    .iter()
                    .filter(|x| x.kind != AccessKind::Read)
                    .cloned()
            })
            .collect(),
    }
    .rename_bound()
    .subst(&earlier_map);
    let mut extra = vec![Term::lt(
        Term::IntVar(iv2.clone()),
        Term::IntVar(iv.clone()),
    )];
    if let (Some(lo), Some(hi)) = (a.term(outer, l.lo), a.term(outer, l.hi)) {
        extra.push(Term::le(lo, Term::IntVar(iv2.clone())));
        extra.push(Term::lt(Term::IntVar(iv2), hi));
    }
    for (n, s) in stmts.iter().enumerate() {
        for r in s.accesses.iter().filter(|x| x.kind != AccessKind::Write) {
            if covered(a, facts, &stmts[..n], r) {
                continue;
            }
            for w in &earlier.accesses {
                if let Some(cex) = a.overlap(facts, &extra, r, w) {
                    return Err(SchedError::new(
                        prim,
                        format!(
                            "an iteration of loop '{}' may read a cell of '{t}' that an earlier iteration wrote, and that it does not write first",
                            l.var.name()
                        ),
                    )
                    .at(r.span, format!("reads {}", r.name))
                    .at(w.span, format!("writes {}", w.name))
                    .with_counterexample(cex));
                }
            }
        }
    }
    Ok(())
}

/// Whether the write `w` definitely writes, in the same iteration, the cell the read `r` reads
/// (see the module comment for the witness construction).
fn covers(a: &mut Analysis, facts: &[Term], w: &Access, r: &Access) -> bool {
    if w.idx.len() != r.idx.len() {
        return false;
    }
    let w = Effects {
        accesses: vec![w.clone()],
    }
    .rename_bound()
    .accesses
    .remove(0);
    let mut sigma: HashMap<u64, Term> = HashMap::new();
    for v in &w.bound {
        let found = w.idx.iter().zip(&r.idx).find_map(|(wi, ri)| {
            let mut vs = Vec::new();
            wi.vars(&mut vs);
            let mine: Vec<&Var> = vs
                .iter()
                .filter(|x| w.bound.iter().any(|b| b.id == x.id))
                .collect();
            if mine.iter().all(|x| x.id == v.id) && !mine.is_empty() {
                let zero: HashMap<u64, Term> = [(v.id, Term::Int(0))].into();
                Some(Term::sub(ri.clone(), subst_term(wi, &zero)))
            } else {
                None
            }
        });
        match found {
            Some(t) => {
                sigma.insert(v.id, t);
            }
            None => return false,
        }
    }
    let mut goal: Vec<Term> = w.guard.iter().map(|g| subst_term(g, &sigma)).collect();
    for (wi, ri) in w.idx.iter().zip(&r.idx) {
        goal.push(Term::eq(subst_term(wi, &sigma), ri.clone()));
    }
    let mut all = facts.to_vec();
    all.extend(r.guard.iter().cloned());
    a.prove(&all, &Term::And(goal)).is_ok()
}

fn has_stride_expr(e: &weft_ir::Expr) -> bool {
    let mut hit = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        hit |= matches!(x.kind, ExprKind::Stride { .. });
    });
    hit
}

/// Whether a block (or a proc it calls) holds a `stride(...)` expression.
fn has_stride(b: &[Stmt]) -> bool {
    let mut hit = false;
    let v: Vec<Stmt> = b.to_vec();
    weft_ir::visit::walk_block(&v, &mut |s| {
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| {
                hit |= matches!(x.kind, ExprKind::Stride { .. });
            });
        }
        if let StmtKind::Call { proc, .. } = &s.kind {
            hit |= has_stride(&proc.body);
        }
    });
    hit
}
