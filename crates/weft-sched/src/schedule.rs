//! The Rust scheduling API: a proc being scheduled, every version it went through, and cursors
//! that keep pointing at the same statement as the proc is rewritten.

use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path};
use crate::prims::stage_mem::Staging;
use crate::prims::{self, split::Tail, Rewrite};
use std::sync::Arc;
use weft_check::smt::SolverStats;
use weft_ir::{Expr, Proc, Stmt};

/// A handle to a statement of one version of a scheduled proc. Using it on a later version
/// forwards it through the rewrites in between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub version: usize,
    pub path: Path,
}

/// A proc under scheduling.
///
/// ```
/// # let src = "proc add1(n: size, x: f32[n] @ DRAM) {\n  for i in 0..n {\n    x[i] = x[i] + 1.0;\n  }\n}\n";
/// # let module = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "a.weft", src).unwrap();
/// use weft_sched::{Schedule, Tail};
/// let mut s = Schedule::new(module.procs[0].clone());
/// let i = s.find("for i").unwrap();
/// s.split(&i, 8, "io", "ii", Tail::Guard).unwrap();
/// // The cursor taken before the split now designates the outer loop.
/// let text = weft_ir::print::stmt_to_string(s.stmt(&i).unwrap());
/// assert_eq!(text.lines().next().unwrap().trim(), "for io in 0..(n + 7) / 8 {");
/// ```
pub struct Schedule {
    versions: Vec<Arc<Proc>>,
    forwards: Vec<Forward>,
    steps: Vec<String>,
    analysis: Analysis,
    /// Procs for the module: those `extract_proc` created and versions kept by
    /// [`Schedule::keep_current`], in order.
    extracted: Vec<Arc<Proc>>,
    /// Proves the control-arithmetic rules (no overflow, entry ranges, `lo <= hi`) of every new
    /// version; its solver's answers are cached across steps.
    control: weft_check::Checker,
    /// Re-run the checker on every new version (a safety net for tests; off by default).
    pub recheck: bool,
}

impl Schedule {
    pub fn new(p: Arc<Proc>) -> Schedule {
        Schedule {
            versions: vec![p],
            forwards: Vec::new(),
            steps: Vec::new(),
            analysis: Analysis::new(),
            extracted: Vec::new(),
            control: weft_check::Checker::new(),
            recheck: false,
        }
    }

    /// The current proc.
    pub fn proc(&self) -> &Arc<Proc> {
        self.versions.last().expect("at least the original")
    }

    /// The proc as it was after `k` steps (0: the original).
    pub fn version(&self, k: usize) -> Option<&Arc<Proc>> {
        self.versions.get(k)
    }

    /// A description of each accepted step, in order.
    pub fn steps(&self) -> &[String] {
        &self.steps
    }

    pub fn solver_stats(&self) -> SolverStats {
        self.analysis.stats()
    }

    fn current(&self) -> usize {
        self.versions.len() - 1
    }

    /// A cursor on the current version.
    pub fn cursor(&self, path: Path) -> Cursor {
        Cursor {
            version: self.current(),
            path,
        }
    }

    /// The statement a pattern designates (see [`crate::find`]).
    pub fn find(&self, pattern: &str) -> Result<Cursor, SchedError> {
        crate::find::find(self.proc(), pattern)
            .map(|p| self.cursor(p))
            .map_err(|m| SchedError::new("find", m))
    }

    /// The cursor's path in the current version, if its statement still exists.
    pub fn resolve(&self, c: &Cursor) -> Option<Path> {
        let mut p = c.path.clone();
        for f in self.forwards.get(c.version..)? {
            p = f.apply(&p)?;
        }
        Some(p)
    }

    /// The statement under a cursor, in the current version.
    pub fn stmt(&self, c: &Cursor) -> Option<&Stmt> {
        path::get(self.proc(), &self.resolve(c)?)
    }

    /// The enclosing statement.
    pub fn parent(&self, c: &Cursor) -> Option<Cursor> {
        Some(self.cursor(self.resolve(c)?.parent()?))
    }

    /// The `index`-th statement of the statement's child block `block` (a loop body is block 0).
    pub fn body(&self, c: &Cursor, block: usize, index: usize) -> Option<Cursor> {
        let p = self.resolve(c)?.child(block, index);
        path::get(self.proc(), &p).map(|_| self.cursor(p))
    }

    pub fn next(&self, c: &Cursor) -> Option<Cursor> {
        let p = self.resolve(c)?;
        let q = p.sibling(p.last().index + 1);
        path::get(self.proc(), &q).map(|_| self.cursor(q))
    }

    pub fn prev(&self, c: &Cursor) -> Option<Cursor> {
        let p = self.resolve(c)?;
        let i = p.last().index.checked_sub(1)?;
        Some(self.cursor(p.sibling(i)))
    }

    fn at(&self, prim: &'static str, c: &Cursor) -> Result<Path, SchedError> {
        self.resolve(c).ok_or_else(|| {
            SchedError::new(
                prim,
                "the cursor's statement no longer exists in the current proc",
            )
        })
    }

