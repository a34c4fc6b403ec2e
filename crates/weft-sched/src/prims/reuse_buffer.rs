//! `reuse_buffer`: let a new allocation use the storage of an earlier buffer that is dead by then.
//!
//! ```text
//! alloc t1: T[n...] @ M;  ...  alloc t2: T[m...] @ M;  s;  free t2
//!   ⇝  alloc t1: T[n...] @ M;  ...  s[t2 ↦ t1]
//! ```
//!
//! `t1` is the nearest allocation of that name in scope at `t2`'s allocation (in its block or an
//! enclosing one, before it). The allocation of `t2` and its `free` are deleted, and every use of
//! `t2` after it (accesses, windows, strides, call arguments) names `t1`.
//!
//! Conditions:
//! - same element type and memory (by name); the shapes read no config field, and are proved
//!   equal extent by extent in the context of `t2`'s allocation (counterexample otherwise), so
//!   both buffers have the same cells and layout;
//! - `t1` is not freed before `t2`'s allocation, nor (when both are allocated in one block)
//!   before a statement that uses `t2`;
//! - *`t1` is dead at `t2`'s allocation*: nothing that may run after it while `t1` lives uses
//!   `t1` or a window of it (a read would see `t2`'s values, a write would clobber them): not the
//!   statements after `t2`'s allocation in its block, not the statements after each enclosing
//!   statement in its block up to `t1`'s block (where only `free t1` may follow), and not, for
//!   each loop enclosing `t2`'s allocation inside `t1`'s scope, anything in its body (a later
//!   iteration runs it after `t2`'s allocation). This is checked on the names, conservatively;
//! - *no read of `t2` sees an uninitialised cell*, which is what makes the rewrite exact: with
//!   `t1` the cell would hold what `t1` left there, not the error value. Every read (or
//!   reduction) `R` of `t2` in a top-level statement `s_j` after the allocation must be *covered*
//!   by an exact write of `t2` in an earlier top-level statement `s_m` (`m < j`) without
//!   `stride(...)` expressions, proved with the solver as in `lift_alloc` (that write definitely
//!   writes the cell `R` reads). No window of `t2` has coordinates that use `stride(...)`.
//!
//! Then `t2`'s code sees exactly the values it wrote itself, and nothing else sees them.

