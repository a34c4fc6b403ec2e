//! The weft reference interpreter: the oracle of every differential test.
//!
//! [`run`] executes a [`weft_ir::Proc`] on host values ([`ArgValue`]s), following DESIGN.md §2 and
//! the Exo core semantics (reference digest §4). It is deliberately simple: a tree walk over the IR
//! with an explicit data store, so that it can be trusted more than anything it is compared with.
//!
//! ```
//! use std::sync::Arc;
//! use weft_interp::{run, ArgValue, Buffer, ConfigState};
//! use weft_ir::build::ProcBuilder;
//! use weft_ir::{DType, Memory, Span};
//!
//! let dram = Arc::new(Memory {
//!     name: "DRAM".into(),
//!     header: String::new(),
//!     alloc: String::new(),
//!     free: String::new(),
//!     access: "{name}[{offset}]".into(),
//!     addressable: true,
//!     last_dim: None,
//!     max_bytes: None,
//!     isa: Vec::new(),
//!     dtypes: Vec::new(),
//!     span: Span::DUMMY,
//! });
//! let mut p = ProcBuilder::new("axpy", &dram);
//! let n = p.size("n");
//! let a = p.scalar("a", DType::F32);
//! let x = p.tensor("x", DType::F32, vec![n.clone()]);
//! let y = p.tensor("y", DType::F32, vec![n.clone()]);
//! p.body().for_("i", 0, &n, |b, i| {
//!     b.reduce(&y, vec![i.clone()], a.get() * x.at(vec![i.clone()]));
//! });
//! let proc = p.finish();
//!
//! let mut args = vec![
//!     ArgValue::Int(3),
//!     ArgValue::Buf(Buffer::from_f32(vec![], &[2.0])),
//!     ArgValue::Buf(Buffer::from_f32(vec![3], &[1.0, 2.0, 3.0])),
//!     ArgValue::Buf(Buffer::from_f32(vec![3], &[0.5, 0.5, 0.5])),
//! ];
//! run(&proc, &mut args, &mut ConfigState::default()).unwrap();
//! assert_eq!(args[3].as_buffer().unwrap().to_f32_vec(), Some(vec![2.5, 4.5, 6.5]));
//! ```
//!
//! # Semantics, as implemented
//!
//! - **Statements** run in order. `for i in lo..hi` evaluates `lo` and `hi` once, before the loop,
//!   and runs `i = lo, …, hi-1`; `lo == hi` runs zero times, and `hi < lo` (a negative extent)
//!   is an error (DESIGN.md §2; the checker proves `lo <= hi` of every loop, as Exo and Halide do).
//!   `alloc` creates a buffer with every cell uninitialised; the buffer lives until its `free` or
//!   the end of its block; any use after `free` is an error.
//! - **Windows** are views (storage, offset, strides, shape) into the data store, so a window
//!   aliases its source: writes through it are visible in the source, and a window of a window
//!   composes. `stride(buf, d)` is the view's stride along `d` in elements.
//! - **Calls** evaluate control arguments by value and buffer arguments as views (aliasing the
//!   caller's storage), check the callee's argument shapes and preconditions, then run the body in
//!   a fresh local environment over the same data store and [`ConfigState`]. Instructions are run
//!   by interpreting their body, which is their meaning.
//! - **Data arithmetic** is done in the data type: integers wrap; integer `/` and `%` are
//!   Euclidean (`div_euclid`/`rem_euclid`, wrapping for `MIN / -1`), with `x / 0 = 0` and
//!   `x % 0 = 0`; floats are IEEE in their own width; float `%` is an error. `min(a, b)` is
//!   `if a < b { a } else { b }` and `max(a, b)` is `if a > b { a } else { b }` (so a NaN in `a`
//!   yields `b`), matching the C the backend emits. Casts: int→int wraps, int→float rounds to
//!   nearest, float→int saturates with NaN→0 (Rust `as`; the C backend must match), bool→int is
//!   0/1, x→bool is `x != 0`. Math functions use Rust's `f32`/`f64` methods.
//! - **Control arithmetic** uses checked `i64`: an overflow is an error. Division and modulo are
//!   Euclidean with `x / 0 = 0`, `x % 0 = 0`. Control values entering a proc must lie in the entry
//!   range (`weft_ir::types::ENTRY_MAX`, docs/language.md §2): sizes in `[1, 2^31 - 1]`, `index`
//!   and `stride` arguments and the extents of buffer arguments in `±(2^31 - 1)`, the strides of
//!   window arguments too when the call comes from outside; a control config field written
//!   outside that range is an error.
//! - **Error values**: reading an uninitialised cell yields the error value (`None`), which every
//!   operation propagates (strictly; `select` propagates an error in its condition or in the
//!   branch it picks); writing it stores it. Control flow never depends on data, so a control
//!   expression that needs a data value is an [`InterpError`].
//! - **Errors** (an [`InterpError`], never a panic): wrong argument count or kind, a shape or dtype
//!   mismatch, a control value outside its entry range, a failed precondition, an out-of-bounds access, use of a
//!   freed buffer, control overflow, a negative loop extent, and ill-typed programs the checker
//!   should have rejected.

