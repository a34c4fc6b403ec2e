//! 32-bit offsets for the gathers of short vector loops.
//!
//! A gather (an access whose index is not affine in the lane: computed from data, a quotient,
//! a clamp) is vectorized by GCC from its offsets; in 64 bits an AVX2 gather takes 4 lanes, in
//! 32 bits 8, and the offsets' arithmetic costs half as much. So a short vector loop with
//! gathers gets a second version, chosen at run time, that computes those offsets modulo 2^32:
//!
//! - `+`, `-` and `*` commute with reduction modulo 2^32, so they are computed in `uint32_t`
//!   whatever the size of their operands;
//! - `min`, `max`, a clamped data index and a floor division by a power of two do not, so they
//!   are computed in `int32_t` only where the operands provably lie in the range of `int32_t`
//!   ([`range`]: interval arithmetic over the lane's bounds, the types of data values, and
//!   lane-invariant control subterms assumed within `±2^24`, an assumption the version's guard
//!   checks at run time), and otherwise exactly in 64 bits and truncated;
//! - the offset itself is exact because the checker proved it within the buffer, and the
//!   version runs only when every gathered buffer has fewer than 2^31 elements.

use crate::emit::ProcCx;
use crate::vector_loops::{affine_in, mentions};
use weft_ir::{BinOp, DType, Diagnostic, Expr, ExprKind, Stmt, Sym, Ty, UnOp};

/// Lane-invariant control subterms of a narrowed operation are assumed to lie in
/// `[-LEAF_BOUND, LEAF_BOUND]`; the narrow version's guard checks it. Image coordinates and
/// extents are far below it, and sums of a few such terms stay within `int32_t`.
const LEAF_BOUND: i128 = 1 << 24;

/// The values an integer expression can take: `[lo, hi]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    lo: i128,
    hi: i128,
}

impl Range {
    fn new(lo: i128, hi: i128) -> Range {
        Range { lo, hi }
    }

    fn point(v: i128) -> Range {
        Range::new(v, v)
    }

