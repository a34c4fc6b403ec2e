//! `unroll_buffer`: split a local buffer along a dimension of constant extent into one buffer per
//! index (Exo's `unroll_buffer`), typically so that each becomes a register.
//!
//! ```text
//! alloc t: T[n0, ..., c, ...] @ M;  s
//!   ⇝  alloc t_0: T[n0, ..., ...] @ M; ...; alloc t_(c-1): T[n0, ..., ...] @ M;
//!      s[t[..., k, ...] ↦ t_k[..., ...]]
//! ```
//!
//! (the dimension `d` of extent `c` is dropped; a `free t` becomes `free t_0; ...; free t_(c-1)`).
//! Cell `(..., k, ...)` of `t` becomes cell `(..., ...)` of `t_k`: a bijection between the old
//! cells and the new buffers' cells, applied at every use, so every access touches the cell it
//! touched before.
//!
//! Conditions (syntactic; the step is refused naming the first use that breaks one):
//! - `d` is a dimension of `t` whose extent is an integer constant `c` with `1 <= c <= 256`;
//! - every access of `t` and every window coordinate of `t` in dimension `d` is an integer constant
//!   in `0..c` (a point: which buffer is meant must be known statically), and no window of `t` is
//!   the whole buffer;
//! - strides that code can see keep their value: no `stride(t, k)` with `k <= d`, no window whose
//!   coordinate in a dimension `k < d` is an interval (those strides include the extent `c`);
//! - when the memory fixes the innermost extent (`last_dim`) and `d` is innermost, the new
//!   innermost extent is still that constant;
//! - the names `t_0`, ..., `t_(c-1)` are not used anywhere in the proc.

use super::buf_uses::{name_in_use, uses_after, Use};
use super::set_memory::alloc_at;
use super::{describe, Rewrite};
use crate::effects::{mentions, Analysis};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::rewrite::Rewriter;
use weft_ir::{BufType, Expr, Stmt, StmtKind, Sym, WinCoord};

const PRIM: &str = "unroll_buffer";

/// The most buffers one step creates.
pub const MAX_UNROLL: i64 = 256;

/// Split the allocation at `at` along dimension `dim` into one buffer per index.
pub fn unroll_buffer(
    _a: &mut Analysis,
    p: &weft_ir::Proc,
    at: &Path,
    dim: usize,
) -> Result<Rewrite, SchedError> {
    let site = alloc_at(PRIM, p, at)?;
    let t = site.buf.clone();
    let what = describe(site.stmt);
    let r = site.ty.rank();
    let fail = |m: String| Err(SchedError::new(PRIM, m).at(site.stmt.span, what.clone()));
    if dim >= r {
        return fail(format!("'{t}' has {r} dimensions, not a dimension {dim}"));
    }
    let c = match site.ty.shape[dim].as_int_const() {
        Some(c) if (1..=MAX_UNROLL).contains(&c) => c,
        _ => {
            return fail(format!(
                "the extent {} of dimension {dim} of '{t}' is not an integer constant in 1..={MAX_UNROLL}",
                site.ty.shape[dim]
            ))
        }
    };
    if let Some(want) = site.ty.mem.last_dim {
        if dim + 1 == r && (r < 2 || site.ty.shape[r - 2].as_int_const() != Some(want)) {
            return fail(format!(
                "memory {} requires the innermost dimension of '{t}' to be the constant {want}, which dropping dimension {dim} would not keep",
                site.ty.mem.name
            ));
        }
    }
    let names: Vec<String> = (0..c).map(|k| format!("{}_{k}", t.name())).collect();
    if let Some(n) = names.iter().find(|n| name_in_use(p, n)) {
        return fail(format!(
            "'{n}', the name of one of the new buffers, is already used in the proc"
        ));
    }
    for (_, s, uses) in uses_after(&site, at, &t) {
        for u in uses {
            let bad = match &u {
                Use::Access(idx) => match idx.get(dim).map(|i| (i, i.as_int_const())) {
                    Some((_, Some(k))) if (0..c).contains(&k) => None,
                    Some((i, _)) => Some(format!(
                        "the access indexes dimension {dim} of '{t}' with {i}, not a constant in 0..{c}"
                    )),
                    None => None,
                },
                Use::Stride(k) if *k <= dim => Some(format!(
                    "stride({t}, {k}) depends on dimension {dim}, which the step removes"
                )),
                Use::Stride(_) => None,
                Use::Window(coords) if coords.is_empty() => Some(format!(
                    "a window of the whole buffer '{t}' spans dimension {dim}"
                )),
                Use::Window(coords) => coords.iter().enumerate().find_map(|(k, w)| match w {
                    WinCoord::Interval(..) if k <= dim => Some(format!(
                        "a window of '{t}' spans dimension {k}, whose stride depends on dimension {dim}"
                    )),
                    WinCoord::Point(i) if k == dim => match i.as_int_const() {
                        Some(x) if (0..c).contains(&x) => None,
                        _ => Some(format!(
                            "the window indexes dimension {dim} of '{t}' with {i}, not a constant in 0..{c}"
                        )),
                    },
                    _ => None,
                }),
            };
            if let Some(m) = bad {
                return Err(SchedError::new(PRIM, m)
                    .at(s.span, describe(&s))
                    .at(site.stmt.span, what));
            }
        }
    }
    let bufs: Vec<Sym> = names.iter().map(Sym::new).collect();
    let mut shape = site.ty.shape.clone();
    shape.remove(dim);
    let ty = BufType {
        shape,
        ..site.ty.clone()
    };
    let mut new: Vec<Stmt> = bufs
        .iter()
        .map(|b| {
            Stmt::new(
                StmtKind::Alloc {
                    buf: b.clone(),
                    ty: ty.clone(),
                },
                site.stmt.span,
            )
        })
        .collect();
    let mut rw = Unroller {
        t: &t,
        dim,
        bufs: &bufs,
    };
    let rest: Vec<Stmt> = site.rest.iter().map(|s| rw.stmt(s)).collect();
    // `free t` (now `free t_0`) frees every new buffer; remember where, to forward paths.
    let mut frees = Vec::new();
    let first = at.last().index + 1;
    let rest = expand_frees(&rest, &bufs, &at.sibling(first), &mut frees);
    new.extend(rest);
    let extra = (c - 1) as usize;
    let len = site.rest.len() + 1;
    let alloc_at = at.clone();
    let forward = Forward::new(move |q| {
        // Shifts by the frees that became several, measured on the old path.
        let mut out = q.clone();
        for f in &frees {
            let d = f.depth();
            if q.depth() >= d
                && q.0[..d - 1] == f.0[..d - 1]
                && q.0[d - 1].block == f.last().block
                && q.0[d - 1].index > f.last().index
            {
                out.0[d - 1].index += extra;
            }
        }
        let d = alloc_at.depth();
        if q.depth() >= d
            && q.0[..d - 1] == alloc_at.0[..d - 1]
            && q.0[d - 1].block == alloc_at.last().block
            && q.0[d - 1].index > alloc_at.last().index
        {
            out.0[d - 1].index += extra;
        }
        Some(out)
    });
    Ok(Rewrite {
        proc: path::replace_range(p, at, len, new),
        forward,
    })
}

