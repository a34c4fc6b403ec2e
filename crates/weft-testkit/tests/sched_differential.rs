//! Differential fuzzing of scheduling: random procs × random sequences of primitives at random
//! cursors. Every step the analysis accepts must leave the proc's results unchanged: the
//! rewritten proc passes the checker and, run by the reference interpreter on random inputs at
//! several sizes (its generated sizes, all sizes 1, and fresh random sizes), produces the same
//! outputs as the original — integers and error cells exactly, floats up to reassociation of
//! reductions (which the analysis allows, as Exo's does).
//!
//! The steps cover the loop and statement primitives, and those that allocate, bind, stage,
//! extract, inline, replace and swap calls (see [`NEW_PRIMITIVES`]): a step is sometimes followed
//! by the step that undoes it or builds on it (`extract_proc` then `inline_call` then `replace`,
//! `bind_expr` twice then `reuse_buffer`), which random choices alone seldom reach. `call_eqv`
//! swaps a call for a version of the callee scheduled by random steps of its own. The expression
//! primitives ([`EXPR_PRIMITIVES`]) run on the random procs too, and on template procs of sums
//! and repeated writes (`expression_schedules_preserve_results`), which have the shapes they
//! rewrite; `divide_with_recompute` runs on template stencils too
//! (`recompute_schedules_preserve_results`), where overlapping tiles meet dependences.
//! `partial_eval` changes the signature: the original then runs with the fixed sizes, and the
//! scheduled proc with the original's other arguments. Sizes at which a proc would run too long
//! in the interpreter are scaled down (the original) or left out (a scheduled proc).
//!
//! A difference is reported in full (steps, procs, scheduled callees) and the run goes on with
//! the next case; the test fails at the end, listing them all.
//!
//! `WEFT_SCHED_CASES` sets the number of procs (default 250), `WEFT_SCHED_STEPS` the number of
//! attempted steps per proc (default 20), `WEFT_SCHED_SEED` the seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{ArgValue, ConfigState, Scalar};
use weft_ir::{BinOp, Expr, ExprKind, Proc, Stmt, StmtKind, Sym, Ty};
use weft_sched::{find, Cursor, Path, Schedule, Tail};
use weft_testkit::{random_proc_named, random_sizes};

/// One JIT for the whole test, with a cache directory of its own.
fn jit() -> &'static weft_jit::Jit {
    static JIT: std::sync::OnceLock<weft_jit::Jit> = std::sync::OnceLock::new();
    JIT.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sched-diff-cache");
        weft_jit::Jit::with_cache_dir(&dir).expect("a JIT")
    })
}

