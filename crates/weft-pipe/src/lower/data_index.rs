//! Coordinates computed from data (lookup tables, histograms: `lut(in(x, y))`,
//! `h(clamp(in(r.x, r.y), 0, 255)) += 1`). Such a coordinate has no control expression; bounds
//! inference uses an interval of every value it can take instead, from an interval analysis of
//! the data expression (clamps against control bounds, the ranges of narrow integer types,
//! arithmetic on ranges). The access is emitted as `clamp_index(value - min, lo - min, hi - min)`:
//! the proc layer proves it safe for any data, and the clamp never changes the value, because
//! the interval holds every value: arithmetic on constant ranges is checked not to wrap, and
//! arithmetic on symbolic ones (clamps to coordinates or parameters) gets a precondition that
//! its ends fit `i32` over the whole region, so a wrapped value stops the proc at a named
//! assertion instead of being clamped.

use super::*;

/// Lower and upper bound of a coordinate (`None`: unbounded on that side).
type Range = (End, End);

impl Lower<'_> {
    /// Whether a coordinate reads data (a call, or a parameter that is not an index), so that
    /// it has no control expression.
    pub(super) fn reads_data(&self, e: &Expr) -> bool {
        let mut found = false;
        e.walk(&mut |x| match x {
            Expr::Call(..) => found = true,
            Expr::Param(k) => found |= matches!(self.params[*k], ParamRepr::Scalar(_)),
            _ => {}
        });
        found
    }

    /// Bounds of every value of the data coordinate `e` of stage `ctx`, as control expressions
    /// of the stage's variables.
    pub(super) fn data_range(&self, e: &Expr, ctx: (usize, usize)) -> Res<(Lin, Lin)> {
        self.data_range_with(e, ctx, &mut Vec::new())
    }

    /// [`Lower::data_range`], also giving the ends of symbolic arithmetic (which must fit i32).
    fn data_range_with(
        &self,
        e: &Expr,
        ctx: (usize, usize),
        wraps: &mut Vec<Lin>,
    ) -> Res<(Lin, Lin)> {
        match self.interval(e, ctx, wraps)? {
            (Some(lo), Some(hi)) => Ok((lo, hi)),
            _ => Err(fail(
                "data-index",
                format!(
                    "the coordinate `{e:?}` reads data and has no bounds: clamp it (`clamp(e, lo, hi)` with bounds that do not read data), or compute it in an integer type of at most 16 bits"
                ),
            )),
        }
    }

    /// The coordinate `a` of stage `ctx` as an index of a buffer whose first element is at
    /// coordinate `base`.
    pub(super) fn index_expr(
        &self,
        a: &Expr,
        base: &Lin,
        ctx: (usize, usize),
        env: &HashMap<VarId, IExpr>,
    ) -> Res<IExpr> {
        if !self.reads_data(a) {
            self.coordinate_fits(a, ctx);
            return self.lin_expr(&self.to_lin(a, Some(ctx))?.sub(base), env);
        }
        let mut wraps = Vec::new();
        let (lo, hi) = self.data_range_with(a, ctx, &mut wraps)?;
        let scope = self.scope_from(Site::Root, ctx.0, ctx.1);
        for l in wraps {
            let (Some(lo), Some(hi)) = (scope.lower(&l), scope.upper(&l)) else {
                return Err(fail(
                    "data-index",
                    format!("cannot bound the intermediate values of the coordinate `{a:?}`"),
                ));
            };
            let mut pre = self.data_preconds.borrow_mut();
            pre.push(Cond::le(&Lin::konst(i32::MIN as i64), &lo));
            pre.push(Cond::le(&hi, &Lin::konst(i32::MAX as i64)));
        }
        // In 64 bits: a coordinate and a buffer's base are 32-bit values, so nothing wraps.
        let wide = |x: IExpr| IExpr::cast(DType::I64, x);
        let value = IExpr::binary(
            BinOp::Sub,
            wide(self.data_expr(a, ctx, env)?),
            wide(self.lin_expr(base, env)?),
        );
        Ok(IExpr::data_index(
            value,
            self.lin_expr(&lo.sub(base), env)?,
            self.lin_expr(&hi.sub(base), env)?,
        ))
    }

    /// The reference computes coordinates in i32, wrapping; the proc computes them exactly.
    /// So every sum, difference, product and negation inside coordinate `a` of stage `ctx` must
    /// fit i32 wherever the stage runs: a precondition, so that a coordinate that would wrap
    /// stops the proc at a named assertion instead of reading another point. (Constants fold
    /// wrapping, as the reference computes them; division, remainder, `min` and `max` of values
    /// that fit also fit.)
    fn coordinate_fits(&self, a: &Expr, ctx: (usize, usize)) {
        let mut nodes = Vec::new();
        a.walk(&mut |x| {
            if matches!(
                x,
                Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, ..) | Expr::Unary(UnOp::Neg, _)
            ) {
                nodes.push(x.clone());
            }
        });
        if nodes.is_empty() {
            return;
        }
        let scope = self.scope_from(Site::Root, ctx.0, ctx.1);
        let mut pre = self.data_preconds.borrow_mut();
        for n in nodes {
            let Ok(l) = self.to_lin(&n, Some(ctx)) else {
                continue;
            };
            if l.as_const().is_some() {
                continue;
            }
            // Unbounded ends cannot be stated (and leave the region unbounded, an error).
            if let Some(lo) = scope.lower(&l) {
                pre.push(Cond::le(&Lin::konst(i32::MIN as i64), &lo));
            }
            if let Some(hi) = scope.upper(&l) {
                pre.push(Cond::le(&hi, &Lin::konst(i32::MAX as i64)));
            }
        }
    }

    fn interval(&self, e: &Expr, ctx: (usize, usize), wraps: &mut Vec<Lin>) -> Res<Range> {
        if !self.reads_data(e) {
            if let Expr::Lit(v) = e {
                // A literal of the data's type (`clamp(input(r), 0, 255)` with a u8 input).
                if let Some(v) = v.as_i128().and_then(|v| i64::try_from(v).ok()) {
                    return Ok((Some(Lin::konst(v)), Some(Lin::konst(v))));
                }
            }
            if self.dtype_of(e) != COORD {
                return Ok(type_range(self.dtype_of(e)));
            }
            let l = self.to_lin(e, Some(ctx))?;
            return Ok((Some(l.clone()), Some(l)));
        }
        Ok(match e {
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                let (x, y) = (self.interval(a, ctx, wraps)?, self.interval(b, ctx, wraps)?);
                if *op == BinOp::Min {
                    (
                        both(x.0, y.0, Lin::min_with),
                        either(x.1, y.1, Lin::min_with),
                    )
                } else {
                    (
                        either(x.0, y.0, Lin::max_with),
                        both(x.1, y.1, Lin::max_with),
                    )
                }
            }
            Expr::Select(_, a, b) => {
                let (x, y) = (self.interval(a, ctx, wraps)?, self.interval(b, ctx, wraps)?);
                (both(x.0, y.0, Lin::min_with), both(x.1, y.1, Lin::max_with))
            }
            Expr::Cast(t, a) => {
                let from = self.dtype_of(a);
                let r = self.interval(a, ctx, wraps)?;
                match (from.int_range(), t.int_range()) {
                    // Widening keeps every value.
                    (Some((flo, fhi)), Some((tlo, thi))) if tlo <= flo && fhi <= thi => r,
                    _ => match const_range(&r) {
                        Some((lo, hi)) if from.is_int() && fits(lo, hi, *t) => r,
                        _ => type_range(*t),
                    },
                }
            }
            Expr::Unary(UnOp::Neg, a) => {
                let r = self.interval(a, ctx, wraps)?;
                match const_range(&r) {
                    Some((lo, hi)) => self.folded(e, Some((-hi, -lo))),
                    None => symbolic((r.1.map(|h| h.scale(-1)), r.0.map(|l| l.scale(-1))), wraps),
                }
            }
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b) => {
                let (mut x, mut y) = (self.interval(a, ctx, wraps)?, self.interval(b, ctx, wraps)?);
                // A constant factor on the left (`256 * k`) scales like one on the right.
                if *op == BinOp::Mul && const_range(&x).is_some_and(|(l, h)| l == h) {
                    std::mem::swap(&mut x, &mut y);
                }
                if let (Some(cx), Some(cy)) = (const_range(&x), const_range(&y)) {
                    return Ok(self.folded(e, corners(*op, cx, cy)));
                }
                // Symbolic ends (clamps to coordinates or parameters): they must fit i32, which
                // a precondition states (see the module's comment).
                let k = const_range(&y)
                    .filter(|(lo, hi)| lo == hi)
                    .map(|(k, _)| k as i64);
                let r = match (op, k) {
                    (BinOp::Add, _) => (both(x.0, y.0, Lin::add), both(x.1, y.1, Lin::add)),
                    (BinOp::Sub, _) => (both(x.0, y.1, Lin::sub), both(x.1, y.0, Lin::sub)),
                    (BinOp::Mul, Some(k)) if k >= 0 => {
                        (x.0.map(|l| l.scale(k)), x.1.map(|h| h.scale(k)))
                    }
                    (BinOp::Mul, Some(k)) => (x.1.map(|h| h.scale(k)), x.0.map(|l| l.scale(k))),
                    (BinOp::Div, Some(k)) if k > 0 => {
                        (x.0.map(|l| l.div(k)), x.1.map(|h| h.div(k)))
                    }
                    _ => return Ok(type_range(self.dtype_of(e))),
                };
                symbolic(r, wraps)
            }
            _ => type_range(self.dtype_of(e)),
        })
    }

    /// The range of integer arithmetic `e` whose exact result lies in `r`: `r` where it fits
    /// `e`'s type (nothing wraps), else the type's range.
    fn folded(&self, e: &Expr, r: Option<(i128, i128)>) -> Range {
        let t = self.dtype_of(e);
        match r {
            Some((lo, hi)) if t.is_int() && fits(lo, hi, t) => konst_range(lo, hi),
            // One value that wraps (`65536 * 65536` in i32): the value it wraps to.
            Some((v, w)) if v == w && t.is_int() => {
                let s = Scalar::from_int_wrapping(v, t).as_i128().unwrap_or(0);
                konst_range(s, s)
            }
            _ => type_range(t),
        }
    }

    /// The element type of an expression (the pipeline is valid, so operands agree).
    pub(super) fn dtype_of(&self, e: &Expr) -> DType {
        match e {
            Expr::Lit(s) => s.dtype(),
            Expr::Var(_) | Expr::RVar(_) | Expr::InputDim { .. } | Expr::OutputDim { .. } => COORD,
            Expr::Param(k) => self.p.params[*k].ty,
            Expr::Call(Callee::Func(g), _) => self.p.funcs[*g].ty,
            Expr::Call(Callee::Input(k), _) => self.p.inputs[*k].elem,
            Expr::Unary(_, a) => self.dtype_of(a),
            Expr::Binary(op, _, _) if op.is_comparison() || op.is_logic() => DType::Bool,
            Expr::Binary(_, a, _) | Expr::Select(_, a, _) => self.dtype_of(a),
            Expr::Cast(t, _) => *t,
            Expr::Math(_, args) => args.first().map_or(DType::F32, |a| self.dtype_of(a)),
        }
    }
}

