//! What the expression-level primitives (`commute_expr`, `left_reassociate_expr`,
//! `rewrite_expr`, `fold_into_reduce`, `merge_writes`, `split_write`, `lift_reduce_constant`)
//! share: finding the occurrences of an expression in a statement, deciding that two accesses
//! name one cell, and the accesses a statement writes and reads.

use super::describe;
use crate::effects::{Access, AccessKind, Analysis, Scope};
use crate::error::SchedError;
use crate::prims::bind_expr::same_expr;
use weft_check::smt::Term;
use weft_ir::{Expr, ExprKind, Proc, Stmt, StmtKind, Sym, WinCoord};

/// `e` with every sub-expression for which `f` returns a replacement replaced (outermost first:
/// a replaced sub-expression is not walked further).
pub(crate) fn map_expr(
    e: &Expr,
    f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>, SchedError>,
) -> Result<Expr, SchedError> {
    if let Some(new) = f(e)? {
        return Ok(new);
    }
    let mut r = |x: &Expr| map_expr(x, f);
    let kind = match &e.kind {
        ExprKind::Const(_)
        | ExprKind::Var(_)
        | ExprKind::Stride { .. }
        | ExprKind::ReadConfig { .. } => return Ok(e.clone()),
        ExprKind::Read { buf, idx } => ExprKind::Read {
            buf: buf.clone(),
            idx: idx.iter().map(&mut r).collect::<Result<_, _>>()?,
        },
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, r(a)?),
        ExprKind::Binary(op, a, b) => {
            let a = r(a)?;
            ExprKind::Binary(*op, a, r(b)?)
        }
        ExprKind::Select(c, a, b) => {
            let c = r(c)?;
            let a = r(a)?;
            ExprKind::Select(c, a, r(b)?)
        }
        ExprKind::DataIndex { value, lo, hi } => {
            let value = r(value)?;
            let lo = r(lo)?;
            ExprKind::DataIndex {
                value,
                lo,
                hi: r(hi)?,
            }
        }
        ExprKind::Cast(t, a) => ExprKind::Cast(*t, r(a)?),
        ExprKind::Math(g, args) => {
            ExprKind::Math(*g, args.iter().map(&mut r).collect::<Result<_, _>>()?)
        }
        ExprKind::Window { buf, coords } => ExprKind::Window {
            buf: buf.clone(),
            coords: coords
                .iter()
                .map(|c| {
                    Ok(match c {
                        WinCoord::Point(p) => WinCoord::Point(r(p)?),
                        WinCoord::Interval(lo, hi) => {
                            let lo = r(lo)?;
                            WinCoord::Interval(lo, r(hi)?)
                        }
                    })
                })
                .collect::<Result<_, SchedError>>()?,
        },
    };
    Ok(Expr::raw(kind, e.ty, e.span))
}

/// The statement with each of its own expressions (not those of the statements nested in it:
/// a loop's bounds, an `if`'s condition, an access's indices and value, a call's arguments, an
/// allocation's extents) rewritten by `f`.
pub(crate) fn map_own_exprs(
    s: &Stmt,
    f: &mut dyn FnMut(&Expr) -> Result<Expr, SchedError>,
) -> Result<Stmt, SchedError> {
    let kind = match &s.kind {
        StmtKind::Pass | StmtKind::Free { .. } => s.kind.clone(),
        StmtKind::Assign { buf, idx, rhs } | StmtKind::Reduce { buf, idx, rhs } => {
            let idx = idx.iter().map(&mut *f).collect::<Result<_, _>>()?;
            let rhs = f(rhs)?;
            let buf = buf.clone();
            if matches!(s.kind, StmtKind::Assign { .. }) {
                StmtKind::Assign { buf, idx, rhs }
            } else {
                StmtKind::Reduce { buf, idx, rhs }
            }
        }
        StmtKind::WriteConfig { config, field, rhs } => StmtKind::WriteConfig {
            config: config.clone(),
            field: *field,
            rhs: f(rhs)?,
        },
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => StmtKind::If {
            cond: f(cond)?,
            then_body: then_body.clone(),
            else_body: else_body.clone(),
        },
        StmtKind::For {
            var,
            lo,
            hi,
            body,
            parallel,
        } => {
            let lo = f(lo)?;
            StmtKind::For {
                var: var.clone(),
                lo,
                hi: f(hi)?,
                body: body.clone(),
                parallel: *parallel,
            }
        }
        StmtKind::Alloc { buf, ty } => StmtKind::Alloc {
            buf: buf.clone(),
            ty: weft_ir::BufType {
                shape: ty.shape.iter().map(&mut *f).collect::<Result<_, _>>()?,
                ..ty.clone()
            },
        },
        StmtKind::Window { name, rhs } => StmtKind::Window {
            name: name.clone(),
            rhs: f(rhs)?,
        },
        StmtKind::Call { proc, args } => StmtKind::Call {
            proc: proc.clone(),
            args: args.iter().map(&mut *f).collect::<Result<_, _>>()?,
        },
    };
    Ok(Stmt::new(kind, s.span))
}

