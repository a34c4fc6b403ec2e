//! `delete_pass`: remove a statement that does nothing.
//!
//! ```text
//! s1; pass; s2  ⇝  s1; s2
//! ```
//!
//! Condition (the shape only): the statement is a `pass`, or an `if` or `for` whose bodies hold
//! only statements that themselves satisfy this condition (so, recursively, only `pass`es).
//! Such a statement writes nothing, reads no data and declares nothing; its loop bounds and
//! conditions are control expressions, whose evaluation has no effect. The rewrite is an
//! equivalence. Cursors on the removed statement (and inside it) are gone; later statements of
//! the block move up by one.

use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_ir::{Stmt, StmtKind};

const PRIM: &str = "delete_pass";

/// Whether a statement is `pass`, or an `if`/`for` that contains only such statements.
pub(crate) fn is_noop(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Pass => true,
        StmtKind::If { .. } | StmtKind::For { .. } => weft_ir::visit::stmt_blocks(s)
            .into_iter()
            .all(|b| b.iter().all(is_noop)),
        _ => false,
    }
}

/// Remove the statement at `at`, which must do nothing.
pub fn delete_pass(_a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    if !is_noop(s) {
        return Err(SchedError::new(
            PRIM,
            "the statement is not 'pass' nor an 'if' or 'for' containing only 'pass'",
        )
        .at(s.span, describe(s)));
    }
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![]),
        forward: Forward::replaced(at, 0, |_| None),
    })
}
