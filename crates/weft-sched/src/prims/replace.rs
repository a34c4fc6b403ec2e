//! `replace`: substitute a block of statements by a call to a proc (an instruction or any proc)
//! whose body it matches.
//!
//! ```text
//! s_1; ...; s_k  ⇝  f(a_1, ..., a_m)      where k = the number of statements of f's body
//! ```
//!
//! The arguments are inferred by unifying the block with `f`'s body (Exo §5, unification modulo
//! linear equalities):
//!
//! - `f`'s parameters are the unknowns; the block's free variables (sizes, enclosing loop
//!   variables) are knowns; binders on both sides (loop variables, allocations) are unified by
//!   renaming.
//! - Statements and data expressions must match exactly (the same operations, constants, types,
//!   config fields). Every pair of control integer expressions (loop bounds, indices, operands of
//!   conditions) becomes a linear equation instead.
//! - A buffer parameter `x` of rank `r` used as `x[e_1..e_r]` where the block reads or writes
//!   `A[f_1..f_R]` becomes the window of `A` that keeps `r` of `A`'s dimensions as intervals and
//!   fixes the others at points: `f_{k_j} = o_j + e_j` for the interval dimensions and
//!   `f_k = p_k` for the points, with offsets `o_j` and points `p_k` new unknowns. Which
//!   dimensions are intervals is the paper's disjunction; it is decided on the first access by the
//!   loop variables (an interval dimension carries the callee's loop variables, a point dimension
//!   none of them), innermost dimensions preferred.
//! - The equations are identities in the block's bound variables, so each bound variable's
//!   coefficients must agree on both sides; what remains is a linear system in the unknowns with
//!   coefficients affine in the knowns, solved by elimination (each unknown becomes an affine
//!   expression of the knowns; integer division must be exact). Equations left without unknowns
//!   are proved in the block's context by the solver (counterexample otherwise).
//!
//! Safety: the block is then, syntactically, `f`'s body with the parameters replaced by the
//! arguments, up to equalities proved in context, which is the meaning of the call. The call is
//! finally checked like any call (weft-check): `f`'s preconditions proved in context, every
//! window in bounds, written arguments not overlapping, the memories of the proc's arguments
//! those of the parameters; a failure is reported with the checker's counterexample. (A buffer
//! the proc allocates may still be in another memory than the parameter: a schedule replaces its
//! accesses by instructions first and then moves it with `set_memory`, which checks the memory
//! rules.)

use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_check::smt::Term;
use weft_ir::{
    ArgKind, BinOp, Const, CtrlType, Expr, ExprKind, Proc, Span, Stmt, StmtKind, Sym, Ty, UnOp,
    WinCoord,
};

const PRIM: &str = "replace";

/// An atom of a linear form: a symbol (a known, or a bound variable of the block), an unknown, or
/// a non-affine known sub-expression (keyed by its text).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Atom {
    Sym(u64),
    Unknown(usize),
    Other(String),
}

impl crate::lin::Atom for Atom {
    const DROP_ZEROS: bool = true;
}

/// `Σ c·atom + constant`, without zero coefficients.
type Lin = crate::lin::Lin<Atom>;

impl Lin {
    /// Replace `atom` by `value`.
    fn subst(&self, atom: &Atom, value: &Lin) -> Option<Lin> {
        let c = self.coeff(atom);
        if c == 0 {
            return Some(self.clone());
        }
        let mut rest = self.clone();
        rest.terms.retain(|t| t.0 != *atom);
        rest.add(value.clone().scale(c)?, 1)
    }

    fn unknowns(&self) -> Vec<usize> {
        self.terms
            .iter()
            .filter_map(|t| match t.0 {
                Atom::Unknown(u) => Some(u),
                _ => None,
            })
            .collect()
    }
}

/// How a buffer parameter of the callee is bound to a buffer of the block.
#[derive(Clone, Debug)]
struct BufBinding {
    buf: Sym,
    /// For each dimension of `buf`: the unknown of its offset (interval) or point, and whether it
    /// is an interval.
    dims: Vec<(usize, bool)>,
}

