//! `bind_expr`: compute a data sub-expression into a new scalar buffer just before the statement
//! that uses it.
//!
//! ```text
//! b[idx] = rhs       ⇝   alloc x: T[] @ M;  x = e;  b[idx] = rhs[e ↦ x]
//! b[idx] += rhs      ⇝   alloc x: T[] @ M;  x = e;  b[idx] += rhs[e ↦ x]
//! ```
//!
//! Every occurrence in the right-hand side of an expression structurally equal to `e` (same
//! operators, symbols, constants and types; spans ignored) is replaced by a read of the new
//! rank-0 buffer `x`, whose element type `T` is `e`'s data type and whose memory `M` is given.
//!
//! Conditions: the statement is an assignment or a reduction; `e` is a data expression with at
//! least one occurrence in its right-hand side; `M` is addressable and imposes no innermost
//! dimension (a rank-0 buffer has none).
//!
//! Safety: `x = e` runs immediately before the statement, and nothing runs in between, so `e`
//! reads the same store there as it did inside the statement (the statement evaluates its
//! right-hand side before it writes, and its indices are control values that read no data).
//! Expressions have no effects, so every occurrence had the same value, which is now read from
//! `x` — error values (uninitialised cells) included, since they are stored and read back as
//! they are. The rewrite is therefore always an equivalence; `x` is a new symbol, so it captures
//! nothing.

use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use std::sync::Arc;
use weft_ir::{BufType, Const, Expr, ExprKind, Memory, Stmt, StmtKind, Sym, Ty, WinCoord};

const PRIM: &str = "bind_expr";

/// Bind the occurrences of `e` in the statement at `at` to a new scalar buffer `name` in `mem`.
pub fn bind_expr(
    _a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    e: &Expr,
    name: &str,
    mem: Arc<Memory>,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let (buf, idx, rhs, reduce) = match &s.kind {
        StmtKind::Assign { buf, idx, rhs } => (buf, idx, rhs, false),
        StmtKind::Reduce { buf, idx, rhs } => (buf, idx, rhs, true),
        _ => {
            return Err(
                SchedError::new(PRIM, "the statement is not an assignment or a reduction")
                    .at(s.span, what),
            )
        }
    };
    let Ty::Data(dtype) = e.ty else {
        return Err(SchedError::new(
            PRIM,
            format!("'{e}' is not a data expression (it has type {})", e.ty),
        )
        .at(s.span, what));
    };
    if !mem.addressable || mem.last_dim.is_some() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "memory {} cannot hold a scalar read and written directly",
                mem.name
            ),
        )
        .at(s.span, what));
    }
    super::require_new_names(PRIM, p, at, &[name])?;
    let x = Sym::new(name);
    let read_x = Expr::read(&x, dtype, vec![]);
    let mut count = 0;
    let new_rhs = replace_occurrences(rhs, e, &read_x, &mut count);
    if count == 0 {
        return Err(
            SchedError::new(PRIM, format!("'{e}' does not occur in the right-hand side"))
                .at(s.span, what),
        );
    }
    let span = s.span;
    let alloc = Stmt::new(
        StmtKind::Alloc {
            buf: x.clone(),
            ty: BufType {
                elem: dtype,
                shape: vec![],
                window: false,
                mem,
            },
        },
        span,
    );
    let init = Stmt::new(
        StmtKind::Assign {
            buf: x,
            idx: vec![],
            rhs: e.clone(),
        },
        span,
    );
    let kind = if reduce {
        StmtKind::Reduce {
            buf: buf.clone(),
            idx: idx.clone(),
            rhs: new_rhs,
        }
    } else {
        StmtKind::Assign {
            buf: buf.clone(),
            idx: idx.clone(),
            rhs: new_rhs,
        }
    };
    let new = vec![alloc, init, Stmt::new(kind, span)];
    let forward = Forward::replaced(at, 3, |rel| {
        let mut out = rel.to_vec();
        out[0] = Step { block: 0, index: 2 };
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, new),
        forward,
    })
}

