//! `lift_scope`: exchange an `if` or a loop with the `if` or loop directly around it (Exo's
//! `lift_scope`). The statement named is the inner one; it must be the whole body (or the whole
//! `then` branch) of the outer one. Four cases:
//!
//! ```text
//! for i { for j { s } }            ⇝  for j { for i { s } }                  (reorder_loops)
//! for i { if c { s } else { t } }  ⇝  if c { for i { s } } else { for i { t } }   (lift_if)
//! if a { if b { s } else { t } } else { u }
//!                                  ⇝  if b { if a { s } else { u } } else { if a { t } else { u' } }
//! if a { for i in lo..hi { s } }   ⇝  for i in lo..hi { if a { s } }
//! ```
//!
//! Conditions:
//! - loop in loop: those of [`super::reorder_loops`] (the inner bounds do not use the outer
//!   variable; every two iterations whose order changes commute), proved by it;
//! - `if` in loop: those of [`super::lift_if`] (the condition does not use the loop variable and
//!   reads no config field the body writes), proved by it;
//! - `if` in `if`: `b` reads no config field (now tested when `a` is false too, it could read
//!   one never written: an error). Otherwise conditions are control expressions: they read no
//!   data, cannot fail (`x / 0 = 0`) and have no effect, and no statement runs between the two
//!   tests, so testing `b` then `a` picks the same code as `a` then `b`. When both the inner `else` (`t`) and the
//!   outer `else` (`u`) are non-empty, `u` is duplicated; the copy `u'` gets fresh binders;
//! - loop in `if`: the `if` has no `else`; `a` reads no config field the loop body writes (it is
//!   now evaluated in every iteration); the bounds read no config field, and `lo <= hi` is
//!   proved where the `if` is, without `a` (the bounds are now evaluated when `a` is false, where
//!   a config field may never have been written, and a loop that runs backwards is an error). The loop variable cannot occur in `a` (it is not in scope there).