struct Unifier<'a> {
    callee: &'a Proc,
    /// Config fields the block writes.
    written_configs: HashSet<(String, usize)>,
    /// Callee symbols bound by the callee body, and what they are in the block.
    ren: HashMap<u64, Sym>,
    /// Symbols bound inside the block (their coefficients must agree on both sides).
    bound: HashSet<u64>,
    /// Unknowns: a callee control parameter (`Some(index)`) or a window offset/point (`None`).
    unknowns: Vec<(String, Option<usize>)>,
    /// The unknown of each control parameter of the callee, by symbol id.
    param_unknown: HashMap<u64, usize>,
    bufs: HashMap<u64, BufBinding>,
    /// Linear equations, each `= 0`, with the span of the block's side for messages.
    eqs: Vec<(Lin, Span)>,
    /// Expressions of the atoms of kind `Sym` and `Other`, to rebuild solutions.
    atom_exprs: HashMap<Atom, Expr>,
}

/// A unification failure: what differs, and where in the block.
struct Mismatch(String, Span);

type U<T> = Result<T, Mismatch>;

fn mismatch<T>(what: impl Into<String>, span: Span) -> U<T> {
    Err(Mismatch(what.into(), span))
}

impl Unifier<'_> {
    /// The linear form of a block control expression.
    fn lin_block(&mut self, e: &Expr) -> U<Lin> {
        self.lin(e, false)
    }

    /// The linear form of a callee control expression (parameters become unknowns, callee binders
    /// their block counterparts).
    fn lin_callee(&mut self, e: &Expr) -> U<Lin> {
        self.lin(e, true)
    }

    fn lin(&mut self, e: &Expr, callee: bool) -> U<Lin> {
        let bad = || Mismatch(format!("'{e}' is too large to unify"), e.span);
        Ok(match &e.kind {
            ExprKind::Const(Const::Int(v)) => Lin::constant(*v),
            ExprKind::Binary(BinOp::Add, a, b) => {
                let (x, y) = (self.lin(a, callee)?, self.lin(b, callee)?);
                x.add(y, 1).ok_or_else(bad)?
            }
            ExprKind::Binary(BinOp::Sub, a, b) => {
                let (x, y) = (self.lin(a, callee)?, self.lin(b, callee)?);
                x.add(y, -1).ok_or_else(bad)?
            }
            ExprKind::Unary(UnOp::Neg, a) => self.lin(a, callee)?.scale(-1).ok_or_else(bad)?,
            ExprKind::Binary(BinOp::Mul, a, b) => {
                let (x, y) = (self.lin(a, callee)?, self.lin(b, callee)?);
                match (x.as_const(), y.as_const()) {
                    (Some(k), _) => y.scale(k).ok_or_else(bad)?,
                    (_, Some(k)) => x.scale(k).ok_or_else(bad)?,
                    _ => return self.other(e, callee),
                }
            }
            ExprKind::Var(s) => {
                if callee {
                    if let Some(u) = self.param_unknown.get(&s.id()) {
                        return Ok(Lin::atom(Atom::Unknown(*u)));
                    }
                    match self.ren.get(&s.id()) {
                        Some(b) => {
                            let b = b.clone();
                            self.sym_atom(&b)
                        }
                        None => {
                            return mismatch(
                                format!("'{}' of the callee has no counterpart", s.name()),
                                e.span,
                            )
                        }
                    }
                } else {
                    self.sym_atom(s)
                }
            }
            _ => return self.other(e, callee),
        })
    }

    fn sym_atom(&mut self, s: &Sym) -> Lin {
        let a = Atom::Sym(s.id());
        self.atom_exprs
            .entry(a.clone())
            .or_insert_with(|| Expr::var(s, Ty::Int));
        Lin::atom(a)
    }

    /// A non-affine sub-expression: an atom, allowed only when it mentions neither unknowns nor
    /// bound variables (a callee-side one must be a constant expression).
    fn other(&mut self, e: &Expr, callee: bool) -> U<Lin> {
        let mut ok = true;
        let mut written_config = None;
        weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Var(s) | ExprKind::Stride { buf: s, .. } => {
                ok &= !callee && !self.bound.contains(&s.id())
            }
            ExprKind::Read { .. } => ok = false,
            ExprKind::ReadConfig { config, field }
                if !callee
                    && self
                        .written_configs
                        .contains(&(config.name.clone(), *field)) =>
            {
                written_config = Some(x.to_string())
            }
            _ => {}
        });
        if let Some(c) = written_config {
            // A known becomes part of an argument, evaluated before the block runs.
            return mismatch(
                format!(
                    "'{e}' reads {c}, which the block writes: as an argument of the call it \
                     would be read before the write"
                ),
                e.span,
            );
        }
        if !ok {
            return mismatch(
                format!("'{e}' is not affine in the callee's parameters and the loop variables"),
                e.span,
            );
        }
        let a = Atom::Other(crate::simplify::structural_key(e));
        self.atom_exprs.insert(a.clone(), e.clone());
        Ok(Lin::atom(a))
    }

    fn equate_ctrl(&mut self, callee_e: &Expr, block_e: &Expr) -> U<()> {
        let (c, b) = (self.lin_callee(callee_e)?, self.lin_block(block_e)?);
        let diff = b
            .add(c, -1)
            .ok_or_else(|| Mismatch("an index is too large to unify".into(), block_e.span))?;
        self.eqs.push((diff, block_e.span));
        Ok(())
    }

    fn new_unknown(&mut self, name: String) -> usize {
        self.unknowns.push((name, None));
        self.unknowns.len() - 1
    }

    /// Unify a callee access `x[idx]` with a block access `buf[bidx]`.
    fn access(&mut self, x: &Sym, idx: &[Expr], buf: &Sym, bidx: &[Expr], span: Span) -> U<()> {
        // A buffer the callee allocates itself is a binder.
        if let Some(b) = self.ren.get(&x.id()) {
            if b != buf {
                return mismatch(format!("expected '{b}', found '{buf}'"), span);
            }
            if idx.len() != bidx.len() {
                return mismatch("the ranks differ", span);
            }
            for (c, e) in idx.iter().zip(bidx) {
                self.equate_ctrl(c, e)?;
            }
            return Ok(());
        }
        let Some(param) = self.callee.args.iter().find(|a| a.sym == *x) else {
            return mismatch(format!("'{x}' of the callee has no counterpart"), span);
        };
        let rank = bidx.len();
        if !self.bufs.contains_key(&x.id()) {
            if rank < idx.len() {
                return mismatch(
                    format!(
                        "'{buf}' has {rank} dimensions, fewer than parameter '{x}' ({})",
                        idx.len()
                    ),
                    span,
                );
            }
            let dims = self.choose_dims(idx, bidx)?;
            let dims = dims
                .into_iter()
                .enumerate()
                .map(|(k, interval)| {
                    let what = if interval { "offset" } else { "point" };
                    let u = self.new_unknown(format!("{what} of '{}' in dimension {k}", param.sym));
                    (u, interval)
                })
                .collect();
            self.bufs.insert(
                x.id(),
                BufBinding {
                    buf: buf.clone(),
                    dims,
                },
            );
        }
        let binding = self.bufs[&x.id()].clone();
        if binding.buf != *buf {
            return mismatch(
                format!(
                    "parameter '{x}' would stand for both '{}' and '{buf}'",
                    binding.buf
                ),
                span,
            );
        }
        if binding.dims.len() != rank {
            return mismatch(format!("'{buf}' is used with different ranks"), span);
        }
        let mut callee_idx = idx.iter();
        for ((u, interval), f) in binding.dims.iter().zip(bidx) {
            let b = self.lin_block(f)?;
            let c = if *interval {
                let e = callee_idx
                    .next()
                    .ok_or_else(|| Mismatch("the ranks differ".into(), span))?;
                self.lin_callee(e)?
            } else {
                Lin::constant(0)
            };
            // f = u + e
            let diff = b
                .add(c, -1)
                .and_then(|d| d.add(Lin::atom(Atom::Unknown(*u)), -1))
                .ok_or_else(|| Mismatch("an index is too large to unify".into(), f.span))?;
            self.eqs.push((diff, f.span));
        }
        Ok(())
    }

    /// Which dimensions of the block's buffer are intervals: an interval dimension's index carries
    /// the block's bound variables matching the callee's index; a point dimension carries none.
    /// Innermost dimensions are preferred when several choices fit.
    fn choose_dims(&mut self, idx: &[Expr], bidx: &[Expr]) -> U<Vec<bool>> {
        let (r, rank) = (idx.len(), bidx.len());
        let bound_part = |l: &Lin, bound: &HashSet<u64>| -> Vec<(u64, i64)> {
            let mut v: Vec<(u64, i64)> = l
                .terms
                .iter()
                .filter_map(|(a, c)| match a {
                    Atom::Sym(s) if bound.contains(s) => Some((*s, *c)),
                    _ => None,
                })
                .collect();
            v.sort();
            v
        };
        let mut b_parts = Vec::new();
        for f in bidx {
            let l = self.lin_block(f)?;
            b_parts.push(bound_part(&l, &self.bound));
        }
        let mut c_parts = Vec::new();
        for e in idx {
            let l = self.lin_callee(e)?;
            c_parts.push(bound_part(&l, &self.bound));
        }
        // Subsets of `r` dimensions out of `rank`, innermost first.
        let mut choice = vec![false; rank];
        fn search(
            k: usize,
            j: usize,
            choice: &mut Vec<bool>,
            b: &[Vec<(u64, i64)>],
            c: &[Vec<(u64, i64)>],
        ) -> bool {
            // Fill dimensions from the last: `k` is the block dimension, `j` callee dimensions
            // remain to place.
            if k == 0 {
                return j == 0;
            }
            let d = k - 1;
            if j > 0 && b[d] == c[j - 1] {
                choice[d] = true;
                if search(d, j - 1, choice, b, c) {
                    return true;
                }
                choice[d] = false;
            }
            if b[d].is_empty() && d >= j {
                choice[d] = false;
                return search(d, j, choice, b, c);
            }
            false
        }
        if search(rank, r, &mut choice, &b_parts, &c_parts) {
            Ok(choice)
        } else {
            mismatch(
                "no window of the block's buffer matches the callee's indices",
                bidx.first().map_or(Span::DUMMY, |e| e.span),
            )
        }
    }

    fn data(&mut self, c: &Expr, b: &Expr) -> U<()> {
        if c.ty != b.ty && !(c.ty.is_control() && b.ty.is_control()) {
            return mismatch(format!("'{b}' has another type than '{c}'"), b.span);
        }
        if c.ty == Ty::Int && b.ty == Ty::Int {
            return self.equate_ctrl(c, b);
        }
        let differ = || Mismatch(format!("'{b}' does not match '{c}'"), b.span);
        match (&c.kind, &b.kind) {
            (ExprKind::Const(x), ExprKind::Const(y)) if x == y => Ok(()),
            (ExprKind::Read { buf: x, idx }, ExprKind::Read { buf, idx: bidx }) => {
                self.access(x, idx, buf, bidx, b.span)
            }
            (ExprKind::Unary(o1, x), ExprKind::Unary(o2, y)) if o1 == o2 => self.data(x, y),
            (ExprKind::Binary(o1, x1, y1), ExprKind::Binary(o2, x2, y2)) if o1 == o2 => {
                if x1.ty.is_control() && matches!(o1, BinOp::Lt | BinOp::Le | BinOp::Eq) {
                    self.equate_ctrl(x1, x2)?;
                    return self.equate_ctrl(y1, y2);
                }
                self.data(x1, x2)?;
                self.data(y1, y2)
            }
            (ExprKind::Select(a1, b1, c1), ExprKind::Select(a2, b2, c2)) => {
                self.data(a1, a2)?;
                self.data(b1, b2)?;
                self.data(c1, c2)
            }
            (ExprKind::Cast(t1, x), ExprKind::Cast(t2, y)) if t1 == t2 => self.data(x, y),
            (ExprKind::Math(f1, xs), ExprKind::Math(f2, ys))
                if f1 == f2 && xs.len() == ys.len() =>
            {
                for (x, y) in xs.iter().zip(ys) {
                    self.data(x, y)?;
                }
                Ok(())
            }
            (
                ExprKind::ReadConfig {
                    config: c1,
                    field: f1,
                },
                ExprKind::ReadConfig {
                    config: c2,
                    field: f2,
                },
            ) if c1.name == c2.name && f1 == f2 => Ok(()),
            (ExprKind::Var(x), ExprKind::Var(y)) => {
                // A control boolean.
                let same = self.ren.get(&x.id()) == Some(y);
                if same {
                    Ok(())
                } else {
                    Err(differ())
                }
            }
            _ => Err(differ()),
        }
    }

    fn block(&mut self, cs: &[Stmt], bs: &[Stmt], span: Span) -> U<()> {
        if cs.len() != bs.len() {
            return mismatch(
                format!(
                    "the block has {} statements where the callee has {}",
                    bs.len(),
                    cs.len()
                ),
                bs.first().map_or(span, |s| s.span),
            );
        }
        for (c, b) in cs.iter().zip(bs) {
            self.stmt(c, b)?;
        }
        Ok(())
    }

    fn stmt(&mut self, c: &Stmt, b: &Stmt) -> U<()> {
        let differ = || {
            Mismatch(
                format!("'{}' does not match '{}'", describe(b), describe(c)),
                b.span,
            )
        };
        match (&c.kind, &b.kind) {
            (StmtKind::Pass, StmtKind::Pass) => Ok(()),
            (
                StmtKind::Assign { buf: x, idx, rhs },
                StmtKind::Assign {
                    buf,
                    idx: bidx,
                    rhs: brhs,
                },
            )
            | (
                StmtKind::Reduce { buf: x, idx, rhs },
                StmtKind::Reduce {
                    buf,
                    idx: bidx,
                    rhs: brhs,
                },
            ) => {
                self.data(rhs, brhs)?;
                self.access(x, idx, buf, bidx, b.span)
            }
            (
                StmtKind::WriteConfig { config, field, rhs },
                StmtKind::WriteConfig {
                    config: c2,
                    field: f2,
                    rhs: r2,
                },
            ) if config.name == c2.name && field == f2 => self.data(rhs, r2),
            (
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                },
                StmtKind::If {
                    cond: c2,
                    then_body: t2,
                    else_body: e2,
                },
            ) => {
                self.data(cond, c2)?;
                self.block(then_body, t2, b.span)?;
                self.block(else_body, e2, b.span)
            }
            (
                StmtKind::For {
                    var,
                    lo,
                    hi,
                    body,
                    parallel,
                },
                StmtKind::For {
                    var: v2,
                    lo: l2,
                    hi: h2,
                    body: b2,
                    parallel: p2,
                },
            ) => {
                if parallel != p2 {
                    return Err(differ());
                }
                self.equate_ctrl(lo, l2)?;
                self.equate_ctrl(hi, h2)?;
                self.ren.insert(var.id(), v2.clone());
                self.block(body, b2, b.span)
            }
            (StmtKind::Alloc { buf, ty }, StmtKind::Alloc { buf: b2, ty: t2 }) => {
                if ty.elem != t2.elem || ty.mem.name != t2.mem.name || ty.rank() != t2.rank() {
                    return Err(differ());
                }
                for (x, y) in ty.shape.iter().zip(&t2.shape) {
                    self.equate_ctrl(x, y)?;
                }
                self.ren.insert(buf.id(), b2.clone());
                Ok(())
            }
            (StmtKind::Free { buf }, StmtKind::Free { buf: b2 }) => {
                if self.ren.get(&buf.id()) == Some(b2) {
                    Ok(())
                } else {
                    Err(differ())
                }
            }
            (StmtKind::Window { .. }, _) | (StmtKind::Call { .. }, _) => mismatch(
                format!(
                    "the callee's '{}' (a window or a call) cannot be unified yet; \
                     inline it in the callee first",
                    describe(c)
                ),
                b.span,
            ),
            _ => Err(differ()),
        }
    }
}

