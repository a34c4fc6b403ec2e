//! `inline_assign`: replace the reads of a cell by the value just assigned to it, and delete the
//! assignment (the inverse of `bind_expr`).
//!
//! ```text
//! b[idx] = e;  s1; ...; sn   ⇝   s1[b[idx] ↦ e]; ...; sn[b[idx] ↦ e]
//! ```
//!
//! `s1 … sn` are the statements after the assignment in its block, nested statements included;
//! every read `b[idx']` in them whose indices are structurally equal to `idx` (same operators,
//! symbols and constants) becomes a copy of `e`. Other reads of `b` are left alone.
//!
//! Conditions, each proved with the solver where it is semantic (counterexample otherwise):
//! - the statement is an assignment (not a reduction), and its indices read no config field, so
//!   that equal indices denote the same cell at every read (control names are immutable);
//! - `b` is an allocation: not a proc argument (the caller sees its final value) nor a window;
//! - `e` does not read the cell it is assigned to (a copy would see the old value);
//! - *every replaced read sees the value of `e`*: `s1 … sn` write or reduce into neither the cell
//!   `b[idx]` nor any location `e` reads, anywhere, under any guard (the paper's `Commutes`
//!   between the assignment and every write that follows it), and free no buffer `e` reads
//!   (directly, or through a window of it: each buffer `e` names is resolved to its root). So at
//!   each replaced read the cell still holds what `e` evaluated to, and a copy of `e` evaluated
//!   there gives that same value (expressions have no effects; error values propagate alike);
//! - *the write is dead*: no read left after the rewrite (through windows and calls included, and
//!   reductions, which read) may touch the cell. When `b` is allocated in the same block as the
//!   assignment it dies at the end of the block, so only the reads left in `s1 … sn` are checked;
//!   when it is allocated in an enclosing block, every read left in the statements after its
//!   allocation is checked against the cell as written by *any* execution of the assignment (the
//!   loop variables in between renamed apart), in any order: a read before the assignment in the
//!   same iteration counts too, which is conservative.
//!
//! The rewrite is then an equivalence: every read that saw the assignment now computes the same
//! value itself, and no other read could see it. The names `e` uses are in scope at every
//! replaced read (they follow the assignment in its block, and symbols are unique).

use super::{conflict_error, describe, stmt_at, Rewrite};
use crate::effects::{mentions, primed, subst_term, Access, AccessKind, Analysis, Effects, Root};
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::prims::bind_expr::same_expr;
use crate::rewrite::Rewriter;
use std::collections::{HashMap, HashSet};
use weft_check::smt::Term;
use weft_check::terms::sym_var;
use weft_ir::{BufType, Expr, ExprKind, Proc, Stmt, StmtKind, Sym};

const PRIM: &str = "inline_assign";

/// The allocation of a buffer in scope at `at` that satisfies `pick`: searching the blocks that
/// enclose `at`, innermost first, before the statement on the way. Returns its path, symbol and
/// type.
pub(crate) fn alloc_in_scope<'a>(
    p: &'a Proc,
    at: &Path,
    pick: impl Fn(&Sym) -> bool,
) -> Option<(Path, &'a Sym, &'a BufType)> {
    let mut q = at.clone();
    loop {
        let block = path::block_of(p, &q)?;
        for i in (0..q.last().index.min(block.len())).rev() {
            if let StmtKind::Alloc { buf, ty } = &block[i].kind {
                if pick(buf) {
                    return Some((q.sibling(i), buf, ty));
                }
            }
        }
        q = q.parent()?;
    }
}

/// Whether an expression reads a config field.
pub(crate) fn reads_config(e: &Expr) -> bool {
    let mut hit = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        hit |= matches!(x.kind, ExprKind::ReadConfig { .. });
    });
    hit
}

