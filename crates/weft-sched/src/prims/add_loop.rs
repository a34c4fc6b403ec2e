//! `add_loop`: wrap a statement in a loop that runs it again and again.
//!
//! ```text
//! s  ⇝  for x in 0..hi { s }        (x a new variable, not used by s)
//! ```
//!
//! The inverse of [`super::remove_loop`], with its condition (Exo §4.7): the loop runs at least
//! once (`0 < hi` proved in the statement's context; and `hi <= 2^31 - 1`, the bound of a size,
//! so the statement does not run more often than any size could make it), and, unless `hi <= 1`
//! is proved too (then the loop runs `s` exactly once), `s` shadows itself, so running it more
//! than once changes nothing: `s` has no reductions, every write is exact, and no write overlaps a
//! read of another execution of `s` (see [`super::remove_loop::require_idempotent`]). `hi` is a
//! control expression over the names in scope; it is evaluated once, and `s` cannot change it
//! (control values never depend on data; a config field it reads must not be written by `s`).
//! The statement must not be an allocation or a window binding (the name would not be visible
//! after the loop) and must not free a buffer allocated outside it (a second `free`); the loop
//! variable must not reuse the name of an argument or an enclosing loop variable.
//! Useful to give a statement the loop structure of an instruction before `replace`, or to build
//! the loop a later `fuse` merges into.

use super::remove_loop::require_idempotent;
use super::{describe, for_stmt, require, stmt_at, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use weft_check::smt::Term;
use weft_ir::{Expr, ExprKind, Proc, StmtKind, Sym};

const PRIM: &str = "add_loop";

/// Wrap the statement at `at` in `for name in 0..hi`.
pub fn add_loop(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    name: &str,
    hi: &Expr,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    // Declarations and frees are not effects, but they cannot run twice (a second `free`), and
    // a name declared inside the new loop would not be visible after it.
    let frees_outside = super::freed_from_outside(std::slice::from_ref(s));
    if matches!(s.kind, StmtKind::Alloc { .. } | StmtKind::Window { .. }) {
        return Err(SchedError::new(
            PRIM,
            "the statement declares a name, which would not be visible after the loop",
        )
        .at(s.span, what));
    }
    if let Some(b) = frees_outside {
        return Err(SchedError::new(
            PRIM,
            format!("the statement frees '{b}', which cannot be freed twice"),
        )
        .at(s.span, what));
    }
    super::require_new_names(PRIM, p, at, &[name])?;
    if hi.ty != weft_ir::Ty::Int {
        return Err(SchedError::new(
            PRIM,
            format!("the loop's bound '{hi}' is a {}, not an integer", hi.ty),
        )
        .at(hi.span, hi.to_string()));
    }
    let scope = a.scope_at(p, at);
    let h = term_at(a, PRIM, &scope, hi)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::lt(Term::Int(0), h.clone()),
        || format!("the loop may run zero times ({hi} <= 0 is possible)"),
        s.span,
        what.clone(),
    )?;
    // A count no size could be: the result would run the statement up to 2^63 times, which the
    // original never did (the same bound as a size argument's).
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::le(h.clone(), Term::Int(weft_ir::types::ENTRY_MAX)),
        || {
            format!(
                "the loop may run more than {} times ({hi})",
                weft_ir::types::ENTRY_MAX
            )
        },
        s.span,
        what.clone(),
    )?;
    let eff = a.effects(&scope, std::slice::from_ref(s));
    let mut bound_configs = Vec::new();
    weft_ir::visit::walk_expr(hi, &mut |e| {
        if let ExprKind::ReadConfig { config, field } = &e.kind {
            bound_configs.push(crate::effects::Root::Config(config.name.clone(), *field));
        }
    });
    if let Some(w) = eff.writes().find(|w| bound_configs.contains(&w.root)) {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the bound reads config {} and the statement writes it",
                w.name
            ),
        )
        .at(w.span, "writes the config field"));
    }
    // A loop that runs exactly once runs the statement once, whatever it does.
    if a.prove(&scope.facts, &Term::le(h, Term::Int(1))).is_err() {
        require_idempotent(a, PRIM, &scope, std::slice::from_ref(s), s.span, &what)?;
    }
    let wrapped = for_stmt(
        Sym::new(name),
        Expr::int(0),
        hi.clone(),
        vec![s.clone()],
        s.span,
    );
    let forward = Forward::replaced(at, 1, |rel| {
        let mut out = vec![rel[0], Step { block: 0, index: 0 }];
        out.extend_from_slice(&rel[1..]);
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![wrapped]),
        forward,
    })
}
