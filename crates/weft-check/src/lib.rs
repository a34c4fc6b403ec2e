//! The weft checker.
//!
//! [`check_module`] and [`check_proc`] decide whether a proc is well formed and statically safe:
//!
//! - **Types**: control values (sizes, indices, strides, conditions) and data values never mix
//!   without an explicit cast; control never depends on data; one precision per data
//!   expression; literals fit their type.
//! - **Quasi-affine control**: control arithmetic multiplies, divides and takes remainders by
//!   constants only, so every obligation is linear integer arithmetic.
//! - **Memory safety**: every read, write and window is in bounds, every allocation has a
//!   positive size, and every call satisfies the callee's argument shapes and preconditions, for
//!   *all* sizes satisfying the proc's preconditions. Obligations are decided by an SMT solver
//!   ([`smt`], z3 by default); a failure carries a counterexample.
//! - **Hardware rules**: non-addressable memories are touched only by instructions, memories'
//!   `last_dim` constraints hold, instruction templates name only their arguments.
//! - **Aliasing**: a call never passes overlapping regions of one buffer where the callee writes
//!   one of them, so the C backend may mark buffer parameters `restrict`.

mod check;
pub mod smt;
pub mod terms;

pub use check::{check_module, check_proc, check_procs, CheckStats, Checker};
