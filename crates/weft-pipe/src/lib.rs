//! weft's pipeline layer: Halide's algorithm language (funcs over all of Z^n, update stages over
//! reduction domains), and its reference interpreter, the oracle for the lowering and scheduling
//! of pipelines (issue 9). Specification: `../shared/reference/halide-formal-semantics.md`.
//!
//! So far: the algorithm's abstract syntax ([`ast`]), its validity rules ([`validate`]) and the
//! reference interpreter ([`interp`]).

pub mod ast;
pub mod interp;
pub mod validate;
