//! Emission of the lowered proc: allocations at store levels, loop nests at compute levels
//! (guards, unrolled and parallel loops), stores, and control expressions as weft expressions.

use super::*;

impl Lower<'_> {
    pub(super) fn emit_version(&mut self) -> Res<Version> {
        let none = HashMap::new();
        // Named region ends are arguments after the outputs, each stated equal to its
        // definition by a precondition (over the arguments before it) that the entry checks.
        let named: HashSet<VarId> = self.named.iter().map(|(v, _)| *v).collect();
        let mut taken: HashSet<String> = (0..self.syms.len() as VarId)
            .filter(|v| !named.contains(v))
            .map(|v| self.syms[v as usize].name().to_string())
            .collect();
        let mut equalities = Vec::new();
        for (v, def) in self.named.clone() {
            let base = self.syms[v as usize].name().to_string();
            let mut name = base.clone();
            let mut k = 1;
            while !taken.insert(name.clone()) {
                name = format!("{base}_{k}");
                k += 1;
            }
            let arg = self.pb.index(&name);
            if let weft_ir::ExprKind::Var(sym) = arg.kind() {
                self.syms[v as usize] = sym.clone();
            }
            let def = self.lin_expr(&def, &none)?;
            equalities.push(arg.eq_(def));
        }
        let body = self.emit_site(Site::Root, &none)?;
        let found = self.data_preconds.take();
        self.preconds.extend(found);
        let mut seen = HashSet::new();
        let mut preconds = Vec::new();
        for c in std::mem::take(&mut self.preconds) {
            let least = |v: VarId| self.sizes.contains(&v).then_some(1);
            let c = c.split_min_max(&least, &mut 64);
            if c == Cond::Const(true) || !seen.insert(c.clone()) {
                continue;
            }
            preconds.push(self.cond_expr(&c, &HashMap::new())?);
        }
        let exprs = |this: &Self, r: &[(Lin, Lin)]| -> Res<Vec<(IExpr, IExpr)>> {
            r.iter()
                .map(|(lo, hi)| {
                    let (lo, hi) = (this.unname(lo), this.unname(hi));
                    Ok((this.lin_expr(&lo, &none)?, this.lin_expr(&hi, &none)?))
                })
                .collect()
        };
        let mut regions = Vec::new();
        for (f, info) in self.funcs.iter().enumerate() {
            if info.inline {
                continue;
            }
            regions.push(Region {
                func: self.p.funcs[f].name.clone(),
                computed: exprs(self, &info.computed)?,
                allocated: exprs(self, &info.alloc)?,
                folded: info.fold,
            });
        }
        let inputs = self
            .p
            .inputs
            .iter()
            .zip(&self.input_regions)
            .map(|(i, r)| Ok((i.name.clone(), exprs(self, r)?)))
            .collect::<Res<_>>()?;
        Ok(Version {
            body,
            equalities,
            preconds,
            regions,
            inputs,
        })
    }

    /// The proc from the lowered versions of schedule `s` (one without specializations): a
    /// decision tree over the specialized stages' conditions, each tried in order, with every
    /// version's body at its leaf and its preconditions required only where it runs.
    pub(super) fn assemble(mut self, s: &Schedule, parts: Vec<(Choice, Version)>) -> Res<Lowered> {
        let none = HashMap::new();
        // The condition of each specialization, by (func, stage).
        let mut conds: HashMap<(usize, usize), Vec<IExpr>> = HashMap::new();
        for ((f, st), _) in parts.first().map_or(&[][..], |p| &p.0[..]) {
            let mut cs = Vec::new();
            for sp in &s.funcs[*f].stages[*st].specializations {
                let c = self.to_cond(&sp.cond, None)?;
                cs.push(self.cond_expr(&c, &none)?);
            }
            conds.insert((*f, *st), cs);
        }
        let guard = |choice: &Choice| -> Option<IExpr> {
            let mut g: Option<IExpr> = None;
            for (fs, k) in choice {
                let cs = &conds[fs];
                let mut lits: Vec<IExpr> = cs[..*k].iter().map(|c| c.clone().not()).collect();
                lits.extend(cs.get(*k).cloned());
                for l in lits {
                    g = Some(match g {
                        None => l,
                        Some(g) => g.and(l),
                    });
                }
            }
            g
        };
        // `not g or e`, written `c or e` when `g` is `not c`.
        let unless = |g: &Option<IExpr>, e: IExpr| match g {
            None => e,
            Some(g) => match g.kind() {
                weft_ir::ExprKind::Unary(UnOp::Not, c) => c.clone().or(e),
                _ => g.clone().not().or(e),
            },
        };
        // A derived argument is defined where its version runs (elsewhere `derived_args` gives
        // it 0): a version that does not run must not stop the call with its region ends.
        for (choice, v) in &parts {
            let g = guard(choice);
            for e in &v.equalities {
                self.pb.assert(unless(&g, e.clone()));
            }
        }
        // Preconditions every version has are stated once (all of them when there is one
        // version); the others where their version runs.
        let common: Vec<IExpr> = match parts.split_first() {
            Some((first, rest)) => first
                .1
                .preconds
                .iter()
                .filter(|e| rest.iter().all(|p| p.1.preconds.contains(e)))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        for pre in &common {
            self.pb.assert(pre.clone());
        }
        let mut versions = Vec::new();
        let mut bodies = Vec::new();
        let mut input_hull: Option<InputRegions> = None;
        let mut regions = Vec::new();
        let several = parts.len() > 1;
        for (choice, v) in parts {
            let g = guard(&choice);
            if several {
                for pre in v.preconds.into_iter().filter(|e| !common.contains(e)) {
                    self.pb.assert(unless(&g, pre));
                }
            }
            input_hull = Some(match input_hull {
                None => v.inputs.clone(),
                Some(h) => hull(h, v.inputs.clone()),
            });
            regions = v.regions.clone();
            if several {
                versions.push(VersionRegions {
                    when: g.unwrap_or_else(|| IExpr::bool(true)),
                    regions: v.regions,
                    inputs: v.inputs,
                });
            }
            bodies.push((choice, v.body));
        }
        let body = decision_tree(&conds, bodies, 0);
        let mut pb = self.pb;
        pb.body().stmts = body;
        Ok(Lowered {
            proc: pb.finish(),
            regions,
            inputs: input_hull.unwrap_or_default(),
            versions,
        })
    }

    /// The statements at a site: allocations of funcs stored here, then the funcs computed here
    /// in definition order.
    pub(super) fn emit_site(&mut self, site: Site, env: &HashMap<VarId, IExpr>) -> Res<Vec<Stmt>> {
        let mut out = Vec::new();
        for f in 0..self.funcs.len() {
            if self.funcs[f].inline || self.funcs[f].store != site {
                continue;
            }
            if let Some(o) = self.p.outputs.iter().position(|&o| o == f) {
                self.funcs[f].buf = Some(self.outputs[o].buf.clone());
                continue;
            }
            let func = &self.p.funcs[f];
            let mut shape = Vec::new();
            let alloc = &self.funcs[f].alloc;
            for (lo, hi) in self.s.funcs[f].storage.iter().rev().map(|&d| &alloc[d]) {
                let ext = hi.sub(lo).add_k(1);
                let ext = match ext.as_const() {
                    Some(c) if c >= 1 => ext,
                    _ => ext.max_with(&Lin::konst(1)),
                };
                shape.push(self.lin_expr(&ext, env)?);
            }
            let sym = Sym::new(&func.name);
            out.push(Stmt::new(
                StmtKind::Alloc {
                    buf: sym.clone(),
                    ty: weft_ir::proc::BufType {
                        elem: func.ty,
                        shape,
                        window: false,
                        mem: self.mem.clone(),
                    },
                },
                Span::DUMMY,
            ));
            self.funcs[f].buf = Some(Buf {
                sym,
                elem: func.ty,
                rank: func.vars.len(),
            });
        }
        for f in 0..self.funcs.len() {
            if self.funcs[f].inline || self.funcs[f].compute != site {
                continue;
            }
            for s in 0..self.funcs[f].stages.len() {
                let mut stmts = self.emit_loops(f, s, 0, env)?;
                out.append(&mut stmts);
            }
        }
        Ok(out)
    }

    pub(super) fn emit_loops(
        &mut self,
        f: usize,
        s: usize,
        depth: usize,
        env: &HashMap<VarId, IExpr>,
    ) -> Res<Vec<Stmt>> {
        let st = &self.funcs[f].stages[s];
        if depth == st.loops.len() {
            return self.emit_store(f, s, env);
        }
        let (v, kind) = st.loops[depth];
        let dv = st.vars[v].clone();
        let lo = self.lin_expr(&dv.min, env)?;
        // Extents that are arguments are positive; any other may come out negative (a region
        // no iteration needs, as under a guard that fails for a whole tile): it is empty then.
        let ext = &dv.ext;
        let is_size = |u: &VarId| {
            self.inputs
                .iter()
                .chain(&self.outputs)
                .any(|io| io.lens.contains(u))
        };
        let positive = ext.as_const().is_some_and(|c| c >= 0)
            || matches!(ext.terms.as_slice(), [(Atom::Var(u), 1)] if ext.k >= 0 && is_size(u));
        let ext = if positive {
            ext.clone()
        } else {
            ext.max_with(&Lin::konst(0))
        };
        let hi = self.lin_expr(&dv.min.add(&ext), env)?;
        let here = Site::At(f, s, depth);
        // Guards of splits whose loops are all bound here wrap everything inside, so code
        // computed at this level never runs for points outside the region.
        let guard = self.guards_at(f, s, depth);
        let body_at = |this: &mut Self, env: &HashMap<VarId, IExpr>| -> Res<Vec<Stmt>> {
            let mut b = this.emit_site(here, env)?;
            b.append(&mut this.emit_loops(f, s, depth + 1, env)?);
            if guard == Cond::Const(true) {
                return Ok(b);
            }
            let cond = this.cond_expr(&guard, env)?;
            Ok(vec![Stmt::new(
                StmtKind::If {
                    cond,
                    then_body: b,
                    else_body: Vec::new(),
                },
                Span::DUMMY,
            )])
        };
        let fname = &self.p.funcs[f].name;
        let constant = |what: &str| {
            fail(
                "constant-extent",
                format!(
                    "`{fname}.{}` is {what}, which needs a constant extent; split it by a constant first",
                    dv.name
                ),
            )
        };
        match kind {
            LoopKind::Unrolled => {
                let (Some(m), Some(e)) = (dv.min.as_const(), dv.ext.as_const()) else {
                    return Err(constant("unrolled"));
                };
                let mut out = Vec::new();
                for k in m..m + e {
                    let mut env = env.clone();
                    env.insert(dv.id, IExpr::int(k));
                    out.append(&mut body_at(self, &env)?);
                }
                Ok(out)
            }
            _ => {
                if kind == LoopKind::Vectorized && dv.ext.as_const().is_none() {
                    return Err(constant("vectorized"));
                }
                let sym = self.syms[dv.id as usize].clone();
                let for_loop = |this: &mut Self, sym: Sym, lo: IExpr, hi: IExpr| -> Res<Stmt> {
                    let mut env = env.clone();
                    env.insert(dv.id, IExpr::var(&sym, Ty::Int));
                    let body = body_at(this, &env)?;
                    Ok(Stmt::new(
                        StmtKind::For {
                            var: sym,
                            lo,
                            hi,
                            body,
                            parallel: kind == LoopKind::Parallel,
                        },
                        Span::DUMMY,
                    ))
                };
                // The innermost serial loop with nothing computed inside: partitioned where
                // its coordinates clamp it. Only a loop that no split or fuse made: the checker
                // proves a consumer's reads against the writes of a producer's loops, and the
                // pieces of a split loop cut into three are beyond what it can combine. A func
                // that nothing reads has no such proof: the outer loop of its split is
                // partitioned too when the loops inside have constant ranges (a vectorized or
                // unrolled tile) and nothing is computed inside.
                let steady = match self.partitionable(f, s, depth, kind) {
                    Some(inner) if self.resolved.borrow().is_empty() => {
                        self.steady_state(f, s, depth, &inner)?
                    }
                    _ => None,
                };
                let Some(partition::SteadyState {
                    resolved,
                    guards,
                    lows,
                    highs,
                }) = steady
                else {
                    return Ok(vec![for_loop(self, sym, lo, hi)?]);
                };
                let (lo_l, hi_l) = (dv.min.clone(), dv.min.add(&ext));
                let start = lows.iter().fold(lo_l, |m, l| m.max_with(l)).min_with(&hi_l);
                let end = highs
                    .iter()
                    .fold(hi_l.clone(), |m, h| m.min_with(&h.add_k(1)))
                    .max_with(&start);
                // Without a low (high) bound the loop before (after) the steady state is empty:
                // it is left out, and the steady state starts at the loop's start (runs to its
                // end), which costs the C compiler a copy of the body less.
                let mut loops = Vec::new();
                let start = if lows.is_empty() {
                    lo
                } else {
                    let start = self.lin_expr(&start, env)?;
                    loops.push(for_loop(self, Sym::new(sym.name()), lo, start.clone())?);
                    start
                };
                let end = if highs.is_empty() {
                    hi.clone()
                } else {
                    self.lin_expr(&end, env)?
                };
                *self.resolved.borrow_mut() = resolved;
                *self.resolved_guards.borrow_mut() = guards.iter().map(|&u| (f, s, u)).collect();
                let steady = for_loop(self, sym.clone(), start, end.clone());
                self.resolved.borrow_mut().clear();
                self.resolved_guards.borrow_mut().clear();
                loops.push(steady?);
                if !highs.is_empty() {
                    loops.push(for_loop(self, Sym::new(sym.name()), end, hi)?);
                }
                Ok(loops)
            }
        }
    }

    /// Whether loop `depth` of stage `(f, s)` may be partitioned (see `partition`), and the
    /// constant ranges `lo..=hi` of the loops inside it.
    fn partitionable(
        &self,
        f: usize,
        s: usize,
        depth: usize,
        kind: LoopKind,
    ) -> Option<Vec<(VarId, i64, i64)>> {
        let st = &self.funcs[f].stages[s];
        let (v, _) = st.loops[depth];
        if kind != LoopKind::Serial {
            return None;
        }
        let computed_inside = self.funcs.iter().any(|g| {
            !g.inline
                && [g.compute, g.store].iter().any(
                    |site| matches!(site, Site::At(h, t, d) if (*h, *t) == (f, s) && *d >= depth),
                )
        });
        if computed_inside {
            return None;
        }
        let made = st.vars.iter().any(|u| match u.how {
            How::Split { outer, inner, .. } => outer == v || inner == v,
            How::Fused { fused, .. } => fused == v,
            How::Leaf => false,
        });
        if depth + 1 == st.loops.len() {
            return (!made).then(Vec::new);
        }
        // A loop no split made, of a range that is not constant, around loops of constant
        // ranges (a reduction domain's, an unrolled dimension's) is cut like an innermost one
        // (`h(in(8 x + r.x, ..)) += ..` reads without the edge clamps for every `x` whose
        // window lies inside); the loops inside, constant, are not cut again, so a nest is
        // cut at one level. The checker may not combine the pieces for a consumer or an
        // update of the func (`weft::pipeline` then lowers without it: `partition_unsplit`).
        let outer_of_split = st
            .vars
            .iter()
            .any(|u| matches!(u.how, How::Split { outer, .. } if outer == v));
        let unsplit = !made && self.partition_unsplit && st.vars[v].ext.as_const().is_none();
        if !unsplit && (!outer_of_split || self.is_read(f)) {
            return None;
        }
        st.loops[depth + 1..]
            .iter()
            .map(|&(u, k)| {
                let du = &st.vars[u];
                let (lo, ext) = (du.min.as_const()?, du.ext.as_const()?);
                (k != LoopKind::Parallel && ext >= 1).then_some((du.id, lo, lo + ext - 1))
            })
            .collect()
    }

    /// Whether a definition reads func `f` (its own updates included).
    fn is_read(&self, f: usize) -> bool {
        self.bodies.iter().flatten().any(|(lhs, value, wheres)| {
            let mut reads = false;
            // A histogram's coordinates read too: `h(clamp(f(r), 0, 9)) += 1`.
            for e in lhs.iter().chain([value]).chain(wheres) {
                e.walk(&mut |x| reads |= matches!(x, Expr::Call(Callee::Func(h), _) if *h == f));
            }
            reads
        })
    }

    /// The guards `v < min + extent` of the `GuardWithIf` splits of stage `(f, s)` whose
    /// innermost loop is loop `depth`.
    pub(super) fn guards_at(&self, f: usize, s: usize, depth: usize) -> Cond {
        let st = &self.funcs[f].stages[s];
        let resolved = self.resolved_guards.borrow();
        let mut guard = Cond::Const(true);
        for (v, dv) in st.vars.iter().enumerate() {
            if let How::Split {
                tail: Tail::GuardWithIf,
                ..
            } = dv.how
            {
                if deepest_loop(st, v) == depth && !resolved.contains(&(f, s, v)) {
                    let def = self.defs[&dv.id].clone();
                    guard = Cond::and(guard, Cond::lt(&def, &dv.min.add(&dv.ext)));
                }
            }
        }
        guard
    }

    /// The innermost statement of a stage: the store (the splits' guards are around it).
    pub(super) fn emit_store(
        &mut self,
        f: usize,
        s: usize,
        env: &HashMap<VarId, IExpr>,
    ) -> Res<Vec<Stmt>> {
        let (lhs, value, wheres) = self.bodies[f][s].clone();
        let func = &self.p.funcs[f];
        let buf = self.funcs[f]
            .buf
            .clone()
            .expect("allocated before computed");
        let idx = self.buf_index(f, &lhs, (f, s), env)?;
        let mut value = self.data_expr(&value, (f, s), env)?;
        if value.ty != Ty::Data(func.ty) {
            value = IExpr::cast(func.ty, value);
        }
        // Predicates are data (i32 arithmetic that wraps, as the reference computes them), so
        // the store keeps the previous value where one fails.
        for w in &wheres {
            let c = self.data_expr(w, (f, s), env)?;
            let old = IExpr::read(&buf.sym, buf.elem, idx.clone());
            value = IExpr::select(c, value, old);
        }
        Ok(vec![Stmt::new(
            StmtKind::Assign {
                buf: buf.sym.clone(),
                idx,
                rhs: value,
            },
            Span::DUMMY,
        )])
    }

    /// The indices of `args` into func `f`'s buffer (or an input's).
    pub(super) fn buf_index(
        &self,
        f: usize,
        args: &[Expr],
        ctx: (usize, usize),
        env: &HashMap<VarId, IExpr>,
    ) -> Res<Vec<IExpr>> {
        let alloc = &self.funcs[f].alloc;
        let mut idx = Vec::new();
        for &d in self.s.funcs[f].storage.iter().rev() {
            let i = self.index_expr(&args[d], &alloc[d].0, ctx, env)?;
            idx.push(match self.funcs[f].fold {
                // A folded dimension: the coordinate modulo the rows (alloc's min is 0).
                Some((k, m)) if k == d => {
                    IExpr::binary(BinOp::Mod, i, self.lin_expr(&Lin::konst(m), env)?)
                }
                _ => i,
            });
        }
        Ok(idx)
    }

    pub(super) fn input_index(
        &self,
        k: usize,
        args: &[Expr],
        ctx: (usize, usize),
        env: &HashMap<VarId, IExpr>,
    ) -> Res<Vec<IExpr>> {
        let mut idx = Vec::new();
        for (d, a) in args.iter().enumerate().rev() {
            let min = Lin::var(self.inputs[k].mins[d]);
            idx.push(self.index_expr(a, &min, ctx, env)?);
        }
        Ok(idx)
    }

    /// A value expression of stage `ctx` as weft data.
    pub(super) fn data_expr(
        &self,
        e: &Expr,
        ctx: (usize, usize),
        env: &HashMap<VarId, IExpr>,
    ) -> Res<IExpr> {
        let ctrl = |l: Lin| -> Res<IExpr> { Ok(IExpr::cast(COORD, self.lin_expr(&l, env)?)) };
        // Arithmetic of literals becomes the literal it computes (as the reference does): the
        // proc then prints and parses back to itself (a literal alone has no data type).
        if !matches!(e, Expr::Lit(_)) {
            // Not into a bool or a float that is not finite: neither prints as a literal.
            if let Some(v) = constant(e).filter(|v| match v {
                Scalar::Bool(_) => false,
                Scalar::F32(f) => f.is_finite(),
                Scalar::F64(f) => f.is_finite(),
                _ => true,
            }) {
                return Ok(literal(v));
            }
        }
        Ok(match e {
            Expr::Lit(s) => literal(*s),
            Expr::Var(_) | Expr::RVar(_) | Expr::InputDim { .. } | Expr::OutputDim { .. } => {
                ctrl(self.to_lin(e, Some(ctx))?)?
            }
            Expr::Param(k) => match &self.params[*k] {
                ParamRepr::Index(v) => ctrl(Lin::var(*v))?,
                ParamRepr::Scalar(b) => b.get(),
            },
            Expr::Call(Callee::Func(g), args) => {
                let buf = self.funcs[*g].buf.clone().ok_or_else(|| {
                    fail(
                        "compute-at",
                        format!("`{}` is read before it is allocated", self.p.funcs[*g].name),
                    )
                })?;
                IExpr::read(&buf.sym, buf.elem, self.buf_index(*g, args, ctx, env)?)
            }
            Expr::Call(Callee::Input(k), args) => {
                let b = &self.inputs[*k].buf;
                IExpr::read(&b.sym, b.elem, self.input_index(*k, args, ctx, env)?)
            }
            Expr::Unary(op, a) => IExpr::unary(*op, self.data_expr(a, ctx, env)?),
            Expr::Binary(op, a, b) => IExpr::binary(
                *op,
                self.data_expr(a, ctx, env)?,
                self.data_expr(b, ctx, env)?,
            ),
            Expr::Select(c, a, b) => IExpr::select(
                self.data_expr(c, ctx, env)?,
                self.data_expr(a, ctx, env)?,
                self.data_expr(b, ctx, env)?,
            ),
            Expr::Cast(t, a) => {
                let x = self.data_expr(a, ctx, env)?;
                if x.ty == Ty::Data(*t) {
                    x
                } else {
                    IExpr::cast(*t, x)
                }
            }
            Expr::Math(m, args) => IExpr::math(
                *m,
                args.iter()
                    .map(|a| self.data_expr(a, ctx, env))
                    .collect::<Res<_>>()?,
            ),
        })
    }

    /// A control expression as weft, variables that are not loops replaced by their definitions.
    pub(super) fn lin_expr(&self, l: &Lin, env: &HashMap<VarId, IExpr>) -> Res<IExpr> {
        let l = &self.expand_defs(l);
        // In a partitioned loop's steady state, a resolved `min`/`max` is its moving side.
        let resolved = self.resolved.borrow();
        let l = &match resolved.is_empty() {
            true => l.clone(),
            false => partition::resolve(l, &resolved),
        };
        drop(resolved);
        if l.size() > 4 * crate::cexpr::MAX_SIZE {
            return Err(fail(
                "bounds-size",
                "the bounds of this schedule's nested tiles grow too large to emit; use fewer levels of splits or compute levels".into(),
            ));
        }
        let mut acc: Option<IExpr> = None;
        let add = |acc: &mut Option<IExpr>, t: IExpr, c: i64| {
            let t = if c == 1 {
                t
            } else {
                IExpr::binary(BinOp::Mul, IExpr::int(c), t)
            };
            *acc = Some(match acc.take() {
                None => t,
                Some(a) => IExpr::binary(BinOp::Add, a, t),
            });
        };
        for (a, c) in &l.terms {
            let t = match a {
                Atom::Var(v) => match env.get(v) {
                    Some(e) => e.clone(),
                    None => IExpr::var(&self.syms[*v as usize], Ty::Int),
                },
                Atom::Min(x, y) => IExpr::min(self.lin_expr(x, env)?, self.lin_expr(y, env)?),
                Atom::Max(x, y) => IExpr::max(self.lin_expr(x, env)?, self.lin_expr(y, env)?),
                Atom::Div(x, d) => {
                    IExpr::binary(BinOp::Div, self.lin_expr(x, env)?, IExpr::int(*d))
                }
                Atom::Mod(x, d) => {
                    IExpr::binary(BinOp::Mod, self.lin_expr(x, env)?, IExpr::int(*d))
                }
                Atom::Select(k, x, y) => IExpr::select(
                    self.cond_expr(k, env)?,
                    self.lin_expr(x, env)?,
                    self.lin_expr(y, env)?,
                ),
            };
            // (-2^63 has no negation: added as it stands.)
            if *c < 0 && *c != i64::MIN && acc.is_some() {
                let t = if *c == -1 {
                    t
                } else {
                    IExpr::binary(BinOp::Mul, IExpr::int(-c), t)
                };
                acc = Some(IExpr::binary(BinOp::Sub, acc.take().unwrap(), t));
            } else {
                add(&mut acc, t, *c);
            }
        }
        Ok(match acc {
            None => IExpr::int(l.k),
            Some(a) if l.k > 0 => IExpr::binary(BinOp::Add, a, IExpr::int(l.k)),
            Some(a) if l.k < 0 && l.k != i64::MIN => IExpr::binary(BinOp::Sub, a, IExpr::int(-l.k)),
            Some(a) if l.k < 0 => IExpr::binary(BinOp::Add, a, IExpr::int(l.k)),
            Some(a) => a,
        })
    }

    /// `l` with every variable that is not a loop replaced by its definition, normalised again
    /// (so a fused loop's coordinates fold back into the loop variable).
    pub(super) fn expand_defs(&self, l: &Lin) -> Lin {
        let mut vars = Vec::new();
        l.vars(&mut vars);
        if !vars.iter().any(|v| self.defs.contains_key(v)) {
            return l.clone();
        }
        let next = l.subst(&|v| self.defs.get(&v).cloned());
        if next.size() > 4 * crate::cexpr::MAX_SIZE {
            // Too large to emit: `lin_expr` reports it.
            return next;
        }
        self.expand_defs(&next)
    }

    pub(super) fn cond_expr(&self, c: &Cond, env: &HashMap<VarId, IExpr>) -> Res<IExpr> {
        Ok(match c {
            Cond::Const(b) => IExpr::bool(*b),
            Cond::Le0(e) => split_cmp(e, false, |a, b| a.le(b), self, env)?,
            Cond::Eq0(e) => split_cmp(e, true, |a, b| a.eq_(b), self, env)?,
            Cond::And(a, b) => self.cond_expr(a, env)?.and(self.cond_expr(b, env)?),
            Cond::Or(a, b) => self.cond_expr(a, env)?.or(self.cond_expr(b, env)?),
            Cond::Not(a) => self.cond_expr(a, env)?.not(),
        })
    }
}

