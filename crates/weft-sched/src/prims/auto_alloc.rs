//! `autolift_alloc` and `autosink_alloc`: move an allocation out of (into) several loops or `if`s
//! in one step (Exo's `autolift_alloc`, and the repeated `sink_alloc` Exo's schedules write by
//! hand). Both are sequences of primitives that each prove their own condition; the step is
//! all or nothing ([`crate::Schedule`] takes back the levels already done when one is refused).
//!
//! `autolift_alloc(alloc, n)`, at each of `n` levels, out of the statement directly around the
//! allocation:
//!
//! ```text
//! for i in lo..hi { alloc t: T[s...]; ... t[x...] ... }
//!   ⇝ (expand_dim)  for i in lo..hi { alloc t: T[hi - lo, s...]; ... t[i - lo, x...] ... }
//!   ⇝ (lift_alloc)  alloc t: T[hi - lo, s...]; for i in lo..hi { ... t[i - lo, x...] ... }
//! ```
//!
//! (`hi` and `i` when `lo` is 0). Each iteration keeps a slice of its own, so what `lift_alloc`
//! requires (no iteration reads a cell an earlier one wrote) holds whenever the iterations did not
//! share the buffer: the conditions are those of [`super::expand_dim`] (the extent `hi - lo` is
//! positive and fits the memory, the index lies in it; the loop bounds read no config field)
//! then [`super::lift_alloc`] (the shape does not depend on the loop, ...). Out of an `if`, the
//! allocation is lifted as it is ([`super::lift_alloc`]'s case for an `if`).
//!
//! `autosink_alloc(alloc)`: [`super::sink_alloc`] as many times as it is accepted (at least once;
//! each time into the loop or `if` right after the allocation, the only statement that uses it).

use super::{ivar, Loop};
use weft_ir::{BinOp, Expr};

/// The extent and index of the dimension that gives each iteration of `l` its own slice:
/// `hi - lo` and `i - lo` (`hi` and `i` when `lo` is 0).
pub(crate) fn per_iteration(l: &Loop) -> (Expr, Expr) {
    match l.lo.as_int_const() {
        Some(0) => (l.hi.clone(), ivar(l.var)),
        _ => (
            Expr::binary(BinOp::Sub, l.hi.clone(), l.lo.clone()),
            Expr::binary(BinOp::Sub, ivar(l.var), l.lo.clone()),
        ),
    }
}
