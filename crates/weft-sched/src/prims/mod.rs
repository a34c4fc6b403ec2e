//! The scheduling primitives, one module each. Every primitive is a function from a proc and a
//! cursor (a [`Path`]) to a [`Rewrite`] or a [`SchedError`]; its doc comment states the rewrite
//! and the condition under which it is accepted, and the function proves that condition (with the
//! [`Analysis`]) before building the new proc.

pub mod add_guard;
pub mod add_loop;
pub mod bind_config;
pub mod bind_expr;
pub mod call_eqv;
pub mod commute_expr;
pub mod cut;
pub mod delete_pass;
pub mod divide_dim;
pub mod eliminate_dead_code;
pub mod expand_dim;
pub(crate) mod expr_util;
pub mod extract_proc;
pub mod fission;
pub mod fold_into_reduce;
pub mod fuse;
pub mod inline_assign;
pub mod inline_call;
pub mod inline_window;
pub mod insert_call;
pub mod insert_pass;
pub mod left_reassociate_expr;
pub mod lift_alloc;
pub mod lift_if;
pub mod lift_reduce_constant;
pub mod merge_writes;
pub mod parallelize;
pub mod partial_eval;
pub mod remove_loop;
pub mod rename;
pub mod reorder_loops;
pub mod reorder_stmts;
pub mod replace;
pub mod reuse_buffer;
pub mod rewrite_expr;
pub mod set_memory;
pub mod set_precision;
pub mod set_window;
pub mod shift;
pub mod simplify;
pub mod sink_alloc;
pub mod specialize;
pub mod split;
pub mod split_write;
pub mod stage_mem;
pub mod unroll;
pub mod write_config;
// Buffer layouts and loop shapes (Exo's rearrange_dim, resize_dim, unroll_buffer, join_loops,
// mult_loops, divide_with_recompute, lift_scope), delete_config, autolift_alloc /
// autosink_alloc, and what the layout primitives share.
pub mod auto_alloc;
pub(crate) mod buf_uses;
pub mod delete_config;
pub mod divide_with_recompute;
pub mod join_loops;
pub mod lift_scope;
pub mod mult_loops;
pub mod rearrange_dim;
pub mod resize_dim;
pub mod unroll_buffer;

use crate::effects::{Analysis, Conflict};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use std::sync::Arc;
use weft_check::smt::Term;
use weft_ir::{Expr, Proc, Span, Stmt, StmtKind, Sym};

/// The result of an accepted step: the new proc, and where the old proc's statements went.
#[derive(Clone, Debug)]
pub struct Rewrite {
    pub proc: Arc<Proc>,
    pub forward: Forward,
}

/// The parts of a `for` statement.
pub(crate) struct Loop<'a> {
    pub stmt: &'a Stmt,
    pub var: &'a Sym,
    pub lo: &'a Expr,
    pub hi: &'a Expr,
    pub body: &'a [Stmt],
    pub parallel: bool,
}

/// The statement at a path, or an error naming the primitive.
pub(crate) fn stmt_at<'a>(
    prim: &'static str,
    p: &'a Proc,
    at: &Path,
) -> Result<&'a Stmt, SchedError> {
    path::get(p, at)
        .ok_or_else(|| SchedError::new(prim, format!("no statement at {at} in proc '{}'", p.name)))
}

/// The loop at a path, or an error.
pub(crate) fn loop_at<'a>(
    prim: &'static str,
    p: &'a Proc,
    at: &Path,
) -> Result<Loop<'a>, SchedError> {
    let s = stmt_at(prim, p, at)?;
    match &s.kind {
        StmtKind::For {
            var,
            lo,
            hi,
            body,
            parallel,
        } => Ok(Loop {
            stmt: s,
            var,
            lo,
            hi,
            body,
            parallel: *parallel,
        }),
        _ => Err(SchedError::new(prim, "expected a loop").at(s.span, describe(s))),
    }
}