/// The innermost of the loops that variable `v` of stage `st` became.
pub(super) fn deepest_loop(st: &Stage, v: usize) -> usize {
    match &st.vars[v].how {
        How::Leaf => st.loops.iter().position(|l| l.0 == v).unwrap_or(0),
        How::Split { outer, inner, .. } => deepest_loop(st, *outer).max(deepest_loop(st, *inner)),
        How::Fused { fused, .. } => deepest_loop(st, *fused),
    }
}

/// `e <= 0` (or `e == 0`) written as `positive part <= negative part`, which reads better.
fn split_cmp(
    e: &Lin,
    _eq: bool,
    op: impl Fn(IExpr, IExpr) -> IExpr,
    l: &Lower,
    env: &HashMap<VarId, IExpr>,
) -> Res<IExpr> {
    // A coefficient of -2^63 has no negation: `e <= 0` as it stands (the checker then names
    // the overflow of the control arithmetic, if any).
    if e.k == i64::MIN || e.terms.iter().any(|t| t.1 == i64::MIN) {
        return Ok(op(l.lin_expr(e, env)?, IExpr::int(0)));
    }
    let pos = Lin {
        terms: e.terms.iter().filter(|t| t.1 > 0).cloned().collect(),
        k: e.k.max(0),
    };
    let neg = Lin {
        terms: e
            .terms
            .iter()
            .filter(|t| t.1 < 0)
            .map(|(a, c)| (a.clone(), -c))
            .collect(),
        k: (-e.k).max(0),
    };
    Ok(op(l.lin_expr(&pos, env)?, l.lin_expr(&neg, env)?))
}

