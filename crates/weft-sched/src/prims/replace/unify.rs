//! Unification of a block with a callee's body (Exo §5): statements and data expressions match
//! exactly, control expressions give linear equations over the callee's parameters (unknowns),
//! window offsets and points (unknowns too), the block's free variables (knowns) and the variables
//! both sides bind (which must agree).

use super::super::describe;
use std::collections::{HashMap, HashSet};
use weft_ir::{
    BinOp, Const, DType, Expr, ExprKind, Proc, Span, Stmt, StmtKind, Sym, Ty, UnOp, WinCoord,
};
/// An atom of a linear form: a symbol (a known, or a bound variable of the block), an unknown, or
/// a non-affine known sub-expression (keyed by its text).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Atom {
    Sym(u64),
    Unknown(usize),
    Other(String),
}

impl crate::lin::Atom for Atom {
    const DROP_ZEROS: bool = true;
}

/// `Σ c·atom + constant`, without zero coefficients.
pub(super) type Lin = crate::lin::Lin<Atom>;

impl Lin {
    /// Replace `atom` by `value`.
    pub(super) fn subst(&self, atom: &Atom, value: &Lin) -> Option<Lin> {
        let c = self.coeff(atom);
        if c == 0 {
            return Some(self.clone());
        }
        let mut rest = self.clone();
        rest.terms.retain(|t| t.0 != *atom);
        rest.add(value.clone().scale(c)?, 1)
    }

    pub(super) fn unknowns(&self) -> Vec<usize> {
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
pub(super) struct BufBinding {
    pub(super) buf: Sym,
    /// For each dimension of `buf`: the unknown of its offset (interval) or point, and whether it
    /// is an interval.
    pub(super) dims: Vec<(usize, bool)>,
}

pub(super) struct Unifier<'a> {
    pub(super) callee: &'a Proc,
    /// Config fields the block writes.
    pub(super) written_configs: HashSet<(String, usize)>,
    /// Callee symbols bound by the callee body, and what they are in the block.
    pub(super) ren: HashMap<u64, Sym>,
    /// Symbols bound inside the block (their coefficients must agree on both sides).
    pub(super) bound: HashSet<u64>,
    /// Unknowns: a callee control parameter (`Some(index)`) or a window offset/point (`None`).
    pub(super) unknowns: Vec<(String, Option<usize>)>,
    /// The unknown of each control parameter of the callee, by symbol id.
    pub(super) param_unknown: HashMap<u64, usize>,
    pub(super) bufs: HashMap<u64, BufBinding>,
    /// Linear equations, each `= 0`, with the span of the block's side for messages.
    pub(super) eqs: Vec<(Lin, Span)>,
    /// Expressions of the atoms of kind `Sym` and `Other`, to rebuild solutions.
    pub(super) atom_exprs: HashMap<Atom, Expr>,
}

/// The bits of a numeric literal in a float context as the interpreter makes them (an integer
/// literal rounded once to the type, a float literal from its f64), for comparing `0` with `0.0`.
fn float_bits(c: &Const, ty: Ty) -> Option<u64> {
    match (c, ty) {
        (Const::Int(v), Ty::Data(DType::F32)) => Some((*v as f32).to_bits() as u64),
        (Const::Float(f), Ty::Data(DType::F32)) => Some((*f as f32).to_bits() as u64),
        (Const::Int(v), Ty::Data(DType::F64)) => Some((*v as f64).to_bits()),
        (Const::Float(f), Ty::Data(DType::F64)) => Some(f.to_bits()),
        _ => None,
    }
}

/// A unification failure: what differs, and where in the block.
pub(super) struct Mismatch(pub(super) String, pub(super) Span);

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

