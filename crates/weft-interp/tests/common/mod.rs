//! Shared helpers for the interpreter tests.
#![allow(dead_code)]

use std::sync::Arc;
use weft_interp::{run, ArgValue, Buffer, ConfigState, InterpError};
use weft_ir::{Memory, Proc, Span};

/// The DRAM memory of lib/std.weft, written out literally.
pub fn dram() -> Arc<Memory> {
    Arc::new(Memory {
        name: "DRAM".into(),
        header: "#include <stdlib.h>".into(),
        alloc: "{type} *{name} = ({type} *) malloc((size_t) ({size}) * sizeof({type}));".into(),
        free: "free({name});".into(),
        access: "{name}[{offset}]".into(),
        addressable: true,
        last_dim: None,
        span: Span::DUMMY,
    })
}

/// Run with a fresh config state.
pub fn run_fresh(p: &Proc, args: &mut [ArgValue]) -> Result<(), InterpError> {
    run(p, args, &mut ConfigState::default())
}

/// The buffer of argument `i`.
pub fn buf(args: &[ArgValue], i: usize) -> &Buffer {
    args[i].as_buffer().expect("argument is a buffer")
}
