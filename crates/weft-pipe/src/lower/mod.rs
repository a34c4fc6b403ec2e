//! Lowering of a scheduled pipeline into a weft proc, with bounds inference
//! (`../shared/reference/halide-formal-semantics.md` §3–§5).
//!
//! The proc realizes every output on a window given at run time. Its arguments, in order: each
//! `i32` parameter as an `index` (other parameters as rank-0 buffers); for each input, the min
//! (`index`) and extent (`size`) of every dimension, then the buffer; for each output, the same
//! for its window, then the buffer; last, the derived arguments (large region ends of root
//! funcs, each defined by a precondition `name == definition`, see `bounds::name_region`).
//! Buffers are row-major with the first pipeline dimension innermost, so `f(x, y)` is
//! `f[y - y_min, x - x_min]`.
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

mod bounds;
mod data_index;
mod emit;
mod partition;

pub use emit::{derivation, derived_args, eval_control, first_derived};

/// The lowered proc and the regions bounds inference found.
pub struct Lowered {
    pub proc: Arc<Proc>,
    /// Every func that is not inlined, in definition order (with specializations, in the
    /// general version).
    pub regions: Vec<Region>,
    /// What is read of each input, per dimension (min, max): Halide's `infer_input_bounds`,
    /// over the proc's arguments (with specializations, the hull over every version).
    pub inputs: InputRegions,
    /// With `specialize`, every version of the pipeline in the order they are tried (the
    /// general one, whose regions are also `regions`, last); empty without.
    pub versions: Vec<VersionRegions>,
}

/// One version of a specialized pipeline: when it runs (a condition over the proc's
/// arguments), its regions and what it reads of its inputs.
pub struct VersionRegions {
    pub when: IExpr,
    pub regions: Vec<Region>,
    pub inputs: InputRegions,
}

/// What is read of each input: its name and, per dimension, the min and max.
pub type InputRegions = Vec<(String, Vec<(IExpr, IExpr)>)>;

/// The most versions `specialize` may make of one pipeline (the product over its specialized
/// stages of their specializations plus one). Every version is proved inside the one proc, and
/// the checker's work grows faster than their number (16 versions of a pyramid left a proof
/// undecided where each version alone checks in about a second).
pub const MAX_VERSIONS: usize = 8;

/// The regions of a func, per dimension (min, max, both included), as weft expressions over the
/// proc's arguments and the loops around the func's compute (or store) level.
#[derive(Clone)]
pub struct Region {
    pub func: String,
    /// Where its pure definition is computed.
    pub computed: Vec<(IExpr, IExpr)>,
    /// Its buffer.
    pub allocated: Vec<(IExpr, IExpr)>,
    /// Storage folding: the dimension whose buffer is circular, and its rows (the buffer's
    /// min and max in that dimension are then `0` and rows - 1, indexed by the coordinate
    /// modulo the rows).
    pub folded: Option<(usize, i64)>,
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
    /// Storage folding: the dimension whose buffer is a circular one of this many rows, indexed
    /// by the coordinate modulo the factor (see `Lowering::slide`).
    fold: Option<(usize, i64)>,
    buf: Option<Buf>,
    done: bool,
}

/// One lowered version of the schedule.
struct Version {
    body: Vec<Stmt>,
    /// The derived arguments' definitions, `name == definition`.
    equalities: Vec<IExpr>,
    preconds: Vec<IExpr>,
    regions: Vec<Region>,
    inputs: InputRegions,
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
    lower_options(p, s, mem, engine, true)
}

/// [`lower`] without partitioning loops that no split made around loops of constant ranges
/// (see the `partition` module): what to fall back to where the checker does not accept the
/// proc partitioned so (it may not combine the three loops' writes for a reader of the func).
pub fn lower_unpartitioned(p: &Pipeline, s: &Schedule, mem: &Arc<Memory>) -> Res<Lowered> {
    lower_options(p, s, mem, Engine::Tight, false)
}