/// The config fields a block writes.
fn written_configs(b: &[Stmt]) -> HashSet<(String, usize)> {
    let mut out = HashSet::new();
    let block: weft_ir::Block = b.to_vec();
    weft_ir::visit::walk_block(&block, &mut |s| {
        if let StmtKind::WriteConfig { config, field, .. } = &s.kind {
            out.insert((config.name.clone(), *field));
        }
    });
    out
}

/// The symbols bound inside a block (loop variables, allocations, windows).
fn bound_syms(b: &[Stmt]) -> HashSet<u64> {
    let mut out = HashSet::new();
    let block: weft_ir::Block = b.to_vec();
    weft_ir::visit::walk_block(&block, &mut |s| match &s.kind {
        StmtKind::For { var, .. } => {
            out.insert(var.id());
        }
        StmtKind::Alloc { buf, .. } => {
            out.insert(buf.id());
        }
        StmtKind::Window { name, .. } => {
            out.insert(name.id());
        }
        _ => {}
    });
    out
}

/// Replace the `callee.body.len()` statements starting at `at` by a call to `callee`.
pub fn replace(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    callee: &Arc<Proc>,
) -> Result<Rewrite, SchedError> {
    let first = stmt_at(PRIM, p, at)?;
    let n = callee.body.len();
    let block = path::block_of(p, at).expect("the statement exists");
    let start = at.last().index;
    if n == 0 || start + n > block.len() {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{}' has {n} statements, but only {} follow here",
                callee.name,
                block.len() - start
            ),
        )
        .at(first.span, describe(first)));
    }
    let stmts = &block[start..start + n];
    let mut u = Unifier {
        callee,
        ren: HashMap::new(),
        written_configs: written_configs(stmts),
        bound: bound_syms(stmts),
        unknowns: Vec::new(),
        param_unknown: HashMap::new(),
        bufs: HashMap::new(),
        eqs: Vec::new(),
        atom_exprs: HashMap::new(),
    };
    for (k, arg) in callee.args.iter().enumerate() {
        match arg.kind {
            ArgKind::Ctrl(CtrlType::Bool) => {
                return Err(SchedError::new(
                    PRIM,
                    format!(
                        "'{}' has a boolean parameter '{}', which replace cannot infer",
                        callee.name, arg.sym
                    ),
                )
                .at(first.span, describe(first)))
            }
            ArgKind::Ctrl(_) => {
                u.unknowns.push((format!("'{}'", arg.sym), Some(k)));
                u.param_unknown.insert(arg.sym.id(), u.unknowns.len() - 1);
            }
            ArgKind::Buf(_) => {}
        }
    }
    let fail = |m: Mismatch| {
        SchedError::new(
            PRIM,
            format!(
                "the block does not match the body of '{}': {}",
                callee.name, m.0
            ),
        )
        .at(m.1, "here")
        .at(first.span, describe(first))
    };
    u.block(&callee.body, stmts, first.span).map_err(fail)?;

    let values = solve(a, p, at, &mut u, callee, first)?;
    // The shapes of the buffers of the proc (arguments and allocations).
    let mut shapes: HashMap<u64, Vec<Expr>> = p
        .args
        .iter()
        .filter_map(|a| Some((a.sym.id(), a.buf()?.shape.clone())))
        .collect();
    weft_ir::visit::walk_block(&p.body, &mut |s| {
        if let StmtKind::Alloc { buf, ty } = &s.kind {
            shapes.insert(buf.id(), ty.shape.clone());
        }
    });
    let mut args = Vec::new();
    for param in &callee.args {
        match &param.kind {
            ArgKind::Ctrl(_) => {
                let uid = u.param_unknown[&param.sym.id()];
                let v = values[uid].clone().ok_or_else(|| {
                    SchedError::new(
                        PRIM,
                        format!(
                            "cannot infer argument '{}' of '{}' from the block",
                            param.sym, callee.name
                        ),
                    )
                    .at(first.span, describe(first))
                })?;
                args.push(to_expr(&u, &v));
            }
            ArgKind::Buf(bt) => {
                let Some(binding) = u.bufs.get(&param.sym.id()) else {
                    return Err(SchedError::new(
                        PRIM,
                        format!(
                            "parameter '{}' of '{}' is not used by its body, so it cannot be \
                             inferred",
                            param.sym, callee.name
                        ),
                    )
                    .at(first.span, describe(first)));
                };
                // The extents of the window: the parameter's shape with the arguments substituted.
                let mut ctrl_map = crate::subst::Subst::new();
                for (q, e) in callee.args.iter().zip(&args) {
                    if q.ctrl().is_some() {
                        ctrl_map = ctrl_map.var(&q.sym, e.clone());
                    }
                }
                let mut shape = bt.shape.iter();
                let mut coords = Vec::new();
                for (uid, interval) in &binding.dims {
                    let start = to_expr(&u, values[*uid].as_ref().expect("solved with the block"));
                    if *interval {
                        let ext = shape.next().expect("rank checked");
                        let ext = crate::simplify::expr(&ctrl_map.expr(ext));
                        let end =
                            crate::simplify::expr(&Expr::binary(BinOp::Add, start.clone(), ext));
                        coords.push(WinCoord::Interval(start, end));
                    } else {
                        coords.push(WinCoord::Point(start));
                    }
                }
                // A window covering the whole buffer is the buffer itself.
                let whole = shapes.get(&binding.buf.id()).is_some_and(|shape| {
                    shape.len() == coords.len()
                        && shape.iter().zip(&coords).all(|(ext, c)| match c {
                            WinCoord::Interval(lo, hi) => {
                                lo.to_string() == "0"
                                    && hi.to_string() == crate::simplify::expr(ext).to_string()
                            }
                            WinCoord::Point(_) => false,
                        })
                });
                if whole {
                    coords.clear();
                }
                args.push(Expr::raw(
                    ExprKind::Window {
                        buf: binding.buf.clone(),
                        coords,
                    },
                    Ty::Data(bt.elem),
                    first.span,
                ));
            }
        }
    }
    let call = |proc: Arc<Proc>| {
        Stmt::new(
            StmtKind::Call {
                proc,
                args: args.clone(),
            },
            first.span,
        )
    };
    let new = path::replace_range(p, at, n, vec![call(callee.clone())]);
    // The call is checked with the parameters' memories set to those of the buffers passed: the
    // memories say how code is emitted, not what it means, and a schedule typically replaces
    // every access of a buffer by instructions before it moves the buffer into their memory
    // (`set_memory`, which then checks the memory rules). The final proc is checked in full.
    let probe = path::replace_range(p, at, n, vec![call(with_arg_memories(p, callee, &u))]);
    if let Err(ds) = weft_check::check_proc(&probe) {
        // Only what the call introduces: problems of the proc as it was are not this step's.
        let before: HashSet<String> = weft_check::check_proc(p)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.message)
            .collect();
        let Some(d) = ds.iter().find(|d| !before.contains(&d.message)) else {
            return Ok(finish(new, at, n));
        };
        let mut e = SchedError::new(
            PRIM,
            format!(
                "the call of '{}' does not check: {}",
                callee.name, d.message
            ),
        )
        .at(first.span, describe(first));
        for note in &d.notes {
            if let Some(rest) = note.strip_prefix("counterexample: ") {
                e.counterexample = rest
                    .split(", ")
                    .filter_map(|kv| {
                        let (k, v) = kv.split_once(" = ")?;
                        Some((k.to_string(), v.parse().ok()?))
                    })
                    .collect();
            }
        }
        return Err(e);
    }
    Ok(finish(new, at, n))
}

