//! `delete_config`: delete a config-field write that is redundant (Exo's `delete_config`).
//!
//! ```text
//! s1;  Cfg.f = e;  s2   ⇝   s1;  s2
//! ```
//!
//! Accepted by one of two rules, tried in this order:
//!
//! 1. *Already holds* (an exact equivalence): walking back from the write through the statements
//!    before it in its block, an earlier direct write `Cfg.f = e'` is found with `e'` the same
//!    expression as `e` (same symbols, operators and constants), and
//!    - `e` does not read `Cfg.f` (else the earlier write changed what it evaluates to);
//!    - no statement in between may write `Cfg.f` or anything `e` reads (a config field, or the
//!      root buffer of a buffer it reads; any such write counts, whatever its index or guard,
//!      callees included, as the effect analysis summarises them).
//!
//!    Then just before the write the field holds the value of `e'` at the earlier write, which is
//!    the value `e` evaluates to now (nothing it depends on changed); the write stores the value
//!    the field already holds, and evaluating `e` has no effect, so deleting it changes nothing.
//! 2. *Never read* (an equivalence modulo `Cfg.f`, Exo §6.2's context rule with `L = {Cfg.f}`):
//!    the walk of [`super::write_config`] from the write finds no read of `Cfg.f` that could see
//!    its value (after it, or at a later iteration of an enclosing loop, before a direct overwrite
//!    `Cfg.f = ...`; each read proved unreachable by the solver or reported with a
//!    counterexample). Then every buffer and every other config field ends as it did; only the
//!    field's final value, which the caller may see, can differ, and the schedule records the
//!    field as polluted in the proc's provenance (as `write_config` and `bind_config` do).
//!
//! Refused, naming both rules, when neither applies.

use super::write_config::{field_name, no_later_read};
use super::{config_reads, describe, stmt_at, Rewrite};
use crate::effects::{Analysis, Root};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use std::sync::Arc;
use weft_ir::{Config, ExprKind, StmtKind};

const PRIM: &str = "delete_config";

/// Which rule accepted the deletion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The field already holds the value: an exact equivalence.
    AlreadyHolds,
    /// The value is never read: an equivalence modulo the field.
    NeverRead,
}

/// Delete the config write at `at`. Returns the rewrite, the config and field written, and the
/// rule that accepted it.
pub fn delete_config(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
) -> Result<(Rewrite, Arc<Config>, usize, Rule), SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let StmtKind::WriteConfig { config, field, rhs } = &s.kind else {
        return Err(
            SchedError::new(PRIM, "expected a config write `Cfg.f = e`").at(s.span, describe(s))
        );
    };
    let name = field_name(config, *field);
    let rewrite = Rewrite {
        proc: path::replace_stmt(p, at, vec![]),
        forward: Forward::replaced(at, 0, |_| None),
    };
    let holds = already_holds(a, p, at, config, *field, rhs);
    if holds.is_ok() {
        return Ok((rewrite, config.clone(), *field, Rule::AlreadyHolds));
    }
    match no_later_read(a, PRIM, p, at, config, *field, false) {
        Ok(()) => Ok((rewrite, config.clone(), *field, Rule::NeverRead)),
        Err(e) => {
            let why = holds.err().unwrap_or_default();
            Err(SchedError {
                message: format!(
                    "the write is not redundant: {name} is not known to hold the value already ({why}), and {}",
                    e.message
                ),
                ..e
            })
        }
    }
}

/// Rule 1: why the field may not already hold the value written, if it may not.
fn already_holds(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    config: &Config,
    field: usize,
    rhs: &weft_ir::Expr,
) -> Result<(), String> {
    let root = Root::Config(config.name.clone(), field);
    let mut reads = config_reads(&[rhs]);
    if reads.contains(&root) {
        return Err("the value written reads the field itself".into());
    }
    let scope = a.scope_at(p, at);
    let mut unknown = None;
    weft_ir::visit::walk_expr(rhs, &mut |x| {
        if let ExprKind::Read { buf, .. } = &x.kind {
            match scope.root_of(buf) {
                Some(id) => reads.push(Root::Buf(id)),
                None => unknown = Some(buf.clone()),
            }
        }
    });
    if let Some(b) = unknown {
        return Err(format!("'{b}' is not a buffer the analysis knows"));
    }
    let block = path::block_of(p, at).expect("the statement exists");
    let k = at.last().index;
    for j in (0..k).rev() {
        if let StmtKind::WriteConfig {
            config: c,
            field: f,
            rhs: earlier,
        } = &block[j].kind
        {
            if c.name == config.name && *f == field {
                if weft_ir::alpha::same_expr(earlier, rhs) {
                    let between = a.scope_at(p, &at.sibling(j + 1));
                    let eff = a.effects(&between, &block[j + 1..k]);
                    if let Some(w) = eff.writes().find(|w| reads.contains(&w.root)) {
                        return Err(format!(
                            "{} is written between the two writes, and the value reads it",
                            w.name
                        ));
                    }
                    return Ok(());
                }
                return Err(format!("the write before it stores {earlier}, not {rhs}"));
            }
        }
        let here = a.scope_at(p, &at.sibling(j));
        let eff = a.effects(&here, &block[j..j + 1]);
        if eff.writes().any(|w| w.root == root) {
            return Err(format!(
                "a statement before it may write {} (not a direct write of the same value)",
                field_name(config, field)
            ));
        }
    }
    Err(format!(
        "no earlier write of {} in its block",
        field_name(config, field)
    ))
}