fn lower_options(
    p: &Pipeline,
    s: &Schedule,
    mem: &Arc<Memory>,
    engine: Engine,
    partition_unsplit: bool,
) -> Res<Lowered> {
    if let Err(d) = crate::validate::validate(p) {
        return Err(fail(
            "pipeline",
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    let versions = versions(p, s)?;
    let mut l = Lower::new(p, &versions[0].1, mem);
    l.engine = engine;
    l.partition_unsplit = partition_unsplit;
    l.arguments();
    let mut parts = Vec::new();
    for (choice, schedule) in &versions {
        l.start(schedule);
        parts.push((choice.clone(), l.version()?));
    }
    l.assemble(s, parts)
}

/// Which specialization each specialized stage runs (`k` < its count: specialization `k`;
/// equal to it: the stage's own loops), per `(func, stage)`.
type Choice = Vec<((usize, usize), usize)>;

/// Every version of the schedule: for each combination of the specialized stages' choices,
/// the schedule with those loop structures (and no specializations), in the order the
/// decision tree of [`Lower::assemble`] visits them. An inlined func has no loops: its
/// specializations make no versions.
fn versions(p: &Pipeline, s: &Schedule) -> Res<Vec<(Choice, Schedule)>> {
    let mut out = vec![(Vec::new(), s.clone())];
    for (f, fs) in s.funcs.iter().enumerate() {
        let inline = fs.compute == Level::Inline && !p.outputs.contains(&f);
        for (st, stage) in fs.stages.iter().enumerate() {
            let n = stage.specializations.len();
            if n == 0 || inline {
                continue;
            }
            if out.len() * (n + 1) > MAX_VERSIONS {
                return Err(fail(
                    "specialize",
                    format!("the specializations make more than {MAX_VERSIONS} versions of the pipeline (one per combination of their stages' choices)"),
                ));
            }
            let mut next = Vec::new();
            for (choice, sched) in out {
                for k in 0..=n {
                    let mut sched = sched.clone();
                    let target = &mut sched.funcs[f].stages[st];
                    if k < n {
                        *target = stage.specializations[k].stage.clone();
                    }
                    target.specializations.clear();
                    let mut choice = choice.clone();
                    choice.push(((f, st), k));
                    next.push((choice, sched));
                }
            }
            out = next;
        }
    }
    Ok(out)
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
    /// Preconditions found while emitting data coordinates (see `data_index`).
    data_preconds: std::cell::RefCell<Vec<Cond>>,
    /// The `min`/`max` resolved in the steady state of the loop being emitted (`partition`).
    resolved: std::cell::RefCell<partition::Resolved>,
    /// The `GuardWithIf` splits (stage and split variable) whose guards hold throughout the
    /// steady state of the loop being emitted: they are left out there.
    resolved_guards: std::cell::RefCell<Vec<(usize, usize, usize)>>,
    /// Variables split with `ShiftInwards` whose extent is known to be at least the factor (an
    /// output's window, by a precondition): the shifted tile stays inside their range.
    fits: HashSet<VarId>,
    engine: Engine,
    /// Whether loops no split made are partitioned around loops of constant ranges.
    partition_unsplit: bool,
    /// What is read of each input (filled by bounds inference).
    input_regions: Vec<Vec<(Lin, Lin)>>,
    /// Expression nodes inlining has made, and the func whose inlining passed the limit.
    inlined: std::cell::Cell<(usize, Option<usize>)>,
    /// Region ends of root funcs bound to names (see `Lower::name_region`), in the order they
    /// were made: each definition mentions only arguments and earlier names.
    named: Vec<(VarId, Lin)>,
    /// The arguments that are sizes (at least 1).
    sizes: HashSet<VarId>,
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
            data_preconds: Default::default(),
            resolved: Default::default(),
            resolved_guards: Default::default(),
            fits: HashSet::new(),
            engine: Engine::Tight,
            partition_unsplit: true,
            input_regions: Vec::new(),
            named: Vec::new(),
            sizes: HashSet::new(),
            inlined: Default::default(),
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
            weft_ir::ExprKind::Var(s) => {
                let v = self.new_var(s.clone());
                if size {
                    self.sizes.insert(v);
                }
                v
            }
            _ => unreachable!("an argument is a variable"),
        }
    }

    /// Start lowering one version of the schedule (after the arguments, which all share).
    fn start(&mut self, s: &'a Schedule) {
        self.s = s;
        self.funcs.clear();
        self.bodies.clear();
        self.accesses.clear();
        self.defs.clear();
        self.preconds.clear();
        self.data_preconds.take();
        self.resolved.take();
        self.resolved_guards.take();
        self.fits.clear();
        self.input_regions.clear();
        self.inlined.set((0, None));
        self.named.clear();
    }

    /// Lower the current version: its statements, preconditions and regions.
    fn version(&mut self) -> Res<Version> {
        self.structure()?;
        if let (_, Some(g)) = self.inlined.get() {
            return Err(fail(
                "inline-size",
                format!(
                    "inlining `{}` into its consumers makes expressions of more than {INLINE_LIMIT} nodes (funcs are inlined unless scheduled, as in Halide); compute it at the root or at a loop level (compute_root, compute_at)",
                    self.p.funcs[g].name
                ),
            ));
        }
        self.sites()?;
        self.bounds()?;
        self.emit_version()
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
                let expand = |e: &Expr| self.expand_inline(e, fi);
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
                fold: None,
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

    /// `e`, part of func `within`'s definition, with every call of an inlined func replaced by
    /// its definition (and every call of a func cloned into `within`).
    fn expand_inline(&self, e: &Expr, within: usize) -> Expr {
        if self.inlined.get().1.is_some() {
            // Past the limit: lowering fails (see `run`).
            return Expr::Lit(Scalar::I32(0));
        }
        match e {
            Expr::Call(Callee::Func(g), args)
                if (self.s.funcs[*g].compute == Level::Inline && !self.p.outputs.contains(g))
                    || self.s.funcs[*g].inline_in.contains(&within) =>
            {
                let args: Vec<Expr> = args.iter().map(|a| self.expand_inline(a, within)).collect();
                let body = self.expand_inline(&self.p.funcs[*g].pure, *g);
                // Inlined funcs nest (a pyramid left inline reads every level 9 times per
                // point of the next): count what the substitution would make, and stop once
                // the total passes the limit, before building it.
                let (used, over) = self.inlined.get();
                let sizes: Vec<usize> = args.iter().map(expr_size).collect();
                let size = used.saturating_add(subst_size(&body, &sizes));
                if over.is_some() || size > INLINE_LIMIT {
                    self.inlined.set((size, over.or(Some(*g))));
                    return Expr::Lit(Scalar::I32(0));
                }
                self.inlined.set((size, None));
                let ty = self.p.funcs[*g].ty;
                Expr::cast(ty, subst_vars(&body, &args))
            }
            Expr::Lit(_)
            | Expr::Var(_)
            | Expr::RVar(_)
            | Expr::Param(_)
            | Expr::InputDim { .. }
            | Expr::OutputDim { .. } => e.clone(),
            Expr::Call(c, args) => Expr::Call(
                *c,
                args.iter().map(|a| self.expand_inline(a, within)).collect(),
            ),
            Expr::Unary(op, a) => Expr::Unary(*op, Box::new(self.expand_inline(a, within))),
            Expr::Binary(op, a, b) => Expr::binary(
                *op,
                self.expand_inline(a, within),
                self.expand_inline(b, within),
            ),
            Expr::Select(c, a, b) => Expr::select(
                self.expand_inline(c, within),
                self.expand_inline(a, within),
                self.expand_inline(b, within),
            ),
            Expr::Cast(t, a) => Expr::cast(*t, self.expand_inline(a, within)),
            Expr::Math(m, args) => Expr::Math(
                *m,
                args.iter().map(|a| self.expand_inline(a, within)).collect(),
            ),
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

    /// The loops on `path` (sites from the root inwards; depth `usize::MAX` for all of a
    /// stage's loops) that lie inside `outer`: per stage, the positions of those loops.
    fn loops_inside(
        &self,
        outer: Site,
        path: &[(usize, usize, usize)],
    ) -> Vec<(usize, usize, std::ops::Range<usize>)> {
        let mut out = Vec::new();
        let mut inside = outer == Site::Root;
        for &(c, cs, d) in path {
            let n = self.funcs[c].stages[cs].loops.len();
            let from = match outer {
                Site::At(oc, os, od) if oc == c && os == cs && !inside => {
                    inside = true;
                    od + 1
                }
                _ if inside => 0,
                _ => continue,
            };
            let upto = d.saturating_add(1).min(n);
            out.push((c, cs, from..upto.max(from)));
        }
        out
    }

    /// A parallel loop between `store` and `f`'s compute level (the compute loop included), by
    /// name.
    fn parallel_between(&self, store: Site, f: usize) -> Option<String> {
        for (c, cs, loops) in self.loops_inside(store, &self.chain(f)) {
            let st = &self.funcs[c].stages[cs];
            for k in loops {
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

/// The most expression nodes inlining may make in one lowering.
const INLINE_LIMIT: usize = 200_000;

fn expr_size(e: &Expr) -> usize {
    subst_size(e, &[])
}

/// The size of `e` with pure variable `k` replaced by an expression of `sizes[k]` nodes (all
/// of them kept when `sizes` is empty).
fn subst_size(e: &Expr, sizes: &[usize]) -> usize {
    let sum = |xs: &[Expr]| {
        xs.iter()
            .fold(1usize, |n, a| n.saturating_add(subst_size(a, sizes)))
    };
    match e {
        Expr::Var(k) => sizes.get(*k).copied().unwrap_or(1),
        Expr::Lit(_)
        | Expr::RVar(_)
        | Expr::Param(_)
        | Expr::InputDim { .. }
        | Expr::OutputDim { .. } => 1,
        Expr::Call(_, xs) | Expr::Math(_, xs) => sum(xs),
        Expr::Unary(_, a) | Expr::Cast(_, a) => 1 + subst_size(a, sizes),
        Expr::Binary(_, a, b) => 1 + subst_size(a, sizes) + subst_size(b, sizes),
        Expr::Select(c, a, b) => {
            1 + subst_size(c, sizes) + subst_size(a, sizes) + subst_size(b, sizes)
        }
    }
}

/// `e` with pure variable `k` replaced by `args[k]`.
fn subst_vars(e: &Expr, args: &[Expr]) -> Expr {
    match e {
        Expr::Var(k) => args[*k].clone(),
        Expr::Lit(_)
        | Expr::RVar(_)
        | Expr::Param(_)
        | Expr::InputDim { .. }
        | Expr::OutputDim { .. } => e.clone(),
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
