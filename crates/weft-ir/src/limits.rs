//! Depth limits. Every pass over the IR (parser, checker, printer, interpreter, scheduling,
//! C emission) recurses over expression trees and nested blocks, so the depth of its input
//! must be bounded for a fixed stack. The parser rejects deeper text (rule `syntax`) and the
//! checker deeper IR from the builder API (rule `depth`); [`check_depth`] decides it without
//! recursion, for backends that may see unchecked IR.
//!
//! The limits are chosen so that every pass works on a 2 MiB thread stack (the default for Rust
//! threads, test threads included) in an unoptimised build, with both limits reached at once: see
//! `crates/weft/tests/depth_limits.rs`.

use crate::diag::{Diagnostic, Span};
use crate::expr::Expr;
use crate::proc::{ArgKind, Proc};
use crate::stmt::Block;
use crate::visit::{stmt_blocks, stmt_exprs};

/// The most levels of blocks nested in a proc's body (and, in the text form, of nested blocks
/// and parentheses together).
pub const MAX_NESTING: usize = 256;

/// The highest expression tree: nodes on the longest path from the root to a leaf. A flat chain
/// `a + b + c + ...` of `k` operands is `k` levels high.
pub const MAX_EXPR_DEPTH: u32 = 512;

/// The diagnostic for an expression higher than [`MAX_EXPR_DEPTH`], `None` when it is not.
pub fn expr_too_deep(e: &Expr, rule: &'static str, span: Span) -> Option<Diagnostic> {
    (e.height() > MAX_EXPR_DEPTH).then(|| {
        Diagnostic::new(
            rule,
            if e.span.is_dummy() { span } else { e.span },
            format!(
                "expression too deep: {} levels, the limit is {MAX_EXPR_DEPTH} (split it into several statements)",
                e.height()
            ),
        )
    })
}

/// Whether `p` keeps within the limits: no expression higher than [`MAX_EXPR_DEPTH`], no block
/// nested deeper than [`MAX_NESTING`]. The first violation is a diagnostic of rule `depth`.
/// Works without recursion, on any input.
pub fn check_depth(p: &Proc) -> Result<(), Diagnostic> {
    let rule = "depth";
    for a in &p.args {
        if let ArgKind::Buf(b) = &a.kind {
            for e in &b.shape {
                expr_too_deep(e, rule, a.span).map_or(Ok(()), Err)?;
            }
        }
    }
    for e in &p.preds {
        expr_too_deep(e, rule, p.span).map_or(Ok(()), Err)?;
    }
    // Blocks still to visit, with their nesting level (the body's is 0).
    let mut work: Vec<(&Block, usize)> = vec![(&p.body, 0)];
    while let Some((b, level)) = work.pop() {
        for s in b {
            for e in stmt_exprs(s) {
                expr_too_deep(e, rule, s.span).map_or(Ok(()), Err)?;
            }
            for inner in stmt_blocks(s) {
                if level + 1 > MAX_NESTING {
                    return Err(Diagnostic::new(
                        rule,
                        s.span,
                        format!("statements nested too deep: the limit is {MAX_NESTING} levels"),
                    ));
                }
                work.push((inner, level + 1));
            }
        }
    }
    Ok(())
}
