//! Addresses of statements inside a proc, and rebuilding a proc around a changed statement.
//!
//! A [`Path`] is a list of steps from the proc's body: each step picks a child block of the
//! current node (`0` for the proc body, a loop body or a `then` branch, `1` for an `else`
//! branch) and then a statement of that block by position. Paths are values, never pointers, so
//! they stay meaningful for the old proc after a rewrite, and [`Forward`] maps them into the new
//! one.

use std::fmt;
use std::sync::Arc;
use weft_ir::{Block, Proc, Stmt, StmtKind};

/// One step: the child block of the current node, then a statement's position in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Step {
    pub block: usize,
    pub index: usize,
}

/// The address of a statement in a proc.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path(pub Vec<Step>);

impl Path {
    /// The `index`-th statement of the proc body.
    pub fn top(index: usize) -> Path {
        Path(vec![Step { block: 0, index }])
    }

    /// The `index`-th statement of child block `block` of this statement.
    pub fn child(&self, block: usize, index: usize) -> Path {
        let mut v = self.0.clone();
        v.push(Step { block, index });
        Path(v)
    }

    /// The enclosing statement, `None` for a statement of the proc body.
    pub fn parent(&self) -> Option<Path> {
        if self.0.len() <= 1 {
            None
        } else {
            Some(Path(self.0[..self.0.len() - 1].to_vec()))
        }
    }

    pub fn last(&self) -> Step {
        *self.0.last().expect("a path has at least one step")
    }

    /// The statement at `index` in the same block.
    pub fn sibling(&self, index: usize) -> Path {
        let mut v = self.0.clone();
        v.last_mut().expect("non-empty").index = index;
        Path(v)
    }

    /// Whether `self` is `other` or inside it.
    pub fn starts_with(&self, other: &Path) -> bool {
        self.0.len() >= other.0.len() && self.0[..other.0.len()] == other.0[..]
    }

    pub fn depth(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|s| {
                if s.block == 0 {
                    s.index.to_string()
                } else {
                    format!("else.{}", s.index)
                }
            })
            .collect();
        write!(f, "[{}]", parts.join("/"))
    }
}

/// The child blocks of a statement, in step order.
pub fn child_blocks(s: &Stmt) -> Vec<&Block> {
    weft_ir::visit::stmt_blocks(s)
}

/// The block a path's last step indexes into.
pub fn block_of<'a>(p: &'a Proc, path: &Path) -> Option<&'a Block> {
    if path.0.first()?.block != 0 {
        return None;
    }
    let mut block = &p.body;
    for (k, step) in path.0.iter().enumerate() {
        if k + 1 == path.0.len() {
            return Some(block);
        }
        let s = block.get(step.index)?;
        let next = path.0[k + 1].block;
        block = *child_blocks(s).get(next)?;
    }
    None
}

/// The statement at a path.
pub fn get<'a>(p: &'a Proc, path: &Path) -> Option<&'a Stmt> {
    block_of(p, path)?.get(path.last().index)
}

/// The statements enclosing a path, outermost first (not including the statement itself).
pub fn ancestors<'a>(p: &'a Proc, path: &Path) -> Vec<(Path, &'a Stmt)> {
    let mut out = Vec::new();
    let mut cur = path.parent();
    while let Some(q) = cur {
        if let Some(s) = get(p, &q) {
            out.push((q.clone(), s));
        }
        cur = q.parent();
    }
    out.reverse();
    out
}

/// A copy of statement `s` with child block `k` replaced.
pub fn with_child_block(s: &Stmt, k: usize, new: Block) -> Stmt {
    let kind = match (&s.kind, k) {
        (
            StmtKind::For {
                var,
                lo,
                hi,
                parallel,
                ..
            },
            0,
        ) => StmtKind::For {
            var: var.clone(),
            lo: lo.clone(),
            hi: hi.clone(),
            body: new,
            parallel: *parallel,
        },
        (
            StmtKind::If {
                cond, else_body, ..
            },
            0,
        ) => StmtKind::If {
            cond: cond.clone(),
            then_body: new,
            else_body: else_body.clone(),
        },
        (
            StmtKind::If {
                cond, then_body, ..
            },
            1,
        ) => StmtKind::If {
            cond: cond.clone(),
            then_body: then_body.clone(),
            else_body: new,
        },
        _ => return s.clone(),
    };
    Stmt::new(kind, s.span)
}

