//! `fission`: split a loop's body after a statement into two loops.
//!
//! ```text
//! for x in lo..hi { s1; s2 }  ⇝  for x in lo..hi { s1 }; for x' in lo..hi { s2[x ↦ x'] }
//! if c { s1; s2 } else { e }  ⇝  if c { s1 } else { e }; if c { s2 }
//! ```
//!
//! The statement's parent is a loop or an `if` (the statement in its then-branch). With a lift
//! count `n` (Exo's `n_lifts`), the split goes on `n - 1` more levels up: the first part that one
//! level made is the statement the next level splits after, so `fission(s, 3)` on a statement
//! under `for i { if g { for j { s; t } } }` gives `for i { if g { for j { s } } }` followed by
//! `for i { if g { for j { t } } }`, each level proved on its own.
//!
//! An `if` split evaluates the condition a second time, after `s1` (or the else-branch) ran: it
//! must read no config field they write (a control condition reads nothing else that code can
//! change), so both evaluations agree and `s2` runs exactly when it ran before.
//!
//! Syntactic condition: `s2` uses nothing that `s1` declares (allocations and windows of `s1`
//! would go out of scope; lift them first), and both parts are non-empty.
//!
//! Safety (Exo §4.7): every `s2` iteration that ran before an `s1` iteration now runs after it:
//! `∀ x, x'. Bd(x) ∧ Bd(x') ∧ x' < x ⇒ Commutes(Eff s1[x], Eff s2[x'])`. The loop bounds, now
//! evaluated a second time after `s1`'s loop, must not read a config field that `s1` writes.

use super::{conflict_error, describe, for_stmt, ivar, keep_parallel, loop_at, stmt_at, Rewrite};
use crate::effects::{block_mentions, index_term, primed, Analysis, Root};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::subst::Subst;
use std::collections::HashMap;
use weft_check::smt::Term;
use weft_check::terms::sym_var;
use weft_ir::{ExprKind, Sym};

const PRIM: &str = "fission";

/// Split the loop or `if` that directly contains the statement at `at` after that statement.
pub fn fission(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    if let Some(parent) = at.parent() {
        if let Some(weft_ir::StmtKind::If { .. }) = path::get(p, &parent).map(|x| &x.kind) {
            return split_if(a, p, at, &parent);
        }
    }
    let loop_path = at
        .parent()
        .filter(|_| at.last().block == 0)
        .ok_or_else(|| {
            SchedError::new(PRIM, "the statement is not directly in a loop body")
                .at(s.span, describe(s))
        })?;
    let l = loop_at(PRIM, p, &loop_path).map_err(|_| {
        SchedError::new(PRIM, "the statement is not directly in a loop body")
            .at(s.span, describe(s))
    })?;
    let k = at.last().index;
    let (first, second) = l.body.split_at(k + 1);
    if second.is_empty() {
        return Err(
            SchedError::new(PRIM, "nothing follows the statement in the loop body")
                .at(s.span, describe(s)),
        );
    }
    for d in first.iter().filter_map(super::reorder_stmts::declared) {
        if block_mentions(second, d) {
            return Err(SchedError::new(
                PRIM,
                format!("'{}' is declared before the cut and used after it; lift it out of the loop first", d.name()),
            )
            .at(s.span, describe(s)));
        }
    }
    check_fission(a, p, &loop_path, first, second, PRIM)?;

    let x2 = Sym::new(l.var.name());
    let second_body = Subst::new().var(l.var, ivar(&x2)).block(second);
    let loop1 = keep_parallel(
        for_stmt(
            l.var.clone(),
            l.lo.clone(),
            l.hi.clone(),
            first.to_vec(),
            l.stmt.span,
        ),
        l.parallel,
    );
    let loop2 = keep_parallel(
        for_stmt(x2, l.lo.clone(), l.hi.clone(), second_body, l.stmt.span),
        l.parallel,
    );
    let cut = k + 1;
    let forward = Forward::replaced(&loop_path, 2, move |rel| {
        let mut out = rel.to_vec();
        if rel.len() > 1 && rel[1].index >= cut {
            out[0] = Step { block: 0, index: 1 };
            out[1].index -= cut;
        }
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, &loop_path, vec![loop1, loop2]),
        forward,
    })
}

