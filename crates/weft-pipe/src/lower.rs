//! Lowering of a scheduled pipeline into a weft proc, with bounds inference
//! (`../shared/reference/halide-formal-semantics.md` §3–§5).
//!
//! The proc realizes every output on a window given at run time. Its arguments, in order: each
//! `i32` parameter as an `index` (other parameters as rank-0 buffers); for each input, the min
//! (`index`) and extent (`size`) of every dimension, then the buffer; for each output, the same
//! for its window, then the buffer. Buffers are row-major with the first pipeline dimension
//! innermost, so `f(x, y)` is `f[y - y_min, x - x_min]`.
//!
//! How: every func that is not inlined gets a loop nest per stage (Fig. 9, reshaped by its
//! stage's splits, fuses and order), placed at its compute level, with its buffer at its store
//! level. Bounds inference then fills every loop bound, as Halide does, by a symbolic interval
//! analysis ([`crate::cexpr::Scope`]): the region a func must compute at its compute level is the
//! hull of every read of it by its consumers, with the loops between that level and the read
//! relaxed to their ranges and the loops outside kept symbolic, so a func computed inside a tile
//! loop computes exactly that tile's footprint. A stage's region also covers what later stages of
//! the same func read or write; its buffer covers what its stages write, over the store level's
//! loops. Preconditions of the proc state what cannot be settled statically: the inputs cover
//! what is read of them, the output windows hold what is written, reduction extents are not
//! negative and `bound`s cover what is needed; the checker proves everything else.

use crate::ast::{Callee, Expr, Pipeline, COORD};
use crate::cexpr::{Atom, Cond, End, Lin, Scope, VarId};
use crate::schedule::{stage_pure_vars, DirectiveError, Level, LoopKind, Schedule, SplitOp, Tail};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_interp::Scalar;
use weft_ir::build::{Buf, ProcBuilder};
use weft_ir::stmt::{Stmt, StmtKind};
use weft_ir::{BinOp, Const, DType, Expr as IExpr, Memory, Proc, Span, Sym, Ty, UnOp};

/// The lowered proc and the regions bounds inference found.
pub struct Lowered {
    pub proc: Arc<Proc>,
    /// Every func that is not inlined, in definition order.
    pub regions: Vec<Region>,
    /// What is read of each input, per dimension (min, max): Halide's `infer_input_bounds`,
    /// over the proc's arguments.
    pub inputs: Vec<(String, Vec<(IExpr, IExpr)>)>,
}

/// The regions of a func, per dimension (min, max, both included), as weft expressions over the
/// proc's arguments and the loops around the func's compute (or store) level.
pub struct Region {
    pub func: String,
    /// Where its pure definition is computed.
    pub computed: Vec<(IExpr, IExpr)>,
    /// Its buffer.
    pub allocated: Vec<(IExpr, IExpr)>,
}

/// Where code is placed: the root, or the start of the body of loop `depth` (0 outermost) of
/// stage `stage` of func `func`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Site {
    Root,
    At(usize, usize, usize),
}

/// How a variable of a stage's loop structure gets its value.
#[derive(Clone, Debug)]
enum How {
    /// A loop.
    Leaf,
    /// `split` into `outer` and `inner` (indices into the stage's variables).
    Split {
        outer: usize,
        inner: usize,
        factor: i64,
        tail: Tail,
    },
    /// Fused into `fused` with `other`; `inner` says which side it was.
    Fused {
        fused: usize,
        inner: bool,
        other: usize,
    },
}

#[derive(Clone, Debug)]
struct DimVar {
    name: String,
    id: VarId,
    min: Lin,
    ext: Lin,
    how: How,
}

#[derive(Clone, Debug)]
struct Stage {
    vars: Vec<DimVar>,
    /// Func dimension k -> variable, for the pure variables the stage loops over.
    pure_of: Vec<Option<usize>>,
    rvar_of: Vec<usize>,
    /// The loops, outermost first: variable and kind.
    loops: Vec<(usize, LoopKind)>,
}

struct FuncInfo {
    inline: bool,
    stages: Vec<Stage>,
    compute: Site,
    store: Site,
    /// Per dimension: the buffer's min and max.
    alloc: Vec<(Lin, Lin)>,
    /// Per dimension: the points its pure stage computes (overcompute included).
    computed: Vec<(Lin, Lin)>,
    buf: Option<Buf>,
    done: bool,
}

enum ParamRepr {
    Index(VarId),
    Scalar(Buf),
}

struct IoBuf {
    mins: Vec<VarId>,
    lens: Vec<VarId>,
    buf: Buf,
}

/// A stage's left-hand side, value and `where` predicates.
type Body = (Vec<Expr>, Expr, Vec<Expr>);

/// A read of a func or an input in a stage of a func.
struct Access {
    func: usize,
    stage: usize,
    callee: Callee,
    args: Vec<Expr>,
}

type Res<T> = Result<T, DirectiveError>;

fn fail(rule: &'static str, message: String) -> DirectiveError {
    DirectiveError {
        directive: "lowering".into(),
        rule,
        message,
        alternatives: Vec::new(),
    }
}

