//! `merge_writes`: merge a write and the write that follows it into the same cell into one
//! statement (Exo's `merge_writes`).
//!
//! ```text
//! x[i] = a;   x[j] = b     ⇝   x[i] = b[x[i] ↦ a]
//! x[i] = a;   x[j] += b    ⇝   x[i] = a + b[x[i] ↦ a]
//! x[i] += a;  x[j] = b     ⇝   x[i] = b[x[i] ↦ x[i] + a]
//! x[i] += a;  x[j] += b    ⇝   x[i] += a + b[x[i] ↦ x[i] + a]
//! ```
//!
//! `b[x[i] ↦ v]` is `b` with each read of the cell — a read of `x` (the same name) whose indices
//! are written like `i` or like `j`, or proved equal to `i` — replaced by `v`, the value the cell holds after the first
//! statement, written as an expression over the store before it.
//!
//! Conditions, each proved with the solver (counterexample otherwise):
//! - the statement and the next one in its block are assignments or reductions of the same
//!   buffer name, of numbers when the second is a reduction;
//! - they write the same cell: `j` is written like `i`, or the solver proves `i = j` from the
//!   facts at the statement; no index is computed from data (`clamp_index`), since the second
//!   statement's indices are evaluated after the first write;
//! - *no read of `b` left after the substitution may see the first write*: none touches the cell
//!   (through another window of the buffer included), so each reads in the merged statement what
//!   it read after the first statement.
//!
//! - the merged value stays within the IR's limits (height, and nodes counted as a tree: each
//!   replaced read is a copy of `v`, so repeated merges of `x = x * x` double the tree; rule
//!   `depth`).
//!
//! Why that suffices: between the two statements only the cell changed, and it holds `v`; so
//! `b[x[i] ↦ v]` evaluated before any write has the value `b` had. The merged statement's value
//! is then what the second stored: `b` for an assignment; for a reduction `v + b`, which is
//! `a + b` when the first assigned `a` (exact), and `(x + a) + b`, computed as `x + (a + b)`,
//! when both reduce. **That last case reassociates `+`**: exact on integers (wrapping addition is
//! associative), a change of rounding on floats — weft's documented choice, as in Exo and
//! DESIGN.md §2 (refused in an instruction's body). Every other case is exact. The reads of `a`
//! happen in both forms before any write. (When `b` does not use `v`, `a` is no longer
//! computed: expressions have no effects, and the value it wrote was overwritten.)

use super::expr_util::{
    access_parts, access_stmt, has_data_index, map_expr, require_no_read_of,
    require_not_instr_for_float, require_same_cell, require_small, stmt_effects, written_cell,
};
use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::prims::bind_expr::same_expr;
use weft_ir::{BinOp, Const, DType, Expr, ExprKind, Ty};

const PRIM: &str = "merge_writes";

