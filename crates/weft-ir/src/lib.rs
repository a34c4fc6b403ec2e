//! The weft proc IR.
//!
//! This crate is the hub of weft: front ends (the text parser, the Rust [`build`] API, later the
//! pipeline and tensor layers) produce it; the checker, the reference interpreter and the C
//! backend consume it. It depends on nothing else in weft.
//!
//! Design points (see `ARCHITECTURE.md` and `../shared/DESIGN.md` §1):
//! - Nodes are immutable and reference counted ([`Expr`], [`Stmt`] are `Arc`s), so a rewrite can
//!   build a new proc that shares every unchanged subtree with the old one.
//! - Symbols ([`Sym`]) are unique identities; two symbols with the same name are different
//!   variables. Structural equality (`==`) compares identities; [`alpha::alpha_eq_proc`] compares up
//!   to renaming, which is what `parse(print(p))` preserves.
//! - Construction never fails: constructors compute a best-effort type and coerce untyped literals
//!   to the type of the other operand. The checker (`weft-check`) is the authority on whether a
//!   proc is well typed and safe.

pub mod alpha;
pub mod build;
pub mod diag;
pub mod expr;
pub mod limits;
pub mod primitives;
pub mod print;
pub mod proc;
pub mod stmt;
pub mod sym;
pub mod types;
pub mod visit;

pub use diag::{Diagnostic, Label, Span};
pub use expr::{BinOp, Const, Expr, ExprKind, MathFn, UnOp, WinCoord};
pub use proc::{
    Arg, ArgKind, BufType, Config, ConfigField, Instr, Memory, Module, Origin, PipelineItem, Proc,
    SchedArg, SchedStep, SchedValue, ScheduleDecl, StepsItem,
};
pub use stmt::{Block, Stmt, StmtKind};
pub use sym::Sym;
pub use types::{CtrlType, DType, Ty};
