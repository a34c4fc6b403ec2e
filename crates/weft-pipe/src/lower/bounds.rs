//! Bounds inference: control expressions of coordinates, the scopes in which loops run over
//! their ranges, the region of every func at its compute level (tight per tile, with the β0
//! engine as the floor), sliding windows, the ranges of every stage's loops, and the buffers.

use super::*;

/// Region ends of root funcs larger than this (in nodes) are bound to names.
const NAMED_SIZE: usize = 24;

impl Lower<'_> {
    /// A coordinate expression of stage `ctx = (func, stage)` as a control expression; `None`
    /// for startup expressions (literals and parameters only).
    pub(super) fn to_lin(&self, e: &Expr, ctx: Option<(usize, usize)>) -> Res<Lin> {
        let bad = |why: &str| {
            fail(
                "affine",
                format!("the index expression `{e:?}` {why}; the proc layer's control arithmetic is quasi-affine"),
            )
        };
        Ok(match e {
            Expr::Lit(s) => match (s.dtype(), s.as_i128()) {
                (DType::I32, Some(v)) => Lin::konst(v as i64),
                _ => return Err(bad("has a non-i32 literal")),
            },
            Expr::Var(k) => {
                let (f, s) = ctx.ok_or_else(|| bad("is not a startup expression"))?;
                let st = &self.funcs[f].stages[s];
                let v = st.pure_of[*k].ok_or_else(|| {
                    bad("uses a pure variable that the update's left-hand side does not bind")
                })?;
                Lin::var(st.vars[v].id)
            }
            Expr::RVar(k) => {
                let (f, s) = ctx.ok_or_else(|| bad("is not a startup expression"))?;
                let st = &self.funcs[f].stages[s];
                Lin::var(st.vars[st.rvar_of[*k]].id)
            }
            Expr::InputDim { input, dim, extent } => {
                let io = &self.inputs[*input];
                Lin::var(if *extent {
                    io.lens[*dim]
                } else {
                    io.mins[*dim]
                })
            }
            Expr::OutputDim {
                output,
                dim,
                extent,
            } => {
                let io = &self.outputs[*output];
                Lin::var(if *extent {
                    io.lens[*dim]
                } else {
                    io.mins[*dim]
                })
            }
            Expr::Param(k) => match &self.params[*k] {
                ParamRepr::Index(v) => Lin::var(*v),
                ParamRepr::Scalar(_) => return Err(bad("uses a parameter that is not i32")),
            },
            Expr::Unary(UnOp::Neg, a) => self.to_lin(a, ctx)?.scale(-1),
            Expr::Cast(t, a) if *t == COORD => self.to_lin(a, ctx)?,
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.to_lin(a, ctx)?, self.to_lin(b, ctx)?);
                // Constants fold in i32, wrapping, as the reference evaluates coordinates.
                if let (Some(u), Some(v)) = (x.as_const(), y.as_const()) {
                    let (u, v) = (Scalar::I32(u as i32), Scalar::I32(v as i32));
                    if let Ok(Scalar::I32(r)) = weft_interp::binary(*op, u, v) {
                        return Ok(Lin::konst(r as i64));
                    }
                }
                match op {
                    BinOp::Add => x.add(&y),
                    BinOp::Sub => x.sub(&y),
                    BinOp::Mul => x.mul(&y).ok_or_else(|| bad("multiplies two variables"))?,
                    BinOp::Div | BinOp::Mod => match y.as_const() {
                        Some(0) => Lin::konst(0),
                        Some(d) if d > 0 => {
                            if *op == BinOp::Div {
                                x.div(d)
                            } else {
                                x.rem(d)
                            }
                        }
                        _ => return Err(bad("divides by a variable or a negative constant")),
                    },
                    BinOp::Min => x.min_with(&y),
                    BinOp::Max => x.max_with(&y),
                    _ => return Err(bad("is not an integer expression")),
                }
            }
            Expr::Select(c, a, b) => {
                let c = self.to_cond(c, ctx)?;
                Lin::select(&c, &self.to_lin(a, ctx)?, &self.to_lin(b, ctx)?)
            }
            Expr::Call(..) => return Err(bad("reads data (a data-dependent index)")),
            _ => return Err(bad("is not quasi-affine")),
        })
    }

    pub(super) fn to_cond(&self, e: &Expr, ctx: Option<(usize, usize)>) -> Res<Cond> {
        Ok(match e {
            Expr::Lit(Scalar::Bool(b)) => Cond::Const(*b),
            Expr::Unary(UnOp::Not, a) => Cond::not(self.to_cond(a, ctx)?),
            Expr::Binary(BinOp::And, a, b) => {
                Cond::and(self.to_cond(a, ctx)?, self.to_cond(b, ctx)?)
            }
            Expr::Binary(BinOp::Or, a, b) => Cond::or(self.to_cond(a, ctx)?, self.to_cond(b, ctx)?),
            Expr::Binary(op, a, b) if op.is_comparison() => {
                let (x, y) = (self.to_lin(a, ctx)?, self.to_lin(b, ctx)?);
                match op {
                    BinOp::Lt => Cond::lt(&x, &y),
                    BinOp::Le => Cond::le(&x, &y),
                    BinOp::Gt => Cond::lt(&y, &x),
                    BinOp::Ge => Cond::le(&y, &x),
                    BinOp::Eq => Cond::eq(&x, &y),
                    _ => Cond::not(Cond::eq(&x, &y)),
                }
            }
            _ => {
                return Err(fail(
                    "affine",
                    format!("the condition `{e:?}` is not a quasi-affine condition"),
                ))
            }
        })
    }

    /// Bind the variables of stage `(f, s)` whose loops among `relaxed` (loop positions) run
    /// over their ranges.
    pub(super) fn bind_stage(&self, scope: &mut Scope, f: usize, s: usize, relaxed: &[usize]) {
        let st = &self.funcs[f].stages[s];
        let leaves: HashSet<usize> = relaxed.iter().map(|&d| st.loops[d].0).collect();
        // Which leaves lie under each variable.
        fn under(st: &Stage, v: usize, leaves: &HashSet<usize>) -> (bool, bool) {
            // (some leaf relaxed, all leaves relaxed)
            match &st.vars[v].how {
                How::Leaf => {
                    let r = leaves.contains(&v);
                    (r, r)
                }
                How::Split { outer, inner, .. } => {
                    let (a, b) = (under(st, *outer, leaves), under(st, *inner, leaves));
                    (a.0 || b.0, a.1 && b.1)
                }
                How::Fused { fused, .. } => under(st, *fused, leaves),
            }
        }
        // Whether a variable takes only values in its range whenever its loops do: splits below
        // it guard their tails or round up or shift by factors its extent makes harmless.
        fn exact(st: &Stage, v: usize, fits: &HashSet<VarId>) -> bool {
            let dv = &st.vars[v];
            match &dv.how {
                How::Leaf => true,
                How::Split {
                    outer,
                    inner,
                    factor,
                    tail,
                } => {
                    let own = match tail {
                        Tail::GuardWithIf => true,
                        Tail::RoundUp => dv.ext.as_const().is_some_and(|e| e % factor == 0),
                        Tail::ShiftInwards => {
                            fits.contains(&dv.id) || dv.ext.as_const().is_some_and(|e| e >= *factor)
                        }
                    };
                    own && exact(st, *outer, fits) && exact(st, *inner, fits)
                }
                How::Fused { fused, .. } => exact(st, *fused, fits),
            }
        }
        for (v, dv) in st.vars.iter().enumerate() {
            let (some, all) = under(st, v, &leaves);
            if !some {
                continue;
            }
            // The shortcuts below give a split variable's range from its own tail alone; that
            // holds only when the loops it is made of stay in their ranges.
            let all = all
                && match &dv.how {
                    How::Leaf => true,
                    How::Split { outer, inner, .. } => {
                        exact(st, *outer, &self.fits) && exact(st, *inner, &self.fits)
                    }
                    How::Fused { fused, .. } => exact(st, *fused, &self.fits),
                };
            let last = dv.min.add(&dv.ext).add_k(-1);
            let beta0 = self.engine == Engine::Beta0;
            let (lo, hi) = match &dv.how {
                How::Leaf => (dv.min.clone(), last),
                How::Split { factor, tail, .. } if all && !beta0 => match tail {
                    Tail::GuardWithIf => (dv.min.clone(), last),
                    Tail::RoundUp => (
                        dv.min.clone(),
                        dv.min
                            .add(&dv.ext.ceil_div(*factor).scale(*factor))
                            .add_k(-1),
                    ),
                    Tail::ShiftInwards
                        if self.fits.contains(&dv.id)
                            || dv.ext.as_const().is_some_and(|e| e >= *factor) =>
                    {
                        (dv.min.clone(), last)
                    }
                    Tail::ShiftInwards => {
                        (dv.min.min_with(&dv.min.add(&dv.ext).add_k(-factor)), last)
                    }
                },
                How::Fused { .. } if all && !beta0 => (dv.min.clone(), last),
                How::Split { tail, .. } => {
                    let def = self.defs[&dv.id].clone();
                    let hi = if *tail == Tail::GuardWithIf && !beta0 {
                        def.min_with(&last)
                    } else {
                        def.clone()
                    };
                    (def, hi)
                }
                How::Fused { .. } => {
                    let def = self.defs[&dv.id].clone();
                    (def.clone(), def)
                }
            };
            scope.bind(dv.id, Some(lo), Some(hi));
        }
    }

    /// The scope of a read in stage `(g, s)` seen from `site`: every loop inside the site on the
    /// way to the read runs over its range.
    pub(super) fn scope_from(&self, site: Site, g: usize, s: usize) -> Scope {
        let mut path = self.chain(g);
        path.push((g, s, usize::MAX));
        self.scope_of(site, &path)
    }

    /// The scope in which the loops of `path` inside `outer` run over their ranges.
    pub(super) fn scope_of(&self, outer: Site, path: &[(usize, usize, usize)]) -> Scope {
        let mut scope = Scope::default();
        for (c, cs, loops) in self.loops_inside(outer, path) {
            let relaxed: Vec<usize> = loops.collect();
            self.bind_stage(&mut scope, c, cs, &relaxed);
        }
        scope
    }

    /// The hull of `args` (in stage `(g, s)`) seen from `site`, per dimension.
    pub(super) fn hull_of(
        &self,
        site: Site,
        g: usize,
        s: usize,
        args: &[Expr],
    ) -> Res<Vec<(End, End)>> {
        self.ranges_in(&self.scope_from(site, g, s), args, (g, s))
    }

    /// The range of each of `args` (coordinates in stage `ctx`) over `scope`.
    pub(super) fn ranges_in(
        &self,
        scope: &Scope,
        args: &[Expr],
        ctx: (usize, usize),
    ) -> Res<Vec<(End, End)>> {
        args.iter()
            .map(|a| {
                let (lo, hi) = if self.reads_data(a) {
                    self.data_range(a, ctx)?
                } else {
                    let l = self.to_lin(a, Some(ctx))?;
                    (l.clone(), l)
                };
                Ok((scope.lower(&lo), scope.upper(&hi)))
            })
            .collect()
    }

    /// A hull of `f`'s dimensions with every end finite, or the error naming the unbounded one.
    pub(super) fn finite(&self, f: usize, hull: Vec<(End, End)>) -> Res<Vec<(Lin, Lin)>> {
        hull.into_iter()
            .enumerate()
            .map(|(d, (lo, hi))| match (lo, hi) {
                (Some(lo), Some(hi)) => Ok((lo, hi)),
                _ => Err(self.unbounded(f, d)),
            })
            .collect()
    }

    pub(super) fn bounds(&mut self) -> Res<()> {
        let n = self.p.funcs.len();
        loop {
            let ready = (0..n).rev().find(|&f| {
                !self.funcs[f].inline
                    && !self.funcs[f].done
                    && self.needs(f).iter().all(|&g| self.funcs[g].done)
            });
            let Some(f) = ready else { break };
            self.infer(f)?;
            self.funcs[f].done = true;
        }
        if let Some(f) = (0..n).find(|&f| !self.funcs[f].inline && !self.funcs[f].done) {
            return Err(fail(
                "compute-at",
                format!(
                    "the compute levels of `{}` and its consumers depend on each other",
                    self.p.funcs[f].name
                ),
            ));
        }
        // Inputs must cover what is read of them.
        for (k, inp) in self.p.inputs.iter().enumerate() {
            let mut hull: Vec<(End, End)> = Vec::new();
            let reads: Vec<&Access> = self
                .accesses
                .iter()
                .filter(|a| a.callee == Callee::Input(k))
                .collect();
            for a in reads {
                let h = self.hull_of(Site::Root, a.func, a.stage, &a.args)?;
                hull = join(hull, h);
            }
            let mut read = Vec::new();
            for (d, (lo, hi)) in hull.into_iter().enumerate() {
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err(fail(
                        "bounds",
                        format!(
                            "cannot bound the reads of input `{}` in dimension {d}",
                            inp.name
                        ),
                    ));
                };
                let min = Lin::var(self.inputs[k].mins[d]);
                let max = min.add(&Lin::var(self.inputs[k].lens[d])).add_k(-1);
                read.push((lo.clone(), hi.clone()));
                self.preconds.push(Cond::le(&min, &lo));
                self.preconds.push(Cond::le(&hi, &max));
            }
            self.input_regions.push(read);
        }
        Ok(())
    }

    /// The funcs whose loop ranges bounds inference of `f` needs: its consumers, and the funcs
    /// whose loops lie between `f`'s compute level and the reads.
    pub(super) fn needs(&self, f: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for a in &self.accesses {
            if a.callee == Callee::Func(f) && a.func != f {
                out.push(a.func);
                out.extend(self.chain(a.func).iter().map(|&(g, _, _)| g));
            }
        }
        out.retain(|&g| g != f);
        out
    }

    /// Bounds of func `f`: the regions of its stages, the ranges of its loops, its buffer.
    pub(super) fn infer(&mut self, f: usize) -> Res<()> {
        let func = &self.p.funcs[f];
        let dims = func.vars.len();
        let site = self.funcs[f].compute;
        let out_index = self.p.outputs.iter().position(|&o| o == f);
        // What consumers read.
        let mut need: Vec<(End, End)> = Vec::new();
        let reads: Vec<(usize, usize, Vec<Expr>)> = self
            .accesses
            .iter()
            .filter(|a| a.callee == Callee::Func(f) && a.func != f)
            .map(|a| (a.func, a.stage, a.args.clone()))
            .collect();
        for (g, s, args) in &reads {
            let h = self.hull_of(site, *g, *s, args)?;
            need = join(need, h);
        }
        let window: Option<Vec<(Lin, Lin)>> = out_index.map(|o| {
            let io = &self.outputs[o];
            (0..dims)
                .map(|d| {
                    let min = Lin::var(io.mins[d]);
                    (min.clone(), min.add(&Lin::var(io.lens[d])).add_k(-1))
                })
                .collect()
        });
        let mut region: Vec<(Lin, Lin)> = Vec::new();
        for d in 0..dims {
            if let Some(w) = &window {
                // An output's region is its window; what consumers read must lie in it.
                if let Some((lo, hi)) = need.get(d) {
                    let (Some(lo), Some(hi)) = (lo, hi) else {
                        return Err(self.unbounded(f, d));
                    };
                    self.preconds.push(Cond::le(&w[d].0, lo));
                    self.preconds.push(Cond::le(hi, &w[d].1));
                }
                region.push(w[d].clone());
                continue;
            }
            match need.get(d) {
                Some((Some(lo), Some(hi))) => region.push((lo.clone(), hi.clone())),
                _ if self.s.funcs[f]
                    .bounds
                    .iter()
                    .any(|b| b.dim == d && b.min.is_some()) =>
                {
                    region.push((Lin::konst(0), Lin::konst(0)))
                }
                _ => return Err(self.unbounded(f, d)),
            }
        }
        // `bound` directives replace the region; they must cover what is needed.
        for b in self.s.funcs[f].bounds.clone() {
            let ext = self.startup(&b.extent)?;
            let min = match &b.min {
                Some(m) => self.startup(m)?,
                None => region[b.dim].0.clone(),
            };
            let max = min.add(&ext).add_k(-1);
            if let Some(w) = &window {
                // An output computes its window: the bound must hold it (and the writes, which
                // must stay in the window, then make them equal), as Halide asserts.
                self.preconds.push(Cond::le(&min, &w[b.dim].0));
                self.preconds.push(Cond::le(&w[b.dim].1, &max));
            }
            if let Some((Some(lo), Some(hi))) = need.get(b.dim) {
                if site != Site::Root {
                    return Err(fail(
                        "bound",
                        format!(
                            "`bound` on `{}`, which is computed inside a loop, is not supported",
                            func.name
                        ),
                    ));
                }
                self.preconds.push(Cond::le(&min, lo));
                self.preconds.push(Cond::le(hi, &max));
            }
            region[b.dim] = (min, max);
        }
        // `align_bounds` widens the region to whole blocks of `modulus` starting at `remainder`.
        for a in self.s.funcs[f].aligns.clone() {
            let (m, r) = (a.modulus, a.remainder);
            let block = |x: &Lin| x.add_k(-r).div(m).scale(m).add_k(r);
            let (lo, hi) = &region[a.dim];
            region[a.dim] = (block(lo), block(hi).add_k(m - 1));
        }
        let slid = self.slide(f, &mut region);
        let mut fold = slid.as_ref().map(|(k, m, _)| (*k, *m));
        if site == Site::Root && window.is_none() {
            self.name_region(f, &mut region);
        }
        // Stage regions, the last first: a stage covers what later stages read or write of f.
        let nstages = self.funcs[f].stages.len();
        let mut stage_region = region.clone();
        let mut writes: Vec<(End, End)> = Vec::new();
        for s in (0..nstages).rev() {
            self.set_ranges(f, s, &stage_region)?;
            // Everything of this stage relaxed: the scope of its body from outside its loops.
            let mut scope = Scope::default();
            let all: Vec<usize> = (0..self.funcs[f].stages[s].loops.len()).collect();
            self.bind_stage(&mut scope, f, s, &all);
            let lhs = self.bodies[f][s].0.clone();
            let w = self.ranges_in(&scope, &lhs, (f, s))?;
            writes = join(writes, w.clone());
            if s == 0 {
                self.funcs[f].computed = self.finite(f, w)?;
                // A fold needs the stage to write exactly the slid rows: a shifted or rounded
                // tile would write rows outside them, into cells that hold rows still needed.
                if let Some((k, _, written)) = &slid {
                    if self.funcs[f].computed.get(*k) != Some(written) {
                        fold = None;
                    }
                }
                break;
            }
            let mut next: Vec<(End, End)> = stage_region
                .iter()
                .map(|(a, b)| (Some(a.clone()), Some(b.clone())))
                .collect();
            next = join(next, w);
            for a in self
                .accesses
                .iter()
                .filter(|a| a.func == f && a.stage == s && a.callee == Callee::Func(f))
            {
                next = join(next, self.ranges_in(&scope, &a.args, (f, s))?);
            }
            stage_region = self.finite(f, next)?;
        }
        // The buffer: what the stages write, over the loops between store and compute level.
        let store = self.funcs[f].store;
        let alloc: Vec<(Lin, Lin)> = if let Some(w) = window {
            // Writes must stay in the window (a shifted or rounded split may leave it).
            let root = self.relax_between(Site::Root, f, &writes);
            for (d, (lo, hi)) in root.into_iter().enumerate() {
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err(self.unbounded(f, d));
                };
                self.preconds.push(Cond::le(&w[d].0, &lo));
                self.preconds.push(Cond::le(&hi, &w[d].1));
            }
            w
        } else {
            let relaxed = if store == site {
                writes
            } else {
                self.relax_between(store, f, &writes)
            };
            self.finite(f, relaxed)?
        };
        let mut alloc = alloc;
        if let Some((k, m)) = fold {
            alloc[k] = (Lin::konst(0), Lin::konst(m - 1));
        }
        self.funcs[f].alloc = alloc;
        self.funcs[f].fold = fold;
        Ok(())
    }

    /// Sliding window (Halide's): a func stored outside the serial loop it is computed in, whose
    /// region moves forward monotonically with that loop's variable in one dimension, computes in
    /// each iteration after the first only what the previous iterations have not: the region's
    /// min in that dimension becomes `max(min(v), max(v - 1) + 1)`. The buffer, at the store
    /// level, keeps the earlier points.
    ///
    /// Storage folding (Halide's, automatic as there): when the region's extent in that
    /// dimension is at most a constant `e` (a constant, or a difference of quotients such as
    /// `(v + 1) / 2 - v / 2 + 1`), every iteration reads rows `[lo(v), hi(v)]` with
    /// `hi(v) < lo(v) + e`, and the rows computed so far end at `hi(v)`; so a circular buffer of
    /// `m >= e` rows (the next power of two) indexed by the row modulo `m` holds them: the
    /// row that replaces row `r >= lo(v)` in its cell is `r + m > hi(v)`, not computed yet, and a
    /// row below `lo(v)` is never read again (the region only moves forward). Returns the
    /// dimension, `m`, and the hull of the rows the stage writes over all iterations when it
    /// writes the slid rows only; the caller drops the fold if the stage writes more.
    pub(super) fn slide(
        &self,
        f: usize,
        region: &mut [(Lin, Lin)],
    ) -> Option<(usize, i64, (Lin, Lin))> {
        let (Site::At(c, s, d), store) = (self.funcs[f].compute, self.funcs[f].store) else {
            return None;
        };
        if store == self.funcs[f].compute
            || !self.p.funcs[f].updates.is_empty()
            || self.engine == Engine::Beta0
        {
            return None;
        }
        let st = &self.funcs[c].stages[s];
        let (lv, kind) = st.loops[d];
        if kind != LoopKind::Serial {
            return None;
        }
        let v = st.vars[lv].id;
        let step = |e: &Lin| {
            let e = self.expand_defs(e);
            let next = e.subst(&|u| (u == v).then(|| Lin::var(v).add_k(1)));
            next.sub(&e).as_const()
        };
        // A region that moves by steps that are not constant still slides if both ends never
        // decrease: the earlier iterations computed every row up to the previous one's max.
        // Only ends that are one quotient of the variable (an upsampled row, `(y + 1) / 2`):
        // for those the checker finds the iteration that wrote a row (at an end of the
        // quotient's range); minima and maxima of several it does not always find.
        let non_decreasing = |e: &Lin| self.expand_defs(e).is_quotient_in(v);
        let mut moving = None;
        for (k, (lo, hi)) in region.iter().enumerate() {
            match (step(lo), step(hi)) {
                (Some(0), Some(0)) => {}
                (Some(a), Some(b)) if a >= 0 && b >= 0 && moving.is_none() => {
                    moving = Some((k, Some(b)))
                }
                _ if moving.is_none() && non_decreasing(lo) && non_decreasing(hi) => {
                    moving = Some((k, None))
                }
                _ => return None,
            }
        }
        let (k, b) = moving?;
        let (lo, hi) = region[k].clone();
        let first = Cond::eq(&Lin::var(v), &st.vars[lv].min);
        let previous_max = match b {
            Some(b) => self.expand_defs(&hi).add_k(-b),
            None => self
                .expand_defs(&hi)
                .subst(&|u| (u == v).then(|| Lin::var(v).add_k(-1))),
        };
        let fresh = lo.max_with(&previous_max.add_k(1));
        region[k].0 = Lin::select(&first, &lo, &fresh);
        let written = (lo.min_with(&fresh), hi.clone());
        let extent = self.expand_defs(&hi).sub(&self.expand_defs(&lo)).add_k(1);
        let read_by_data = self.accesses.iter().any(|a| {
            a.callee == Callee::Func(f) && a.args.get(k).is_some_and(|x| self.reads_data(x))
        });
        // The folded dimension is a loop of the stage as it is: the checker follows a circular
        // buffer written by a plain loop (a split's guard and its two variables it does not).
        let own = &self.funcs[f].stages[0];
        let plain = own.pure_of[k].is_some_and(|pv| own.loops.iter().any(|(lv, _)| *lv == pv));
        // A window whose extent varies (an upsampled row: one row or two) folds to the most
        // rows it spans.
        match extent.const_upper_bound() {
            // Windows beyond 2^30 rows stay unfolded (the rows must hold the window).
            Some(e) if (1..=1 << 30).contains(&e) && !read_by_data && plain => {
                Some((k, (e as u64).next_power_of_two() as i64, written))
            }
            _ => None,
        }
    }

    /// Bind the non-linear ends of root func `f`'s region to names (derived arguments of the
    /// proc, see `finish`), so that the regions of its producers, inferred from it, mention the
    /// names instead of their expansions. A pyramid's levels otherwise nest every consumer's
    /// `min`/`max`/quotients into each producer's bounds, which grow with the depth and drown
    /// the checker's solver (interpolate, local_laplacian); preconditions over the names stay
    /// small too.
    fn name_region(&mut self, f: usize, region: &mut [(Lin, Lin)]) {
        // Small ends stay expressions: the solver relates them to the window directly, and
        // names cost it a variable and an equation each.
        let small = |e: &Lin| {
            e.size() <= NAMED_SIZE || e.terms.iter().all(|(a, _)| matches!(a, Atom::Var(_)))
        };
        for (d, (lo, hi)) in region.iter_mut().enumerate() {
            for (end, e) in [("min", lo), ("max", hi)] {
                if small(e) {
                    continue;
                }
                let func = &self.p.funcs[f];
                let sym = Sym::new(format!("{}_{}_{end}", func.name, func.vars[d]));
                let v = self.new_var(sym);
                self.named.push((v, e.clone()));
                *e = Lin::var(v);
            }
        }
    }

    /// `e` with the names of region ends replaced by their definitions, over the pipeline's own
    /// arguments only (for reported regions).
    pub(super) fn unname(&self, e: &Lin) -> Lin {
        let mut e = e.clone();
        for (v, def) in self.named.iter().rev() {
            let mut vars = Vec::new();
            e.vars(&mut vars);
            if vars.contains(v) {
                e = e.subst(&|u| (u == *v).then(|| def.clone()));
            }
        }
        e
    }

    /// Relax `hull` (over `f`'s compute level) further over the loops between `outer` and
    /// `f`'s compute level.
    pub(super) fn relax_between(
        &self,
        outer: Site,
        f: usize,
        hull: &[(End, End)],
    ) -> Vec<(End, End)> {
        let scope = self.scope_of(outer, &self.chain(f));
        hull.iter()
            .map(|(lo, hi)| {
                (
                    lo.as_ref().and_then(|l| scope.lower(l)),
                    hi.as_ref().and_then(|h| scope.upper(h)),
                )
            })
            .collect()
    }

    pub(super) fn unbounded(&self, f: usize, d: usize) -> DirectiveError {
        let func = &self.p.funcs[f];
        fail(
            "bounds",
            format!(
                "cannot bound the region of `{}` in `{}`: a read's index depends on data or is unbounded; clamp it or use `bound`",
                func.name, func.vars[d]
            ),
        )
    }

    /// Fill the ranges of stage `(f, s)`'s variables from the func's region.
    pub(super) fn set_ranges(&mut self, f: usize, s: usize, region: &[(Lin, Lin)]) -> Res<()> {
        let mut rdom = Vec::new();
        if s > 0 {
            for r in &self.p.funcs[f].updates[s - 1].rdom {
                let (min, ext) = (self.startup(&r.min)?, self.startup(&r.extent)?);
                self.preconds.push(Cond::le(&Lin::konst(0), &ext));
                rdom.push((min, ext));
            }
        }
        let fname = self.p.funcs[f].name.clone();
        let st = &mut self.funcs[f].stages[s];
        for (k, v) in st.pure_of.iter().enumerate() {
            if let Some(v) = v {
                let (lo, hi) = &region[k];
                st.vars[*v].min = lo.clone();
                st.vars[*v].ext = hi.sub(lo).add_k(1);
            }
        }
        for (k, &v) in st.rvar_of.iter().enumerate() {
            st.vars[v].min = rdom[k].0.clone();
            st.vars[v].ext = rdom[k].1.clone();
        }
        // An output's window must hold a shifted tile (Halide asserts the same).
        if self.p.outputs.contains(&f) && self.engine == Engine::Tight {
            for k in 0..st.vars.len() {
                if let How::Split {
                    factor,
                    tail: Tail::ShiftInwards,
                    ..
                } = st.vars[k].how
                {
                    if st.pure_of.contains(&Some(k)) {
                        self.preconds
                            .push(Cond::le(&Lin::konst(factor), &st.vars[k].ext));
                        self.fits.insert(st.vars[k].id);
                    }
                }
            }
        }
        // Children after parents: splits and fuses were recorded in order, so their new
        // variables come later in the list.
        for v in 0..st.vars.len() {
            let dv = st.vars[v].clone();
            match dv.how {
                How::Leaf => {}
                How::Split {
                    outer,
                    inner,
                    factor,
                    tail,
                } => {
                    st.vars[outer].min = Lin::konst(0);
                    st.vars[outer].ext = dv.ext.ceil_div(factor);
                    st.vars[inner].min = Lin::konst(0);
                    st.vars[inner].ext = Lin::konst(factor);
                    let o = Lin::var(st.vars[outer].id).scale(factor);
                    let base = if tail == Tail::ShiftInwards {
                        o.min_with(&dv.ext.add_k(-factor))
                    } else {
                        o
                    };
                    let def = dv.min.add(&base).add(&Lin::var(st.vars[inner].id));
                    self.defs.insert(dv.id, def);
                }
                How::Fused {
                    fused,
                    inner: true,
                    other,
                } => {
                    if st.vars.iter().any(|p| {
                        matches!(p.how, How::Split { outer, inner, tail: Tail::ShiftInwards, .. }
                            if outer == other || inner == v)
                    }) {
                        return Err(fail(
                            "fuse",
                            format!(
                                "`{fname}`: `{}` comes from a ShiftInwards split; fusing the shifted tile's loops is not supported (the checker cannot follow which points the fused loop writes); split with GuardWithIf or RoundUp",
                                dv.name
                            ),
                        ));
                    }
                    let c = dv.ext.as_const().ok_or_else(|| {
                        fail(
                            "fuse",
                            format!(
                                "`{fname}`: the inner loop `{}` of a fuse must have a constant extent (the proc layer's control arithmetic is quasi-affine); split it or `bound` it first",
                                dv.name
                            ),
                        )
                    })?;
                    let oext = st.vars[other].ext.clone();
                    st.vars[fused].min = Lin::konst(0);
                    st.vars[fused].ext = oext.scale(c);
                    let fv = Lin::var(st.vars[fused].id);
                    self.defs.insert(dv.id, dv.min.add(&fv.rem(c.max(1))));
                    let od = st.vars[other].clone();
                    self.defs.insert(od.id, od.min.add(&fv.div(c.max(1))));
                }
                How::Fused { inner: false, .. } => {}
            }
        }
        Ok(())
    }
}
