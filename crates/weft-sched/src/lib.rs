//! weft's scheduling language: a schedule is a sequence of primitive rewrites of a proc, each
//! proved to preserve the proc's meaning (and so its memory safety) before it is accepted.
//!
//! - [`path`]: addresses of statements ([`Path`]) and how a rewrite forwards them ([`Forward`]).
//! - [`find`]: statements by pattern (`for i #1`, `C +=`, `alloc t`).
//! - [`effects`]: the effect analysis of the Exo paper, decided by z3.
//! - [`prims`]: one module per primitive, its condition stated in its doc comment.
//! - [`rewrite`]: the structural rewriter that substitutions and primitives specialise.
//! - [`Schedule`]: the Rust API — a proc, its versions, and cursors that survive rewrites.

mod changed;
pub mod effects;
pub mod error;
pub mod find;
mod lin;
pub mod path;
pub mod prims;
pub mod rewrite;
mod schedule;
pub mod script;
pub mod simplify;
pub mod subst;

pub use error::SchedError;
pub use path::{Forward, Path};
pub use prims::split::Tail;
pub use prims::Rewrite;
pub use schedule::{Cursor, Schedule};