/// The value of an expression of literals, computed as the reference computes it.
fn constant(e: &Expr) -> Option<Scalar> {
    match e {
        Expr::Lit(v) => Some(*v),
        Expr::Unary(op, a) => weft_interp::unary(*op, constant(a)?).ok(),
        Expr::Binary(op, a, b) => weft_interp::binary(*op, constant(a)?, constant(b)?).ok(),
        Expr::Cast(t, a) => Some(constant(a)?.cast(*t)),
        Expr::Math(m, args) => {
            let vals = args.iter().map(constant).collect::<Option<Vec<_>>>()?;
            weft_interp::math(*m, &vals).ok()
        }
        Expr::Select(c, a, b) => {
            let (a, b) = (constant(a)?, constant(b)?);
            match constant(c)? {
                Scalar::Bool(c) => Some(if c { a } else { b }),
                _ => None,
            }
        }
        _ => None,
    }
}

fn literal(s: Scalar) -> IExpr {
    let ty = Ty::Data(s.dtype());
    // A data literal is written as a cast of a control literal (`u8(250)`, `f32(0.25)`): a
    // literal alone takes its type from its context when the proc is read back (from the
    // pipeline cache), and between two literals it would get none.
    match s {
        Scalar::Bool(b) => IExpr::typed_const(Const::Bool(b), ty),
        Scalar::F32(v) if v.is_finite() => IExpr::cast(DType::F32, IExpr::float(v as f64)),
        Scalar::F64(v) if v.is_finite() => IExpr::cast(DType::F64, IExpr::float(v)),
        Scalar::F32(v) => IExpr::typed_const(Const::Float(v as f64), ty),
        Scalar::F64(v) => IExpr::typed_const(Const::Float(v), ty),
        other => IExpr::cast(
            other.dtype(),
            IExpr::int(other.as_i128().unwrap_or(0) as i64),
        ),
    }
}

