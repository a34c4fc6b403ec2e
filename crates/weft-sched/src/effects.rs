//! The effect analysis: what a piece of code may read, write and reduce into, as location sets
//! decided by the SMT solver.
//!
//! This is the analysis of the Exo paper (§4, Appendices C–E) specialised to weft, where control
//! values never depend on data (the checker enforces it):
//!
//! - An [`Access`] is one syntactic read, write or reduction, resolved through windows and calls
//!   to its *root* buffer (a proc argument or an allocation) or config field, with its index as
//!   solver terms over the sizes and the loop variables, and its guard: the loop bounds and `if`
//!   conditions under which it runs. The set of locations it touches is
//!   `⋃_{bound vars} filter(guard, {buf, idx})`, the paper's location-set form.
//! - Config fields are the paper's globals. A config read inside a control expression is an
//!   unknown value (a fresh, universally quantified variable), which is the paper's `⊥` under the
//!   dataflow that sends every changed global to `⊥`; an access that depends on one is *inexact*:
//!   it counts as "maybe" (`M`) but never as "definitely" (`D`).
//! - Buffers allocated inside the analysed code are fresh on every execution (the paper's `𝐀`
//!   set), so their accesses are not effects of the code.
//! - Calls contribute the accesses of the callee's body, arguments substituted; the body is that
//!   of the callee's simplest equivalent version (the root of its provenance, [`Proc::origin`]),
//!   as in the paper, unless [`Analysis::effects_as_written`] asks for the body as written.
//!
//! Two accesses conflict when they may touch the same location and are not both reads or both
//! reductions (the paper's `Commutes`: two reductions into one cell commute). "May touch the same
//! location" is satisfiability of `facts ∧ guard₁ ∧ guard₂ ∧ idx₁ = idx₂`; a model is the
//! counterexample reported to the user.

use crate::path::Path;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_check::smt::{CachingSolver, Solver, SolverStats, Term, Validity, Var, Z3Solver};
use weft_check::terms::{sym_var, to_term, TermEnv};
use weft_ir::{
    ArgKind, Config, CtrlType, Expr, ExprKind, Proc, Span, Stmt, StmtKind, Sym, WinCoord,
};

/// What an access does to its location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    Read,
    Write,
    Reduce,
}

/// A root location: a buffer (argument or allocation) or a config field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Root {
    Buf(u64),
    Config(String, usize),
}

#[derive(Clone, Debug)]
pub struct Access {
    pub root: Root,
    /// The root's name, for messages.
    pub name: String,
    pub idx: Vec<Term>,
    pub kind: AccessKind,
    /// Conditions under which the access runs.
    pub guard: Vec<Term>,
    /// Variables bound inside the analysed code (loop variables, a callee's loop variables).
    pub bound: Vec<Var>,
    /// False when the index or guard depends on a config value read in control position.
    pub exact: bool,
    pub span: Span,
}

/// The accesses of a piece of code.
#[derive(Clone, Debug, Default)]
pub struct Effects {
    pub accesses: Vec<Access>,
}

impl Effects {
    pub fn writes(&self) -> impl Iterator<Item = &Access> {
        self.accesses.iter().filter(|a| a.kind != AccessKind::Read)
    }

    /// Substitute variables in every index and guard.
    pub fn subst(&self, map: &HashMap<u64, Term>) -> Effects {
        Effects {
            accesses: self
                .accesses
                .iter()
                .map(|a| Access {
                    idx: a.idx.iter().map(|t| subst_term(t, map)).collect(),
                    guard: a.guard.iter().map(|t| subst_term(t, map)).collect(),
                    bound: a
                        .bound
                        .iter()
                        .map(|v| match map.get(&v.id) {
                            Some(Term::IntVar(w)) => w.clone(),
                            _ => v.clone(),
                        })
                        .collect(),
                    ..a.clone()
                })
                .collect(),
        }
    }

    /// A copy whose bound variables are renamed apart (so that two copies can be compared as two
    /// different executions), with `'` appended to their names. Unknown values (`?`, terms the
    /// analysis could not form) are renamed apart too: they may depend on the bound variables, so
    /// the other execution may see other values (within one copy they stay shared, as one
    /// execution sees one value).
    pub fn rename_bound(&self) -> Effects {
        let mut map = HashMap::new();
        for a in &self.accesses {
            for v in &a.bound {
                map.entry(v.id).or_insert_with(|| Term::IntVar(primed(v)));
            }
            let mut vars = Vec::new();
            for t in a.idx.iter().chain(&a.guard) {
                t.var_terms(&mut vars);
            }
            // Config fields read in control position too: the other execution may run after the
            // field changed (`Env::config` names their variables `Config.field`).
            for t in vars {
                let (Term::IntVar(v) | Term::BoolVar(v)) = &t else {
                    continue;
                };
                if v.name != UNKNOWN && !is_config_var(v) {
                    continue;
                }
                map.entry(v.id).or_insert_with(|| {
                    // An unknown stays an unknown (named `?`); a config read gets a prime.
                    let fresh = if v.name == UNKNOWN {
                        Var {
                            id: Sym::new(UNKNOWN).id(),
                            name: UNKNOWN.into(),
                        }
                    } else {
                        primed(v)
                    };
                    match t {
                        Term::BoolVar(_) => Term::BoolVar(fresh),
                        _ => Term::IntVar(fresh),
                    }
                });
            }
        }
        self.subst(&map)
    }
}

/// The display name of unknown values (a term the analysis could not form).
const UNKNOWN: &str = "?";

fn unknown_int() -> Term {
    Term::IntVar(Var {
        id: Sym::new(UNKNOWN).id(),
        name: UNKNOWN.into(),
    })
}

