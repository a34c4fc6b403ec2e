//! `lift_reduce_constant`: take a loop-invariant factor out of a sum (Exo's
//! `lift_reduce_constant`).
//!
//! ```text
//! x[i] = 0;                          x[i] = 0;
//! for k in lo..hi {           ⇝      for k in lo..hi {
//!     x[j] += c * e;                     x[j] += e;
//! }                                  }
//!                                    x[i] = c * x[i];
//! ```
//!
//! The statement named is the assignment of zero; the loop follows it in its block, and its body
//! is the one reduction, whose value is a product whose *left* operand `c` is the factor
//! (`commute_expr` puts it there).
//!
//! Conditions, proved with the solver (counterexample otherwise):
//! - the assignment stores the literal `0` (integers) or `0.0` (floats, positive zero);
//! - the reduction's cell is the assigned one at every iteration: `j` is written like `i` or the
//!   solver proves `i = j` from the facts inside the loop; no index is computed from data;
//! - `c` is loop-invariant: it does not use `k`, and none of its reads may touch the cell (the
//!   only location the loop writes), so evaluated once after the loop it has the value it had at
//!   every iteration;
//! - `e` reads nothing of the cell: its partial sums differ between the two forms;
//! - the loop runs at least once (`lo < hi`, proved), or `c` reads no buffer and the buffer holds
//!   integers. Otherwise, after a loop that does not run, `c * 0` would be evaluated where it was
//!   not (an error value read by `c`, or a float `c * 0.0` that is `-0.0` or NaN).
//!
//! Why that suffices: the loop now leaves `Σ e` in the cell instead of `Σ c·e`, and the last
//! statement multiplies by the same `c`. On integers (wrapping, a ring modulo 2^k)
//! `c·Σe = Σ c·e` exactly. **On floats this distributes `*` over the sum: the rounding
//! changes, and a sum that overflows can give an infinity or NaN where the original gave a
//! finite value (`c = 0` times an infinite `Σe`)** — the reassociation DESIGN.md §2 leaves to the user, documented here, as Exo does;
//! refused in an instruction's body. Error values: `c` or any `e` being one makes both results
//! one.

