//! `expand_dim`: give an allocation a new leading dimension and index it at every use.
//!
//! ```text
//! alloc t: T[n...] @ M;  s   ⇝   alloc t: T[E, n...] @ M;  s[t[i...] ↦ t[x, i...]]
//! ```
//!
//! Every read, write and reduction `t[i...]` becomes `t[x, i...]`; a window `t[c...]` becomes
//! `t[x, c...]` (a whole-buffer window `t` becomes `t[x, 0:n0, ...]`), and `stride(t, d)` becomes
//! `stride(t, d + 1)` (the strides of the old dimensions do not change in row-major order).
//!
//! Conditions, each proved with the solver (counterexample otherwise):
//! - `E` and `x` are quasi-affine control expressions over names in scope at the allocation, and
//!   read no config field. Their values are therefore the same at every use of `t` as at the
//!   allocation (control names are immutable), so all uses of `t` touch the single slice `x`:
//!   `t[i...] ↦ t[x, i...]` is a bijection between the old cells and that slice, and every read
//!   sees what it saw before. This is the sound form of Exo's `expand_dim`, whose index is a
//!   variable of a loop enclosing the allocation (typically followed by `lift_alloc`).
//! - `0 < E <= 2^31 - 1` at the allocation (the new extent is positive and a size could be it), and the expanded buffer fits its
//!   memory's capacity (`max_bytes`, as the checker requires).
//! - `0 <= x < E` at every statement that uses `t` (with the facts that hold there: enclosing
//!   loops and conditions), so every new access is in bounds.
//! - The old shape reads no config field if `t` is used as a whole-buffer window (its extents are
//!   repeated at the use).

use super::inline_assign::reads_config;
use super::set_memory::alloc_at;
use super::{describe, require, term_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::Path;
use crate::rewrite::Rewriter;
use weft_check::smt::Term;
use weft_ir::{BufType, Expr, ExprKind, StmtKind, Sym, WinCoord};

const PRIM: &str = "expand_dim";

/// Add a leading dimension of extent `extent` to the allocation at `at`, indexed by `index`.
pub fn expand_dim(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    extent: &Expr,
    index: &Expr,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    for e in [extent, index] {
        if reads_config(e) {
            return Err(SchedError::new(
                PRIM,
                format!("'{e}' reads a config field, whose value may change while '{t}' is live"),
            )
            .at(site.stmt.span, what));
        }
    }
    let scope = a.scope_at(p, at);
    let ext_t = term_at(a, PRIM, &scope, extent)?;
    term_at(a, PRIM, &scope, index)?;
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::lt(Term::Int(0), ext_t.clone()),
        || format!("the new extent {extent} may not be positive"),
        site.stmt.span,
        what.clone(),
    )?;
    // An extent no size could be would make an allocation no call of the original makes.
    require(
        a,
        PRIM,
        &scope.facts,
        &Term::le(ext_t, Term::Int(weft_ir::types::ENTRY_MAX)),
        || {
            format!(
                "the new extent {extent} may exceed {}, the largest size",
                weft_ir::types::ENTRY_MAX
            )
        },
        site.stmt.span,
        what.clone(),
    )?;
    // Every statement after the allocation that uses `t` directly.
    let k = at.last().index;
    let depth = at.depth();
    let mut whole = false;
    for (q, s) in crate::find::all_stmts(p) {
        let inside = q.depth() >= depth
            && q.0[..depth - 1] == at.0[..depth - 1]
            && q.0[depth - 1].block == at.last().block
            && q.0[depth - 1].index > k;
        if !inside {
            continue;
        }
        let writes = matches!(&s.kind, StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } if *buf == t);
        let mut uses = writes;
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
                ExprKind::Read { buf, .. } | ExprKind::Stride { buf, .. } => uses |= *buf == t,
                ExprKind::Window { buf, coords } => {
                    uses |= *buf == t;
                    whole |= *buf == t && coords.is_empty();
                }
                _ => {}
            });
        }
        if !uses || matches!(s.kind, StmtKind::Free { .. }) {
            continue;
        }
        let inner = a.scope_at(p, &q);
        let (x, e) = (
            term_at(a, PRIM, &inner, index)?,
            term_at(a, PRIM, &inner, extent)?,
        );
        require(
            a,
            PRIM,
            &inner.facts,
            &Term::And(vec![Term::le(Term::Int(0), x.clone()), Term::lt(x, e)]),
            || format!("the index {index} may lie outside 0..{extent} at a use of '{t}'"),
            s.span,
            describe(s),
        )?;
    }
    if whole && site.ty.shape.iter().any(reads_config) {
        return Err(SchedError::new(
            PRIM,
            format!("'{t}' is used as a whole buffer and its shape reads a config field"),
        )
        .at(site.stmt.span, what));
    }
    let mut shape = vec![extent.clone()];
    shape.extend(site.ty.shape.iter().cloned());
    let ty = BufType {
        shape,
        ..site.ty.clone()
    };
    super::require_fits(a, PRIM, &scope, t.name(), &ty, site.stmt)?;
    let mut ex = Expander {
        t: &t,
        index,
        shape: &site.ty.shape,
    };
    Ok(site.retype(p, at, ty, &mut ex))
}

struct Expander<'a> {
    t: &'a Sym,
    index: &'a Expr,
    shape: &'a [Expr],
}

impl Rewriter for Expander<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn access(&self, buf: &Sym, idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        if buf != self.t {
            return (buf.clone(), idx);
        }
        let mut out = vec![self.index.clone()];
        out.extend(idx);
        (buf.clone(), out)
    }

    fn window(&self, buf: &Sym, coords: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        if buf != self.t {
            return (buf.clone(), coords);
        }
        let mut cs = vec![WinCoord::Point(self.index.clone())];
        if coords.is_empty() {
            cs.extend(
                self.shape
                    .iter()
                    .map(|n| WinCoord::Interval(Expr::int(0), n.clone())),
            );
        } else {
            cs.extend(coords);
        }
        (buf.clone(), cs)
    }

    fn stride(&self, buf: &Sym, dim: usize) -> (Sym, usize) {
        if buf == self.t {
            (buf.clone(), dim + 1)
        } else {
            (buf.clone(), dim)
        }
    }
}