fn unknown_bool() -> Term {
    Term::BoolVar(Var {
        id: Sym::new(UNKNOWN).id(),
        name: UNKNOWN.into(),
    })
}

/// Whether `v` stands for a config field read in control position (named `Config.field`; no
/// other variable of the analysis has a `.` in its name).
fn is_config_var(v: &Var) -> bool {
    v.name.contains('.') && !v.name.starts_with("stride(")
}

/// Whether a term contains an unknown value.
fn has_unknown(t: &Term) -> bool {
    let mut vars = Vec::new();
    t.vars(&mut vars);
    vars.iter().any(|v| v.name == UNKNOWN)
}

/// A fresh variable named after `v` with a prime.
pub fn primed(v: &Var) -> Var {
    let name = format!("{}'", v.name);
    Var {
        id: Sym::new(&name).id(),
        name,
    }
}

/// Substitute variables of a term.
pub fn subst_term(t: &Term, map: &HashMap<u64, Term>) -> Term {
    let b = |x: &Term| Box::new(subst_term(x, map));
    match t {
        Term::IntVar(v) | Term::BoolVar(v) => map.get(&v.id).cloned().unwrap_or_else(|| t.clone()),
        Term::Int(_) | Term::Bool(_) => t.clone(),
        Term::Add(x, y) => Term::Add(b(x), b(y)),
        Term::Sub(x, y) => Term::Sub(b(x), b(y)),
        Term::Neg(x) => Term::Neg(b(x)),
        Term::Mul(x, y) => Term::Mul(b(x), b(y)),
        Term::Div(x, y) => Term::Div(b(x), b(y)),
        Term::Mod(x, y) => Term::Mod(b(x), b(y)),
        Term::Ite(c, x, y) => Term::Ite(b(c), b(x), b(y)),
        Term::Lt(x, y) => Term::Lt(b(x), b(y)),
        Term::Le(x, y) => Term::Le(b(x), b(y)),
        Term::Eq(x, y) => Term::Eq(b(x), b(y)),
        Term::And(v) => Term::And(v.iter().map(|x| subst_term(x, map)).collect()),
        Term::Or(v) => Term::Or(v.iter().map(|x| subst_term(x, map)).collect()),
        Term::Not(x) => Term::Not(b(x)),
    }
}

/// How the indices of a view map to its root: per root dimension, a fixed index or the next
/// index of the view plus an offset.
#[derive(Clone, Debug)]
enum ViewDim {
    Fixed(Term),
    Free(Term),
}

#[derive(Clone, Debug)]
struct View {
    root: Root,
    name: String,
    dims: Vec<ViewDim>,
    /// False when a coordinate of a window on the way had no term (an unknown offset).
    exact: bool,
}

impl View {
    fn whole(sym: &Sym, rank: usize) -> View {
        View {
            root: Root::Buf(sym.id()),
            name: sym.name().to_string(),
            dims: (0..rank).map(|_| ViewDim::Free(Term::Int(0))).collect(),
            exact: true,
        }
    }

    /// The access of `kind` to the root cell of the view indices `idx`, run under `guard`.
    #[allow(clippy::too_many_arguments)]
    fn access(
        &self,
        idx: &[Term],
        kind: AccessKind,
        guard: Vec<Term>,
        bound: Vec<Var>,
        exact: bool,
        span: Span,
    ) -> Access {
        Access {
            root: self.root.clone(),
            name: self.name.clone(),
            idx: self.resolve(idx),
            kind,
            guard,
            bound,
            exact,
            span,
        }
    }

    /// Root indices of view indices.
    fn resolve(&self, idx: &[Term]) -> Vec<Term> {
        let mut it = idx.iter();
        self.dims
            .iter()
            .map(|d| match d {
                ViewDim::Fixed(t) => t.clone(),
                ViewDim::Free(off) => {
                    let i = it.next().cloned().unwrap_or(Term::Int(0));
                    if *off == Term::Int(0) {
                        i
                    } else {
                        Term::add(off.clone(), i)
                    }
                }
            })
            .collect()
    }

    /// The view of a window with the given coordinates over this view.
    fn window(&self, coords: &[(Term, bool)]) -> View {
        // `coords` are in this view's free dimensions: (start, is_interval).
        let mut it = coords.iter();
        let dims = self
            .dims
            .iter()
            .map(|d| match d {
                ViewDim::Fixed(t) => ViewDim::Fixed(t.clone()),
                ViewDim::Free(off) => {
                    let (start, interval) = it.next().cloned().unwrap_or((Term::Int(0), true));
                    let at = if *off == Term::Int(0) {
                        start
                    } else {
                        Term::add(off.clone(), start)
                    };
                    if interval {
                        ViewDim::Free(at)
                    } else {
                        ViewDim::Fixed(at)
                    }
                }
            })
            .collect();
        View {
            root: self.root.clone(),
            name: self.name.clone(),
            dims,
            exact: self.exact,
        }
    }
}

/// Where the analysis stands at one point of a proc: the terms of the control symbols in scope,
/// the views of the buffers in scope, and the facts that hold there.
#[derive(Clone, Default)]
pub struct Scope {
    ctrl: HashMap<u64, Term>,
    views: HashMap<u64, View>,
    /// Buffers allocated inside the code being summarised: not effects.
    local: HashSet<u64>,
    /// Facts: preconditions, positive sizes, enclosing loop bounds and `if` conditions.
    pub facts: Vec<Term>,
}

