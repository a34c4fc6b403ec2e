//! `stage_mem`: run a block on a copy of a rectangular region of a buffer, held in a new buffer
//! (typically a faster memory or a small tile the C compiler keeps in registers).
//!
//! ```text
//! s   ⇝   alloc T: t[h0 - l0, ...] @ M;
//!         for a0 in 0..h0 - l0 { ... T[a0, ...] = A[l0 + a0, ...]; }      (copy in)
//!         s[A[e0, ...] ↦ T[e0 - l0, ...]];
//!         for a0 in 0..h0 - l0 { ... A[l0 + a0, ...] = T[a0, ...]; }      (copy out, if s writes A)
//!         free T;
//! ```
//!
//! Conditions, each proved in the block's context (counterexample otherwise):
//! - every access of `A` in `s` lies in the region `l_k <= e_k < h_k` (so `T` is indexed in
//!   bounds and the copies carry every value `s` uses or produces);
//! - where the region may leave `A` (`l_k < 0` or `h_k > extent_k` is possible), the copies are
//!   guarded: a cell is copied in and out only where it lies inside `A` (`a_k < extent_k - l_k`,
//!   `a_k >= -l_k`, in that form so that a masked instruction's `if i < N` matches it), and every
//!   access of `A` in `s` is proved to lie inside `A` as well as in the region; the tile's cells
//!   outside `A` get zeros on the way in (`else T[..] = 0`: a zero-masking load) and are never
//!   read by `s` or written back (Exo's staging of edge tiles that masked loads and stores then
//!   move). Giving cells that nothing reads a value changes no result;
//! - the region is not empty (`l_k < h_k`), so `T` has a positive size;
//! - `T` fits its memory's capacity (`max_bytes`, as the checker requires);
//! - `s` uses `A` only by reads, writes and reductions, not in windows or call arguments, and
//!   `s` does not free it;
//! - `s` uses no other name for `A`'s memory (a window of `A` bound before `s`, or the buffer `A`
//!   is a window of): accesses through it would miss the copy.
//!
//! The copy-in runs whatever `s` does, and the copy-out copies back the whole region, so cells of
//! the region that `s` does not write get back the values they had: the rewrite is an equivalence,
//! reductions included (no reassociation).
//!
//! Accumulate mode (Exo's `accum=True`): where `s` only reduces into the region (`A[e] += v`, no
//! read and no plain write of `A`), the tile starts at zero (-0.0 for floats, the identity of
//! addition) instead of a copy, and the copy-out adds it in (`A[l + a] += T[a]`): `A` is read
//! once, after `s`. Every cell ends as its value plus the sum of what `s` added, summed apart
//! first: for integers (wrapping) the same value, for floats a reassociation of the reduction,
//! which weft's analyses allow for `+=` (as Exo's do) and which the user chooses by naming this
//! mode.
//!
//! The region's bounds are evaluated before `s`, in the
//! shifted accesses inside `s` and in the copy-out after it: they must read no config field that
//! `s` writes (the only control state code can change), so that every evaluation gives one value.

use super::{describe, for_stmt, ivar, require, stmt_at, term_at, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use crate::rewrite::Rewriter;
use std::sync::Arc;
use weft_check::smt::Term;
use weft_ir::{BinOp, BufType, Expr, ExprKind, Memory, Proc, Stmt, StmtKind, Sym};

const PRIM: &str = "stage_mem";

/// How the tile is filled and written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staging {
    /// Copied in before the block and out after it (where the block writes the buffer).
    Copy,
    /// Zeros in; added to the buffer after the block (the block only reduces into it).
    Accumulate,
}

