//! Differential test of lowering: random valid pipelines (stencils, up- and down-sampling,
//! update stages with reduction domains, predicates, self-reads, several outputs) × random
//! schedules (splits with every tail, reorders, fuses, parallel, vectorize, unroll, compute and
//! store levels) × random windows. Every lowered proc must pass the proc checker, and in the proc
//! interpreter either equal the pipeline interpreter on every point where the reference has a
//! value, or stop at a named precondition. `WEFT_PIPE_CASES` sets the number of pipelines.

mod common;

use std::sync::Arc;
use weft_interp::{ArgValue, Buffer, ConfigState, Scalar};
use weft_ir::Proc;
use weft_ir::{BinOp, DType, Memory};
use weft_jit::{Arg, BufArg, Jit};
use weft_pipe::ast::{Expr, Func, Input, Param, Pipeline, RDim, Update};
use weft_pipe::interp::{realize, Args, InputBuffer};
use weft_pipe::lower::{lower_with, Engine};
use weft_pipe::schedule::{Schedule, Tail};

fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn int(v: i64) -> Expr {
    Expr::int(v as i32)
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}

/// A coordinate of dimension `d` for a read: the variable with a small offset, sometimes scaled,
/// sometimes computed from data (a clamped read of the input, as lookup tables are indexed).
fn coord(r: &mut Rng, vars: &[Expr], d: usize, scaled: &mut bool) -> Expr {
    let var = vars[d].clone();
    let base = match r.below(10) {
        0 if !*scaled => {
            *scaled = true;
            bin(BinOp::Div, var, int(2))
        }
        1 if !*scaled => {
            *scaled = true;
            bin(BinOp::Mul, var, int(2))
        }
        2 => bin(
            BinOp::Max,
            bin(BinOp::Min, var, int(r.range(2, 6))),
            int(r.range(-3, 0)),
        ),
        // Constant arithmetic that wraps in i32 (65536 * 65536 is 0: x / 0 is 0).
        3 if r.chance(20) => bin(BinOp::Div, var, bin(BinOp::Mul, int(65536), int(65536))),
        4 if r.chance(50) => data_coord(r, vars, var),
        _ => var,
    };
    match r.range(-2, 2) {
        0 => base,
        d => bin(BinOp::Add, base, int(d)),
    }
}

/// `clamp(v, lo, hi)` as the text form builds it.
fn clamp(v: Expr, lo: Expr, hi: Expr) -> Expr {
    bin(BinOp::Min, bin(BinOp::Max, v, lo), hi)
}

/// A coordinate read from the input at `vars` and clamped: to constants, around `var`, or to
/// `0..=n` (a single point when `n < 0`).
fn data_coord(r: &mut Rng, vars: &[Expr], var: Expr) -> Expr {
    let read = Expr::input(0, vars.to_vec());
    match r.below(3) {
        0 => clamp(read, int(r.range(-3, 1)), int(r.range(0, 4))),
        1 => clamp(
            bin(BinOp::Add, read, var.clone()),
            bin(BinOp::Sub, var.clone(), int(2)),
            bin(BinOp::Add, var, int(2)),
        ),
        _ => clamp(read, int(0), Expr::Param(0)),
    }
}

/// A value of func `f` (which may read funcs `0..f` and the input) at coordinates `vars`.
fn value(r: &mut Rng, f: usize, vars: &[Expr], depth: u32, scaled: &mut bool) -> Expr {
    if depth == 0 || r.chance(25) {
        return match r.below(6) {
            0 => int(r.range(-5, 5)),
            1 => vars[r.below(vars.len())].clone(),
            2 if f > 0 => {
                let g = r.below(f);
                Expr::call(
                    g,
                    (0..vars.len()).map(|d| coord(r, vars, d, scaled)).collect(),
                )
            }
            _ => Expr::input(
                0,
                (0..vars.len()).map(|d| coord(r, vars, d, scaled)).collect(),
            ),
        };
    }
    let a = value(r, f, vars, depth - 1, scaled);
    let b = value(r, f, vars, depth - 1, scaled);
    match r.below(8) {
        0 => bin(BinOp::Sub, a, b),
        1 => bin(BinOp::Mul, a, b),
        2 => bin(BinOp::Div, a, b),
        3 => bin(BinOp::Min, a, b),
        4 => bin(BinOp::Max, a, b),
        5 => Expr::select(bin(BinOp::Lt, a.clone(), b.clone()), a, b),
        _ => bin(BinOp::Add, a, b),
    }
}

