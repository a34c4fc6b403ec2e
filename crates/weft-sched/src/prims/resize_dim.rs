//! `resize_dim`: change the extent of one dimension of a local buffer and shift its indices
//! (Exo's `resize_dim`).
//!
//! ```text
//! alloc t: T[n0, ..., nd, ...] @ M;  s
//!   ⇝  alloc t: T[n0, ..., size, ...] @ M;  s[t[..., i, ...] ↦ t[..., i - offset, ...]]
//! ```
//!
//! Every read, write and reduction `t[..., i, ...]` (index `i` in dimension `d`) becomes
//! `t[..., i - offset, ...]`, and a window coordinate in dimension `d` (a point `i` or an interval
//! `lo:hi`) is shifted the same way. `i ↦ i - offset` is injective, so distinct cells stay
//! distinct and every access reads what the same access read before; only the buffer's extent
//! (and so the layout) changes.
//!
//! Conditions, each proved with the solver (counterexample otherwise):
//! - `d` is a dimension of `t`; `size` and `offset` are quasi-affine control expressions over names
//!   in scope at the allocation and read no config field (so they have the same value at every
//!   use of `t` as at the allocation: control names are immutable);
//! - `0 < size <= 2^31 - 1` at the allocation, and the resized buffer fits its memory's capacity;
//!   when the memory fixes the innermost extent (`last_dim`) and `d` is innermost, `size` is that
//!   constant;
//! - every use stays in bounds of the new extent, with the facts at the statement that uses it
//!   (enclosing loops and conditions): `0 <= i - offset < size` for an index or a window point,
//!   `0 <= lo - offset` and `hi - offset <= size` for a window interval;
//! - strides that code can see keep their value: no `stride(t, k)` with `k < d`, no window of the
//!   whole buffer and no window whose coordinate in a dimension `k < d` is an interval (their
//!   strides are products that include the extent of `d`).