    /// Every value of an integer data type (a bool is 0 or 1).
    fn of_type(d: DType) -> Range {
        let bits = d.bits();
        match d {
            DType::Bool => Range::new(0, 1),
            _ if d.is_signed() => Range::new(-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
            _ => Range::new(0, (1i128 << bits) - 1),
        }
    }

    fn within(self, outer: Range) -> bool {
        outer.lo <= self.lo && self.hi <= outer.hi
    }

    fn fits_i32(self) -> bool {
        self.within(Range::of_type(DType::I32))
    }

    fn union(self, o: Range) -> Range {
        Range::new(self.lo.min(o.lo), self.hi.max(o.hi))
    }

    /// `None` where a bound overflows i128 (products of products of leaves).
    fn arith(self, op: BinOp, o: Range) -> Option<Range> {
        Some(match op {
            BinOp::Add => Range::new(self.lo.checked_add(o.lo)?, self.hi.checked_add(o.hi)?),
            BinOp::Sub => Range::new(self.lo.checked_sub(o.hi)?, self.hi.checked_sub(o.lo)?),
            BinOp::Mul => {
                let c = [
                    self.lo.checked_mul(o.lo)?,
                    self.lo.checked_mul(o.hi)?,
                    self.hi.checked_mul(o.lo)?,
                    self.hi.checked_mul(o.hi)?,
                ];
                Range::new(*c.iter().min()?, *c.iter().max()?)
            }
            BinOp::Min => Range::new(self.lo.min(o.lo), self.hi.min(o.hi)),
            BinOp::Max => Range::new(self.lo.max(o.lo), self.hi.max(o.hi)),
            _ => return None,
        })
    }

    fn neg(self) -> Option<Range> {
        Some(Range::new(self.hi.checked_neg()?, self.lo.checked_neg()?))
    }

    /// Floor division and Euclidean remainder by a positive constant.
    fn by_constant(self, op: BinOp, k: i128) -> Option<Range> {
        match op {
            BinOp::Div => Some(Range::new(self.lo.div_euclid(k), self.hi.div_euclid(k))),
            BinOp::Mod => Some(Range::new(0, k - 1)),
            _ => None,
        }
    }
}

/// The values `e` can take inside one execution of a short vector loop of `var` (whose lane
/// takes the values `lane`), or `None` when nothing useful is known (a control expression with
/// operations the analysis does not follow). Every lane-invariant control subterm without reads
/// is taken as a whole and assumed within `±LEAF_BOUND`; it is added to `leaves`, which the
/// caller's run-time guard must check. A data integer value always lies in its type's range,
/// and exactly in the computed interval where that interval fits the type (no wrap-around).
pub(crate) fn range(e: &Expr, var: &Sym, lane: Range, leaves: &mut Vec<Expr>) -> Option<Range> {
    if let ExprKind::Const(weft_ir::Const::Int(v)) = e.kind {
        if matches!(e.ty, Ty::Int) || matches!(e.ty, Ty::Data(d) if d.is_int()) {
            return Some(Range::point(i128::from(v)));
        }
    }
    match e.ty {
        Ty::Int => {
            if !mentions(e, var) && !reads(e) {
                leaves.push(e.clone());
                return Some(Range::new(-LEAF_BOUND, LEAF_BOUND));
            }
            match &e.kind {
                ExprKind::Var(v) if v == var => Some(lane),
                ExprKind::Binary(op, a, b) => {
                    if let (Some(k), BinOp::Div | BinOp::Mod) = (b.as_int_const(), op) {
                        // A control constant: exact in i64.
                        return match k > 0 {
                            true => range(a, var, lane, leaves)?.by_constant(*op, i128::from(k)),
                            false => None,
                        };
                    }
                    let (ra, rb) = (range(a, var, lane, leaves)?, range(b, var, lane, leaves)?);
                    ra.arith(*op, rb)
                }
                ExprKind::Unary(UnOp::Neg, a) => range(a, var, lane, leaves)?.neg(),
                ExprKind::Select(_, a, b) => {
                    Some(range(a, var, lane, leaves)?.union(range(b, var, lane, leaves)?))
                }
                // `max(min(value, hi), lo)` lies in [lo, max(lo, hi)] whatever the value.
                ExprKind::DataIndex { lo, hi, .. } => {
                    let (l, h) = (range(lo, var, lane, leaves)?, range(hi, var, lane, leaves)?);
                    Some(Range::new(l.lo, l.hi.max(h.hi)))
                }
                _ => None,
            }
        }
        Ty::Bool | Ty::Data(DType::Bool) => Some(Range::new(0, 1)),
        Ty::Data(d) if d.is_int() => {
            let full = Range::of_type(d);
            let mut sub = |x: &Expr| range(x, var, lane, leaves).unwrap_or(full);
            let exact = match &e.kind {
                ExprKind::Binary(op, a, b) => match (constant_in(b, d), op) {
                    (Some(k), BinOp::Div | BinOp::Mod) if k > 0 => {
                        sub(a).by_constant(*op, i128::from(k))
                    }
                    (_, BinOp::Div | BinOp::Mod) => None,
                    _ => {
                        let ra = sub(a);
                        ra.arith(*op, sub(b))
                    }
                },
                ExprKind::Unary(UnOp::Neg, a) => sub(a).neg(),
                ExprKind::Select(_, a, b) => {
                    let ra = sub(a);
                    Some(ra.union(sub(b)))
                }
                ExprKind::Cast(_, x) => match x.ty {
                    Ty::Int | Ty::Bool => range(x, var, lane, leaves),
                    Ty::Data(f) if !f.is_float() => Some(sub(x)),
                    _ => None,
                },
                _ => None,
            };
            Some(exact.filter(|r| r.within(full)).unwrap_or(full))
        }
        _ => None,
    }
}

/// The value of a constant of data type `d` (`-(-128)` in i8 is -128, not the 128 its i64
/// folding gives): `None` unless the folded value is one `d` holds.
fn constant_in(e: &Expr, d: DType) -> Option<i64> {
    let c = e.as_int_const()?;
    let full = Range::of_type(d);
    (full.lo <= i128::from(c) && i128::from(c) <= full.hi).then_some(c)
}

fn reads(e: &Expr) -> bool {
    let mut found = false;
    weft_ir::visit::walk_expr(e, &mut |x| {
        found |= matches!(x.kind, ExprKind::Read { .. } | ExprKind::ReadConfig { .. })
    });
    found
}

/// `k` where the expression is the constant 2^k of type `d`, 1 <= k < the width of `d` (a
/// wider shift would be undefined in C), also seen through a cast to `d` (`i32(2)`). The
/// constant must be one `d` holds: `-(-128)` folds to 128 in i64 but is -128 in i8, where the
/// division is by -128.
pub(crate) fn power_of_two(e: &Expr, d: DType) -> Option<u32> {
    // Through a cast only of a control constant (`i32(2)`), which folds exactly in i64.
    let c = match &e.kind {
        ExprKind::Cast(to, x) if *to == d && x.ty == Ty::Int => x.as_int_const()?,
        _ => e.as_int_const()?,
    };
    let bits = d.bits();
    let fits = if d.is_signed() {
        bits >= 64 || c < 1i64 << (bits - 1)
    } else {
        bits >= 64 || c < 1i64 << bits
    };
    (fits && c > 1 && (c as u64).is_power_of_two())
        .then(|| c.trailing_zeros())
        .filter(|&k| k < bits)
}

/// The state of the narrow version of a short vector loop being emitted.
pub(crate) struct Narrowing {
    var: Sym,
    lane: Range,
    /// The lane-invariant subterms the narrowed operations assumed within `±LEAF_BOUND`.
    leaves: Vec<Expr>,
}

/// Whether an access inside a vector loop of `var` is a gather: some index is not affine in
/// `var` (see [`affine_in`]).
pub(crate) fn gathered(idx: &[Expr], var: &Sym) -> bool {
    idx.iter().any(|e| !affine_in(e, var))
}

impl ProcCx<'_> {
    /// Whether the offsets of the loop being emitted are narrowed, and of which loop variable.
    pub(crate) fn narrowing_var(&self) -> Option<&Sym> {
        self.narrow.as_ref().map(|n| &n.var)
    }

