//! The checking walk: one pass over a proc that types every expression and, where the types
//! allow, discharges the safety obligations of each statement with the solver. Expressions
//! (`exprs`), windows and calls (`calls`) and the definedness of reads (`defined`) have files of
//! their own.

mod calls;
mod defined;
mod exprs;
mod memory;

use crate::init::{self, Chunk, Defined};
use crate::intervals::{self, Interval, VarRanges};
use crate::smt::{CachingSolver, Solver, Term, Validity, Var, Z3Solver};
use crate::terms::{self, sym_var, to_term, TermEnv, TermError};
use memory::FrameSlot;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use weft_ir::print::expr_to_string;
use weft_ir::visit::Deps;
use weft_ir::{
    ArgKind, BinOp, Block, Config, Const, CtrlType, DType, Diagnostic, Expr, ExprKind, MathFn,
    Memory, Module, Proc, Span, Stmt, StmtKind, Sym, Ty, UnOp, WinCoord,
};

/// Solver statistics of a check.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckStats {
    pub procs: usize,
    pub queries: u64,
    pub cache_hits: u64,
    pub solver_time: Duration,
}

/// Where a window's dimensions sit in the buffer it views (its root).
#[derive(Clone, Debug)]
enum RootCoord {
    /// The root dimension is fixed at this index.
    Fixed(Term),
    /// The root dimension follows window dimension `.0`, shifted by `.1`.
    Dim(usize, Term),
}

/// How a dimension's extent reads in the source, for messages (printed only when one is shown).
#[derive(Clone, Debug)]
enum ShapeText {
    /// A declared extent.
    Extent(Expr),
    /// A window interval's `hi - lo`.
    Interval { lo: Expr, hi: Expr },
}

impl std::fmt::Display for ShapeText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeText::Extent(e) => write!(f, "{}", expr_to_string(e)),
            ShapeText::Interval { lo, hi } => {
                write!(f, "{} - {}", expr_to_string(hi), expr_to_string(lo))
            }
        }
    }
}

/// An obligation's message, rendered only if the obligation fails: most are proved (or not
/// checked in the walk's mode), and printing their expressions up front was a fifth of the
/// time a long schedule spent checking.
struct Msg(Box<dyn FnOnce() -> String>);

impl Msg {
    fn lazy(render: impl FnOnce() -> String + 'static) -> Msg {
        Msg(Box::new(render))
    }

    fn render(self) -> String {
        (self.0)()
    }
}

impl From<String> for Msg {
    fn from(text: String) -> Msg {
        Msg::lazy(move || text)
    }
}

/// What the checker knows about a buffer in scope.
#[derive(Clone, Debug)]
struct BufInfo {
    sym: Sym,
    elem: DType,
    shape: Vec<Option<Term>>,
    shape_text: Vec<ShapeText>,
    strides: Vec<Term>,
    mem: Arc<Memory>,
    /// A view with arbitrary strides (a window argument or a window binding).
    window: bool,
    root: Sym,
    root_map: Vec<RootCoord>,
    /// Block depth of an `alloc` (for `free`), None for arguments and windows.
    alloc_depth: Option<usize>,
}

impl BufInfo {
    fn rank(&self) -> usize {
        self.shape.len()
    }
}

#[derive(Clone, Debug)]
enum Info {
    Ctrl(CtrlType),
    Buf(Rc<BufInfo>),
}

/// Checks procs, sharing one solver and its answer cache across them.
pub struct Checker {
    solver: CachingSolver<Z3Solver>,
    /// Caches by proc address; each keeps its proc alive, so that an address is never reused.
    uses: HashMap<usize, (Arc<Proc>, Rc<ParamUses>)>,
    /// What callees leave written in their buffer parameters.
    summaries: HashMap<usize, (Arc<Proc>, Rc<Summary>)>,
    procs: usize,
    next_unknown: u64,
}

impl Default for Checker {
    fn default() -> Self {
        Checker::new()
    }
}

impl Checker {
    pub fn new() -> Checker {
        Checker {
            solver: CachingSolver::new(Z3Solver::new()),
            uses: HashMap::new(),
            summaries: HashMap::new(),
            procs: 0,
            next_unknown: 1 << 62,
        }
    }

    pub fn stats(&self) -> CheckStats {
        CheckStats {
            procs: self.procs,
            queries: self.solver.stats.queries,
            cache_hits: self.solver.stats.cache_hits,
            solver_time: self.solver.stats.solver_time,
        }
    }

    /// Check one proc (not its callees); returns every diagnostic found.
    pub fn check_proc(&mut self, p: &Proc) -> Vec<Diagnostic> {
        self.walk(p, Mode::Full)
    }

    /// The control rules alone, for procs that scheduling rewrites build from checked ones: every
    /// control value and intermediate fits in 64 bits (rule `overflow`), control values passed to
    /// callees and written to control config fields lie in ±(2^31 - 1) (rule `range`), and no loop
    /// has a negative extent (rule `extent`), each proved under the argument ranges and what is
    /// known at its place (preconditions, loop ranges, guards). The other obligations (bounds,
    /// preconditions of calls, aliasing, ...) are not sent to the solver; type and scope errors
    /// are still reported. Returns every diagnostic found.
    pub fn check_control(&mut self, p: &Proc) -> Vec<Diagnostic> {
        self.walk(p, Mode::Control)
    }

    /// [`Checker::check_control`] of one statement of `p` (`focus`, by address, and the
    /// statements inside it), in the context the rest of the proc makes: for a step that changed
    /// only that statement.
    pub fn check_control_at(&mut self, p: &Proc, focus: &Stmt) -> Vec<Diagnostic> {
        self.walk_focused(p, Mode::Control, Some(focus), HashSet::new())
            .0
    }

    /// Every rule but definedness of reads (rule `init`), for the steps that add calls
    /// (`replace`, `insert_call`): a call's coarse definedness rule (every cell of a register
    /// argument written before) is costly to prove for every call of a long instruction-selected
    /// proc after every step, and the scheduled proc is checked in full at the end.
    pub fn check_proc_but_init(&mut self, p: &Proc) -> Vec<Diagnostic> {
        self.walk(p, Mode::NoInit)
    }

    /// [`Checker::check_proc_but_init`] of one statement of `p` (`focus`, a statement of `p`'s
    /// body, by address) and the statements inside it: the rest of the proc is walked for the
    /// context (facts, buffers, config values) but neither proved nor reported, for the steps
    /// that change one place of a proc (`replace` and `insert_call` check the call they put
    /// there). A focus that is not in `p` checks all of `p`.
    pub fn check_stmt_but_init(&mut self, p: &Proc, focus: &Stmt) -> Vec<Diagnostic> {
        self.walk_focused(p, Mode::NoInit, Some(focus), HashSet::new())
            .0
    }

    fn walk(&mut self, p: &Proc, mode: Mode) -> Vec<Diagnostic> {
        self.walk_summarised(p, mode).0
    }

    /// The diagnostics of a walk of `p`, and what it leaves written in its parameters.
    fn walk_summarised(&mut self, p: &Proc, mode: Mode) -> (Vec<Diagnostic>, Summary) {
        self.walk_focused(p, mode, None, HashSet::new())
    }

