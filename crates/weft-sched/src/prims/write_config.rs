//! `write_config`: write a config field after a statement (Exo's `configwrite_at`).
//!
//! ```text
//! s   ⇝   s;  Cfg.f = e
//! ```
//!
//! In isolation the rewrite is an equivalence modulo `Cfg.f` (Exo §5.7, `s ⇝ s; x_g = e`): it
//! changes nothing but that field. In the proc it is accepted under the paper's context rule
//! (§6.2) with `L = {Cfg.f}`: no read of `Cfg.f` may see the new value, i.e. the field is not
//! read after the write before it is overwritten. The proc is then equivalent to the original
//! modulo `Cfg.f`: every buffer and every other config field ends with the same value, and only
//! the final value of `Cfg.f` (which the caller may see) can differ; the schedule records the
//! field as polluted in the proc's provenance ([`weft_ir::Origin`]).
//!
//! Conditions:
//! - `e` has the field's type; it reads no buffer data (control values, strides, config fields
//!   and constants only), so its evaluation cannot fail; it mentions no name bound inside `s`
//!   and no buffer `s` frees (it is evaluated after `s`);
//! - *no later read* (the walk shared with `bind_config`): going outward from `s`, the statements
//!   after it in its block, in order: one that may read `Cfg.f` (anywhere inside it: nested
//!   statements, conditions, loop bounds, callees) rejects the step, one that is a write
//!   `Cfg.f = ...` directly in that block ends the walk (every later point runs after it). At the
//!   end of a block, if the enclosing statement is a loop, a read anywhere in its body at a later
//!   iteration `i' > i` (`lo <= i' < hi`) rejects the step; then the walk goes on after the
//!   enclosing statement. The end of the proc ends the walk. A read counts when the solver finds
//!   its guard satisfiable together with the facts at `s` (the counterexample is reported); a
//!   write counts as an overwrite only when it is a direct `Cfg.f = ...` statement (conservative:
//!   writes in callees or under conditions do not end the walk).

use super::{describe, stmt_at, Rewrite};
use crate::effects::{primed, subst_term, AccessKind, Analysis, Root};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use std::collections::HashMap;
use std::sync::Arc;
use weft_check::smt::Term;
use weft_check::terms::sym_var;
use weft_ir::{Config, Expr, ExprKind, Proc, Span, Stmt, StmtKind, Sym};

const PRIM: &str = "write_config";

/// `Cfg.f`, for messages.
pub(crate) fn field_name(config: &Config, field: usize) -> String {
    format!(
        "{}.{}",
        config.name,
        config.fields.get(field).map_or("?", |f| f.name.as_str())
    )
}

/// The statement `Cfg.f = rhs`.
pub(crate) fn field_write(config: Arc<Config>, field: usize, rhs: &Expr, span: Span) -> Stmt {
    Stmt::new(
        StmtKind::WriteConfig {
            config,
            field,
            rhs: rhs.clone(),
        },
        span,
    )
}

/// The field exists and has `e`'s type.
pub(crate) fn check_field(
    prim: &'static str,
    config: &Config,
    field: usize,
    e: &Expr,
    s: &Stmt,
) -> Result<(), SchedError> {
    let Some(f) = config.fields.get(field) else {
        return Err(
            SchedError::new(prim, format!("config {} has no field {field}", config.name))
                .at(s.span, describe(s)),
        );
    };
    if f.ty.ty() != e.ty {
        return Err(SchedError::new(
            prim,
            format!(
                "'{e}' has type {}, but field {} has type {}",
                e.ty,
                field_name(config, field),
                f.ty.ty()
            ),
        )
        .at(s.span, describe(s)));
    }
    Ok(())
}