/// The rewrite: the `n` statements at `at` became one call; the first one's cursor designates it.
fn finish(new: Arc<Proc>, at: &Path, n: usize) -> Rewrite {
    let forward = Forward::replaced_range(at, n, 1, |rel| {
        (rel[0].index == 0 && rel.len() == 1).then(|| rel.to_vec())
    });
    Rewrite { proc: new, forward }
}

/// `callee` with each buffer parameter bound to an allocation of `p` in that allocation's memory
/// (`set_memory` can move the allocation later; the proc's own arguments cannot move, so their
/// memories must match the parameters').
fn with_arg_memories(p: &Proc, callee: &Arc<Proc>, u: &Unifier) -> Arc<Proc> {
    let mut mems = HashMap::new();
    weft_ir::visit::walk_block(&p.body, &mut |s| {
        if let StmtKind::Alloc { buf, ty } = &s.kind {
            mems.insert(buf.id(), ty.mem.clone());
        }
    });
    let mut out = (**callee).clone();
    for arg in &mut out.args {
        let Some(binding) = u.bufs.get(&arg.sym.id()) else {
            continue;
        };
        if let (ArgKind::Buf(bt), Some(m)) = (&mut arg.kind, mems.get(&binding.buf.id())) {
            bt.mem = m.clone();
        }
    }
    Arc::new(out)
}