/// Merge the assignment or reduction at `at` with the next statement.
pub fn merge_writes(a: &mut Analysis, p: &weft_ir::Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s1 = stmt_at(PRIM, p, at)?;
    let (x, i, va, red1) = access_parts(PRIM, s1)?;
    let Some(s2) = path::get(p, &at.sibling(at.last().index + 1)) else {
        return Err(
            SchedError::new(PRIM, "no statement follows in the block").at(s1.span, describe(s1))
        );
    };
    let (x2, j, vb, red2) = access_parts(PRIM, s2).map_err(|_| {
        SchedError::new(
            PRIM,
            "the next statement is not an assignment or a reduction",
        )
        .at(s2.span, describe(s2))
    })?;
    if x2 != x {
        return Err(SchedError::new(
            PRIM,
            format!("the two statements write different buffers ('{x}' and '{x2}')"),
        )
        .at(s1.span, describe(s1))
        .at(s2.span, describe(s2)));
    }
    let elem = va.ty;
    if (red1 || red2) && elem == Ty::Data(DType::Bool) {
        return Err(
            SchedError::new(PRIM, "the buffer holds booleans, which do not add")
                .at(s1.span, describe(s1)),
        );
    }
    if has_data_index(i) || has_data_index(j) {
        return Err(SchedError::new(
            PRIM,
            "an index is computed from data (clamp_index): the second statement's may differ after the first write",
        )
        .at(s1.span, describe(s1)));
    }
    let scope = a.scope_at(p, at);
    require_same_cell(
        a,
        PRIM,
        &scope,
        i,
        j,
        || "the two statements may write different cells".to_string(),
        s2,
    )?;
    let float = matches!(elem, Ty::Data(d) if d.is_float());
    require_not_instr_for_float(PRIM, p, red1 && red2 && float, s1)?;

    // The value of the cell after the first statement, over the store before it.
    let read_cell = Expr::raw(
        ExprKind::Read {
            buf: x.clone(),
            idx: i.to_vec(),
        },
        elem,
        s1.span,
    );
    let v = if red1 {
        Expr::raw(
            ExprKind::Binary(BinOp::Add, read_cell, va.clone()),
            elem,
            va.span,
        )
    } else {
        va.clone()
    };
    // The reads of the cell in `b`: reads of `x` whose indices are written like `i` or `j`, or
    // proved equal to `i`.
    let mut cells: Vec<Expr> = Vec::new();
    let mut reads_of_x: Vec<Expr> = Vec::new();
    weft_ir::visit::walk_expr(vb, &mut |e| {
        if matches!(&e.kind, ExprKind::Read { buf, .. } if buf == x) {
            reads_of_x.push(e.clone());
        }
    });
    for r in reads_of_x {
        let ExprKind::Read { idx, .. } = &r.kind else {
            unreachable!()
        };
        let written_alike = [i, j]
            .iter()
            .any(|k| k.len() == idx.len() && k.iter().zip(idx).all(|(p, q)| same_expr(p, q)));
        if written_alike
            || (!has_data_index(idx)
                && require_same_cell(a, PRIM, &scope, i, idx, String::new, s2).is_ok())
        {
            cells.push(r);
        }
    }
    let is_cell = |e: &Expr| cells.iter().any(|c| same_expr(c, e));
    let subst = |by: &Expr| {
        map_expr(vb, &mut |e| Ok(is_cell(e).then(|| by.with_span(e.span))))
            .expect("the substitution does not fail")
    };
    // The reads left: `b` with the replaced reads as a literal, as the second statement would
    // run at the first one's place.
    let placeholder = Expr::raw(
        ExprKind::Const(match elem {
            Ty::Data(d) if d.is_float() => Const::Float(0.0),
            Ty::Data(DType::Bool) => Const::Bool(false),
            _ => Const::Int(0),
        }),
        elem,
        vb.span,
    );
    let probe = access_stmt(x, i, subst(&placeholder), false, s2.span);
    let reads = stmt_effects(a, &scope, &probe);
    let cell = written_cell(a, PRIM, &scope, s1)?;
    require_no_read_of(
        a,
        PRIM,
        &scope.facts,
        &reads,
        &cell,
        || {
            format!(
                "the second statement reads the cell of '{x}' the first writes, other than as \
                 '{x}' with indices proved equal"
            )
        },
        s2,
    )?;

    let b2 = subst(&v);
    let merged = match (red1, red2) {
        (_, false) => access_stmt(x, i, b2, false, s1.span),
        (false, true) => access_stmt(
            x,
            i,
            Expr::raw(ExprKind::Binary(BinOp::Add, va.clone(), b2), elem, vb.span),
            false,
            s1.span,
        ),
        (true, true) => {
            // `b[x ↦ x + a]`: the substitution of `v` already holds the first reduction.
            access_stmt(
                x,
                i,
                Expr::raw(ExprKind::Binary(BinOp::Add, va.clone(), b2), elem, vb.span),
                true,
                s1.span,
            )
        }
    };
    // Each read of the cell in `b` becomes a copy of `v`: repeated merges grow the tree.
    require_small(PRIM, &merged)?;
    Ok(Rewrite {
        proc: path::replace_range(p, at, 2, vec![merged]),
        forward: Forward::replaced_range(at, 2, 1, |_| Some(vec![Step { block: 0, index: 0 }])),
    })
}
