//! Shared helpers for the interpreter tests.
#![allow(dead_code)]

use std::sync::Arc;
use weft_interp::{run, ArgValue, Buffer, ConfigState, InterpError};
use weft_ir::{Memory, Proc};

/// DRAM from the prelude (lib/std.weft).
pub fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

/// Run with a fresh config state.
pub fn run_fresh(p: &Proc, args: &mut [ArgValue]) -> Result<(), InterpError> {
    run(p, args, &mut ConfigState::default())
}

/// The buffer of argument `i`.
pub fn buf(args: &[ArgValue], i: usize) -> &Buffer {
    args[i].as_buffer().expect("argument is a buffer")
}