/// Rebuild the proc with the block that `path`'s last step indexes into transformed by `f`.
/// Only the spine from the root to that block is copied; every other node is shared.
pub fn edit_block(p: &Proc, path: &Path, f: impl FnOnce(&Block) -> Block) -> Arc<Proc> {
    fn go(block: &Block, steps: &[Step], f: Box<dyn FnOnce(&Block) -> Block + '_>) -> Block {
        if steps.len() == 1 {
            return f(block);
        }
        let i = steps[0].index;
        let s = &block[i];
        let k = steps[1].block;
        let child = child_blocks(s)[k];
        let new_child = go(child, &steps[1..], f);
        let mut out = block.clone();
        out[i] = with_child_block(s, k, new_child);
        out
    }
    let body = go(&p.body, &path.0, Box::new(f));
    Arc::new(Proc { body, ..p.clone() })
}

/// Replace the statement at `path` by a sequence of statements.
pub fn replace_stmt(p: &Proc, path: &Path, new: Vec<Stmt>) -> Arc<Proc> {
    let i = path.last().index;
    edit_block(p, path, |b| {
        let mut out = b[..i].to_vec();
        out.extend(new);
        out.extend_from_slice(&b[i + 1..]);
        out
    })
}

/// Replace `len` statements starting at `path` by a sequence of statements.
pub fn replace_range(p: &Proc, path: &Path, len: usize, new: Vec<Stmt>) -> Arc<Proc> {
    let i = path.last().index;
    edit_block(p, path, |b| {
        let mut out = b[..i].to_vec();
        out.extend(new);
        out.extend_from_slice(&b[i + len..]);
        out
    })
}

/// How the paths of an old proc map into the proc a rewrite produced: moved (possibly to the
/// same place) or gone.
#[derive(Clone)]
pub struct Forward(Arc<PathMap>);

type PathMap = dyn Fn(&Path) -> Option<Path> + Send + Sync;

impl Forward {
    pub fn new(f: impl Fn(&Path) -> Option<Path> + Send + Sync + 'static) -> Forward {
        Forward(Arc::new(f))
    }

    /// Every path keeps its address.
    pub fn identity() -> Forward {
        Forward::new(|p| Some(p.clone()))
    }

    pub fn apply(&self, p: &Path) -> Option<Path> {
        (self.0)(p)
    }

    /// First `self`, then `next`.
    pub fn then(&self, next: &Forward) -> Forward {
        let (a, b) = (self.clone(), next.clone());
        Forward::new(move |p| a.apply(p).and_then(|q| b.apply(&q)))
    }

    /// The statement at `at` was replaced by `count` statements, and `inner` says where the
    /// statements inside it went, relative to `at` (a path whose first step is the position among
    /// the replacements, `block` 0). Statements after it in the same block shift by `count - 1`.
    pub fn replaced(
        at: &Path,
        count: usize,
        inner: impl Fn(&[Step]) -> Option<Vec<Step>> + Send + Sync + 'static,
    ) -> Forward {
        Forward::replaced_range(at, 1, count, inner)
    }

    /// `len` statements starting at `at` were replaced by `count` statements; `inner` maps a
    /// path relative to the first of the old statements (its first step's index is the offset
    /// among them) to one relative to the first new statement.
    pub fn replaced_range(
        at: &Path,
        len: usize,
        count: usize,
        inner: impl Fn(&[Step]) -> Option<Vec<Step>> + Send + Sync + 'static,
    ) -> Forward {
        let at = at.clone();
        Forward::new(move |p| {
            let d = at.depth();
            if p.depth() < d || p.0[..d - 1] != at.0[..d - 1] {
                return Some(p.clone());
            }
            let s = p.0[d - 1];
            let a = at.last();
            if s.block != a.block || s.index < a.index {
                return Some(p.clone());
            }
            if s.index >= a.index + len {
                let mut q = p.clone();
                q.0[d - 1].index = s.index + count - len;
                return Some(q);
            }
            let mut rel = p.0[d - 1..].to_vec();
            rel[0].index -= a.index;
            let mapped = inner(&rel)?;
            // A statement mapped past the replacements no longer exists (a loop unrolled zero
            // times, say): it forwards to nothing rather than to whatever follows.
            if mapped.first()?.index >= count {
                return None;
            }
            let mut q = at.0[..d - 1].to_vec();
            let mut first = mapped[0];
            first.index += a.index;
            first.block = a.block;
            q.push(first);
            q.extend_from_slice(&mapped[1..]);
            Some(Path(q))
        })
    }
}

impl fmt::Debug for Forward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Forward")
    }
}