/// The per-dimension hull of two versions' input regions.
fn hull(a: InputRegions, b: InputRegions) -> InputRegions {
    a.into_iter()
        .zip(b)
        .map(|((name, a), (_, b))| {
            let dims = a
                .into_iter()
                .zip(b)
                .map(|((l1, h1), (l2, h2))| {
                    let lo = if l1 == l2 { l1 } else { IExpr::min(l1, l2) };
                    let hi = if h1 == h2 { h1 } else { IExpr::max(h1, h2) };
                    (lo, hi)
                })
                .collect();
            (name, dims)
        })
        .collect()
}

/// The statements that run version `parts[k]` when its choices' conditions select it: at each
/// specialized stage (by `depth`), `if c0 {..} else if c1 {..} else {..}` over the versions
/// grouped by that stage's choice (they come in that order, see `versions`).
fn decision_tree(
    conds: &HashMap<(usize, usize), Vec<IExpr>>,
    mut parts: Vec<(Choice, Vec<Stmt>)>,
    depth: usize,
) -> Vec<Stmt> {
    if parts.len() == 1 {
        return parts.pop().map(|(_, b)| b).unwrap_or_default();
    }
    let stage = parts[0].0[depth].0;
    let cs = &conds[&stage];
    let per = parts.len() / (cs.len() + 1);
    let mut groups = Vec::new();
    while !parts.is_empty() {
        let rest = parts.split_off(per.min(parts.len()));
        groups.push(std::mem::replace(&mut parts, rest));
    }
    let mut out = decision_tree(conds, groups.pop().unwrap_or_default(), depth + 1);
    for (c, g) in cs.iter().zip(groups).rev() {
        out = vec![Stmt::new(
            StmtKind::If {
                cond: c.clone(),
                then_body: decision_tree(conds, g, depth + 1),
                else_body: out,
            },
            Span::DUMMY,
        )];
    }
    out
}

