//! `inline_window`: replace a window name by the window it stands for (Exo's `inline_window`).
//!
//! ```text
//! let w = b[c...];  s...   ⇝   s...[w[i...] ↦ b[φ(i...)], w[c'...] ↦ b[φ(c'...)], stride(w, d) ↦ stride(b, d')]
//! ```
//!
//! Every use of `w` in the rest of its block (its scope) is translated through the window as a
//! call's buffer argument is by [`super::inline_call`]: a point coordinate `p` fixes that
//! dimension of `b`, an interval `lo:hi` maps the next index `k` of `w` to `lo + k`; windows of
//! `w` (in window statements and call arguments) compose, and `stride(w, d)` is the stride of
//! the `d`-th interval dimension of `b`. The window statement goes.
//!
//! Condition: the window's coordinates read no config field that the rest of the block writes.
//! The window statement evaluates them once, where it stands; inlined, they are evaluated at each
//! use. Control values are otherwise immutable (sizes, loop variables, bound once), so every use
//! sees the values the window statement saw, and a view maps its indices to its buffer exactly as
//! the translation does: the rewrite is an equivalence. (The checker proved the window inside
//! `b` where it stands, and every access of `w` inside `w`; the translated accesses are the same
//! cells.)

use super::inline_call::Translate;
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::rewrite::Rewriter;
use std::collections::HashMap;
use weft_ir::{ExprKind, Stmt, StmtKind};

const PRIM: &str = "inline_window";

/// Inline the window statement at `at` into the rest of its block.
pub fn inline_window(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let StmtKind::Window { name, rhs } = &s.kind else {
        return Err(
            SchedError::new(PRIM, "expected a window statement (`let w = b[...]`)")
                .at(s.span, what),
        );
    };
    let ExprKind::Window { buf, coords } = &rhs.kind else {
        return Err(
            SchedError::new(PRIM, format!("'{rhs}' is not a window of a buffer")).at(s.span, what),
        );
    };
    let block = path::block_of(p, at).expect("the statement exists");
    let k = at.last().index;
    let rest: Vec<Stmt> = block[k + 1..].to_vec();
    if !super::config_reads(&[rhs]).is_empty() {
        let scope = a.scope_at(p, at);
        let eff = a.effects(&scope, &rest);
        super::require_unwritten_configs(
            PRIM,
            &[rhs],
            &eff,
            "the window's coordinates",
            "the statements after it",
            s,
        )?;
    }
    let views = HashMap::from([(name.id(), (buf.clone(), coords.clone()))]);
    let mut tr = Translate { views: &views };
    let new: Vec<Stmt> = rest.iter().map(|x| tr.stmt(x)).collect();
    let count = new.len();
    let proc = path::edit_block(p, at, |b| {
        let mut out = b[..k].to_vec();
        out.extend(new);
        out
    });
    // The window statement goes; the statements after it move up by one.
    let forward = Forward::replaced_range(at, count + 1, count, |rel| {
        let mut out = rel.to_vec();
        out[0].index = rel[0].index.checked_sub(1)?;
        Some(out)
    });
    Ok(Rewrite { proc, forward })
}