    pub(super) fn equate_ctrl(&mut self, callee_e: &Expr, block_e: &Expr) -> U<()> {
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
            // A dense parameter takes a whole buffer: every dimension an interval from 0.
            let dense = matches!(&param.kind, weft_ir::ArgKind::Buf(t) if !t.window);
            if dense && rank != idx.len() {
                return mismatch(
                    format!(
                        "'{buf}' has {rank} dimensions where the dense parameter '{x}' has {}: only a whole buffer can be passed to it",
                        idx.len()
                    ),
                    span,
                );
            }
            let dims = match dense {
                true => vec![true; rank],
                false => self.choose_dims(idx, bidx)?,
            };
            let dims: Vec<(usize, bool)> = dims
                .into_iter()
                .enumerate()
                .map(|(k, interval)| {
                    let what = if interval { "offset" } else { "point" };
                    let u = self.new_unknown(format!("{what} of '{}' in dimension {k}", param.sym));
                    (u, interval)
                })
                .collect();
            if dense {
                for (u, _) in &dims {
                    self.eqs.push((Lin::atom(Atom::Unknown(*u)), span));
                }
            }
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

    /// Unify a callee window `x[c...]` (a call's argument, a window statement's value) with a
    /// block window `buf[d...]`: their starts as an access (which binds a parameter `x` to
    /// dimensions of `buf`, or matches a callee binder's counterpart), then each interval's
    /// extent, and the kinds of the coordinates (a point where the binding has a point, an
    /// interval for an interval). A whole-buffer window matches only the same binder's
    /// counterpart, whole.
    fn window(&mut self, c: &Expr, b: &Expr) -> U<()> {
        let differ = || Mismatch(format!("'{b}' does not match '{c}'"), b.span);
        let (ExprKind::Window { buf: x, coords: cc }, ExprKind::Window { buf, coords: bc }) =
            (&c.kind, &b.kind)
        else {
            return Err(differ());
        };
        let span = b.span;
        if cc.is_empty() || bc.is_empty() {
            // Whole buffers: a callee binder and its counterpart.
            return match self.ren.get(&x.id()) {
                Some(y) if y == buf && cc.is_empty() && bc.is_empty() => Ok(()),
                _ => mismatch(
                    format!("'{c}' and '{b}': a whole-buffer argument matches only its own counterpart, whole"),
                    span,
                ),
            };
        }
        let start = |w: &WinCoord| match w {
            WinCoord::Point(p) => p.clone(),
            WinCoord::Interval(lo, _) => lo.clone(),
        };
        let c_idx: Vec<Expr> = cc.iter().map(start).collect();
        let b_idx: Vec<Expr> = bc.iter().map(start).collect();
        self.access(x, &c_idx, buf, &b_idx, span)?;
        // The pairs of coordinates that view one dimension of `buf`: for a callee binder, its
        // counterpart's coordinates one by one; for a parameter, each dimension of `buf` the
        // binding keeps as an interval with the callee's coordinate of the next dimension of
        // `x`, and the binding's points with none.
        let pairs: Vec<(Option<&WinCoord>, &WinCoord)> = if self.ren.contains_key(&x.id()) {
            cc.iter().map(Some).zip(bc).collect()
        } else {
            let mut callee = cc.iter();
            self.bufs[&x.id()]
                .dims
                .iter()
                .zip(bc)
                .map(|((_, interval), w)| (if *interval { callee.next() } else { None }, w))
                .collect()
        };
        for (from, w) in pairs {
            match (from, w) {
                (Some(WinCoord::Interval(lo, hi)), WinCoord::Interval(blo, bhi)) => {
                    let ce = Expr::binary(BinOp::Sub, hi.clone(), lo.clone());
                    let be = Expr::binary(BinOp::Sub, bhi.clone(), blo.clone());
                    self.equate_ctrl(&ce, &be)?;
                }
                (Some(WinCoord::Point(_)) | None, WinCoord::Point(_)) => {}
                _ => return Err(differ()),
            }
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
            // A float literal written as an integer (`0` in an f32 body) is the same value.
            (ExprKind::Const(x), ExprKind::Const(y))
                if float_bits(x, c.ty).is_some() && float_bits(x, c.ty) == float_bits(y, b.ty) =>
            {
                Ok(())
            }
            (ExprKind::Read { buf: x, idx }, ExprKind::Read { buf, idx: bidx }) => {
                self.access(x, idx, buf, bidx, b.span)
            }
            (ExprKind::Unary(o1, x), ExprKind::Unary(o2, y)) if o1 == o2 => self.data(x, y),
            (ExprKind::Binary(o1, x1, y1), ExprKind::Binary(o2, x2, y2)) if o1 == o2 => {
                if x1.ty.is_control() && matches!(o1, BinOp::Lt | BinOp::Le) {
                    // `x1 < y1` and `x2 < y2` agree wherever `y1 - x1 = y2 - x2`: a guard
                    // `16 * v + l < n` matches an instruction's `i < N` with `N = n - 16 * v`.
                    let c = Expr::binary(BinOp::Sub, y1.clone(), x1.clone());
                    let b = Expr::binary(BinOp::Sub, y2.clone(), x2.clone());
                    return self.equate_ctrl(&c, &b);
                }
                if x1.ty.is_control() && *o1 == BinOp::Eq {
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

    pub(super) fn block(&mut self, cs: &[Stmt], bs: &[Stmt], span: Span) -> U<()> {
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
            (StmtKind::Window { name, rhs }, StmtKind::Window { name: n2, rhs: r2 }) => {
                self.window(rhs, r2)?;
                self.ren.insert(name.id(), n2.clone());
                Ok(())
            }
            // The same proc, not one of the same name (an imported one may share it).
            (StmtKind::Call { proc, args }, StmtKind::Call { proc: p2, args: a2 })
                if std::sync::Arc::ptr_eq(proc, p2) && args.len() == a2.len() =>
            {
                for ((param, x), y) in proc.args.iter().zip(args).zip(a2) {
                    match &param.kind {
                        weft_ir::ArgKind::Ctrl(weft_ir::CtrlType::Bool) => self.data(x, y)?,
                        weft_ir::ArgKind::Ctrl(_) => self.equate_ctrl(x, y)?,
                        weft_ir::ArgKind::Buf(_) => self.window(x, y)?,
                    }
                }
                Ok(())
            }
            _ => Err(differ()),
        }
    }
}

/// The config fields a block writes.
pub(super) fn written_configs(b: &[Stmt]) -> HashSet<(String, usize)> {
    let mut out = HashSet::new();
    super::super::inline_call::written_configs(b, &mut out);
    out
}

/// The symbols bound inside a block (loop variables, allocations, windows).
pub(super) fn bound_syms(b: &[Stmt]) -> HashSet<u64> {
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