use super::expr_util::{
    has_data_index, require_no_read_of, require_not_instr_for_float, require_same_cell,
    require_small, stmt_effects, written_cell,
};
use super::{describe, keep_parallel, loop_at, require, stmt_at, term_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_check::smt::Term;
use weft_ir::{BinOp, Const, Expr, ExprKind, Stmt, StmtKind, Ty};

const PRIM: &str = "lift_reduce_constant";

/// Lift the factor of the reduction in the loop after the assignment of zero at `at`.
pub fn lift_reduce_constant(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let StmtKind::Assign {
        buf: x,
        idx: i,
        rhs: zero,
    } = &s.kind
    else {
        return Err(SchedError::new(PRIM, "the statement is not an assignment").at(s.span, what));
    };
    let is_zero = match &zero.kind {
        ExprKind::Const(Const::Int(0)) => true,
        ExprKind::Const(Const::Float(f)) => f.to_bits() == 0,
        _ => false,
    };
    if !is_zero || !matches!(zero.ty, Ty::Data(d) if d != weft_ir::DType::Bool) {
        return Err(SchedError::new(
            PRIM,
            format!("the statement assigns '{zero}', not the number 0"),
        )
        .at(s.span, what));
    }
    let elem = zero.ty;
    let float = matches!(elem, Ty::Data(d) if d.is_float());
    let lp_at = at.sibling(at.last().index + 1);
    if path::get(p, &lp_at).is_none() {
        return Err(SchedError::new(PRIM, "no loop follows the assignment").at(s.span, what));
    }
    let l = loop_at(PRIM, p, &lp_at)?;
    let body_err = || {
        SchedError::new(
            PRIM,
            format!(
                "the loop's body is not one reduction `{x}[...] += c * e` of the assigned buffer"
            ),
        )
        .at(l.stmt.span, describe(l.stmt))
    };
    let [red] = l.body else {
        return Err(body_err());
    };
    let StmtKind::Reduce {
        buf: x2,
        idx: j,
        rhs,
    } = &red.kind
    else {
        return Err(body_err());
    };
    if x2 != x {
        return Err(body_err());
    }
    let ExprKind::Binary(BinOp::Mul, c, e) = &rhs.kind else {
        return Err(SchedError::new(
            PRIM,
            format!("the value reduced, '{rhs}', is not a product `c * e`"),
        )
        .at(red.span, describe(red)));
    };
    if has_data_index(i) || has_data_index(j) {
        return Err(SchedError::new(
            PRIM,
            "an index is computed from data (clamp_index): the cell may differ between iterations",
        )
        .at(red.span, describe(red)));
    }
    require_not_instr_for_float(PRIM, p, float, s)?;
    // The same cell at every iteration.
    let red_at = lp_at.child(0, 0);
    let inner = a.scope_at(p, &red_at);
    require_same_cell(
        a,
        PRIM,
        &inner,
        i,
        j,
        || format!("the reduction may not be into the assigned cell of '{x}' at every iteration"),
        red,
    )?;
    if mentions(c, l.var) {
        return Err(SchedError::new(
            PRIM,
            format!("the factor '{c}' uses the loop variable '{}'", l.var),
        )
        .at(red.span, describe(red)));
    }
    let scope = a.scope_at(p, at);
    let cell = written_cell(a, PRIM, &scope, s)?;
    // `c`, evaluated at the assignment's place (it uses no loop variable), reads nothing of the
    // cell.
    let probe_c = Stmt::new(
        StmtKind::Assign {
            buf: x.clone(),
            idx: i.clone(),
            rhs: c.clone(),
        },
        red.span,
    );
    let reads_c = stmt_effects(a, &scope, &probe_c);
    require_no_read_of(
        a,
        PRIM,
        &scope.facts,
        &reads_c,
        &cell,
        || format!("the factor '{c}' reads the cell of '{x}' the loop accumulates into"),
        red,
    )?;
    // `e`, at any iteration, reads nothing of the cell.
    let new_red = Stmt::new(
        StmtKind::Reduce {
            buf: x.clone(),
            idx: j.clone(),
            rhs: e.clone(),
        },
        red.span,
    );
    let new_loop = keep_parallel(
        super::for_stmt(
            l.var.clone(),
            l.lo.clone(),
            l.hi.clone(),
            vec![new_red],
            l.stmt.span,
        ),
        l.parallel,
    );
    let reads_e = stmt_effects(a, &scope, &new_loop);
    require_no_read_of(
        a,
        PRIM,
        &scope.facts,
        &reads_e,
        &cell,
        || format!("'{e}' reads the cell of '{x}' the loop accumulates into"),
        red,
    )?;
    // The loop runs, or `c * 0` is harmless.
    let c_reads = reads_c
        .iter()
        .any(|r| r.kind == crate::effects::AccessKind::Read);
    if c_reads || float {
        let lo = term_at(a, PRIM, &scope, l.lo)?;
        let hi = term_at(a, PRIM, &scope, l.hi)?;
        require(
            a,
            PRIM,
            &scope.facts,
            &Term::lt(lo, hi),
            || {
                format!(
                    "the loop may not run, and then '{c} * 0' would be computed where it was not \
                     (the factor reads a buffer, or the sum is of floats)"
                )
            },
            l.stmt.span,
            describe(l.stmt),
        )?;
    }
    let read_cell = Expr::raw(
        ExprKind::Read {
            buf: x.clone(),
            idx: i.clone(),
        },
        elem,
        s.span,
    );
    let scale = Stmt::new(
        StmtKind::Assign {
            buf: x.clone(),
            idx: i.clone(),
            rhs: Expr::raw(
                ExprKind::Binary(BinOp::Mul, c.clone(), read_cell),
                elem,
                rhs.span,
            ),
        },
        red.span,
    );
    require_small(PRIM, &scale)?;
    Ok(Rewrite {
        proc: path::replace_range(p, at, 2, vec![s.clone(), new_loop, scale]),
        forward: Forward::replaced_range(at, 2, 3, |rel| Some(rel.to_vec())),
    })
}