    /// [`Checker::walk_summarised`], proving only the obligations of `focus` where there is one;
    /// a summary finds the cells read before they are written of the parameters in
    /// `reads_wanted` (by index) alone.
    fn walk_focused(
        &mut self,
        p: &Proc,
        mode: Mode,
        focus: Option<&Stmt>,
        reads_wanted: HashSet<usize>,
    ) -> (Vec<Diagnostic>, Summary) {
        if mode != Mode::Summary {
            self.procs += 1;
            self.solver.new_budget();
        }
        // A focus that is not a statement of `p` focuses on nothing: then everything is proved
        // (as in a proc too deep to search, which the walk then rejects).
        let depth = weft_ir::limits::check_depth(p);
        let focus_ancestors = match focus {
            Some(f) if depth.is_ok() => ancestors_of(&p.body, f),
            _ => HashSet::new(),
        };
        let focus = focus.filter(|_| !focus_ancestors.is_empty());
        let mut w = Walk {
            ck: self,
            diags: Vec::new(),
            scope: HashMap::new(),
            bound: Vec::new(),
            facts: Vec::new(),
            ranges: VarRanges::new(),
            pending: Vec::new(),
            groups: 0,
            mode,
            config_reads: HashMap::new(),
            shared_unplaced: Vec::new(),
            shared_defs: HashMap::new(),
            invariant_min_max: HashMap::new(),
            cell_names: HashMap::new(),
            config_known: HashMap::new(),
            defined: Defined::default(),
            path: Vec::new(),
            needs_input: HashSet::new(),
            reads: Defined::default(),
            reads_wanted: reads_wanted
                .iter()
                .filter_map(|&k| p.args.get(k).map(|a| a.sym.clone()))
                .collect(),
            freed: HashMap::new(),
            body: BodyStart::default(),
            frame: Vec::new(),
            depth: 0,
            in_instr: p.is_instr(),
            focus: focus.map(|s| s as *const Stmt),
            in_focus: focus.is_none(),
            focus_ancestors,
            focus_done: false,
        };
        // The walk recurses over expressions and blocks: deeper input is rejected before it.
        match depth {
            Ok(()) => {
                w.proc(p);
                w.flush();
                let mut summary = w.summary(p);
                summary.reads_known = reads_wanted;
                (w.diags, summary)
            }
            Err(d) => (vec![d], Summary::default()),
        }
    }

    /// The summary of `p`, walking it (without proving anything) if it was not walked yet, or
    /// walking it again when the cells it reads of parameter `reads_of` are wanted and were not
    /// found yet. Finding them asks the solver of every read of the parameter whether the proc
    /// wrote its cell before, and a caller wants them only of the arguments whose definedness
    /// it proves (its local buffers): of a kernel that accumulates into its output, those
    /// queries, read by read and all failing, had been most of the cost of checking its callers.
    fn summary_of(&mut self, p: &Arc<Proc>, reads_of: Option<usize>) -> Rc<Summary> {
        let key = Arc::as_ptr(p) as usize;
        let mut wanted = HashSet::new();
        if let Some((_, s)) = self.summaries.get(&key) {
            match reads_of {
                Some(k) if !s.reads_known.contains(&k) => wanted.clone_from(&s.reads_known),
                _ => return s.clone(),
            }
        }
        wanted.extend(reads_of);
        let s = Rc::new(self.walk_focused(p, Mode::Summary, None, wanted).1);
        self.summaries.insert(key, (p.clone(), s.clone()));
        s
    }

    /// What `p` does with its buffer parameters (by index), through windows and calls too.
    fn param_uses(&mut self, p: &Arc<Proc>) -> Rc<ParamUses> {
        let key = Arc::as_ptr(p) as usize;
        if let Some((_, w)) = self.uses.get(&key) {
            return w.clone();
        }
        let mut root: HashMap<Sym, usize> = HashMap::new();
        for (i, a) in p.args.iter().enumerate() {
            root.insert(a.sym.clone(), i);
        }
        let mut out = ParamUses::default();
        if weft_ir::limits::check_depth(p).is_err() {
            // Too deep to walk (and rejected where it is checked): assume every use.
            out.written = (0..p.args.len()).collect();
            out.strides_read = out.written.clone();
            return Rc::new(out);
        }
        out.configs_written = Some(HashSet::new());
        for pred in &p.preds {
            Self::strides_read_in(pred, &root, &mut out);
        }
        self.uses_in(&p.body, &mut root, &mut out);
        let out = Rc::new(out);
        self.uses.insert(key, (p.clone(), out.clone()));
        out
    }

    fn strides_read_in(e: &Expr, root: &HashMap<Sym, usize>, out: &mut ParamUses) {
        weft_ir::visit::walk_expr(e, &mut |x| {
            if let ExprKind::Stride { buf, .. } = &x.kind {
                if let Some(i) = root.get(buf) {
                    out.strides_read.insert(*i);
                }
            }
        });
    }

    fn uses_in(&mut self, b: &Block, root: &mut HashMap<Sym, usize>, out: &mut ParamUses) {
        for s in b {
            for e in weft_ir::visit::stmt_exprs(s) {
                Self::strides_read_in(e, root, out);
            }
            match &s.kind {
                StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } => {
                    if let Some(i) = root.get(buf) {
                        out.written.insert(*i);
                    }
                }
                StmtKind::Window { name, rhs } => {
                    if let ExprKind::Window { buf, .. } = &rhs.kind {
                        if let Some(i) = root.get(buf).copied() {
                            root.insert(name.clone(), i);
                        }
                    }
                }
                StmtKind::WriteConfig { config, field, .. } => {
                    if let Some(w) = &mut out.configs_written {
                        w.insert((config.name.clone(), *field));
                    }
                }
                StmtKind::Call { proc, args } => {
                    let callee = self.param_uses(proc);
                    match (&mut out.configs_written, &callee.configs_written) {
                        (Some(w), Some(c)) => w.extend(c.iter().cloned()),
                        (w, _) => *w = None,
                    }
                    for (k, a) in args.iter().enumerate() {
                        if let ExprKind::Window { buf, .. } = &a.kind {
                            if let Some(i) = root.get(buf) {
                                if callee.written.contains(&k) {
                                    out.written.insert(*i);
                                }
                                if callee.strides_read.contains(&k) {
                                    out.strides_read.insert(*i);
                                }
                            }
                        }
                    }
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    self.uses_in(then_body, root, out);
                    self.uses_in(else_body, root, out);
                }
                StmtKind::For { body, .. } => self.uses_in(body, root, out),
                _ => {}
            }
        }
    }
}

/// What a proc does with its buffer parameters, by parameter index.
#[derive(Default)]
struct ParamUses {
    /// Parameters it may write.
    written: HashSet<usize>,
    /// Parameters whose strides it reads as control values (`stride(w, d)`).
    strides_read: HashSet<usize>,
    /// The config fields it may write (through its calls too), by config name and field;
    /// None when it is too deep to tell (then any).
    configs_written: Option<HashSet<(String, usize)>>,
}

