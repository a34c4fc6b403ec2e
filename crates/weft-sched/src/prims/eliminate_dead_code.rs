//! `eliminate_dead_code`: remove what can never run.
//!
//! ```text
//! if c { s1 } else { s2 }  ⇝  s1      (c proved true in context)
//! if c { s1 } else { s2 }  ⇝  s2      (c proved false in context)
//! for x in lo..hi { s }    ⇝  (nothing)   (hi <= lo proved in context)
//! ```
//!
//! Condition: the solver proves, from the facts at the statement (preconditions, positive sizes,
//! enclosing loop bounds and conditions), that the condition always has the value whose branch is
//! kept, or that the loop runs zero times. Conditions and bounds are control expressions, whose
//! evaluation has no effect, so dropping the code that cannot run is an equivalence. When neither
//! holds the step is rejected with a counterexample for each alternative. Typical use: the empty
//! tails that `split` with a constant trip count leaves (`for t in 0..4 % 32` runs four times,
//! but `for o in 0..4 / 32` never runs).

use super::{describe, require, stmt_at, term_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use weft_check::smt::Term;
use weft_ir::{Proc, StmtKind};

const PRIM: &str = "eliminate_dead_code";

/// Remove the dead loop, or the dead branch of the `if`, at `at`.
pub fn eliminate_dead_code(a: &mut Analysis, p: &Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let scope = a.scope_at(p, at);
    match &s.kind {
        StmtKind::For { lo, hi, .. } => {
            let (l, h) = (term_at(a, PRIM, &scope, lo)?, term_at(a, PRIM, &scope, hi)?);
            require(
                a,
                PRIM,
                &scope.facts,
                &Term::le(h, l),
                || format!("the loop may run ({lo} < {hi} is possible)"),
                s.span,
                what,
            )?;
            let forward = Forward::replaced(at, 0, |_| None);
            Ok(Rewrite {
                proc: path::replace_stmt(p, at, vec![]),
                forward,
            })
        }
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => {
            let c = term_at(a, PRIM, &scope, cond)?;
            let keep_then = a.prove(&scope.facts, &c);
            let (kept, block) = match keep_then {
                Ok(()) => (then_body, 0),
                Err(cex_true) => match a.prove(&scope.facts, &Term::not(c)) {
                    Ok(()) => (else_body, 1),
                    Err(cex_false) => {
                        return Err(SchedError::new(
                            PRIM,
                            format!("the condition '{cond}' may be true and may be false"),
                        )
                        .at(s.span, what)
                        .with_counterexample(cex_true.into_iter().chain(cex_false).collect()))
                    }
                },
            };
            let n = kept.len();
            let forward = Forward::replaced(at, n, move |rel| {
                if rel.len() < 2 || rel[1].block != block {
                    None
                } else {
                    let mut out = rel[1..].to_vec();
                    out[0].block = 0;
                    Some(out)
                }
            });
            Ok(Rewrite {
                proc: path::replace_stmt(p, at, kept.clone()),
                forward,
            })
        }
        _ => Err(SchedError::new(PRIM, "expected a loop or an `if`").at(s.span, what)),
    }
}