use super::buf_uses::{reads_config, uses_after, Use};
use super::set_memory::alloc_at;
use super::{describe, require, term_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::Path;
use crate::rewrite::Rewriter;
use weft_check::smt::Term;
use weft_ir::{BinOp, BufType, Expr, Sym, WinCoord};

const PRIM: &str = "resize_dim";

/// Give dimension `dim` of the allocation at `at` the extent `size`, shifting its indices by
/// `-offset`.
pub fn resize_dim(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    dim: usize,
    size: &Expr,
    offset: &Expr,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    let r = site.ty.rank();
    if dim >= r {
        return Err(SchedError::new(
            PRIM,
            format!("'{t}' has {r} dimensions, not a dimension {dim}"),
        )
        .at(site.stmt.span, what));
    }
    for e in [size, offset] {
        if reads_config(e) {
            return Err(SchedError::new(
                PRIM,
                format!("'{e}' reads a config field, whose value may change while '{t}' is live"),
            )
            .at(site.stmt.span, what));
        }
    }
    if let Some(want) = site.ty.mem.last_dim {
        if dim + 1 == r && size.as_int_const() != Some(want) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "memory {} requires the innermost dimension of '{t}' to be the constant {want}, not {size}",
                    site.ty.mem.name
                ),
            )
            .at(site.stmt.span, what));
        }
    }
    let scope = a.scope_at(p, at);
    let size_t = term_at(a, PRIM, &scope, size)?;
    term_at(a, PRIM, &scope, offset)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::And(vec![
            Term::lt(Term::Int(0), size_t.clone()),
            Term::le(size_t, Term::Int(weft_ir::types::ENTRY_MAX)),
        ]),
        || {
            format!(
                "the new extent {size} may not lie in 1..={}",
                weft_ir::types::ENTRY_MAX
            )
        },
        site.stmt.span,
        what.clone(),
    )?;
    for (q, s, uses) in uses_after(&site, at, &t) {
        let inner = a.scope_at(p, &q);
        let off = term_at(a, PRIM, &inner, offset)?;
        let n = term_at(a, PRIM, &inner, size)?;
        for u in uses {
            let refuse = |m: String| {
                Err(SchedError::new(PRIM, m)
                    .at(s.span, describe(&s))
                    .at(site.stmt.span, what.clone()))
            };
            // (lower bound, upper bound, whether the upper bound is exclusive, the expression)
            let mut goals: Vec<(Expr, bool)> = Vec::new();
            match &u {
                Use::Access(idx) => {
                    if let Some(i) = idx.get(dim) {
                        goals.push((i.clone(), true));
                    }
                }
                Use::Stride(k) if *k < dim => {
                    return refuse(format!(
                        "stride({t}, {k}) includes the extent of dimension {dim}, which the step changes"
                    ))
                }
                Use::Stride(_) => {}
                Use::Window(coords) if coords.is_empty() => {
                    return refuse(format!(
                        "a window of the whole buffer '{t}' would change shape; write its coordinates"
                    ))
                }
                Use::Window(coords) => {
                    for (k, c) in coords.iter().enumerate() {
                        match c {
                            WinCoord::Interval(..) if k < dim => {
                                return refuse(format!(
                                    "a window of '{t}' spans dimension {k}, whose stride includes the extent of dimension {dim}, which the step changes"
                                ))
                            }
                            WinCoord::Point(i) if k == dim => goals.push((i.clone(), true)),
                            WinCoord::Interval(lo, hi) if k == dim => {
                                goals.push((lo.clone(), true));
                                goals.push((hi.clone(), false));
                            }
                            _ => {}
                        }
                    }
                }
            }
            for (i, exclusive) in goals {
                let it = term_at(a, PRIM, &inner, &i)?;
                let shifted = Term::sub(it, off.clone());
                let upper = if exclusive {
                    Term::lt(shifted.clone(), n.clone())
                } else {
                    Term::le(shifted.clone(), n.clone())
                };
                require(
                    a,
                    PRIM,
                    &inner.facts,
                    &Term::And(vec![Term::le(Term::Int(0), shifted), upper]),
                    || {
                        format!(
                            "{i} - ({offset}) may lie outside 0..{size} (dimension {dim} of '{t}')"
                        )
                    },
                    s.span,
                    describe(&s),
                )?;
            }
        }
    }
    let mut shape = site.ty.shape.clone();
    shape[dim] = size.clone();
    let ty = BufType {
        shape,
        ..site.ty.clone()
    };
    super::require_fits(a, PRIM, &scope, t.name(), &ty, site.stmt)?;
    let mut rw = Shifter { t: &t, dim, offset };
    Ok(site.retype(p, at, ty, &mut rw))
}

/// `e - offset`, folded when both are constants or the offset is 0.
fn shift(e: &Expr, offset: &Expr) -> Expr {
    match (e.as_int_const(), offset.as_int_const()) {
        (_, Some(0)) => e.clone(),
        (Some(x), Some(o)) if x.checked_sub(o).is_some() => Expr::int(x - o),
        _ => Expr::binary(BinOp::Sub, e.clone(), offset.clone()),
    }
}

struct Shifter<'a> {
    t: &'a Sym,
    dim: usize,
    offset: &'a Expr,
}

impl Rewriter for Shifter<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn access(&self, buf: &Sym, mut idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        if buf == self.t {
            if let Some(i) = idx.get_mut(self.dim) {
                *i = shift(i, self.offset);
            }
        }
        (buf.clone(), idx)
    }

    fn window(&self, buf: &Sym, mut coords: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        if buf == self.t {
            match coords.get_mut(self.dim) {
                Some(WinCoord::Point(i)) => *i = shift(i, self.offset),
                Some(WinCoord::Interval(lo, hi)) => {
                    *lo = shift(lo, self.offset);
                    *hi = shift(hi, self.offset);
                }
                None => {}
            }
        }
        (buf.clone(), coords)
    }
}