/// Compile `proc` (with the procs it calls) to C, run it natively and in the interpreter, and
/// compare bit for bit: `Ok(true)` when they match, `Ok(false)` when the proc leaves an output
/// uninitialised (not comparable).
fn compiled_matches(
    helpers: &[Arc<Proc>],
    proc: &Arc<Proc>,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<bool, String> {
    let program = weft::Program {
        module: weft_ir::Module {
            procs: helpers.iter().cloned().chain([proc.clone()]).collect(),
            ..Default::default()
        },
        sources: weft_syntax::SourceMap::new(),
        deps: vec![],
        scope: Default::default(),
    };
    let opts = weft::run::RunOptions {
        sizes: sizes.clone(),
        seed,
        reps: 1,
    };
    match weft::run::run_and_compare(&program, proc, jit(), &opts) {
        Ok(_) => Ok(true),
        Err(e) if e.to_string().contains("uninitialised") => Ok(false),
        Err(e) => Err(format!("compiled C differs from the interpreter: {e}")),
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn close(a: &Option<Scalar>, b: &Option<Scalar>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Scalar::F32(x)), Some(Scalar::F32(y))) => float_close(*x as f64, *y as f64),
        (Some(Scalar::F64(x)), Some(Scalar::F64(y))) => float_close(*x, *y),
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn float_close(x: f64, y: f64) -> bool {
    (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-3 * x.abs().max(y.abs()).max(1.0)
}

/// Run both procs on the same random inputs; describe the first difference. `fixed` holds the
/// size arguments `partial_eval` fixed: the original runs with those values, and the scheduled
/// proc (which no longer has them) gets the original's other arguments, matched by name.
fn compare(
    orig: &Proc,
    new: &Proc,
    sizes: &HashMap<String, i64>,
    fixed: &HashMap<String, i64>,
    seed: u64,
) -> Result<(), String> {
    let mut sizes = sizes.clone();
    sizes.extend(fixed.iter().map(|(k, v)| (k.clone(), *v)));
    let inputs = weft_interp::random_args(orig, &sizes, seed).map_err(|e| e.to_string())?;
    // For each argument of the scheduled proc, the original's argument of that name.
    let map: Vec<usize> = new
        .args
        .iter()
        .map(|arg| {
            orig.args
                .iter()
                .position(|o| o.sym.name() == arg.sym.name())
                .ok_or_else(|| format!("the scheduled proc has a new argument `{}`", arg.sym))
        })
        .collect::<Result<_, _>>()?;
    let mut a = inputs.clone();
    let mut b: Vec<ArgValue> = map.iter().map(|&k| inputs[k].clone()).collect();
    let ra = weft_interp::run(orig, &mut a, &mut ConfigState::default());
    let rb = weft_interp::run(new, &mut b, &mut ConfigState::default());
    match (&ra, &rb) {
        (Ok(_), Ok(_)) => {}
        // Both stopped at an error (a config field read before it was written, say): where each
        // stopped, and so what it had written, may differ (a parallel loop runs backwards).
        (Err(_), Err(_)) => return Ok(()),
        _ => return Err(format!("interpreter outcome differs: {ra:?} vs {rb:?}")),
    }
    for (y, &k) in b.iter().zip(&map) {
        if let (ArgValue::Buf(x), ArgValue::Buf(y)) = (&a[k], y) {
            for (i, (cx, cy)) in x.data.iter().zip(&y.data).enumerate() {
                if !close(cx, cy) {
                    return Err(format!("argument {k}, cell {i}: {cx:?} vs {cy:?}"));
                }
            }
        }
    }
    Ok(())
}

/// The primitives `random_step` reaches besides the loop and statement primitives it started
/// with; each must be accepted at least once in a default run. (`set_memory` is left out: with
/// the prelude's memories it changes nothing observable; `write_config` and `bind_config` too:
/// the random procs use no configs; `delete_config` writes a config of its own first.)
const NEW_PRIMITIVES: &[&str] = &[
    "inline_assign",
    "sink_alloc",
    "divide_dim",
    "reuse_buffer",
    "bind_expr",
    "expand_dim",
    "stage_mem",
    "extract_proc",
    "partial_eval",
    "replace",
    "call_eqv",
    "add_loop",
    "eliminate_dead_code",
    // Buffer layouts and loop shapes (see `buffer_loop_step`).
    "rearrange_dim",
    "resize_dim",
    "unroll_buffer",
    "join_loops",
    "mult_loops",
    "divide_with_recompute",
    "lift_scope",
    "delete_config",
    "autolift_alloc",
    "autosink_alloc",
];

/// The expression-level primitives (`new_step` takes one a quarter of the time; see
/// [`expr_step`]). Those a random proc seldom has the shape for (`fold_into_reduce`,
/// `merge_writes`, `lift_reduce_constant`) are reached by the template procs of
/// `expression_schedules_preserve_results`, where each must be accepted.
const EXPR_PRIMITIVES: &[&str] = &[
    "commute_expr",
    "left_reassociate_expr",
    "rewrite_expr",
    "fold_into_reduce",
    "merge_writes",
    "split_write",
    "lift_reduce_constant",
];

/// A step queued by the previous one, to reach a pattern a random step rarely hits: the inverse
/// of the step just taken, or `replace` of a block that is the body of a known proc.
enum Pending {
    /// `inline_call` of the call `extract_proc` just created.
    InlineBack(Cursor),
    /// `replace` of the statements at the cursor (just inlined from a call) by the callee.
    Replace(Cursor, Arc<Proc>),
    /// `inline_assign` of the binding `bind_expr` just created.
    InlineAssign(Cursor),
    /// `sink_alloc` of the allocation `lift_alloc` just lifted.
    SinkAlloc(Cursor),
    /// `bind_expr` of an expression of this type in a statement before or after the one at the
    /// first cursor, which uses the scalar `bind_expr` just allocated (at the second cursor, named
    /// here); then `reuse_buffer` of one by the other, which has few pairs of like allocations to
    /// work on otherwise.
    BindAlike(Cursor, Cursor, weft_ir::DType, String),
    /// `reuse_buffer` of the earlier allocation named here, at the allocation at the cursor.
    Reuse(Cursor, String),
    /// `merge_writes` of the two statements `split_write` just made (its inverse).
    MergeBack(Cursor),
}

/// What a fuzzed schedule keeps besides the `Schedule` itself.
#[derive(Default)]
struct Extras {
    /// Size arguments fixed by `partial_eval`, with their values: the original runs with these.
    fixed: HashMap<String, i64>,
    /// Procs known to this case, for `replace` and `call_eqv`: the generated helpers, the procs
    /// `extract_proc` created, and the scheduled versions of callees.
    procs: Vec<Arc<Proc>>,
    pending: Option<Pending>,
    /// Prefix of the fresh proc names (unique per case, so that compiled C never sees two procs
    /// of one name).
    prefix: String,
    counter: u64,
    /// A schedule of a callee (for `call_eqv`): no step that changes the signature or that
    /// schedules other procs.
    nested: bool,
    /// The schedules of callees, for the failure report.
    notes: Vec<String>,
}

impl Extras {
    fn new(prefix: &str, procs: Vec<Arc<Proc>>) -> Extras {
        Extras {
            prefix: prefix.to_string(),
            procs,
            ..Default::default()
        }
    }

    fn fresh(&mut self, what: &str) -> String {
        self.counter += 1;
        format!("{}_{what}{}", self.prefix, self.counter)
    }

    fn report(&self) -> String {
        self.notes.join("\n")
    }
}

fn stack_memory() -> Arc<weft_ir::Memory> {
    weft_syntax::std_memory("DRAM_STACK").expect("prelude DRAM_STACK")
}

/// One random step on the current proc; `Ok(None)` when the analysis rejected it.
fn random_step(
    rng: &mut StdRng,
    s: &mut Schedule,
    x: &mut Extras,
) -> Result<Option<String>, String> {
    if let Some(pending) = x.pending.take() {
        return Ok(follow_up(rng, s, x, pending));
    }
    if rng.gen_bool(0.4) {
        return Ok(new_step(rng, s, x));
    }
    let p = s.proc().clone();
    let stmts = find::all_stmts(&p);
    if stmts.is_empty() {
        return Ok(None);
    }
    let (path, stmt) = stmts[rng.gen_range(0..stmts.len())].clone();
    let is_loop = matches!(stmt.kind, StmtKind::For { .. });
    let c = s.cursor(path.clone());
    // Primitives for one kind of statement, which need no other argument.
    let special = match &stmt.kind {
        StmtKind::Alloc { .. } if rng.gen_bool(0.6) => Some("lift_alloc"),
        StmtKind::Call { .. } if rng.gen_bool(0.6) => Some("inline_call"),
        StmtKind::If { .. } | StmtKind::Pass if rng.gen_bool(0.2) => Some("delete_pass"),
        // A `pass` anywhere, for the loop and statement rewrites that follow to move or drop.
        _ if rng.gen_bool(0.04) => Some("insert_pass"),
        _ => None,
    };
    if let Some(name) = special {
        let r = match name {
            // Now and then two levels at once.
            "lift_alloc" if rng.gen_bool(0.2) => s.lift_alloc_levels(&c, 2),
            "lift_alloc" => s.lift_alloc(&c).inspect(|at| {
                if rng.gen_bool(0.3) {
                    x.pending = Some(Pending::SinkAlloc(at.clone()));
                }
            }),
            "inline_call" => {
                let StmtKind::Call { proc: callee, .. } = &stmt.kind else {
                    unreachable!()
                };
                s.inline_call(&c).inspect(|at| {
                    if !x.nested && rng.gen_bool(0.6) {
                        x.pending = Some(Pending::Replace(at.clone(), callee.clone()));
                    }
                })
            }
            "insert_pass" => s.insert_pass(&c),
            _ => s.delete_pass(&c),
        };
        return Ok(r.ok().map(|_| format!("{name} at {path}")));
    }
    let kind = if is_loop {
        rng.gen_range(0..12)
    } else {
        rng.gen_range(12..14)
    };
    let (name, r) = match kind {
        0 => {
            let tail =
                [Tail::Guard, Tail::Cut, Tail::CutAndGuard, Tail::Perfect][rng.gen_range(0..4)];
            let f = rng.gen_range(1..=5);
            (
                format!("split {f} {}", tail.name()),
                s.split(&c, f, "o", "t", tail),
            )
        }
        1 => ("reorder_loops".into(), s.reorder_loops(&c)),
        2 => ("fuse".into(), s.fuse(&c)),
        3 => ("remove_loop".into(), s.remove_loop(&c)),
        4 => ("unroll".into(), s.unroll(&c)),
        5 | 6 => {
            let StmtKind::For { lo, hi, .. } = &stmt.kind else {
                unreachable!()
            };
            let point = match rng.gen_range(0..3) {
                0 => lo.clone(),
                1 => hi.clone(),
                _ => Expr::binary(weft_ir::BinOp::Add, lo.clone(), Expr::int(1)),
            };
            if kind == 5 {
                (format!("cut {point}"), s.cut(&c, &point))
            } else {
                let start = Expr::int(rng.gen_range(0..3));
                (format!("shift {start}"), s.shift(&c, &start))
            }
        }
        7 => (
            "fission(in loop)".into(),
            match s.body(&c, 0, 0) {
                Some(first) => s.fission(&first),
                None => return Ok(None),
            },
        ),
        8 => ("lift_if".into(), s.lift_if(&c)),
        9 => {
            // `size > 2` for one of the proc's sizes.
            let size = p
                .args
                .iter()
                .find(|a| a.ctrl() == Some(weft_ir::CtrlType::Size));
            let Some(size) = size else { return Ok(None) };
            let cond = Expr::var(&size.sym, weft_ir::Ty::Int).gt(Expr::int(2));
            (format!("specialize {cond}"), s.specialize(&c, &cond))
        }
        10 => ("delete_pass".into(), s.delete_pass(&c)),
        // The interpreter runs parallel loops backwards and the C runs them on threads, so a race
        // the analysis missed shows up as a difference.
        11 => ("parallelize".into(), s.parallelize(&c)),
        12 => ("reorder_stmts".into(), s.reorder_stmts(&c)),
        _ => ("fission".into(), s.fission(&c)),
    };
    Ok(r.ok().map(|_| format!("{name} at {path}")))
}

/// The step a previous one queued.
fn follow_up(rng: &mut StdRng, s: &mut Schedule, x: &mut Extras, p: Pending) -> Option<String> {
    match p {
        Pending::InlineBack(c) => {
            let Some(StmtKind::Call { proc: callee, .. }) = s.stmt(&c).map(|st| st.kind.clone())
            else {
                return None;
            };
            let at = s.inline_call(&c).ok()?;
            if rng.gen_bool(0.8) {
                x.pending = Some(Pending::Replace(at.clone(), callee.clone()));
            }
            Some(format!("inline_call {} back at {}", callee.name, at.path))
        }
        Pending::Replace(c, callee) => {
            let at = s.replace(&c, &callee).ok()?;
            Some(format!("replace by {} at {}", callee.name, at.path))
        }
        Pending::InlineAssign(c) => {
            let at = s.inline_assign(&c).ok()?;
            Some(format!("inline_assign at {} (after bind_expr)", at.path))
        }
        Pending::BindAlike(c, first_alloc, dtype, first) => {
            // Another statement whose scalar can share the first one's storage: one after the
            // statement at the cursor, in its block or nested in a later statement of it (the
            // first scalar is in scope and dead there), or one before its allocation in its block
            // (the new scalar is dead by then).
            let at = s.resolve(&c)?;
            let alloc_at = s.resolve(&first_alloc)?;
            let p = s.proc().clone();
            let d = at.depth();
            let mut cands: Vec<(Path, Expr, bool)> = Vec::new();
            for (path, st) in find::all_stmts(&p) {
                let same_block = path.depth() >= d
                    && path.0[..d - 1] == at.0[..d - 1]
                    && path.0[d - 1].block == at.last().block;
                let later = same_block && path.0[d - 1].index > at.last().index;
                let earlier =
                    same_block && path.depth() == d && path.last().index < alloc_at.last().index;
                if let (true, StmtKind::Assign { rhs, .. } | StmtKind::Reduce { rhs, .. }) =
                    (later || earlier, &st.kind)
                {
                    weft_ir::visit::walk_expr(rhs, &mut |e| {
                        if e.ty == Ty::Data(dtype) {
                            cands.push((path.clone(), e.clone(), later));
                        }
                    });
                }
            }
            if cands.is_empty() {
                return None;
            }
            let (path, e, later) = cands[rng.gen_range(0..cands.len())].clone();
            let name = x.fresh("b");
            let at = s
                .bind_expr(&s.cursor(path.clone()), &e, &name, stack_memory())
                .ok()?;
            // `alloc name; name = e;` went in right before the statement.
            let alloc = s.prev(&s.prev(&at)?)?;
            x.pending = Some(if later {
                Pending::Reuse(alloc, first)
            } else {
                Pending::Reuse(first_alloc, name)
            });
            Some(format!("bind_expr {e} at {path} (for reuse_buffer)"))
        }
        Pending::Reuse(c, t1) => {
            let at = s.reuse_buffer(&c, &t1).ok()?;
            Some(format!(
                "reuse_buffer {t1} at {} (after bind_expr)",
                at.path
            ))
        }
        Pending::SinkAlloc(c) => {
            let at = s.sink_alloc(&c).ok()?;
            Some(format!("sink_alloc at {} (after lift_alloc)", at.path))
        }
        Pending::MergeBack(c) => {
            let at = s.merge_writes(&c).ok()?;
            Some(format!("merge_writes at {} (after split_write)", at.path))
        }
    }
}

/// The sub-expressions of a statement's own expressions (not those of the statements nested in
/// it), outermost first.
fn own_subexprs(st: &Stmt) -> Vec<Expr> {
    let mut out = Vec::new();
    for e in weft_ir::visit::stmt_exprs(st) {
        weft_ir::visit::walk_expr(e, &mut |x| out.push(x.clone()));
    }
    out
}

/// One of the [`EXPR_PRIMITIVES`], at a statement and on an expression chosen to suit it (and now
/// and then on one that must be rejected: a rewrite to a value that is not equal, a merge of
/// writes of different cells).
fn expr_step(rng: &mut StdRng, s: &mut Schedule, x: &mut Extras, prim: &str) -> Option<String> {
    let p = s.proc().clone();
    let stmts = find::all_stmts(&p);
    let choose = |rng: &mut StdRng, v: &[(Path, Expr)]| -> Option<(Path, Expr)> {
        (!v.is_empty()).then(|| v[rng.gen_range(0..v.len())].clone())
    };
    let subexprs = |keep: &dyn Fn(&Expr) -> bool| -> Vec<(Path, Expr)> {
        stmts
            .iter()
            .flat_map(|(path, st)| {
                own_subexprs(st)
                    .into_iter()
                    .filter(|e| keep(e))
                    .map(move |e| (path.clone(), e))
            })
            .collect()
    };
    let is_access =
        |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::Assign { .. } | StmtKind::Reduce { .. });
    let access_parts = |st: &Stmt| match &st.kind {
        StmtKind::Assign { buf, rhs, .. } | StmtKind::Reduce { buf, rhs, .. } => {
            Some((buf.clone(), rhs.clone()))
        }
        _ => None,
    };
    let next_of = |path: &Path| weft_sched::path::get(&p, &path.sibling(path.last().index + 1));
    match prim {
        "commute_expr" => {
            let (path, e) = choose(rng, &subexprs(&|e| matches!(e.kind, ExprKind::Binary(..))))?;
            s.commute_expr(&s.cursor(path.clone()), &e).ok()?;
            Some(format!("commute_expr {e} at {path}"))
        }
        "left_reassociate_expr" => {
            // `a ∘ (b ∘ c)`, or `(a ∘ b) ∘ c` commuted into that form first.
            let chain = |e: &Expr, right: bool| match &e.kind {
                ExprKind::Binary(op, a, b) => {
                    let inner = if right { b } else { a };
                    matches!(&inner.kind, ExprKind::Binary(o, ..) if o == op)
                }
                _ => false,
            };
            let right = subexprs(&|e| chain(e, true));
            let left = subexprs(&|e| chain(e, false));
            if !right.is_empty() && (left.is_empty() || rng.gen_bool(0.5)) {
                let (path, e) = choose(rng, &right)?;
                s.left_reassociate_expr(&s.cursor(path.clone()), &e).ok()?;
                return Some(format!("left_reassociate_expr {e} at {path}"));
            }
            let (path, e) = choose(rng, &left)?;
            let c = s.commute_expr(&s.cursor(path.clone()), &e).ok()?;
            let ExprKind::Binary(op, a, b) = &e.kind else {
                unreachable!()
            };
            let swapped = Expr::raw(ExprKind::Binary(*op, b.clone(), a.clone()), e.ty, e.span);
            match s.left_reassociate_expr(&c, &swapped) {
                Ok(_) => Some(format!(
                    "left_reassociate_expr {swapped} at {path} (after commute_expr)"
                )),
                Err(_) => Some(format!("commute_expr {e} at {path}")),
            }
        }
        "rewrite_expr" => {
            let (path, e) = choose(
                rng,
                &subexprs(&|e| {
                    matches!(e.ty, Ty::Int | Ty::Bool)
                        && !matches!(e.kind, ExprKind::DataIndex { .. })
                }),
            )?;
            // Names in scope at the statement: its enclosing loops' variables and the sizes.
            let mut names: Vec<Expr> = weft_sched::path::ancestors(&p, &path)
                .into_iter()
                .filter_map(|(_, st)| match &st.kind {
                    StmtKind::For { var, .. } => Some(Expr::var(var, Ty::Int)),
                    _ => None,
                })
                .collect();
            names.extend(
                p.args
                    .iter()
                    .filter(|a| a.ctrl() == Some(weft_ir::CtrlType::Size))
                    .map(|a| Expr::var(&a.sym, Ty::Int)),
            );
            let add = |a: Expr, b: Expr| Expr::binary(BinOp::Add, a, b);
            let sub = |a: Expr, b: Expr| Expr::binary(BinOp::Sub, a, b);
            let new = if e.ty == Ty::Bool {
                match rng.gen_range(0..3) {
                    0 => Expr::unary(
                        weft_ir::UnOp::Not,
                        Expr::unary(weft_ir::UnOp::Not, e.clone()),
                    ),
                    1 => Expr::binary(BinOp::And, e.clone(), Expr::bool(true)),
                    // Not equal in general: must be rejected unless the context decides it.
                    _ => Expr::unary(weft_ir::UnOp::Not, e.clone()),
                }
            } else {
                match rng.gen_range(0..5) {
                    0 => sub(add(e.clone(), Expr::int(1)), Expr::int(1)),
                    1 if !names.is_empty() => {
                        let v = names[rng.gen_range(0..names.len())].clone();
                        add(sub(e.clone(), v.clone()), v)
                    }
                    2 => Expr::max(e.clone(), sub(e.clone(), Expr::int(1))),
                    // Equal only where the context says so (a loop variable at its bound, a size
                    // of 1), or not at all: the rejections.
                    3 if !names.is_empty() => names[rng.gen_range(0..names.len())].clone(),
                    _ => add(e.clone(), Expr::int(1)),
                }
            };
            s.rewrite_expr(&s.cursor(path.clone()), &e, &new).ok()?;
            Some(format!("rewrite_expr {e} to {new} at {path}"))
        }
        "fold_into_reduce" => {
            // An assignment adding a read of its own buffer, mostly; any assignment else.
            let folds = |_: &Path, st: &Stmt| match &st.kind {
                StmtKind::Assign { buf, rhs, .. } => match &rhs.kind {
                    ExprKind::Binary(BinOp::Add, a, b) => [a, b]
                        .iter()
                        .any(|o| matches!(&o.kind, ExprKind::Read { buf: r, .. } if r == buf)),
                    _ => false,
                },
                _ => false,
            };
            let (path, _) = match pick(rng, &stmts, folds) {
                Some(t) if rng.gen_bool(0.9) => t,
                _ => pick(rng, &stmts, |_, st| {
                    matches!(st.kind, StmtKind::Assign { .. })
                })?,
            };
            s.fold_into_reduce(&s.cursor(path.clone())).ok()?;
            Some(format!("fold_into_reduce at {path}"))
        }
        "merge_writes" => {
            // A write followed by a write of the same buffer, mostly.
            let pairs = |path: &Path, st: &Stmt| {
                let (Some((b1, _)), Some((b2, _))) =
                    (access_parts(st), next_of(path).and_then(&access_parts))
                else {
                    return false;
                };
                b1 == b2
            };
            let (path, _) = match pick(rng, &stmts, pairs) {
                Some(t) if rng.gen_bool(0.9) => t,
                _ => pick(rng, &stmts, is_access)?,
            };
            s.merge_writes(&s.cursor(path.clone())).ok()?;
            Some(format!("merge_writes at {path}"))
        }
        "split_write" => {
            let sums = |path: &Path, st: &Stmt| {
                is_access(path, st)
                    && access_parts(st)
                        .is_some_and(|(_, r)| matches!(r.kind, ExprKind::Binary(BinOp::Add, ..)))
            };
            let (path, _) = pick(rng, &stmts, sums)?;
            let at = s.split_write(&s.cursor(path.clone())).ok()?;
            if rng.gen_bool(0.3) {
                x.pending = Some(Pending::MergeBack(at));
            }
            Some(format!("split_write at {path}"))
        }
        _ => {
            // lift_reduce_constant: an assignment followed by a loop, mostly.
            let before_loop = |path: &Path, st: &Stmt| {
                matches!(st.kind, StmtKind::Assign { .. })
                    && matches!(next_of(path).map(|n| &n.kind), Some(StmtKind::For { .. }))
            };
            let (path, _) = match pick(rng, &stmts, before_loop) {
                Some(t) if rng.gen_bool(0.9) => t,
                _ => pick(rng, &stmts, |_, st| {
                    matches!(st.kind, StmtKind::Assign { .. })
                })?,
            };
            s.lift_reduce_constant(&s.cursor(path.clone())).ok()?;
            Some(format!("lift_reduce_constant at {path}"))
        }
    }
}

/// The buffer-layout and loop-shape primitives, which [`buffer_loop_step`] drives.
const BUFFER_LOOP_PRIMITIVES: &[&str] = &[
    "rearrange_dim",
    "resize_dim",
    "unroll_buffer",
    "join_loops",
    "mult_loops",
    "divide_with_recompute",
    "lift_scope",
    "delete_config",
    "autolift_alloc",
    "autosink_alloc",
];

/// The config `delete_config`'s steps write (the random procs declare none): one index field.
fn fuzz_config() -> Arc<weft_ir::Config> {
    Arc::new(weft_ir::Config {
        name: "FzCfg".into(),
        fields: vec![weft_ir::ConfigField {
            name: "k".into(),
            ty: weft_ir::proc::FieldType::Ctrl(weft_ir::CtrlType::Index),
        }],
        span: Default::default(),
    })
}

/// One of [`BUFFER_LOOP_PRIMITIVES`], at a statement chosen to suit it; where the random proc
/// seldom has the shape the primitive needs, a step that makes it comes first (`cut` before
/// `join_loops`, a guarded `split` before `mult_loops`, `expand_dim` by a constant before
/// `unroll_buffer`, `specialize` before `divide_with_recompute`), and the description names both.
fn buffer_loop_step(
    rng: &mut StdRng,
    s: &mut Schedule,
    prim: &str,
    p: &Proc,
    stmts: &[(Path, &Stmt)],
) -> Option<String> {
    let is_alloc = |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::Alloc { .. });
    let is_loop = |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::For { .. });
    let shape = |st: &Stmt| match &st.kind {
        StmtKind::Alloc { ty, .. } => ty.shape.clone(),
        _ => Vec::new(),
    };
    Some(match prim {
        "rearrange_dim" => {
            let (path, st) = pick(rng, stmts, |q, st| is_alloc(q, st) && !shape(st).is_empty())?;
            let mut perm: Vec<usize> = (0..shape(st).len()).collect();
            for k in (1..perm.len()).rev() {
                perm.swap(k, rng.gen_range(0..=k));
            }
            s.rearrange_dim(&s.cursor(path.clone()), &perm).ok()?;
            format!("rearrange_dim {perm:?} at {path}")
        }
        "resize_dim" => {
            let (path, st) = pick(rng, stmts, |q, st| is_alloc(q, st) && !shape(st).is_empty())?;
            let sh = shape(st);
            let d = rng.gen_range(0..sh.len());
            // Grown by `k` and shifted by `-j <= 0` (accepted where the extent is a constant:
            // a size plus `k` may exceed the largest size), kept, or shrunk by one (accepted only
            // where the accesses leave an end unused).
            let (size, offset) = match rng.gen_range(0..4) {
                0 | 1 => {
                    let k = rng.gen_range(0..=2);
                    let j = rng.gen_range(0..=k);
                    (
                        Expr::binary(BinOp::Add, sh[d].clone(), Expr::int(k)),
                        Expr::int(-j),
                    )
                }
                2 => (sh[d].clone(), Expr::int(0)),
                _ => (
                    Expr::binary(BinOp::Sub, sh[d].clone(), Expr::int(1)),
                    Expr::int(rng.gen_range(0..=1)),
                ),
            };
            s.resize_dim(&s.cursor(path.clone()), d, &size, &offset)
                .ok()?;
            format!("resize_dim {d} {size} {offset} at {path}")
        }
        "unroll_buffer" => {
            let constant = |st: &Stmt| {
                shape(st)
                    .iter()
                    .position(|e| e.as_int_const().is_some_and(|c| (1..=4).contains(&c)))
            };
            let direct = pick(rng, stmts, |q, st| {
                is_alloc(q, st) && constant(st).is_some()
            });
            match direct {
                Some((path, st)) if rng.gen_bool(0.5) => {
                    let d = constant(st)?;
                    s.unroll_buffer(&s.cursor(path.clone()), d).ok()?;
                    format!("unroll_buffer {d} at {path}")
                }
                _ => {
                    // A new leading dimension of constant extent, indexed by a constant.
                    let (path, _) = pick(rng, stmts, is_alloc)?;
                    let e = rng.gen_range(1..=3);
                    let c = s
                        .expand_dim(
                            &s.cursor(path.clone()),
                            &Expr::int(e),
                            &Expr::int(rng.gen_range(0..e)),
                        )
                        .ok()?;
                    s.unroll_buffer(&c, 0).ok()?;
                    format!("unroll_buffer 0 at {path} (after expand_dim {e})")
                }
            }
        }
        "join_loops" => {
            let followed = |q: &Path, st: &Stmt| {
                is_loop(q, st)
                    && matches!(
                        weft_sched::path::get(p, &q.sibling(q.last().index + 1)).map(|n| &n.kind),
                        Some(StmtKind::For { .. })
                    )
            };
            match pick(rng, stmts, followed) {
                Some((path, _)) if rng.gen_bool(0.5) => {
                    s.join_loops(&s.cursor(path.clone())).ok()?;
                    format!("join_loops at {path}")
                }
                _ => {
                    let (path, st) = pick(rng, stmts, is_loop)?;
                    let StmtKind::For { lo, hi, .. } = &st.kind else {
                        unreachable!()
                    };
                    let point = match rng.gen_range(0..3) {
                        0 => lo.clone(),
                        1 => hi.clone(),
                        _ => Expr::binary(BinOp::Add, lo.clone(), Expr::int(1)),
                    };
                    let c = s.cut(&s.cursor(path.clone()), &point).ok()?;
                    s.join_loops(&c).ok()?;
                    format!("join_loops at {path} (after cut at {point})")
                }
            }
        }
        "mult_loops" => {
            let name = format!("ml{}", s.steps().len());
            let (path, st) = pick(rng, stmts, is_loop)?;
            let nest = matches!(&st.kind, StmtKind::For { body, .. }
                if body.len() == 1 && matches!(&body[0].kind, StmtKind::For { lo, hi, .. }
                    if lo.as_int_const().is_some() && hi.as_int_const().is_some()));
            if nest && rng.gen_bool(0.7) {
                s.mult_loops(&s.cursor(path.clone()), &name).ok()?;
                format!("mult_loops at {path}")
            } else {
                let f = rng.gen_range(1..=4);
                let tail = [Tail::Guard, Tail::Perfect][rng.gen_range(0..2)];
                let (mo, mi) = (
                    format!("mo{}", s.steps().len()),
                    format!("mi{}", s.steps().len()),
                );
                let c = s.split(&s.cursor(path.clone()), f, &mo, &mi, tail).ok()?;
                s.mult_loops(&c, &name).ok()?;
                format!("mult_loops at {path} (after split {f} {})", tail.name())
            }
        }
        "divide_with_recompute" => {
            // A random stride and outer bound, right or wrong for the trip count `N` (too many
            // tiles, none, fewer than the sizes allow), on the loop as it is or, half the time,
            // on its copy under `if N >= stride` (`specialize`), where the sizes below the stride
            // that no outer bound covers do not reach it.
            let (path, st) = pick(rng, stmts, is_loop)?;
            let StmtKind::For { lo, hi, .. } = &st.kind else {
                unreachable!()
            };
            let trip = match lo.as_int_const() {
                Some(0) => hi.clone(),
                _ => Expr::binary(BinOp::Sub, hi.clone(), lo.clone()),
            };
            let c = rng.gen_range(1..=3);
            let div = |e: Expr, d: i64| Expr::binary(BinOp::Div, e, Expr::int(d));
            let outer_hi = match rng.gen_range(0..7) {
                0 | 1 => div(trip.clone(), c),
                2 => div(Expr::binary(BinOp::Sub, trip.clone(), Expr::int(1)), c),
                3 => div(trip.clone(), 2 * c),
                4 => Expr::binary(BinOp::Add, div(trip.clone(), c), Expr::int(1)),
                5 => Expr::int(rng.gen_range(0..=2)),
                _ => Expr::binary(BinOp::Sub, trip.clone(), Expr::int(1)),
            };
            let (io, ii) = (
                format!("ro{}", s.steps().len()),
                format!("ri{}", s.steps().len()),
            );
            let (at, after) = if rng.gen_bool(0.5) {
                (s.cursor(path.clone()), String::new())
            } else {
                let cond = trip.ge(Expr::int(c));
                let guard = s.specialize(&s.cursor(path.clone()), &cond).ok()?;
                (s.body(&guard, 0, 0)?, format!(" (after specialize {cond})"))
            };
            let nest = s.divide_with_recompute(&at, &outer_hi, c, &io, &ii).ok()?;
            // Tiles may overlap unless the inner loop runs `c` iterations (no overlap was proved)
            // or there is at most one tile.
            let overlap = match s.stmt(&nest).map(|st| &st.kind) {
                Some(StmtKind::For { body, .. }) => {
                    matches!(&body[0].kind, StmtKind::For { hi, .. } if hi.as_int_const() != Some(c))
                        && !matches!(outer_hi.as_int_const(), Some(0 | 1))
                }
                _ => false,
            };
            let overlap = if overlap { ", tiles may overlap" } else { "" };
            format!("divide_with_recompute {outer_hi} {c} at {path}{after}{overlap}")
        }
        "autolift_alloc" => {
            let (path, _) = pick(rng, stmts, is_alloc)?;
            let levels = rng.gen_range(1..=2);
            s.autolift_alloc(&s.cursor(path.clone()), levels).ok()?;
            format!("autolift_alloc {levels} at {path}")
        }
        "autosink_alloc" => {
            let followed = |q: &Path, st: &Stmt| {
                is_alloc(q, st)
                    && matches!(
                        weft_sched::path::get(p, &q.sibling(q.last().index + 1)).map(|n| &n.kind),
                        Some(StmtKind::For { .. } | StmtKind::If { .. })
                    )
            };
            let (path, _) = pick(rng, stmts, followed).or_else(|| pick(rng, stmts, is_alloc))?;
            s.autosink_alloc(&s.cursor(path.clone())).ok()?;
            format!("autosink_alloc at {path}")
        }
        "delete_config" => {
            let cfg = fuzz_config();
            match rng.gen_range(0..3) {
                // A write, then (mostly) the same write again before it: the later one is deleted
                // because the field already holds its value, or one of them because nothing
                // reads the field.
                0 | 1 => {
                    let (path, _) = pick(rng, stmts, |_, _| true)?;
                    let v = Expr::int(rng.gen_range(0..3));
                    let c = s.write_config(&s.cursor(path.clone()), &cfg, 0, &v).ok()?;
                    if rng.gen_bool(0.7) {
                        s.write_config(&c, &cfg, 0, &v).ok()?;
                    }
                    let w = if rng.gen_bool(0.5) {
                        s.next(&c)?
                    } else {
                        s.next(&s.next(&c)?).unwrap_or(s.next(&c)?)
                    };
                    s.delete_config(&w).ok()?;
                    format!("delete_config at {path} (after write_config {v})")
                }
                // A write whose value the statement reads (`bind_config` of an index): deleting
                // it must be refused.
                _ => {
                    let (path, st) = pick(rng, stmts, |_, st| {
                        matches!(st.kind, StmtKind::Assign { .. } | StmtKind::Reduce { .. })
                    })?;
                    let (StmtKind::Assign { idx, .. } | StmtKind::Reduce { idx, .. }) = &st.kind
                    else {
                        unreachable!()
                    };
                    let e = idx.get(rng.gen_range(0..idx.len().max(1)))?.clone();
                    let c = s.bind_config(&s.cursor(path.clone()), &e, &cfg, 0).ok()?;
                    s.delete_config(&s.prev(&c)?).ok()?;
                    format!("delete_config at {path} (after bind_config {e})")
                }
            }
        }
        _ => {
            // lift_scope: a loop or `if` that is the whole body of a loop or `if`.
            let only_child = |q: &Path, st: &Stmt| {
                matches!(st.kind, StmtKind::For { .. } | StmtKind::If { .. })
                    && q.parent().is_some()
                    && weft_sched::path::block_of(p, q).is_some_and(|b| b.len() == 1)
            };
            let (path, _) = pick(rng, stmts, only_child)?;
            s.lift_scope(&s.cursor(path.clone())).ok()?;
            format!("lift_scope at {path}")
        }
    })
}

