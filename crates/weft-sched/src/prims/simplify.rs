//! `simplify`: normalise every control expression of the proc (see [`crate::simplify`]): affine
//! expressions become a canonical sum of terms, constants fold. An identity on values, so always
//! accepted; statement addresses do not change.

use super::Rewrite;
use crate::path::Forward;
use std::sync::Arc;
use weft_ir::Proc;

pub fn simplify(p: &Proc) -> Rewrite {
    Rewrite {
        proc: Arc::new(Proc {
            body: crate::simplify::block(&p.body),
            ..p.clone()
        }),
        forward: Forward::identity(),
    }
}
