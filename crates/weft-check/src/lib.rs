//! The weft checker.
//!
//! [`check_module`] and [`check_proc`] decide whether a proc is well formed and statically safe:
//!
//! - **Types**: control values (sizes, indices, strides, conditions) and data values never mix
//!   without an explicit cast; control never depends on data; one precision per data
//!   expression; literals fit their type.
//! - **Quasi-affine control**: control arithmetic multiplies, divides and takes remainders by
//!   constants only, so every obligation is linear integer arithmetic.
//! - **Control arithmetic fits** ([`intervals`]): under the entry ranges (`size` arguments in
//!   `[1, 2^31 - 1]`, other control integers entering a proc in ±(2^31 - 1)), every control value
//!   and intermediate the program evaluates lies in the signed 64-bit range (rule `overflow`),
//!   values passed to callees and written to control config fields stay in the entry ranges
//!   (rule `range`), and every loop has `lo <= hi` (rule `extent`). [`check_control`] proves
//!   these alone, for procs built by scheduling rewrites.
//! - **Memory safety**: every read, write and window is in bounds, every allocation has a
//!   positive size, and every call satisfies the callee's argument shapes and preconditions, for
//!   *all* sizes satisfying the proc's preconditions. Obligations are decided by an SMT solver
//!   ([`smt`], z3 by default); a failure carries a counterexample.
//! - **Definedness** (`init`): every read of a local buffer reads a cell written before (rule
//!   `init`), and nothing is used after its `free`, directly or through a window.
//! - **Depth**: expressions and blocks stay within `weft_ir::limits` (rule `depth`).
//! - **Hardware rules**: non-addressable memories are touched only by instructions, memories'
//!   `last_dim` constraints hold (for buffers, and every window keeps that dimension whole), a
//!   memory's capacity (`max_bytes`) holds each allocation and all of a proc's allocations in it
//!   together (one stack frame), instruction templates name only their arguments.
//! - **Aliasing**: a call never passes overlapping regions of one buffer where the callee writes
//!   one of them, so the C backend may mark buffer parameters `restrict`.

mod check;
mod init;
pub mod intervals;
mod presolve;
pub mod smt;
pub mod terms;

pub use check::{
    check_control, check_module, check_proc, check_proc_but_init, check_procs,
    check_procs_trusting, check_stmt_but_init, writes_configs, CheckStats, Checker,
};