/// Which checks a walk makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every rule.
    Full,
    /// Every rule but definedness (`init`): [`Checker::check_proc_but_init`].
    NoInit,
    /// The control rules ([`Checker::check_control`]).
    Control,
    /// None: the walk only builds the proc's [`Summary`].
    Summary,
    /// None: a loop body is walked ahead, for what one iteration writes (see
    /// [`Walk::earlier_iterations`]).
    Prewalk,
}

/// What a proc leaves written in its buffer parameters, for its callers.
#[derive(Default)]
struct Summary {
    /// The chunks written in parameters.
    defined: Defined,
    /// Per parameter index: its symbol (buffer parameters only).
    params: HashMap<usize, Sym>,
    /// Parameters any of whose cells may be read before the proc writes them.
    needs_input: HashSet<usize>,
    /// The cells of the other parameters that may be read before the proc writes them (a
    /// masked instruction reads only its first `N` lanes), by parameter symbol.
    reads: Defined,
    /// The parameters (by index) whose reads `needs_input` and `reads` describe; of the others
    /// they say nothing.
    reads_known: HashSet<usize>,
}

/// Check a whole module: names are unique, and every proc is well formed and safe.
pub fn check_module(m: &Module) -> Result<CheckStats, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut seen: HashMap<String, Span> = HashMap::new();
    let items = m
        .memories
        .iter()
        .map(|x| (&x.name, x.span))
        .chain(m.configs.iter().map(|x| (&x.name, x.span)))
        .chain(m.procs.iter().map(|x| (&x.name, x.span)));
    for (name, span) in items {
        if let Some(first) = seen.get(name) {
            diags.push(
                Diagnostic::new(
                    "duplicate-definition",
                    span,
                    format!("`{name}` is defined more than once"),
                )
                .with_label(*first, "first defined here"),
            );
        } else {
            seen.insert(name.clone(), span);
        }
    }
    let mut ck = Checker::new();
    for p in &m.procs {
        diags.extend(ck.check_proc(p));
    }
    if diags.is_empty() {
        Ok(ck.stats())
    } else {
        Err(diags)
    }
}

/// Check one proc on its own (its callees are assumed checked).
pub fn check_proc(p: &Proc) -> Result<(), Vec<Diagnostic>> {
    none_or_all(Checker::new().check_proc(p))
}

/// Every rule but definedness of one proc ([`Checker::check_proc_but_init`]).
pub fn check_proc_but_init(p: &Proc) -> Result<(), Vec<Diagnostic>> {
    none_or_all(Checker::new().check_proc_but_init(p))
}

/// Whether `p` may write a config field (itself or through its calls).
pub fn writes_configs(p: &Arc<Proc>) -> bool {
    Checker::new()
        .param_uses(p)
        .configs_written
        .as_ref()
        .is_none_or(|w| !w.is_empty())
}

/// Every rule but definedness, of one statement of a proc ([`Checker::check_stmt_but_init`]).
pub fn check_stmt_but_init(p: &Proc, focus: &Stmt) -> Result<(), Vec<Diagnostic>> {
    none_or_all(Checker::new().check_stmt_but_init(p, focus))
}

fn none_or_all(d: Vec<Diagnostic>) -> Result<(), Vec<Diagnostic>> {
    if d.is_empty() {
        Ok(())
    } else {
        Err(d)
    }
}

/// The control rules of one proc ([`Checker::check_control`]): what a scheduling rewrite must
/// preserve of the control-arithmetic and extent rules, with a counterexample on failure.
pub fn check_control(p: &Proc) -> Result<(), Vec<Diagnostic>> {
    none_or_all(Checker::new().check_control(p))
}

/// Check procs and everything they call, each proc once.
pub fn check_procs(roots: &[Arc<Proc>]) -> Result<CheckStats, Vec<Diagnostic>> {
    check_procs_trusting(roots, |_| false)
}

/// [`check_procs`], except for the procs they call that `checked` says were checked already
/// (the same `Arc`, so the same text): those are only summarised where a checked proc calls
/// them, as every call is. A schedule's result calls procs of its module, which were checked
/// when it was loaded; checking them again took a third of a schedule's final check.
pub fn check_procs_trusting(
    roots: &[Arc<Proc>],
    checked: impl Fn(&Arc<Proc>) -> bool,
) -> Result<CheckStats, Vec<Diagnostic>> {
    let deps = Deps::of_all(roots);
    let mut ck = Checker::new();
    let mut diags = Vec::new();
    for p in &deps.procs {
        let root = roots.iter().any(|r| Arc::ptr_eq(r, p));
        if root || !checked(p) {
            diags.extend(ck.check_proc(p));
        }
    }
    if diags.is_empty() {
        Ok(ck.stats())
    } else {
        Err(diags)
    }
}

/// A proof obligation of the current facts.
struct Obligation {
    goal: Term,
    rule: &'static str,
    span: Span,
    msg: Msg,
    /// Terms whose values a counterexample shows.
    show: Vec<(String, Term)>,
    group: usize,
}

/// Marks of what the proc's signature and preconditions put in a walk: what the body adds after
/// them is local to a place of the body.
#[derive(Default)]
struct BodyStart {
    /// Facts before the body's.
    facts: usize,
    /// Symbols bound before the body's.
    bound: usize,
    /// Unknowns made in the body have ids from here on.
    unknowns: u64,
}

/// The rules [`Checker::check_control`] proves.
const CONTROL_RULES: [&str; 3] = ["overflow", "range", "extent"];

struct Walk<'c> {
    ck: &'c mut Checker,
    diags: Vec<Diagnostic>,
    scope: HashMap<Sym, Info>,
    /// Symbols bound, in order, so blocks can unbind theirs.
    bound: Vec<Sym>,
    /// What is known at the current point: argument ranges, preconditions, loop ranges, branch
    /// conditions. Pending obligations are flushed before it changes.
    facts: Vec<Term>,
    /// Interval bounds of the control variables, which settle easy obligations without the solver.
    ranges: VarRanges,
    /// Obligations of the current facts, proved together (see [`Walk::flush`]).
    pending: Vec<Obligation>,
    /// Numbers obligation groups: of a failing group only the first failure is reported.
    groups: usize,
    /// Which checks this walk makes.
    mode: Mode,
    /// The cells of buffers written for sure, for the definedness of reads.
    defined: Defined,
    /// The branch conditions around the current point.
    path: Vec<Term>,
    /// Parameters (their symbols) any of whose cells may be read before this proc writes them
    /// (computed in [`Mode::Summary`] only): those whose reads `reads` cannot describe.
    needs_input: HashSet<Sym>,
    /// The cells of parameters that may be read before this proc writes them, as chunks
    /// (computed in [`Mode::Summary`] only; a parameter in `needs_input` may have all read).
    reads: Defined,
    /// The parameters whose reads a summary finds (`needs_input`, `reads`).
    reads_wanted: HashSet<Sym>,
    /// Reads per config field, to name their unknowns apart.
    config_reads: HashMap<String, usize>,
    /// Intermediates not placed in 64 bits inside operands that `share` named by a variable,
    /// for the next [`Walk::fits`].
    shared_unplaced: Vec<Term>,
    /// What each unknown `share` made names.
    shared_defs: HashMap<u64, Term>,
    /// The `min`/`max` expressions of the body over the proc's control parameters alone, each
    /// named once by a variable before the body (see [`Walk::name_invariant_min_max`]): the
    /// variable, and the intermediates of its definition that intervals do not place.
    invariant_min_max: HashMap<(String, Vec<u64>), (Term, Vec<Term>)>,
    /// The names of large read cells' coordinates (`Walk::name_cell`).
    cell_names: HashMap<Term, Term>,
    /// The values of control config fields where they are known: written earlier in the proc,
    /// or read with no write (nor call, nor loop iteration) since.
    config_known: HashMap<(String, usize), Term>,
    /// Freed allocations, with the place of their `free`.
    freed: HashMap<Sym, Span>,
    /// Where the proc's body begins (what is known before it, of the proc itself).
    body: BodyStart,
    /// Allocations in memories with a capacity, for the frame rule.
    frame: Vec<FrameSlot>,
    depth: usize,
    in_instr: bool,
    /// The one statement whose obligations this walk proves (compared by address only), or
    /// None for all of them.
    focus: Option<*const Stmt>,
    /// Whether the walk is inside the focus (always, without one).
    in_focus: bool,
    /// The statements around the focus (by address), walked in full.
    focus_ancestors: HashSet<*const Stmt>,
    /// Whether the focus was walked: nothing after it bears on its obligations.
    focus_done: bool,
}

