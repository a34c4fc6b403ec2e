//! `split_write`: split a write of a sum into a write of its first term and a reduction of the
//! second (Exo's `split_write`; the inverse of `merge_writes`).
//!
//! ```text
//! x[i] = a + b    ⇝   x[i] = a;   x[i] += b
//! x[i] += a + b   ⇝   x[i] += a;  x[i] += b
//! ```
//!
//! Conditions, proved with the solver (counterexample otherwise):
//! - the statement is an assignment or reduction of numbers (not `bool`) whose value is an
//!   addition `a + b`;
//! - no index is computed from data (`clamp_index`): the indices are evaluated twice, the second
//!   time after the first write;
//! - *`b` does not see the first write*: no read in `b` may touch the written cell (through
//!   another window of the buffer included). `b` is evaluated after the new first statement; the
//!   only location that changed is the cell.
//!
//! Why that suffices: `a` is evaluated before any write in both forms, and `b` reads what it read
//! before. For an assignment, the reduction then stores `a + b` (the cell holds `a`, and `+=`
//! adds its value to the cell's: the same operation on the same values) — exact. For a
//! reduction the result is `(x + a) + b` instead of `x + (a + b)`: exact on integers (wrapping
//! addition is associative), **a change of rounding on floats** — the reassociation DESIGN.md §2
//! leaves to the user and documents where it happens (here), as Exo does; refused in an
//! instruction's body. Error values propagate alike in both forms.

use super::expr_util::{
    access_parts, access_stmt, has_data_index, require_no_read_of, require_not_instr_for_float,
    stmt_effects, written_cell,
};
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_ir::{BinOp, DType, ExprKind, Ty};

const PRIM: &str = "split_write";

/// Split the assignment or reduction at `at`, whose value is `a + b`.
pub fn split_write(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let (x, i, rhs, reduce) = access_parts(PRIM, s)?;
    if rhs.ty == Ty::Data(DType::Bool) {
        return Err(
            SchedError::new(PRIM, "the buffer holds booleans, which do not add")
                .at(s.span, describe(s)),
        );
    }
    let ExprKind::Binary(BinOp::Add, va, vb) = &rhs.kind else {
        return Err(SchedError::new(
            PRIM,
            format!("the value '{rhs}' is not an addition `a + b`"),
        )
        .at(s.span, describe(s)));
    };
    if has_data_index(i) {
        return Err(SchedError::new(
            PRIM,
            "an index is computed from data (clamp_index): evaluated again after the first write, it may differ",
        )
        .at(s.span, describe(s)));
    }
    let float = matches!(rhs.ty, Ty::Data(d) if d.is_float());
    require_not_instr_for_float(PRIM, p, reduce && float, s)?;
    let scope = a.scope_at(p, at);
    let first = access_stmt(x, i, va.clone(), reduce, s.span);
    let second = access_stmt(x, i, vb.clone(), true, s.span);
    let cell = written_cell(a, PRIM, &scope, &first)?;
    let reads = stmt_effects(a, &scope, &second);
    require_no_read_of(
        a,
        PRIM,
        &scope.facts,
        &reads,
        &cell,
        || format!("'{vb}' reads the cell of '{x}' that the first part writes"),
        s,
    )?;
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![first, second]),
        forward: Forward::replaced(at, 2, |rel| Some(rel.to_vec())),
    })
}