/// Stage the region `lo[k]..hi[k]` of buffer `buf` into a new buffer `name` in memory `mem`
/// around the `len` statements starting at `at`, filled and written back as `mode` says.
#[allow(clippy::too_many_arguments)]
pub fn stage_mem(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    len: usize,
    buf: &str,
    region: &[(Expr, Expr)],
    name: &str,
    mem: Arc<Memory>,
    mode: Staging,
) -> Result<Rewrite, SchedError> {
    let first = stmt_at(PRIM, p, at)?;
    super::require_new_names(PRIM, p, at, &[name])?;
    let block: Vec<Stmt> = (0..len.max(1))
        .map(|k| stmt_at(PRIM, p, &at.sibling(at.last().index + k)).cloned())
        .collect::<Result<_, _>>()?;
    let what = describe(first);
    let (sym, bt) = buffer_in_scope(p, at, buf).ok_or_else(|| {
        SchedError::new(PRIM, format!("no buffer named '{buf}' is in scope here"))
            .at(first.span, what.clone())
    })?;
    if bt.rank() != region.len() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{buf}' has {} dimensions but the region gives {}",
                bt.rank(),
                region.len()
            ),
        )
        .at(first.span, what));
    }
    // Only plain accesses.
    let mut bad = None;
    weft_ir::visit::walk_block(&block, &mut |s| {
        let hit = match &s.kind {
            StmtKind::Call { args, .. } => args.iter().any(|e| mentions(e, &sym)),
            StmtKind::Window { rhs, .. } => mentions(rhs, &sym),
            StmtKind::Free { buf } => *buf == sym,
            _ => false,
        };
        if hit && bad.is_none() {
            bad = Some(s.clone());
        }
    });
    if let Some(s) = bad {
        return Err(SchedError::new(
            PRIM,
            format!("the block passes '{buf}' to a call, a window or a free; stage_mem rewrites only reads, writes and reductions"),
        )
        .at(s.span, describe(&s)));
    }

    // No other name for the same memory: a window of `A` bound before the block (or `A`'s own
    // root, when `A` is a window) would bypass the copy, and the copy-out would overwrite what it
    // wrote.
    let scope = a.scope_at(p, at);
    let bounds: Vec<&Expr> = region.iter().flat_map(|(lo, hi)| [lo, hi]).collect();
    if !super::config_reads(&bounds).is_empty() {
        let eff = a.effects(&scope, &block);
        super::require_unwritten_configs(
            PRIM,
            &bounds,
            &eff,
            "the region's bounds",
            "the block",
            first,
        )?;
    }
    if let Some(root) = scope.root_of(&sym) {
        let mut alias = None;
        weft_ir::visit::walk_block(&block, &mut |s| {
            let mut names: Vec<Sym> = match &s.kind {
                StmtKind::Assign { buf, .. }
                | StmtKind::Reduce { buf, .. }
                | StmtKind::Free { buf } => vec![buf.clone()],
                _ => vec![],
            };
            for e in weft_ir::visit::stmt_exprs(s) {
                weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
                    ExprKind::Read { buf, .. }
                    | ExprKind::Window { buf, .. }
                    | ExprKind::Stride { buf, .. } => names.push(buf.clone()),
                    ExprKind::Var(v) => names.push(v.clone()),
                    _ => {}
                });
            }
            for n in names {
                if alias.is_none() && n != sym && scope.root_of(&n) == Some(root) {
                    alias = Some((n, s.clone()));
                }
            }
        });
        if let Some((n, s)) = alias {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "the block reaches the memory of '{buf}' through '{n}' as well, which the \
                     copy would not see"
                ),
            )
            .at(s.span, describe(&s)));
        }
    }

    // The proofs and guards below evaluate the buffer's extents here, not where the buffer was
    // made: an extent that reads a config field (which may have changed since) cannot be used.
    if let Some(e) = bt
        .shape
        .iter()
        .find(|e| !super::config_reads(&[*e]).is_empty())
    {
        return Err(SchedError::new(
            PRIM,
            format!(
                "the extent {e} of '{buf}' reads a config field, whose value here may not be the one the buffer was made with"
            ),
        )
        .at(first.span, what.clone()));
    }
    // The region: non-empty; the sides that may leave the buffer are guarded.
    let mut guard_low = vec![false; region.len()];
    let mut guard_high = vec![false; region.len()];
    for (k, (lo, hi)) in region.iter().enumerate() {
        let (l, h) = (term_at(a, PRIM, &scope, lo)?, term_at(a, PRIM, &scope, hi)?);
        let ext = term_at(a, PRIM, &scope, &bt.shape[k])?;
        require(
            a,
            PRIM,
            &scope.facts,
            &Term::lt(l.clone(), h.clone()),
            || format!("the region {lo}..{hi} of dimension {k} of '{buf}' must be non-empty"),
            first.span,
            what.clone(),
        )?;
        guard_low[k] = a.prove(&scope.facts, &Term::le(Term::Int(0), l)).is_err();
        guard_high[k] = a.prove(&scope.facts, &Term::le(h, ext)).is_err();
    }
    let guarded = guard_low.iter().chain(&guard_high).any(|&g| g);

    // Every access of the block lies in the region.
    for (path_in, s) in accesses_of(p, at, len.max(1), &sym) {
        let inner = a.scope_at(p, &path_in);
        let idx = match &s {
            Access::Stmt(idx) | Access::Read(idx) => idx.clone(),
        };
        for (k, e) in idx.iter().enumerate() {
            let t = term_at(a, PRIM, &inner, e)?;
            let (lo, hi) = &region[k];
            let (l, h) = (term_at(a, PRIM, &inner, lo)?, term_at(a, PRIM, &inner, hi)?);
            let stmt = path::get(p, &path_in).expect("an access path");
            let mut goal = vec![Term::le(l, t.clone()), Term::lt(t.clone(), h)];
            if guarded {
                // The cells the guarded copies leave out must not be used.
                let ext = term_at(a, PRIM, &inner, &bt.shape[k])?;
                goal.push(Term::le(Term::Int(0), t.clone()));
                goal.push(Term::lt(t, ext));
            }
            require(
                a,
                PRIM,
                &inner.facts,
                &Term::And(goal),
                || {
                    if guarded {
                        format!("an access of '{buf}' at index {e} of dimension {k} may lie outside the staged region {lo}..{hi} or outside 0..{}", bt.shape[k])
                    } else {
                        format!("an access of '{buf}' at index {e} of dimension {k} may lie outside the staged region {lo}..{hi}")
                    }
                },
                stmt.span,
                describe(stmt),
            )?;
        }
    }

    // Accumulate mode: the block only reduces into the buffer.
    if mode == Staging::Accumulate {
        if bt.elem == weft_ir::DType::Bool {
            return Err(SchedError::new(
                PRIM,
                format!("'{buf}' holds bools, which cannot be accumulated"),
            )
            .at(first.span, what));
        }
        for (path_in, acc) in accesses_of(p, at, len.max(1), &sym) {
            let stmt = path::get(p, &path_in).expect("an access path");
            let reduces = matches!(&acc, Access::Stmt(_))
                && matches!(&stmt.kind, StmtKind::Reduce { buf: b, .. } if *b == sym);
            if !reduces {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "in accumulate mode the block may only reduce into '{buf}' (`+=`), but this statement {} it",
                        if matches!(acc, Access::Read(_)) { "reads" } else { "assigns" }
                    ),
                )
                .at(stmt.span, describe(stmt)));
            }
        }
    }

    // Build the new code.
    let tsym = Sym::new(name);
    let extents = extents_of(region);
    let ty = BufType {
        elem: bt.elem,
        shape: extents.clone(),
        window: false,
        mem,
    };
    super::require_fits(a, PRIM, &scope, name, &ty, first)?;
    let span = first.span;
    let shifted = |idx: &[Expr]| -> Vec<Expr> {
        idx.iter()
            .zip(region)
            .map(|(e, (lo, _))| {
                if lo.as_int_const() == Some(0) {
                    e.clone()
                } else {
                    Expr::binary(BinOp::Sub, e.clone(), lo.clone())
                }
            })
            .collect()
    };
    let mut restage = Restage {
        from: &sym,
        to: &tsym,
        shift: &shifted,
    };
    let new_block: Vec<Stmt> = block.iter().map(|s| restage.stmt(s)).collect();
    let writes = block_writes(&block, &sym);
    let zero = || {
        Expr::typed_const(
            match bt.elem {
                weft_ir::DType::F32 | weft_ir::DType::F64 => weft_ir::Const::Float(0.0),
                weft_ir::DType::Bool => weft_ir::Const::Bool(false),
                _ => weft_ir::Const::Int(0),
            },
            weft_ir::Ty::Data(bt.elem),
        )
    };
    let copy = |into_tile: bool| -> Stmt {
        let vars: Vec<Sym> = (0..region.len())
            .map(|k| Sym::new(format!("{name}_{k}")))
            .collect();
        let tile_idx: Vec<Expr> = vars.iter().map(ivar).collect();
        let buf_idx: Vec<Expr> = vars
            .iter()
            .zip(region)
            .map(|(v, (lo, _))| {
                if lo.as_int_const() == Some(0) {
                    ivar(v)
                } else {
                    Expr::binary(BinOp::Add, lo.clone(), ivar(v))
                }
            })
            .collect();
        let (dst, dst_idx, src, src_idx) = if into_tile {
            (&tsym, tile_idx, &sym, buf_idx)
        } else {
            (&sym, buf_idx, &tsym, tile_idx)
        };
        let mut s = match mode {
            Staging::Copy => Stmt::new(
                StmtKind::Assign {
                    buf: dst.clone(),
                    idx: dst_idx,
                    rhs: Expr::read(src, bt.elem, src_idx),
                },
                span,
            ),
            // Zeros in (every cell of the tile, unguarded: nothing reads the buffer), the tile
            // added into the buffer on the way out. A float tile starts at -0.0, the identity of
            // addition (`-0.0 + x` is `x` for every x, -0.0 included; +0.0 would turn a cell's
            // -0.0 into +0.0).
            Staging::Accumulate if into_tile => {
                let identity = match bt.elem {
                    weft_ir::DType::F32 | weft_ir::DType::F64 => {
                        Expr::typed_const(weft_ir::Const::Float(-0.0), weft_ir::Ty::Data(bt.elem))
                    }
                    _ => zero(),
                };
                let s = Stmt::new(
                    StmtKind::Assign {
                        buf: tsym.clone(),
                        idx: dst_idx,
                        rhs: identity,
                    },
                    span,
                );
                let mut s = s;
                for (v, ext) in vars.iter().zip(&extents).rev() {
                    s = for_stmt(v.clone(), Expr::int(0), ext.clone(), vec![s], span);
                }
                return s;
            }
            Staging::Accumulate => Stmt::new(
                StmtKind::Reduce {
                    buf: dst.clone(),
                    idx: dst_idx,
                    rhs: Expr::read(src, bt.elem, src_idx),
                },
                span,
            ),
        };
        // Guards, where the region may leave the buffer: `a_k >= -l_k` and `a_k < extent_k - l_k`.
        let mut conds = Vec::new();
        for (k, (v, (lo, _))) in vars.iter().zip(region).enumerate() {
            if guard_low[k] {
                conds.push(Expr::binary(
                    BinOp::Ge,
                    ivar(v),
                    Expr::unary(weft_ir::UnOp::Neg, lo.clone()),
                ));
            }
            if guard_high[k] {
                conds.push(Expr::binary(
                    BinOp::Lt,
                    ivar(v),
                    Expr::binary(BinOp::Sub, bt.shape[k].clone(), lo.clone()),
                ));
            }
        }
        if let Some(cond) = conds
            .into_iter()
            .reduce(|x, y| Expr::binary(BinOp::And, x, y))
        {
            // The tile's cells outside the buffer get zeros on the way in, so the tile is
            // initialised whole (instructions take whole vectors) and the copy matches a
            // zero-masking load; nothing reads those cells (the accesses lie inside the buffer).
            let else_body = if into_tile {
                vec![Stmt::new(
                    StmtKind::Assign {
                        buf: tsym.clone(),
                        idx: vars.iter().map(ivar).collect(),
                        rhs: zero(),
                    },
                    span,
                )]
            } else {
                vec![]
            };
            s = Stmt::new(
                StmtKind::If {
                    cond,
                    then_body: vec![s],
                    else_body,
                },
                span,
            );
        }
        for (v, ext) in vars.iter().zip(&extents).rev() {
            s = for_stmt(v.clone(), Expr::int(0), ext.clone(), vec![s], span);
        }
        s
    };
    let mut new = vec![
        Stmt::new(
            StmtKind::Alloc {
                buf: tsym.clone(),
                ty,
            },
            span,
        ),
        copy(true),
    ];
    new.extend(new_block);
    if writes {
        new.push(copy(false));
    }
    new.push(Stmt::new(StmtKind::Free { buf: tsym }, span));
    let new = crate::simplify::block(&new);
    let count = new.len();
    let n = len.max(1);
    let forward = Forward::replaced_range(at, n, count, move |rel| {
        let mut out = rel.to_vec();
        out[0] = Step {
            block: 0,
            index: rel[0].index + 2,
        };
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_range(p, at, n, new),
        forward,
    })
}