/// The buffer (an argument, or an allocation of an enclosing block before `at` and not freed
/// there since; the innermost when several match) whose symbol satisfies `hit`, with its type.
pub(crate) fn buffer_at(
    p: &Proc,
    at: &Path,
    hit: impl Fn(&Sym) -> bool,
) -> Option<(Sym, weft_ir::BufType)> {
    let mut found = p
        .args
        .iter()
        .find(|a| hit(&a.sym))
        .and_then(|a| a.buf().map(|b| (a.sym.clone(), b.clone())));
    let mut block = &p.body;
    for (k, step) in at.0.iter().enumerate() {
        for s in block.iter().take(step.index) {
            match &s.kind {
                StmtKind::Alloc { buf, ty } if hit(buf) => {
                    found = Some((buf.clone(), ty.clone()));
                }
                StmtKind::Free { buf } if hit(buf) => found = None,
                _ => {}
            }
        }
        if k + 1 == at.0.len() {
            break;
        }
        let s = block.get(step.index)?;
        block = weft_ir::visit::stmt_blocks(s).get(at.0[k + 1].block)?;
    }
    found
}

/// Check `probe`, where a step put a call of `callee` (at `at`) in place of, or before, the
/// statement `first` of `old`, with weft-check: the call's preconditions proved in context,
/// every window in bounds, the memories and types of the arguments those of the parameters, with
/// the checker's counterexample.
///
/// Where the callee writes no config field, only the call is checked (the rest of the proc is
/// walked for its context): the step changed nothing else, and the walk knows after the call
/// what it knew before it, so no other statement's rules change. A callee that writes config
/// fields makes their values unknown after it (the block it replaced may have made them known),
/// so there the whole proc is checked, and what it reports that the proc as it was reported too,
/// at the same place, is not this step's (a schedule may leave, say, an argument in another
/// memory for a later `set_memory`).
pub(crate) fn check_new_call(
    a: &mut Analysis,
    prim: &'static str,
    old: &Proc,
    probe: &Proc,
    at: &Path,
    callee: &Arc<Proc>,
    first: &Stmt,
) -> Result<(), SchedError> {
    // Definedness (rule `init`) is left to the check of the scheduled proc: the call reads what
    // the block it replaces read, and the rule's coarse form for calls (every cell of a register
    // argument written before) would be proved again for every call of the proc at every step.
    let checker = a.checker();
    let d = if weft_check::writes_configs(callee) {
        let ds = checker.check_proc_but_init(probe);
        if ds.is_empty() {
            return Ok(());
        }
        let key = |d: &weft_ir::Diagnostic| (d.rule, d.span, d.message.clone());
        let before: std::collections::HashSet<_> =
            checker.check_proc_but_init(old).iter().map(key).collect();
        match ds.into_iter().find(|d| !before.contains(&key(d))) {
            Some(d) => d,
            None => return Ok(()),
        }
    } else {
        let focus = stmt_at(prim, probe, at)?;
        match checker.check_stmt_but_init(probe, focus).into_iter().next() {
            None => return Ok(()),
            Some(d) => d,
        }
    };
    let e = SchedError::new(
        prim,
        format!(
            "the call of '{}' does not check: {}",
            callee.name, d.message
        ),
    )
    .at(first.span, describe(first))
    .with_checker_counterexample(&d);
    Err(e)
}

/// The first line of a statement's text, for messages.
pub(crate) fn describe(s: &Stmt) -> String {
    let text = weft_ir::print::stmt_to_string(s);
    let first = text.lines().next().unwrap_or("").trim_end();
    first.trim_end_matches('{').trim_end().to_string()
}

/// The error for a conflict between two accesses.
pub(crate) fn conflict_error(
    prim: &'static str,
    message: impl Into<String>,
    c: Conflict,
) -> SchedError {
    let what = |a: &crate::effects::Access| {
        let kind = match a.kind {
            crate::effects::AccessKind::Read => "reads",
            crate::effects::AccessKind::Write => "writes",
            crate::effects::AccessKind::Reduce => "reduces into",
        };
        format!("{kind} {}", a.name)
    };
    SchedError::new(prim, message)
        .at(c.first.span, what(&c.first))
        .at(c.second.span, what(&c.second))
        .with_counterexample(c.counterexample)
}

/// Prove `facts ⇒ goal` or fail with the solver's counterexample.
pub(crate) fn require(
    a: &mut Analysis,
    prim: &'static str,
    facts: &[Term],
    goal: &Term,
    message: impl FnOnce() -> String,
    span: Span,
    what: String,
) -> Result<(), SchedError> {
    a.prove(facts, goal).map_err(|cex| {
        SchedError::new(prim, message())
            .at(span, what)
            .with_counterexample(cex)
    })
}