use super::{describe, for_stmt, loop_at, require, stmt_at, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{Stmt, StmtKind};

const PRIM: &str = "lift_scope";

/// Exchange the `if` or loop at `at` with the `if` or loop directly around it.
pub fn lift_scope(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let inner = stmt_at(PRIM, p, at)?;
    let what = describe(inner);
    if !matches!(inner.kind, StmtKind::For { .. } | StmtKind::If { .. }) {
        return Err(SchedError::new(PRIM, "expected a loop or an 'if'").at(inner.span, what));
    }
    let Some(outer_path) = at.parent() else {
        return Err(
            SchedError::new(PRIM, "the statement is not inside a loop or an 'if'")
                .at(inner.span, what),
        );
    };
    let outer = stmt_at(PRIM, p, &outer_path)?;
    let block = path::block_of(p, at).expect("the statement exists");
    if block.len() != 1 || at.last().block != 0 {
        let place = match outer.kind {
            StmtKind::If { .. } => "the whole 'then' branch of the 'if'",
            _ => "the whole body of the loop",
        };
        return Err(
            SchedError::new(PRIM, format!("the statement must be {place} around it"))
                .at(inner.span, what)
                .at(outer.span, describe(outer)),
        );
    }
    let wrap = |e: SchedError| {
        let mut out = SchedError::new(
            PRIM,
            format!("{} (the condition of {})", e.message, e.primitive),
        );
        out.stmts = e.stmts;
        out.counterexample = e.counterexample;
        out
    };
    match (&outer.kind, &inner.kind) {
        (StmtKind::For { .. }, StmtKind::For { .. }) => {
            super::reorder_loops::reorder_loops(a, p, &outer_path).map_err(wrap)
        }
        (StmtKind::For { .. }, StmtKind::If { .. }) => {
            super::lift_if::lift_if(a, p, &outer_path).map_err(wrap)
        }
        (
            StmtKind::If {
                cond: ca,
                else_body: u,
                ..
            },
            StmtKind::If {
                cond: cb,
                then_body: s,
                else_body: t,
            },
        ) => {
            if !super::config_reads(&[cb]).is_empty() {
                return Err(SchedError::new(
                    PRIM,
                    format!("the inner condition {cb} reads a config field: tested first, it would be read where the outer condition is false, where the field may never have been written"),
                )
                .at(inner.span, what));
            }
            let if_ = |c: &weft_ir::Expr, th: Vec<Stmt>, el: Vec<Stmt>| {
                Stmt::new(
                    StmtKind::If {
                        cond: c.clone(),
                        then_body: th,
                        else_body: el,
                    },
                    outer.span,
                )
            };
            let first = if_(ca, s.clone(), u.clone());
            let second = match (t.is_empty(), u.is_empty()) {
                (true, true) => vec![],
                (false, _) => vec![if_(ca, t.clone(), Subst::freshening().block(u))],
                (true, false) => vec![if_(ca, vec![], Subst::freshening().block(u))],
            };
            let new = Stmt::new(
                StmtKind::If {
                    cond: cb.clone(),
                    then_body: vec![first],
                    else_body: second,
                },
                inner.span,
            );
            // Old outer `if` ↦ the first copy; inner `if` ↦ the new outer one; `s` stays where
            // it is, `t` goes into the second copy, `u` into the first copy's `else`.
            let forward = Forward::replaced(&outer_path, 1, |rel| {
                Some(match rel.len() {
                    1 => vec![rel[0], Step { block: 0, index: 0 }],
                    2 if rel[1].block == 0 => vec![rel[0]],
                    2 => vec![rel[0], Step { block: 0, index: 0 }, rel[1]],
                    _ if rel[1].block == 1 => {
                        let mut out = vec![rel[0], Step { block: 0, index: 0 }, rel[1]];
                        out.extend_from_slice(&rel[2..]);
                        out
                    }
                    _ => {
                        let mut out = vec![
                            rel[0],
                            Step {
                                block: rel[2].block,
                                index: 0,
                            },
                            Step {
                                block: 0,
                                index: rel[2].index,
                            },
                        ];
                        out.extend_from_slice(&rel[3..]);
                        out
                    }
                })
            });
            Ok(Rewrite {
                proc: path::replace_stmt(p, &outer_path, vec![new]),
                forward,
            })
        }
        (
            StmtKind::If {
                cond, else_body, ..
            },
            StmtKind::For { .. },
        ) => {
            if !else_body.is_empty() {
                return Err(SchedError::new(
                    PRIM,
                    "the 'if' around the loop has an 'else' branch, which the loop would have to run too",
                )
                .at(outer.span, describe(outer)));
            }
            let l = loop_at(PRIM, p, at)?;
            super::require_unwritten_by_body(a, PRIM, p, at, &l, &[cond], "the condition")?;
            if !super::config_reads(&[l.lo, l.hi]).is_empty() {
                return Err(SchedError::new(
                    PRIM,
                    format!("the loop's bounds {}..{} read a config field: evaluated where {cond} is false too, the field may never have been written there", l.lo, l.hi),
                )
                .at(l.stmt.span, describe(l.stmt)));
            }
            let scope = a.scope_at(p, &outer_path);
            let (lo, hi) = (
                term_at(a, PRIM, &scope, l.lo)?,
                term_at(a, PRIM, &scope, l.hi)?,
            );
            require(
                a,
                PRIM,
                &scope.facts,
                &Term::le(lo, hi),
                || {
                    format!(
                        "the loop's bounds {}..{} may run backwards where {cond} is false, where the loop would now run",
                        l.lo, l.hi
                    )
                },
                l.stmt.span,
                describe(l.stmt),
            )?;
            let guarded = Stmt::new(
                StmtKind::If {
                    cond: cond.clone(),
                    then_body: l.body.to_vec(),
                    else_body: vec![],
                },
                outer.span,
            );
            let new = super::keep_parallel(
                for_stmt(
                    l.var.clone(),
                    l.lo.clone(),
                    l.hi.clone(),
                    vec![guarded],
                    l.stmt.span,
                ),
                l.parallel,
            );
            // Old `if` ↦ the new inner `if`; the loop ↦ the new outer loop; the body stays at
            // its depth.
            let forward = Forward::replaced(&outer_path, 1, |rel| {
                let mut out = rel.to_vec();
                match rel.len() {
                    1 => out.push(Step { block: 0, index: 0 }),
                    2 => out.truncate(1),
                    _ => {}
                }
                Some(out)
            });
            Ok(Rewrite {
                proc: path::replace_stmt(p, &outer_path, vec![new]),
                forward,
            })
        }
        _ => unreachable!("both statements are loops or 'if's"),
    }
}