    /// Run one primitive on the current version and record the result.
    fn apply(
        &mut self,
        prim: &'static str,
        c: &Cursor,
        step: String,
        f: impl FnOnce(&mut Analysis, &Proc, &Path) -> Result<Rewrite, SchedError>,
    ) -> Result<Cursor, SchedError> {
        self.apply_polluting(prim, c, step, |a, p, at| Ok((f(a, p, at)?, Vec::new())))
    }

    /// [`Schedule::apply`] for a primitive whose result is an equivalence only modulo the config
    /// fields it returns (Exo's `≅_L`): they join the new version's provenance record.
    fn apply_polluting(
        &mut self,
        prim: &'static str,
        c: &Cursor,
        step: String,
        f: impl FnOnce(&mut Analysis, &Proc, &Path) -> Result<(Rewrite, Vec<Field>), SchedError>,
    ) -> Result<Cursor, SchedError> {
        let at = self.at(prim, c)?;
        let p = self.proc().clone();
        self.analysis.new_budget();
        let (r, polluted) = f(&mut self.analysis, &p, &at)?;
        // Control arithmetic is 64-bit: a rewrite may copy a bound or a constant into a place
        // where it overflows (a shift by 2^63 - 1, a guard `n + 2^63 - 1 > 0`), or make a loop
        // run backwards. Those are not the original's meaning; refuse them with the checker's
        // counterexample.
        // (Other rules wait for the end: a step may leave an argument in another memory for a
        // later `set_memory`.)
        // Only the statement the step changed is proved (see `changed`), where there is one.
        let changed = crate::changed::changed_stmt(&p, &r.proc);
        let control = match changed {
            Some(s) => self.control.check_control_at(&r.proc, s),
            None => self.control.check_control(&r.proc),
        };
        let mut control = control.into_iter();
        if let Some(d) = control.find(|d| matches!(d.rule, "overflow" | "range" | "extent")) {
            return Err(SchedError::new(
                prim,
                format!(
                    "the result breaks the control-arithmetic rules: {}",
                    d.message
                ),
            )
            .at(d.span, format!("[{}]", d.rule))
            .with_checker_counterexample(&d));
        }
        // A step may change the body or the context of a loop that is already parallel; every
        // parallel loop it may have changed must still be race-free.
        match changed {
            Some(s) => {
                prims::parallelize::check_parallel_loops_near(&mut self.analysis, &r.proc, s, prim)?
            }
            None => prims::parallelize::check_parallel_loops(&mut self.analysis, &r.proc, prim)?,
        }
        if self.recheck {
            if let Err(ds) = weft_check::check_proc(&r.proc) {
                let msg = ds
                    .iter()
                    .map(|d| d.message.clone())
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(SchedError::new(
                    prim,
                    format!("internal error: the rewritten proc does not check: {msg}"),
                ));
            }
        }
        let new = derived(prim, &p, r.proc, polluted);
        // An instruction's C template implements its body as written: its body may be rewritten
        // only by exact equivalences, or compiled code and the interpreter would disagree.
        if p.is_instr() && new.origin.as_ref().is_none_or(|o| !o.polluted.is_empty()) {
            return Err(SchedError::new(
                prim,
                format!(
                    "'{}' is an instruction: its C template implements its body as written, so \
                     only steps that keep its meaning exactly (and its signature) apply to it",
                    p.name
                ),
            ));
        }
        let new_path = r.forward.apply(&at);
        self.versions.push(new);
        self.forwards.push(r.forward);
        self.steps.push(step);
        Ok(self.cursor(new_path.unwrap_or(at)))
    }

    /// See [`prims::split`]. Returns a cursor on the outer loop.
    pub fn split(
        &mut self,
        c: &Cursor,
        factor: i64,
        outer: &str,
        inner: &str,
        tail: Tail,
    ) -> Result<Cursor, SchedError> {
        let step = format!("split({factor}, {outer}, {inner}, {})", tail.name());
        self.apply("split", c, step, |a, p, at| {
            prims::split::split(a, p, at, factor, outer, inner, tail)
        })
    }

    /// See [`prims::reorder_loops`]. Returns a cursor on the new outer loop.
    pub fn reorder_loops(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("reorder_loops", c, "reorder_loops".into(), |a, p, at| {
            prims::reorder_loops::reorder_loops(a, p, at)
        })
    }

    /// See [`prims::reorder_stmts`].
    pub fn reorder_stmts(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("reorder_stmts", c, "reorder_stmts".into(), |a, p, at| {
            prims::reorder_stmts::reorder_stmts(a, p, at)
        })
    }

    /// See [`prims::fission`]: split the enclosing loop (or `if`) after the statement under `c`.
    pub fn fission(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("fission", c, "fission".into(), |a, p, at| {
            prims::fission::fission(a, p, at)
        })
    }