impl Scope {
    /// The root buffer a buffer name resolves to here (`None` for an unknown name).
    pub fn root_of(&self, buf: &Sym) -> Option<u64> {
        match &self.views.get(&buf.id())?.root {
            Root::Buf(id) => Some(*id),
            Root::Config(..) => None,
        }
    }

    /// Whether the buffer name `name` (a buffer or a window, by symbol id) is in scope here and
    /// views the memory of buffer `root`: the buffer itself or a window of it.
    pub fn views_buffer(&self, name: u64, root: &Sym) -> bool {
        name == root.id()
            || self
                .views
                .get(&name)
                .is_some_and(|v| v.root == Root::Buf(root.id()))
    }
}

/// A solver-backed analysis. One per schedule: it caches solver answers across steps.
pub struct Analysis {
    solver: CachingSolver<Z3Solver>,
    strides: HashMap<(u64, usize), Var>,
    /// Summarise a call by its callee's own body rather than by the simplest equivalent version
    /// (see [`Analysis::effects_as_written`]).
    calls_as_written: bool,
    /// Summarise a call's accesses to its buffer arguments by the windows it passes (see
    /// [`Analysis::footprints_as_written`]).
    call_footprints: bool,
    /// Index variables of one cell, for conflict checks between sets of accesses.
    cells: Vec<Var>,
    /// The checker that proves new calls (`check_new_call`), kept for its solver's cache and
    /// its callee summaries.
    checker: weft_check::Checker,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis::new()
    }
}

/// The environment that translates expressions into terms during summarisation.
struct Env<'a> {
    scope: &'a Scope,
    strides: &'a mut HashMap<(u64, usize), Var>,
    inexact: bool,
}

impl TermEnv for Env<'_> {
    fn var(&self, sym: &Sym) -> Option<Term> {
        self.scope.ctrl.get(&sym.id()).cloned()
    }
    fn stride(&self, buf: &Sym, dim: usize) -> Option<Term> {
        let view = self.scope.views.get(&buf.id())?;
        let root = match &view.root {
            Root::Buf(id) => *id,
            Root::Config(..) => return None,
        };
        // Dimension `dim` of a view is its `dim`-th free dimension of the root: point
        // coordinates of the windows on the way dropped the others.
        let root_dim = view
            .dims
            .iter()
            .enumerate()
            .filter(|(_, d)| matches!(d, ViewDim::Free(_)))
            .nth(dim)?
            .0;
        self.strides
            .get(&(root, root_dim))
            .map(|v| Term::IntVar(v.clone()))
    }
    fn config(&mut self, config: &Config, field: usize) -> Term {
        self.inexact = true;
        let name = format!(
            "{}.{}",
            config.name,
            config.fields.get(field).map_or("?", |f| f.name.as_str())
        );
        Term::IntVar(Var {
            id: Sym::new(&name).id(),
            name,
        })
    }
}

impl Analysis {
    pub fn new() -> Analysis {
        Analysis {
            solver: CachingSolver::new(Z3Solver::new()),
            strides: HashMap::new(),
            calls_as_written: false,
            call_footprints: false,
            cells: Vec::new(),
            checker: weft_check::Checker::new(),
        }
    }

    /// The checker steps use to prove a new call in its context.
    pub fn checker(&mut self) -> &mut weft_check::Checker {
        &mut self.checker
    }

    pub fn stats(&self) -> SolverStats {
        self.solver.stats
    }

    /// A new scheduling step begins: see [`Solver::new_budget`].
    pub fn new_budget(&mut self) {
        self.solver.new_budget()
    }

    /// Is `facts ⇒ goal` valid? `Err` carries a counterexample (possibly empty when the solver
    /// gave up).
    pub fn prove(&mut self, facts: &[Term], goal: &Term) -> Result<(), Vec<(String, i64)>> {
        match self.solver.check_valid(facts, goal) {
            Validity::Valid => Ok(()),
            Validity::Invalid(model) => Err(named(model)),
            Validity::Unknown => Err(Vec::new()),
        }
    }

    /// The term of a control expression in a scope; `None` if it has none (it reads data).
    pub fn term(&mut self, scope: &Scope, e: &Expr) -> Option<Term> {
        let mut env = Env {
            scope,
            strides: &mut self.strides,
            inexact: false,
        };
        to_term(e, &mut env).ok()
    }

    /// The scope at the top of a proc's body.
    pub fn proc_scope(&mut self, p: &Proc) -> Scope {
        let mut scope = Scope::default();
        for a in &p.args {
            match &a.kind {
                ArgKind::Ctrl(c) => {
                    let v = sym_var(&a.sym);
                    let t = if *c == CtrlType::Bool {
                        Term::BoolVar(v)
                    } else {
                        Term::IntVar(v)
                    };
                    // The entry range every entry point checks (the control-arithmetic rule).
                    let max = weft_ir::types::ENTRY_MAX;
                    match c {
                        CtrlType::Size => {
                            scope.facts.push(Term::lt(Term::Int(0), t.clone()));
                            scope.facts.push(Term::le(t.clone(), Term::Int(max)));
                        }
                        CtrlType::Index | CtrlType::Stride => {
                            scope.facts.push(Term::le(Term::Int(-max), t.clone()));
                            scope.facts.push(Term::le(t.clone(), Term::Int(max)));
                        }
                        CtrlType::Bool => {}
                    }
                    scope.ctrl.insert(a.sym.id(), t);
                }
                ArgKind::Buf(bt) => {
                    scope
                        .views
                        .insert(a.sym.id(), View::whole(&a.sym, bt.rank()));
                    for d in 0..bt.rank() {
                        let name = format!("stride({}, {d})", a.sym.name());
                        self.strides.entry((a.sym.id(), d)).or_insert_with(|| Var {
                            id: Sym::new(&name).id(),
                            name,
                        });
                    }
                }
            }
        }
        for pred in &p.preds {
            if let Some(t) = self.term(&scope, pred) {
                scope.facts.push(t);
            }
        }
        scope
    }