    /// The condition under which a short vector loop may compute its gathers' offsets in 32
    /// bits: every dense buffer it gathers from has fewer than 2^31 elements. The checker
    /// proved each such access's indices within the buffer's extents, so its offset lies in
    /// [0, 2^31) and [`ProcCx::low32`] computes it exactly. `None` when the loop has no such
    /// access (nothing to gain). The guard for the leaves of narrowed operations is added by
    /// [`ProcCx::narrow_versions`].
    fn narrow_condition(&mut self, var: &Sym, body: &[Stmt]) -> Option<Vec<String>> {
        let mut conds: Vec<String> = Vec::new();
        for (buf, idx, span) in crate::emit::accesses(body) {
            if self.is_hoisted(idx) || !gathered(idx, var) {
                continue;
            }
            let Ok(v) = self.view(&buf, span) else {
                continue;
            };
            let Some((first, rest)) = v.dense_shape.as_ref().and_then(|s| s.split_first()) else {
                continue;
            };
            if !v.mem.addressable {
                continue;
            }
            let mut span = first.clone();
            for n in rest {
                let f = self.unit.helpers.mul_sat();
                span = format!("{f}({span}, {n})");
            }
            let c = format!("{span} <= 2147483647");
            if !conds.contains(&c) {
                conds.push(c);
            }
        }
        (!conds.is_empty()).then_some(conds)
    }

    /// Emits a short vector loop of `var` (`lane_lo <= var < lane_hi`, constants) with gathers
    /// as two versions when [`ProcCx::narrow_condition`] holds: offsets in 32 bits where the
    /// guard holds, the general loop otherwise. `emit_loop` emits the loop once. Returns false
    /// (emitting nothing) when the loop has no gathers to narrow.
    pub(crate) fn narrow_versions(
        &mut self,
        var: &Sym,
        lane: (i64, i64),
        body: &[Stmt],
        emit_loop: &mut dyn FnMut(&mut Self) -> Result<(), Diagnostic>,
    ) -> Result<bool, Diagnostic> {
        if self.narrow.is_some() {
            return Ok(false);
        }
        let Some(mut conds) = self.narrow_condition(var, body) else {
            return Ok(false);
        };
        // The narrow version is emitted first, aside, because its guard depends on the leaves
        // its narrowed operations assumed bounded.
        let outer = std::mem::take(&mut self.out);
        self.indent += 1;
        self.narrow = Some(Narrowing {
            var: var.clone(),
            lane: Range::new(i128::from(lane.0), i128::from(lane.1) - 1),
            leaves: Vec::new(),
        });
        let narrow_loop = emit_loop(self);
        let narrowing = self.narrow.take();
        self.indent -= 1;
        let narrow_text = std::mem::replace(&mut self.out, outer);
        narrow_loop?;
        // Every leaf appears in an index of the body, which the loop evaluates in each of its
        // (at least 8) iterations: evaluating it before the loop is safe.
        for leaf in narrowing.map(|n| n.leaves).unwrap_or_default() {
            let t = self.ctrl_expr(&leaf)?;
            let c = format!("({t}) >= -{LEAF_BOUND} && ({t}) <= {LEAF_BOUND}");
            if !conds.contains(&c) {
                conds.push(c);
            }
        }
        self.line(&format!("if ({}) {{", conds.join(" && ")));
        self.out.push_str(&narrow_text);
        self.line("} else {");
        self.indent += 1;
        emit_loop(self)?;
        self.indent -= 1;
        self.line("}");
        Ok(true)
    }