/// A random statement among those `keep` accepts.
fn pick<'a>(
    rng: &mut StdRng,
    stmts: &[(Path, &'a Stmt)],
    keep: impl Fn(&Path, &Stmt) -> bool,
) -> Option<(Path, &'a Stmt)> {
    let cands: Vec<&(Path, &Stmt)> = stmts.iter().filter(|(p, s)| keep(p, s)).collect();
    if cands.is_empty() {
        return None;
    }
    let (p, s) = cands[rng.gen_range(0..cands.len())];
    Some((p.clone(), *s))
}

/// The structure of a statement, names, expressions and types left out: what a block must have
/// to be `replace`d by a proc with such a body.
fn skeleton(st: &Stmt) -> String {
    let blocks = |bs: Vec<&weft_ir::Block>| -> String {
        bs.iter()
            .map(|b| b.iter().map(skeleton).collect::<Vec<_>>().join(";"))
            .collect::<Vec<_>>()
            .join("|")
    };
    match &st.kind {
        StmtKind::For { .. } | StmtKind::If { .. } => {
            let head = if matches!(st.kind, StmtKind::For { .. }) {
                "for"
            } else {
                "if"
            };
            format!("{head}{{{}}}", blocks(weft_ir::visit::stmt_blocks(st)))
        }
        StmtKind::Assign { .. } => "=".into(),
        StmtKind::Reduce { .. } => "+=".into(),
        StmtKind::Alloc { .. } => "alloc".into(),
        StmtKind::Free { .. } => "free".into(),
        StmtKind::Window { .. } => "window".into(),
        StmtKind::Call { proc, .. } => format!("call {}", proc.name),
        StmtKind::WriteConfig { .. } => "config".into(),
        StmtKind::Pass => "pass".into(),
    }
}

/// The declared shape of a buffer argument or allocation of `p` (`None` for a window).
fn shape_of(p: &Proc, buf: &Sym) -> Option<Vec<Expr>> {
    if let Some(a) = p.args.iter().find(|a| a.sym == *buf) {
        return a.buf().map(|t| t.shape.clone());
    }
    find::all_stmts(p)
        .into_iter()
        .find_map(|(_, st)| match &st.kind {
            StmtKind::Alloc { buf: b, ty } if b == buf => Some(ty.shape.clone()),
            _ => None,
        })
}

/// The buffers the statements access by reads, writes and reductions, in order of appearance,
/// each with the indices of its first access; buffers they also use in windows or call
/// arguments (which `stage_mem` refuses) come last.
fn accessed_buffers(stmts: &[Stmt]) -> Vec<(Sym, Vec<Expr>)> {
    fn go(stmts: &[Stmt], out: &mut Vec<(Sym, Vec<Expr>)>, viewed: &mut Vec<Sym>) {
        for st in stmts {
            if let StmtKind::Assign { buf, idx, .. } | StmtKind::Reduce { buf, idx, .. } = &st.kind
            {
                if !out.iter().any(|(b, _)| b == buf) {
                    out.push((buf.clone(), idx.clone()));
                }
            }
            for e in weft_ir::visit::stmt_exprs(st) {
                weft_ir::visit::walk_expr(e, &mut |e| match e.kind() {
                    ExprKind::Read { buf, idx } if !out.iter().any(|(b, _)| b == buf) => {
                        out.push((buf.clone(), idx.clone()))
                    }
                    ExprKind::Window { buf, .. } => viewed.push(buf.clone()),
                    _ => {}
                });
            }
            for b in weft_ir::visit::stmt_blocks(st) {
                go(b, out, viewed);
            }
        }
    }
    let (mut out, mut viewed) = (Vec::new(), Vec::new());
    go(stmts, &mut out, &mut viewed);
    out.sort_by_key(|(b, _)| viewed.contains(b));
    out
}

/// One of the primitives of [`NEW_PRIMITIVES`], at a statement chosen to suit it.
fn new_step(rng: &mut StdRng, s: &mut Schedule, x: &mut Extras) -> Option<String> {
    let p = s.proc().clone();
    let stmts = find::all_stmts(&p);
    // Steps that change the signature or schedule other procs stay out of a callee's schedule.
    if rng.gen_bool(0.25) {
        let prim = EXPR_PRIMITIVES[rng.gen_range(0..EXPR_PRIMITIVES.len())];
        return expr_step(rng, s, x, prim);
    }
    let prim = loop {
        // `extract_proc` and `replace` twice as often: `replace` seldom finds a block it can match.
        let k = rng.gen_range(0..NEW_PRIMITIVES.len() + 2);
        let prim = match k.checked_sub(NEW_PRIMITIVES.len()) {
            Some(0) => "extract_proc",
            Some(_) => "replace",
            None => NEW_PRIMITIVES[k],
        };
        let outer_only = matches!(
            prim,
            "extract_proc" | "partial_eval" | "replace" | "call_eqv"
        );
        if !(x.nested && outer_only) {
            break prim;
        }
    };
    let is_alloc = |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::Alloc { .. });
    if BUFFER_LOOP_PRIMITIVES.contains(&prim) {
        return buffer_loop_step(rng, s, prim, &p, &stmts);
    }
    let desc = match prim {
        "inline_assign" => {
            // An assignment to an allocation (a proc argument's final value is seen by the caller).
            let (path, _) = pick(rng, &stmts, |_, st| match &st.kind {
                StmtKind::Assign { buf, .. } => !p.args.iter().any(|a| a.sym == *buf),
                _ => false,
            })?;
            s.inline_assign(&s.cursor(path.clone())).ok()?;
            format!("inline_assign at {path}")
        }
        "sink_alloc" => {
            // Preferably an allocation followed by a loop or an `if`.
            let followed = |path: &Path, st: &Stmt| {
                is_alloc(path, st)
                    && matches!(
                        weft_sched::path::get(&p, &path.sibling(path.last().index + 1))
                            .map(|n| &n.kind),
                        Some(StmtKind::For { .. } | StmtKind::If { .. })
                    )
            };
            let (path, _) = match pick(rng, &stmts, followed) {
                Some(t) if rng.gen_bool(0.8) => t,
                _ => pick(rng, &stmts, is_alloc)?,
            };
            s.sink_alloc(&s.cursor(path.clone())).ok()?;
            format!("sink_alloc at {path}")
        }
        "divide_dim" => {
            // Mostly a dimension whose extent is a constant (or became one by `partial_eval`)
            // with a factor that divides it, which the proof needs; any dimension and factor else.
            let mut divisible: Vec<(Path, usize, i64)> = Vec::new();
            for (path, st) in &stmts {
                if let StmtKind::Alloc { ty, .. } = &st.kind {
                    for (d, e) in ty.shape.iter().enumerate() {
                        if let Some(c) = eval_ctrl(e, &HashMap::new()) {
                            for f in (2..=4).filter(|f| c % f == 0) {
                                divisible.push((path.clone(), d, f));
                            }
                        }
                    }
                }
            }
            let (path, dim, factor) = if !divisible.is_empty() && rng.gen_bool(0.7) {
                divisible[rng.gen_range(0..divisible.len())].clone()
            } else {
                let (path, st) = pick(rng, &stmts, is_alloc)?;
                let StmtKind::Alloc { ty, .. } = &st.kind else {
                    unreachable!()
                };
                if ty.shape.is_empty() {
                    return None;
                }
                (path, rng.gen_range(0..ty.shape.len()), rng.gen_range(2..=4))
            };
            s.divide_dim(&s.cursor(path.clone()), dim, factor).ok()?;
            format!("divide_dim {dim} {factor} at {path}")
        }
        "reuse_buffer" => {
            let (path, st) = pick(rng, &stmts, is_alloc)?;
            let StmtKind::Alloc { ty: ty2, .. } = &st.kind else {
                unreachable!()
            };
            // The allocations in scope before it: earlier in its block or an enclosing one.
            let mut earlier: Vec<(Sym, weft_ir::BufType)> = Vec::new();
            let mut level = Some(path.clone());
            while let Some(q) = level {
                let block = weft_sched::path::block_of(&p, &q)?;
                for st in &block[..q.last().index] {
                    if let StmtKind::Alloc { buf, ty } = &st.kind {
                        earlier.push((buf.clone(), ty.clone()));
                    }
                }
                level = q.parent();
            }
            let alike: Vec<&(Sym, weft_ir::BufType)> = earlier
                .iter()
                .filter(|(_, t)| t.elem == ty2.elem && t.mem.name == ty2.mem.name)
                .collect();
            let t1 = if !alike.is_empty() && rng.gen_bool(0.9) {
                alike[rng.gen_range(0..alike.len())].0.clone()
            } else if !earlier.is_empty() {
                earlier[rng.gen_range(0..earlier.len())].0.clone()
            } else {
                return None;
            };
            s.reuse_buffer(&s.cursor(path.clone()), t1.name()).ok()?;
            format!("reuse_buffer {t1} at {path}")
        }
        "bind_expr" => {
            let (path, st) = pick(rng, &stmts, |_, st| {
                matches!(st.kind, StmtKind::Assign { .. } | StmtKind::Reduce { .. })
            })?;
            let (StmtKind::Assign { rhs, .. } | StmtKind::Reduce { rhs, .. }) = &st.kind else {
                unreachable!()
            };
            let mut subs: Vec<&Expr> = Vec::new();
            weft_ir::visit::walk_expr(rhs, &mut |e| {
                if matches!(e.ty, Ty::Data(_)) {
                    subs.push(e)
                }
            });
            let e = (*subs.get(rng.gen_range(0..subs.len().max(1)))?).clone();
            let name = x.fresh("b");
            // Sometimes over the statements after it too (refused where one of them, not the
            // last, writes what the expression reads).
            let count = if rng.gen_bool(0.3) {
                rng.gen_range(2..=3)
            } else {
                1
            };
            let at = s
                .bind_expr_over(&s.cursor(path.clone()), count, &e, &name, stack_memory())
                .ok()?;
            let Ty::Data(dtype) = e.ty else {
                unreachable!()
            };
            if count > 1 {
                return Some(format!("bind_expr {e} over {count} at {path}"));
            }
            x.pending = match rng.gen_range(0..10) {
                0..=2 => s.prev(&at).map(Pending::InlineAssign),
                3..=7 => {
                    let alloc = s.prev(&s.prev(&at)?)?;
                    Some(Pending::BindAlike(at, alloc, dtype, name.clone()))
                }
                _ => None,
            };
            format!("bind_expr {e} at {path}")
        }
        "expand_dim" => {
            let (path, _) = pick(rng, &stmts, is_alloc)?;
            let loops: Vec<(Sym, Expr, Expr)> = weft_sched::path::ancestors(&p, &path)
                .into_iter()
                .filter_map(|(_, st)| match &st.kind {
                    StmtKind::For { var, lo, hi, .. } => {
                        Some((var.clone(), lo.clone(), hi.clone()))
                    }
                    _ => None,
                })
                .collect();
            let sizes: Vec<Sym> = p
                .args
                .iter()
                .filter(|a| a.ctrl() == Some(weft_ir::CtrlType::Size))
                .map(|a| a.sym.clone())
                .collect();
            let (extent, index) = match rng.gen_range(0..4) {
                // An enclosing loop's variable over its range (Exo's form, before `lift_alloc`).
                0 | 1 if !loops.is_empty() => {
                    let (v, lo, hi) = loops[rng.gen_range(0..loops.len())].clone();
                    let v = Expr::var(&v, Ty::Int);
                    if rng.gen_bool(0.5) {
                        (hi, v)
                    } else {
                        (
                            Expr::binary(BinOp::Sub, hi, lo.clone()),
                            Expr::binary(BinOp::Sub, v, lo),
                        )
                    }
                }
                2 if !sizes.is_empty() => {
                    let n = Expr::var(&sizes[rng.gen_range(0..sizes.len())], Ty::Int);
                    let i = if rng.gen_bool(0.5) {
                        Expr::int(0)
                    } else {
                        Expr::binary(BinOp::Sub, n.clone(), Expr::int(1))
                    };
                    (n, i)
                }
                // A constant slice; now and then one past the end, which must be rejected.
                _ => {
                    let e = rng.gen_range(1..=4);
                    let i = if rng.gen_bool(0.1) {
                        e
                    } else {
                        rng.gen_range(0..e)
                    };
                    (Expr::int(e), Expr::int(i))
                }
            };
            s.expand_dim(&s.cursor(path.clone()), &extent, &index)
                .ok()?;
            format!("expand_dim {extent} {index} at {path}")
        }
        "stage_mem" => {
            let is_loop = |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::For { .. });
            let (path, _) = match pick(rng, &stmts, is_loop) {
                Some(t) if rng.gen_bool(0.6) => t,
                _ => pick(rng, &stmts, |_, _| true)?,
            };
            let block = weft_sched::path::block_of(&p, &path)?;
            let first = path.last().index;
            let len = if first + 1 < block.len() && rng.gen_bool(0.2) {
                2
            } else {
                1
            };
            let accessed = accessed_buffers(&block[first..first + len]);
            if accessed.is_empty() {
                return None;
            }
            // Buffers used only by accesses come first; take one of those mostly.
            let k = if rng.gen_bool(0.8) {
                rng.gen_range(0..accessed.len().min(2))
            } else {
                rng.gen_range(0..accessed.len())
            };
            let (buf, idx) = accessed[k].clone();
            let shape = shape_of(&p, &buf)?;
            let region: Vec<(Expr, Expr)> = match rng.gen_range(0..10) {
                // The cell of the first access (all accesses may touch just that one).
                0..=1 if idx.len() == shape.len() => idx
                    .iter()
                    .map(|i| (i.clone(), Expr::binary(BinOp::Add, i.clone(), Expr::int(1))))
                    .collect(),
                // The whole buffer less one row of one dimension: often not enough.
                2 if !shape.is_empty() => {
                    let d = rng.gen_range(0..shape.len());
                    shape
                        .iter()
                        .enumerate()
                        .map(|(k, e)| match (k == d, rng.gen_bool(0.5)) {
                            (true, true) => (Expr::int(1), e.clone()),
                            (true, false) => (
                                Expr::int(0),
                                Expr::binary(BinOp::Sub, e.clone(), Expr::int(1)),
                            ),
                            _ => (Expr::int(0), e.clone()),
                        })
                        .collect()
                }
                _ => shape.iter().map(|e| (Expr::int(0), e.clone())).collect(),
            };
            let name = x.fresh("st");
            let c = s.cursor(path.clone());
            // Sometimes in accumulate mode (refused unless the block only reduces into it).
            let accumulate = rng.gen_bool(0.3);
            if accumulate {
                s.stage_mem_accumulate(&c, len, buf.name(), &region, &name, stack_memory())
                    .ok()?;
            } else {
                s.stage_mem(&c, len, buf.name(), &region, &name, stack_memory())
                    .ok()?;
            }
            let text: Vec<String> = region.iter().map(|(l, h)| format!("{l}:{h}")).collect();
            let mode = if accumulate { " accumulate" } else { "" };
            format!(
                "stage_mem{mode} {buf}[{}] x{len} at {path}",
                text.join(", ")
            )
        }
        "extract_proc" => {
            // Mostly a loop, often one of the proc body (a callee that takes no loop variable of
            // the caller), or an inner loop, whose callee takes the enclosing loop's variable
            // and the whole buffer; `replace` can match either again.
            let is_loop = |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::For { .. });
            let is_top_loop = |path: &Path, st: &Stmt| path.depth() == 1 && is_loop(path, st);
            let (path, _) = match rng.gen_range(0..10) {
                0..=2 => pick(rng, &stmts, is_top_loop),
                3..=5 => pick(rng, &stmts, is_loop),
                _ => None,
            }
            .or_else(|| pick(rng, &stmts, |_, _| true))?;
            let block = weft_sched::path::block_of(&p, &path)?;
            let count = if path.last().index + 1 < block.len() && rng.gen_bool(0.15) {
                2
            } else {
                1
            };
            let name = x.fresh("x");
            let (at, q) = s.extract_proc(&s.cursor(path.clone()), count, &name).ok()?;
            x.procs.push(q);
            if rng.gen_bool(0.5) {
                x.pending = Some(Pending::InlineBack(at));
            }
            format!("extract_proc {name} x{count} at {path}")
        }
        "partial_eval" => {
            let sizes: Vec<String> = p
                .args
                .iter()
                .filter(|a| a.ctrl() == Some(weft_ir::CtrlType::Size))
                .map(|a| a.sym.name().to_string())
                .collect();
            if sizes.is_empty() {
                return None;
            }
            let n = sizes[rng.gen_range(0..sizes.len())].clone();
            let v = rng.gen_range(1..=6);
            s.partial_eval(&[(&n, v)]).ok()?;
            x.fixed.insert(n.clone(), v);
            format!("partial_eval {n}={v}")
        }
        "replace" => {
            if x.procs.is_empty() {
                return None;
            }
            let callee = x.procs[rng.gen_range(0..x.procs.len())].clone();
            // Mostly a block shaped like the callee's body (a copy left by `split` with a cut
            // tail, `unroll`, `fission`, or the block a call was inlined into); any block else.
            let want: Vec<String> = callee.body.iter().map(skeleton).collect();
            let alike = |path: &Path, _: &Stmt| {
                let Some(block) = weft_sched::path::block_of(&p, path) else {
                    return false;
                };
                let i = path.last().index;
                block.len() >= i + want.len()
                    && block[i..i + want.len()]
                        .iter()
                        .zip(&want)
                        .all(|(st, w)| skeleton(st) == *w)
            };
            let (path, _) = match pick(rng, &stmts, alike) {
                Some(t) if rng.gen_bool(0.8) => t,
                _ => pick(rng, &stmts, |_, _| true)?,
            };
            s.replace(&s.cursor(path.clone()), &callee).ok()?;
            format!("replace by {} at {path}", callee.name)
        }
        "add_loop" => {
            // A loop of 1 to 3 iterations, or of as many as a size or an enclosing loop's bound.
            let (path, _) = pick(rng, &stmts, |_, _| true)?;
            let mut bounds: Vec<Expr> = p
                .args
                .iter()
                .filter(|a| a.ctrl() == Some(weft_ir::CtrlType::Size))
                .map(|a| Expr::var(&a.sym, Ty::Int))
                .collect();
            for (_, st) in weft_sched::path::ancestors(&p, &path) {
                if let StmtKind::For { hi, .. } = &st.kind {
                    bounds.push(hi.clone());
                }
            }
            let hi = if !bounds.is_empty() && rng.gen_bool(0.4) {
                bounds[rng.gen_range(0..bounds.len())].clone()
            } else {
                Expr::int(rng.gen_range(1..=3))
            };
            let name = x.fresh("al");
            s.add_loop(&s.cursor(path.clone()), &name, &hi).ok()?;
            format!("add_loop 0..{hi} at {path}")
        }
        "eliminate_dead_code" => {
            // Mostly an `if` (loops that never run are rarer than conditions decided by the
            // context).
            let is_if = |_: &Path, st: &Stmt| matches!(st.kind, StmtKind::If { .. });
            let (path, _) = match pick(rng, &stmts, is_if) {
                Some(t) if rng.gen_bool(0.7) => t,
                _ => pick(rng, &stmts, |_, st| {
                    matches!(st.kind, StmtKind::For { .. } | StmtKind::If { .. })
                })?,
            };
            s.eliminate_dead_code(&s.cursor(path.clone())).ok()?;
            format!("eliminate_dead_code at {path}")
        }
        _ => {
            // call_eqv: a call of `f` becomes a call of a version of `f` scheduled on its own (made
            // now, or earlier), or of another known proc with `f`'s signature (which must be
            // rejected unless the two are related by provenance).
            let (path, st) = pick(rng, &stmts, |_, st| {
                matches!(st.kind, StmtKind::Call { .. })
            })?;
            let StmtKind::Call { proc: f, .. } = &st.kind else {
                unreachable!()
            };
            let alike: Vec<Arc<Proc>> = x
                .procs
                .iter()
                .filter(|g| g.name != f.name && weft_ir::alpha::same_signature(f, g))
                .cloned()
                .collect();
            let g = if alike.is_empty() || rng.gen_bool(0.5) {
                let mut sub = Schedule::new(f.clone());
                sub.recheck = true;
                let mut sx = Extras::new(&format!("{}n", x.prefix), Vec::new());
                sx.nested = true;
                for _ in 0..rng.gen_range(1..=4) {
                    random_step(rng, &mut sub, &mut sx).ok()?;
                }
                let name = x.fresh("s");
                sub.rename(&name).ok()?;
                let g = sub.proc().clone();
                x.notes.push(format!(
                    "--- {name}: {} scheduled by {:?}\n{}",
                    f.name,
                    sub.steps(),
                    weft_ir::print::proc_to_string(&g)
                ));
                x.procs.push(g.clone());
                g
            } else {
                alike[rng.gen_range(0..alike.len())].clone()
            };
            s.call_eqv(&s.cursor(path.clone()), &g).ok()?;
            format!("call_eqv {} for {} at {path}", g.name, f.name)
        }
    };
    Some(desc)
}

