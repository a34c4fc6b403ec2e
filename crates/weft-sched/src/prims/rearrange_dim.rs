//! `rearrange_dim`: permute the dimensions of a local buffer (Exo's `rearrange_dim`).
//!
//! ```text
//! alloc t: T[n0, ..., n(r-1)] @ M;  s
//!   ⇝  alloc t: T[n(π0), ..., n(π(r-1))] @ M;  s[t[i0, ..., i(r-1)] ↦ t[i(π0), ..., i(π(r-1))]]
//! ```
//!
//! New dimension `k` is old dimension `π(k)`. Every read, write and reduction of `t` has its
//! indices permuted, and so has every window of `t` (its coordinates, points and intervals).
//! The map between old and new cells is a bijection that the rewrite applies at every use, so
//! every access touches the cell it touched before and stays in bounds; only the layout (the
//! strides) changes.
//!
//! Conditions (all syntactic; `t` is an allocation, never an argument, whose layout the caller
//! sees):
//! - `π` is a permutation of `0..r`;
//! - when `t`'s memory fixes the innermost extent (`last_dim`), the new innermost extent is that
//!   constant;
//! - the layout is observable only through strides, so every stride that code can see must keep
//!   its value: `stride(t, d)` is allowed only when the dimensions after `d` are the same set
//!   before and after (then its value, the product of their extents, is the same), and so is every
//!   window of `t` whose coordinate in dimension `d` is an interval (the window's stride in that
//!   dimension is `t`'s; a callee or a `stride` of the window sees it). A window of the whole
//!   buffer (`t` passed as is) therefore requires the identity. Otherwise the step is refused,
//!   naming the statement.

use super::buf_uses::{uses_after, Use};
use super::set_memory::alloc_at;
use super::{describe, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::Path;
use crate::rewrite::Rewriter;
use weft_ir::{BufType, Expr, Sym, WinCoord};

const PRIM: &str = "rearrange_dim";

/// Permute the dimensions of the allocation at `at`: new dimension `k` is old dimension `perm[k]`.
pub fn rearrange_dim(
    _a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    perm: &[usize],
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    let r = site.ty.rank();
    if r == 0 {
        return Err(SchedError::new(
            PRIM,
            format!("'{t}' is a scalar: it has no dimensions to permute"),
        )
        .at(site.stmt.span, what));
    }
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..r).collect::<Vec<_>>() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "{perm:?} is not a permutation of the {r} dimensions of '{t}' (each of 0..{r} once)"
            ),
        )
        .at(site.stmt.span, what));
    }
    if let Some(want) = site.ty.mem.last_dim {
        let last = site.ty.shape[perm[r - 1]].as_int_const();
        if last != Some(want) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "memory {} requires the innermost dimension of '{t}' to be the constant {want}, which the permutation {perm:?} would not keep",
                    site.ty.mem.name
                ),
            )
            .at(site.stmt.span, what));
        }
    }
    // pos[d]: the new position of old dimension d.
    let mut pos = vec![0; r];
    for (k, &d) in perm.iter().enumerate() {
        pos[d] = k;
    }
    let keeps_stride = |d: usize| {
        let mut after: Vec<usize> = perm[pos[d] + 1..].to_vec();
        after.sort_unstable();
        after == (d + 1..r).collect::<Vec<_>>()
    };
    for (_, s, uses) in uses_after(&site, at, &t) {
        for u in uses {
            let bad = match &u {
                Use::Access(_) => None,
                Use::Stride(d) => (!keeps_stride(*d)).then(|| format!("stride({t}, {d})")),
                Use::Window(coords) if coords.is_empty() => {
                    (perm.iter().enumerate().any(|(k, &d)| k != d))
                        .then(|| "a window of the whole buffer".to_string())
                }
                Use::Window(coords) => coords
                    .iter()
                    .enumerate()
                    .find(|(d, c)| matches!(c, WinCoord::Interval(..)) && !keeps_stride(*d))
                    .map(|(d, _)| format!("a window spanning dimension {d}")),
            };
            if let Some(bad) = bad {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "{bad} of '{t}' sees the stride of a dimension whose stride the permutation {perm:?} changes"
                    ),
                )
                .at(s.span, describe(&s))
                .at(site.stmt.span, what));
            }
        }
    }
    let ty = BufType {
        shape: perm.iter().map(|&d| site.ty.shape[d].clone()).collect(),
        ..site.ty.clone()
    };
    let mut rw = Permuter {
        t: &t,
        perm,
        pos: &pos,
    };
    Ok(site.retype(p, at, ty, &mut rw))
}

struct Permuter<'a> {
    t: &'a Sym,
    perm: &'a [usize],
    pos: &'a [usize],
}

impl Rewriter for Permuter<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn access(&self, buf: &Sym, idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        if buf != self.t || idx.len() != self.perm.len() {
            return (buf.clone(), idx);
        }
        (
            buf.clone(),
            self.perm.iter().map(|&d| idx[d].clone()).collect(),
        )
    }

    fn window(&self, buf: &Sym, coords: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        if buf != self.t || coords.len() != self.perm.len() {
            return (buf.clone(), coords);
        }
        (
            buf.clone(),
            self.perm.iter().map(|&d| coords[d].clone()).collect(),
        )
    }

    fn stride(&self, buf: &Sym, dim: usize) -> (Sym, usize) {
        match self.pos.get(dim) {
            Some(&k) if buf == self.t => (buf.clone(), k),
            _ => (buf.clone(), dim),
        }
    }
}