/// A random valid pipeline of rank 1 or 2 over one i32 input and an i32 parameter `n`.
fn pipeline(r: &mut Rng) -> Pipeline {
    let rank = 1 + r.below(2);
    let nfuncs = 1 + r.below(4);
    let mut funcs = Vec::new();
    let vars: Vec<Expr> = (0..rank).map(Expr::Var).collect();
    for f in 0..nfuncs {
        let mut scaled = false;
        let pure = value(r, f, &vars, 2, &mut scaled);
        let mut updates = Vec::new();
        if r.chance(35) {
            let extent = if r.chance(30) {
                Expr::Param(0)
            } else {
                int(r.range(0, 3))
            };
            let rdom = vec![RDim {
                name: "r".into(),
                min: int(r.range(-2, 2)),
                extent,
            }];
            let me = |c: Vec<Expr>| Expr::call(f, c);
            // A histogram: the update writes where the input says (dimension 0 of a 2-D func
            // stays the pure `x`).
            if r.chance(25) {
                let mut lhs = vars.clone();
                let mut at = vars.clone();
                at[rank - 1] = Expr::RVar(0);
                lhs[rank - 1] = clamp(Expr::input(0, at), int(r.range(-3, 1)), int(r.range(0, 4)));
                let val = bin(BinOp::Add, me(lhs.clone()), int(1));
                updates.push(Update {
                    rdom,
                    wheres: vec![],
                    lhs,
                    value: val,
                    place: weft_pipe::ast::Place::NONE,
                });
            } else if rank == 1 && r.chance(40) {
                // A scan that writes the points r.
                let lhs = vec![Expr::RVar(0)];
                let prev = me(vec![bin(BinOp::Sub, Expr::RVar(0), int(1))]);
                let val = bin(BinOp::Add, prev, Expr::input(0, vec![Expr::RVar(0)]));
                updates.push(Update {
                    rdom,
                    wheres: vec![],
                    lhs,
                    value: val,
                    place: weft_pipe::ast::Place::NONE,
                });
            } else {
                // A pure update that sums over r.
                let mut c: Vec<Expr> = vars.clone();
                c[0] = bin(BinOp::Add, vars[0].clone(), Expr::RVar(0));
                let read = Expr::input(0, c);
                let val = bin(BinOp::Add, me(vars.clone()), read);
                let wheres = match r.below(4) {
                    0 => vec![bin(BinOp::Lt, Expr::RVar(0), vars[0].clone())],
                    // A predicate whose i32 arithmetic wraps inside the window.
                    3 => vec![bin(
                        BinOp::Lt,
                        bin(BinOp::Add, vars[0].clone(), int(2147483646)),
                        int(0),
                    )],
                    1 => vec![bin(
                        BinOp::Gt,
                        Expr::input(0, vec![Expr::RVar(0); rank]),
                        int(0),
                    )],
                    _ => vec![],
                };
                updates.push(Update {
                    rdom,
                    wheres,
                    lhs: vars.clone(),
                    value: val,
                    place: weft_pipe::ast::Place::NONE,
                });
            }
        }
        funcs.push(Func {
            name: format!("f{f}"),
            vars: ["x", "y"][..rank].iter().map(|s| s.to_string()).collect(),
            ty: DType::I32,
            pure,
            updates,
            place: weft_pipe::ast::Place::NONE,
        });
    }
    let mut outputs = vec![nfuncs - 1];
    if nfuncs > 1 && r.chance(20) {
        outputs.push(r.below(nfuncs - 1));
    }
    over_one_input(rank, funcs, outputs)
}

/// A pipeline `p` of `funcs` over one i32 input of `rank` dimensions and an i32 parameter `n`.
fn over_one_input(rank: usize, funcs: Vec<Func>, outputs: Vec<usize>) -> Pipeline {
    Pipeline {
        name: "p".into(),
        params: vec![Param {
            name: "n".into(),
            ty: DType::I32,
        }],
        inputs: vec![Input {
            name: "input".into(),
            elem: DType::I32,
            rank,
        }],
        funcs,
        outputs,
    }
}