    /// [`Schedule::fission`] with a lift count: `lifts` levels, each splitting the parent of the
    /// first part the level below made (Exo's `n_lifts`). Each level is a step of its own.
    /// Returns a cursor on the outermost first part.
    pub fn fission_lifts(&mut self, c: &Cursor, lifts: usize) -> Result<Cursor, SchedError> {
        let mut cur = c.clone();
        for _ in 0..lifts.max(1) {
            let r = self.fission(&cur)?;
            cur = self
                .parent(&r)
                .ok_or_else(|| SchedError::new("fission", "the split has no parent"))?;
        }
        Ok(cur)
    }

    /// See [`prims::add_loop`]: wrap the statement in `for name in 0..hi`. Returns a cursor on
    /// the new loop.
    pub fn add_loop(&mut self, c: &Cursor, name: &str, hi: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("add_loop({name}, {hi})");
        let r = self.apply("add_loop", c, step, |a, p, at| {
            prims::add_loop::add_loop(a, p, at, name, hi)
        })?;
        // The returned cursor follows the statement into the loop; its parent is the loop.
        Ok(self.parent(&r).unwrap_or(r))
    }

    /// See [`prims::eliminate_dead_code`]: drop a loop that never runs or the branch of an `if`
    /// that is never taken.
    pub fn eliminate_dead_code(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply(
            "eliminate_dead_code",
            c,
            "eliminate_dead_code".into(),
            prims::eliminate_dead_code::eliminate_dead_code,
        )
    }

    /// See [`prims::parallelize`]: mark the loop parallel, proved race-free.
    pub fn parallelize(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("parallelize", c, "parallelize".into(), |a, p, at| {
            prims::parallelize::parallelize(a, p, at)
        })
    }

    /// See [`prims::replace`]: the block of `callee.body.len()` statements at `c` becomes a call
    /// of `callee`, its arguments inferred. Returns a cursor on the call.
    pub fn replace(&mut self, c: &Cursor, callee: &Arc<Proc>) -> Result<Cursor, SchedError> {
        let step = format!("replace({})", callee.name);
        self.apply("replace", c, step, |a, p, at| {
            prims::replace::replace(a, p, at, callee)
        })
    }

    /// Exo's `replace_all`: [`Schedule::replace`] at every statement, in program order, where
    /// the block there unifies with `callee`'s body and the call checks; each replacement is a
    /// step of its own, proved as `replace` proves it, and a statement where it is refused is
    /// left as it is. Returns how many blocks were replaced; none is an error.
    pub fn replace_all(&mut self, callee: &Arc<Proc>) -> Result<usize, SchedError> {
        let mut replaced = 0;
        let mut k = 0;
        loop {
            // The statements of the current version in program order (a replaced block is one
            // call from then on, so the walk goes on after it).
            let at = crate::find::all_stmts(self.proc())
                .into_iter()
                .nth(k)
                .map(|(at, _)| at);
            let Some(at) = at else { break };
            let c = self.cursor(at);
            if self.replace(&c, callee).is_ok() {
                replaced += 1;
            }
            k += 1;
        }
        if replaced == 0 {
            return Err(SchedError::new(
                "replace_all",
                format!(
                    "no block of proc '{}' unifies with the body of '{}' where its call checks",
                    self.proc().name,
                    callee.name
                ),
            ));
        }
        Ok(replaced)
    }

    /// See [`prims::insert_call`]: a call of `callee` (whose body is `pass`) on `window` before
    /// the statement at `c`.
    pub fn insert_call(
        &mut self,
        c: &Cursor,
        callee: &Arc<Proc>,
        window: &Expr,
    ) -> Result<Cursor, SchedError> {
        let step = format!(
            "insert_call({}, {})",
            callee.name,
            weft_ir::print::expr_to_string(window)
        );
        self.apply("insert_call", c, step, |a, p, at| {
            prims::insert_call::insert_call(a, p, at, callee, window)
        })
    }

    /// See [`prims::fuse`].
    pub fn fuse(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("fuse", c, "fuse".into(), |a, p, at| {
            prims::fuse::fuse(a, p, at)
        })
    }

    /// See [`prims::remove_loop`].
    pub fn remove_loop(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("remove_loop", c, "remove_loop".into(), |a, p, at| {
            prims::remove_loop::remove_loop(a, p, at)
        })
    }

    /// See [`prims::unroll`].
    pub fn unroll(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("unroll", c, "unroll".into(), |a, p, at| {
            prims::unroll::unroll(a, p, at)
        })
    }

    /// See [`prims::cut`].
    pub fn cut(&mut self, c: &Cursor, point: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("cut({point})");
        self.apply("cut", c, step, |a, p, at| prims::cut::cut(a, p, at, point))
    }

    /// See [`prims::stage_mem`]: stage `region` of `buf` into a new buffer `name` in `mem` around
    /// `len` statements starting at `c`. Returns a cursor on the first staged statement.
    #[allow(clippy::too_many_arguments)]
    pub fn stage_mem(
        &mut self,
        c: &Cursor,
        len: usize,
        buf: &str,
        region: &[(Expr, Expr)],
        name: &str,
        mem: Arc<weft_ir::Memory>,
    ) -> Result<Cursor, SchedError> {
        self.stage_mem_as(c, len, buf, region, name, mem, Staging::Copy)
    }