/// The position of a lowered proc's first derived argument (the first after the last buffer;
/// the number of arguments when it has none).
pub fn first_derived(proc: &Proc) -> usize {
    proc.args
        .iter()
        .rposition(|a| a.buf().is_some())
        .map_or(0, |k| k + 1)
}

/// The values of a lowered proc's derived arguments (the named ends of root funcs' regions,
/// the `index` arguments after the last buffer), each computed in order from its precondition
/// `name == definition`. `ints[k]` is the value of argument `k` when it is a control value;
/// arguments are told apart by symbol, not by name (a parameter may share a generated name).
/// An error names an argument that cannot be computed (its value overflows, or one it needs is
/// not given).
pub fn derived_args(proc: &Proc, ints: &[Option<i64>]) -> Result<Vec<i64>, String> {
    let first = first_derived(proc);
    let mut values: Vec<Option<i64>> = ints.to_vec();
    values.resize(proc.args.len(), None);
    for k in first..proc.args.len() {
        let a = &proc.args[k];
        let env = |s: &Sym| {
            let at = proc.args.iter().position(|b| &b.sym == s)?;
            values[at]
        };
        let v = definition(proc, &a.sym)
            .and_then(|(_, d)| eval_control_by(&d, &env))
            .ok_or_else(|| {
                format!(
                    "the region bound `{}` cannot be computed for these arguments",
                    a.sym.name()
                )
            })?;
        values[k] = Some(v);
    }
    Ok(values[first..].iter().map(|v| v.unwrap_or(0)).collect())
}