/// A control-integer expression's term in the scope before `at`, or an error.
pub(crate) fn term_at(
    a: &mut Analysis,
    prim: &'static str,
    scope: &crate::effects::Scope,
    e: &Expr,
) -> Result<Term, SchedError> {
    a.term(scope, e).ok_or_else(|| {
        SchedError::new(
            prim,
            format!("'{e}' is not a quasi-affine control expression"),
        )
        .at(e.span, e.to_string())
    })
}

/// The config fields the expressions read.
pub(crate) fn config_reads(exprs: &[&Expr]) -> Vec<crate::effects::Root> {
    let mut read = Vec::new();
    for e in exprs {
        weft_ir::visit::walk_expr(e, &mut |x| {
            if let weft_ir::ExprKind::ReadConfig { config, field } = &x.kind {
                read.push(crate::effects::Root::Config(config.name.clone(), *field));
            }
        });
    }
    read
}

/// Refuse a rewrite that evaluates `exprs` again after (or while) `code` runs when `code` may write
/// a config field they read. A loop evaluates its bounds once, before its body, and an `if` its
/// condition once; a rewrite that copies such an expression into the body, after the loop, or
/// into a second loop evaluates it where the body's config writes are visible, so the copy may
/// have another value. `what` names the expressions and `code_name` the code for the message
/// ("the loop bounds", "the loop body").
pub(crate) fn require_unwritten_configs(
    prim: &'static str,
    exprs: &[&Expr],
    code: &crate::effects::Effects,
    what: &str,
    code_name: &str,
    stmt: &Stmt,
) -> Result<(), SchedError> {
    let read = config_reads(exprs);
    match code.writes().find(|w| read.contains(&w.root)) {
        Some(w) => Err(SchedError::new(
            prim,
            format!(
                "config {} is read by {what} and written by {code_name}, after which the \
                 rewrite would evaluate them again",
                w.name
            ),
        )
        .at(w.span, "writes the config field")
        .at(stmt.span, describe(stmt))),
        None => Ok(()),
    }
}

/// [`require_unwritten_configs`] for the body of the loop `l` at `at`: the rewrite evaluates
/// `exprs` inside or after it.
pub(crate) fn require_unwritten_by_body(
    a: &mut Analysis,
    prim: &'static str,
    p: &Proc,
    at: &Path,
    l: &Loop,
    exprs: &[&Expr],
    what: &str,
) -> Result<(), SchedError> {
    if config_reads(exprs).is_empty() {
        return Ok(());
    }
    let scope = a.scope_at(p, &at.child(0, 0));
    let eff = a.effects(&scope, l.body);
    require_unwritten_configs(prim, exprs, &eff, what, "the loop body", l.stmt)
}

/// Prove, in `scope`, that a buffer of type `ty` fits its memory's capacity (`max_bytes`, a stack
/// frame or a scratchpad), as the checker requires of every allocation. (That all of a proc's
/// allocations fit together is a memory rule, proved when the scheduled proc is checked.)
pub(crate) fn require_fits(
    a: &mut Analysis,
    prim: &'static str,
    scope: &crate::effects::Scope,
    name: &str,
    ty: &weft_ir::BufType,
    stmt: &Stmt,
) -> Result<(), SchedError> {
    let Some(max) = ty.mem.max_bytes else {
        return Ok(());
    };
    let mut bytes = Term::Int(ty.elem.bytes() as i64);
    for e in &ty.shape {
        bytes = Term::mul(bytes, term_at(a, prim, scope, e)?);
    }
    require(
        a,
        prim,
        &scope.facts,
        &Term::le(bytes, Term::Int(max)),
        || {
            format!(
                "'{name}' may not fit memory {}, which holds at most {max} bytes per buffer",
                ty.mem.name
            )
        },
        stmt.span,
        describe(stmt),
    )
}