/// Lower pipeline `p` under schedule `s`; tensors live in `mem`. `p` must be valid
/// ([`crate::validate::validate`]).
pub fn lower(p: &Pipeline, s: &Schedule, mem: &Arc<Memory>) -> Res<Lowered> {
    lower_with(p, s, mem, Engine::Tight)
}

/// The bounds inference engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// weft's: tight per-tile regions, guards clamp ranges, sliding windows.
    Tight,
    /// The formalisation's reference engine β0 (Fig. 10b), the quality floor: plain interval
    /// arithmetic over every variable bound inside the region's scope (outer ones kept
    /// symbolic, the paper's [R] reading for Fig. 2), conditions ignored (`e ⇒ b` is `b`), no
    /// sliding window. Used by tests to check compliance: wherever β0's proc runs and matches
    /// the reference, the tight engine's proc must too.
    Beta0,
}

/// [`lower`] with a chosen bounds inference engine.
pub fn lower_with(p: &Pipeline, s: &Schedule, mem: &Arc<Memory>, engine: Engine) -> Res<Lowered> {
    if let Err(d) = crate::validate::validate(p) {
        return Err(fail(
            "pipeline",
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    let mut l = Lower::new(p, s, mem);
    l.engine = engine;
    l.run()
}

struct Lower<'a> {
    p: &'a Pipeline,
    s: &'a Schedule,
    mem: Arc<Memory>,
    syms: Vec<Sym>,
    pb: ProcBuilder,
    params: Vec<ParamRepr>,
    inputs: Vec<IoBuf>,
    outputs: Vec<IoBuf>,
    funcs: Vec<FuncInfo>,
    /// Stage bodies with inlined funcs substituted, per func and stage.
    bodies: Vec<Vec<Body>>,
    accesses: Vec<Access>,
    /// One-level definitions of the variables that are not loops.
    defs: HashMap<VarId, Lin>,
    preconds: Vec<Cond>,
    /// Variables split with `ShiftInwards` whose extent is known to be at least the factor (an
    /// output's window, by a precondition): the shifted tile stays inside their range.
    fits: HashSet<VarId>,
    engine: Engine,
    /// What is read of each input (filled by bounds inference).
    input_regions: Vec<Vec<(Lin, Lin)>>,
}

impl<'a> Lower<'a> {
    fn new(p: &'a Pipeline, s: &'a Schedule, mem: &Arc<Memory>) -> Lower<'a> {
        Lower {
            p,
            s,
            mem: mem.clone(),
            syms: Vec::new(),
            pb: ProcBuilder::new(&p.name, mem),
            params: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            funcs: Vec::new(),
            bodies: Vec::new(),
            accesses: Vec::new(),
            defs: HashMap::new(),
            preconds: Vec::new(),
            fits: HashSet::new(),
            engine: Engine::Tight,
            input_regions: Vec::new(),
        }
    }

    fn new_var(&mut self, sym: Sym) -> VarId {
        self.syms.push(sym);
        (self.syms.len() - 1) as VarId
    }

    fn ctrl_arg(&mut self, name: &str, size: bool) -> VarId {
        let e = if size {
            self.pb.size(name)
        } else {
            self.pb.index(name)
        };
        match e.kind() {
            weft_ir::ExprKind::Var(s) => self.new_var(s.clone()),
            _ => unreachable!("an argument is a variable"),
        }
    }

    fn run(mut self) -> Res<Lowered> {
        self.arguments();
        self.structure()?;
        self.sites()?;
        self.bounds()?;
        self.finish()
    }

    // ---- arguments -------------------------------------------------------------------------

    fn io_buf(&mut self, name: &str, elem: DType, rank: usize) -> IoBuf {
        let vars: Vec<String> = (0..rank).map(|d| format!("{name}_{d}")).collect();
        let mut mins = Vec::new();
        let mut lens = Vec::new();
        for v in &vars {
            mins.push(self.ctrl_arg(&format!("{v}_min"), false));
            lens.push(self.ctrl_arg(&format!("{v}_extent"), true));
        }
        let shape = lens
            .iter()
            .rev()
            .map(|&l| IExpr::var(&self.syms[l as usize], Ty::Int))
            .collect();
        let buf = self.pb.tensor(name, elem, shape);
        IoBuf { mins, lens, buf }
    }

    fn arguments(&mut self) {
        for q in &self.p.params {
            let r = if q.ty == COORD {
                ParamRepr::Index(self.ctrl_arg(&q.name, false))
            } else {
                ParamRepr::Scalar(self.pb.scalar(&q.name, q.ty))
            };
            self.params.push(r);
        }
        for i in &self.p.inputs {
            let b = self.io_buf(&i.name, i.elem, i.rank);
            self.inputs.push(b);
        }
        for &o in &self.p.outputs {
            let f = &self.p.funcs[o];
            let b = self.io_buf(&f.name, f.ty, f.vars.len());
            self.outputs.push(b);
        }
    }

    // ---- loop structure --------------------------------------------------------------------

    /// A startup expression (literals and `i32` parameters) as a control expression.
    fn startup(&self, e: &Expr) -> Res<Lin> {
        self.to_lin(e, None)
    }

    fn structure(&mut self) -> Res<()> {
        let p = self.p;
        for (fi, f) in p.funcs.iter().enumerate() {
            let fs = &self.s.funcs[fi];
            let inline = fs.compute == Level::Inline && !p.outputs.contains(&fi);
            if inline && !f.updates.is_empty() {
                return Err(fail(
                    "inline-pure",
                    format!("`{}` has update stages and cannot be inlined", f.name),
                ));
            }
            let mut stages = Vec::new();
            let mut bodies = Vec::new();
            for (si, st) in fs.stages.iter().enumerate() {
                let (lhs, value, wheres) = if si == 0 {
                    (
                        (0..f.vars.len()).map(Expr::Var).collect(),
                        f.pure.clone(),
                        Vec::new(),
                    )
                } else {
                    let u = &f.updates[si - 1];
                    (u.lhs.clone(), u.value.clone(), u.wheres.clone())
                };
                let expand = |e: &Expr| self.expand_inline(e);
                bodies.push((
                    lhs.iter().map(expand).collect::<Vec<_>>(),
                    expand(&value),
                    wheres.iter().map(expand).collect::<Vec<_>>(),
                ));
                if inline {
                    continue;
                }
                let mut vars = Vec::new();
                let mut current: HashMap<String, usize> = HashMap::new();
                let mut pure_of = vec![None; f.vars.len()];
                for k in stage_pure_vars(p, fi, si) {
                    let sym = Sym::new(format!("{}_{}", f.name, f.vars[k]));
                    let id = self.new_var(sym);
                    pure_of[k] = Some(vars.len());
                    current.insert(f.vars[k].clone(), vars.len());
                    vars.push(DimVar {
                        name: f.vars[k].clone(),
                        id,
                        min: Lin::konst(0),
                        ext: Lin::konst(0),
                        how: How::Leaf,
                    });
                }
                let mut rvar_of = Vec::new();
                if si > 0 {
                    for r in &f.updates[si - 1].rdom {
                        let id = self.new_var(Sym::new(format!("{}_{}", f.name, r.name)));
                        rvar_of.push(vars.len());
                        current.insert(r.name.clone(), vars.len());
                        vars.push(DimVar {
                            name: r.name.clone(),
                            id,
                            min: Lin::konst(0),
                            ext: Lin::konst(0),
                            how: How::Leaf,
                        });
                    }
                }
                let new_leaf = |this: &mut Self, vars: &mut Vec<DimVar>, name: &str| {
                    let id = this.new_var(Sym::new(format!("{}_{}", f.name, name)));
                    vars.push(DimVar {
                        name: name.to_string(),
                        id,
                        min: Lin::konst(0),
                        ext: Lin::konst(0),
                        how: How::Leaf,
                    });
                    vars.len() - 1
                };
                for op in &st.splits {
                    match op {
                        SplitOp::Split {
                            old,
                            outer,
                            inner,
                            factor,
                            tail,
                        } => {
                            let v = current[old];
                            let o = new_leaf(self, &mut vars, outer);
                            let i = new_leaf(self, &mut vars, inner);
                            vars[v].how = How::Split {
                                outer: o,
                                inner: i,
                                factor: *factor,
                                tail: *tail,
                            };
                            current.remove(old);
                            current.insert(outer.clone(), o);
                            current.insert(inner.clone(), i);
                        }
                        SplitOp::Fuse {
                            inner,
                            outer,
                            fused,
                        } => {
                            let (i, o) = (current[inner], current[outer]);
                            let fz = new_leaf(self, &mut vars, fused);
                            vars[i].how = How::Fused {
                                fused: fz,
                                inner: true,
                                other: o,
                            };
                            vars[o].how = How::Fused {
                                fused: fz,
                                inner: false,
                                other: i,
                            };
                            current.remove(inner);
                            current.remove(outer);
                            current.insert(fused.clone(), fz);
                        }
                    }
                }
                let loops = st
                    .dims
                    .iter()
                    .rev()
                    .map(|d| (current[&d.name], d.kind))
                    .collect();
                stages.push(Stage {
                    vars,
                    pure_of,
                    rvar_of,
                    loops,
                });
            }
            self.bodies.push(bodies);
            self.funcs.push(FuncInfo {
                inline,
                stages,
                compute: Site::Root,
                store: Site::Root,
                alloc: Vec::new(),
                computed: Vec::new(),
                buf: None,
                done: false,
            });
        }
        // Accesses of every stage of every realized func.
        for fi in 0..p.funcs.len() {
            if self.funcs[fi].inline {
                continue;
            }
            for si in 0..self.bodies[fi].len() {
                let (lhs, value, wheres) = &self.bodies[fi][si];
                let mut found = Vec::new();
                let mut collect = |e: &Expr| {
                    e.walk(&mut |x| {
                        if let Expr::Call(c, args) = x {
                            found.push((*c, args.clone()));
                        }
                    })
                };
                lhs.iter().for_each(&mut collect);
                collect(value);
                wheres.iter().for_each(&mut collect);
                for (callee, args) in found {
                    self.accesses.push(Access {
                        func: fi,
                        stage: si,
                        callee,
                        args,
                    });
                }
            }
        }
        // Funcs no output depends on are not realized (as in Halide).
        let mut live: Vec<bool> = (0..p.funcs.len()).map(|f| p.outputs.contains(&f)).collect();
        for f in (0..p.funcs.len()).rev() {
            if !live[f] {
                continue;
            }
            for a in self.accesses.iter().filter(|a| a.func == f) {
                if let Callee::Func(g) = a.callee {
                    live[g] = true;
                }
            }
        }
        for (f, alive) in live.into_iter().enumerate() {
            if !alive {
                self.funcs[f].inline = true;
            }
        }
        self.accesses.retain(|a| !self.funcs[a.func].inline);
        Ok(())
    }

    /// `e` with every call of an inlined func replaced by its definition.
    fn expand_inline(&self, e: &Expr) -> Expr {
        match e {
            Expr::Call(Callee::Func(g), args)
                if self.s.funcs[*g].compute == Level::Inline && !self.p.outputs.contains(g) =>
            {
                let args: Vec<Expr> = args.iter().map(|a| self.expand_inline(a)).collect();
                let body = self.expand_inline(&self.p.funcs[*g].pure);
                let ty = self.p.funcs[*g].ty;
                Expr::cast(ty, subst_vars(&body, &args))
            }
            Expr::Lit(_)
            | Expr::Var(_)
            | Expr::RVar(_)
            | Expr::Param(_)
            | Expr::InputDim { .. } => e.clone(),
            Expr::Call(c, args) => {
                Expr::Call(*c, args.iter().map(|a| self.expand_inline(a)).collect())
            }
            Expr::Unary(op, a) => Expr::Unary(*op, Box::new(self.expand_inline(a))),
            Expr::Binary(op, a, b) => {
                Expr::binary(*op, self.expand_inline(a), self.expand_inline(b))
            }
            Expr::Select(c, a, b) => Expr::select(
                self.expand_inline(c),
                self.expand_inline(a),
                self.expand_inline(b),
            ),
            Expr::Cast(t, a) => Expr::cast(*t, self.expand_inline(a)),
            Expr::Math(m, args) => {
                Expr::Math(*m, args.iter().map(|a| self.expand_inline(a)).collect())
            }
        }
    }

    // ---- compute and store levels ----------------------------------------------------------

    fn site_of(&self, level: &Level, what: &str) -> Res<Site> {
        Ok(match level {
            Level::Inline | Level::Root => Site::Root,
            Level::At { func, stage, var } => {
                let c = &self.funcs[*func];
                let cname = &self.p.funcs[*func].name;
                if c.inline {
                    return Err(fail(
                        "compute-at",
                        format!("{what} at a loop of `{cname}`, which is inlined and has no loops"),
                    ));
                }
                let st = &c.stages[*stage];
                let d = st
                    .loops
                    .iter()
                    .position(|(v, _)| st.vars[*v].name == *var)
                    .ok_or_else(|| {
                        fail(
                            "compute-at",
                            format!("{what} at `{cname}.{var}`, but `{cname}` has no loop `{var}`"),
                        )
                    })?;
                Site::At(*func, *stage, d)
            }
        })
    }

    /// The chain of sites from the root to a func's compute site, outermost first.
    fn chain(&self, f: usize) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut at = self.funcs[f].compute;
        let mut seen = HashSet::new();
        while let Site::At(g, s, d) = at {
            if !seen.insert(g) {
                break;
            }
            out.push((g, s, d));
            at = self.funcs[g].compute;
        }
        out.reverse();
        out
    }

    /// Does code at `site` run before, around and in scope of code inside stage `stage` of `g`?
    fn dominates(&self, site: Site, g: usize, stage: usize) -> bool {
        let Site::At(c, s, d) = site else {
            return true;
        };
        let mut path = self.chain(g);
        path.push((g, stage, usize::MAX));
        path.iter()
            .any(|&(pc, ps, pd)| pc == c && ps == s && pd >= d)
    }

    fn sites(&mut self) -> Res<()> {
        let n = self.p.funcs.len();
        for fi in 0..n {
            if self.funcs[fi].inline {
                continue;
            }
            let name = &self.p.funcs[fi].name;
            let fs = &self.s.funcs[fi];
            if self.p.outputs.contains(&fi) && fs.compute != Level::Root {
                return Err(fail(
                    "output-root",
                    format!("`{name}` is an output and is computed at the root"),
                ));
            }
            let compute = self.site_of(&fs.compute, &format!("`{name}` is computed"))?;
            let store = match &fs.store {
                None => compute,
                Some(l) => self.site_of(l, &format!("`{name}` is stored"))?,
            };
            self.funcs[fi].compute = compute;
            self.funcs[fi].store = store;
        }
        // Cycles: a func computed inside itself.
        for fi in 0..n {
            if !self.funcs[fi].inline && self.chain(fi).iter().any(|&(g, _, _)| g == fi) {
                let mut e = fail(
                    "compute-at",
                    format!(
                        "`{}` is computed inside its own loops",
                        self.p.funcs[fi].name
                    ),
                );
                e.directive = format!("{}.compute_at(..)", self.p.funcs[fi].name);
                e.alternatives = self.legal_sites(fi);
                return Err(e);
            }
        }
        for fi in 0..n {
            if self.funcs[fi].inline {
                continue;
            }
            let site = self.funcs[fi].compute;
            let bad = self
                .accesses
                .iter()
                .filter(|a| a.callee == Callee::Func(fi) && a.func != fi)
                .find(|a| !self.dominates(site, a.func, a.stage));
            if let Some(a) = bad {
                let mut e = fail(
                    "compute-at",
                    format!(
                        "`{}` is computed where its consumer `{}` cannot see it: the compute level must enclose every read",
                        self.p.funcs[fi].name, self.p.funcs[a.func].name
                    ),
                );
                e.directive = format!("{}.compute_at(..)", self.p.funcs[fi].name);
                e.alternatives = self.legal_sites(fi);
                return Err(e);
            }
            let store = self.funcs[fi].store;
            let store_ok = match store {
                Site::Root => true,
                Site::At(c, s, d) => {
                    let mut path = self.chain(fi);
                    if site == Site::Root {
                        path.clear();
                    }
                    path.iter()
                        .any(|&(pc, ps, pd)| pc == c && ps == s && pd >= d)
                }
            };
            if !store_ok {
                return Err(fail(
                    "store-at",
                    format!(
                        "`{}` is stored at a level that does not enclose its compute level",
                        self.p.funcs[fi].name
                    ),
                ));
            }
            // One buffer written by the iterations of a parallel loop at once would race
            // (Halide rejects this too).
            if let Some(par) = self.parallel_between(store, fi) {
                return Err(fail(
                    "store-parallel",
                    format!(
                        "`{}` is stored outside the parallel loop `{par}` and computed inside it: its iterations would write one buffer at once; store it inside that loop (or at its compute level)",
                        self.p.funcs[fi].name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A parallel loop between `store` and `f`'s compute level (the compute loop included), by
    /// name.
    fn parallel_between(&self, store: Site, f: usize) -> Option<String> {
        let mut inside = store == Site::Root;
        for (c, cs, d) in self.chain(f) {
            let from = match store {
                Site::At(sc, ss, sd) if sc == c && ss == cs && !inside => {
                    inside = true;
                    sd + 1
                }
                _ if inside => 0,
                _ => continue,
            };
            let st = &self.funcs[c].stages[cs];
            for k in from..=d.min(st.loops.len().saturating_sub(1)) {
                let (v, kind) = st.loops[k];
                if kind == LoopKind::Parallel {
                    return Some(format!("{}.{}", self.p.funcs[c].name, st.vars[v].name));
                }
            }
        }
        None
    }

    /// Every loop level where `f` could be computed: the root and each loop that encloses all
    /// reads of `f`.
    fn legal_sites(&self, f: usize) -> Vec<String> {
        let mut out = vec!["compute_root()".to_string()];
        for g in 0..self.funcs.len() {
            if self.funcs[g].inline || g == f {
                continue;
            }
            for (s, st) in self.funcs[g].stages.iter().enumerate() {
                for (d, (v, _)) in st.loops.iter().enumerate() {
                    let site = Site::At(g, s, d);
                    let ok = self
                        .accesses
                        .iter()
                        .filter(|a| a.callee == Callee::Func(f) && a.func != f)
                        .all(|a| self.dominates(site, a.func, a.stage))
                        && !self.chain(g).iter().any(|&(c, _, _)| c == f);
                    if ok {
                        let stage = if s == 0 {
                            String::new()
                        } else {
                            format!(" (update {})", s - 1)
                        };
                        out.push(format!(
                            "compute_at({}, {}){stage}",
                            self.p.funcs[g].name, st.vars[*v].name
                        ));
                    }
                }
            }
        }
        out
    }

    // ---- bounds inference ------------------------------------------------------------------

    /// A coordinate expression of stage `ctx = (func, stage)` as a control expression; `None`
    /// for startup expressions (literals and parameters only).
    fn to_lin(&self, e: &Expr, ctx: Option<(usize, usize)>) -> Res<Lin> {
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
            Expr::Param(k) => match &self.params[*k] {
                ParamRepr::Index(v) => Lin::var(*v),
                ParamRepr::Scalar(_) => return Err(bad("uses a parameter that is not i32")),
            },
            Expr::Unary(UnOp::Neg, a) => self.to_lin(a, ctx)?.scale(-1),
            Expr::Cast(t, a) if *t == COORD => self.to_lin(a, ctx)?,
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.to_lin(a, ctx)?, self.to_lin(b, ctx)?);
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

    fn to_cond(&self, e: &Expr, ctx: Option<(usize, usize)>) -> Res<Cond> {
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
    fn bind_stage(&self, scope: &mut Scope, f: usize, s: usize, relaxed: &[usize]) {
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
        for (v, dv) in st.vars.iter().enumerate() {
            let (some, all) = under(st, v, &leaves);
            if !some {
                continue;
            }
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
    fn scope_from(&self, site: Site, g: usize, s: usize) -> Scope {
        let mut path = self.chain(g);
        path.push((g, s, usize::MAX));
        let mut scope = Scope::default();
        let mut inside = site == Site::Root;
        for &(c, cs, d) in &path {
            let n = self.funcs[c].stages[cs].loops.len();
            let upto = if d == usize::MAX { n } else { d + 1 };
            let from = match site {
                Site::At(sc, ss, sd) if sc == c && ss == cs && !inside => {
                    inside = true;
                    sd + 1
                }
                _ if inside => 0,
                _ => continue,
            };
            let relaxed: Vec<usize> = (from..upto.min(n)).collect();
            self.bind_stage(&mut scope, c, cs, &relaxed);
        }
        scope
    }

    /// The hull of `args` (in stage `(g, s)`) seen from `site`, per dimension.
    fn hull_of(&self, site: Site, g: usize, s: usize, args: &[Expr]) -> Res<Vec<(End, End)>> {
        let scope = self.scope_from(site, g, s);
        args.iter()
            .map(|a| {
                let l = self.to_lin(a, Some((g, s)))?;
                Ok((scope.lower(&l), scope.upper(&l)))
            })
            .collect()
    }

    fn bounds(&mut self) -> Res<()> {
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
    fn needs(&self, f: usize) -> Vec<usize> {
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
    fn infer(&mut self, f: usize) -> Res<()> {
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
        self.slide(f, &mut region);
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
            let w: Vec<(End, End)> = lhs
                .iter()
                .map(|e| {
                    let l = self.to_lin(e, Some((f, s)))?;
                    Ok((scope.lower(&l), scope.upper(&l)))
                })
                .collect::<Res<_>>()?;
            writes = join(writes, w.clone());
            if s == 0 {
                self.funcs[f].computed = w
                    .into_iter()
                    .enumerate()
                    .map(|(d, (lo, hi))| match (lo, hi) {
                        (Some(lo), Some(hi)) => Ok((lo, hi)),
                        _ => Err(self.unbounded(f, d)),
                    })
                    .collect::<Res<_>>()?;
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
                let h: Vec<(End, End)> = a
                    .args
                    .iter()
                    .map(|e| {
                        let l = self.to_lin(e, Some((f, s)))?;
                        Ok((scope.lower(&l), scope.upper(&l)))
                    })
                    .collect::<Res<_>>()?;
                next = join(next, h);
            }
            stage_region = next
                .into_iter()
                .enumerate()
                .map(|(d, (lo, hi))| match (lo, hi) {
                    (Some(lo), Some(hi)) => Ok((lo, hi)),
                    _ => Err(self.unbounded(f, d)),
                })
                .collect::<Res<_>>()?;
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
            relaxed
                .into_iter()
                .enumerate()
                .map(|(d, (lo, hi))| match (lo, hi) {
                    (Some(lo), Some(hi)) => Ok((lo, hi)),
                    _ => Err(self.unbounded(f, d)),
                })
                .collect::<Res<_>>()?
        };
        self.funcs[f].alloc = alloc;
        Ok(())
    }

    /// Sliding window (Halide's): a func stored outside the serial loop it is computed in, whose
    /// region moves forward monotonically with that loop's variable in one dimension, computes in
    /// each iteration after the first only what the previous iterations have not: the region's
    /// min in that dimension becomes `max(min(v), max(v - 1) + 1)`. The buffer, at the store
    /// level, keeps the earlier points.
    fn slide(&self, f: usize, region: &mut [(Lin, Lin)]) {
        let (Site::At(c, s, d), store) = (self.funcs[f].compute, self.funcs[f].store) else {
            return;
        };
        if store == self.funcs[f].compute
            || !self.p.funcs[f].updates.is_empty()
            || self.engine == Engine::Beta0
        {
            return;
        }
        let st = &self.funcs[c].stages[s];
        let (lv, kind) = st.loops[d];
        if kind != LoopKind::Serial {
            return;
        }
        let v = st.vars[lv].id;
        let step = |e: &Lin| {
            let e = self.expand_defs(e);
            let next = e.subst(&|u| (u == v).then(|| Lin::var(v).add_k(1)));
            next.sub(&e).as_const()
        };
        let mut moving = None;
        for (k, (lo, hi)) in region.iter().enumerate() {
            match (step(lo), step(hi)) {
                (Some(0), Some(0)) => {}
                (Some(a), Some(b)) if a >= 0 && b >= 0 && moving.is_none() => moving = Some((k, b)),
                _ => return,
            }
        }
        let Some((k, b)) = moving else { return };
        let (lo, hi) = region[k].clone();
        let first = Cond::eq(&Lin::var(v), &st.vars[lv].min);
        let fresh = lo.max_with(&self.expand_defs(&hi).add_k(1 - b));
        region[k].0 = Lin::select(&first, &lo, &fresh);
    }

    /// Relax `hull` (over `f`'s compute level) further over the loops between `outer` and
    /// `f`'s compute level.
    fn relax_between(&self, outer: Site, f: usize, hull: &[(End, End)]) -> Vec<(End, End)> {
        let mut scope = Scope::default();
        let chain = self.chain(f);
        let mut inside = outer == Site::Root;
        for &(c, cs, d) in &chain {
            let from = match outer {
                Site::At(oc, os, od) if oc == c && os == cs && !inside => {
                    inside = true;
                    od + 1
                }
                _ if inside => 0,
                _ => continue,
            };
            let relaxed: Vec<usize> = (from..=d).collect();
            self.bind_stage(&mut scope, c, cs, &relaxed);
        }
        hull.iter()
            .map(|(lo, hi)| {
                (
                    lo.as_ref().and_then(|l| scope.lower(l)),
                    hi.as_ref().and_then(|h| scope.upper(h)),
                )
            })
            .collect()
    }

    fn unbounded(&self, f: usize, d: usize) -> DirectiveError {
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
    fn set_ranges(&mut self, f: usize, s: usize, region: &[(Lin, Lin)]) -> Res<()> {
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

    // ---- emission --------------------------------------------------------------------------

    fn finish(mut self) -> Res<Lowered> {
        let body = self.emit_site(Site::Root, &HashMap::new())?;
        for c in std::mem::take(&mut self.preconds) {
            if c == Cond::Const(true) {
                continue;
            }
            let e = self.cond_expr(&c, &HashMap::new())?;
            self.pb.assert(e);
        }
        let none = HashMap::new();
        let exprs = |this: &Self, r: &[(Lin, Lin)]| -> Res<Vec<(IExpr, IExpr)>> {
            r.iter()
                .map(|(lo, hi)| Ok((this.lin_expr(lo, &none)?, this.lin_expr(hi, &none)?)))
                .collect()
        };
        let mut regions = Vec::new();
        for (f, info) in self.funcs.iter().enumerate() {
            if info.inline {
                continue;
            }
            regions.push(Region {
                func: self.p.funcs[f].name.clone(),
                computed: exprs(&self, &info.computed)?,
                allocated: exprs(&self, &info.alloc)?,
            });
        }
        let inputs = self
            .p
            .inputs
            .iter()
            .zip(&self.input_regions)
            .map(|(i, r)| Ok((i.name.clone(), exprs(&self, r)?)))
            .collect::<Res<_>>()?;
        let mut pb = self.pb;
        pb.body().stmts = body;
        Ok(Lowered {
            proc: pb.finish(),
            regions,
            inputs,
        })
    }

    /// The statements at a site: allocations of funcs stored here, then the funcs computed here
    /// in definition order.
    fn emit_site(&mut self, site: Site, env: &HashMap<VarId, IExpr>) -> Res<Vec<Stmt>> {
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
            for (lo, hi) in self.funcs[f].alloc.iter().rev() {
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

    fn emit_loops(
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
        let hi = self.lin_expr(&dv.min.add(&dv.ext), env)?;
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
                let mut env = env.clone();
                env.insert(dv.id, IExpr::var(&sym, Ty::Int));
                let body = body_at(self, &env)?;
                Ok(vec![Stmt::new(
                    StmtKind::For {
                        var: sym,
                        lo,
                        hi,
                        body,
                        parallel: kind == LoopKind::Parallel,
                    },
                    Span::DUMMY,
                )])
            }
        }
    }

    /// The guards `v < min + extent` of the `GuardWithIf` splits of stage `(f, s)` whose
    /// innermost loop is loop `depth`.
    fn guards_at(&self, f: usize, s: usize, depth: usize) -> Cond {
        let st = &self.funcs[f].stages[s];
        fn deepest(st: &Stage, v: usize) -> usize {
            match &st.vars[v].how {
                How::Leaf => st.loops.iter().position(|l| l.0 == v).unwrap_or(0),
                How::Split { outer, inner, .. } => deepest(st, *outer).max(deepest(st, *inner)),
                How::Fused { fused, .. } => deepest(st, *fused),
            }
        }
        let mut guard = Cond::Const(true);
        for (v, dv) in st.vars.iter().enumerate() {
            if let How::Split {
                tail: Tail::GuardWithIf,
                ..
            } = dv.how
            {
                if deepest(st, v) == depth {
                    let def = self.defs[&dv.id].clone();
                    guard = Cond::and(guard, Cond::lt(&def, &dv.min.add(&dv.ext)));
                }
            }
        }
        guard
    }

    /// The innermost statement of a stage: guards of its splits, then the store.
    fn emit_store(&mut self, f: usize, s: usize, env: &HashMap<VarId, IExpr>) -> Res<Vec<Stmt>> {
        let mut guard = Cond::Const(true);
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
        for w in &wheres {
            match self.to_cond(w, Some((f, s))) {
                Ok(c) => guard = Cond::and(guard, c),
                Err(_) => {
                    let c = self.data_expr(w, (f, s), env)?;
                    let old = IExpr::read(&buf.sym, buf.elem, idx.clone());
                    value = IExpr::select(c, value, old);
                }
            }
        }
        let store = Stmt::new(
            StmtKind::Assign {
                buf: buf.sym.clone(),
                idx,
                rhs: value,
            },
            Span::DUMMY,
        );
        if guard == Cond::Const(true) {
            return Ok(vec![store]);
        }
        let cond = self.cond_expr(&guard, env)?;
        Ok(vec![Stmt::new(
            StmtKind::If {
                cond,
                then_body: vec![store],
                else_body: Vec::new(),
            },
            Span::DUMMY,
        )])
    }

    /// The indices of `args` into func `f`'s buffer (or an input's).
    fn buf_index(
        &self,
        f: usize,
        args: &[Expr],
        ctx: (usize, usize),
        env: &HashMap<VarId, IExpr>,
    ) -> Res<Vec<IExpr>> {
        let alloc = &self.funcs[f].alloc;
        let mut idx = Vec::new();
        for (d, a) in args.iter().enumerate().rev() {
            let l = self.to_lin(a, Some(ctx))?.sub(&alloc[d].0);
            idx.push(self.lin_expr(&l, env)?);
        }
        Ok(idx)
    }

    fn input_index(
        &self,
        k: usize,
        args: &[Expr],
        ctx: (usize, usize),
        env: &HashMap<VarId, IExpr>,
    ) -> Res<Vec<IExpr>> {
        let mut idx = Vec::new();
        for (d, a) in args.iter().enumerate().rev() {
            let l = self
                .to_lin(a, Some(ctx))?
                .sub(&Lin::var(self.inputs[k].mins[d]));
            idx.push(self.lin_expr(&l, env)?);
        }
        Ok(idx)
    }

    /// A value expression of stage `ctx` as weft data.
    fn data_expr(&self, e: &Expr, ctx: (usize, usize), env: &HashMap<VarId, IExpr>) -> Res<IExpr> {
        let ctrl = |l: Lin| -> Res<IExpr> { Ok(IExpr::cast(COORD, self.lin_expr(&l, env)?)) };
        Ok(match e {
            Expr::Lit(s) => literal(*s),
            Expr::Var(_) | Expr::RVar(_) | Expr::InputDim { .. } => {
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
    fn lin_expr(&self, l: &Lin, env: &HashMap<VarId, IExpr>) -> Res<IExpr> {
        let l = &self.expand_defs(l);
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
            if *c < 0 && acc.is_some() {
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
            Some(a) if l.k < 0 => IExpr::binary(BinOp::Sub, a, IExpr::int(-l.k)),
            Some(a) => a,
        })
    }

    /// `l` with every variable that is not a loop replaced by its definition, normalised again
    /// (so a fused loop's coordinates fold back into the loop variable).
    fn expand_defs(&self, l: &Lin) -> Lin {
        let mut vars = Vec::new();
        l.vars(&mut vars);
        if !vars.iter().any(|v| self.defs.contains_key(v)) {
            return l.clone();
        }
        let next = l.subst(&|v| self.defs.get(&v).cloned());
        self.expand_defs(&next)
    }

    fn cond_expr(&self, c: &Cond, env: &HashMap<VarId, IExpr>) -> Res<IExpr> {
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

/// `e <= 0` (or `e == 0`) written as `positive part <= negative part`, which reads better.
fn split_cmp(
    e: &Lin,
    _eq: bool,
    op: impl Fn(IExpr, IExpr) -> IExpr,
    l: &Lower,
    env: &HashMap<VarId, IExpr>,
) -> Res<IExpr> {
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

fn literal(s: Scalar) -> IExpr {
    let ty = Ty::Data(s.dtype());
    let c = match s {
        Scalar::Bool(b) => Const::Bool(b),
        Scalar::F32(v) => Const::Float(v as f64),
        Scalar::F64(v) => Const::Float(v),
        other => Const::Int(other.as_i128().unwrap_or(0) as i64),
    };
    IExpr::typed_const(c, ty)
}

/// The hull of two per-dimension intervals (an empty list is the empty hull).
fn join(a: Vec<(End, End)>, b: Vec<(End, End)>) -> Vec<(End, End)> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    a.into_iter()
        .zip(b)
        .map(|((l1, h1), (l2, h2))| {
            let lo = match (l1, l2) {
                (Some(x), Some(y)) => Some(x.min_with(&y)),
                _ => None,
            };
            let hi = match (h1, h2) {
                (Some(x), Some(y)) => Some(x.max_with(&y)),
                _ => None,
            };
            (lo, hi)
        })
        .collect()
}

/// `e` with pure variable `k` replaced by `args[k]`.
fn subst_vars(e: &Expr, args: &[Expr]) -> Expr {
    match e {
        Expr::Var(k) => args[*k].clone(),
        Expr::Lit(_) | Expr::RVar(_) | Expr::Param(_) | Expr::InputDim { .. } => e.clone(),
        Expr::Call(c, xs) => Expr::Call(*c, xs.iter().map(|a| subst_vars(a, args)).collect()),
        Expr::Unary(op, a) => Expr::Unary(*op, Box::new(subst_vars(a, args))),
        Expr::Binary(op, a, b) => Expr::binary(*op, subst_vars(a, args), subst_vars(b, args)),
        Expr::Select(c, a, b) => Expr::select(
            subst_vars(c, args),
            subst_vars(a, args),
            subst_vars(b, args),
        ),
        Expr::Cast(t, a) => Expr::cast(*t, subst_vars(a, args)),
        Expr::Math(m, xs) => Expr::Math(*m, xs.iter().map(|a| subst_vars(a, args)).collect()),
    }
}

/// The value of a control expression of a lowered proc (a region bound, a precondition's side)
/// with its variables given by name; `None` when a variable has no value or the expression is
/// not control arithmetic.
pub fn eval_control(e: &IExpr, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    use weft_ir::ExprKind;
    Some(match e.kind() {
        ExprKind::Const(Const::Int(v)) => *v,
        ExprKind::Const(Const::Bool(b)) => *b as i64,
        ExprKind::Var(s) => env(s.name())?,
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