/// The precondition of `proc` that defines its derived argument `sym` (by position) and the
/// definition: `sym == definition`, or `skip or sym == definition` for the argument of a
/// version of the schedule (`specialize`), which is 0 where `skip` holds (its version does not
/// run).
fn definition(proc: &Proc, sym: &Sym) -> Option<(usize, IExpr)> {
    use weft_ir::ExprKind;
    let defines = |p: &IExpr| match p.kind() {
        ExprKind::Binary(BinOp::Eq, l, r) => match l.kind() {
            ExprKind::Var(s) if s == sym => Some(r.clone()),
            _ => None,
        },
        _ => None,
    };
    proc.preds.iter().enumerate().find_map(|(k, p)| {
        let def = match p.kind() {
            ExprKind::Binary(BinOp::Or, skip, eq) => {
                defines(eq).map(|d| IExpr::select(skip.clone(), IExpr::int(0), d))
            }
            _ => defines(p),
        };
        def.map(|d| (k, d))
    })
}

/// What [`derived_args`] reads of a lowered proc: its arguments and the preconditions that
/// define its derived ones, with no body (the pipeline cache keeps it apart from the proc, so
/// that a hit reads little).
pub fn derivation(proc: &Proc) -> Proc {
    let defining: std::collections::BTreeSet<usize> = proc.args[first_derived(proc)..]
        .iter()
        .filter_map(|a| definition(proc, &a.sym).map(|(k, _)| k))
        .collect();
    Proc {
        preds: defining.iter().map(|&k| proc.preds[k].clone()).collect(),
        body: Vec::new(),
        ..proc.clone()
    }
}

