//! `reorder_stmts`: exchange a statement with the next one in its block.
//!
//! ```text
//! s1; s2  ⇝  s2; s1
//! ```
//!
//! Syntactic condition: neither statement declares (allocates, binds as a window, frees) a name
//! the other uses; a statement that frees a buffer counts as using every window of it too.
//!
//! Safety (Exo §4.6): `Commutes(Eff s1, Eff s2)` in the statements' context: neither writes a
//! location the other reads, writes or reduces into, and neither reduces into a location the
//! other reads. Two reductions into one cell commute.

use super::{conflict_error, describe, stmt_at, Rewrite};
use crate::effects::{block_mentions, block_mentions_any, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_ir::{Stmt, StmtKind, Sym};

const PRIM: &str = "reorder_stmts";

/// The name a statement brings into (or takes out of) scope.
pub(crate) fn declared(s: &Stmt) -> Option<&Sym> {
    match &s.kind {
        StmtKind::Alloc { buf, .. } | StmtKind::Free { buf } => Some(buf),
        StmtKind::Window { name, .. } => Some(name),
        _ => None,
    }
}

/// Exchange the statement at `at` with the one after it.
pub fn reorder_stmts(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
) -> Result<Rewrite, SchedError> {
    let s1 = stmt_at(PRIM, p, at)?;
    let next = at.sibling(at.last().index + 1);
    let s2 = path::get(p, &next).ok_or_else(|| {
        SchedError::new(PRIM, "the statement is the last of its block").at(s1.span, describe(s1))
    })?;
    let scope = a.scope_at(p, at);
    for (x, y) in [(s1, s2), (s2, s1)] {
        if let Some(d) = declared(x) {
            // A `free` ends the use of every window of the buffer too.
            let used = if matches!(x.kind, StmtKind::Free { .. }) {
                block_mentions_any(std::slice::from_ref(y), &|s| scope.views_buffer(s.id(), d))
            } else {
                block_mentions(std::slice::from_ref(y), d)
            };
            if used || declared(y) == Some(d) {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "'{}' is declared or freed by one statement and used by the other",
                        d.name()
                    ),
                )
                .at(x.span, describe(x))
                .at(y.span, describe(y)));
            }
        }
    }
    let e1 = a.effects(&scope, std::slice::from_ref(s1));
    let e2 = a.effects(&scope, std::slice::from_ref(s2)).rename_bound();
    if let Some(c) = a.conflict(&scope.facts, &[], &e1, &e2, false) {
        return Err(conflict_error(PRIM, "the statements do not commute", c));
    }
    let forward = Forward::replaced_range(at, 2, 2, |rel| {
        let mut out = rel.to_vec();
        out[0].index = 1 - rel[0].index;
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_range(p, at, 2, vec![s2.clone(), s1.clone()]),
        forward,
    })
}