/// Inline the assignment at `at` into the reads of its cell in the statements after it, and
/// delete it.
pub fn inline_assign(a: &mut Analysis, p: &Proc, at: &Path) -> Result<Rewrite, SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let StmtKind::Assign { buf: t, idx, rhs } = &s.kind else {
        return Err(SchedError::new(PRIM, "the statement is not an assignment").at(s.span, what));
    };
    if idx.iter().any(reads_config) {
        return Err(SchedError::new(
            PRIM,
            format!("an index of the assigned cell of '{t}' reads a config field, whose value may change"),
        )
        .at(s.span, what));
    }
    if p.args.iter().any(|x| x.sym == *t) {
        return Err(SchedError::new(
            PRIM,
            format!("'{t}' is an argument of the proc: the caller sees the value written to it"),
        )
        .at(s.span, what));
    }
    let Some((alloc_path, _, _)) = alloc_in_scope(p, at, |b| b == t) else {
        return Err(SchedError::new(
            PRIM,
            format!("'{t}' is a window, not an allocation of this proc"),
        )
        .at(s.span, what));
    };
    let k = at.last().index;
    let block = path::block_of(p, at).expect("the statement exists");
    let rest = &block[k + 1..];

    // The cell written, and what the value reads.
    let scope = a.scope_at(p, at);
    let facts = scope.facts.clone();
    let mine = a.effects(&scope, std::slice::from_ref(s));
    let root = Root::Buf(t.id());
    let Some(cell) = mine
        .accesses
        .iter()
        .find(|x| x.kind == AccessKind::Write && x.root == root)
        .cloned()
    else {
        return Err(SchedError::new(
            PRIM,
            format!("the analysis cannot follow the write of '{t}'"),
        )
        .at(s.span, what));
    };
    for r in mine
        .accesses
        .iter()
        .filter(|x| x.kind == AccessKind::Read && x.root == root)
    {
        if let Some(cex) = a.overlap(&facts, &[], r, &cell) {
            return Err(SchedError::new(
                PRIM,
                format!("the value assigned reads the cell of '{t}' it is assigned to"),
            )
            .at(s.span, what)
            .with_counterexample(cex));
        }
    }

    // Nothing after it writes the cell or what the value reads.
    let after = a.scope_at(p, &at.sibling(k + 1));
    let writes = Effects {
        accesses: a.effects(&after, rest).writes().cloned().collect(),
    }
    .rename_bound();
    if let Some(c) = a.conflict(&facts, &[], &mine, &writes, false) {
        return Err(conflict_error(
            PRIM,
            format!(
                "a later statement writes the cell of '{t}' or a location the value assigned reads"
            ),
            c,
        ));
    }
    // The buffers the value stands on: each buffer it names (reads, windows, strides) resolved to
    // its root, so that a read through a window counts as a read of the windowed buffer.
    let mut roots: HashSet<u64> = HashSet::new();
    weft_ir::visit::walk_expr(rhs, &mut |x| match &x.kind {
        ExprKind::Read { buf, .. }
        | ExprKind::Window { buf, .. }
        | ExprKind::Stride { buf, .. } => {
            roots.insert(buf.id());
            roots.extend(scope.root_of(buf));
        }
        _ => {}
    });
    let mut freed = None;
    let tail: Vec<Stmt> = rest.to_vec();
    weft_ir::visit::walk_block(&tail, &mut |x| {
        if let StmtKind::Free { buf } = &x.kind {
            if roots.contains(&buf.id()) || mentions(rhs, buf) {
                freed.get_or_insert_with(|| x.clone());
            }
        }
    });
    if let Some(f) = freed {
        return Err(SchedError::new(
            PRIM,
            "a later statement frees a buffer the value assigned reads",
        )
        .at(f.span, describe(&f))
        .at(s.span, what));
    }

    // The statements after it, the reads of the cell replaced.
    let mut inl = Inliner { t, idx, value: rhs };
    let new_rest: Vec<Stmt> = rest.iter().map(|x| inl.stmt(x)).collect();
    let mut new_block: Vec<Stmt> = block[..k].to_vec();
    new_block.extend(new_rest.iter().cloned());
    let new_proc = path::edit_block(p, at, |_| new_block);

    // No read left may see the deleted write.
    let same_block = alloc_path.depth() == at.depth();
    let (reads, facts, cell) = if same_block {
        let eff = a.effects(&scope, &new_rest);
        (eff, facts, cell)
    } else {
        // Any execution of the assignment: the variables of the loops between the allocation
        // and the assignment renamed apart.
        let mut map: HashMap<u64, Term> = HashMap::new();
        for (q, x) in path::ancestors(p, at) {
            if q.depth() >= alloc_path.depth() {
                if let StmtKind::For { var, .. } = &x.kind {
                    let v = sym_var(var);
                    map.insert(v.id, Term::IntVar(primed(&v)));
                }
            }
        }
        let facts: Vec<Term> = facts.iter().map(|f| subst_term(f, &map)).collect();
        let cell = Access {
            idx: cell.idx.iter().map(|i| subst_term(i, &map)).collect(),
            ..cell
        };
        let a_block = path::block_of(&new_proc, &alloc_path).expect("the allocation is kept");
        let ka = alloc_path.last().index;
        let tail_scope = a.scope_at(&new_proc, &alloc_path.sibling(ka + 1));
        let eff = a.effects(&tail_scope, &a_block[ka + 1..]);
        (eff, facts, cell)
    };
    for r in reads
        .accesses
        .iter()
        .filter(|x| x.kind != AccessKind::Write && x.root == root)
    {
        if let Some(cex) = a.overlap(&facts, &[], r, &cell) {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "a read of '{t}' that is not replaced may see the value this assignment writes"
                ),
            )
            .at(r.span, format!("reads {}", r.name))
            .at(s.span, what)
            .with_counterexample(cex));
        }
    }
    Ok(Rewrite {
        proc: new_proc,
        forward: Forward::replaced(at, 0, |_| None),
    })
}

/// Replaces the reads `t[idx]` by the value.
struct Inliner<'a> {
    t: &'a Sym,
    idx: &'a [Expr],
    value: &'a Expr,
}

impl Rewriter for Inliner<'_> {
    fn skip(&self, e: &Expr) -> bool {
        !mentions(e, self.t)
    }

    fn read(&self, e: &Expr, buf: &Sym, idx: &[Expr]) -> Expr {
        let same = buf == self.t
            && idx.len() == self.idx.len()
            && idx.iter().zip(self.idx).all(|(x, y)| same_expr(x, y));
        if same {
            return self.value.with_span(e.span);
        }
        let (buf, idx) = self.access(buf, self.exprs(idx));
        Expr::raw(ExprKind::Read { buf, idx }, e.ty, e.span)
    }
}