/// Solve the equations: each unknown becomes a linear form over the knowns. Equations left
/// without unknowns are proved in context.
fn solve(
    a: &mut Analysis,
    p: &Proc,
    at: &Path,
    u: &mut Unifier,
    callee: &Proc,
    first: &Stmt,
) -> Result<Vec<Option<Lin>>, SchedError> {
    let err = |m: String, span: Span| {
        SchedError::new(
            PRIM,
            format!(
                "the block does not match the body of '{}': {m}",
                callee.name
            ),
        )
        .at(span, "here")
        .at(first.span, describe(first))
    };
    // Bound variables must agree exactly.
    for (eq, span) in &u.eqs {
        if let Some((Atom::Sym(s), _)) = eq
            .terms
            .iter()
            .find(|(a, _)| matches!(a, Atom::Sym(s) if u.bound.contains(s)))
        {
            let name = u
                .atom_exprs
                .get(&Atom::Sym(*s))
                .map_or("?".to_string(), |e| e.to_string());
            return Err(err(
                format!("the loop variable '{name}' is used differently"),
                *span,
            ));
        }
    }
    let mut values: Vec<Option<Lin>> = vec![None; u.unknowns.len()];
    let mut eqs: Vec<(Lin, Span)> = u.eqs.clone();
    while let Some(k) = eqs.iter().position(|(e, _)| e.unknowns().len() == 1) {
        let (eq, span) = eqs.remove(k);
        let x = eq.unknowns()[0];
        let c = eq.coeff(&Atom::Unknown(x));
        // c·x + rest = 0  ⇒  x = -rest / c, exactly.
        let mut rest = eq.clone();
        rest.terms.retain(|t| t.0 != Atom::Unknown(x));
        let divides = |v: i64| v.checked_rem(c) == Some(0);
        if !divides(rest.constant) || rest.terms.iter().any(|t| !divides(t.1)) {
            return Err(err(
                format!("{} would not be an integer", u.unknowns[x].0),
                span,
            ));
        }
        // x = rest / (-c), every division exact; overflow (i64::MIN / -1) is a mismatch.
        let too_large = || err("an index is too large to unify".into(), span);
        let div = |v: i64| c.checked_neg().and_then(|m| v.checked_div(m));
        let mut v = rest;
        v.constant = div(v.constant).ok_or_else(too_large)?;
        for t in &mut v.terms {
            t.1 = div(t.1).ok_or_else(too_large)?;
        }
        let atom = Atom::Unknown(x);
        for (e, _) in &mut eqs {
            *e = e
                .subst(&atom, &v)
                .ok_or_else(|| err("an index is too large to unify".into(), span))?;
        }
        for w in values.iter_mut().flatten() {
            *w = w
                .subst(&atom, &v)
                .ok_or_else(|| err("an index is too large to unify".into(), span))?;
        }
        values[x] = Some(v);
    }
    let scope = a.scope_at(p, at);
    for (eq, span) in eqs {
        if !eq.unknowns().is_empty() {
            let names: Vec<String> = eq
                .unknowns()
                .iter()
                .map(|x| u.unknowns[*x].0.clone())
                .collect();
            return Err(err(
                format!(
                    "cannot determine {} (more than one unknown)",
                    names.join(" and ")
                ),
                span,
            ));
        }
        let e = to_expr(u, &eq);
        let t = a
            .term(&scope, &e)
            .ok_or_else(|| err(format!("'{e} == 0' is not a control fact"), span))?;
        a.prove(&scope.facts, &Term::eq(t, Term::Int(0)))
            .map_err(|cex| {
                err(
                    format!("'{e} == 0' does not hold here (the index expressions differ)"),
                    span,
                )
                .with_counterexample(cex)
            })?;
    }
    Ok(values)
}

/// The expression of a linear form over known atoms.
fn to_expr(u: &Unifier, l: &Lin) -> Expr {
    let mut out: Option<Expr> = None;
    for (atom, c) in &l.terms {
        let e = u
            .atom_exprs
            .get(atom)
            .cloned()
            .unwrap_or_else(|| Expr::int(0));
        let term = if *c == 1 {
            e
        } else {
            Expr::binary(BinOp::Mul, Expr::int(*c), e)
        };
        out = Some(match out {
            None => term,
            Some(acc) => Expr::binary(BinOp::Add, acc, term),
        });
    }
    let e = match out {
        None => Expr::int(l.constant),
        Some(acc) if l.constant == 0 => acc,
        Some(acc) => Expr::binary(BinOp::Add, acc, Expr::int(l.constant)),
    };
    crate::simplify::expr(&e)
}