/// The buffer named `name` visible at `at`: an argument, or an allocation earlier in an enclosing
/// block (innermost wins).
/// The extents `hi - lo` of a region.
fn extents_of(region: &[(Expr, Expr)]) -> Vec<Expr> {
    region
        .iter()
        .map(|(lo, hi)| {
            if lo.as_int_const() == Some(0) {
                hi.clone()
            } else {
                Expr::binary(BinOp::Sub, hi.clone(), lo.clone())
            }
        })
        .collect()
}

/// The memory for a tile when the schedule names none: `small` (a stack, say) when a tile of
/// `buf`'s region is proved to fit its capacity at `at`, otherwise `large`.
pub fn default_memory(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    buf: &str,
    region: &[(Expr, Expr)],
    small: Arc<Memory>,
    large: Arc<Memory>,
) -> Arc<Memory> {
    let (Some((_, bt)), Some(stmt)) = (buffer_in_scope(p, at, buf), path::get(p, at)) else {
        return small; // the step itself reports what is wrong
    };
    let ty = BufType {
        elem: bt.elem,
        shape: extents_of(region),
        window: false,
        mem: small.clone(),
    };
    let scope = a.scope_at(p, at);
    match super::require_fits(a, PRIM, &scope, buf, &ty, stmt) {
        Ok(()) => small,
        Err(_) => large,
    }
}