use super::inline_assign::{alloc_in_scope, reads_config};
use super::lift_alloc::{covered, refuse_stride_windows, stmt_accesses};
use super::set_memory::{aliases, alloc_at};
use super::{describe, require, term_at, Rewrite};
use crate::effects::{block_mentions, AccessKind, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{Proc, Stmt, StmtKind};

const PRIM: &str = "reuse_buffer";

/// Replace the allocation at `at` by the earlier buffer named `t1`.
pub fn reuse_buffer(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    t1_name: &str,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t2 = site.buf.clone();
    let what = describe(site.stmt);
    let Some((a1, t1, ty1)) = alloc_in_scope(p, at, |b| b.name() == t1_name) else {
        let why = if p.arg(t1_name).is_some() {
            format!("'{t1_name}' is an argument of the proc, not an allocation")
        } else {
            format!("no allocation of '{t1_name}' is in scope at the allocation of '{t2}'")
        };
        return Err(SchedError::new(PRIM, why).at(site.stmt.span, what));
    };
    let t1 = t1.clone();
    let s1 = path::get(p, &a1).expect("the allocation exists");
    let what1 = describe(s1);

    // Same type, memory and shape.
    let ty2 = site.ty;
    if ty1.elem != ty2.elem || ty1.mem.name != ty2.mem.name || ty1.rank() != ty2.rank() {
        return Err(SchedError::new(
            PRIM,
            format!("'{t1}' and '{t2}' differ in element type, memory or rank"),
        )
        .at(s1.span, what1)
        .at(site.stmt.span, what));
    }
    if ty1.shape.iter().chain(&ty2.shape).any(reads_config) {
        return Err(SchedError::new(
            PRIM,
            format!("the shape of '{t1}' or '{t2}' reads a config field"),
        )
        .at(s1.span, what1)
        .at(site.stmt.span, what));
    }
    let scope1 = a.scope_at(p, &a1);
    let scope2 = a.scope_at(p, at);
    for (d, (n1, n2)) in ty1.shape.iter().zip(&ty2.shape).enumerate() {
        let x1 = term_at(a, PRIM, &scope1, n1)?;
        let x2 = term_at(a, PRIM, &scope2, n2)?;
        require(
            a,
            PRIM,
            &scope2.facts,
            &Term::eq(x1, x2),
            || format!("dimension {d} of '{t1}' ({n1}) and of '{t2}' ({n2}) may differ"),
            site.stmt.span,
            what.clone(),
        )?;
    }

    // Where `t1` lives: its block, and the statement of that block that holds `t2`'s allocation.
    let d1 = a1.depth();
    let top = Path(at.0[..d1].to_vec());
    let b1 = path::block_of(p, &a1).expect("the allocation exists");
    let views = aliases(&b1[a1.last().index + 1..], &t1);
    for (q, s) in crate::find::all_stmts(p) {
        if !matches!(&s.kind, StmtKind::Free { buf } if *buf == t1) {
            continue;
        }
        let after_top = q.depth() == d1
            && q.parent() == top.parent()
            && q.last().block == top.last().block
            && q > top;
        if !after_top {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "'{t1}' is freed before the allocation of '{t2}', or inside a nested block"
                ),
            )
            .at(s.span, describe(s))
            .at(site.stmt.span, what));
        }
        // In `t2`'s own block, `t2` must not be used after `t1` is freed.
        if top == *at {
            let views2 = aliases(&b1[at.last().index + 1..], &t2);
            let later = &b1[q.last().index + 1..];
            if let Some(u) = later.iter().find(|x| {
                views2
                    .iter()
                    .any(|v| block_mentions(std::slice::from_ref(x), v))
            }) {
                return Err(SchedError::new(
                    PRIM,
                    format!("'{t1}' is freed while '{t2}' is still used"),
                )
                .at(s.span, describe(s))
                .at(u.span, describe(u)));
            }
        }
    }
    let uses_t1 = |b: &[Stmt]| -> Option<Stmt> {
        b.iter()
            .find(|s| {
                !matches!(&s.kind, StmtKind::Free { buf } if *buf == t1)
                    && views
                        .iter()
                        .any(|v| block_mentions(std::slice::from_ref(s), v))
            })
            .cloned()
    };
    let dead_error = |s: &Stmt, later: bool| {
        SchedError::new(
            PRIM,
            if later {
                format!("'{t1}' is used in a loop around the allocation of '{t2}', so a later iteration uses it while '{t2}' lives")
            } else {
                format!("'{t1}' is used after the allocation of '{t2}'")
            },
        )
        .at(s.span, describe(s))
        .at(site.stmt.span, what.clone())
    };
    let mut q = at.clone();
    loop {
        let block = path::block_of(p, &q).expect("the path exists");
        if let Some(s) = uses_t1(&block[q.last().index + 1..]) {
            return Err(dead_error(&s, false));
        }
        if q.depth() <= d1 {
            break;
        }
        let parent = q.parent().expect("deeper than t1's block");
        let ps = path::get(p, &parent).expect("the path exists");
        if let StmtKind::For { body, .. } = &ps.kind {
            if let Some(s) = uses_t1(body) {
                return Err(dead_error(&s, true));
            }
        }
        q = parent;
    }

    // Every read of `t2` is covered by a write since its allocation.
    let k = at.last().index;
    let block = path::block_of(p, at).expect("the allocation exists");
    let mut free = None;
    let mut nested_free = None;
    for (j, s) in block.iter().enumerate().skip(k + 1) {
        if matches!(&s.kind, StmtKind::Free { buf } if *buf == t2) {
            free = Some(j);
        } else {
            let v: Vec<Stmt> = vec![s.clone()];
            weft_ir::visit::walk_block(&v, &mut |x| {
                if matches!(&x.kind, StmtKind::Free { buf } if *buf == t2) {
                    nested_free.get_or_insert_with(|| x.clone());
                }
            });
        }
    }
    if let Some(s) = nested_free {
        return Err(
            SchedError::new(PRIM, format!("'{t2}' is freed inside a nested block"))
                .at(s.span, describe(&s)),
        );
    }
    refuse_stride_windows(PRIM, &block[k + 1..], &t2)?;
    let stmts = stmt_accesses(
        a,
        p,
        at,
        block,
        (k + 1..block.len()).filter(|j| Some(*j) != free),
        &t2,
    );
    let facts = scope2.facts.clone();
    for (n, s) in stmts.iter().enumerate() {
        for r in s.accesses.iter().filter(|x| x.kind != AccessKind::Write) {
            if !covered(a, &facts, &stmts[..n], r) {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "a read of '{t2}' is not proved to see a value written since its allocation (with '{t1}' it would see what '{t1}' held)"
                    ),
                )
                .at(r.span, format!("reads {}", r.name))
                .at(site.stmt.span, what));
            }
        }
    }

    // Build: drop the allocation and the free, rename `t2` to `t1` after it.
    let sub = Subst::new().buf(&t2, &t1);
    let new_rest: Vec<Stmt> = block
        .iter()
        .enumerate()
        .skip(k + 1)
        .filter(|(j, _)| Some(*j) != free)
        .map(|(_, s)| sub.stmt(s))
        .collect();
    let mut new_block = block[..k].to_vec();
    new_block.extend(new_rest);
    let mut forward = Forward::replaced(at, 0, |_| None);
    if let Some(f) = free {
        forward = forward.then(&Forward::replaced(&at.sibling(f - 1), 0, |_| None));
    }
    Ok(Rewrite {
        proc: path::edit_block(p, at, |_| new_block),
        forward,
    })
}