/// The statements of `body` (by address) that hold `target`, itself among them; empty when it
/// is not there.
fn ancestors_of(body: &Block, target: &Stmt) -> HashSet<*const Stmt> {
    fn path(body: &Block, target: *const Stmt, out: &mut Vec<*const Stmt>) -> bool {
        for s in body {
            out.push(s as *const Stmt);
            if std::ptr::eq(s, target) {
                return true;
            }
            let found = match &s.kind {
                StmtKind::For { body, .. } => path(body, target, out),
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => path(then_body, target, out) || path(else_body, target, out),
                _ => false,
            };
            if found {
                return true;
            }
            out.pop();
        }
        false
    }
    let mut out = Vec::new();
    path(body, target, &mut out);
    out.into_iter().collect()
}

impl TermEnv for Walk<'_> {
    fn var(&self, sym: &Sym) -> Option<Term> {
        match self.scope.get(sym)? {
            Info::Ctrl(CtrlType::Bool) => Some(Term::BoolVar(sym_var(sym))),
            Info::Ctrl(_) => Some(Term::IntVar(sym_var(sym))),
            Info::Buf(_) => None,
        }
    }
    fn stride(&self, buf: &Sym, dim: usize) -> Option<Term> {
        match self.scope.get(buf)? {
            Info::Buf(b) => b.strides.get(dim).cloned(),
            Info::Ctrl(_) => None,
        }
    }
    fn config(&mut self, config: &Config, field: usize) -> Term {
        let key = (config.name.clone(), field);
        if let Some(t) = self.config_known.get(&key) {
            return t.clone();
        }
        let t = unknown_config(
            &mut self.ck.next_unknown,
            &mut self.config_reads,
            config,
            field,
        );
        self.config_known.insert(key, t.clone());
        // A control config field holds a value in the entry range: every write proves it.
        if let Term::IntVar(v) = &t {
            self.ranges.insert(v.id, Interval::ENTRY);
            self.facts
                .push(intervals::in_interval(&t, &Interval::ENTRY));
        }
        t
    }

    fn share(&mut self, t: Term) -> Term {
        if t.size() <= SHARED_TERM {
            return t;
        }
        let var = crate::init::fresh_var(&mut self.ck.next_unknown, "min/max operand");
        // The operand's own intermediates are still the expression's (see `Walk::fits`).
        let range = intervals::interval(&t, &self.ranges, &mut self.shared_unplaced);
        self.ranges.insert(var.id, range.clamp(&Interval::I64));
        let v = Term::IntVar(var.clone());
        self.facts.push(Term::eq(v.clone(), t.clone()));
        self.shared_defs.insert(var.id, t);
        v
    }

    fn named(&mut self, e: &Expr) -> Option<Term> {
        if self.invariant_min_max.is_empty() {
            return None;
        }
        let (v, unplaced) = self.invariant_min_max.get(&invariant_key(e))?;
        // Where it is used, the definition's own intermediates are the expression's.
        self.shared_unplaced.extend(unplaced.iter().cloned());
        Some(v.clone())
    }
}

/// The key of an expression for [`Walk::named`]: its text and the ids of its symbols (two
/// symbols may have one name).
fn invariant_key(e: &Expr) -> (String, Vec<u64>) {
    let mut ids = Vec::new();
    weft_ir::visit::walk_expr(e, &mut |x| {
        if let ExprKind::Var(s) = &x.kind {
            ids.push(s.id());
        }
    });
    (expr_to_string(e), ids)
}

impl Walk<'_> {
    /// Every expression of `b` that the walk will visit: all of them, or in a focused walk
    /// those of the focus, of the statements around it and of the declarations it skips not
    /// (see [`Walk::stmt`]). A scan of the whole proc for every step's focused check had cost
    /// as much as the check.
    fn walked_exprs<'b>(&self, b: &'b [Stmt], f: &mut impl FnMut(&'b Expr)) {
        let Some(focus) = self.focus.filter(|_| !self.in_focus) else {
            return weft_ir::visit::walk_block_exprs(b, f);
        };
        for s in b {
            let at = s as *const Stmt;
            if at == focus {
                weft_ir::visit::walk_block_exprs(std::slice::from_ref(s), f);
            } else if self.focus_ancestors.contains(&at) {
                weft_ir::visit::stmt_exprs(s).into_iter().for_each(&mut *f);
                for inner in weft_ir::visit::stmt_blocks(s) {
                    self.walked_exprs(inner, f);
                }
            } else if matches!(
                s.kind,
                StmtKind::Alloc { .. }
                    | StmtKind::Free { .. }
                    | StmtKind::Window { .. }
                    | StmtKind::WriteConfig { .. }
            ) {
                weft_ir::visit::stmt_exprs(s).into_iter().for_each(&mut *f);
            }
        }
    }

    /// Name every `min`/`max` of the body whose operands are the proc's control parameters
    /// and constants alone (`min(n, m - 32)`) by one variable, with its definition as a fact
    /// of the whole body, before the body is walked. Translated as a `select`, such a term is
    /// copied into every index, bound and case that uses it, and the definedness analysis
    /// multiplies those copies (its case splits substitute terms into terms); a name keeps the
    /// proof obligations small. The name is exact: parameters never change in the body. Its
    /// variable is made before the body's unknowns, so leaving a loop does not expand it again.
    fn name_invariant_min_max(&mut self, body: &Block) {
        let params: HashSet<u64> = self
            .scope
            .iter()
            .filter(|(_, i)| matches!(i, Info::Ctrl(c) if *c != CtrlType::Bool))
            .map(|(s, _)| s.id())
            .collect();
        let invariant = |e: &Expr| {
            let mut ok = true;
            weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
                ExprKind::Var(s) => ok &= params.contains(&s.id()),
                ExprKind::Const(_)
                | ExprKind::Binary(..)
                | ExprKind::Unary(..)
                | ExprKind::Select(..) => {}
                _ => ok = false,
            });
            ok
        };
        // Inner ones first, so an outer definition uses their names.
        let mut walked: Vec<&Expr> = Vec::new();
        self.walked_exprs(body, &mut |e| walked.push(e));
        let mut found: Vec<&Expr> = Vec::new();
        for e in walked {
            weft_ir::visit::walk_expr(e, &mut |x| {
                if let ExprKind::Binary(BinOp::Min | BinOp::Max, ..) = &x.kind {
                    if x.ty == Ty::Int && invariant(x) {
                        found.push(x);
                    }
                }
            });
        }
        found.sort_by_key(|e| expr_size(e));
        for e in found {
            let key = invariant_key(e);
            if self.invariant_min_max.contains_key(&key) {
                continue;
            }
            let Ok(t) = to_term(e, self) else { continue };
            // `to_term` put the intermediates of inner named terms here; they are this one's.
            let mut unplaced = std::mem::take(&mut self.shared_unplaced);
            let range = intervals::interval(&t, &self.ranges, &mut unplaced);
            let var = init::fresh_var(&mut self.ck.next_unknown, &key.0);
            self.ranges.insert(var.id, range.clamp(&Interval::I64));
            let v = Term::IntVar(var);
            self.facts.push(Term::eq(v.clone(), t));
            self.invariant_min_max.insert(key, (v, unplaced));
        }
    }
}