fn buffer_in_scope(p: &Proc, at: &Path, name: &str) -> Option<(Sym, BufType)> {
    super::buffer_at(p, at, |s| s.name() == name)
}

enum Access {
    Stmt(Vec<Expr>),
    Read(Vec<Expr>),
}

/// Every access of `buf` in the `len` statements at `at`, with the path of its statement.
fn accesses_of(p: &Proc, at: &Path, len: usize, buf: &Sym) -> Vec<(Path, Access)> {
    let mut out = Vec::new();
    for (path_in, s) in crate::find::all_stmts(p) {
        let top = Path(path_in.0[..at.depth().min(path_in.depth())].to_vec());
        let inside = path_in.depth() >= at.depth()
            && top.0[..at.depth() - 1] == at.0[..at.depth() - 1]
            && top.last().block == at.last().block
            && (at.last().index..at.last().index + len).contains(&top.last().index);
        if !inside {
            continue;
        }
        if let StmtKind::Assign { buf: b, idx, .. } | StmtKind::Reduce { buf: b, idx, .. } = &s.kind
        {
            if b == buf {
                out.push((path_in.clone(), Access::Stmt(idx.clone())));
            }
        }
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| {
                if let ExprKind::Read { buf: b, idx } = &x.kind {
                    if b == buf {
                        out.push((path_in.clone(), Access::Read(idx.clone())));
                    }
                }
            });
        }
    }
    out
}

fn block_writes(b: &[Stmt], buf: &Sym) -> bool {
    let mut w = false;
    let v: Vec<Stmt> = b.to_vec();
    weft_ir::visit::walk_block(&v, &mut |s| {
        if let StmtKind::Assign { buf: x, .. } | StmtKind::Reduce { buf: x, .. } = &s.kind {
            w |= x == buf;
        }
    });
    w
}

/// Accesses of `from` moved to `to`, their indices shifted by `shift`.
struct Restage<'a> {
    from: &'a Sym,
    to: &'a Sym,
    shift: &'a dyn Fn(&[Expr]) -> Vec<Expr>,
}

impl Rewriter for Restage<'_> {
    fn access(&self, buf: &Sym, idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        if buf == self.from {
            (self.to.clone(), (self.shift)(&idx))
        } else {
            (buf.clone(), idx)
        }
    }
}