mod buffer;
mod interp;
mod random;
mod scalar;

pub use buffer::Buffer;
pub use random::{arg_shapes, random_args, random_args_full_range};
pub use scalar::{binary, math, unary, Cell, Scalar};

use std::collections::HashMap;
use std::fmt;
use weft_ir::{Proc, Span};

/// One argument of a proc, in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A size, index or stride argument.
    Int(i64),
    /// A control bool argument.
    Bool(bool),
    /// A tensor, window or rank-0 scalar argument, as a dense row-major buffer (a window parameter
    /// sees the buffer's dense strides). Results are written into it in place.
    Buf(Buffer),
}

impl ArgValue {
    /// The buffer of a `Buf` argument.
    pub fn as_buffer(&self) -> Option<&Buffer> {
        match self {
            ArgValue::Buf(b) => Some(b),
            _ => None,
        }
    }
}

/// The value of one config field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConfigValue {
    /// A size, index or stride field.
    Int(i64),
    /// A control bool field.
    Bool(bool),
    /// A data field (possibly the error value).
    Data(Cell),
}

/// The values of config fields, keyed by config name and field index: a context. It persists
/// across the [`run`] calls given it, like the context struct (`struct NS_context`) the generated
/// C's entry points take; a fresh one is a fresh context. An unwritten data field reads as the
/// error value; reading an unwritten control field is an [`InterpError`] (compiled code reads 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigState {
    values: HashMap<(String, usize), ConfigValue>,
}

impl ConfigState {
    /// The value of field `field` of config `config`, if it was written.
    pub fn get(&self, config: &str, field: usize) -> Option<ConfigValue> {
        self.values.get(&(config.to_string(), field)).copied()
    }

    /// Set field `field` of config `config`.
    pub fn set(&mut self, config: &str, field: usize, value: ConfigValue) {
        self.values.insert((config.to_string(), field), value);
    }
}

/// A run-time error: the program or its arguments are wrong. `span` is the place in the program
/// (dummy for errors about the arguments of the top-level call or nodes built without a source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterpError {
    pub message: String,
    pub span: Span,
}

impl InterpError {
    /// An error with a message at a place.
    pub fn new(message: impl Into<String>, span: Span) -> InterpError {
        InterpError {
            message: message.into(),
            span,
        }
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interpreter error: {}", self.message)
    }
}

impl std::error::Error for InterpError {}

/// Run `proc` on `args` (one per proc argument, in order), writing results into the argument
/// buffers in place. Config fields are read from and written to `configs`.
///
/// On error the argument buffers hold whatever the program wrote before the error.
pub fn run(
    proc: &Proc,
    args: &mut [ArgValue],
    configs: &mut ConfigState,
) -> Result<(), InterpError> {
    interp::run(proc, args, configs)
}
