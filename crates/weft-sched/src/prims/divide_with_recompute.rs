//! `divide_with_recompute`: divide a loop into overlapping tiles, each recomputing the iterations
//! it shares with the next (Exo's `divide_with_recompute`).
//!
//! ```text
//! for i in lo..hi { s }
//!   ⇝  for io in 0..H { for ii in 0..c + R { s[i ↦ lo + c * io + ii] } }
//! ```
//!
//! where `H` (`outer_hi`) is a control expression over the names in scope at the loop, `c`
//! (`outer_stride`) an integer constant, `N = hi - lo` the trip count and `R = N - H * c` what the
//! `H` tiles of `c` iterations leave over (`lo + ` is left out when `lo` is 0; the inner bound is
//! written `c + (hi - lo - H * c)` and simplified, or `c` where `R = 0` is proved). Tile `io`
//! runs the iterations `lo + c·io .. lo + c·io + c + R`: consecutive tiles overlap by `R`, the
//! last one ends at `hi`, and the iterations of an overlap run twice and out of order (tile
//! `io + 1` starts again at `lo + c·(io + 1)` after tile `io` ran up to
//! `lo + c·(io + 1) + R - 1`). That suits stencils, where a tile computes its halo again instead of waiting for its
//! neighbour's. The work is the user's choice, as in Exo: the new loops run `H * (c + R)`
//! iterations, which a small `c` and a large `H` make about `N² / 4` (`H = N / 2`, `c = 1`);
//! nothing bounds it but the sizes.
//!
//! Conditions, each proved with the solver in the loop's context (the preconditions, the
//! enclosing loops and `if`s), with a counterexample otherwise:
//! 1. `c >= 1`. Any start `lo` is allowed (the iterations are offset by it).
//! 2. `R >= 0`: the tiles do not run past `hi`.
//! 3. Coverage: `0 <= H`, and `N > 0 ⇒ H > 0`. With 2, the iterations the new loops run are
//!    exactly `lo..hi`, each at least once (iteration `lo + k` is in tile `min(k / c, H - 1)`).
//!    Exo's condition lacks this: with `H = 0` and `N > 0` nothing runs, and a negative `H`
//!    (where `N = 0`) is a loop that runs backwards, an error in weft.
//! 4. Independence: no two different iterations touch one location unless both only read it,
//!    with reductions conflicting (two `+=` of one cell) and a config field one location: exactly
//!    the race condition `parallelize` proves ([`super::parallelize`]), calls summarised by their
//!    callees as written.
//! 5. Idempotence: within one iteration, the body reads no location it writes (another execution
//!    of the body, its inner loop variables renamed apart: a read before or after the write is
//!    refused alike), and it has no reductions (a `+=` reads what it writes); a config field
//!    written and read is refused like a cell. Buffers allocated inside the body are fresh in
//!    every execution (not effects), so per-iteration scratch space is allowed; a call counts
//!    with the effects of its callee's body as written. This is the condition of
//!    [`super::remove_loop::require_idempotent`], which also refuses a write whose location
//!    depends on a config value (more than this rewrite needs: such a field is not written by the
//!    loop, or the read conflicts with the write).
//!
//! Conditions 4 and 5 are proved only where tiles overlap, `R > 0` and `H >= 2`: elsewhere the
//! new loops run each iteration once, in the original order (where `R = 0` the rewrite is a
//! perfect split; where `H = 1`, one tile runs the whole loop; where `H = 0`, by 3, nothing was to
//! run).
//!
//! Why 4 and 5 suffice. Each iteration `x` is a function `f_x` on stores (memory and config
//! fields; weft has no other side effects, and control values never depend on data). By 5, an
//! iteration reads no location it writes, so a second run of it reads the values the first read
//! and writes the same values to the same locations: `f_x ∘ f_x = f_x`. By 4, different
//! iterations neither write one location nor read what the other writes, so
//! `f_x ∘ f_y = f_y ∘ f_x`. The new
//! loops run a sequence of the `f_x` in which, by 2 and 3, every `x` of `lo..hi` occurs and no
//! other; commuting it into the original order and dropping the repeats gives the original loop.
//! Neither condition alone suffices: `x[i] = x[i] + 1` satisfies 4, but an iteration that runs
//! twice adds 2; `x[i] = x[i + 1]` satisfies 5, but the second run of iteration `i` may come after
//! iteration `i + 1` overwrote the cell it reads.
//!
//! Also refused: a body that frees a buffer it did not allocate (a second run frees it again),
//! bounds `lo` or `hi` or an `H` that read a config field the body writes (the inner bound and
//! the index evaluate them again after iterations ran), names already in use. A parallel loop's
//! mark stays on the inner loop (a tile runs different iterations of the loop, which was proved
//! race-free; the step proves it again); the outer loop is sequential, since two tiles may write
//! one cell, even the same value, which is a race between threads. The new bounds must fit the
//! control-arithmetic rules (checked after every step).

