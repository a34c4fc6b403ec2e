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
//! Over `count` consecutive statements (Exo's binding of several occurrences), `x = e` runs
//! before the first and the occurrences in all of them read `x`.
//!
//! Conditions: the statements are assignments or reductions; `e` is a data expression with at
//! least one occurrence in their right-hand sides; `M` is addressable and imposes no innermost
//! dimension (a rank-0 buffer has none); over several statements, those before the last write
//! (or reduce into) no location `e` reads, proved with the effect analysis (counterexample
//! otherwise), so that `e` has at every occurrence the value it has before the first.
//!
//! Safety: `x = e` runs immediately before the statement, and nothing runs in between (or, over
//! several statements, nothing that writes what `e` reads), so `e` reads the same store there as
//! it did inside the statement (the statement evaluates its
//! right-hand side before it writes, and its indices are control values that read no data).
//! Expressions have no effects, so every occurrence had the same value, which is now read from
//! `x` — error values (uninitialised cells) included, since they are stored and read back as
//! they are. The rewrite is therefore always an equivalence; `x` is a new symbol, so it captures
//! nothing.

use super::{conflict_error, describe, stmt_at, Rewrite};
use crate::effects::{Analysis, Effects};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use std::sync::Arc;
use weft_ir::{BufType, Const, Expr, ExprKind, Memory, Stmt, StmtKind, Sym, Ty, WinCoord};

const PRIM: &str = "bind_expr";

/// Bind the occurrences of `e` in the `count` statements from `at` to a new scalar buffer `name`
/// in `mem`.
#[allow(clippy::too_many_arguments)]
pub fn bind_expr(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    e: &Expr,
    name: &str,
    mem: Arc<Memory>,
    count: usize,
) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let stmts: Vec<&Stmt> = (0..count.max(1))
        .map(|j| stmt_at(PRIM, p, &at.sibling(at.last().index + j)))
        .collect::<Result<_, _>>()?;
    for t in &stmts {
        if !matches!(t.kind, StmtKind::Assign { .. } | StmtKind::Reduce { .. }) {
            return Err(
                SchedError::new(PRIM, "the statement is not an assignment or a reduction")
                    .at(t.span, describe(t)),
            );
        }
    }
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
    let mut found = 0;
    let new_stmts: Vec<Stmt> = stmts
        .iter()
        .map(|t| {
            let kind = match &t.kind {
                StmtKind::Assign { buf, idx, rhs } => StmtKind::Assign {
                    buf: buf.clone(),
                    idx: idx.clone(),
                    rhs: replace_occurrences(rhs, e, &read_x, &mut found),
                },
                StmtKind::Reduce { buf, idx, rhs } => StmtKind::Reduce {
                    buf: buf.clone(),
                    idx: idx.clone(),
                    rhs: replace_occurrences(rhs, e, &read_x, &mut found),
                },
                _ => unreachable!("checked above"),
            };
            Stmt::new(kind, t.span)
        })
        .collect();
    if found == 0 {
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
    // Over several statements: those before the last write nothing `e` reads, so every
    // occurrence still has the value computed before the first.
    if stmts.len() > 1 {
        let scope = a.scope_at(p, at);
        let mine = a.effects(&scope, std::slice::from_ref(&init));
        let before: Vec<Stmt> = stmts[..stmts.len() - 1]
            .iter()
            .map(|t| (*t).clone())
            .collect();
        let writes = Effects {
            accesses: a.effects(&scope, &before).writes().cloned().collect(),
        };
        if let Some(c) = a.conflict(&scope.facts, &[], &mine, &writes, false) {
            return Err(conflict_error(
                PRIM,
                format!("a statement before the last writes a location '{e}' reads"),
                c,
            ));
        }
    }
    let n = new_stmts.len();
    let mut new = vec![alloc, init];
    new.extend(new_stmts);
    let forward = Forward::replaced_range(at, n, n + 2, |rel| {
        let mut out = rel.to_vec();
        out[0] = Step {
            block: 0,
            index: rel[0].index + 2,
        };
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_range(p, at, n, new),
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