    /// [`Schedule::stage_mem`] in accumulate mode (Exo's `accum=True`): the statements only
    /// reduce into the region; the tile starts at zero and is added to the buffer after them.
    #[allow(clippy::too_many_arguments)]
    pub fn stage_mem_accumulate(
        &mut self,
        c: &Cursor,
        len: usize,
        buf: &str,
        region: &[(Expr, Expr)],
        name: &str,
        mem: Arc<weft_ir::Memory>,
    ) -> Result<Cursor, SchedError> {
        self.stage_mem_as(c, len, buf, region, name, mem, Staging::Accumulate)
    }

    #[allow(clippy::too_many_arguments)]
    fn stage_mem_as(
        &mut self,
        c: &Cursor,
        len: usize,
        buf: &str,
        region: &[(Expr, Expr)],
        name: &str,
        mem: Arc<weft_ir::Memory>,
        mode: Staging,
    ) -> Result<Cursor, SchedError> {
        let step = match mode {
            Staging::Copy => format!("stage_mem({buf}, {name})"),
            Staging::Accumulate => format!("stage_mem({buf}, {name}, accumulate)"),
        };
        self.apply("stage_mem", c, step, |a, p, at| {
            prims::stage_mem::stage_mem(a, p, at, len, buf, region, name, mem, mode)
        })
    }

    /// The memory [`Schedule::stage_mem`] should use when none is named: `small` when a tile of
    /// the region is proved to fit its capacity at `c`, otherwise `large`
    /// ([`prims::stage_mem::default_memory`]).
    pub fn stage_mem_default_memory(
        &mut self,
        c: &Cursor,
        buf: &str,
        region: &[(Expr, Expr)],
        small: Arc<weft_ir::Memory>,
        large: Arc<weft_ir::Memory>,
    ) -> Result<Arc<weft_ir::Memory>, SchedError> {
        let at = self.at("stage_mem", c)?;
        let p = self.proc().clone();
        Ok(prims::stage_mem::default_memory(
            &mut self.analysis,
            &p,
            &at,
            buf,
            region,
            small,
            large,
        ))
    }

    /// See [`prims::simplify`].
    pub fn simplify(&mut self) -> Result<(), SchedError> {
        let root = self.cursor(Path::top(0));
        self.apply("simplify", &root, "simplify".into(), |_, p, _| {
            Ok(prims::simplify::simplify(p))
        })
        .map(|_| ())
    }

    /// See [`prims::shift`].
    pub fn shift(&mut self, c: &Cursor, start: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("shift({start})");
        self.apply("shift", c, step, |a, p, at| {
            prims::shift::shift(a, p, at, start)
        })
    }

    /// See [`prims::add_guard`]: wrap the statement in `if cond`, proved true there. Returns a
    /// cursor on the new `if`.
    pub fn add_guard(&mut self, c: &Cursor, cond: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("add_guard({cond})");
        self.apply("add_guard", c, step, |a, p, at| {
            prims::add_guard::add_guard(a, p, at, cond)
        })
    }

    /// See [`prims::lift_if`]. Returns a cursor on the lifted `if`.
    pub fn lift_if(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("lift_if", c, "lift_if".into(), |a, p, at| {
            prims::lift_if::lift_if(a, p, at)
        })
    }

    /// See [`prims::specialize`]. Returns a cursor on the new `if`.
    pub fn specialize(&mut self, c: &Cursor, cond: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("specialize({cond})");
        self.apply("specialize", c, step, |a, p, at| {
            prims::specialize::specialize(a, p, at, cond)
        })
    }

    /// See [`prims::insert_pass`]: `pass` before the statement at `c`. Returns a cursor on that
    /// statement, one below the `pass`.
    pub fn insert_pass(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("insert_pass", c, "insert_pass".into(), |a, p, at| {
            prims::insert_pass::insert_pass(a, p, at)
        })
    }

    /// See [`prims::delete_pass`]. Returns a cursor on the position of the removed statement.
    /// See [`prims::inline_window`]: the window statement at `c` inlined into its uses.
    pub fn inline_window(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("inline_window", c, "inline_window".into(), |a, p, at| {
            prims::inline_window::inline_window(a, p, at)
        })
    }

    pub fn delete_pass(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("delete_pass", c, "delete_pass".into(), |a, p, at| {
            prims::delete_pass::delete_pass(a, p, at)
        })
    }

    /// See [`prims::rename`]: the proc gets a new name.
    pub fn rename(&mut self, name: &str) -> Result<(), SchedError> {
        let root = self.cursor(Path::top(0));
        self.apply("rename", &root, format!("rename({name})"), |_, p, _| {
            prims::rename::rename(p, name)
        })
        .map(|_| ())
    }

