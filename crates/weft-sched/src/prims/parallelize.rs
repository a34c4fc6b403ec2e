//! `parallelize`: mark a loop parallel.
//!
//! ```text
//! for x in lo..hi { s }  ⇝  for x in par(lo..hi) { s }
//! ```
//!
//! A parallel loop's iterations may run at the same time and in any order (the C backend makes it
//! an OpenMP worksharing loop), so the rewrite preserves the meaning exactly when no two different
//! iterations race. With `a` the body's effects and `a'` a second copy with every bound variable
//! renamed apart, the condition is
//!
//! `∀ x, x'. Bd(x) ∧ Bd(x') ∧ x ≠ x' ⇒ ¬Conflict(a[x], a'[x'])`
//!
//! where two accesses conflict when they may touch one location and are not both reads. Unlike
//! `reorder_loops` (the paper's `Commutes`), two *reductions* into one cell conflict too: each is
//! a read-modify-write, and two threads doing one at the same time lose an update. A config field
//! is one shared location, so a body that writes a field any other iteration reads or writes is
//! rejected as well. Buffers allocated inside the body are private to an iteration (they are not
//! effects of the body), which is how per-iteration scratch space stays legal. The counterexample
//! names the sizes and the two iterations (`x` and `x'`) that race.
//!
//! Because a later step may change a parallel loop's body or its context, or bring in a callee
//! with parallel loops (`replace`, `call_eqv`), [`check_parallel_loops`] proves the same
//! condition for every parallel loop of a proc and of the procs it calls; the [`crate::Schedule`]
//! runs it after every step, and the `weft` facade runs it on every proc of a file, so that
//! `par(...)` loops written in source are proved too.

use super::{conflict_error, describe, loop_at, Rewrite};
use crate::effects::{index_term, primed, Analysis};
use crate::error::SchedError;
use crate::find::stmts_where;
use crate::path::{self, Forward, Path};
use std::collections::HashMap;
use std::sync::Arc;
use weft_check::smt::Term;
use weft_check::terms::sym_var;
use weft_ir::{Proc, Stmt, StmtKind};

const PRIM: &str = "parallelize";

/// Mark the loop at `at` parallel, after proving its iterations race-free.
pub fn parallelize(a: &mut Analysis, p: &Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    prove_race_free(a, p, at, PRIM)?;
    let marked = Stmt::new(
        StmtKind::For {
            var: l.var.clone(),
            lo: l.lo.clone(),
            hi: l.hi.clone(),
            body: l.body.to_vec(),
            parallel: true,
        },
        l.stmt.span,
    );
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![marked]),
        forward: Forward::identity(),
    })
}

/// Prove that two different iterations of the loop at `at` never race (see the module doc).
/// `prim` names the step in the error.
pub fn prove_race_free(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    prim: &'static str,
) -> Result<(), SchedError> {
    prove_iterations_independent(a, p, at, prim, &[], "may race")
}

