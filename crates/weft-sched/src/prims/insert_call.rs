//! `insert_call`: insert, before a statement, a call of a proc whose body does nothing (an
//! instruction for the hardware alone, such as a cache prefetch).
//!
//! ```text
//! s   ⇝   f(w);  s          where f's body is `pass` only
//! ```
//!
//! Safety: `f`'s body changes no buffer and no config field, so running the call leaves every
//! value as it was and the proc computes what it computed. What an instruction's C template does
//! besides (`__builtin_prefetch` brings a line into the cache) is invisible to the program's
//! values; the library that declares it states so by the body `pass`. The call must be valid where
//! it stands, like any call, for every run that reaches it; each condition below is proved in
//! the statement's context (counterexample otherwise). A prefetch of the next iteration's data
//! must therefore clamp (or guard) its index where the last iteration would reach past the
//! buffer.
//!
//! Conditions:
//! - `f` has exactly one parameter, a buffer, and its body is `pass` statements only;
//! - the window's element type and memory are the parameter's, it keeps as many dimensions as
//!   the parameter has, each as long as the parameter's (`hi - lo` equal to its extent);
//! - the window lies inside its buffer: `0 <= lo <= hi <= extent` for an interval,
//!   `0 <= i < extent` for a point.
//!
//! Where the window is of a view (a `let` window) or of a buffer freed before the statement,
//! `f` has preconditions, its parameter is dense (not a window) or a memory has layout rules
//! (`last_dim`), the call is checked by weft-check on the new proc instead, which proves the
//! same and those rules.

use super::{describe, require, stmt_at, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Path};
use std::sync::Arc;
use weft_check::smt::Term;
use weft_ir::{ArgKind, BufType, Expr, ExprKind, Proc, Stmt, StmtKind, WinCoord};

const PRIM: &str = "insert_call";

/// Insert a call of `callee` on `window` before the statement at `at`.
pub fn insert_call(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    callee: &Arc<Proc>,
    window: &Expr,
) -> Result<Rewrite, SchedError> {
    let first = stmt_at(PRIM, p, at)?;
    let reject = |m: String| Err(SchedError::new(PRIM, m).at(first.span, describe(first)));
    if callee.args.len() != 1 || !matches!(callee.args[0].kind, ArgKind::Buf(_)) {
        return reject(format!(
            "'{}' must take exactly one argument, a buffer (it takes {})",
            callee.name,
            callee.args.len()
        ));
    }
    if let Some(s) = callee
        .body
        .iter()
        .find(|s| !matches!(s.kind, StmtKind::Pass))
    {
        return reject(format!(
            "the body of '{}' does something (`{}`): only a proc whose body is `pass` leaves \
             every value as it was",
            callee.name,
            describe(s)
        ));
    }
    let call = Stmt::new(
        StmtKind::Call {
            proc: callee.clone(),
            args: vec![window.clone()],
        },
        window.span,
    );
    let new = path::replace_stmt(p, at, vec![call, first.clone()]);
    let (ExprKind::Window { buf, coords }, ArgKind::Buf(param)) =
        (window.kind(), &callee.args[0].kind)
    else {
        return reject("the argument must be a window `A[i, lo:hi, ...]`".into());
    };
    // The solver's path covers a window parameter of a buffer in a memory without layout
    // rules; everything else is checked as a whole by the checker (dense parameters, memories
    // whose innermost dimension stays whole, views, preconditions).
    match super::buffer_at(p, at, |s| s == buf) {
        Some((_, bt))
            if callee.preds.is_empty()
                && param.window
                && bt.mem.last_dim.is_none()
                && param.mem.last_dim.is_none() =>
        {
            window_fits(a, p, at, first, buf.name(), &bt, coords, param)?
        }
        _ => super::check_new_call(a, PRIM, p, &new, at, callee, first)?,
    }
    Ok(Rewrite {
        proc: new,
        forward: super::inserted_before_forward(at),
    })
}

/// The window `name[coords]` of a buffer of type `bt` passes as the parameter `param` at `at`:
/// the same element type and memory, one interval per dimension of the parameter with its
/// extent, and everything inside the buffer, proved in context.
#[allow(clippy::too_many_arguments)]
fn window_fits(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    first: &Stmt,
    name: &str,
    bt: &BufType,
    coords: &[WinCoord],
    param: &BufType,
) -> Result<(), SchedError> {
    let what = describe(first);
    let fail = |m: String| SchedError::new(PRIM, m).at(first.span, what.clone());
    if bt.elem != param.elem || bt.mem.name != param.mem.name {
        return Err(fail(format!(
            "'{name}' holds {} in {}, the parameter {} in {}",
            bt.elem.name(),
            bt.mem.name,
            param.elem.name(),
            param.mem.name
        )));
    }
    let intervals = coords
        .iter()
        .filter(|c| matches!(c, WinCoord::Interval(..)))
        .count();
    if coords.len() != bt.rank() || intervals != param.rank() {
        return Err(fail(format!(
            "the window gives {} of the {} dimensions of '{name}' and keeps {intervals}; the \
             parameter has {}",
            coords.len(),
            bt.rank(),
            param.rank()
        )));
    }
    let scope = a.scope_at(p, at);
    let mut kept = param.shape.iter();
    for (k, c) in coords.iter().enumerate() {
        let ext = term_at(a, PRIM, &scope, &bt.shape[k])?;
        let (goal, text) = match c {
            WinCoord::Point(i) => {
                let t = term_at(a, PRIM, &scope, i)?;
                (
                    Term::And(vec![Term::le(Term::Int(0), t.clone()), Term::lt(t, ext)]),
                    format!(
                        "the index {i} of dimension {k} of '{name}' must lie in 0..{}",
                        bt.shape[k]
                    ),
                )
            }
            WinCoord::Interval(lo, hi) => {
                let want = kept
                    .next()
                    .expect("as many intervals as the parameter's rank");
                let (l, h, w) = (
                    term_at(a, PRIM, &scope, lo)?,
                    term_at(a, PRIM, &scope, hi)?,
                    term_at(a, PRIM, &scope, want)?,
                );
                (
                    Term::And(vec![
                        Term::le(Term::Int(0), l.clone()),
                        Term::le(l.clone(), h.clone()),
                        Term::le(h.clone(), ext),
                        Term::eq(Term::sub(h, l), w),
                    ]),
                    format!(
                        "the interval {lo}..{hi} of dimension {k} of '{name}' must lie in 0..{} and hold {want} elements",
                        bt.shape[k]
                    ),
                )
            }
        };
        require(
            a,
            PRIM,
            &scope.facts,
            &goal,
            || text,
            first.span,
            what.clone(),
        )?;
    }
    Ok(())
}