fn expr_size(e: &Expr) -> usize {
    let mut n = 0;
    weft_ir::visit::walk_expr(e, &mut |_| n += 1);
    n
}

/// Terms larger than this (in nodes) are named by a fresh variable where `min`/`max` use them.
const SHARED_TERM: usize = 24;

/// A fresh unknown for a config read. Reads of one field are told apart in counterexamples:
/// `C.k`, `C.k#2`, ... (each read may see another value).
fn unknown_config(
    counter: &mut u64,
    reads: &mut HashMap<String, usize>,
    config: &Config,
    field: usize,
) -> Term {
    *counter += 1;
    let f = config.fields.get(field);
    let name = format!(
        "{}.{}",
        config.name,
        f.map(|f| f.name.as_str()).unwrap_or("?")
    );
    let k = reads.entry(name.clone()).or_insert(0);
    *k += 1;
    let v = Var {
        id: *counter,
        name: if *k == 1 { name } else { format!("{name}#{k}") },
    };
    if f.map(|f| f.ty.ty()) == Some(Ty::Bool) {
        Term::BoolVar(v)
    } else {
        Term::IntVar(v)
    }
}

/// A callee's parameters, substituted by a call's arguments.
struct CalleeEnv {
    ctrl: HashMap<Sym, Term>,
    bufs: HashMap<Sym, Rc<BufInfo>>,
    /// Numbers the unknown config reads (taken from and given back to the checker's counter).
    counter: u64,
    /// Reads per config field (taken from and given back to the walk's).
    reads: HashMap<String, usize>,
    /// The ranges of the config fields read, as facts.
    facts: Vec<Term>,
}

impl TermEnv for CalleeEnv {
    fn var(&self, sym: &Sym) -> Option<Term> {
        self.ctrl.get(sym).cloned()
    }
    fn stride(&self, buf: &Sym, dim: usize) -> Option<Term> {
        self.bufs.get(buf)?.strides.get(dim).cloned()
    }
    fn config(&mut self, config: &Config, field: usize) -> Term {
        let t = unknown_config(&mut self.counter, &mut self.reads, config, field);
        if let Term::IntVar(_) = &t {
            self.facts
                .push(intervals::in_interval(&t, &Interval::ENTRY));
        }
        t
    }
}

/// The unknown stride `d` of the window parameter `sym` (numbered from 2^61 up: above every
/// symbol, below the unknowns). A call replaces it by the argument's stride.
fn stride_var(sym: &Sym, d: usize) -> Var {
    Var {
        id: sym.id() * 64 + d as u64 + (1 << 61),
        name: format!("stride({sym}, {d})"),
    }
}

fn dense_strides(shape: &[Option<Term>]) -> Vec<Term> {
    let mut strides = vec![Term::Int(1); shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        let next = shape[d + 1].clone().unwrap_or(Term::Int(1));
        strides[d] = match (&strides[d + 1], terms::const_value(&next)) {
            (Term::Int(1), _) => next,
            (s, Some(1)) => s.clone(),
            (s, _) => Term::mul(s.clone(), next),
        };
    }
    strides
}

fn in_range(i: Term, n: Term) -> Term {
    Term::And(vec![Term::le(Term::Int(0), i.clone()), Term::lt(i, n)])
}

