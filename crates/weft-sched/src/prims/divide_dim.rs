//! `divide_dim`: divide a dimension of an allocation by a constant into two dimensions.
//!
//! ```text
//! alloc t: T[n0, ..., nd, ...] @ M;  s
//!   ⇝  alloc t: T[n0, ..., nd / c, c, ...] @ M;  s[t[..., i, ...] ↦ t[..., i / c, i % c, ...]]
//! ```
//!
//! Every read, write and reduction `t[..., i, ...]` (index `i` in dimension `d`) becomes
//! `t[..., i / c, i % c, ...]`; a window coordinate that is a point `i` in dimension `d` becomes
//! the two points `i / c, i % c`; `stride(t, k)` becomes `stride(t, k + 1)` for `k >= d` (in
//! row-major order the new dimension `d + 1` has the old stride of `d`, and the dimensions after
//! it keep theirs). Constant indices are folded.
//!
//! Conditions:
//! - `d` is a dimension of `t` and `c >= 1`;
//! - when `t`'s memory fixes the innermost extent (`last_dim`, as `set_memory` checks) and `d` is
//!   the innermost dimension, `c` is that extent (the new innermost dimension has extent `c`; the
//!   other dimensions leave the innermost extent as it is);
//! - `nd` is divisible by `c`, proved with the solver in the allocation's context (its
//!   preconditions, enclosing loops and conditions), with a counterexample otherwise. Then for
//!   `0 <= i < nd` the map `i ↦ (i / c, i % c)` (Euclidean) is a bijection onto
//!   `[0, nd / c) × [0, c)`, and `c * (i / c) + i % c = i`, so every access touches the cell it
//!   touched before (at the same linear offset, even) and every access stays in bounds;
//! - no window of `t` takes an interval of dimension `d` or is the whole buffer (the view would
//!   change rank: a callee or a window name expects the old shape).

use super::set_memory::alloc_at;
use super::{describe, require, term_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::Path;
use crate::rewrite::Rewriter;
use weft_check::smt::Term;
use weft_ir::{BinOp, BufType, Expr, ExprKind, Proc, Stmt, Sym, WinCoord};

const PRIM: &str = "divide_dim";

/// Divide dimension `dim` of the allocation at `at` by `c`.
pub fn divide_dim(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    dim: usize,
    c: i64,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    if dim >= site.ty.rank() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{t}' has {} dimensions, not a dimension {dim}",
                site.ty.rank()
            ),
        )
        .at(site.stmt.span, what));
    }
    if c < 1 {
        return Err(
            SchedError::new(PRIM, format!("the factor {c} is not a positive constant"))
                .at(site.stmt.span, what),
        );
    }
    // A memory that fixes the innermost extent (as `set_memory` checks): dividing the innermost
    // dimension makes `c` the innermost extent.
    if let Some(want) = site.ty.mem.last_dim {
        let last = if dim + 1 == site.ty.rank() {
            Some(c)
        } else {
            site.ty.shape.last().and_then(Expr::as_int_const)
        };
        if last != Some(want) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "memory {} requires the innermost dimension of '{t}' to be the constant {want}, which dividing dimension {dim} by {c} would not keep",
                    site.ty.mem.name
                ),
            )
            .at(site.stmt.span, what));
        }
    }
    let n = &site.ty.shape[dim];
    let scope = a.scope_at(p, at);
    let nt = term_at(a, PRIM, &scope, n)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::eq(
            Term::Mod(Box::new(nt), Box::new(Term::Int(c))),
            Term::Int(0),
        ),
        || format!("the extent {n} of dimension {dim} of '{t}' may not be divisible by {c}"),
        site.stmt.span,
        what.clone(),
    )?;
    // Windows that would change rank.
    let rest: Vec<Stmt> = site.rest.to_vec();
    let mut bad = None;
    weft_ir::visit::walk_block(&rest, &mut |s| {
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| {
                if let ExprKind::Window { buf, coords } = &x.kind {
                    if *buf == t
                        && (coords.is_empty()
                            || matches!(coords.get(dim), Some(WinCoord::Interval(..))))
                    {
                        bad.get_or_insert_with(|| s.clone());
                    }
                }
            });
        }
    });
    if let Some(s) = bad {
        return Err(SchedError::new(
            PRIM,
            format!(
                "a window of '{t}' spans dimension {dim} (an interval, or the whole buffer), which would change its rank"
            ),
        )
        .at(s.span, describe(&s)));
    }

    let mut shape = site.ty.shape[..dim].to_vec();
    shape.push(div(n, c));
    shape.push(Expr::int(c));
    shape.extend(site.ty.shape[dim + 1..].iter().cloned());
    let ty = BufType {
        shape,
        ..site.ty.clone()
    };
    Ok(site.retype(p, at, ty, &mut Divider { t: &t, dim, c }))
}

/// `e / c`, folded for a constant `e`.
fn div(e: &Expr, c: i64) -> Expr {
    match e.as_int_const() {
        Some(v) => Expr::int(v.div_euclid(c)),
        None if c == 1 => e.clone(),
        None => Expr::binary(BinOp::Div, e.clone(), Expr::int(c)),
    }
}

/// `e % c`, folded for a constant `e`.
fn rem(e: &Expr, c: i64) -> Expr {
    match e.as_int_const() {
        Some(v) => Expr::int(v.rem_euclid(c)),
        None if c == 1 => Expr::int(0),
        None => Expr::binary(BinOp::Mod, e.clone(), Expr::int(c)),
    }
}

struct Divider<'a> {
    t: &'a Sym,
    dim: usize,
    c: i64,
}

impl Rewriter for Divider<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn access(&self, buf: &Sym, idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        if buf != self.t || idx.len() <= self.dim {
            return (buf.clone(), idx);
        }
        let mut out = idx[..self.dim].to_vec();
        out.push(div(&idx[self.dim], self.c));
        out.push(rem(&idx[self.dim], self.c));
        out.extend(idx[self.dim + 1..].iter().cloned());
        (buf.clone(), out)
    }

    fn window(&self, buf: &Sym, coords: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        if buf != self.t {
            return (buf.clone(), coords);
        }
        let mut out = Vec::new();
        for (k, w) in coords.into_iter().enumerate() {
            match w {
                WinCoord::Point(i) if k == self.dim => {
                    out.push(WinCoord::Point(div(&i, self.c)));
                    out.push(WinCoord::Point(rem(&i, self.c)));
                }
                other => out.push(other),
            }
        }
        (buf.clone(), out)
    }

    fn stride(&self, buf: &Sym, dim: usize) -> (Sym, usize) {
        if buf == self.t && dim >= self.dim {
            (buf.clone(), dim + 1)
        } else {
            (buf.clone(), dim)
        }
    }
}