/// `e` with every sub-expression structurally equal to `pat` replaced by `by`.
fn replace_occurrences(e: &Expr, pat: &Expr, by: &Expr, count: &mut usize) -> Expr {
    if same_expr(e, pat) {
        *count += 1;
        return by.clone();
    }
    let mut r = |x: &Expr| replace_occurrences(x, pat, by, count);
    let kind = match &e.kind {
        ExprKind::Read { buf, idx } => ExprKind::Read {
            buf: buf.clone(),
            idx: idx.iter().map(&mut r).collect(),
        },
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, r(a)),
        ExprKind::Binary(op, a, b) => {
            let a = r(a);
            ExprKind::Binary(*op, a, r(b))
        }
        ExprKind::Select(c, a, b) => {
            let c = r(c);
            let a = r(a);
            ExprKind::Select(c, a, r(b))
        }
        ExprKind::DataIndex { value, lo, hi } => {
            let value = r(value);
            let lo = r(lo);
            ExprKind::DataIndex {
                value,
                lo,
                hi: r(hi),
            }
        }
        ExprKind::Cast(t, a) => ExprKind::Cast(*t, r(a)),
        ExprKind::Math(f, args) => ExprKind::Math(*f, args.iter().map(&mut r).collect()),
        _ => return e.clone(),
    };
    Expr::raw(kind, e.ty, e.span)
}

/// Structural equality of expressions: same kinds, types, symbols and constants; spans ignored.
pub(crate) fn same_expr(a: &Expr, b: &Expr) -> bool {
    if a.ty != b.ty {
        return false;
    }
    let all = |xs: &[Expr], ys: &[Expr]| {
        xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_expr(x, y))
    };
    match (&a.kind, &b.kind) {
        (ExprKind::Const(x), ExprKind::Const(y)) => match (x, y) {
            (Const::Float(x), Const::Float(y)) => x.to_bits() == y.to_bits(),
            _ => x == y,
        },
        (ExprKind::Var(x), ExprKind::Var(y)) => x == y,
        (ExprKind::Read { buf: x, idx: i }, ExprKind::Read { buf: y, idx: j }) => {
            x == y && all(i, j)
        }
        (ExprKind::Unary(o, x), ExprKind::Unary(p, y)) => o == p && same_expr(x, y),
        (ExprKind::Binary(o, x1, x2), ExprKind::Binary(p, y1, y2)) => {
            o == p && same_expr(x1, y1) && same_expr(x2, y2)
        }
        (ExprKind::Select(c, x1, x2), ExprKind::Select(d, y1, y2)) => {
            same_expr(c, d) && same_expr(x1, y1) && same_expr(x2, y2)
        }
        (ExprKind::Cast(t, x), ExprKind::Cast(u, y)) => t == u && same_expr(x, y),
        (ExprKind::Math(f, xs), ExprKind::Math(g, ys)) => f == g && all(xs, ys),
        (ExprKind::Window { buf: x, coords: c }, ExprKind::Window { buf: y, coords: d }) => {
            x == y
                && c.len() == d.len()
                && c.iter().zip(d).all(|pair| match pair {
                    (WinCoord::Point(p), WinCoord::Point(q)) => same_expr(p, q),
                    (WinCoord::Interval(p1, p2), WinCoord::Interval(q1, q2)) => {
                        same_expr(p1, q1) && same_expr(p2, q2)
                    }
                    _ => false,
                })
        }
        (ExprKind::Stride { buf: x, dim: i }, ExprKind::Stride { buf: y, dim: j }) => {
            x == y && i == j
        }
        (
            ExprKind::ReadConfig {
                config: c,
                field: f,
            },
            ExprKind::ReadConfig {
                config: d,
                field: g,
            },
        ) => c.name == d.name && f == g,
        _ => false,
    }
}