    /// See [`prims::set_window`]: the buffer parameter `name` takes any window.
    pub fn set_window(&mut self, name: &str) -> Result<(), SchedError> {
        let root = self.cursor(Path::top(0));
        self.apply(
            "set_window",
            &root,
            format!("set_window({name})"),
            |_, p, _| prims::set_window::set_window(p, name),
        )
        .map(|_| ())
    }

    /// See [`prims::bind_expr`]: bind the occurrences of `e` in the statement to a new scalar
    /// `name` in `mem`. Returns a cursor on the statement.
    pub fn bind_expr(
        &mut self,
        c: &Cursor,
        e: &Expr,
        name: &str,
        mem: Arc<weft_ir::Memory>,
    ) -> Result<Cursor, SchedError> {
        self.bind_expr_over(c, 1, e, name, mem)
    }

    /// [`Schedule::bind_expr`] over `count` consecutive statements from `c` (Exo's binding of
    /// several occurrences): `e` computed once before the first.
    pub fn bind_expr_over(
        &mut self,
        c: &Cursor,
        count: usize,
        e: &Expr,
        name: &str,
        mem: Arc<weft_ir::Memory>,
    ) -> Result<Cursor, SchedError> {
        let step = format!("bind_expr({e}, {name}, {count})");
        self.apply("bind_expr", c, step, |a, p, at| {
            prims::bind_expr::bind_expr(a, p, at, e, name, mem, count)
        })
    }

    /// See [`prims::commute_expr`]: swap the operands of every occurrence of `e` (a commutative
    /// binary operation) in the statement. Returns a cursor on the statement.
    pub fn commute_expr(&mut self, c: &Cursor, e: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("commute_expr({e})");
        self.apply("commute_expr", c, step, |a, p, at| {
            prims::commute_expr::commute_expr(a, p, at, e)
        })
    }

    /// See [`prims::left_reassociate_expr`]: `a ∘ (b ∘ c)` becomes `(a ∘ b) ∘ c` at every
    /// occurrence of `e` in the statement (on floats a documented change of rounding). Returns a
    /// cursor on the statement.
    pub fn left_reassociate_expr(&mut self, c: &Cursor, e: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("left_reassociate_expr({e})");
        self.apply("left_reassociate_expr", c, step, |a, p, at| {
            prims::left_reassociate_expr::left_reassociate_expr(a, p, at, e)
        })
    }

    /// See [`prims::rewrite_expr`]: replace the control expression `e` by `new`, proved equal
    /// where the statement runs. Returns a cursor on the statement.
    pub fn rewrite_expr(&mut self, c: &Cursor, e: &Expr, new: &Expr) -> Result<Cursor, SchedError> {
        let step = format!("rewrite_expr({e}, {new})");
        self.apply("rewrite_expr", c, step, |a, p, at| {
            prims::rewrite_expr::rewrite_expr(a, p, at, e, new)
        })
    }

    /// See [`prims::fold_into_reduce`]: `x = x + e` becomes `x += e`. Returns a cursor on the
    /// reduction.
    pub fn fold_into_reduce(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply(
            "fold_into_reduce",
            c,
            "fold_into_reduce".into(),
            prims::fold_into_reduce::fold_into_reduce,
        )
    }

    /// See [`prims::merge_writes`]: the write at `c` and the next one, to the same cell, become
    /// one statement. Returns a cursor on it.
    pub fn merge_writes(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("merge_writes", c, "merge_writes".into(), |a, p, at| {
            prims::merge_writes::merge_writes(a, p, at)
        })
    }

    /// See [`prims::split_write`]: `x = a + b` becomes `x = a; x += b` (and `x += a + b`,
    /// `x += a; x += b`). Returns a cursor on the first statement.
    pub fn split_write(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("split_write", c, "split_write".into(), |a, p, at| {
            prims::split_write::split_write(a, p, at)
        })
    }

    /// See [`prims::lift_reduce_constant`]: the assignment of zero at `c`, then a loop of
    /// `x += c * e`, becomes the loop of `x += e` followed by `x = c * x`. Returns a cursor on the
    /// assignment.
    pub fn lift_reduce_constant(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply(
            "lift_reduce_constant",
            c,
            "lift_reduce_constant".into(),
            prims::lift_reduce_constant::lift_reduce_constant,
        )
    }

    /// See [`prims::lift_alloc`]. Returns a cursor on the lifted allocation.
    pub fn lift_alloc(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("lift_alloc", c, "lift_alloc".into(), |a, p, at| {
            prims::lift_alloc::lift_alloc(a, p, at)
        })
    }

    /// See [`prims::set_memory`].
    pub fn set_memory(
        &mut self,
        c: &Cursor,
        mem: Arc<weft_ir::Memory>,
    ) -> Result<Cursor, SchedError> {
        let step = format!("set_memory({})", mem.name);
        self.apply("set_memory", c, step, |a, p, at| {
            prims::set_memory::set_memory(a, p, at, mem)
        })
    }

