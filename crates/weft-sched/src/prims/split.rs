//! `split`: divide a loop into an outer and an inner loop.
//!
//! ```text
//! for i in lo..hi { s }
//!   ⇝ for io in 0..N/c { for ii in 0..c { s[i ↦ lo + c*io + ii] } }          (N = hi - lo)
//! ```
//!
//! and the iterations that do not fill a whole inner loop, by tail strategy:
//! - [`Tail::Perfect`]: none; accepted only when `N % c == 0` is proved for every size allowed by
//!   the preconditions and enclosing loops (counterexample otherwise).
//! - [`Tail::Guard`]: the outer loop runs `(N + c - 1) / c` times and the body is guarded by
//!   `lo + c*io + ii < hi`.
//! - [`Tail::Cut`]: a second loop `for ii in 0..N%c { s[i ↦ lo + c*(N/c) + ii] }` after the
//!   main nest.
//! - [`Tail::CutAndGuard`]: the same, inside `if N % c > 0`.
//!
//! Safety: every strategy runs exactly the original iterations in the original order, so the
//! rewrite is an equivalence whenever the iteration sets agree. That holds unconditionally for
//! `Guard`; `Perfect` needs the divisibility proof; the cut strategies need `lo <= hi` to be
//! proved, because with Euclidean remainder a negative trip count would give the tail loop
//! iterations that the original never ran. The factor must be positive. Every strategy evaluates
//! `lo` again in the body (and `hi` in the guard or the tail loop's bounds), where the original
//! evaluated them once before the loop: the bounds must not read a config field the body writes.

use super::{for_stmt, ivar, loop_at, nest_forward, require, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Path};
use crate::subst::Subst;
use weft_check::smt::Term;
use weft_ir::{BinOp, Expr, Stmt, StmtKind, Sym};

const PRIM: &str = "split";

/// How `split` handles the iterations that do not fill a whole inner loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    Perfect,
    Guard,
    Cut,
    CutAndGuard,
}

impl Tail {
    pub fn from_name(s: &str) -> Option<Tail> {
        Some(match s {
            "perfect" => Tail::Perfect,
            "guard" => Tail::Guard,
            "cut" => Tail::Cut,
            "cut_and_guard" => Tail::CutAndGuard,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Tail::Perfect => "perfect",
            Tail::Guard => "guard",
            Tail::Cut => "cut",
            Tail::CutAndGuard => "cut_and_guard",
        }
    }
}

/// Split the loop at `at` by `factor` into loops named `outer` and `inner`.
pub fn split(
    a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    factor: i64,
    outer: &str,
    inner: &str,
    tail: Tail,
) -> Result<Rewrite, SchedError> {
    let l = loop_at(PRIM, p, at)?;
    super::require_new_names(PRIM, p, at, &[outer, inner])?;
    if factor <= 0 {
        return Err(
            SchedError::new(PRIM, format!("the factor must be positive, got {factor}"))
                .at(l.stmt.span, super::describe(l.stmt)),
        );
    }
    super::require_unwritten_by_body(a, PRIM, p, at, &l, &[l.lo, l.hi], "the loop bounds")?;
    let scope = a.scope_at(p, at);
    let lo_t = term_at(a, PRIM, &scope, l.lo)?;
    let hi_t = term_at(a, PRIM, &scope, l.hi)?;
    let n_t = Term::sub(hi_t.clone(), lo_t.clone());
    let span = l.stmt.span;
    let what = super::describe(l.stmt);
    match tail {
        Tail::Perfect => require(
            a,
            PRIM,
            &scope.facts,
            &Term::eq(
                Term::Mod(Box::new(n_t), Box::new(Term::Int(factor))),
                Term::Int(0),
            ),
            || {
                let n = if is_zero(l.lo) {
                    l.hi.to_string()
                } else {
                    format!("{} - ({})", l.hi, l.lo)
                };
                format!("a perfect split needs the trip count {n} to be divisible by {factor}")
            },
            span,
            what.clone(),
        )?,
        Tail::Cut | Tail::CutAndGuard => require(
            a,
            PRIM,
            &scope.facts,
            &Term::le(lo_t, hi_t),
            || format!("a cut tail needs {} <= {} to be proved", l.lo, l.hi),
            span,
            what.clone(),
        )?,
        Tail::Guard => {}
    }

    let io = Sym::new(outer);
    let ii = Sym::new(inner);
    let c = Expr::int(factor);
    let n = if is_zero(l.lo) {
        l.hi.clone()
    } else {
        Expr::binary(BinOp::Sub, l.hi.clone(), l.lo.clone())
    };
    let plus_lo = |e: Expr| {
        if is_zero(l.lo) {
            e
        } else {
            Expr::binary(BinOp::Add, l.lo.clone(), e)
        }
    };
    let index = plus_lo(Expr::binary(
        BinOp::Add,
        Expr::binary(BinOp::Mul, c.clone(), ivar(&io)),
        ivar(&ii),
    ));
    let body: Vec<Stmt> = Subst::new().var(l.var, index.clone()).block(l.body);
    let outer_hi = match tail {
        Tail::Guard => Expr::binary(
            BinOp::Div,
            Expr::binary(BinOp::Add, n.clone(), Expr::int(factor - 1)),
            c.clone(),
        ),
        _ => Expr::binary(BinOp::Div, n.clone(), c.clone()),
    };
    let inner_body = if tail == Tail::Guard {
        vec![Stmt::new(
            StmtKind::If {
                cond: Expr::binary(BinOp::Lt, index, l.hi.clone()),
                then_body: body,
                else_body: vec![],
            },
            span,
        )]
    } else {
        body
    };
    let nest = for_stmt(
        io,
        Expr::int(0),
        outer_hi,
        vec![for_stmt(ii, Expr::int(0), c.clone(), inner_body, span)],
        span,
    );
    let mut new = vec![nest];
    if matches!(tail, Tail::Cut | Tail::CutAndGuard) {
        let it = Sym::new(inner);
        let rem = Expr::binary(BinOp::Mod, n.clone(), c.clone());
        let start = plus_lo(Expr::binary(
            BinOp::Mul,
            c.clone(),
            Expr::binary(BinOp::Div, n, c.clone()),
        ));
        let tail_body = Subst::freshening()
            .var(l.var, Expr::binary(BinOp::Add, start, ivar(&it)))
            .block(l.body);
        let tail_loop = for_stmt(it, Expr::int(0), rem.clone(), tail_body, span);
        new.push(if tail == Tail::CutAndGuard {
            Stmt::new(
                StmtKind::If {
                    cond: Expr::binary(BinOp::Gt, rem, Expr::int(0)),
                    then_body: vec![tail_loop],
                    else_body: vec![],
                },
                span,
            )
        } else {
            tail_loop
        });
    }
    let depth = if tail == Tail::Guard { 3 } else { 2 };
    let count = new.len();
    Ok(Rewrite {
        proc: path::replace_stmt(p, at, new),
        forward: nest_forward(at, count, depth),
    })
}

fn is_zero(e: &Expr) -> bool {
    e.as_int_const() == Some(0)
}