    /// The scope just before the statement at `at`: enclosing loops and conditions become facts,
    /// earlier allocations and windows of the enclosing blocks are in scope.
    pub fn scope_at(&mut self, p: &Proc, at: &Path) -> Scope {
        let mut scope = self.proc_scope(p);
        let mut block = &p.body;
        for (k, step) in at.0.iter().enumerate() {
            for s in block.iter().take(step.index) {
                self.declare(&mut scope, s);
            }
            if k + 1 == at.0.len() {
                break;
            }
            let Some(s) = block.get(step.index) else {
                break;
            };
            let next = at.0[k + 1].block;
            match &s.kind {
                StmtKind::For {
                    var, lo, hi, body, ..
                } => {
                    let v = Term::IntVar(sym_var(var));
                    if let (Some(l), Some(h)) = (self.term(&scope, lo), self.term(&scope, hi)) {
                        scope.facts.push(Term::le(l, v.clone()));
                        scope.facts.push(Term::lt(v.clone(), h));
                    }
                    scope.ctrl.insert(var.id(), v);
                    block = body;
                }
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    if let Some(c) = self.term(&scope, cond) {
                        scope.facts.push(if next == 0 { c } else { Term::not(c) });
                    }
                    block = if next == 0 { then_body } else { else_body };
                }
                _ => break,
            }
        }
        scope
    }

    /// Bring the buffers and windows a statement declares into scope.
    fn declare(&mut self, scope: &mut Scope, s: &Stmt) {
        match &s.kind {
            StmtKind::Alloc { buf, ty } => {
                scope.views.insert(buf.id(), View::whole(buf, ty.rank()));
            }
            StmtKind::Window { name, rhs } => {
                if let Some(v) = self.view_of(scope, rhs) {
                    scope.views.insert(name.id(), v);
                }
            }
            _ => {}
        }
    }

    fn view_of(&mut self, scope: &Scope, e: &Expr) -> Option<View> {
        match &e.kind {
            ExprKind::Window { buf, coords } => {
                let base = scope.views.get(&buf.id())?.clone();
                if coords.is_empty() {
                    return Some(base);
                }
                let mut cs = Vec::new();
                let mut exact = base.exact;
                for c in coords {
                    let (start, interval) = match c {
                        WinCoord::Point(p) => (p, false),
                        WinCoord::Interval(lo, _) => (lo, true),
                    };
                    // A coordinate without a term (e.g. a stride of an allocation) is an unknown
                    // offset: the accesses through the window still count, as "maybe".
                    let t = self.term(scope, start).unwrap_or_else(|| {
                        exact = false;
                        unknown_int()
                    });
                    cs.push((t, interval));
                }
                let mut v = base.window(&cs);
                v.exact = exact;
                Some(v)
            }
            ExprKind::Var(s) | ExprKind::Read { buf: s, .. } => scope.views.get(&s.id()).cloned(),
            _ => None,
        }
    }

    /// The effects of a block run in `scope`, with every call summarised by its callee's own body
    /// instead of the simplest equivalent version. Equivalent versions transform the store alike,
    /// so [`Analysis::effects`] is exact for questions about the *result* of reordering code; but
    /// a scheduled callee may touch more locations than its root (a staged region written back
    /// whole, say), so questions about what actually runs at the same time (races between
    /// parallel iterations) need this one.
    pub fn effects_as_written(&mut self, scope: &Scope, block: &[Stmt]) -> Effects {
        let saved = std::mem::replace(&mut self.calls_as_written, true);
        let out = self.effects(scope, block);
        self.calls_as_written = saved;
        out
    }

    /// [`Analysis::effects_as_written`] with each call's accesses to a buffer argument replaced
    /// by the whole window it passes (for each kind of access the callee makes through it): the
    /// checked callee stays inside its parameters' extents, so this covers every cell it
    /// touches. A race check asks this first: a scheduled kernel's hundreds of accesses become
    /// one per argument and kind, where their unions, under the guards of a `specialize`,
    /// took seconds to decide. Where two windows meet, the accesses themselves decide.
    pub fn footprints_as_written(&mut self, scope: &Scope, block: &[Stmt]) -> Effects {
        let saved = std::mem::replace(&mut self.call_footprints, true);
        let out = self.effects_as_written(scope, block);
        self.call_footprints = saved;
        out
    }

    /// The effects of a block of statements run in `scope`.
    pub fn effects(&mut self, scope: &Scope, block: &[Stmt]) -> Effects {
        let mut out = Effects::default();
        let mut scope = scope.clone();
        let guard = Vec::new();
        let bound = Vec::new();
        for s in block {
            self.stmt_effects(&mut scope, s, &guard, &bound, &mut out);
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn access(
        &mut self,
        scope: &Scope,
        buf: &Sym,
        idx: &[Expr],
        kind: AccessKind,
        guard: &[Term],
        bound: &[Var],
        span: Span,
        out: &mut Effects,
    ) {
        if scope.local.contains(&buf.id()) {
            return;
        }
        let Some(view) = scope.views.get(&buf.id()).cloned() else {
            return;
        };
        if let Root::Buf(r) = view.root {
            if scope.local.contains(&r) {
                return;
            }
        }
        let mut env = Env {
            scope,
            strides: &mut self.strides,
            inexact: false,
        };
        let mut terms = Vec::new();
        let mut exact = true;
        for i in idx {
            match to_term(i, &mut env) {
                Ok(t) => terms.push(t),
                Err(_) => {
                    exact = false;
                    terms.push(unknown_int());
                }
            }
        }
        exact &= !env.inexact && view.exact && !guard.iter().any(has_unknown);
        out.accesses
            .push(view.access(&terms, kind, guard.to_vec(), bound.to_vec(), exact, span));
    }

    /// The reads of an expression (data reads and config reads).
    fn expr_reads(
        &mut self,
        scope: &Scope,
        e: &Expr,
        guard: &[Term],
        bound: &[Var],
        out: &mut Effects,
    ) {
        let mut reads = Vec::new();
        weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Read { buf, idx } => {
                reads.push((Some((buf.clone(), idx.clone())), None, x.span))
            }
            ExprKind::ReadConfig { config, field } => {
                reads.push((None, Some((config.name.clone(), *field)), x.span))
            }
            _ => {}
        });
        for (b, c, span) in reads {
            if let Some((buf, idx)) = b {
                self.access(scope, &buf, &idx, AccessKind::Read, guard, bound, span, out);
            }
            if let Some((name, field)) = c {
                out.accesses.push(Access {
                    root: Root::Config(name.clone(), field),
                    name,
                    idx: vec![],
                    kind: AccessKind::Read,
                    guard: guard.to_vec(),
                    bound: bound.to_vec(),
                    exact: true,
                    span,
                });
            }
        }
    }

    /// The reads of the coordinates of a window expression (config fields in control position).
    fn coord_reads(
        &mut self,
        scope: &Scope,
        e: &Expr,
        guard: &[Term],
        bound: &[Var],
        out: &mut Effects,
    ) {
        if let ExprKind::Window { coords, .. } = &e.kind {
            for c in coords {
                match c {
                    WinCoord::Point(x) => self.expr_reads(scope, x, guard, bound, out),
                    WinCoord::Interval(lo, hi) => {
                        self.expr_reads(scope, lo, guard, bound, out);
                        self.expr_reads(scope, hi, guard, bound, out);
                    }
                }
            }
        }
    }

    fn stmt_effects(
        &mut self,
        scope: &mut Scope,
        s: &Stmt,
        guard: &[Term],
        bound: &[Var],
        out: &mut Effects,
    ) {
        match &s.kind {
            StmtKind::Pass | StmtKind::Free { .. } => {}
            StmtKind::Assign { buf, idx, rhs } | StmtKind::Reduce { buf, idx, rhs } => {
                for i in idx {
                    self.expr_reads(scope, i, guard, bound, out);
                }
                self.expr_reads(scope, rhs, guard, bound, out);
                let kind = if matches!(s.kind, StmtKind::Assign { .. }) {
                    AccessKind::Write
                } else {
                    AccessKind::Reduce
                };
                self.access(scope, buf, idx, kind, guard, bound, s.span, out);
            }
            StmtKind::WriteConfig { config, field, rhs } => {
                self.expr_reads(scope, rhs, guard, bound, out);
                out.accesses.push(Access {
                    root: Root::Config(config.name.clone(), *field),
                    name: config.name.clone(),
                    idx: vec![],
                    kind: AccessKind::Write,
                    guard: guard.to_vec(),
                    bound: bound.to_vec(),
                    exact: true,
                    span: s.span,
                });
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.expr_reads(scope, cond, guard, bound, out);
                // A condition without a term is an unknown: both branches may run.
                let c = self.term(scope, cond).unwrap_or_else(unknown_bool);
                for (body, positive) in [(then_body, true), (else_body, false)] {
                    let mut inner = scope.clone();
                    let mut g = guard.to_vec();
                    g.push(if positive {
                        c.clone()
                    } else {
                        Term::not(c.clone())
                    });
                    for t in body {
                        self.stmt_effects(&mut inner, t, &g, bound, out);
                    }
                }
            }
            StmtKind::For {
                var, lo, hi, body, ..
            } => {
                self.expr_reads(scope, lo, guard, bound, out);
                self.expr_reads(scope, hi, guard, bound, out);
                let v = sym_var(var);
                let mut inner = scope.clone();
                inner.ctrl.insert(var.id(), Term::IntVar(v.clone()));
                let mut g = guard.to_vec();
                let l = self.term(scope, lo).unwrap_or_else(unknown_int);
                let h = self.term(scope, hi).unwrap_or_else(unknown_int);
                g.push(Term::le(l, Term::IntVar(v.clone())));
                g.push(Term::lt(Term::IntVar(v.clone()), h));
                let mut b = bound.to_vec();
                b.push(v);
                for t in body {
                    self.stmt_effects(&mut inner, t, &g, &b, out);
                }
            }
            StmtKind::Alloc { buf, ty } => {
                for e in &ty.shape {
                    self.expr_reads(scope, e, guard, bound, out);
                }
                scope.local.insert(buf.id());
                scope.views.insert(buf.id(), View::whole(buf, ty.rank()));
            }
            StmtKind::Window { rhs, .. } => {
                // The coordinates may read config fields.
                self.coord_reads(scope, rhs, guard, bound, out);
                self.declare(scope, s)
            }
            StmtKind::Call { proc, args } => {
                for a in args {
                    if a.ty.is_control() {
                        self.expr_reads(scope, a, guard, bound, out);
                    } else {
                        self.coord_reads(scope, a, guard, bound, out);
                    }
                }
                self.call_effects(scope, proc, args, guard, bound, s.span, out);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call_effects(
        &mut self,
        scope: &Scope,
        callee: &Arc<Proc>,
        args: &[Expr],
        guard: &[Term],
        bound: &[Var],
        span: Span,
        out: &mut Effects,
    ) {
        // The callee is summarised by its simplest equivalent version, the root of its provenance
        // chain short of any polluting step (the paper's §4 optimisation, which keeps the solver's
        // queries the size of the original code however far the callee was scheduled): it
        // transforms the store exactly as the callee does. Versions in one chain share a
        // signature, so its parameters bind to the arguments by position.
        let def: &Proc = match callee.simplest_equivalent() {
            root if !self.calls_as_written && root.args.len() == callee.args.len() => root,
            _ => callee,
        };
        // The callee's body runs in a scope of its own: its parameters bound to the arguments.
        let mut inner = Scope {
            local: scope.local.clone(),
            ..Scope::default()
        };
        for (param, arg) in def.args.iter().zip(args) {
            match &param.kind {
                ArgKind::Ctrl(_) => {
                    let t = self.term(scope, arg).unwrap_or_else(unknown_int);
                    inner.ctrl.insert(param.sym.id(), t);
                }
                ArgKind::Buf(_) => {
                    if let Some(v) = self.view_of(scope, arg) {
                        if let Root::Buf(r) = &v.root {
                            if scope.local.contains(r) {
                                inner.local.insert(param.sym.id());
                            }
                        }
                        inner.views.insert(param.sym.id(), v);
                    }
                }
            }
        }
        if self.call_footprints && self.calls_as_written {
            self.call_footprints(callee, &inner, guard, bound, span, out);
            return;
        }
        let sub = self.callee_effects(&callee.name, &def.body, &mut inner, guard, bound);
        for mut a in sub.accesses {
            a.span = span;
            out.accesses.push(a);
        }
    }

    /// The effects of a callee's body run in `inner` (its parameters bound), under the caller's
    /// `guard` and `bound`. The callee's own loop variables must not be confused with the
    /// caller's: they are renamed per call site (`v@callee`, each a new symbol).
    fn callee_effects(
        &mut self,
        callee: &str,
        body: &[Stmt],
        inner: &mut Scope,
        guard: &[Term],
        bound: &[Var],
    ) -> Effects {
        let g = guard.to_vec();
        let b = bound.to_vec();
        let mut sub = Effects::default();
        for t in body {
            self.stmt_effects(inner, t, &g, &b, &mut sub);
        }
        let mut map = HashMap::new();
        for a in &sub.accesses {
            for v in &a.bound[bound.len().min(a.bound.len())..] {
                map.entry(v.id).or_insert_with(|| {
                    let name = format!("{}@{callee}", v.name);
                    Term::IntVar(Var {
                        id: Sym::new(&name).id(),
                        name,
                    })
                });
            }
        }
        sub.subst(&map)
    }

    /// [`Analysis::footprints_as_written`] for a call of `callee` whose parameters `inner`
    /// binds: its config accesses as they are, and for each buffer parameter and each kind of
    /// access the body makes through it (found with the parameter as a root of its own), one
    /// access to every cell of the argument's window, `0 <= f_d < extent_d`.
    fn call_footprints(
        &mut self,
        callee: &Proc,
        inner: &Scope,
        guard: &[Term],
        bound: &[Var],
        span: Span,
        out: &mut Effects,
    ) {
        let mut probe = Scope {
            ctrl: inner.ctrl.clone(),
            ..Scope::default()
        };
        for param in &callee.args {
            if let ArgKind::Buf(bt) = &param.kind {
                probe
                    .views
                    .insert(param.sym.id(), View::whole(&param.sym, bt.rank()));
            }
        }
        let through = self.callee_effects(&callee.name, &callee.body, &mut probe, guard, bound);
        for a in through.accesses.iter() {
            if matches!(a.root, Root::Config(..)) {
                let mut a = a.clone();
                a.span = span;
                out.accesses.push(a);
            }
        }
        for param in &callee.args {
            let ArgKind::Buf(bt) = &param.kind else {
                continue;
            };
            let Some(view) = inner.views.get(&param.sym.id()) else {
                continue;
            };
            if inner.local.contains(&param.sym.id()) {
                continue;
            }
            let own = Root::Buf(param.sym.id());
            let mut kinds: Vec<AccessKind> = Vec::new();
            for a in through.accesses.iter().filter(|a| a.root == own) {
                if !kinds.contains(&a.kind) {
                    kinds.push(a.kind);
                }
            }
            if kinds.is_empty() {
                continue;
            }
            let mut cell = Vec::new();
            let mut within = guard.to_vec();
            let mut vars = bound.to_vec();
            for (d, extent) in bt.shape.iter().enumerate() {
                let name = format!("{}{d}@{}", param.sym.name(), callee.name);
                let f = Var {
                    id: Sym::new(&name).id(),
                    name,
                };
                let t = Term::IntVar(f.clone());
                within.push(Term::le(Term::Int(0), t.clone()));
                if let Some(e) = self.term(inner, extent) {
                    within.push(Term::lt(t.clone(), e));
                }
                cell.push(t);
                vars.push(f);
            }
            for kind in kinds {
                out.accesses.push(view.access(
                    &cell,
                    kind,
                    within.clone(),
                    vars.clone(),
                    false,
                    span,
                ));
            }
        }
    }

    /// Whether two accesses may touch one location under `facts`; the counterexample when they
    /// may. `extra` holds more facts (for example `i < i'`).
    pub fn overlap(
        &mut self,
        facts: &[Term],
        extra: &[Term],
        a: &Access,
        b: &Access,
    ) -> Option<Vec<(String, i64)>> {
        let (all, apart) = overlap_query(facts, extra, a, b)?;
        self.prove(&all, &apart).err()
    }
}

/// The query "`a` and `b` touch different locations" (facts, goal), or `None` when they cannot
/// meet (other roots or ranks).
fn overlap_query(
    facts: &[Term],
    extra: &[Term],
    a: &Access,
    b: &Access,
) -> Option<(Vec<Term>, Term)> {
    if a.root != b.root || a.idx.len() != b.idx.len() {
        return None;
    }
    let mut all: Vec<Term> = facts.to_vec();
    all.extend_from_slice(extra);
    all.extend(a.guard.iter().cloned());
    all.extend(b.guard.iter().cloned());
    let same = Term::And(
        a.idx
            .iter()
            .zip(&b.idx)
            .map(|(x, y)| Term::eq(x.clone(), y.clone()))
            .collect(),
    );
    Some((all, Term::not(same)))
}

/// A counterexample's named values.
fn named(model: Vec<(Var, i64)>) -> Vec<(String, i64)> {
    model
        .into_iter()
        .filter(|(v, _)| !v.name.is_empty())
        .map(|(v, x)| (v.name, x))
        .collect()
}

/// Whether two access kinds conflict when their order changes. Reads commute with reads and
/// reductions with reductions (the paper's `Commutes`); `races` also counts two reductions, for
/// parallel execution where each reduction is a read-modify-write.
pub fn kinds_conflict(a: AccessKind, b: AccessKind, races: bool) -> bool {
    use AccessKind::*;
    match (a, b) {
        (Read, Read) => false,
        (Reduce, Reduce) => races,
        _ => true,
    }
}

/// A conflict found between two pieces of code.
#[derive(Clone, Debug)]
pub struct Conflict {
    pub first: Access,
    pub second: Access,
    pub counterexample: Vec<(String, i64)>,
}

impl Analysis {
    /// The first conflict between `a` and `b` under the facts, if any: the paper's `¬Commutes`.
    /// The pairs are asked one at a time only where [`Self::pairs_left_by_unions`] could not
    /// prove them apart as sets, in the order of `a`'s accesses, then `b`'s.
    pub fn conflict(
        &mut self,
        facts: &[Term],
        extra: &[Term],
        a: &Effects,
        b: &Effects,
        races: bool,
    ) -> Option<Conflict> {
        self.conflict_as(facts, extra, a, b, races, false)
    }

    /// [`Analysis::conflict`]; with `first_pass`, as a first pass that another check follows
    /// where it finds a conflict: a pair the solver leaves undecided counts as a conflict, but
    /// does not tighten the solver's limits for the queries of the step after it.
    pub(crate) fn conflict_as(
        &mut self,
        facts: &[Term],
        extra: &[Term],
        a: &Effects,
        b: &Effects,
        races: bool,
        first_pass: bool,
    ) -> Option<Conflict> {
        let mut left = self.pairs_left_by_unions(facts, extra, a, b, races);
        left.sort_unstable();
        for (i, j) in left {
            let (x, y) = (&a.accesses[i], &b.accesses[j]);
            let Some((all, apart)) = overlap_query(facts, extra, x, y) else {
                continue;
            };
            let met = if first_pass {
                match self.solver.check_valid_attempt(&all, &apart) {
                    Validity::Valid => None,
                    Validity::Invalid(model) => Some(named(model)),
                    Validity::Unknown => Some(Vec::new()),
                }
            } else {
                self.prove(&all, &apart).err()
            };
            if let Some(cex) = met {
                return Some(Conflict {
                    first: x.clone(),
                    second: y.clone(),
                    counterexample: cex,
                });
            }
        }
        None
    }

    /// The pairs `(i, j)` of an access of `a` and one of `b` that may conflict (same root, kinds
    /// that do not commute) and that no set query proved apart. With `e` a fresh cell, the
    /// accesses of `a` of one kind to one root are the union `⋁ₓ (guardₓ ∧ e = idxₓ)`, those
    /// of `b` of the kinds that conflict with it another; the two sets are disjoint when their
    /// conjunction is unsatisfiable. By distributivity that conjunction is the disjunction of
    /// the pairwise overlap conditions, so a proof covers every pair of the two sets (a big
    /// loop body's hundreds of accesses made tens of thousands of pairwise queries). Where the
    /// solver finds the sets meet, their pairs are left to be asked in order (the first that
    /// meets is the conflict, found in a few queries); where it leaves the query undecided (too
    /// big for its quick try: a call's hundreds of accesses under a `specialize` took 12 s
    /// pair by pair), the larger set is halved and each half asked again, down to a few pairs.
    /// (Halving a set that meets would ask about every sub-pair of a body whose accesses all
    /// race, thousands of queries before the first pair.)
    fn pairs_left_by_unions(
        &mut self,
        facts: &[Term],
        extra: &[Term],
        a: &Effects,
        b: &Effects,
        races: bool,
    ) -> Vec<(usize, usize)> {
        const KINDS: [AccessKind; 3] = [AccessKind::Read, AccessKind::Write, AccessKind::Reduce];
        // Per (root, number of indices): the accesses of `a` and of `b`, by kind.
        type Sides = [[Vec<usize>; 3]; 2];
        let mut groups: Vec<Sides> = Vec::new();
        let mut index: HashMap<(&Root, usize), usize> = HashMap::new();
        for (side, eff) in [a, b].into_iter().enumerate() {
            for (k, x) in eff.accesses.iter().enumerate() {
                let g = *index.entry((&x.root, x.idx.len())).or_insert_with(|| {
                    groups.push(Default::default());
                    groups.len() - 1
                });
                groups[g][side][x.kind as usize].push(k);
            }
        }
        let mut hypotheses = facts.to_vec();
        hypotheses.extend_from_slice(extra);
        let mut left = Vec::new();
        for sides in &groups {
            for ka in KINDS {
                let xs = &sides[0][ka as usize];
                let ys: Vec<usize> = KINDS
                    .iter()
                    .filter(|kb| kinds_conflict(ka, **kb, races))
                    .flat_map(|kb| sides[1][*kb as usize].iter().copied())
                    .collect();
                if !xs.is_empty() && !ys.is_empty() {
                    self.halve_until_apart(&hypotheses, a, b, xs, &ys, true, &mut left);
                }
            }
        }
        left
    }

    /// [`Self::pairs_left_by_unions`] for the accesses `xs` of `a` and `ys` of `b` (one root,
    /// kinds that conflict): the pairs left in `left`. The whole sets (`whole`) get the
    /// solver's fresh context too where its quick try is undecided (unions over quotients need
    /// it); their halves only the quick try, what it leaves undecided being halved again.
    #[allow(clippy::too_many_arguments)]
    fn halve_until_apart(
        &mut self,
        hypotheses: &[Term],
        a: &Effects,
        b: &Effects,
        xs: &[usize],
        ys: &[usize],
        whole: bool,
        left: &mut Vec<(usize, usize)>,
    ) {
        // A few pairs are as quickly asked one at a time, in smaller queries.
        if xs.len() * ys.len() <= 4 {
            left.extend(xs.iter().flat_map(|&i| ys.iter().map(move |&j| (i, j))));
            return;
        }
        let cells = self.cells(a.accesses[xs[0]].idx.len());
        let union = |eff: &Effects, ks: &[usize]| {
            let accesses: Vec<&Access> = ks.iter().map(|&k| &eff.accesses[k]).collect();
            union_at(&accesses, &cells)
        };
        let meet = Term::And(vec![union(a, xs), union(b, ys)]);
        // Undecided is no answer here (halves or pairs decide), so it must not tighten the
        // solver's limits for the queries that follow.
        let disjoint = Term::not(meet);
        let proved = if whole {
            self.solver.check_valid_attempt(hypotheses, &disjoint)
        } else {
            self.solver.check_valid_quick(hypotheses, &disjoint)
        };
        match proved {
            Validity::Valid => return,
            Validity::Invalid(_) => {
                left.extend(xs.iter().flat_map(|&i| ys.iter().map(move |&j| (i, j))));
                return;
            }
            Validity::Unknown => {}
        }
        if xs.len() >= ys.len() {
            let (x1, x2) = xs.split_at(xs.len() / 2);
            self.halve_until_apart(hypotheses, a, b, x1, ys, false, left);
            self.halve_until_apart(hypotheses, a, b, x2, ys, false, left);
        } else {
            let (y1, y2) = ys.split_at(ys.len() / 2);
            self.halve_until_apart(hypotheses, a, b, xs, y1, false, left);
            self.halve_until_apart(hypotheses, a, b, xs, y2, false, left);
        }
    }

    /// `n` variables that stand for the indices of one cell in [`Self::no_conflict_between_unions`]
    /// (the same ones every time, so that the solver's cache recognises a repeated query).
    fn cells(&mut self, n: usize) -> Vec<Var> {
        while self.cells.len() < n {
            let name = format!("cell{}", self.cells.len());
            self.cells.push(sym_var(&Sym::new(name)));
        }
        self.cells[..n].to_vec()
    }
}

/// The cells `accesses` touch, as a condition on the index variables `cells`: some access runs
/// (its guard holds) and its index is `cells`.
fn union_at(accesses: &[&Access], cells: &[Var]) -> Term {
    Term::Or(
        accesses
            .iter()
            .map(|x| {
                let mut holds = x.guard.clone();
                holds.extend(
                    cells
                        .iter()
                        .zip(&x.idx)
                        .map(|(c, i)| Term::eq(Term::IntVar(c.clone()), i.clone())),
                );
                Term::And(holds)
            })
            .collect(),
    )
}

/// Whether an expression mentions a symbol (as a variable, buffer or stride).
pub fn mentions(e: &Expr, sym: &Sym) -> bool {
    mentions_any(e, &|s| s == sym)
}

/// Whether an expression mentions a symbol (as a variable, buffer or stride) that `hit` accepts.
fn mentions_any(e: &Expr, hit: &dyn Fn(&Sym) -> bool) -> bool {
    let mut found = false;
    weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
        ExprKind::Var(s)
        | ExprKind::Read { buf: s, .. }
        | ExprKind::Stride { buf: s, .. }
        | ExprKind::Window { buf: s, .. } => found |= hit(s),
        _ => {}
    });
    found
}

/// Whether a block mentions a symbol anywhere (expressions, written buffers, freed buffers).
pub fn block_mentions(b: &[Stmt], sym: &Sym) -> bool {
    block_mentions_any(b, &|s| s == sym)
}

/// Whether a block mentions, anywhere, a symbol that `hit` accepts.
pub fn block_mentions_any(b: &[Stmt], hit: &dyn Fn(&Sym) -> bool) -> bool {
    let mut found = false;
    let b: weft_ir::Block = b.to_vec();
    weft_ir::visit::walk_block(&b, &mut |s| {
        found |= weft_ir::visit::stmt_exprs(s)
            .iter()
            .any(|e| mentions_any(e, hit));
        found |= match &s.kind {
            StmtKind::Assign { buf, .. }
            | StmtKind::Reduce { buf, .. }
            | StmtKind::Free { buf } => hit(buf),
            _ => false,
        };
    });
    found
}

/// The type of the loop variable term.
pub fn index_term(sym: &Sym) -> Term {
    Term::IntVar(sym_var(sym))
}