    /// See [`prims::set_precision`] (not an equivalence: an explicit choice of precision).
    pub fn set_precision(
        &mut self,
        c: &Cursor,
        dtype: weft_ir::DType,
    ) -> Result<Cursor, SchedError> {
        let step = format!("set_precision({dtype})");
        self.apply("set_precision", c, step, |a, p, at| {
            prims::set_precision::set_precision(a, p, at, dtype)
        })
    }

    /// See [`prims::expand_dim`].
    pub fn expand_dim(
        &mut self,
        c: &Cursor,
        extent: &Expr,
        index: &Expr,
    ) -> Result<Cursor, SchedError> {
        let step = format!("expand_dim({extent}, {index})");
        self.apply("expand_dim", c, step, |a, p, at| {
            prims::expand_dim::expand_dim(a, p, at, extent, index)
        })
    }

    /// See [`prims::inline_call`]. Returns a cursor on the first inlined statement.
    pub fn inline_call(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("inline_call", c, "inline_call".into(), |a, p, at| {
            prims::inline_call::inline_call(a, p, at)
        })
    }

    /// See [`prims::extract_proc`]: replace `count` statements starting at `c` by a call to a new
    /// proc `name`. Returns a cursor on the call and the new proc, which is also kept in
    /// [`Schedule::extracted`] (schedule it further with a `Schedule` of its own, then
    /// [`Schedule::call_eqv`] the result in).
    pub fn extract_proc(
        &mut self,
        c: &Cursor,
        count: usize,
        name: &str,
    ) -> Result<(Cursor, Arc<Proc>), SchedError> {
        let mut new = None;
        let step = format!("extract_proc({name}, {count})");
        let at = self.apply("extract_proc", c, step, |a, p, at| {
            let (r, q) = prims::extract_proc::extract_proc(a, p, at, count, name)?;
            new = Some(q);
            Ok(r)
        })?;
        let q = new.expect("set by an accepted step");
        self.extracted.push(q.clone());
        Ok((at, q))
    }

    /// The procs [`Schedule::extract_proc`] created and the versions kept by
    /// [`Schedule::keep_current`], in order.
    pub fn extracted(&self) -> &[Arc<Proc>] {
        &self.extracted
    }

    /// Keep the current version for the module (a text schedule's `rename` does this, so that the
    /// version is callable under its new name).
    pub fn keep_current(&mut self) {
        let p = self.proc().clone();
        self.extracted.push(p);
    }

    /// See [`prims::partial_eval`]: fix control arguments (`("N", 64)`) to constants.
    pub fn partial_eval(&mut self, values: &[(&str, i64)]) -> Result<(), SchedError> {
        let values: Vec<(String, i64)> = values.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let text: Vec<String> = values.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let root = self.cursor(Path::top(0));
        let step = format!("partial_eval({})", text.join(", "));
        self.apply("partial_eval", &root, step, |a, p, _| {
            prims::partial_eval::partial_eval(a, p, &values)
        })
        .map(|_| ())
    }

    /// See [`prims::call_eqv`]: call `g`, an equivalent of the callee by provenance, instead.
    pub fn call_eqv(&mut self, c: &Cursor, g: &Arc<Proc>) -> Result<Cursor, SchedError> {
        let step = format!("call_eqv({})", g.name);
        self.apply_polluting("call_eqv", c, step, |a, p, at| {
            prims::call_eqv::call_eqv(a, p, at, g)
        })
    }

    /// See [`prims::inline_assign`]: inline the assignment into the reads of its cell after it,
    /// and delete it. Returns a cursor on the position of the removed statement.
    pub fn inline_assign(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("inline_assign", c, "inline_assign".into(), |a, p, at| {
            prims::inline_assign::inline_assign(a, p, at)
        })
    }

    /// See [`prims::sink_alloc`]. Returns a cursor on the allocation inside the loop or `if`.
    pub fn sink_alloc(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("sink_alloc", c, "sink_alloc".into(), |a, p, at| {
            prims::sink_alloc::sink_alloc(a, p, at)
        })
    }

    /// See [`prims::divide_dim`]: divide dimension `dim` of the allocation by `factor`.
    pub fn divide_dim(
        &mut self,
        c: &Cursor,
        dim: usize,
        factor: i64,
    ) -> Result<Cursor, SchedError> {
        let step = format!("divide_dim({dim}, {factor})");
        self.apply("divide_dim", c, step, |a, p, at| {
            prims::divide_dim::divide_dim(a, p, at, dim, factor)
        })
    }

    /// See [`prims::reuse_buffer`]: the allocation under `c` is replaced by the earlier buffer
    /// `t1`. Returns a cursor on the position of the removed allocation.
    pub fn reuse_buffer(&mut self, c: &Cursor, t1: &str) -> Result<Cursor, SchedError> {
        let step = format!("reuse_buffer({t1})");
        self.apply("reuse_buffer", c, step, |a, p, at| {
            prims::reuse_buffer::reuse_buffer(a, p, at, t1)
        })
    }