/// The value of a control expression of a lowered proc (a region bound, a precondition's side)
/// with its variables given by name; `None` when a variable has no value or the expression is
/// not control arithmetic.
pub fn eval_control(e: &IExpr, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    eval_control_by(e, &|s| env(s.name()))
}

/// [`eval_control`] with variables given by symbol.
fn eval_control_by(e: &IExpr, env: &dyn Fn(&Sym) -> Option<i64>) -> Option<i64> {
    use weft_ir::ExprKind;
    // The recursive calls below look variables up by symbol too.
    let eval_control = eval_control_by;
    Some(match e.kind() {
        ExprKind::Const(Const::Int(v)) => *v,
        ExprKind::Const(Const::Bool(b)) => *b as i64,
        ExprKind::Var(s) => env(s)?,
        ExprKind::Unary(UnOp::Neg, a) => eval_control(a, env)?.checked_neg()?,
        ExprKind::Unary(_, a) => (eval_control(a, env)? == 0) as i64,
        ExprKind::Select(c, a, b) => {
            if eval_control(c, env)? != 0 {
                eval_control(a, env)?
            } else {
                eval_control(b, env)?
            }
        }
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (eval_control(a, env)?, eval_control(b, env)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::Div if b == 0 => 0,
                BinOp::Div => a.checked_div_euclid(b)?,
                BinOp::Mod if b == 0 => 0,
                BinOp::Mod => a.checked_rem_euclid(b)?,
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                BinOp::Lt => (a < b) as i64,
                BinOp::Le => (a <= b) as i64,
                BinOp::Gt => (a > b) as i64,
                BinOp::Ge => (a >= b) as i64,
                BinOp::Eq => (a == b) as i64,
                BinOp::Ne => (a != b) as i64,
                BinOp::And => (a != 0 && b != 0) as i64,
                BinOp::Or => (a != 0 || b != 0) as i64,
            }
        }
        _ => return None,
    })
}
