//! weft's pipeline layer: Halide's algorithm language (funcs over all of Z^n, update stages over
//! reduction domains), its reference interpreter, its scheduling directives and their lowering
//! into weft procs with bounds inference (issue 9). Specification:
//! `../shared/reference/halide-formal-semantics.md`.
//!
//! - [`ast`]: the algorithm's abstract syntax; [`validate`]: its validity rules;
//! - [`interp`]: the reference interpreter, the oracle of everything below;
//! - [`schedule`]: the directives, each checked for its legality rule;
//! - [`lower`]: lowering into a weft proc, with bounds inference on [`cexpr`]'s symbolic
//!   control expressions.

pub mod ast;
pub mod cexpr;
pub mod interp;
pub mod lower;
pub mod parse;
pub mod schedule;
pub mod script;
pub mod validate;