/// The most [`work`] a run of a generated proc may do (a run takes about a second per two
/// million).
const MAX_WORK: u64 = 100_000;

/// The most [`work`] a run of a scheduled proc may do: a comparison at sizes where it would do
/// more is left out.
const MAX_SCHEDULED_WORK: u64 = 1_000_000;

/// Whether a run of the scheduled proc `p` at `sizes` (with the sizes `partial_eval` fixed) stays
/// within [`MAX_SCHEDULED_WORK`].
fn affordable(p: &Proc, sizes: &HashMap<String, i64>, fixed: &HashMap<String, i64>) -> bool {
    let mut sizes = sizes.clone();
    sizes.extend(fixed.iter().map(|(k, v)| (k.clone(), *v)));
    work(p, &sizes) <= MAX_SCHEDULED_WORK
}

/// A rough count of what a run of `p` at `sizes` executes: statements, with loop trip counts
/// multiplied through, calls expanded and allocations counted by cells. Bounds that are not
/// functions of the sizes (never the case in generated procs) count as one trip.
fn work(p: &Proc, sizes: &HashMap<String, i64>) -> u64 {
    let env: HashMap<Sym, i64> = p
        .args
        .iter()
        .filter_map(|a| Some((a.sym.clone(), *sizes.get(a.sym.name())?)))
        .collect();
    block_work(&p.body, &env)
}