/// Replace every occurrence of `pat` (structurally equal, spans ignored) among the statement's
/// own expressions by `by(occurrence)`; fails with `prim`'s error when there is none.
pub(crate) fn rewrite_occurrences(
    prim: &'static str,
    s: &Stmt,
    pat: &Expr,
    by: &mut dyn FnMut(&Expr) -> Result<Expr, SchedError>,
) -> Result<Stmt, SchedError> {
    let mut count = 0;
    let new = map_own_exprs(s, &mut |e| {
        map_expr(e, &mut |x| {
            if same_expr(x, pat) {
                count += 1;
                Ok(Some(by(x)?))
            } else {
                Ok(None)
            }
        })
    })?;
    if count == 0 {
        return Err(SchedError::new(
            prim,
            format!("'{pat}' does not occur in the statement (its own expressions)"),
        )
        .at(s.span, describe(s)));
    }
    Ok(new)
}

/// Whether an index list contains a `clamp_index` (an index computed from data: two evaluations
/// of it at different times may differ).
pub(crate) fn has_data_index(idx: &[Expr]) -> bool {
    let mut hit = false;
    for e in idx {
        weft_ir::visit::walk_expr(e, &mut |x| {
            hit |= matches!(x.kind, ExprKind::DataIndex { .. });
        });
    }
    hit
}

/// Prove that `x[i...]` and `x[j...]` (indices of one buffer, evaluated under `scope`) name the
/// same cell: the indices are structurally equal, or the solver proves them equal from the facts.
pub(crate) fn require_same_cell(
    a: &mut Analysis,
    prim: &'static str,
    scope: &Scope,
    i: &[Expr],
    j: &[Expr],
    what: impl FnOnce() -> String,
    s: &Stmt,
) -> Result<(), SchedError> {
    if i.len() == j.len() && i.iter().zip(j).all(|(x, y)| same_expr(x, y)) {
        return Ok(());
    }
    let fail = |cex: Vec<(String, i64)>, why: &str| {
        SchedError::new(prim, format!("{} {why}", what()))
            .at(s.span, describe(s))
            .with_counterexample(cex)
    };
    if i.len() != j.len() {
        return Err(fail(Vec::new(), "(different ranks)"));
    }
    let mut goal = Vec::new();
    for (x, y) in i.iter().zip(j) {
        match (a.term(scope, x), a.term(scope, y)) {
            (Some(tx), Some(ty)) => goal.push(Term::eq(tx, ty)),
            _ => {
                return Err(fail(
                    Vec::new(),
                    "(an index is not a quasi-affine control expression, and the two are not written alike)",
                ))
            }
        }
    }
    a.prove(&scope.facts, &Term::And(goal))
        .map_err(|cex| fail(cex, "(the solver does not prove the indices equal)"))
}

/// The accesses of one statement at `scope` (the statement at that place).
pub(crate) fn stmt_effects(a: &mut Analysis, scope: &Scope, s: &Stmt) -> Vec<Access> {
    a.effects(scope, std::slice::from_ref(s)).accesses
}

/// The write (or reduction) of an assignment or reduction statement's own cell.
pub(crate) fn written_cell(
    a: &mut Analysis,
    prim: &'static str,
    scope: &Scope,
    s: &Stmt,
) -> Result<Access, SchedError> {
    stmt_effects(a, scope, s)
        .into_iter()
        .find(|x| x.kind != AccessKind::Read)
        .ok_or_else(|| {
            SchedError::new(
                prim,
                "the analysis cannot follow the write of the statement",
            )
            .at(s.span, describe(s))
        })
}