/// No read of the field can see a value written just before or after the statement at `at`
/// (`include_self`: the write comes before the statement, so its own reads count too): the walk
/// of the module comment, with the facts that hold at the statement.
pub(crate) fn no_later_read(
    a: &mut Analysis,
    prim: &'static str,
    p: &Proc,
    at: &Path,
    config: &Config,
    field: usize,
    include_self: bool,
) -> Result<(), SchedError> {
    let root = Root::Config(config.name.clone(), field);
    let name = field_name(config, field);
    let facts = a.scope_at(p, at).facts;
    let s = path::get(p, at).expect("the statement exists");
    let read_error = |r_span, cex, later: bool| {
        SchedError::new(
            prim,
            format!(
                "{name} is read {} the new write before being overwritten, so the proc would not be equivalent modulo {name}",
                if later { "at a later iteration, after" } else { "after" }
            ),
        )
        .at(r_span, format!("reads {name}"))
        .at(s.span, describe(s))
        .with_counterexample(cex)
    };
    let overwrites = |x: &Stmt| {
        matches!(&x.kind, StmtKind::WriteConfig { config: c, field: f, .. }
            if c.name == config.name && *f == field)
    };
    let mut q = at.clone();
    let mut first = include_self;
    loop {
        let block = path::block_of(p, &q).expect("the path exists");
        let from = q.last().index + usize::from(!first);
        first = false;
        for j in from..block.len() {
            let scope = a.scope_at(p, &q.sibling(j));
            // Loops after the statement are not around it: their variables are not in `facts`.
            let eff = a.effects(&scope, &block[j..j + 1]);
            for r in eff
                .accesses
                .iter()
                .filter(|x| x.kind == AccessKind::Read && x.root == root)
            {
                let mut all = facts.clone();
                all.extend(r.guard.iter().cloned());
                if let Err(cex) = a.prove(&all, &Term::Bool(false)) {
                    return Err(read_error(r.span, cex, false));
                }
            }
            if j > q.last().index && overwrites(&block[j]) {
                return Ok(());
            }
        }
        let Some(parent) = q.parent() else {
            return Ok(());
        };
        let ps = path::get(p, &parent).expect("the path exists");
        if let StmtKind::For {
            var, lo, hi, body, ..
        } = &ps.kind
        {
            let outer = a.scope_at(p, &parent);
            let scope = a.scope_at(p, &parent.child(0, 0));
            let iv = sym_var(var);
            let iv2 = primed(&iv);
            let map: HashMap<u64, Term> = [(iv.id, Term::IntVar(iv2.clone()))].into();
            let eff = a.effects(&scope, body).rename_bound();
            let mut extra = vec![Term::lt(Term::IntVar(iv), Term::IntVar(iv2.clone()))];
            if let (Some(l), Some(h)) = (a.term(&outer, lo), a.term(&outer, hi)) {
                extra.push(Term::le(l, Term::IntVar(iv2.clone())));
                extra.push(Term::lt(Term::IntVar(iv2), h));
            }
            for r in eff
                .accesses
                .iter()
                .filter(|x| x.kind == AccessKind::Read && x.root == root)
            {
                let mut all = facts.clone();
                all.extend(extra.iter().cloned());
                all.extend(r.guard.iter().map(|g| subst_term(g, &map)));
                if let Err(cex) = a.prove(&all, &Term::Bool(false)) {
                    return Err(read_error(r.span, cex, true));
                }
            }
        }
        q = parent;
    }
}

/// The names bound inside a statement (loop variables, allocations and windows of its nested
/// blocks, and its own loop variable), which are not in scope after it, and the buffers it frees
/// (itself or nested), which cannot be used after it; each with whether it is freed.
fn bound_inside(s: &Stmt) -> Vec<(Sym, bool)> {
    let mut out = Vec::new();
    match &s.kind {
        StmtKind::For { var, .. } => out.push((var.clone(), false)),
        StmtKind::Free { buf } => out.push((buf.clone(), true)),
        _ => {}
    }
    for b in weft_ir::visit::stmt_blocks(s) {
        weft_ir::visit::walk_block(b, &mut |x| match &x.kind {
            StmtKind::For { var, .. } => out.push((var.clone(), false)),
            StmtKind::Alloc { buf, .. } => out.push((buf.clone(), false)),
            StmtKind::Free { buf } => out.push((buf.clone(), true)),
            StmtKind::Window { name, .. } => out.push((name.clone(), false)),
            _ => {}
        });
    }
    out
}

/// Write `Cfg.field = e` after the statement at `at`.
pub fn write_config(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    config: Arc<Config>,
    field: usize,
    e: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    check_field(PRIM, &config, field, e, s)?;
    let mut reads_data = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        reads_data |= matches!(x.kind, ExprKind::Read { .. } | ExprKind::Window { .. });
    });
    if reads_data {
        return Err(SchedError::new(
            PRIM,
            format!("'{e}' reads a buffer; the value written must be a control value, a stride, a config field or a constant"),
        )
        .at(s.span, describe(s)));
    }
    if let Some((v, freed)) = bound_inside(s)
        .iter()
        .find(|(v, _)| crate::effects::mentions(e, v))
    {
        let why = if *freed {
            "which the statement frees"
        } else {
            "which is not in scope after the statement"
        };
        return Err(
            SchedError::new(PRIM, format!("'{e}' uses '{v}', {why}")).at(s.span, describe(s))
        );
    }
    no_later_read(a, PRIM, p, at, &config, field, false)?;
    let w = field_write(config, field, e, s.span);
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![s.clone(), w]),
        forward: Forward::replaced(at, 2, |rel| Some(rel.to_vec())),
    })
}