use super::parallelize::prove_iterations_independent;
use super::remove_loop::require_idempotent_effects;
use super::{describe, for_stmt, ivar, keep_parallel, loop_at, nest_forward, require, term_at};
use super::{freed_from_outside, require_new_names, require_unwritten_by_body, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Path};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{BinOp, Expr, Sym};

const PRIM: &str = "divide_with_recompute";

/// Divide the loop at `at` into `outer_hi` tiles `outer` of `stride` iterations and the overlap,
/// run by the loop `inner`.
pub fn divide_with_recompute(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    outer_hi: &Expr,
    stride: i64,
    outer: &str,
    inner: &str,
) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    let (span, what) = (l.stmt.span, describe(l.stmt));
    require_new_names(PRIM, p, at, &[outer, inner])?;
    if stride < 1 {
        return Err(
            SchedError::new(PRIM, format!("the stride must be positive, got {stride}"))
                .at(span, what),
        );
    }
    if let Some(b) = freed_from_outside(l.body) {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the body frees '{b}', which it did not allocate: an iteration that runs twice \
                 would free it twice"
            ),
        )
        .at(span, what));
    }
    require_unwritten_by_body(
        a,
        PRIM,
        p,
        at,
        &l,
        &[l.lo, l.hi, outer_hi],
        "the loop bounds or the outer bound",
    )?;
    let scope = a.scope_at(p, at);
    let lo_t = term_at(a, PRIM, &scope, l.lo)?;
    let hi_t = term_at(a, PRIM, &scope, l.hi)?;
    let h_t = term_at(a, PRIM, &scope, outer_hi)?;
    let zero = || Term::Int(0);
    let n_t = Term::sub(hi_t, lo_t);
    let rem_t = Term::sub(n_t.clone(), Term::mul(h_t.clone(), Term::Int(stride)));
    let n_text = match l.lo.as_int_const() {
        Some(0) => l.hi.to_string(),
        _ => format!("{} - ({})", l.hi, l.lo),
    };
    let covered = Expr::binary(BinOp::Mul, outer_hi.clone(), Expr::int(stride));
    let bounds = [
        (
            Term::le(zero(), rem_t.clone()),
            format!(
                "{covered} may exceed the trip count {n_text}: the tiles would run past the \
                 loop's end (condition hi - lo - outer_hi * stride >= 0)"
            ),
        ),
        (
            Term::le(zero(), h_t.clone()),
            format!(
                "the outer bound {outer_hi} may be negative: the outer loop would run backwards"
            ),
        ),
        (
            Term::Or(vec![
                Term::not(Term::lt(zero(), n_t)),
                Term::lt(zero(), h_t.clone()),
            ]),
            format!(
                "the outer bound {outer_hi} may be 0 where the loop runs: no tile would run its \
                 iterations (coverage: hi > lo must imply outer_hi > 0)"
            ),
        ),
    ];
    for (goal, message) in bounds {
        require(a, PRIM, &scope.facts, &goal, || message, span, what.clone())?;
    }
    // Where the tiles overlap, iterations run out of order (4) and twice (5).
    let overlap = Term::And(vec![
        Term::lt(zero(), rem_t.clone()),
        Term::le(Term::Int(2), h_t.clone()),
    ]);
    prove_iterations_independent(
        a,
        p,
        at,
        PRIM,
        std::slice::from_ref(&overlap),
        "may conflict, and overlapping tiles run them out of order",
    )?;
    let mut body_scope = a.scope_at(p, &at.child(0, 0));
    body_scope.facts.push(overlap);
    let eff = a.effects_as_written(&body_scope, l.body);
    require_idempotent_effects(a, PRIM, &body_scope.facts, &eff, span, &what)?;

    let (io, ii) = (Sym::new(outer), Sym::new(inner));
    let c = Expr::int(stride);
    let times_c = |e: Expr| match stride {
        1 => e,
        _ => Expr::binary(BinOp::Mul, c.clone(), e),
    };
    let from_lo = |e: Expr| match l.lo.as_int_const() {
        Some(0) => e,
        _ => Expr::binary(BinOp::Add, l.lo.clone(), e),
    };
    let index = from_lo(Expr::binary(BinOp::Add, times_c(ivar(&io)), ivar(&ii)));
    let n = match l.lo.as_int_const() {
        Some(0) => l.hi.clone(),
        _ => Expr::binary(BinOp::Sub, l.hi.clone(), l.lo.clone()),
    };
    // Where the tiles never overlap, the inner loop runs `c` iterations.
    let extent = match a.prove(&scope.facts, &Term::eq(rem_t, zero())) {
        Ok(()) => c.clone(),
        Err(_) => {
            let rem = Expr::binary(BinOp::Sub, n, times_c(outer_hi.clone()));
            crate::simplify::expr(&Expr::binary(BinOp::Add, c.clone(), rem))
        }
    };
    let body = Subst::new().var(l.var, index).block(l.body);
    let tile = keep_parallel(for_stmt(ii, Expr::int(0), extent, body, span), l.parallel);
    let nest = for_stmt(io, Expr::int(0), outer_hi.clone(), vec![tile], span);
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, vec![nest]),
        forward: nest_forward(at, 1, 2),
    })
}