/// A random schedule; directives the legality rules reject are left out.
fn schedule(r: &mut Rng, p: &Pipeline) -> Schedule {
    let mut s = Schedule::new(p);
    let n = p.funcs.len();
    for f in 0..n {
        let name = p.funcs[f].name.clone();
        for stage in 0..=p.funcs[f].updates.len() {
            let mut h = s.func(p, &name).unwrap();
            if stage > 0 {
                h = h.update(stage - 1).unwrap();
            }
            let mut fresh = 0;
            for _ in 0..r.below(4) {
                // Any loop as it stands, split loops included (nested splits of every tail).
                let now = h.s_dims();
                let old = &now[r.below(now.len())];
                fresh += 1;
                let tail = [Tail::GuardWithIf, Tail::ShiftInwards, Tail::RoundUp][r.below(3)];
                let (o, i) = (format!("{old}o{fresh}"), format!("{old}i{fresh}"));
                if h.split(old, &o, &i, r.range(1, 5), tail).is_ok() {
                    match r.below(5) {
                        0 => {
                            let _ = h.vectorize(&i);
                        }
                        1 => {
                            let _ = h.unroll(&i);
                        }
                        2 => {
                            let _ = h.parallel(&o);
                        }
                        // The checker cannot follow a fused shifted tile (see `lower`).
                        3 if tail != Tail::ShiftInwards => {
                            let _ = h.fuse(&i, &o, &format!("{old}f{fresh}"));
                        }
                        _ => {}
                    }
                }
            }
            let cur: Vec<String> = h.s_dims();
            if cur.len() > 1 && r.chance(50) {
                let mut perm: Vec<&str> = cur.iter().map(|s| s.as_str()).collect();
                for k in (1..perm.len()).rev() {
                    perm.swap(k, r.below(k + 1));
                }
                let _ = h.reorder(&perm);
            }
            if r.chance(20) {
                let d = &cur[r.below(cur.len())];
                let _ = h.parallel(d);
            }
        }
    }
    // Bounds: a random region, which the window or the reads may not fit (then a precondition).
    for f in 0..n {
        if r.chance(10) {
            let name = p.funcs[f].name.clone();
            let var = p.funcs[f].vars[r.below(p.funcs[f].vars.len())].clone();
            let mut h = s.func(p, &name).unwrap();
            let _ = h.bound(&var, int(r.range(-30, 0)), int(r.range(1, 60)));
        }
    }
    // Layout directives from a generator of their own (the main stream's draws stay as they
    // were): aligned regions and storage orders (outputs refuse both).
    let mut lr = Rng(r.0 ^ 0xA11C_0DE5_u64);
    for f in 0..n {
        if lr.chance(10) {
            let name = p.funcs[f].name.clone();
            let var = p.funcs[f].vars[lr.below(p.funcs[f].vars.len())].clone();
            let m = lr.range(1, 9);
            let mut h = s.func(p, &name).unwrap();
            let _ = h.align_bounds(&var, m, lr.range(0, m - 1));
        }
    }
    for f in 0..n {
        if lr.chance(15) {
            let name = p.funcs[f].name.clone();
            let mut vars = p.funcs[f].vars.clone();
            for k in (1..vars.len()).rev() {
                vars.swap(k, lr.below(k + 1));
            }
            let vars: Vec<&str> = vars.iter().map(String::as_str).collect();
            let mut h = s.func(p, &name).unwrap();
            let _ = h.reorder_storage(&vars);
        }
    }
    // Specializations, from a generator of their own: a version of a stage, for a random
    // condition on the output's window or the parameter, with a split (keeping the loop's
    // name, so compute levels stay valid in every version) and a loop kind of its own.
    let mut sr = Rng(r.0 ^ 0x5BEC_1A15_u64);
    let stages: Vec<(usize, usize)> = (0..n)
        .flat_map(|f| (0..=p.funcs[f].updates.len()).map(move |st| (f, st)))
        .collect();
    let mut specializations = 0;
    while sr.chance(if specializations == 0 { 25 } else { 30 }) && specializations < 3 {
        specializations += 1;
        let (f, stage) = stages[sr.below(stages.len())];
        let name = p.funcs[f].name.clone();
        let mut h = s.func(p, &name).unwrap();
        if stage > 0 {
            h = h.update(stage - 1).unwrap();
        }
        let Ok(mut h) = h.specialize(condition(&mut sr, p)) else {
            continue;
        };
        let now = h.s_dims();
        let old = now[sr.below(now.len())].clone();
        let inner = format!("{old}s{specializations}");
        let tail = [Tail::GuardWithIf, Tail::ShiftInwards, Tail::RoundUp][sr.below(3)];
        if h.split(&old, &old, &inner, sr.range(1, 5), tail).is_ok() {
            let _ = match sr.below(3) {
                0 => h.vectorize(&inner),
                1 => h.unroll(&inner),
                _ => h.parallel(&old),
            };
        }
    }
    // Compute levels, consumers first: the root, inline, or a loop of a later func.
    for f in (0..n).rev() {
        if p.outputs.contains(&f) {
            continue;
        }
        let name = p.funcs[f].name.clone();
        let mut h = s.func(p, &name).unwrap();
        match r.below(4) {
            0 => {
                let _ = h.compute_inline();
            }
            1 => {
                let _ = h.compute_root();
            }
            _ => {
                let c = f + 1 + r.below(n - f - 1);
                let last = p.funcs[c].updates.len();
                let loops: Vec<String> = h.s_loops(c, last);
                if !loops.is_empty() {
                    let kv = r.below(loops.len());
                    let cname = p.funcs[c].name.clone();
                    let _ = h.compute_at(&cname, &loops[kv]);
                    if r.chance(40) {
                        // At or outside the compute level (loops are innermost first): a
                        // store level outside makes sliding windows and folded storage.
                        let k2 = r.below(loops.len()).max(kv);
                        let _ = h.store_at(&cname, &loops[k2]);
                    }
                }
            }
        }
    }
    // Clones, from a generator of their own: a later func reads an inlined copy of the func,
    // wherever the func itself is computed (refused when it does not call it).
    // A func with one consumer is then computed for nobody: left out; an inlined func with
    // several is computed at the root, so that its other consumers read its buffer. Funcs
    // stored outside their compute level keep their consumers (their sliding windows, rare
    // here, are what shows that this generator reaches folded storage).
    let mut cr = Rng(r.0 ^ 0xC1_0E1F_u64);
    for f in 0..n {
        let callers: Vec<usize> = (f + 1..n).filter(|&g| p.funcs[g].calls(f)).collect();
        if !callers.is_empty() && s.funcs[f].store.is_none() && cr.chance(40) {
            let c = callers[cr.below(callers.len())];
            let (name, cname) = (p.funcs[f].name.clone(), p.funcs[c].name.clone());
            let mut h = s.func(p, &name).unwrap();
            if h.clone_in(&cname).is_ok() && callers.len() > 1 && cr.chance(50) {
                let _ = h.compute_root();
            }
        }
    }
    s
}