/// The block with every `free t_0` followed by frees of the other new buffers; `frees` collects
/// the old paths of those statements (`here` is the old path of the block's first statement).
fn expand_frees(block: &[Stmt], bufs: &[Sym], here: &Path, frees: &mut Vec<Path>) -> Vec<Stmt> {
    let mut out = Vec::new();
    for (k, s) in block.iter().enumerate() {
        let q = here.sibling(here.last().index + k);
        match &s.kind {
            StmtKind::Free { buf } if *buf == bufs[0] => {
                frees.push(q);
                out.push(s.clone());
                for b in &bufs[1..] {
                    out.push(Stmt::new(StmtKind::Free { buf: b.clone() }, s.span));
                }
            }
            _ => {
                let kids = weft_ir::visit::stmt_blocks(s);
                if kids.is_empty() || !kids.iter().any(|b| frees_in(b, &bufs[0])) {
                    out.push(s.clone());
                    continue;
                }
                let mut n = s.clone();
                for (b, kid) in kids.iter().enumerate() {
                    let nb = expand_frees(kid, bufs, &q.child(b, 0), frees);
                    n = path::with_child_block(&n, b, nb);
                }
                out.push(n);
            }
        }
    }
    out
}

fn frees_in(b: &[Stmt], t: &Sym) -> bool {
    let mut hit = false;
    weft_ir::visit::walk_block(b, &mut |s| {
        hit |= matches!(&s.kind, StmtKind::Free { buf } if buf == t);
    });
    hit
}

struct Unroller<'a> {
    t: &'a Sym,
    dim: usize,
    bufs: &'a [Sym],
}

impl Unroller<'_> {
    fn pick(&self, i: &Expr) -> Sym {
        let k = i.as_int_const().unwrap_or(0) as usize;
        self.bufs.get(k).unwrap_or(&self.bufs[0]).clone()
    }
}

impl Rewriter for Unroller<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn buf(&self, buf: &Sym) -> Sym {
        if buf == self.t {
            self.bufs[0].clone()
        } else {
            buf.clone()
        }
    }

    fn access(&self, buf: &Sym, mut idx: Vec<Expr>) -> (Sym, Vec<Expr>) {
        if buf != self.t || idx.len() <= self.dim {
            return (self.buf(buf), idx);
        }
        let i = idx.remove(self.dim);
        (self.pick(&i), idx)
    }

    fn window(&self, buf: &Sym, mut coords: Vec<WinCoord>) -> (Sym, Vec<WinCoord>) {
        if buf != self.t || coords.len() <= self.dim {
            return (self.buf(buf), coords);
        }
        match coords.remove(self.dim) {
            WinCoord::Point(i) => (self.pick(&i), coords),
            WinCoord::Interval(..) => (self.bufs[0].clone(), coords),
        }
    }

    fn stride(&self, buf: &Sym, dim: usize) -> (Sym, usize) {
        if buf == self.t && dim > self.dim {
            (self.bufs[0].clone(), dim - 1)
        } else {
            (self.buf(buf), dim)
        }
    }
}
