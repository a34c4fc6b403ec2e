//! `sink_alloc`: move an allocation into the loop or `if` that directly follows it and is the only
//! statement that uses the buffer (the inverse of `lift_alloc`).
//!
//! ```text
//! alloc t: T[n...];  for i in lo..hi { s };  free t
//!   ⇝  for i in lo..hi { alloc t: T[n...]; s; free t }
//! alloc t: T[n...];  if c { s1 } else { s2 };  free t
//!   ⇝  if c { alloc t: T[n...]; s1; free t } else { alloc t': T[n...]; s2[t ↦ t']; free t' }
//! ```
//!
//! The `free` is optional, and may come later in the block (it moves along). An `if` gets an
//! allocation in each branch that uses `t` (in the `then` branch when neither does); the `else`
//! branch's is a fresh symbol `t'`, so that every binder stays unique.
//!
//! Conditions:
//! - the statement right after the allocation is a loop or an `if`; its bounds or condition do not
//!   mention `t` (they are evaluated before the new allocation), and no later statement of the
//!   block uses `t`, except a `free t`. So `t` is dead after that statement.
//! - For an `if`, nothing more: whichever branch runs starts, as before, from a buffer whose cells
//!   are all uninitialised, and the shape has the same value (only the condition, which has no
//!   effect, is evaluated in between).
//! - For a loop, the shape reads no config field that the loop body writes (it is now evaluated at
//!   every iteration), no window of `t` has coordinates that use `stride(...)` (the analysis could
//!   not follow its accesses exactly), and no read sees a value written by an earlier iteration:
//!   the original lets a read see one, the result does not (every iteration starts from a fresh
//!   buffer). As in `lift_alloc`, proved with the solver (counterexample otherwise) for every read
//!   (or reduction, which reads) `R` of `t` in the top-level body statement `s_j`, at iteration
//!   `i`:
//!   - *covered*: an exact write of `t` in an earlier top-level statement `s_m` (`m < j`) of the
//!     body, without `stride(...)` expressions, definitely writes the cell `R` reads in the same
//!     iteration (the witness construction of [`super::lift_alloc`]); or
//!   - *untouched*: no write or reduction of `t` at an iteration `i' < i` may touch the cell `R`
//!     reads (`facts ∧ lo <= i' < i ∧ guards ∧ idx = idx'` is unsatisfiable).
//!
//!   Then every iteration starts with the cells it reads in the same state in both programs
//!   (overwritten before being read, or never written by an earlier iteration and so
//!   uninitialised in both), so by induction on the iterations every read sees the same value.