/// A random startup condition: on the first output's window (whose mins are -4..4 and
/// extents 1..7 in `run_case`) or the parameter, or two of them joined.
fn condition(r: &mut Rng, p: &Pipeline) -> Expr {
    let one = |r: &mut Rng| {
        let dim = r.below(p.funcs[p.outputs[0]].vars.len());
        let (e, k) = match r.below(3) {
            0 => (
                Expr::OutputDim {
                    output: 0,
                    dim,
                    extent: true,
                },
                r.range(1, 7),
            ),
            1 => (
                Expr::OutputDim {
                    output: 0,
                    dim,
                    extent: false,
                },
                r.range(-4, 4),
            ),
            _ => (Expr::Param(0), r.range(-1, 4)),
        };
        let op = [BinOp::Lt, BinOp::Ge, BinOp::Eq, BinOp::Ne][r.below(4)];
        bin(op, e, int(k))
    };
    let c = one(r);
    if r.chance(30) {
        bin(BinOp::And, c, one(r))
    } else {
        c
    }
}

trait Peek {
    fn s_dims(&self) -> Vec<String>;
    fn s_loops(&self, func: usize, stage: usize) -> Vec<String>;
}

impl Peek for weft_pipe::schedule::FuncHandle<'_> {
    fn s_dims(&self) -> Vec<String> {
        self.dims().iter().map(|d| d.name.clone()).collect()
    }
    fn s_loops(&self, func: usize, stage: usize) -> Vec<String> {
        self.schedule().funcs[func].stages[stage]
            .dims
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }
}

#[derive(Default, Debug)]
struct Tally {
    pipelines: usize,
    lowered: usize,
    rejected: usize,
    matched: usize,
    asserted: usize,
    compiled: usize,
    /// Lowered procs whose checking the solver gave up on.
    undecided: usize,
    /// Lowered procs the race proof rejects (see `lowered`).
    races: usize,
    /// Lowered procs with a folded buffer (storage folding).
    folded: usize,
    /// Lowered procs with more than one version (`specialize`).
    specialized: usize,
    /// Lowered procs where a consumer reads an inlined copy of a func that is computed
    /// (`clone_in`).
    cloned: usize,
    /// Runs where β0's proc matched (the tight engine must then match too).
    beta0_matched: usize,
    /// Runs where the tight engine succeeded and β0's proc stopped at an assertion.
    beyond_beta0: usize,
    rules: std::collections::BTreeMap<&'static str, usize>,
}