    /// Whether `e` lies within `int32_t` in the loop being narrowed; on success the leaves the
    /// answer assumed are kept for the guard.
    fn exact32(&mut self, es: &[&Expr]) -> bool {
        let Some(n) = self.narrow.as_mut() else {
            return false;
        };
        let mut leaves = Vec::new();
        let ok = es
            .iter()
            .all(|e| range(e, &n.var, n.lane, &mut leaves).is_some_and(|r| r.fits_i32()));
        if ok {
            n.leaves.extend(leaves);
        }
        ok
    }

    /// An integer expression modulo 2^32, as a `uint32_t`, inside the narrow version of a
    /// vector loop (see the module's doc): `+`, `-`, `*`, masks and casts between types of at
    /// least 32 bits in 32 bits; `min`, `max`, clamped data indices and floor division by a
    /// power of two in `int32_t` where their operands provably fit; anything else computed
    /// exactly (in 64 bits) and truncated. Where the value lies in [0, 2^31), its `int32_t` is
    /// the value.
    pub(crate) fn low32(&mut self, e: &Expr) -> Result<String, Diagnostic> {
        if !self.narrow.as_ref().is_some_and(|n| mentions(e, &n.var)) {
            // Lane-invariant: computed once, out of the loop, by GCC.
            return Ok(format!("(uint32_t) ({})", self.expr(e)?));
        }
        // Types whose arithmetic wraps at a multiple of 2^32 (control integers never wrap).
        let wide = match e.ty {
            Ty::Int => Some(DType::I64),
            Ty::Data(d) if d.is_int() && d.bits() >= 32 => Some(d),
            _ => None,
        };
        let Some(d) = wide else {
            return Ok(format!("(uint32_t) ({})", self.expr(e)?));
        };
        // `min`, `max` and floor division in `int32_t` only for 64-bit values (narrower ones
        // are already computed in 32 bits).
        let signed64 = d == DType::I64;
        Ok(match &e.kind {
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                let o = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    _ => "*",
                };
                format!("(uint32_t) ({} {o} {})", self.low32(a)?, self.low32(b)?)
            }
            ExprKind::Unary(UnOp::Neg, a) => format!("(uint32_t) (0u - {})", self.low32(a)?),
            // A Euclidean remainder by 2^k (k < 32) is the low k bits, of the value modulo 2^32.
            ExprKind::Binary(BinOp::Mod, a, b) if power_of_two(b, d).is_some_and(|k| k < 32) => {
                let m = (1u64 << power_of_two(b, d).unwrap_or(0)) - 1;
                format!("(uint32_t) ({} & {m}u)", self.low32(a)?)
            }
            ExprKind::Binary(BinOp::Div, a, b)
                if signed64 && power_of_two(b, d).is_some_and(|k| k < 32) && self.exact32(&[a]) =>
            {
                let k = power_of_two(b, d).unwrap_or(0);
                format!("(uint32_t) ((int32_t) {} >> {k})", self.low32(a)?)
            }
            ExprKind::Binary(op @ (BinOp::Min | BinOp::Max), a, b)
                if signed64 && self.exact32(&[a, b]) =>
            {
                let f = self.unit.helpers.min_max(DType::I32, *op == BinOp::Min);
                let (a, b) = (self.low32(a)?, self.low32(b)?);
                format!("(uint32_t) {f}((int32_t) {a}, (int32_t) {b})")
            }
            ExprKind::DataIndex { value, lo, hi } if self.exact32(&[value, lo, hi]) => {
                let min = self.unit.helpers.min_max(DType::I32, true);
                let max = self.unit.helpers.min_max(DType::I32, false);
                let (v, lo, hi) = (self.low32(value)?, self.low32(lo)?, self.low32(hi)?);
                format!("(uint32_t) {max}({min}((int32_t) {v}, (int32_t) {hi}), (int32_t) {lo})")
            }
            ExprKind::Select(c, a, b) => {
                let c = self.expr(c)?;
                format!("({c} ? {} : {})", self.low32(a)?, self.low32(b)?)
            }
            // Conversions between integer types keep the low 32 bits of a value of at least 32
            // bits; a narrower one converts to `uint32_t` modulo 2^32 as its extension would.
            ExprKind::Cast(_, x) => match x.ty {
                Ty::Int => self.low32(x)?,
                Ty::Data(f) if f.is_int() && f.bits() >= 32 => self.low32(x)?,
                Ty::Data(f) if f.is_int() => format!("(uint32_t) {}", self.expr(x)?),
                _ => format!("(uint32_t) ({})", self.expr(e)?),
            },
            _ => format!("(uint32_t) ({})", self.expr(e)?),
        })
    }
}