/// A range computed by arithmetic on symbolic ends: its ends must fit the i32 the reference
/// computes in, a precondition (the operands' ends are recorded where they are computed).
fn symbolic(r: Range, wraps: &mut Vec<Lin>) -> Range {
    wraps.extend(r.0.iter().chain(&r.1).cloned());
    r
}

/// Both ends known: combine them; otherwise unknown.
fn both(a: End, b: End, f: fn(&Lin, &Lin) -> Lin) -> End {
    Some(f(&a?, &b?))
}

/// `min`'s upper or `max`'s lower end: either known end bounds the result.
fn either(a: End, b: End, f: fn(&Lin, &Lin) -> Lin) -> End {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(&a, &b)),
        (a, b) => a.or(b),
    }
}

fn const_range(r: &Range) -> Option<(i128, i128)> {
    let lo = r.0.as_ref()?.as_const()?;
    let hi = r.1.as_ref()?.as_const()?;
    Some((lo as i128, hi as i128))
}

fn konst_range(lo: i128, hi: i128) -> Range {
    (Some(Lin::konst(lo as i64)), Some(Lin::konst(hi as i64)))
}

fn fits(lo: i128, hi: i128, t: DType) -> bool {
    t.int_range()
        .is_some_and(|(tlo, thi)| tlo <= lo && hi <= thi)
}