/// The condition of [`prove_race_free`] where the facts `assume` (terms over the names in scope
/// at the loop) hold as well: no two different iterations of the loop at `at` touch one location
/// unless both only read it (two reductions conflict; a config field is one location). `what`
/// says what the iterations would do otherwise, for the message ("may race").
pub(crate) fn prove_iterations_independent(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    prim: &'static str,
    assume: &[Term],
    what: &str,
) -> Result<(), SchedError> {
    let l = loop_at(prim, p, at)?;
    let body_scope = a.scope_at(p, &at.child(0, 0));
    let xv = sym_var(l.var);
    let x2v = primed(&xv);
    let map: HashMap<u64, Term> = [(l.var.id(), Term::IntVar(x2v.clone()))]
        .into_iter()
        .collect();
    let (x, x2) = (index_term(l.var), Term::IntVar(x2v));
    let mut extra = vec![Term::not(Term::eq(x, x2.clone()))];
    extra.extend_from_slice(assume);
    let outer = a.scope_at(p, at);
    if let (Some(lo), Some(hi)) = (a.term(&outer, l.lo), a.term(&outer, l.hi)) {
        extra.push(Term::le(lo, x2.clone()));
        extra.push(Term::lt(x2, hi));
    }
    // Calls as written, not through their simplest equivalent version: a scheduled callee may
    // touch more cells than its original (writing a staged value back unchanged, say), which is
    // harmless in sequence but a race between threads. First each call as the windows it
    // passes, which covers whatever it does inside them; where those meet, its accesses.
    // A body without calls has no footprints: one pass.
    let mut calls = false;
    weft_ir::visit::walk_block(l.body, &mut |s| {
        calls |= matches!(s.kind, StmtKind::Call { .. })
    });
    if calls {
        let coarse = a.footprints_as_written(&body_scope, l.body);
        let second = coarse.rename_bound().subst(&map);
        if a.conflict_as(&body_scope.facts, &extra, &coarse, &second, true, true)
            .is_none()
        {
            return Ok(());
        }
    }
    let eff = a.effects_as_written(&body_scope, l.body);
    let second = eff.rename_bound().subst(&map);
    if let Some(c) = a.conflict(&body_scope.facts, &extra, &eff, &second, true) {
        return Err(conflict_error(
            prim,
            format!(
                "iterations of '{}' {what}: two different iterations touch one location \
                 and one of them writes it",
                l.var.name()
            ),
            c,
        )
        .at(l.stmt.span, describe(l.stmt)));
    }
    Ok(())
}

/// Prove every parallel loop of `p` and of the procs it calls race-free (a step such as
/// `replace` or `call_eqv` may bring in a callee with parallel loops); the first one that is not
/// gives the error.
pub fn check_parallel_loops(
    a: &mut Analysis,
    p: &Arc<Proc>,
    prim: &'static str,
) -> Result<(), SchedError> {
    for q in weft_ir::visit::Deps::of(p).procs {
        prove_parallel_loops(a, &q, |_| true, prim)?;
    }
    Ok(())
}

/// [`check_parallel_loops`] after a step that changed only the statement `changed` of `p` (by
/// address; see [`crate::changed::changed_stmt`]): a parallel loop's race-freedom depends on its
/// body and on the bounds and conditions around it, so only the loops around `changed`, itself
/// and inside it can have lost it, with those of the procs called in it (a `replace` may bring
/// in a callee with parallel loops). A `changed` that is not in `p` checks everything.
pub fn check_parallel_loops_near(
    a: &mut Analysis,
    p: &Arc<Proc>,
    changed: &Stmt,
    prim: &'static str,
) -> Result<(), SchedError> {
    let Some(at) = stmts_where(p, |s| std::ptr::eq(s, changed))
        .into_iter()
        .next()
        .map(|(at, _)| at)
    else {
        return check_parallel_loops(a, p, prim);
    };
    prove_parallel_loops(a, p, |l| l.starts_with(&at) || at.starts_with(l), prim)?;
    let mut callees = Vec::new();
    let mut called = |s: &Stmt| {
        if let StmtKind::Call { proc, .. } = &s.kind {
            callees.push(proc.clone());
        }
    };
    called(changed);
    for b in weft_ir::visit::stmt_blocks(changed) {
        weft_ir::visit::walk_block(b, &mut called);
    }
    for q in weft_ir::visit::Deps::of_all(&callees).procs {
        prove_parallel_loops(a, &q, |_| true, prim)?;
    }
    Ok(())
}

/// Prove the parallel loops of `q` whose path `which` accepts race-free.
fn prove_parallel_loops(
    a: &mut Analysis,
    q: &Proc,
    which: impl Fn(&Path) -> bool,
    prim: &'static str,
) -> Result<(), SchedError> {
    let loops: Vec<Path> = stmts_where(q, |s| {
        matches!(s.kind, StmtKind::For { parallel: true, .. })
    })
    .into_iter()
    .map(|(at, _)| at)
    .filter(|at| which(at))
    .collect();
    for at in loops {
        prove_race_free(a, q, &at, prim)?;
    }
    Ok(())
}