/// Lower with `engine`; `None` when a structural rule rejects the schedule.
fn lowered(p: &Pipeline, s: &Schedule, engine: Engine, t: &mut Tally) -> Option<Arc<Proc>> {
    match lower_with(p, s, &dram(), engine) {
        Ok(l) => {
            if l.regions.iter().any(|r| r.folded.is_some()) {
                t.folded += 1;
            }
            if !l.versions.is_empty() {
                t.specialized += 1;
            }
            let computed = |f: usize| l.regions.iter().any(|r| r.func == p.funcs[f].name);
            if (0..p.funcs.len()).any(|f| !s.funcs[f].inline_in.is_empty() && computed(f)) {
                t.cloned += 1;
            }
            if let Err(d) = weft_check::check_proc(&l.proc) {
                // A proof the solver gives up on (its time limit) is a rejection, not a wrong
                // result; counted, and rare (deeply nested splits of fused loops).
                let undecided = d.iter().all(|d| {
                    d.message.contains("could not decide")
                        || d.notes.iter().any(|n| n.contains("could not decide"))
                });
                if undecided {
                    t.undecided += 1;
                    return None;
                }
                panic!(
                    "the lowered proc ({engine:?}) does not check: {d:#?}\n{}\n{p:#?}\n{s:#?}",
                    l.proc
                );
            }
            // Its parallel loops are race-free (the scheduler's proof).
            let mut analysis = weft_sched::effects::Analysis::new();
            if let Err(e) = weft_sched::prims::parallelize::check_parallel_loops(
                &mut analysis,
                &l.proc,
                "parallel",
            ) {
                // A parallel directive whose loop the legality rules let through but whose
                // iterations the race proof cannot separate (nested splits of one variable):
                // the facade rejects it with the rule `race`, so nothing unsafe runs; counted,
                // and bounded below, until the directive's rule catches the shape itself.
                t.races += 1;
                eprintln!(
                    "the lowered proc ({engine:?}) races: {}\n{p:?}\n{s:?}",
                    e.message
                );
                return None;
            }
            Some(l.proc)
        }
        Err(e) => {
            // Only the rules that depend on the whole structure may reject here.
            assert!(
                matches!(
                    e.rule,
                    "compute-at"
                        | "store-at"
                        | "store-parallel"
                        | "constant-extent"
                        | "fuse"
                        | "bounds"
                        | "bounds-size"
                        | "inline-size"
                        | "bound"
                        | "affine"
                        | "specialize"
                ),
                "unexpected rejection {e}\n{p:#?}\n{s:#?}"
            );
            if engine == Engine::Tight {
                t.rejected += 1;
                *t.rules.entry(e.rule).or_default() += 1;
                if std::env::var("WEFT_PIPE_SHOW").is_ok() {
                    eprintln!("rejected: {e}\n{p:?}\n{s:?}");
                }
            }
            None
        }
    }
}

/// The arguments of a realization of every output on `window`: the parameter, the input (with
/// a wide margin) and uninitialised outputs.
struct Inputs {
    n: i64,
    window: Vec<(i64, i64)>,
    region: Vec<(i64, i64)>,
    data: Vec<Scalar>,
}

fn arguments(p: &Pipeline, x: &Inputs) -> Vec<ArgValue> {
    let mut args = vec![ArgValue::Int(x.n)];
    for &(m, e) in &x.region {
        args.push(ArgValue::Int(m));
        args.push(ArgValue::Int(e));
    }
    let shape: Vec<usize> = x.region.iter().rev().map(|r| r.1 as usize).collect();
    args.push(ArgValue::Buf(Buffer::from_scalars(
        DType::I32,
        shape,
        x.data.clone(),
    )));
    for _ in &p.outputs {
        for &(m, e) in &x.window {
            args.push(ArgValue::Int(m));
            args.push(ArgValue::Int(e));
        }
        let shape: Vec<usize> = x.window.iter().rev().map(|r| r.1 as usize).collect();
        args.push(ArgValue::Buf(Buffer::new_uninit(DType::I32, shape)));
    }
    args
}