    /// See [`prims::bind_config`]: write `e` to `config.field` before the statement and read the
    /// field for `e` in it. An equivalence modulo that field, which the provenance records.
    /// Returns a cursor on the statement.
    pub fn bind_config(
        &mut self,
        c: &Cursor,
        e: &Expr,
        config: &Arc<weft_ir::Config>,
        field: usize,
    ) -> Result<Cursor, SchedError> {
        let name = prims::write_config::field_name(config, field);
        let step = format!("bind_config({e}, {name})");
        let cfg = config.clone();
        self.apply_polluting("bind_config", c, step, |a, p, at| {
            let r = prims::bind_config::bind_config(a, p, at, e, cfg.clone(), field)?;
            Ok((r, vec![(cfg, field)]))
        })
    }

    /// See [`prims::write_config`]: write `e` to `config.field` after the statement. An
    /// equivalence modulo that field, which the provenance records. Returns a cursor on the
    /// statement.
    pub fn write_config(
        &mut self,
        c: &Cursor,
        config: &Arc<weft_ir::Config>,
        field: usize,
        e: &Expr,
    ) -> Result<Cursor, SchedError> {
        let name = prims::write_config::field_name(config, field);
        let step = format!("write_config({name}, {e})");
        let cfg = config.clone();
        self.apply_polluting("write_config", c, step, |a, p, at| {
            let r = prims::write_config::write_config(a, p, at, cfg.clone(), field, e)?;
            Ok((r, vec![(cfg, field)]))
        })
    }
}

/// Buffer layouts and loop shapes (Exo's `rearrange_dim`, `resize_dim`, `unroll_buffer`,
/// `join_loops`, `mult_loops`, `divide_with_recompute`, `lift_scope`), `delete_config`, and
/// `lift_alloc` over several levels.
impl Schedule {
    /// See [`prims::rearrange_dim`]: new dimension `k` of the allocation is old dimension
    /// `perm[k]`. Returns a cursor on the allocation.
    pub fn rearrange_dim(&mut self, c: &Cursor, perm: &[usize]) -> Result<Cursor, SchedError> {
        let list: Vec<String> = perm.iter().map(|d| d.to_string()).collect();
        let step = format!("rearrange_dim({})", list.join(", "));
        self.apply("rearrange_dim", c, step, |a, p, at| {
            prims::rearrange_dim::rearrange_dim(a, p, at, perm)
        })
    }

    /// See [`prims::resize_dim`]: dimension `dim` of the allocation gets the extent `size`, and
    /// every index in it is shifted by `-offset`. Returns a cursor on the allocation.
    pub fn resize_dim(
        &mut self,
        c: &Cursor,
        dim: usize,
        size: &Expr,
        offset: &Expr,
    ) -> Result<Cursor, SchedError> {
        let step = format!("resize_dim({dim}, {size}, {offset})");
        self.apply("resize_dim", c, step, |a, p, at| {
            prims::resize_dim::resize_dim(a, p, at, dim, size, offset)
        })
    }

    /// See [`prims::unroll_buffer`]: one buffer per index of dimension `dim`. Returns a cursor on
    /// the first new allocation.
    pub fn unroll_buffer(&mut self, c: &Cursor, dim: usize) -> Result<Cursor, SchedError> {
        let step = format!("unroll_buffer({dim})");
        self.apply("unroll_buffer", c, step, |a, p, at| {
            prims::unroll_buffer::unroll_buffer(a, p, at, dim)
        })
    }

    /// See [`prims::join_loops`]: the loop and the next one become one loop. Returns a cursor on
    /// it.
    pub fn join_loops(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply("join_loops", c, "join_loops".into(), |a, p, at| {
            prims::join_loops::join_loops(a, p, at)
        })
    }

    /// See [`prims::mult_loops`]: the loop and the loop of constant extent in it become one loop
    /// over `name`. Returns a cursor on it.
    pub fn mult_loops(&mut self, c: &Cursor, name: &str) -> Result<Cursor, SchedError> {
        let step = format!("mult_loops({name})");
        self.apply("mult_loops", c, step, |a, p, at| {
            prims::mult_loops::mult_loops(a, p, at, name)
        })
    }

    /// See [`prims::divide_with_recompute`]: the loop becomes `outer_hi` overlapping tiles of
    /// `stride` iterations and what is left over, `for outer in 0..outer_hi { for inner in
    /// 0..stride + (hi - lo - outer_hi * stride) { i = lo + stride * outer + inner } }`, the
    /// iterations the tiles share recomputed. Returns a cursor on the outer loop.
    pub fn divide_with_recompute(
        &mut self,
        c: &Cursor,
        outer_hi: &Expr,
        stride: i64,
        outer: &str,
        inner: &str,
    ) -> Result<Cursor, SchedError> {
        let step = format!("divide_with_recompute({outer_hi}, {stride}, {outer}, {inner})");
        self.apply("divide_with_recompute", c, step, |a, p, at| {
            prims::divide_with_recompute::divide_with_recompute(
                a, p, at, outer_hi, stride, outer, inner,
            )
        })
    }

