//! `add_guard`: make a condition that always holds at a statement explicit.
//!
//! ```text
//! s  ⇝  if c { s }
//! ```
//!
//! Conditions: `s` is not an allocation, window binding or `free` (its name would go out of
//! scope at the end of the `if`); `c` is a control boolean (a quasi-affine condition over the names in scope at `s`)
//! and `facts ⇒ c` is proved, where the facts are those that hold just before `s`: the
//! preconditions, positive sizes, the bounds of the enclosing loops and the conditions of the
//! enclosing `if`s ([`Analysis::scope_at`]). A counterexample is reported otherwise. Since `c` is
//! then true whenever `s` runs, and evaluating a control condition has no effect, the rewrite is
//! an equivalence. (A condition that reads a config field is an unknown value to the analysis,
//! so it is accepted only when it holds for every value of that field.)

use super::{describe, require, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Path};
use weft_ir::{Expr, Stmt, StmtKind, Ty};

const PRIM: &str = "add_guard";

/// Wrap the statement at `at` in `if cond { ... }`, once `cond` is proved to hold there.
pub fn add_guard(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    cond: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    not_a_declaration(PRIM, s)?;
    let what = describe(s);
    let scope = a.scope_at(p, at);
    let c = control_bool(a, PRIM, &scope, cond)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &c,
        || format!("the guard {cond} is not proved to hold at the statement"),
        s.span,
        what,
    )?;
    let guarded = Stmt::new(
        StmtKind::If {
            cond: cond.clone(),
            then_body: vec![s.clone()],
            else_body: vec![],
        },
        s.span,
    );
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![guarded]),
        forward: super::nest_forward(at, 1, 2),
    })
}

/// An allocation, window binding or `free` cannot be wrapped in an `if`: the name it declares
/// would go out of scope at the end of the branch (and a `free` must stay in its allocation's
/// block).
pub(crate) fn not_a_declaration(prim: &'static str, s: &Stmt) -> Result<(), SchedError> {
    match super::reorder_stmts::declared(s) {
        Some(d) => Err(SchedError::new(
            prim,
            format!(
                "the statement declares or frees '{}', which cannot be moved into an 'if'",
                d.name()
            ),
        )
        .at(s.span, describe(s))),
        None => Ok(()),
    }
}

/// The term of a control boolean expression in a scope, or an error naming the primitive.
pub(crate) fn control_bool(
    a: &mut Analysis,
    prim: &'static str,
    scope: &crate::effects::Scope,
    cond: &Expr,
) -> Result<weft_check::smt::Term, SchedError> {
    if cond.ty != Ty::Bool {
        return Err(SchedError::new(
            prim,
            format!(
                "'{cond}' is not a control condition (it has type {})",
                cond.ty
            ),
        )
        .at(cond.span, cond.to_string()));
    }
    a.term(scope, cond).ok_or_else(|| {
        SchedError::new(
            prim,
            format!("'{cond}' is not a quasi-affine control condition over names in scope"),
        )
        .at(cond.span, cond.to_string())
    })
}