/// Run a lowered proc in the interpreter: the outputs, or the precondition that stopped it.
fn execute(proc: &Proc, p: &Pipeline, x: &Inputs) -> Result<Vec<Buffer>, String> {
    let mut args = arguments(p, x);
    let before = args.len();
    common::push_derived(proc, &mut args);
    if let Err(e) = weft_interp::run(proc, &mut args, &mut ConfigState::default()) {
        assert!(
            e.message.contains("precondition"),
            "the lowered proc failed: {e}\n{proc}"
        );
        return Err(e.message);
    }
    let per = 2 * x.window.len() + 1;
    let first = before - per * p.outputs.len();
    Ok((0..p.outputs.len())
        .map(|k| args[first + k * per + per - 1].as_buffer().unwrap().clone())
        .collect())
}

/// Whether `got` equals the reference wherever the reference has a value.
fn matches_reference(p: &Pipeline, x: &Inputs, got: &[Buffer]) -> Result<(), String> {
    let reference = Args {
        params: vec![Scalar::I32(x.n as i32)],
        inputs: vec![InputBuffer {
            region: x.region.clone(),
            data: x.data.clone(),
        }],
    };
    for (k, &o) in p.outputs.iter().enumerate() {
        let want = realize(p, &reference, o, &x.window).unwrap();
        for (i, (g, w)) in got[k].data.iter().zip(&want).enumerate() {
            if let Ok(w) = w {
                if *g != Some(*w) {
                    return Err(format!(
                        "point {i} of `{}` on {:?} (n = {}): {g:?}, the reference {w:?}",
                        p.funcs[o].name, x.window, x.n
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Run the lowered proc compiled to C on the same arguments: it must give what the interpreter
/// gave.
fn compiled_agrees(proc: &Arc<Proc>, p: &Pipeline, x: &Inputs, want: &[Buffer]) {
    let jit = Jit::new().expect("a JIT");
    let module = jit.compile(std::slice::from_ref(proc)).expect("compiles");
    let kernel = module.kernel(&p.name).expect("the entry point");
    let ints = |b: &Buffer| -> Vec<i32> {
        b.data
            .iter()
            .map(|c| c.map(|s| s.as_i128().unwrap() as i32).unwrap_or(0))
            .collect()
    };
    let mut input: Vec<i32> = x.data.iter().map(|s| s.as_i128().unwrap() as i32).collect();
    let wshape: Vec<usize> = x.window.iter().rev().map(|r| r.1 as usize).collect();
    let rshape: Vec<usize> = x.region.iter().rev().map(|r| r.1 as usize).collect();
    let len: usize = wshape.iter().product();
    let mut outs: Vec<Vec<i32>> = p.outputs.iter().map(|_| vec![0; len]).collect();
    let mut args = vec![Arg::Int(x.n)];
    for &(m, e) in &x.region {
        args.push(Arg::Int(m));
        args.push(Arg::Int(e));
    }
    args.push(Arg::Buf(BufArg::new(&mut input, &rshape)));
    for out in outs.iter_mut() {
        for &(m, e) in &x.window {
            args.push(Arg::Int(m));
            args.push(Arg::Int(e));
        }
        args.push(Arg::Buf(BufArg::new(out, &wshape)));
    }
    let controls: Vec<Option<i64>> = args
        .iter()
        .map(|a| match a {
            Arg::Int(v) => Some(*v),
            _ => None,
        })
        .collect();
    let derived = weft_pipe::lower::derived_args(proc, &controls).expect("derived arguments");
    args.extend(derived.into_iter().map(Arg::Int));
    kernel.call(&mut args).expect("runs");
    for (k, out) in outs.iter().enumerate() {
        let w = ints(&want[k]);
        for (i, (g, w)) in out.iter().zip(&w).enumerate() {
            if want[k].data[i].is_some() {
                assert_eq!(
                    g, w,
                    "point {i} of output {k}: C differs from the interpreter\n{proc}"
                );
            }
        }
    }
}

fn run_case(p: &Pipeline, s: &Schedule, r: &mut Rng, t: &mut Tally) {
    let Some(tight) = lowered(p, s, Engine::Tight, t) else {
        return;
    };
    t.lowered += 1;
    let beta0 = lowered(p, s, Engine::Beta0, t);
    let rank = p.inputs[0].rank;
    let n = r.range(-1, 4);
    for _ in 0..2 {
        let window: Vec<(i64, i64)> = (0..rank).map(|_| (r.range(-4, 4), r.range(1, 7))).collect();
        let region: Vec<(i64, i64)> = window.iter().map(|&(m, e)| (m - 24, e + 48)).collect();
        let len: i64 = region.iter().map(|x| x.1).product();
        let data: Vec<Scalar> = (0..len)
            .map(|_| Scalar::I32(r.range(-9, 9) as i32))
            .collect();
        let x = Inputs {
            n,
            window,
            region,
            data,
        };
        let ours = execute(&tight, p, &x);
        if let Ok(got) = &ours {
            if let Err(m) = matches_reference(p, &x, got) {
                panic!("{m}\n{tight}\n{p:#?}\n{s:#?}");
            }
            t.matched += 1;
            if t.matched % 40 == 1 {
                compiled_agrees(&tight, p, &x, got);
                t.compiled += 1;
            }
        } else {
            t.asserted += 1;
            if std::env::var("WEFT_PIPE_SHOW").is_ok() {
                eprintln!("asserted: {:?}", ours);
            }
        }
        // Compliance (Defs. 3.6-3.7): where β0's proc runs and matches, so does ours.
        if let Some(b) = &beta0 {
            if let Ok(got) = execute(b, p, &x) {
                if let Err(m) = matches_reference(p, &x, &got) {
                    panic!("β0: {m}\n{b}\n{p:#?}\n{s:#?}");
                }
                t.beta0_matched += 1;
                assert!(
                    ours.is_ok(),
                    "β0 succeeds where the tight engine stops: {ours:?}\nβ0: {b}\ntight: {tight}\n{p:#?}\n{s:#?}"
                );
            } else if ours.is_ok() {
                t.beyond_beta0 += 1;
            }
        }
    }
}

/// Random cases per test: `WEFT_PIPE_CASES` (the long mode), else 200.
fn cases() -> usize {
    std::env::var("WEFT_PIPE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Most runs match (the rest stop at named preconditions) and proofs the solver gives up on
/// are rare: a lowering change that makes procs harder to prove (as partitioning split loops
/// once did) shows up here.
fn assert_mostly_decided_and_matched(t: &Tally) {
    assert!(t.matched * 2 >= t.lowered, "too few runs matched: {t:?}");
    assert!(
        t.undecided * 50 <= t.lowered.max(50),
        "more than 2% of the lowered procs are undecided: {t:?}"
    );
}

#[test]
fn random_pipelines_and_schedules_match_the_reference() {
    let cases = cases();
    let mut t = Tally::default();
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..cases {
        let p = pipeline(&mut r);
        if std::env::var("WEFT_PIPE_SHOW").is_ok() {
            eprintln!("case {case}: {p:?}");
        }
        if weft_pipe::validate::validate(&p).is_err() {
            continue;
        }
        t.pipelines += 1;
        for k in 0..3 {
            let s = if k == 0 {
                Schedule::new(&p)
            } else {
                schedule(&mut r, &p)
            };
            if std::env::var("WEFT_PIPE_SHOW").is_ok() {
                eprintln!("schedule {k}: {s:?}");
            }
            run_case(&p, &s, &mut r, &mut t);
        }
    }
    eprintln!("{t:?}");
    assert!(t.pipelines * 2 >= cases, "{t:?}");
    assert_mostly_decided_and_matched(&t);
    assert!(t.folded >= 1, "no schedule folds storage: {t:?}");
    assert!(
        t.specialized * 20 >= t.lowered,
        "few schedules specialize: {t:?}"
    );
    assert!(t.cloned * 50 >= t.lowered, "few schedules clone: {t:?}");
    assert!(
        t.races * 200 <= t.lowered.max(200),
        "more than 0.5% of the lowered procs race: {t:?}"
    );
}

/// A 2-D stencil chain for storage folding: `f0` taps the input, each later func taps the one
/// before it at random offsets (constant windows, so they slide and fold), or with `upsampled`
/// now and then at a row of an upsampled level (`(y + k) / 2`: a window whose rows move by 0
/// or 1 per row, which still slides).
fn stencil_chain(r: &mut Rng, upsampled: bool) -> Pipeline {
    let nfuncs = 2 + r.below(2);
    let xy = |dx: i64, dy: i64| {
        vec![
            bin(BinOp::Add, Expr::Var(0), int(dx)),
            bin(BinOp::Add, Expr::Var(1), int(dy)),
        ]
    };
    let mut funcs = Vec::new();
    for f in 0..nfuncs {
        let mut value: Option<Expr> = None;
        for _ in 0..1 + r.below(3) {
            let mut at = xy(r.range(-2, 3), r.range(-2, 3));
            if upsampled && f > 0 && r.chance(25) {
                at[1] = bin(
                    BinOp::Div,
                    bin(BinOp::Add, Expr::Var(1), int(r.range(0, 2))),
                    int(2),
                );
            }
            let tap = if f == 0 {
                Expr::input(0, at)
            } else {
                Expr::call(f - 1, at)
            };
            value = Some(match value {
                None => tap,
                Some(v) => bin([BinOp::Add, BinOp::Sub, BinOp::Max][r.below(3)], v, tap),
            });
        }
        funcs.push(Func {
            name: format!("f{f}"),
            vars: vec!["x".into(), "y".into()],
            ty: DType::I32,
            pure: value.unwrap_or(int(0)),
            updates: vec![],
            place: weft_pipe::ast::Place::NONE,
        });
    }
    over_one_input(2, funcs, vec![nfuncs - 1])
}

/// Storage folding, sought out: stencil chains whose producers are stored per strip of output
/// rows (or at the root) and computed per row, so that they slide along rows and, over a
/// constant window, fold into circular buffers; their rows split at random with every tail. The
/// same checks as above: the checker, the reference on random windows, compiled C now and then.
#[test]
fn folded_sliding_windows_match_the_reference() {
    let t = sliding_windows(0xF01D_5EED_0BAD_CAFE, false);
    assert_mostly_decided_and_matched(&t);
    assert!(
        t.folded * 4 >= t.lowered,
        "too few schedules fold storage: {t:?}"
    );
}

/// The same with rows of upsampled levels: windows that slide by steps that are not constant.
/// The checker leaves more of these undecided (reads at quotients through folded windows, with
/// or without such slides: 6 of 194 lowered in the default run, 12 of 188 from another seed),
/// so the bound is 10%.
#[test]
fn upsampled_sliding_windows_match_the_reference() {
    let t = sliding_windows(0x0B5A_3B1E_D0C5_1DE5, true);
    assert!(t.matched * 2 >= t.lowered, "too few runs matched: {t:?}");
    assert!(
        t.undecided * 10 <= t.lowered.max(10),
        "more than 10% of the lowered procs are undecided: {t:?}"
    );
}

/// Random stencil chains (see [`stencil_chain`]) under random sliding schedules, each lowered,
/// checked and run against the reference.
fn sliding_windows(seed: u64, upsampled: bool) -> Tally {
    let cases = cases();
    let mut t = Tally::default();
    let mut r = Rng(seed);
    let tails = [Tail::GuardWithIf, Tail::ShiftInwards, Tail::RoundUp];
    for _ in 0..cases {
        let p = stencil_chain(&mut r, upsampled);
        t.pipelines += 1;
        let mut s = Schedule::new(&p);
        let n = p.funcs.len();
        let out = p.funcs[n - 1].name.clone();
        let strips = r.chance(70);
        {
            let mut h = s.func(&p, &out).unwrap();
            if strips {
                let _ = h.split("y", "yo", "yi", r.range(1, 9), tails[r.below(2)]);
                if r.chance(50) {
                    let _ = h.parallel("yo");
                }
            }
            if r.chance(30) {
                let _ = h.split("x", "xo", "xi", 4, Tail::GuardWithIf);
                let _ = h.vectorize("xi");
            }
        }
        let (compute, store) = if strips { ("yi", "yo") } else { ("y", "") };
        for f in 0..n - 1 {
            let name = p.funcs[f].name.clone();
            let mut h = s.func(&p, &name).unwrap();
            // Consumers first would be needed for a chain computed inside each other; here
            // every producer is computed at the output's row loop.
            let _ = h.compute_at(&out, compute);
            if store.is_empty() {
                let _ = h.store_root();
            } else {
                let _ = h.store_at(&out, store);
            }
            // Splits across the rows (a split of the sliding dimension keeps a buffer unfolded,
            // and the checker does not follow its guard through a sliding window).
            if r.chance(50) {
                let _ = h.split("x", "xo", "xi", r.range(1, 5), tails[r.below(3)]);
                let _ = h.vectorize("xi");
            }
        }
        run_case(&p, &s, &mut r, &mut t);
    }
    eprintln!("{t:?}");
    t
}