/// Names a step introduces (loop variables, buffers) must be usable names (identifiers, not
/// keywords), differ from each other, and clash with no name visible at `at` or bound or used in
/// the statement there: the language forbids shadowing, and the printer would otherwise rename
/// one of them silently, so the name the user gave would designate another variable.
pub(crate) fn require_new_names(
    prim: &'static str,
    p: &Proc,
    at: &Path,
    names: &[&str],
) -> Result<(), SchedError> {
    let s = stmt_at(prim, p, at)?;
    let fail = |msg: String| Err(SchedError::new(prim, msg).at(s.span, describe(s)));
    for (k, name) in names.iter().enumerate() {
        if !weft_ir::print::usable_name(name) {
            return fail(format!(
                "'{name}' cannot be a name (an identifier that is not a keyword)"
            ));
        }
        if names[..k].contains(name) {
            return fail(format!("the step gives two new things the name '{name}'"));
        }
    }
    let mut taken: Vec<String> = p.args.iter().map(|a| a.sym.name().to_string()).collect();
    // Names declared by the enclosing statements and by the statements before each of them.
    let mut block = &p.body;
    for (k, step) in at.0.iter().enumerate() {
        for earlier in block.iter().take(step.index) {
            if let Some(d) = reorder_stmts::declared(earlier) {
                taken.push(d.name().to_string());
            }
        }
        let Some(cur) = block.get(step.index) else {
            break;
        };
        if let StmtKind::For { var, .. } = &cur.kind {
            taken.push(var.name().to_string());
        }
        match at
            .0
            .get(k + 1)
            .and_then(|n| path::child_blocks(cur).get(n.block).copied())
        {
            Some(b) => block = b,
            None => break,
        }
    }
    // Names bound or used inside the statement.
    weft_ir::visit::walk_block(std::slice::from_ref(s), &mut |x| {
        if let Some(d) = reorder_stmts::declared(x) {
            taken.push(d.name().to_string());
        }
        if let StmtKind::For { var, .. } = &x.kind {
            taken.push(var.name().to_string());
        }
        for e in weft_ir::visit::stmt_exprs(x) {
            weft_ir::visit::walk_expr(e, &mut |y| {
                if let weft_ir::ExprKind::Var(v) = &y.kind {
                    taken.push(v.name().to_string());
                }
            });
        }
    });
    match names.iter().find(|n| taken.iter().any(|t| t == *n)) {
        Some(n) => fail(format!(
            "'{n}' is already a name here; choose a new name for what the step introduces"
        )),
        None => Ok(()),
    }
}

/// A buffer that `block` frees without allocating it (the last such `free`): code that runs more
/// than once must not have one, or the second run frees it again.
pub(crate) fn freed_from_outside(block: &[Stmt]) -> Option<Sym> {
    let mut freed = None;
    let mut declared = std::collections::HashSet::new();
    weft_ir::visit::walk_block(block, &mut |x| match &x.kind {
        StmtKind::Alloc { buf, .. } => {
            declared.insert(buf.id());
        }
        StmtKind::Free { buf } if !declared.contains(&buf.id()) => freed = Some(buf.clone()),
        _ => {}
    });
    freed
}

/// A `for` statement.
pub(crate) fn for_stmt(var: Sym, lo: Expr, hi: Expr, body: Vec<Stmt>, span: Span) -> Stmt {
    Stmt::new(
        StmtKind::For {
            var,
            lo,
            hi,
            body,
            parallel: false,
        },
        span,
    )
}

/// `s` (a loop built by a rewrite of a loop) marked parallel when `parallel` is set. Rewrites that
/// keep a loop's iterations (moving code in or out of it, cutting or shifting its range) keep its
/// mark; [`crate::Schedule`] proves every parallel loop race-free again after each step.
pub(crate) fn keep_parallel(s: Stmt, parallel: bool) -> Stmt {
    match &s.kind {
        StmtKind::For {
            var,
            lo,
            hi,
            body,
            parallel: false,
        } if parallel => Stmt::new(
            StmtKind::For {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: body.clone(),
                parallel,
            },
            s.span,
        ),
        _ => s,
    }
}

/// A control integer variable expression.
pub(crate) fn ivar(s: &Sym) -> Expr {
    Expr::var(s, weft_ir::Ty::Int)
}

/// Forwarding for a statement that one new statement now precedes (`insert_pass`,
/// `insert_call`): it and what is inside it move down by one.
pub(crate) fn inserted_before_forward(at: &Path) -> Forward {
    Forward::replaced(at, 2, |rel| {
        let mut r = rel.to_vec();
        r[0].index += 1;
        Some(r)
    })
}

/// Forwarding for a loop replaced by one loop whose body holds the old body at `depth` levels of
/// single-statement nesting (`depth` 1: directly in the new loop's body).
pub(crate) fn nest_forward(at: &Path, count: usize, depth: usize) -> Forward {
    Forward::replaced(at, count, move |rel| {
        let mut out = vec![rel[0]];
        if rel.len() > 1 {
            for _ in 1..depth {
                out.push(path::Step { block: 0, index: 0 });
            }
            out.extend_from_slice(&rel[1..]);
        }
        Some(out)
    })
}