/// Refuse when one of `reads` (accesses; only reads count) may touch the cell `cell`.
pub(crate) fn require_no_read_of(
    a: &mut Analysis,
    prim: &'static str,
    facts: &[Term],
    reads: &[Access],
    cell: &Access,
    message: impl FnOnce() -> String,
    s: &Stmt,
) -> Result<(), SchedError> {
    for r in reads.iter().filter(|x| x.kind == AccessKind::Read) {
        if let Some(cex) = a.overlap(facts, &[], r, cell) {
            return Err(SchedError::new(prim, message())
                .at(r.span, format!("reads {}", r.name))
                .at(s.span, describe(s))
                .with_counterexample(cex));
        }
    }
    Ok(())
}

/// The parts of an assignment or reduction: buffer, indices, value, and whether it reduces.
pub(crate) fn access_parts<'a>(
    prim: &'static str,
    s: &'a Stmt,
) -> Result<(&'a Sym, &'a [Expr], &'a Expr, bool), SchedError> {
    match &s.kind {
        StmtKind::Assign { buf, idx, rhs } => Ok((buf, idx, rhs, false)),
        StmtKind::Reduce { buf, idx, rhs } => Ok((buf, idx, rhs, true)),
        _ => Err(
            SchedError::new(prim, "the statement is not an assignment or a reduction")
                .at(s.span, describe(s)),
        ),
    }
}

/// An assignment (`reduce` false) or a reduction.
pub(crate) fn access_stmt(
    buf: &Sym,
    idx: &[Expr],
    rhs: Expr,
    reduce: bool,
    span: weft_ir::Span,
) -> Stmt {
    let (buf, idx) = (buf.clone(), idx.to_vec());
    let kind = if reduce {
        StmtKind::Reduce { buf, idx, rhs }
    } else {
        StmtKind::Assign { buf, idx, rhs }
    };
    Stmt::new(kind, span)
}

/// Refuse a float rewrite that is exact only up to reassociation (or distribution) of `+` and `*`
/// in an instruction's body: its C template implements the body as written.
pub(crate) fn require_not_instr_for_float(
    prim: &'static str,
    p: &Proc,
    float: bool,
    s: &Stmt,
) -> Result<(), SchedError> {
    if float && p.is_instr() {
        return Err(SchedError::new(
            prim,
            format!(
                "'{}' is an instruction: its C template computes its body as written, and \
                 reassociating float arithmetic changes the rounding",
                p.name
            ),
        )
        .at(s.span, describe(s)));
    }
    Ok(())
}

/// The most nodes an expression a step builds may have, counted as a tree (a shared
/// sub-expression once per use): every pass walks expressions as trees, and a substitution
/// repeated by a schedule (`merge_writes` of `x = x * x` again and again) doubles the tree each
/// time while the shared representation stays small.
pub(crate) const MAX_TREE_NODES: u64 = 10_000;

/// Nodes of `e` counted as a tree, saturating at `cap`; linear in the shared representation.
fn tree_nodes(e: &Expr, cap: u64, memo: &mut std::collections::HashMap<usize, u64>) -> u64 {
    let key = (&**e) as *const weft_ir::expr::ExprNode as usize;
    if let Some(&n) = memo.get(&key) {
        return n;
    }
    let mut n: u64 = 1;
    weft_ir::visit::for_each_child(&e.kind, |c| {
        n = n.saturating_add(tree_nodes(c, cap, memo)).min(cap);
    });
    memo.insert(key, n);
    n
}

/// Refuse a new statement whose own expressions are higher than the IR's depth limit
/// ([`weft_ir::limits::MAX_EXPR_DEPTH`], which every pass relies on for its stack) or larger, as
/// trees, than [`MAX_TREE_NODES`].
pub(crate) fn require_small(prim: &'static str, s: &Stmt) -> Result<(), SchedError> {
    let mut memo = std::collections::HashMap::new();
    for e in weft_ir::visit::stmt_exprs(s) {
        let why = if e.height() > weft_ir::limits::MAX_EXPR_DEPTH {
            format!(
                "nests {} levels deep, more than the limit of {}",
                e.height(),
                weft_ir::limits::MAX_EXPR_DEPTH
            )
        } else if tree_nodes(e, MAX_TREE_NODES + 1, &mut memo) > MAX_TREE_NODES {
            format!("has more than {MAX_TREE_NODES} nodes")
        } else {
            continue;
        };
        return Err(SchedError::new(
            prim,
            format!("the rewritten statement's expression {why} (rule `depth`)"),
        )
        .at(s.span, describe(s)));
    }
    Ok(())
}
