//! `insert_pass`: insert a statement that does nothing (Exo's `insert_pass`), as a place to
//! aim later steps at: `insert_call` before it, `fission` after it, an `extract_proc` target.
//!
//! ```text
//! s1; s2  ⇝  s1; pass; s2        (insert_pass(s2))
//! ```
//!
//! Condition: none. `pass` writes nothing, reads nothing and declares nothing, so the rewrite is
//! an equivalence wherever a statement may stand. Cursors on the statement and after it in its
//! block move down by one ([`crate::Schedule::insert_pass`] returns the statement's: the `pass`
//! is the statement right before it).

use super::{stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Path};
use weft_ir::Stmt;

const PRIM: &str = "insert_pass";

/// Insert `pass` before the statement at `at`.
pub fn insert_pass(_a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![Stmt::pass().with_span(s.span), s.clone()]),
        forward: super::inserted_before_forward(at),
    })
}