/// The range of a value of type `t`, where that bounds a coordinate usefully (integer types
/// of at most 16 bits).
fn type_range(t: DType) -> Range {
    match t.int_range() {
        Some((lo, hi)) if t.bits() <= 16 => konst_range(lo, hi),
        _ => (None, None),
    }
}

/// The exact range of `x op y` for operands in the constant ranges `x` and `y` (division as
/// the semantics: floor for a positive divisor, `x / 0 = 0`).
fn corners(op: BinOp, x: (i128, i128), y: (i128, i128)) -> Option<(i128, i128)> {
    let vals: Vec<i128> = match op {
        BinOp::Add => vec![x.0 + y.0, x.1 + y.1],
        BinOp::Sub => vec![x.0 - y.1, x.1 - y.0],
        BinOp::Mul => vec![x.0 * y.0, x.0 * y.1, x.1 * y.0, x.1 * y.1],
        // `x / 0 == 0`.
        BinOp::Div if y == (0, 0) => vec![0],
        BinOp::Div if y.0 > 0 => vec![
            x.0.div_euclid(y.0),
            x.0.div_euclid(y.1),
            x.1.div_euclid(y.0),
            x.1.div_euclid(y.1),
        ],
        _ => return None,
    };
    Some((*vals.iter().min()?, *vals.iter().max()?))
}