    /// See [`prims::lift_scope`]: the loop or `if` under `c` changes places with the loop or `if`
    /// around it. Returns a cursor on the lifted statement (now the outer one).
    pub fn lift_scope(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        let outer = self.at("lift_scope", c)?.parent();
        let r = self.apply("lift_scope", c, "lift_scope".into(), |a, p, at| {
            prims::lift_scope::lift_scope(a, p, at)
        })?;
        Ok(outer.map(|o| self.cursor(o)).unwrap_or(r))
    }

    /// See [`prims::delete_config`]: delete a redundant config write. An exact equivalence when
    /// the field already holds the value; otherwise (the value is never read) an equivalence
    /// modulo the field, which the provenance records. Returns a cursor on the position of the
    /// removed statement.
    pub fn delete_config(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        self.apply_polluting("delete_config", c, "delete_config".into(), |a, p, at| {
            let (r, cfg, field, rule) = prims::delete_config::delete_config(a, p, at)?;
            let polluted = match rule {
                prims::delete_config::Rule::AlreadyHolds => Vec::new(),
                prims::delete_config::Rule::NeverRead => vec![(cfg, field)],
            };
            Ok((r, polluted))
        })
    }

    /// [`Schedule::lift_alloc`] `levels` times (each level proved on its own). Returns a cursor on
    /// the allocation. All or nothing: when a level is refused, the levels done are taken back,
    /// and the error says which level.
    pub fn lift_alloc_levels(&mut self, c: &Cursor, levels: usize) -> Result<Cursor, SchedError> {
        self.all_or_nothing(c, levels, |s, at| s.lift_alloc(at))
    }

    /// See [`prims::auto_alloc`]: out of `levels` loops or `if`s, each loop giving the buffer a
    /// leading dimension with a slice per iteration (`expand_dim` then `lift_alloc`). All or
    /// nothing. Returns a cursor on the allocation.
    pub fn autolift_alloc(&mut self, c: &Cursor, levels: usize) -> Result<Cursor, SchedError> {
        self.all_or_nothing(c, levels, |s, at| {
            let path = s.at("autolift_alloc", at)?;
            let parent = path.parent();
            let expansion = match parent.as_ref().filter(|_| path.last().block == 0) {
                Some(q) => prims::loop_at("autolift_alloc", s.proc(), q)
                    .ok()
                    .map(|l| prims::auto_alloc::per_iteration(&l)),
                None => None,
            };
            let at = match expansion {
                Some((extent, index)) => s.expand_dim(at, &extent, &index)?,
                None => at.clone(),
            };
            s.lift_alloc(&at)
        })
    }

    /// See [`prims::auto_alloc`]: `sink_alloc` as long as it is accepted (at least once). Returns
    /// a cursor on the allocation where it ends.
    pub fn autosink_alloc(&mut self, c: &Cursor) -> Result<Cursor, SchedError> {
        let mut at = self.sink_alloc(c)?;
        while let Ok(next) = self.sink_alloc(&at) {
            at = next;
        }
        Ok(at)
    }

    /// A step that runs `level` `levels` times from a cursor, taking every version back when a
    /// level fails (with "level k of n" in the error when there are several).
    fn all_or_nothing(
        &mut self,
        c: &Cursor,
        levels: usize,
        mut level: impl FnMut(&mut Schedule, &Cursor) -> Result<Cursor, SchedError>,
    ) -> Result<Cursor, SchedError> {
        let mark = self.versions.len();
        let mut at = c.clone();
        for k in 0..levels {
            match level(self, &at) {
                Ok(next) => at = next,
                Err(mut e) => {
                    self.versions.truncate(mark);
                    self.forwards.truncate(mark - 1);
                    self.steps.truncate(mark - 1);
                    if levels > 1 {
                        e.message = format!("level {} of {levels}: {}", k + 1, e.message);
                    }
                    return Err(e);
                }
            }
        }
        Ok(at)
    }
}

/// The primitives whose result is not equivalent to the proc they rewrote.
const NOT_EQUIVALENCES: &[&str] = &["set_precision"];

/// A config field: the config and the field's index.
type Field = (Arc<weft_ir::Config>, usize);

/// A proc the step `prim` produced from `parent`, with its provenance recorded: `parent` modulo
/// the `polluted` fields when the step proved an equivalence and kept the signature, none when it
/// changed the meaning (`set_precision`) or the signature (`partial_eval`).
fn derived(prim: &str, parent: &Arc<Proc>, child: Arc<Proc>, polluted: Vec<Field>) -> Arc<Proc> {
    let equivalent = !NOT_EQUIVALENCES.contains(&prim);
    let origin =
        (equivalent && weft_ir::alpha::same_signature(parent, &child)).then(|| weft_ir::Origin {
            parent: parent.clone(),
            polluted,
        });
    Arc::new(Proc {
        origin,
        ..(*child).clone()
    })
}
