//! `rename`: give the proc a new name.
//!
//! ```text
//! proc f(...) { s }  ⇝  proc g(...) { s }
//! ```
//!
//! Condition: the new name is an identifier (letters, digits and `_`, not starting with a
//! digit). The body is unchanged, so the rewrite is an equivalence and every statement keeps its
//! address.

use super::Rewrite;
use crate::error::SchedError;
use crate::path::Forward;
use std::sync::Arc;
use weft_ir::Proc;

const PRIM: &str = "rename";

/// The proc `p` named `name`.
pub fn rename(p: &Proc, name: &str) -> Result<Rewrite, SchedError> {
    if !weft_ir::print::usable_name(name) {
        return Err(SchedError::new(
            PRIM,
            format!("'{name}' is not a valid proc name"),
        ));
    }
    Ok(Rewrite {
        proc: Arc::new(Proc {
            name: name.to_string(),
            ..p.clone()
        }),
        forward: Forward::identity(),
    })
}