fn eval_ctrl(e: &Expr, env: &HashMap<Sym, i64>) -> Option<i64> {
    match e.kind() {
        ExprKind::Const(weft_ir::Const::Int(v)) => Some(*v),
        ExprKind::Var(v) => env.get(v).copied(),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (eval_ctrl(a, env)?, eval_ctrl(b, env)?);
            Some(match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::Div if b != 0 => a.div_euclid(b),
                BinOp::Mod if b != 0 => a.rem_euclid(b),
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                _ => return None,
            })
        }
        _ => None,
    }
}

fn block_work(b: &[Stmt], env: &HashMap<Sym, i64>) -> u64 {
    let mut total = 0u64;
    for st in b {
        let w = match &st.kind {
            StmtKind::For { lo, hi, body, .. } => {
                let trips = match (eval_ctrl(lo, env), eval_ctrl(hi, env)) {
                    (Some(l), Some(h)) => h.saturating_sub(l).max(0) as u64,
                    _ => 1,
                };
                trips.saturating_mul(1 + block_work(body, env))
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => 1 + block_work(then_body, env).max(block_work(else_body, env)),
            StmtKind::Alloc { ty, .. } => ty.shape.iter().fold(1u64, |n, e| {
                n.saturating_mul(eval_ctrl(e, env).unwrap_or(1).max(1) as u64)
            }),
            StmtKind::Call { proc, args } => {
                let inner: HashMap<Sym, i64> = proc
                    .args
                    .iter()
                    .zip(args)
                    .filter_map(|(a, e)| Some((a.sym.clone(), eval_ctrl(e, env)?)))
                    .collect();
                1 + block_work(&proc.body, &inner)
            }
            _ => 1,
        };
        total = total.saturating_add(w);
    }
    total
}

/// A random 2-deep loop nest over two 2-D buffers with small random offsets: the shape of code
/// where loop reorder, fission and fusion meet real dependences (`A[i+1, j] = A[i, j+1]`).
fn random_nest(rng: &mut StdRng, case: u64) -> Arc<Proc> {
    let mut body = String::new();
    let idx =
        |rng: &mut StdRng| format!("i + {}, j + {}", rng.gen_range(0..3), rng.gen_range(0..3));
    for _ in 0..rng.gen_range(1..=2) {
        let dst = ["A", "B"][rng.gen_range(0..2)];
        let src = ["A", "B"][rng.gen_range(0..2)];
        let op = ["=", "+="][rng.gen_range(0..2)];
        let (d, s1, s2) = (idx(rng), idx(rng), idx(rng));
        body.push_str(&format!(
            "            {dst}[{d}] {op} {src}[{s1}] + {src}[{s2}] * 3;\n"
        ));
    }
    let (ilo, jlo) = (rng.gen_range(0..2), rng.gen_range(0..2));
    let src = format!(
        "proc nest{case}(n: size, m: size, A: i32[n + 3, m + 3] @ DRAM, B: i32[n + 3, m + 3] @ DRAM) {{\n\
         for i in {ilo}..n {{\n        for j in {jlo}..m {{\n{body}        }}\n    }}\n}}\n"
    );
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "nest.weft", &src)
        .unwrap_or_else(|_| panic!("generated nest does not parse:\n{src}"));
    weft_check::check_module(&m)
        .unwrap_or_else(|_| panic!("generated nest does not check:\n{src}"));
    m.procs[0].clone()
}

