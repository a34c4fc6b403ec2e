//! `bind_config`: compute an expression into a config field just before the statement that uses
//! it, and read the field there instead (Exo's `bind_config`).
//!
//! ```text
//! s   ⇝   Cfg.f = e;  s[e ↦ Cfg.f]
//! ```
//!
//! Every occurrence, in the statement's own expressions (indices and right-hand side, call
//! arguments, a loop's bounds, an `if`'s condition, an allocation's shape; not the statements
//! nested in it), of an expression structurally equal to `e` (a control or a data expression; same
//! operators, symbols, constants and types) becomes a read of `Cfg.f`, whose type must be `e`'s.
//!
//! In isolation the rewrite is an equivalence modulo `Cfg.f`: a statement evaluates its own
//! expressions when it starts, before it writes anything, so `e` has the same value (and the same
//! safety) just before it, and the write puts exactly that value in the field each replaced read
//! then reads. In the proc, it is accepted under the paper's context rule (§6.2) with
//! `L = {Cfg.f}`: no read of `Cfg.f` other than the replaced occurrences may see the new value.
//! The result is then equivalent to the original modulo `Cfg.f` (every buffer and every other
//! config field ends the same; the final value of `Cfg.f` may differ), and the schedule records the
//! field as polluted in the proc's provenance ([`weft_ir::Origin`]).
//!
//! Conditions:
//! - the field has `e`'s type, and `e` occurs at least once in the statement's own expressions;
//! - the statement itself does not read `Cfg.f` (in its own expressions, its nested statements or
//!   its callees): those reads would now see `e`;
//! - for a control `e`, the result passes the checker: it does not know the field's value, so an
//!   occurrence it must bound (an index, a window coordinate, a loop bound under a bounds proof)
//!   may no longer be provably safe;
//! - *no later read*: the walk of [`super::write_config`] from the statement (reads after it, at
//!   later iterations of enclosing loops, until a direct overwrite `Cfg.f = ...`), each read
//!   proved unreachable by the solver or reported with a counterexample.

use super::bind_expr::same_expr;
use super::write_config::{check_field, field_name, field_write, no_later_read};
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::rewrite::Rewriter;
use std::cell::Cell;
use std::sync::Arc;
use weft_ir::{Config, Expr, ExprKind, Proc, Stmt, WinCoord};

const PRIM: &str = "bind_config";

/// Bind the occurrences of `e` in the statement at `at` to `Cfg.field`, written just before it.
pub fn bind_config(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    e: &Expr,
    config: Arc<Config>,
    field: usize,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    check_field(PRIM, &config, field, e, s)?;
    let name = field_name(&config, field);
    let read = Expr::read_config(&config, field).with_span(e.span);
    let mut r = Occurrences {
        pat: e,
        by: &read,
        count: Cell::new(0),
    };
    let new_s = r.stmt(s);
    if r.count.get() == 0 {
        return Err(SchedError::new(
            PRIM,
            format!("'{e}' does not occur in the statement's own expressions"),
        )
        .at(s.span, describe(s)));
    }
    no_later_read(a, PRIM, p, at, &config, field, true)?;
    let w = field_write(config, field, e, s.span);
    let forward = Forward::replaced(at, 2, |rel| {
        let mut out = rel.to_vec();
        out[0] = Step { block: 0, index: 1 };
        Some(out)
    });
    let proc = path::replace_stmt(p, at, vec![w, new_s]);
    // The checker does not know a config field's value: a control occurrence it needs to bound
    // (an index, a window, a loop bound) may no longer check.
    if e.ty.is_control() {
        if let Err(ds) = weft_check::check_proc(&proc) {
            let msg: Vec<String> = ds.iter().map(|d| d.message.clone()).collect();
            return Err(SchedError::new(
                PRIM,
                format!(
                    "the checker cannot prove the proc safe once '{e}' is read from {name}: {}",
                    msg.join("; ")
                ),
            )
            .at(s.span, describe(s)));
        }
    }
    Ok(Rewrite { proc, forward })
}

/// Replaces the occurrences of `pat` in a statement's own expressions (nested blocks are kept).
struct Occurrences<'a> {
    pat: &'a Expr,
    by: &'a Expr,
    count: Cell<usize>,
}

impl Rewriter for Occurrences<'_> {
    fn expr(&self, e: &Expr) -> Expr {
        if same_expr(e, self.pat) {
            self.count.set(self.count.get() + 1);
            return self.by.clone();
        }
        let r = |x: &Expr| self.expr(x);
        let kind = match &e.kind {
            ExprKind::Const(_)
            | ExprKind::Var(_)
            | ExprKind::Stride { .. }
            | ExprKind::ReadConfig { .. } => return e.clone(),
            ExprKind::Read { buf, idx } => ExprKind::Read {
                buf: buf.clone(),
                idx: idx.iter().map(r).collect(),
            },
            ExprKind::Unary(op, x) => ExprKind::Unary(*op, r(x)),
            ExprKind::Binary(op, x, y) => ExprKind::Binary(*op, r(x), r(y)),
            ExprKind::Select(c, x, y) => ExprKind::Select(r(c), r(x), r(y)),
            ExprKind::DataIndex { value, lo, hi } => ExprKind::DataIndex {
                value: r(value),
                lo: r(lo),
                hi: r(hi),
            },
            ExprKind::Cast(t, x) => ExprKind::Cast(*t, r(x)),
            ExprKind::Math(f, args) => ExprKind::Math(*f, args.iter().map(r).collect()),
            ExprKind::Window { buf, coords } => ExprKind::Window {
                buf: buf.clone(),
                coords: coords
                    .iter()
                    .map(|c| match c {
                        WinCoord::Point(x) => WinCoord::Point(r(x)),
                        WinCoord::Interval(x, y) => WinCoord::Interval(r(x), r(y)),
                    })
                    .collect(),
            },
        };
        Expr::raw(kind, e.ty, e.span)
    }

    fn block(&mut self, b: &[Stmt]) -> Vec<Stmt> {
        b.to_vec()
    }
}