impl Walk<'_> {
    fn err(&mut self, rule: &'static str, span: Span, msg: impl Into<String>) {
        // A focused walk reports what is wrong with its focus only.
        if self.in_focus {
            self.diags.push(Diagnostic::new(rule, span, msg));
        }
    }

    /// Prove `goal` from the current facts; report a diagnostic with a counterexample if not.
    /// The proof is deferred to the next [`Walk::flush`], which proves the obligations of one
    /// context together.
    fn require(
        &mut self,
        goal: Term,
        rule: &'static str,
        span: Span,
        msg: impl Into<Msg>,
        show: &[(&str, &Term)],
    ) {
        let group = self.new_group();
        self.add(Obligation {
            goal,
            rule,
            span,
            msg: msg.into(),
            show: show
                .iter()
                .map(|(l, t)| (l.to_string(), (*t).clone()))
                .collect(),
            group,
        });
    }

    fn new_group(&mut self) -> usize {
        self.groups += 1;
        self.groups
    }

    /// Queue an obligation for the next flush, unless intervals already prove it.
    fn add(&mut self, o: Obligation) {
        if !self.in_focus {
            return;
        }
        match self.mode {
            Mode::Full => {}
            Mode::NoInit if o.rule != "init" => {}
            Mode::Control if CONTROL_RULES.contains(&o.rule) => {}
            Mode::NoInit | Mode::Control | Mode::Summary | Mode::Prewalk => return,
        }
        if intervals::truth(&o.goal, &self.ranges) == Some(true) {
            return;
        }
        self.pending.push(o);
    }

    /// Prove the pending obligations. One query for all of them is the common case (they hold);
    /// when it fails, each is proved on its own to find the failures and their counterexamples.
    fn flush(&mut self) {
        let obs = std::mem::take(&mut self.pending);
        if obs.len() > 1 {
            // Reads of one cell give one goal: asked once.
            let mut seen = HashSet::new();
            let goals = obs.iter().map(|o| &o.goal).filter(|g| seen.insert(*g));
            let all = Term::And(goals.cloned().collect());
            if self.ck.solver.check_valid(&self.facts, &all) == Validity::Valid {
                return;
            }
        }
        let mut failed = HashSet::new();
        for o in obs {
            if !failed.contains(&o.group) && !self.prove(o.goal, o.rule, o.span, o.msg, &o.show) {
                failed.insert(o.group);
            }
        }
    }

    /// Assume `fact` from here on (until [`Walk::forget_to`]).
    fn assume(&mut self, fact: Term) {
        self.flush();
        self.facts.push(fact);
    }

    /// Drop the facts after the first `n`.
    fn forget_to(&mut self, n: usize) {
        self.flush();
        self.facts.truncate(n);
    }

    fn prove(
        &mut self,
        goal: Term,
        rule: &'static str,
        span: Span,
        msg: Msg,
        show: &[(String, Term)],
    ) -> bool {
        match self.ck.solver.check_valid(&self.facts, &goal) {
            Validity::Valid => true,
            Validity::Invalid(cex) => {
                let vals: HashMap<u64, i64> = cex.iter().map(|(v, x)| (v.id, *x)).collect();
                let mut parts: Vec<String> = cex
                    .iter()
                    .map(|(v, x)| format!("{} = {}", v.name, x))
                    .collect();
                for (label, t) in show {
                    if let Some(x) = terms::eval_wide(t, &vals) {
                        parts.push(format!("{label} = {x}"));
                    }
                }
                let note = if parts.is_empty() {
                    "counterexample: always".to_string()
                } else {
                    format!("counterexample: {}", parts.join(", "))
                };
                self.diags
                    .push(Diagnostic::new(rule, span, msg.render()).with_note(note));
                false
            }
            Validity::Unknown => {
                self.diags.push(
                    Diagnostic::new(rule, span, msg.render())
                        .with_note("the solver could not decide this obligation"),
                );
                false
            }
        }
    }

    /// The control-arithmetic rule for the control expression `e` (translated to `t`): every
    /// intermediate the program computes lies in the 64-bit range. Intervals place almost all of
    /// them; the rest go to the solver, and of one expression only the first failure is reported.
    fn fits(&mut self, e: &Expr, t: &Term) {
        let mut unplaced = std::mem::take(&mut self.shared_unplaced);
        intervals::interval(t, &self.ranges, &mut unplaced);
        if unplaced.is_empty() {
            return;
        }
        let group = self.new_group();
        for u in unplaced {
            let (shown, e) = (u.clone(), e.clone());
            self.add(Obligation {
                goal: intervals::in_interval(&u, &Interval::I64),
                rule: "overflow",
                span: e.span,
                msg: Msg::lazy(move || {
                    format!(
                        "control arithmetic may overflow 64 bits: `{shown}` in `{}` must lie in -2^63..2^63 - 1",
                        expr_to_string(&e)
                    )
                }),
                show: vec![("value".to_string(), u)],
                group,
            });
        }
    }

    /// A control value crossing into a callee or a config field must lie in `range` (rule
    /// `range`): what the receiving side assumes.
    fn require_range(
        &mut self,
        t: &Term,
        range: Interval,
        span: Span,
        what: impl FnOnce() -> String + 'static,
    ) {
        let msg = Msg::lazy(move || {
            format!(
                "{} may lie outside {}..={} (control values entering a proc or a config field lie in ±(2^31 - 1))",
                what(),
                range.lo,
                range.hi
            )
        });
        self.require(
            intervals::in_interval(t, &range),
            "range",
            span,
            msg,
            &[("value", t)],
        );
    }

    fn bind(&mut self, sym: &Sym, info: Info, span: Span) {
        if self.scope.contains_key(sym) {
            self.err(
                "duplicate-definition",
                span,
                format!("`{sym}` is bound twice (the same symbol)"),
            );
            return;
        }
        self.scope.insert(sym.clone(), info);
        self.bound.push(sym.clone());
    }

    fn unbind_to(&mut self, mark: usize) {
        while self.bound.len() > mark {
            if let Some(s) = self.bound.pop() {
                if let Some(Info::Buf(b)) = self.scope.remove(&s) {
                    if b.alloc_depth.is_some() {
                        self.defined.forget(&s);
                    }
                }
                self.freed.remove(&s);
            }
        }
    }

    fn buffer(&mut self, sym: &Sym, span: Span) -> Option<Rc<BufInfo>> {
        match self.scope.get(sym) {
            Some(Info::Buf(b)) => {
                // A window is freed with the allocation it views.
                if let Some(at) = self.freed.get(&b.root) {
                    let through = if b.root == *sym {
                        String::new()
                    } else {
                        format!(", a view of `{}`,", b.root)
                    };
                    let d = Diagnostic::new(
                        "use-after-free",
                        span,
                        format!("`{sym}`{through} is used after `{}` was freed", b.root),
                    )
                    .with_label(*at, format!("`{}` is freed here", b.root));
                    self.diags.push(d);
                    return None;
                }
                Some(b.clone())
            }
            Some(Info::Ctrl(_)) => {
                self.err(
                    "type",
                    span,
                    format!("`{sym}` is a control value, not a buffer"),
                );
                None
            }
            None => {
                self.err(
                    "unknown-name",
                    span,
                    format!("`{sym}` is not in scope here"),
                );
                None
            }
        }
    }

    // ----- statements -----

    fn block(&mut self, b: &Block) {
        let mark = self.bound.len();
        self.depth += 1;
        for s in b {
            self.stmt(s);
        }
        self.depth -= 1;
        self.unbind_to(mark);
    }

    fn write(&mut self, s: &Stmt, buf: &Sym, idx: &[Expr], rhs: &Expr, reduce: bool) {
        let b = self.buffer(buf, s.span);
        let terms: Vec<Option<Term>> = idx.iter().map(|i| self.index_term(i)).collect();
        let rt = self.type_of(rhs);
        let Some(b) = b else { return };
        if idx.len() != b.rank() {
            self.err(
                "type",
                s.span,
                format!(
                    "`{buf}` has rank {} but is indexed with {} indices",
                    b.rank(),
                    idx.len()
                ),
            );
            return;
        }
        if let Some(rt) = rt {
            if rt != Ty::Data(b.elem) {
                self.err(
                    "type",
                    rhs.span.to(s.span),
                    format!(
                        "cannot store a value of type {rt} into `{buf}`, whose elements are {} (write a cast)",
                        b.elem
                    ),
                );
            } else if reduce && b.elem == DType::Bool {
                self.err("type", s.span, "`+=` is not defined on bool");
            }
        }
        self.check_addressable(&b, s.span);
        let what = if reduce { "reduction" } else { "write" };
        self.bounds(&b, idx, &terms, s.span, what);
        let cell: Option<Vec<Term>> = terms.into_iter().collect();
        if let Some(cell) = cell {
            if reduce {
                let text = format!(
                    "{buf}[{}]",
                    idx.iter()
                        .map(expr_to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.require_defined(&b, &cell, s.span, &text);
            }
            self.record_write(&b, &cell);
        }
    }

    /// Walk a statement; in a focused walk, only what the focus's obligations depend on.
    fn stmt(&mut self, s: &Stmt) {
        if self.in_focus {
            return self.stmt_kind(s);
        }
        let at = s as *const Stmt;
        if self.focus_done {
            return;
        }
        if self.focus == Some(at) {
            self.in_focus = true;
            self.stmt_kind(s);
            self.in_focus = false;
            self.focus_done = true;
            return;
        }
        // A loop, `if`, write or call away from the focus proves nothing here and changes no
        // context the focus sees, but the config values it may write (as its walk would forget
        // them). Declarations, frees and config writes are walked: they make the context.
        let skip = !self.focus_ancestors.contains(&at)
            && matches!(
                s.kind,
                StmtKind::For { .. }
                    | StmtKind::If { .. }
                    | StmtKind::Assign { .. }
                    | StmtKind::Reduce { .. }
                    | StmtKind::Call { .. }
                    | StmtKind::Pass
            );
        if skip {
            self.forget_configs_written_in(std::slice::from_ref(s));
            return;
        }
        self.stmt_kind(s)
    }

    fn stmt_kind(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Pass => {}
            StmtKind::Assign { buf, idx, rhs } => self.write(s, buf, idx, rhs, false),
            StmtKind::Reduce { buf, idx, rhs } => self.write(s, buf, idx, rhs, true),
            StmtKind::WriteConfig { config, field, rhs } => {
                let Some(f) = config.fields.get(*field) else {
                    self.err(
                        "unknown-name",
                        s.span,
                        format!("config `{}` has no field {field}", config.name),
                    );
                    return;
                };
                let want = f.ty.ty();
                if want.is_control() {
                    let t = self.expect_ctrl(rhs, want, "a control config field's value");
                    if let (Some(t), Ty::Int) = (&t, want) {
                        let (config, field) = (config.name.clone(), f.name.clone());
                        let what = move || format!("the value written to `{config}.{field}`");
                        self.require_range(t, Interval::ENTRY, s.span, what);
                    }
                    let key = (config.name.clone(), *field);
                    match t {
                        Some(t) => self.config_known.insert(key, t),
                        None => self.config_known.remove(&key),
                    };
                } else if let Some(t) = self.type_of(rhs) {
                    if t != want {
                        self.err(
                            "type",
                            s.span,
                            format!("cannot store {t} into config field of type {want}"),
                        );
                    }
                }
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.expect_ctrl(cond, Ty::Bool, "an `if` condition");
                let n = self.facts.len();
                // Writes in a branch hold under its condition (an unknown one: never).
                let (then_c, else_c) = match &c {
                    Some(c) => (c.clone(), Term::not(c.clone())),
                    None => (Term::Bool(false), Term::Bool(false)),
                };
                if let Some(c) = &c {
                    self.assume(c.clone());
                }
                let known = self.config_known.clone();
                self.path.push(then_c);
                self.block(then_body);
                self.path.pop();
                self.forget_to(n);
                if let Some(c) = c {
                    self.assume(Term::not(c));
                }
                self.config_known = known;
                self.path.push(else_c);
                self.block(else_body);
                self.path.pop();
                self.forget_to(n);
                // What a branch wrote is unknown after the `if`.
                self.forget_configs_written_in(then_body);
                self.forget_configs_written_in(else_body);
            }
            StmtKind::For {
                var, lo, hi, body, ..
            } => {
                let l = self.expect_ctrl(lo, Ty::Int, "a loop bound");
                let h = self.expect_ctrl(hi, Ty::Int, "a loop bound");
                // A negative extent is an error (DESIGN.md §2, as in Exo and Halide), not an empty
                // loop: rewrites that compute bounds must not be able to hide a wrong one.
                if let (Some(l), Some(h)) = (&l, &h) {
                    let (var, lo, hi) = (var.clone(), lo.clone(), hi.clone());
                    let msg = Msg::lazy(move || {
                        format!(
                            "loop `{var}` may have a negative extent: `{}` may exceed `{}`",
                            expr_to_string(&lo),
                            expr_to_string(&hi)
                        )
                    });
                    self.require(
                        Term::le(l.clone(), h.clone()),
                        "extent",
                        s.span,
                        msg,
                        &[("low", l), ("high", h)],
                    );
                }
                let mark = self.bound.len();
                let n = self.facts.len();
                self.bind(var, Info::Ctrl(CtrlType::Index), s.span);
                let v = Term::IntVar(sym_var(var));
                // The loop variable lies between the bounds, which lie in the 64-bit range.
                let bound = |t: &Option<Term>, w: &Walk| {
                    t.as_ref()
                        .map(|t| intervals::interval(t, &w.ranges, &mut Vec::new()))
                        .unwrap_or(Interval::I64)
                };
                let range = Interval::new(bound(&l, self).lo, bound(&h, self).hi - 1);
                self.ranges
                    .insert(sym_var(var).id, range.clamp(&Interval::I64));
                if let Some(l) = &l {
                    self.assume(Term::le(l.clone(), v.clone()));
                }
                if let Some(h) = &h {
                    self.assume(Term::lt(v, h.clone()));
                }
                let before = self.defined.chunks.len();
                let reads_before = self.reads.chunks.len();
                let made_since = self.ck.next_unknown;
                // An iteration may see what earlier ones wrote to config fields.
                self.forget_configs_written_in(body);
                if let Some(l) = &l {
                    self.earlier_iterations(var, l, body);
                }
                let written = self.defined.chunks.len();
                self.block(body);
                self.forget_to(n);
                self.unbind_to(mark);
                self.forget_configs_written_in(body);
                // What the body wrote, it wrote in every iteration.
                match (&l, &h) {
                    (Some(l), Some(h)) => {
                        let counter = &mut self.ck.next_unknown;
                        let name = var.name().to_string();
                        let mut fresh = || init::fresh_var(counter, &name);
                        self.defined.bind_loop(
                            (written, made_since),
                            &sym_var(var),
                            l,
                            h,
                            &self.shared_defs,
                            &mut fresh,
                        );
                    }
                    _ => self.defined.chunks.truncate(written),
                }
                self.defined.chunks.drain(before..written);
                self.bind_reads(reads_before, made_since, var, l.as_ref().zip(h.as_ref()));
            }
            StmtKind::Alloc { buf, ty } => {
                let shape: Vec<Option<Term>> = ty
                    .shape
                    .iter()
                    .map(|d| self.expect_ctrl(d, Ty::Int, "an allocation size"))
                    .collect();
                for (d, (t, e)) in shape.iter().zip(&ty.shape).enumerate() {
                    if let Some(t) = t {
                        let (e, buf) = (e.clone(), buf.clone());
                        let msg = Msg::lazy(move || {
                            format!(
                                "size `{}` of dimension {d} of `{buf}` may not be positive",
                                expr_to_string(&e)
                            )
                        });
                        self.require(
                            Term::lt(Term::Int(0), t.clone()),
                            "size-positive",
                            s.span,
                            msg,
                            &[("size", t)],
                        );
                    }
                }
                if ty.window {
                    self.err("type", s.span, "an allocation cannot be a window");
                }
                self.check_dtype(buf, &ty.mem, ty.elem, s.span);
                self.check_last_dim(buf, &ty.mem, &ty.shape, s.span);
                self.check_max_bytes(buf, ty, &shape, s.span);
                let info = BufInfo {
                    sym: buf.clone(),
                    elem: ty.elem,
                    strides: dense_strides(&shape),
                    shape_text: ty.shape.iter().cloned().map(ShapeText::Extent).collect(),
                    root_map: (0..shape.len())
                        .map(|d| RootCoord::Dim(d, Term::Int(0)))
                        .collect(),
                    shape,
                    mem: ty.mem.clone(),
                    window: false,
                    root: buf.clone(),
                    alloc_depth: Some(self.depth),
                };
                self.bind(buf, Info::Buf(Rc::new(info)), s.span);
            }
            StmtKind::Free { buf } => {
                if let Some(first) = self.freed.get(buf) {
                    let d = Diagnostic::new("free", s.span, format!("`{buf}` is freed twice"))
                        .with_label(*first, "first freed here");
                    self.diags.push(d);
                    return;
                }
                let Some(b) = self.buffer(buf, s.span) else {
                    return;
                };
                if b.alloc_depth.is_none() {
                    self.err(
                        "free",
                        s.span,
                        format!("`{buf}` is not an allocation: only `alloc`ed buffers are freed"),
                    );
                    return;
                }
                if b.alloc_depth != Some(self.depth) {
                    self.err(
                        "free",
                        s.span,
                        format!("`{buf}` can only be freed in the block that allocates it"),
                    );
                    return;
                }
                self.freed.insert(buf.clone(), s.span);
            }
            StmtKind::Window { name, rhs } => {
                if let Some(info) = self.window(rhs) {
                    let info = BufInfo {
                        sym: name.clone(),
                        ..(*info).clone()
                    };
                    self.bind(name, Info::Buf(Rc::new(info)), s.span);
                }
            }
            StmtKind::Call { proc, args } => self.call(proc, args, s.span),
        }
    }

    fn proc(&mut self, p: &Proc) {
        // Control arguments first: buffer shapes may name any of them. Their ranges are the
        // control-arithmetic rule's assumptions, which every caller and entry point ensures.
        for a in &p.args {
            if let ArgKind::Ctrl(c) = &a.kind {
                self.bind(&a.sym, Info::Ctrl(*c), a.span);
                let range = match c {
                    CtrlType::Bool => continue,
                    CtrlType::Size => Interval::SIZE,
                    CtrlType::Index | CtrlType::Stride => Interval::ENTRY,
                };
                let v = sym_var(&a.sym);
                self.ranges.insert(v.id, range);
                self.facts
                    .push(intervals::in_interval(&Term::IntVar(v), &range));
            }
        }
        let mut shapes = Vec::new();
        for a in &p.args {
            if let ArgKind::Buf(bt) = &a.kind {
                let shape: Vec<Option<Term>> = bt
                    .shape
                    .iter()
                    .map(|d| self.expect_ctrl(d, Ty::Int, "a buffer extent"))
                    .collect();
                let strides = if bt.window {
                    (0..shape.len())
                        .map(|d| {
                            let v = stride_var(&a.sym, d);
                            self.ranges.insert(v.id, Interval::ENTRY);
                            let t = Term::IntVar(v);
                            self.facts
                                .push(intervals::in_interval(&t, &Interval::ENTRY));
                            t
                        })
                        .collect()
                } else {
                    dense_strides(&shape)
                };
                self.check_dtype(&a.sym, &bt.mem, bt.elem, a.span);
                self.check_last_dim(&a.sym, &bt.mem, &bt.shape, a.span);
                shapes.push((a, shape.clone()));
                let info = BufInfo {
                    sym: a.sym.clone(),
                    elem: bt.elem,
                    shape_text: bt.shape.iter().cloned().map(ShapeText::Extent).collect(),
                    root_map: (0..shape.len())
                        .map(|d| RootCoord::Dim(d, Term::Int(0)))
                        .collect(),
                    shape,
                    strides,
                    mem: bt.mem.clone(),
                    window: bt.window,
                    root: a.sym.clone(),
                    alloc_depth: None,
                };
                self.bind(&a.sym, Info::Buf(Rc::new(info)), a.span);
            }
        }
        // The extents of buffer arguments are data sizes entering the proc: they lie in the
        // entry range too (once computed: their own arithmetic is proved to fit first).
        for (_, shape) in &shapes {
            for t in shape.iter().flatten() {
                self.assume(Term::le(t.clone(), Term::Int(intervals::ENTRY_MAX)));
            }
        }
        for pred in &p.preds {
            if let Some(t) = self.expect_ctrl(pred, Ty::Bool, "a precondition") {
                self.assume(t);
            }
        }
        for (a, shape) in shapes {
            for (d, t) in shape.into_iter().enumerate() {
                if let Some(t) = t {
                    let sym = a.sym.clone();
                    let msg =
                        Msg::lazy(move || format!("extent {d} of `{sym}` may not be positive"));
                    self.require(
                        Term::lt(Term::Int(0), t.clone()),
                        "size-positive",
                        a.span,
                        msg,
                        &[("extent", &t)],
                    );
                }
            }
        }
        if let Some(instr) = &p.instr {
            self.template(p, &instr.template);
            // `finish` is pasted as it is into the function every entry point runs: a brace
            // there could close that function early.
            if instr.finish.contains(['{', '}']) {
                self.err(
                    "template",
                    p.span,
                    format!(
                        "instruction `{}`: its `finish` code may not contain `{{` or `}}` (it is pasted into the entry point's function as it is)",
                        p.name
                    ),
                );
            }
        }
        if self.mode != Mode::Summary {
            self.name_invariant_min_max(&p.body);
        }
        self.body = BodyStart {
            facts: self.facts.len(),
            bound: self.bound.len(),
            unknowns: self.ck.next_unknown,
        };
        self.block(&p.body);
        self.forget_to(self.body.facts);
        self.check_frames();
    }

    /// Instruction templates may name only their own arguments, and have no `}` but those that
    /// close placeholders (a template is pasted into a block: a brace could close it early).
    fn template(&mut self, p: &Proc, t: &str) {
        let mut rest = t;
        loop {
            let open = rest.find('{');
            if rest[..open.unwrap_or(rest.len())].contains('}') {
                self.err(
                    "template",
                    p.span,
                    format!(
                        "instruction `{}`: `}}` outside a placeholder in template",
                        p.name
                    ),
                );
                return;
            }
            let Some(open) = open else {
                return;
            };
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                self.err(
                    "template",
                    p.span,
                    format!("instruction `{}`: unclosed `{{` in template", p.name),
                );
                return;
            };
            let key = &after[..close];
            let ok = p.args.iter().any(|a| {
                let n = a.sym.name();
                match &a.kind {
                    ArgKind::Ctrl(_) => key == n,
                    ArgKind::Buf(b) => {
                        key == format!("{n}_data")
                            || key
                                .strip_prefix(&format!("{n}_stride_"))
                                .and_then(|k| k.parse::<usize>().ok())
                                .is_some_and(|k| k < b.rank())
                    }
                }
            });
            if !ok {
                self.err(
                    "template",
                    p.span,
                    format!(
                        "instruction `{}`: template placeholder `{{{key}}}` names no argument (use `{{arg}}` for control arguments, `{{arg_data}}` and `{{arg_stride_K}}` for buffers)",
                        p.name
                    ),
                );
            }
            rest = &after[close + 1..];
        }
    }
}