/// A random proc of the shapes the expression primitives rewrite: a sum `y = 0; for k { y += c * e }`
/// (a factor `c` that is invariant or not, reading the cell or not), followed by writes that add
/// to a cell, write one cell twice, or add a read of another cell; over `i32` (exact) or `f64`.
fn random_sum(rng: &mut StdRng, case: u64) -> Arc<Proc> {
    let float = rng.gen_bool(0.5);
    let t = if float { "f64" } else { "i32" };
    let lit = |v: i32| {
        if float {
            format!("{v}.0")
        } else {
            v.to_string()
        }
    };
    let pick = |rng: &mut StdRng, v: &[String]| v[rng.gen_range(0..v.len())].clone();
    let d0 = ["i", "i", "i", "i + 1"][rng.gen_range(0..4)];
    let d1 = if rng.gen_bool(0.85) { d0 } else { "i + 1" };
    let c = pick(
        rng,
        &[
            "a[i]".into(),
            "a[0]".into(),
            lit(3),
            "x[i, 0]".into(),
            "x[0, k]".into(),
            format!("y[{d0}]"),
            "y[i + 2]".into(),
        ],
    );
    let e = pick(
        rng,
        &[
            "x[i, k]".into(),
            "x[i, k] + x[0, k]".into(),
            format!("a[i] + {}", lit(1)),
            format!("y[{d0}] * x[i, k]"),
            "x[i, k] * (x[0, k] + (a[i] + x[i, k]))".into(),
        ],
    );
    let klo = ["0", "0", "1"][rng.gen_range(0..3)];
    let op = if rng.gen_bool(0.9) { "*" } else { "+" };
    let mut body = format!(
        "        y[{d0}] = {};\n        for k in {klo}..m {{\n            y[{d1}] += {c} {op} {e};\n        }}\n",
        lit(0)
    );
    for _ in 0..rng.gen_range(1..=3) {
        let w = match rng.gen_range(0..6) {
            0 => "        y[i] = y[i] + a[i] * x[i, 1];\n".to_string(),
            1 => "        y[i] = a[i] + y[i + 1 - 1];\n".to_string(),
            2 => "        y[i] = a[i] + x[i, 0];\n        y[i] += y[i] * a[i];\n".to_string(),
            3 => format!(
                "        y[i] += a[i];\n        y[i] += {} * y[i];\n",
                lit(2)
            ),
            4 => format!("        y[i] = a[i] + y[i + 1] * {};\n", lit(2)),
            _ => "        y[i + 1] = y[i] + (a[i] + x[i, 2]);\n".to_string(),
        };
        body.push_str(&w);
    }
    let src = format!(
        "proc sum{case}(n: size, m: size, a: {t}[n + 3] @ DRAM, x: {t}[n + 3, m + 3] @ DRAM, y: {t}[n + 3] @ DRAM) {{\n\
         for i in 0..n {{\n{body}    }}\n}}\n"
    );
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "sum.weft", &src)
        .unwrap_or_else(|_| panic!("generated sum does not parse:\n{src}"));
    weft_check::check_module(&m).unwrap_or_else(|_| panic!("generated sum does not check:\n{src}"));
    m.procs[0].clone()
}

/// The differences a run found. Each is printed in full (steps, procs, the callees scheduled for
/// `call_eqv`) as it is found; the run goes on with the next case, so that one run shows every
/// bug it reaches, and the test fails at the end with one line per difference.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn add(&mut self, headline: String, s: &Schedule, orig: &Proc, x: &Extras) {
        eprintln!(
            "DIFFERENCE {headline}\nsteps: {:?}\nfixed sizes: {:?}\n--- original\n{}\n--- scheduled\n{}\n{}",
            s.steps(),
            x.fixed,
            weft_ir::print::proc_to_string(orig),
            weft_ir::print::proc_to_string(s.proc()),
            x.report()
        );
        self.0.push(headline);
    }

    fn check(&self) {
        assert!(
            self.0.is_empty(),
            "{} scheduled procs differ from their originals (details above):\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

/// The accepted count of every primitive `random_step` can reach, for the summary line.
type Counts = std::collections::BTreeMap<String, u64>;

/// The first size `(n, m)` of `sizes` where the scheduled proc's interpreter outcome differs
/// from the original's (each on its own random inputs), as `n=.. m=..: what differs`.
fn first_difference(
    orig: &Proc,
    s: &Schedule,
    x: &Extras,
    case: u64,
    sizes: &[(i64, i64)],
) -> Option<String> {
    sizes.iter().enumerate().find_map(|(k, &(n, m))| {
        let at: HashMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)].into();
        compare(orig, s.proc(), &at, &x.fixed, case * 7 + k as u64)
            .err()
            .map(|e| format!("n={n} m={m}: {e}"))
    })
}

fn count(by_primitive: &mut Counts, desc: &str) {
    let prim = desc.split(' ').next().unwrap_or("").to_string();
    *by_primitive.entry(prim).or_default() += 1;
}

/// What the fuzzers of template procs ([`random_nest`], [`random_sum`], [`random_stencil`]) count.
#[derive(Default)]
struct Tally {
    accepted: u64,
    rejected: u64,
    native: u64,
    by_primitive: Counts,
    failures: Failures,
}

/// One case of a fuzzer of template procs: up to `steps` steps, each chosen and applied by `step`
/// (`None`: rejected), on a schedule of `orig`, a proc of the kind `kind` (for the messages); each
/// accepted step compared with the original on the interpreter at `sizes` (`(n, m)`; a difference
/// ends the case), and every 10th case's result against compiled C at the first of them. Returns
/// the descriptions of the accepted steps.
fn template_case(
    kind: &str,
    case: u64,
    orig: &Arc<Proc>,
    steps: usize,
    sizes: &[(i64, i64)],
    t: &mut Tally,
    mut step: impl FnMut(&mut Schedule, &mut Extras) -> Option<String>,
) -> Vec<String> {
    let mut s = Schedule::new(orig.clone());
    s.recheck = true;
    let mut x = Extras::new(&format!("{kind}{case}"), Vec::new());
    let mut differs = false;
    let mut descs = Vec::new();
    for _ in 0..steps {
        let Some(desc) = step(&mut s, &mut x) else {
            t.rejected += 1;
            continue;
        };
        t.accepted += 1;
        count(&mut t.by_primitive, &desc);
        descs.push(desc.clone());
        if let Some(e) = first_difference(orig, &s, &x, case, sizes) {
            let headline = format!("{kind} {case}: step '{desc}' changed the result at {e}");
            t.failures.add(headline, &s, orig, &x);
            differs = true;
            break;
        }
    }
    if case.is_multiple_of(10) && !s.steps().is_empty() && !differs {
        let (n, m) = sizes[0];
        let at: HashMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)].into();
        if let Err(e) = compiled_matches(&[], s.proc(), &at, case) {
            t.failures.add(format!("{kind} {case}: {e}"), &s, orig, &x);
        }
        t.native += 1;
    }
    descs
}

