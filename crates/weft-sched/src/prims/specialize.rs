//! `specialize`: duplicate a statement under a condition, so that each copy can be scheduled for
//! its own case.
//!
//! ```text
//! s  ⇝  if c { s } else { s' }
//! ```
//!
//! where `s'` is a copy of `s` whose binders (loop variables, allocations, windows) are fresh
//! symbols, so that every symbol keeps a single binding.
//!
//! Conditions: `s` is not an allocation, window binding or `free` (its name would go out of
//! scope at the end of the branch); `c` is a control boolean whose term exists in the scope just before `s` (a
//! quasi-affine condition over names in scope there). Nothing else: both branches run the same
//! code, and evaluating a control condition has no effect, so the rewrite is always an
//! equivalence.

use super::add_guard::control_bool;
use super::{stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Path};
use crate::subst::Subst;
use weft_ir::{Expr, Stmt, StmtKind};

const PRIM: &str = "specialize";

/// Duplicate the statement at `at` into `if cond { s } else { s' }`.
pub fn specialize(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    cond: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    super::add_guard::not_a_declaration(PRIM, s)?;
    let scope = a.scope_at(p, at);
    control_bool(a, PRIM, &scope, cond)?;
    let copy = Subst::freshening().stmt(s);
    let new = Stmt::new(
        StmtKind::If {
            cond: cond.clone(),
            then_body: vec![s.clone()],
            else_body: vec![copy],
        },
        s.span,
    );
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![new]),
        forward: super::nest_forward(at, 1, 2),
    })
}