use super::lift_alloc::{
    check_shape_configs, no_read_of_earlier_iteration, refuse_stride_windows, stmt_accesses,
};
use super::set_memory::alloc_at;
use super::{describe, Loop, Rewrite};
use crate::effects::{block_mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use weft_ir::{Proc, Stmt, StmtKind, Sym};

const PRIM: &str = "sink_alloc";

/// Move the allocation at `at` into the loop or `if` right after it.
pub fn sink_alloc(a: &mut Analysis, p: &Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    let k = at.last().index;
    let next_path = at.sibling(k + 1);
    let Some(next) = site.rest.first() else {
        return Err(SchedError::new(
            PRIM,
            format!("the allocation of '{t}' is the last statement of its block"),
        )
        .at(site.stmt.span, what));
    };
    if !matches!(next.kind, StmtKind::For { .. } | StmtKind::If { .. }) {
        return Err(SchedError::new(
            PRIM,
            format!("the allocation of '{t}' is not followed by a loop or an 'if'"),
        )
        .at(next.span, describe(next))
        .at(site.stmt.span, what));
    }
    // `t` is dead after the next statement, but for a `free`.
    let mut free = None;
    for (j, s) in site.rest.iter().enumerate().skip(1) {
        if matches!(&s.kind, StmtKind::Free { buf } if *buf == t) {
            free = Some(k + 1 + j);
        } else if block_mentions(std::slice::from_ref(s), &t) {
            return Err(SchedError::new(
                PRIM,
                format!("'{t}' is used after the statement it would move into"),
            )
            .at(s.span, describe(s))
            .at(site.stmt.span, what));
        }
    }
    let own_exprs_mention = weft_ir::visit::stmt_exprs(next)
        .into_iter()
        .any(|e| crate::effects::mentions(e, &t));
    let alloc = site.stmt.clone();
    let free_stmt = free.map(|f| site.rest[f - k - 1].clone());
    let (new_next, target_blocks) = match &next.kind {
        StmtKind::For { body, .. } => {
            if own_exprs_mention {
                return Err(
                    SchedError::new(PRIM, format!("the bounds of the loop use '{t}'"))
                        .at(next.span, describe(next)),
                );
            }
            let l = super::loop_at(PRIM, p, &next_path)?;
            check_shape_configs(a, PRIM, p, &next_path, &l, &site)?;
            check_iterations(a, p, &next_path, &l, &t)?;
            let mut new_body = vec![alloc];
            new_body.extend(body.iter().cloned());
            new_body.extend(free_stmt);
            (path::with_child_block(next, 0, new_body), vec![0])
        }
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => {
            if own_exprs_mention {
                return Err(
                    SchedError::new(PRIM, format!("the condition of the 'if' uses '{t}'"))
                        .at(next.span, describe(next)),
                );
            }
            let in_then = block_mentions(then_body, &t);
            let in_else = block_mentions(else_body, &t);
            let mut s = next.clone();
            let mut targets = Vec::new();
            if in_then || !in_else {
                let mut b = vec![alloc.clone()];
                b.extend(then_body.iter().cloned());
                b.extend(free_stmt.clone());
                s = path::with_child_block(&s, 0, b);
                targets.push(0);
            }
            if in_else {
                let mut rest: Vec<Stmt> = else_body.to_vec();
                rest.extend(free_stmt);
                let b = if targets.is_empty() {
                    let mut b = vec![alloc];
                    b.extend(rest);
                    b
                } else {
                    // A second binder: a fresh symbol.
                    let t2 = t.fresh_copy();
                    let mut b = vec![Stmt::new(
                        StmtKind::Alloc {
                            buf: t2.clone(),
                            ty: site.ty.clone(),
                        },
                        site.stmt.span,
                    )];
                    b.extend(Subst::new().buf(&t, &t2).block(&rest));
                    b
                };
                s = path::with_child_block(&s, 1, b);
                targets.push(1);
            }
            (s, targets)
        }
        _ => unreachable!("checked above"),
    };

    // Replace the allocation, the statement, and everything up to the `free`.
    let last = free.unwrap_or(k + 1);
    let len = last - k + 1;
    let block = path::block_of(p, at).expect("the allocation exists");
    let mut new = vec![new_next];
    if let Some(f) = free {
        new.extend(block[k + 2..f].iter().cloned());
    }
    let count = new.len();
    let first_target = target_blocks[0];
    let body_len = match &next.kind {
        StmtKind::For { body, .. } => body.len(),
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => {
            if first_target == 0 {
                then_body.len()
            } else {
                else_body.len()
            }
        }
        _ => 0,
    };
    let has_free = free.is_some();
    let forward = Forward::replaced_range(at, len, count, move |rel| {
        let top = Step { block: 0, index: 0 };
        let off = rel[0].index;
        if off == 0 {
            return Some(vec![
                top,
                Step {
                    block: first_target,
                    index: 0,
                },
            ]);
        }
        if off == 1 {
            let mut out = vec![top];
            if let Some(step) = rel.get(1) {
                let shift = usize::from(target_blocks.contains(&step.block));
                out.push(Step {
                    block: step.block,
                    index: step.index + shift,
                });
                out.extend_from_slice(&rel[2..]);
            }
            return Some(out);
        }
        if has_free && off == len - 1 {
            return Some(vec![
                top,
                Step {
                    block: first_target,
                    index: body_len + 1,
                },
            ]);
        }
        let mut out = vec![Step {
            block: 0,
            index: off - 1,
        }];
        out.extend_from_slice(&rel[1..]);
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_range(p, at, len, new),
        forward,
    })
}

/// No read of `t` in the loop body sees a value an earlier iteration wrote (see the module
/// comment).
fn check_iterations(
    a: &mut Analysis,
    p: &Proc,
    loop_path: &Path,
    l: &Loop,
    t: &Sym,
) -> Result<(), SchedError> {
    refuse_stride_windows(PRIM, l.body, t)?;
    let first = loop_path.child(0, 0);
    let stmts = stmt_accesses(a, p, &first, l.body, 0..l.body.len(), t);
    let facts = a.scope_at(p, &first).facts;
    let outer = a.scope_at(p, loop_path);
    no_read_of_earlier_iteration(a, PRIM, &outer, l, &facts, &stmts, t)
}