#[test]
fn loop_nest_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x4e57);
    let mut t = Tally::default();
    for case in 0..cases {
        let orig = random_nest(&mut rng, case);
        let sizes = [(5, 4), (1, 1), (2, 7), (3, 1)];
        template_case("nest", case, &orig, 4, &sizes, &mut t, |s, x| {
            random_step(&mut rng, s, x).unwrap_or_else(|e| panic!("{e}"))
        });
    }
    eprintln!(
        "{cases} nests: {} steps accepted, {} rejected, {} compiled-C comparisons; accepted by primitive: {:?}",
        t.accepted, t.rejected, t.native, t.by_primitive
    );
    t.failures.check();
    assert!(t.native > 0);
    assert!(t.accepted > cases / 2 && t.rejected > cases / 2);
}

/// A random stencil for `divide_with_recompute`: a 2-deep nest (starts 0 or 1) whose statements
/// write `A` or `B` from reads at small offsets, mostly of `C`, which nothing writes (the blur
/// shape that tiles with recompute), and now and then of the written buffers, with `+=`, through
/// scratch allocated in the body, or under an `if`: independent or not, idempotent or not. A
/// precondition `n >= k` sometimes lets an outer bound such as `n / 3` cover the loop.
fn random_stencil(rng: &mut StdRng, case: u64) -> Arc<Proc> {
    let off = |rng: &mut StdRng| rng.gen_range(0..3);
    let idx = |rng: &mut StdRng| format!("i + {}, j + {}", off(rng), off(rng));
    let src_buf = |rng: &mut StdRng| ["C", "C", "C", "A", "B"][rng.gen_range(0..5)];
    let mut body = String::new();
    let scratch = rng.gen_bool(0.25);
    if scratch {
        let (r1, r2) = (src_buf(rng), src_buf(rng));
        let (i1, i2) = (idx(rng), idx(rng));
        body.push_str(&format!(
            "            alloc t: i32[2] @ DRAM_STACK;\n            t[0] = {r1}[{i1}];\n            \
             t[1] = {r2}[{i2}] * 2;\n"
        ));
    }
    for _ in 0..rng.gen_range(1..=2) {
        let dst = ["A", "B"][rng.gen_range(0..2)];
        let op = if rng.gen_bool(0.15) { "+=" } else { "=" };
        let (d, s1, s2) = (idx(rng), idx(rng), idx(rng));
        let (r1, r2) = (src_buf(rng), src_buf(rng));
        let extra = if scratch { " + t[0] - t[1]" } else { "" };
        let stmt = format!("{dst}[{d}] {op} {r1}[{s1}] + {r2}[{s2}] * 3{extra};");
        if rng.gen_bool(0.2) {
            body.push_str(&format!(
                "            if i + j > 2 {{\n                {stmt}\n            }}\n"
            ));
        } else {
            body.push_str(&format!("            {stmt}\n"));
        }
    }
    let (ilo, jlo) = (rng.gen_range(0..2), rng.gen_range(0..2));
    let pre = match rng.gen_range(0..3) {
        0 => format!(
            "    assert n >= {} and m >= {};\n",
            rng.gen_range(2..=6),
            rng.gen_range(2..=6)
        ),
        _ => String::new(),
    };
    let src = format!(
        "proc stencil{case}(n: size, m: size, A: i32[n + 3, m + 3] @ DRAM, \
         B: i32[n + 3, m + 3] @ DRAM, C: i32[n + 3, m + 3] @ DRAM) {{\n{pre}\
         for i in {ilo}..n {{\n        for j in {jlo}..m {{\n{body}        }}\n    }}\n}}\n"
    );
    parse_proc(&src)
}

/// `divide_with_recompute` on [`random_stencil`]s, with random strides and outer bounds (right
/// ones and wrong ones), sometimes after `specialize` on the trip count, and now and then another
/// random step before or after: every accepted step compared with the original on the
/// interpreter at sizes where tiles of 1 to 3 overlap and where they do not (and where the loops
/// run once or not at all), every 10th result against compiled C. Steps whose tiles may overlap
/// must be accepted in a default run, and wrong outer bounds rejected.
#[test]
fn recompute_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xd17e);
    let mut t = Tally::default();
    let (mut divided, mut overlapping, mut refused) = (0u64, 0u64, 0u64);
    let sizes = [(7, 9), (1, 1), (2, 3), (5, 4), (8, 6), (3, 11), (12, 13)];
    for case in 0..cases {
        let orig = random_stencil(&mut rng, case);
        let descs = template_case("stencil", case, &orig, 3, &sizes, &mut t, |s, x| {
            if x.pending.is_some() || rng.gen_bool(0.3) {
                return random_step(&mut rng, s, x).unwrap_or_else(|e| panic!("{e}"));
            }
            let p = s.proc().clone();
            let stmts = find::all_stmts(&p);
            let d = buffer_loop_step(&mut rng, s, "divide_with_recompute", &p, &stmts);
            refused += d.is_none() as u64;
            d
        });
        for d in descs
            .iter()
            .filter(|d| d.starts_with("divide_with_recompute"))
        {
            divided += 1;
            overlapping += d.ends_with("tiles may overlap") as u64;
        }
    }
    eprintln!(
        "{cases} stencils: {} steps accepted ({divided} divide_with_recompute, {overlapping} of \
         them with tiles that may overlap), {} rejected ({refused} divide_with_recompute), {} \
         compiled-C comparisons; accepted by primitive: {:?}",
        t.accepted, t.rejected, t.native, t.by_primitive
    );
    t.failures.check();
    assert!(t.native > 0);
    if cases >= 250 {
        assert!(
            overlapping > cases / 20 && refused > cases / 2,
            "too few overlapping divisions accepted ({overlapping}) or refused ({refused})"
        );
    }
}

/// Random schedules of [`random_sum`] procs: mostly the expression primitives, now and then
/// another random step, every accepted step compared against the original on the interpreter
/// (integers exactly, floats up to the reassociation these primitives document), and every 10th
/// result against compiled C. Each expression primitive must be accepted in a default run.
#[test]
fn expression_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xe4e5);
    let mut t = Tally::default();
    for case in 0..cases {
        let orig = random_sum(&mut rng, case);
        let sizes = [(3, 4), (1, 1), (2, 5), (4, 2)];
        template_case("sum", case, &orig, 6, &sizes, &mut t, |s, x| {
            if x.pending.is_some() || rng.gen_bool(0.15) {
                random_step(&mut rng, s, x).unwrap_or_else(|e| panic!("{e}"))
            } else {
                let prim = EXPR_PRIMITIVES[rng.gen_range(0..EXPR_PRIMITIVES.len())];
                expr_step(&mut rng, s, x, prim)
            }
        });
    }
    eprintln!(
        "{cases} sums: {} steps accepted, {} rejected, {} compiled-C comparisons; accepted by primitive: {:?}",
        t.accepted, t.rejected, t.native, t.by_primitive
    );
    t.failures.check();
    assert!(t.accepted > cases && t.rejected > cases / 2);
    if cases >= 250 {
        let starved: Vec<&str> = EXPR_PRIMITIVES
            .iter()
            .copied()
            .filter(|p| !t.by_primitive.contains_key(*p))
            .collect();
        assert!(
            starved.is_empty(),
            "no step of these primitives was accepted: {starved:?}"
        );
    }
}

#[test]
fn accepted_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let steps = env_num("WEFT_SCHED_STEPS", 20);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let dram = weft_syntax::std_memory("DRAM").expect("prelude DRAM");
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut accepted, mut attempted, mut compared, mut native) = (0u64, 0u64, 0u64, 0u64);
    let mut skipped = 0u64;
    let mut by_primitive = Counts::new();
    let mut failures = Failures::default();
    for case in 0..cases {
        let g = random_proc_named(&mut rng, &dram, &format!("p{case}"));
        let orig: Arc<Proc> = g.proc.clone();
        let mut s = Schedule::new(orig.clone());
        s.recheck = true;
        let mut x = Extras::new(&format!("p{case}"), g.helper_procs.clone());
        let mut size_sets = vec![
            g.sizes.clone(),
            g.sizes.keys().map(|k| (k.clone(), 1)).collect(),
        ];
        size_sets.push(random_sizes(&mut rng, &g));
        // A few generated procs do millions of steps at their sizes (nested loops around calls of
        // helpers with loops); the interpreter would take seconds per run. Run those smaller.
        for sizes in &mut size_sets {
            while work(&orig, sizes) > MAX_WORK {
                let Some((k, v)) = sizes.iter().max_by_key(|(k, v)| (**v, (*k).clone())) else {
                    break;
                };
                if *v <= 1 {
                    break;
                }
                let (k, v) = (k.clone(), *v);
                sizes.insert(k, v - 1);
            }
        }
        let mut differs = false;
        'steps: for _ in 0..steps {
            attempted += 1;
            let step = random_step(&mut rng, &mut s, &mut x);
            let Some(desc) = step.unwrap_or_else(|e| panic!("{e}")) else {
                continue;
            };
            accepted += 1;
            count(&mut by_primitive, &desc);
            // A step may multiply the work (`add_loop`, `stage_mem` of a whole buffer in a loop,
            // `partial_eval` of a size to more than its value); sizes where the scheduled proc
            // would run too long are left out, and a case with none left ends.
            let mut runnable = 0;
            for (k, sizes) in size_sets.iter().enumerate() {
                if !affordable(s.proc(), sizes, &x.fixed) {
                    skipped += 1;
                    continue;
                }
                runnable += 1;
                compared += 1;
                if let Err(e) = compare(&orig, s.proc(), sizes, &x.fixed, case * 31 + k as u64) {
                    let headline = format!(
                        "case {case}: step '{desc}' changed the result at sizes {sizes:?}: {e}"
                    );
                    failures.add(headline, &s, &orig, &x);
                    differs = true;
                    break 'steps;
                }
            }
            if runnable == 0 {
                break;
            }
        }
        // Every 5th scheduled proc also goes through the C backend: compiled, run natively and
        // compared with the interpreter bit for bit (which the steps above tied to the original).
        if case % 5 == 0 && !s.steps().is_empty() && !differs {
            for sizes in size_sets[..2]
                .iter()
                .filter(|z| affordable(s.proc(), z, &x.fixed))
            {
                match compiled_matches(&g.helper_procs, s.proc(), sizes, case) {
                    Ok(compared) => native += compared as u64,
                    Err(e) => failures.add(format!("case {case}: {e}"), &s, &orig, &x),
                }
            }
        }
    }
    eprintln!(
        "{cases} procs: {attempted} steps attempted, {accepted} accepted, {compared} comparisons ({skipped} left out as too long to run), {native} compiled-C comparisons; accepted by primitive: {by_primitive:?}"
    );
    failures.check();
    assert!(native > 0, "no scheduled proc was compared in C");
    assert!(
        accepted > cases,
        "too few accepted steps ({accepted}) for the test to mean anything"
    );
    // A default-sized run reaches every primitive (a generator change, or a primitive grown
    // stricter, that starves one shows here).
    if cases >= 250 {
        let starved: Vec<&str> = NEW_PRIMITIVES
            .iter()
            .copied()
            .filter(|p| !by_primitive.contains_key(*p))
            .collect();
        assert!(
            starved.is_empty(),
            "no step of these primitives was accepted: {starved:?}"
        );
    }
}

/// Parse and check one proc.
fn parse_proc(src: &str) -> Arc<Proc> {
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "repro.weft", src)
        .unwrap_or_else(|_| panic!("does not parse:\n{src}"));
    weft_check::check_module(&m).unwrap_or_else(|_| panic!("does not check:\n{src}"));
    m.procs[0].clone()
}