/// `if c { first; second } else { e }` ⇝ `if c { first } else { e }; if c { second }`, for the
/// statement at `at` in the then-branch of the `if` at `if_path`.
fn split_if(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    if_path: &Path,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let stmt = stmt_at(PRIM, p, if_path)?;
    let weft_ir::StmtKind::If {
        cond,
        then_body,
        else_body,
    } = &stmt.kind
    else {
        unreachable!("split_if is called on an `if`")
    };
    if at.last().block != 0 {
        return Err(SchedError::new(
            PRIM,
            "the statement is in the else-branch; only a then-branch is split",
        )
        .at(s.span, describe(s)));
    }
    let k = at.last().index;
    let (first, second) = then_body.split_at(k + 1);
    if second.is_empty() {
        return Err(
            SchedError::new(PRIM, "nothing follows the statement in the branch")
                .at(s.span, describe(s)),
        );
    }
    for d in first.iter().filter_map(super::reorder_stmts::declared) {
        if block_mentions(second, d) {
            return Err(SchedError::new(
                PRIM,
                format!("'{}' is declared before the cut and used after it; lift it out of the `if` first", d.name()),
            )
            .at(s.span, describe(s)));
        }
    }
    // The condition is evaluated again after the first part or the else-branch.
    let scope = a.scope_at(p, if_path);
    let before: Vec<weft_ir::Stmt> = first.iter().chain(else_body.iter()).cloned().collect();
    let eff = a.effects(&scope, &before);
    super::require_unwritten_configs(
        PRIM,
        &[cond],
        &eff,
        "the condition",
        "the first part or the else-branch",
        stmt,
    )?;
    let if1 = weft_ir::Stmt::new(
        weft_ir::StmtKind::If {
            cond: cond.clone(),
            then_body: first.to_vec(),
            else_body: else_body.clone(),
        },
        stmt.span,
    );
    let if2 = weft_ir::Stmt::new(
        weft_ir::StmtKind::If {
            cond: cond.clone(),
            then_body: second.to_vec(),
            else_body: vec![],
        },
        stmt.span,
    );
    let cut = k + 1;
    let forward = Forward::replaced(if_path, 2, move |rel| {
        let mut out = rel.to_vec();
        if rel.len() > 1 && rel[1].block == 0 && rel[1].index >= cut {
            out[0] = Step { block: 0, index: 1 };
            out[1].index -= cut;
        }
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, if_path, vec![if1, if2]),
        forward,
    })
}

/// Config fields written by a top-level `Config.f = e` of `first` where `e` does not mention
/// `var`, reads no config field and no buffer that the loop body writes, and no other statement
/// of the loop writes the field.
/// `body` holds the effects of the two parts.
fn invariant_config_writes(
    scope: &crate::effects::Scope,
    var: &weft_ir::Sym,
    first: &[weft_ir::Stmt],
    body: [&crate::effects::Effects; 2],
) -> Vec<Root> {
    let writes = || body.into_iter().flat_map(|e| e.writes());
    let mut out = Vec::new();
    for s in first {
        let weft_ir::StmtKind::WriteConfig { config, field, rhs } = &s.kind else {
            continue;
        };
        let root = Root::Config(config.name.clone(), *field);
        let writers = writes().filter(|w| w.root == root).count();
        let mut reads_state = crate::effects::mentions(rhs, var);
        weft_ir::visit::walk_expr(rhs, &mut |e| match &e.kind {
            ExprKind::ReadConfig { .. } => reads_state = true,
            ExprKind::Read { buf, .. } => {
                reads_state |= writes().any(|w| match (&w.root, scope.root_of(buf)) {
                    (Root::Buf(x), Some(y)) => *x == y,
                    _ => true,
                })
            }
            _ => {}
        });
        if writers == 1 && !reads_state {
            out.push(root);
        }
    }
    out
}

/// The fission (and fusion) condition for `for x { first; second }` at `loop_path`.
pub(crate) fn check_fission(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    loop_path: &Path,
    first: &[weft_ir::Stmt],
    second: &[weft_ir::Stmt],
    prim: &'static str,
) -> Result<(), SchedError> {
    let l = loop_at(prim, p, loop_path)?;
    let scope = a.scope_at(p, &loop_path.child(0, 0));
    let e1 = a.effects(&scope, first);
    let e2 = a.effects(&scope, second);
    let xv = primed(&sym_var(l.var));
    let map: HashMap<u64, Term> = [(l.var.id(), Term::IntVar(xv.clone()))]
        .into_iter()
        .collect();
    let invariant = invariant_config_writes(&scope, l.var, first, [&e1, &e2]);
    let mut e2 = e2.rename_bound().subst(&map);
    // Invariant config writes (the paper's global dataflow, `ValG`): a config field that the
    // first part sets at its top level, in every iteration, to a value that does not depend on
    // the iteration or on anything the loop writes, and that nothing else in the loop writes,
    // holds that value whenever the second part reads it, before and after fission alike. Reads
    // of such fields by the second part are therefore not conflicts.
    e2.accesses.retain(|acc| !invariant.contains(&acc.root));
    let x = index_term(l.var);
    let x2 = Term::IntVar(xv);
    let outer = a.scope_at(p, loop_path);
    let mut extra = vec![Term::lt(x2.clone(), x)];
    if let (Some(lo), Some(hi)) = (a.term(&outer, l.lo), a.term(&outer, l.hi)) {
        extra.push(Term::le(lo, x2.clone()));
        extra.push(Term::lt(x2, hi));
    }
    if let Some(c) = a.conflict(&scope.facts, &extra, &e1, &e2, false) {
        return Err(conflict_error(
            prim,
            format!(
                "a later iteration of the first part and an earlier iteration of the second part of loop '{}' do not commute",
                l.var.name()
            ),
            c,
        ));
    }
    super::require_unwritten_configs(
        prim,
        &[l.lo, l.hi],
        &e1,
        "the loop bounds",
        "the first part",
        l.stmt,
    )
}
