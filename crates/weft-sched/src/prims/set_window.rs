//! `set_window`: let a dense buffer parameter take any window (Exo's `set_window`).
//!
//! ```text
//! proc p(..., x: T[n...] @ M, ...) { s }   ⇝   proc p(..., x: [T][n...] @ M, ...) { s }
//! ```
//!
//! The body is unchanged; the parameter's strides become the caller's (a window of a larger
//! buffer, say) instead of the dense ones. A dense buffer is one window among those the proc now
//! takes, with the strides the body assumed, so on every argument the original accepted the
//! proc computes what it did: the rewrite is an equivalence there, and the proc accepts more.
//!
//! Condition: the new proc checks. The body may rely on the dense strides: pass `x` whole to a
//! callee's dense parameter, or meet a precondition such as `stride(x, 0) == 1` (an
//! instruction's unit-stride load) that only density proved. The whole proc is checked again
//! and the step refused with the checker's diagnostics.

use super::Rewrite;
use crate::error::SchedError;
use crate::path::Forward;
use std::sync::Arc;
use weft_ir::{ArgKind, Proc};

const PRIM: &str = "set_window";

/// Make the buffer parameter `name` of `p` a window parameter.
pub fn set_window(p: &Proc, name: &str) -> Result<Rewrite, SchedError> {
    let Some(k) = p.args.iter().position(|a| a.sym.name() == name) else {
        return Err(SchedError::new(
            PRIM,
            format!("proc '{}' has no parameter '{name}'", p.name),
        ));
    };
    let mut new = p.clone();
    match &mut new.args[k].kind {
        ArgKind::Buf(t) if t.window => {
            return Err(SchedError::new(
                PRIM,
                format!("parameter '{name}' is a window already"),
            ))
        }
        ArgKind::Buf(t) => t.window = true,
        ArgKind::Ctrl(_) => {
            return Err(SchedError::new(
                PRIM,
                format!("parameter '{name}' is not a buffer"),
            ))
        }
    }
    let new = Arc::new(new);
    if let Err(diags) = weft_check::check_procs(std::slice::from_ref(&new)) {
        let first = diags
            .iter()
            .map(|d| format!("{} (rule `{}`)", d.message, d.rule))
            .next()
            .unwrap_or_default();
        return Err(SchedError::new(
            PRIM,
            format!("with '{name}' a window the proc does not check: {first}"),
        ));
    }
    Ok(Rewrite {
        proc: new,
        forward: Forward::identity(),
    })
}