/// Found by `accepted_schedules_preserve_results` (case 200 of the default run): `stage_mem`
/// checks that the block uses the staged buffer in no window, but not that the block uses no
/// window of it bound *before* the block. Writes through that window go to the buffer itself,
/// and the copy-out then overwrites them with the staged copy's stale cells.
#[test]
fn stage_mem_misses_a_window_bound_before_the_block() {
    let orig = parse_proc(
        "proc f(A: i32[2] @ DRAM) {\n    let w = A[0:2];\n    w[0] = 7;\n    A[1] = 1;\n}\n",
    );
    let mut s = Schedule::new(orig.clone());
    s.recheck = true;
    let c = s.find("w =").expect("the write through w");
    let region = [(Expr::int(0), Expr::int(2))];
    if s.stage_mem(&c, 2, "A", &region, "T", stack_memory())
        .is_err()
    {
        return; // rejected: sound
    }
    let r = compare(&orig, s.proc(), &HashMap::new(), &HashMap::new(), 1);
    assert!(
        r.is_ok(),
        "stage_mem was accepted and changed the result: {r:?}\n{}",
        weft_ir::print::proc_to_string(s.proc())
    );
}

/// A random nest whose statements read config fields where the original may never evaluate
/// them: under an `if` whose condition is false for small sizes, in loops that run zero times
/// for `n = 1` or `m = 1` (an `if G.flag`, loop bounds `max(G.k, 0)`, an allocation of
/// `max(G.k, 1)` cells on the heap). The config is never written, so reading a field is an
/// error: a step that makes the program evaluate one where the original did not changes the
/// interpreter's outcome, which `compare` reports (the class of lift_scope, lift_if and lift_alloc
/// holes a review found).
fn random_guarded(rng: &mut StdRng, case: u64) -> Arc<Proc> {
    let mut body = String::new();
    for k in 0..rng.gen_range(1..=3) {
        let c = rng.gen_range(1..5);
        body.push_str(match rng.gen_range(0..5) {
            0 => "            if n > C {\n                if G.flag {\n                    A[i, j] += 1;\n                }\n            }\n",
            1 => "            if n > C {\n                for k in 0..max(G.k, 0) {\n                    A[i, j] += 1;\n                }\n            }\n",
            2 => "            if G.flag {\n                A[i, j] = A[i, j] * 2;\n            }\n",
            3 => "            alloc t: i32[max(G.k, 1)] @ DRAM;\n            t[0] = A[i, j];\n            A[i, j] = t[0] + 1;\n            free t;\n",
            _ => "            A[i, j] = A[i, j] + 3;\n",
        }
        .replace(" C ", &format!(" {c} "))
        .replace("t[0]", &format!("t{k}[0]"))
        .replace("alloc t:", &format!("alloc t{k}:"))
        .replace("free t;", &format!("free t{k};"))
        .replace("for k in", &format!("for k{k} in"))
        .as_str());
    }
    let src = format!(
        "config G {{ flag: bool, k: index }}\n\
         proc guarded{case}(n: size, m: size, A: i32[n + 3, m + 3] @ DRAM) {{\n    \
         for i in 0..n - 1 {{\n        for j in 0..m - 1 {{\n{body}        }}\n    }}\n}}\n"
    );
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "guarded.weft", &src)
        .unwrap_or_else(|_| panic!("generated proc does not parse:\n{src}"));
    weft_check::check_module(&m)
        .unwrap_or_else(|d| panic!("generated proc does not check:\n{src}\n{d:?}"));
    m.procs[0].clone()
}

/// Random schedules of [`random_guarded`] procs: the steps that move a condition, a loop's bounds
/// or an allocation out of where it was evaluated (`lift_scope`, `lift_if`, `lift_alloc`, at
/// random statements), among random steps of every kind; each accepted step must leave the
/// interpreter's outcome (an error where a config field is read, or the results) as it was, at
/// sizes where loops run zero times and conditions are false.
#[test]
fn schedules_evaluate_config_fields_only_where_the_original_did() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xc0f6);
    let (mut accepted, mut rejected) = (0u64, 0u64);
    let mut by_primitive = Counts::new();
    let mut failures = Failures::default();
    for case in 0..cases {
        let orig = random_guarded(&mut rng, case);
        let mut s = Schedule::new(orig.clone());
        s.recheck = true;
        let mut x = Extras::new(&format!("guarded{case}"), Vec::new());
        'steps: for _ in 0..4 {
            let step = if rng.gen_bool(0.7) {
                let p = s.proc().clone();
                let stmts = find::all_stmts(&p);
                let prim = ["lift_scope", "lift_if", "lift_alloc"][rng.gen_range(0..3)];
                let wanted = |_: &Path, st: &Stmt| match prim {
                    "lift_alloc" => matches!(st.kind, StmtKind::Alloc { .. }),
                    "lift_if" => matches!(st.kind, StmtKind::For { .. }),
                    _ => matches!(st.kind, StmtKind::For { .. } | StmtKind::If { .. }),
                };
                pick(&mut rng, &stmts, wanted).and_then(|(path, _)| {
                    let c = s.cursor(path.clone());
                    let r = match prim {
                        "lift_scope" => s.lift_scope(&c),
                        "lift_if" => s.lift_if(&c),
                        _ => s.lift_alloc(&c),
                    };
                    r.ok().map(|_| format!("{prim} at {path}"))
                })
            } else {
                random_step(&mut rng, &mut s, &mut x).unwrap_or_else(|e| panic!("{e}"))
            };
            let Some(desc) = step else {
                rejected += 1;
                continue;
            };
            accepted += 1;
            count(&mut by_primitive, &desc);
            if let Some(e) = first_difference(
                &orig,
                &s,
                &x,
                case,
                &[(1, 1), (1, 4), (4, 1), (2, 2), (6, 3)],
            ) {
                let headline = format!("guarded {case}: step '{desc}' changed the outcome at {e}");
                failures.add(headline, &s, &orig, &x);
                break 'steps;
            }
        }
    }
    eprintln!(
        "{cases} guarded procs: {accepted} steps accepted, {rejected} rejected; accepted by primitive: {by_primitive:?}"
    );
    failures.check();
    assert!(accepted > cases / 2 && rejected > cases / 2);
    for prim in ["lift_scope", "lift_if", "lift_alloc"] {
        assert!(
            by_primitive.contains_key(prim),
            "no {prim} step was accepted: {by_primitive:?}"
        );
    }
}

/// A random nest that works through windows: a row window of `A` (`let w = A[i + a, b:b + m]`),
/// sometimes a window of it, accesses through both, and calls that pass one to a proc of window
/// parameters (`add1`). Returns the nest, `add1`, and `add2` (two calls of `add1` on its window,
/// a callee that calls a proc).
fn random_windowed(rng: &mut StdRng, case: u64) -> (Arc<Proc>, Arc<Proc>, Arc<Proc>) {
    let (a, b) = (rng.gen_range(0..3), rng.gen_range(0..3));
    let nested = rng.gen_bool(0.5);
    let mut body = format!("        let w = A[i + {a}, {b}:{b} + m];\n");
    if nested {
        body.push_str("        let v = w[1:m];\n");
    }
    for _ in 0..rng.gen_range(1..=3) {
        let k = rng.gen_range(1..5);
        body.push_str(&match rng.gen_range(0..5) {
            0 => {
                format!("        for j in 0..m {{\n            B[i, j] = w[j] + {k};\n        }}\n")
            }
            1 => format!(
                "        for j in 0..m {{\n            w[j] += B[i, j] * {k};\n        }}\n"
            ),
            2 => "        add1(m, w[0:m]);\n".to_string(),
            3 if nested => format!(
                "        for j in 0..m - 1 {{\n            B[i, j] = v[j] * {k};\n        }}\n"
            ),
            3 => "        for j in 0..m {\n            w[j] = w[j] + 1;\n        }\n".to_string(),
            _ if nested => "        add1(m - 1, v[0:m - 1]);\n".to_string(),
            _ => "        B[i, 0] = w[m - 1];\n".to_string(),
        });
    }
    let src = format!(
        "proc add1(n: size, x: [i32][n] @ DRAM) {{\n    for t in 0..n {{\n        x[t] = x[t] + 1;\n    }}\n}}\n\
         proc add2(n: size, x: [i32][n] @ DRAM) {{\n    add1(n, x[0:n]);\n    add1(n, x[0:n]);\n}}\n\
         proc windowed{case}(n: size, m: size, A: i32[n + 3, m + 3] @ DRAM, B: i32[n + 3, m + 3] @ DRAM) {{\n    \
         assert m >= 2;\n    for i in 0..n {{\n{body}    }}\n}}\n"
    );
    let module = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "win.weft", &src)
        .unwrap_or_else(|_| panic!("generated proc does not parse:\n{src}"));
    weft_check::check_module(&module)
        .unwrap_or_else(|d| panic!("generated proc does not check:\n{src}\n{d:?}"));
    (
        module.procs[2].clone(),
        module.procs[0].clone(),
        module.procs[1].clone(),
    )
}

/// Random schedules of [`random_windowed`] procs: `inline_window` at random window statements,
/// `replace_all` of the window proc `add1` (which matches the loops that add one through a
/// window) and of `add2` (which matches two calls of `add1` on one window), among random steps; each accepted step must keep the interpreter's results, and
/// now and then the compiled C must match the interpreter.
#[test]
fn window_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x3177);
    let (mut accepted, mut rejected, mut native) = (0u64, 0u64, 0u64);
    let mut by_primitive = Counts::new();
    let mut failures = Failures::default();
    for case in 0..cases {
        let (orig, add1, add2) = random_windowed(&mut rng, case);
        let mut s = Schedule::new(orig.clone());
        s.recheck = true;
        let mut x = Extras::new(&format!("windowed{case}"), vec![add1.clone(), add2.clone()]);
        let mut differs = false;
        'steps: for _ in 0..4 {
            let step = match rng.gen_range(0..10) {
                0..=4 => {
                    let p = s.proc().clone();
                    let stmts = find::all_stmts(&p);
                    pick(&mut rng, &stmts, |_, st| {
                        matches!(st.kind, StmtKind::Window { .. })
                    })
                    .and_then(|(path, _)| {
                        s.inline_window(&s.cursor(path.clone()))
                            .ok()
                            .map(|_| format!("inline_window at {path}"))
                    })
                }
                5 => s
                    .replace_all(&add1)
                    .ok()
                    .map(|n| format!("replace_all(add1) x{n}")),
                6 => s
                    .replace_all(&add2)
                    .ok()
                    .map(|n| format!("replace_all(add2) x{n}")),
                _ => random_step(&mut rng, &mut s, &mut x).unwrap_or_else(|e| panic!("{e}")),
            };
            let Some(desc) = step else {
                rejected += 1;
                continue;
            };
            accepted += 1;
            count(&mut by_primitive, &desc);
            if let Some(e) = first_difference(&orig, &s, &x, case, &[(1, 2), (3, 4), (2, 7)]) {
                let headline = format!("windowed {case}: step '{desc}' changed the result at {e}");
                failures.add(headline, &s, &orig, &x);
                differs = true;
                break 'steps;
            }
        }
        if case % 10 == 0 && !s.steps().is_empty() && !differs {
            let sizes: HashMap<String, i64> = [("n".to_string(), 3), ("m".to_string(), 4)].into();
            if let Err(e) = compiled_matches(&[add1.clone(), add2.clone()], s.proc(), &sizes, case)
            {
                failures.add(format!("windowed {case}: {e}"), &s, &orig, &x);
            }
            native += 1;
        }
    }
    eprintln!(
        "{cases} windowed procs: {accepted} steps accepted, {rejected} rejected, {native} compiled-C comparisons; accepted by primitive: {by_primitive:?}"
    );
    failures.check();
    for prim in ["inline_window", "replace_all(add1)", "replace_all(add2)"] {
        assert!(
            by_primitive.contains_key(prim),
            "no {prim} step was accepted: {by_primitive:?}"
        );
    }
}
