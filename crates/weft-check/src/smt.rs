//! A small solver interface: quantifier-free linear integer arithmetic terms, and a validity
//! query that returns a counterexample. z3 implements it ([`Z3Solver`]); another solver can be
//! plugged in by implementing [`Solver`].

use std::collections::HashMap;
use std::fmt;

/// A solver variable: a unique id and a display name (`M`, `i`, `stride(A, 0)`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var {
    pub id: u64,
    pub name: String,
}

/// An integer or boolean term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    Int(i64),
    Bool(bool),
    IntVar(Var),
    BoolVar(Var),
    Add(Box<Term>, Box<Term>),
    Sub(Box<Term>, Box<Term>),
    Neg(Box<Term>),
    /// Multiplication; linear when one side is a constant.
    Mul(Box<Term>, Box<Term>),
    /// Euclidean division (floor division for a positive divisor), as in SMT-LIB.
    Div(Box<Term>, Box<Term>),
    Mod(Box<Term>, Box<Term>),
    Ite(Box<Term>, Box<Term>, Box<Term>),
    Lt(Box<Term>, Box<Term>),
    Le(Box<Term>, Box<Term>),
    Eq(Box<Term>, Box<Term>),
    And(Vec<Term>),
    Or(Vec<Term>),
    Not(Box<Term>),
}

#[allow(clippy::should_implement_trait)]
impl Term {
    pub fn add(a: Term, b: Term) -> Term {
        Term::Add(Box::new(a), Box::new(b))
    }
    pub fn sub(a: Term, b: Term) -> Term {
        Term::Sub(Box::new(a), Box::new(b))
    }
    pub fn mul(a: Term, b: Term) -> Term {
        Term::Mul(Box::new(a), Box::new(b))
    }
    pub fn lt(a: Term, b: Term) -> Term {
        Term::Lt(Box::new(a), Box::new(b))
    }
    pub fn le(a: Term, b: Term) -> Term {
        Term::Le(Box::new(a), Box::new(b))
    }
    pub fn eq(a: Term, b: Term) -> Term {
        Term::Eq(Box::new(a), Box::new(b))
    }
    pub fn not(a: Term) -> Term {
        Term::Not(Box::new(a))
    }
    pub fn ite(c: Term, a: Term, b: Term) -> Term {
        Term::Ite(Box::new(c), Box::new(a), Box::new(b))
    }

    /// Whether the term is linear (quasi-affine): every product has a side without variables,
    /// every quotient and remainder a divisor without variables.
    pub fn is_linear(&self) -> bool {
        /// (linear, mentions a variable)
        fn walk(t: &Term) -> (bool, bool) {
            match t {
                Term::Int(_) | Term::Bool(_) => (true, false),
                Term::IntVar(_) | Term::BoolVar(_) => (true, true),
                Term::Mul(a, b) => {
                    let ((la, va), (lb, vb)) = (walk(a), walk(b));
                    (la && lb && !(va && vb), va || vb)
                }
                Term::Div(a, b) | Term::Mod(a, b) => {
                    let ((la, va), (lb, vb)) = (walk(a), walk(b));
                    (la && lb && !vb, va || vb)
                }
                _ => {
                    let mut kids = Vec::new();
                    t.children(&mut kids);
                    kids.into_iter()
                        .map(walk)
                        .fold((true, false), |(l, v), (lk, vk)| (l && lk, v || vk))
                }
            }
        }
        walk(self).0
    }

    /// The number of nodes of the term, counted up to `limit` (the count stops there).
    pub fn size_at_most(&self, limit: usize) -> usize {
        let mut n = 0;
        let mut stack = vec![self];
        while let Some(t) = stack.pop() {
            n += 1;
            if n >= limit {
                break;
            }
            t.children(&mut stack);
        }
        n
    }

    /// Collect the variables of the term.
    pub fn vars(&self, out: &mut Vec<Var>) {
        let mut terms = Vec::new();
        self.var_terms(&mut terms);
        for t in terms {
            if let Term::IntVar(v) | Term::BoolVar(v) = t {
                if !out.contains(&v) {
                    out.push(v)
                }
            }
        }
    }

    /// Collect the variables of the term as terms (`IntVar` or `BoolVar`), each once.
    pub fn var_terms(&self, out: &mut Vec<Term>) {
        if let Term::IntVar(_) | Term::BoolVar(_) = self {
            if !out.contains(self) {
                out.push(self.clone())
            }
            return;
        }
        let mut kids = Vec::new();
        self.children(&mut kids);
        for k in kids {
            k.var_terms(out);
        }
    }

    /// The same term with its direct subterms replaced, in order, by `kids` (as many as
    /// [`Term::children`] gives).
    pub fn with_children(&self, kids: Vec<Term>) -> Term {
        let mut k = kids.into_iter();
        let mut next = || Box::new(k.next().unwrap_or(Term::Int(0)));
        match self {
            Term::Int(_) | Term::Bool(_) | Term::IntVar(_) | Term::BoolVar(_) => self.clone(),
            Term::Neg(_) => Term::Neg(next()),
            Term::Not(_) => Term::Not(next()),
            Term::Add(..) => Term::Add(next(), next()),
            Term::Sub(..) => Term::Sub(next(), next()),
            Term::Mul(..) => Term::Mul(next(), next()),
            Term::Div(..) => Term::Div(next(), next()),
            Term::Mod(..) => Term::Mod(next(), next()),
            Term::Lt(..) => Term::Lt(next(), next()),
            Term::Le(..) => Term::Le(next(), next()),
            Term::Eq(..) => Term::Eq(next(), next()),
            Term::Ite(..) => Term::Ite(next(), next(), next()),
            Term::And(v) => Term::And(v.iter().map(|_| *next()).collect()),
            Term::Or(v) => Term::Or(v.iter().map(|_| *next()).collect()),
        }
    }

    /// The term with variable `id` replaced by `by`.
    pub fn subst(&self, id: u64, by: &Term) -> Term {
        match self {
            Term::IntVar(v) | Term::BoolVar(v) if v.id == id => by.clone(),
            Term::Int(_) | Term::Bool(_) | Term::IntVar(_) | Term::BoolVar(_) => self.clone(),
            _ => {
                let mut kids = Vec::new();
                self.children(&mut kids);
                self.with_children(kids.into_iter().map(|k| k.subst(id, by)).collect())
            }
        }
    }

    /// Replace every variable whose id `by` maps, all at once (a replacement is not
    /// substituted again, so maps that swap variables are right).
    pub fn subst_all(&self, by: &std::collections::HashMap<u64, Term>) -> Term {
        match self {
            Term::IntVar(v) | Term::BoolVar(v) => by.get(&v.id).unwrap_or(self).clone(),
            Term::Int(_) | Term::Bool(_) => self.clone(),
            _ => {
                let mut kids = Vec::new();
                self.children(&mut kids);
                self.with_children(kids.into_iter().map(|k| k.subst_all(by)).collect())
            }
        }
    }

    /// How often variable `id` occurs in the term.
    pub fn occurrences(&self, id: u64) -> usize {
        match self {
            Term::IntVar(v) | Term::BoolVar(v) => usize::from(v.id == id),
            _ => {
                let mut kids = Vec::new();
                self.children(&mut kids);
                kids.iter().map(|k| k.occurrences(id)).sum()
            }
        }
    }

    /// The number of nodes of the term.
    pub fn size(&self) -> usize {
        let mut kids = Vec::new();
        self.children(&mut kids);
        1 + kids.iter().map(|k| k.size()).sum::<usize>()
    }

    /// The direct subterms, in order.
    pub fn children<'a>(&'a self, out: &mut Vec<&'a Term>) {
        match self {
            Term::Int(_) | Term::Bool(_) | Term::IntVar(_) | Term::BoolVar(_) => {}
            Term::Neg(a) | Term::Not(a) => out.push(a),
            Term::Add(a, b)
            | Term::Sub(a, b)
            | Term::Mul(a, b)
            | Term::Div(a, b)
            | Term::Mod(a, b)
            | Term::Lt(a, b)
            | Term::Le(a, b)
            | Term::Eq(a, b) => out.extend([&**a, &**b]),
            Term::Ite(c, a, b) => out.extend([&**c, &**a, &**b]),
            Term::And(v) | Term::Or(v) => out.extend(v.iter()),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Int(v) => write!(f, "{v}"),
            Term::Bool(v) => write!(f, "{v}"),
            Term::IntVar(v) | Term::BoolVar(v) => write!(f, "{}", v.name),
            Term::Add(a, b) => write!(f, "({a} + {b})"),
            Term::Sub(a, b) => write!(f, "({a} - {b})"),
            Term::Neg(a) => write!(f, "-{a}"),
            Term::Mul(a, b) => write!(f, "({a} * {b})"),
            Term::Div(a, b) => write!(f, "({a} / {b})"),
            Term::Mod(a, b) => write!(f, "({a} % {b})"),
            Term::Ite(c, a, b) => write!(f, "select({c}, {a}, {b})"),
            Term::Lt(a, b) => write!(f, "{a} < {b}"),
            Term::Le(a, b) => write!(f, "{a} <= {b}"),
            Term::Eq(a, b) => write!(f, "{a} == {b}"),
            Term::And(v) => {
                let s: Vec<String> = v.iter().map(|t| t.to_string()).collect();
                write!(f, "({})", s.join(" and "))
            }
            Term::Or(v) => {
                let s: Vec<String> = v.iter().map(|t| t.to_string()).collect();
                write!(f, "({})", s.join(" or "))
            }
            Term::Not(a) => write!(f, "not ({a})"),
        }
    }
}

/// The answer to "do the facts imply the goal?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Validity {
    Valid,
    /// A counterexample: values of the variables of the query (in a stable order) under which
    /// the facts hold and the goal does not.
    Invalid(Vec<(Var, i64)>),
    /// The solver gave up (for example on non-linear arithmetic).
    Unknown,
}

/// A decision procedure for validity of `facts ⇒ goal` over integers and booleans.
pub trait Solver {
    fn check_valid(&mut self, facts: &[Term], goal: &Term) -> Validity;

    /// [`Solver::check_valid`] as a first attempt that another query will follow when it is
    /// undecided: an undecided answer here does not tighten the limits of the unit of work.
    fn check_valid_attempt(&mut self, facts: &[Term], goal: &Term) -> Validity {
        self.check_valid(facts, goal)
    }

    /// [`Solver::check_valid_attempt`] with only the solver's cheap first try (no fresh context
    /// for a query it leaves undecided): for a query that the caller can also split into
    /// smaller ones when it is undecided.
    fn check_valid_quick(&mut self, facts: &[Term], goal: &Term) -> Validity {
        self.check_valid_attempt(facts, goal)
    }

    /// A new unit of work begins (a proc to check, a scheduling step): limits that earlier
    /// undecided queries tightened are restored, so its answers do not depend on the work
    /// before it.
    fn new_budget(&mut self) {}

    /// Whether its decided answers are facts about the query alone (a decision procedure, not
    /// a stand-in of a test), so that every [`CachingSolver`] of the thread may share them.
    fn answers_are_shared(&self) -> bool {
        false
    }
}

/// Statistics kept by [`CachingSolver`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SolverStats {
    pub queries: u64,
    pub cache_hits: u64,
    pub solver_time: std::time::Duration,
}

/// How hard [`CachingSolver`] asks its inner solver ([`Solver::check_valid`], `_attempt`,
/// `_quick`).
#[derive(Clone, Copy)]
enum Effort {
    Full,
    FirstAttempt,
    Quick,
}

/// A query: its facts and its goal.
type Query = (Vec<Term>, Term);

/// Decided queries shared by the thread's [`CachingSolver`]s whose inner solver shares them
/// ([`Solver::answers_are_shared`]), and the term nodes their keys hold.
#[derive(Default)]
struct SharedAnswers {
    answers: HashMap<Query, Validity>,
    nodes: usize,
}

thread_local! {
    /// A schedule's steps, its final check and the module's check ask many of the same queries
    /// through checkers of their own. Whether `facts ⇒ goal` holds depends on the query alone,
    /// so a decided answer stays right; a query left undecided is not kept. (Whether a query
    /// that the limited tries find hard is decided may then depend on what the thread checked
    /// before: an answer is never wrong, but a borderline program may be accepted after one
    /// check and refused as undecided without it.) Emptied when the terms it holds pass
    /// [`SHARED_ANSWERS_MAX_NODES`], so a long-lived thread's memory stays bounded (a few tens
    /// of MB).
    static SHARED_ANSWERS: std::cell::RefCell<SharedAnswers> =
        std::cell::RefCell::new(SharedAnswers::default());
}

/// About 40 bytes a node: loading examples/sgemm.weft keeps about 1,000 queries of about 115
/// nodes each.
const SHARED_ANSWERS_MAX_NODES: usize = 1 << 20;

/// Forget the thread's shared answers, so that the next checks ask the solver again (for
/// benchmarks that time a check on its own).
pub fn forget_shared_answers() {
    SHARED_ANSWERS.with(|m| *m.borrow_mut() = SharedAnswers::default());
}

/// Caches answers of an inner solver by the exact query.
pub struct CachingSolver<S: Solver> {
    inner: S,
    cache: HashMap<Query, Validity>,
    pub stats: SolverStats,
}

impl<S: Solver> CachingSolver<S> {
    pub fn new(inner: S) -> Self {
        CachingSolver {
            inner,
            cache: HashMap::new(),
            stats: SolverStats::default(),
        }
    }
}

impl<S: Solver> CachingSolver<S> {
    /// [`Solver::check_valid`]: the relevant facts first, then all of them (`how`: whether an
    /// undecided answer to the full query tightens the limits, or ends the quick try).
    fn sliced_then_full(&mut self, facts: &[Term], goal: &Term, how: Effort) -> Validity {
        self.stats.queries += 1;
        let sliced = relevant_facts(facts, goal);
        let first = match how {
            Effort::Quick => Effort::Quick,
            _ => Effort::FirstAttempt,
        };
        if sliced.len() < facts.len() && self.cached(sliced, goal, first) == Validity::Valid {
            return Validity::Valid;
        }
        self.cached(facts.to_vec(), goal, how)
    }

    /// The inner solver's answer to exactly this query, through the cache.
    fn cached(&mut self, facts: Vec<Term>, goal: &Term, how: Effort) -> Validity {
        let key = (facts, goal.clone());
        let shared = self.inner.answers_are_shared();
        let known = if shared {
            SHARED_ANSWERS.with(|m| m.borrow().answers.get(&key).cloned())
        } else {
            self.cache.get(&key).cloned()
        };
        if let Some(v) = known {
            self.stats.cache_hits += 1;
            return v;
        }
        let t0 = std::time::Instant::now();
        let v = match how {
            Effort::Full => self.inner.check_valid(&key.0, goal),
            Effort::FirstAttempt => self.inner.check_valid_attempt(&key.0, goal),
            Effort::Quick => self.inner.check_valid_quick(&key.0, goal),
        };
        self.stats.solver_time += t0.elapsed();
        // "Undecided" depends on the limit the query had; another unit of work may decide it.
        if v != Validity::Unknown {
            if shared {
                let nodes = key
                    .0
                    .iter()
                    .chain([&key.1])
                    .map(|t| t.size_at_most(usize::MAX))
                    .sum::<usize>();
                SHARED_ANSWERS.with(|m| {
                    let mut m = m.borrow_mut();
                    if m.nodes + nodes > SHARED_ANSWERS_MAX_NODES {
                        *m = SharedAnswers::default();
                    }
                    m.nodes += nodes;
                    m.answers.insert(key, v.clone());
                });
            } else {
                self.cache.insert(key, v.clone());
            }
        }
        v
    }
}

impl<S: Solver> Solver for CachingSolver<S> {
    /// The query is first asked of the facts that can bear on the goal ([`relevant_facts`]): a
    /// proc's hundreds of facts about sizes, derived bounds and enclosing loops mostly speak of
    /// other variables, and z3 pays for every one. A subset of the facts that implies the goal
    /// is a proof; anything else (the facts left out may contradict each other, which makes
    /// every goal hold) is asked again of all the facts, so the answer, and its
    /// counterexample, are the full query's (and the first attempt, when undecided, does not
    /// tighten the limits of the unit of work).
    fn check_valid(&mut self, facts: &[Term], goal: &Term) -> Validity {
        self.sliced_then_full(facts, goal, Effort::Full)
    }

    /// [`Self::check_valid`] where an undecided answer does not tighten the limits (the caller
    /// has another way to decide).
    fn check_valid_attempt(&mut self, facts: &[Term], goal: &Term) -> Validity {
        self.sliced_then_full(facts, goal, Effort::FirstAttempt)
    }

    fn check_valid_quick(&mut self, facts: &[Term], goal: &Term) -> Validity {
        self.sliced_then_full(facts, goal, Effort::Quick)
    }

    fn new_budget(&mut self) {
        self.inner.new_budget()
    }

    fn answers_are_shared(&self) -> bool {
        self.inner.answers_are_shared()
    }
}

/// The facts that can bear on the goal. A definition `v == e` (of a derived bound, a min/max
/// operand: `v` not in `e`) is kept when `v` is reachable from the goal, and makes the
/// variables of `e` reachable; any other fact is kept when it mentions a reachable variable,
/// and makes all its variables reachable. Facts without variables are kept (a false one proves
/// everything). Definitions are followed one way only because every derived bound is defined
/// from the same few window variables: followed both ways they would connect every fact.
pub fn relevant_facts(facts: &[Term], goal: &Term) -> Vec<Term> {
    fn var_ids(t: &Term, out: &mut Vec<u64>) {
        match t {
            Term::IntVar(v) | Term::BoolVar(v) => out.push(v.id),
            _ => {
                let mut kids = Vec::new();
                t.children(&mut kids);
                for k in kids {
                    var_ids(k, out);
                }
            }
        }
    }
    // For each variable: the facts that define it, and the other facts that mention it.
    let mut defines: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut mentions: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut vars_of = Vec::with_capacity(facts.len());
    let mut keep = vec![false; facts.len()];
    for (i, f) in facts.iter().enumerate() {
        let mut ids = Vec::new();
        var_ids(f, &mut ids);
        ids.sort_unstable();
        ids.dedup();
        let defined = match f {
            Term::Eq(a, e) => match &**a {
                Term::IntVar(v) | Term::BoolVar(v) if e.occurrences(v.id) == 0 => Some(v.id),
                _ => None,
            },
            _ => None,
        };
        match defined {
            Some(v) => defines.entry(v).or_default().push(i),
            None if ids.is_empty() => keep[i] = true,
            None => {
                for &id in &ids {
                    mentions.entry(id).or_default().push(i);
                }
            }
        }
        vars_of.push(ids);
    }
    let mut reached = std::collections::HashSet::new();
    let mut work = Vec::new();
    var_ids(goal, &mut work);
    while let Some(v) = work.pop() {
        if !reached.insert(v) {
            continue;
        }
        for &i in defines
            .get(&v)
            .into_iter()
            .chain(mentions.get(&v))
            .flatten()
        {
            if !keep[i] {
                keep[i] = true;
                work.extend(vars_of[i].iter().copied().filter(|w| !reached.contains(w)));
            }
        }
    }
    facts
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(f, _)| f.clone())
        .collect()
}

/// The z3 implementation (the `z3` crate on the system libz3).
///
/// The same program must be accepted or rejected the same way on an idle machine and under
/// load, in any process or thread. "Valid" and "invalid" are facts about the query; only
/// "undecided" depends on how far z3 got, and z3's search depends on the order of the
/// assertions, the names of the variables, and everything its context has seen before (term
/// ids). So a query is put in a canonical form (facts in the order of their text, variables
/// named by first occurrence) and limited by a count of z3's own steps (`rlimit`), not by time.
/// It is tried first in this solver's long-lived context with a small limit (fast: most
/// obligations take a few thousand steps); what that leaves undecided is decided in a fresh
/// context (about 10 ms to make), whose answer depends on the query and on how many queries of
/// the same unit of work (a proc, a scheduling step: [`Solver::new_budget`]) were undecided
/// before it: after two, the limit drops to a tenth, so that a proc with many undecidable
/// obligations is rejected in seconds rather than minutes.
pub struct Z3Solver {
    /// The long-lived context's solvers for the quick attempts, taken from this thread's
    /// [`WARM_SOLVERS`] when first needed and given back when this is dropped: `[linear,
    /// non-linear]` queries, the second with a wall-clock limit too ([`SAFETY_UNITS_PER_MS`]).
    solvers: [Option<z3::Solver>; 2],
    /// Whether a query is between its `push` and `pop`: a panic there (unwound and caught by a
    /// caller) leaves its assertions in the solver, which must then not go back to the pool,
    /// where they would be facts of every later query.
    in_query: bool,
    /// Queries the solver could not decide so far.
    unknowns: u32,
}

thread_local! {
    /// Solvers that earlier [`Z3Solver`]s used, each at scope level 0 with no assertion, with
    /// whether it has the wall-clock limit. A z3 solver's first `push` sets up its incremental
    /// core, which takes 2-4 ms (a query takes 10-100 us); a checker or a scheduling step that
    /// made a solver of its own paid that every time, a third of a schedule's time in all.
    /// Each belongs to the context that was the thread's when it was made: only one of the
    /// thread's context now is handed out (a caller may run a check inside
    /// `z3::with_z3_config`, which makes another context the thread's; terms of one context
    /// asserted in a solver of another crash z3).
    static WARM_SOLVERS: std::cell::RefCell<Vec<(bool, z3::Solver)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How many idle solvers a thread keeps.
const WARM_SOLVERS_KEPT: usize = 8;

/// How much work a query may take in the fresh context, in z3's resource units (`rlimit`;
/// about 0.5 to 1.5 per microsecond on the reference machine). One that runs out (non-linear,
/// or pathological) is reported as undecided. After a few such queries in one unit of work the
/// rest get a tenth.
const FIRST_RLIMIT: u32 = 3_000_000;
const LATER_RLIMIT: u32 = 300_000;
const FULL_LIMITS: u32 = 2;
/// The limit of the first attempt, in the long-lived context.
const QUICK_RLIMIT: u32 = 100_000;
/// A wall-clock limit far beyond the resource limit: a safety net for work z3 does not count
/// (a query of 3,000,000 units gets 60 s, one of 100,000 2 s), never what decides a query in
/// practice. z3 arms a timer for every query that has one, about 20 us (a linear quick attempt
/// takes 10-100 us), so the quick attempts of linear queries, which z3 decides within their
/// resource limit, go without; a non-linear one took 26 s there without it.
const SAFETY_UNITS_PER_MS: u32 = 50;

impl Default for Z3Solver {
    fn default() -> Self {
        Z3Solver::new()
    }
}

impl Z3Solver {
    pub fn new() -> Z3Solver {
        Z3Solver {
            solvers: [None, None],
            in_query: false,
            unknowns: 0,
        }
    }

    /// The quick attempts' solver for linear queries (`guarded`: for the others).
    fn warm(&mut self, guarded: bool) -> &z3::Solver {
        self.solvers[guarded as usize].get_or_insert_with(|| {
            let context = z3::Context::thread_local();
            WARM_SOLVERS
                .with(|w| {
                    let mut w = w.borrow_mut();
                    let k = w
                        .iter()
                        .rposition(|(g, s)| *g == guarded && s.get_context() == &context)?;
                    Some(w.swap_remove(k).1)
                })
                .unwrap_or_else(|| {
                    // A solver for the logic: z3's general solver spends about 4 ms building
                    // its tactics at its first query (which a pushed scope never uses), one
                    // for a logic 0.5-1 ms.
                    let logic = if guarded { "QF_NIA" } else { "QF_LIA" };
                    let solver = z3::Solver::new_for_logic(logic).unwrap_or_default();
                    limit(&solver, QUICK_RLIMIT, guarded);
                    solver
                })
        })
    }
}

impl Drop for Z3Solver {
    fn drop(&mut self) {
        // Every query that ended popped what it pushed, so the solvers are as they were made.
        // (During thread exit the pool may be gone already: they are then just dropped.)
        if self.in_query {
            return;
        }
        for (guarded, solver) in [false, true].into_iter().zip(&mut self.solvers) {
            let Some(solver) = solver.take() else {
                continue;
            };
            let _ = WARM_SOLVERS.try_with(|w| {
                let mut w = w.borrow_mut();
                if w.len() >= WARM_SOLVERS_KEPT {
                    // The oldest goes (it may belong to a context no longer the thread's).
                    w.remove(0);
                }
                w.push((guarded, solver));
            });
        }
    }
}

fn limit(solver: &z3::Solver, rlimit: u32, safety_timeout: bool) {
    let mut params = z3::Params::new();
    params.set_u32("rlimit", rlimit);
    if safety_timeout {
        params.set_u32("timeout", rlimit / SAFETY_UNITS_PER_MS);
    }
    solver.set_params(&params);
}

enum Z3Ast {
    Int(z3::ast::Int),
    Bool(z3::ast::Bool),
}

fn to_int(t: &Term, vars: &mut HashMap<u64, Z3Ast>) -> z3::ast::Int {
    match to_z3(t, vars) {
        Z3Ast::Int(i) => i,
        Z3Ast::Bool(b) => b.ite(&z3::ast::Int::from_i64(1), &z3::ast::Int::from_i64(0)),
    }
}

fn to_bool(t: &Term, vars: &mut HashMap<u64, Z3Ast>) -> z3::ast::Bool {
    match to_z3(t, vars) {
        Z3Ast::Bool(b) => b,
        Z3Ast::Int(i) => i.eq(z3::ast::Int::from_i64(0)).not(),
    }
}

fn to_z3(t: &Term, vars: &mut HashMap<u64, Z3Ast>) -> Z3Ast {
    use z3::ast::{Bool, Int};
    match t {
        Term::Int(v) => Z3Ast::Int(Int::from_i64(*v)),
        Term::Bool(b) => Z3Ast::Bool(Bool::from_bool(*b)),
        Term::IntVar(v) => {
            let n = vars.len();
            let e = vars
                .entry(v.id)
                .or_insert_with(|| Z3Ast::Int(Int::new_const(format!("v{n}"))));
            match e {
                Z3Ast::Int(i) => Z3Ast::Int(i.clone()),
                Z3Ast::Bool(b) => Z3Ast::Bool(b.clone()),
            }
        }
        Term::BoolVar(v) => {
            let n = vars.len();
            let e = vars
                .entry(v.id)
                .or_insert_with(|| Z3Ast::Bool(Bool::new_const(format!("v{n}"))));
            match e {
                Z3Ast::Int(i) => Z3Ast::Int(i.clone()),
                Z3Ast::Bool(b) => Z3Ast::Bool(b.clone()),
            }
        }
        Term::Add(a, b) => Z3Ast::Int(to_int(a, vars) + to_int(b, vars)),
        Term::Sub(a, b) => Z3Ast::Int(to_int(a, vars) - to_int(b, vars)),
        Term::Neg(a) => Z3Ast::Int(-to_int(a, vars)),
        Term::Mul(a, b) => Z3Ast::Int(to_int(a, vars) * to_int(b, vars)),
        Term::Div(a, b) => {
            // weft: x / 0 = 0. SMT-LIB leaves division by zero unspecified, so guard it.
            let (x, y) = (to_int(a, vars), to_int(b, vars));
            let zero = Int::from_i64(0);
            Z3Ast::Int(y.eq(&zero).ite(&zero, &x.div(&y)))
        }
        Term::Mod(a, b) => {
            let (x, y) = (to_int(a, vars), to_int(b, vars));
            let zero = Int::from_i64(0);
            Z3Ast::Int(y.eq(&zero).ite(&zero, &x.modulo(&y)))
        }
        Term::Ite(c, a, b) => {
            let c = to_bool(c, vars);
            match (to_z3(a, vars), to_z3(b, vars)) {
                (Z3Ast::Int(x), Z3Ast::Int(y)) => Z3Ast::Int(c.ite(&x, &y)),
                (Z3Ast::Bool(x), Z3Ast::Bool(y)) => Z3Ast::Bool(c.ite(&x, &y)),
                (x, y) => {
                    let x = match x {
                        Z3Ast::Int(i) => i,
                        Z3Ast::Bool(b) => b.ite(&Int::from_i64(1), &Int::from_i64(0)),
                    };
                    let y = match y {
                        Z3Ast::Int(i) => i,
                        Z3Ast::Bool(b) => b.ite(&Int::from_i64(1), &Int::from_i64(0)),
                    };
                    Z3Ast::Int(c.ite(&x, &y))
                }
            }
        }
        Term::Lt(a, b) => Z3Ast::Bool(to_int(a, vars).lt(to_int(b, vars))),
        Term::Le(a, b) => Z3Ast::Bool(to_int(a, vars).le(to_int(b, vars))),
        Term::Eq(a, b) => match (to_z3(a, vars), to_z3(b, vars)) {
            (Z3Ast::Bool(x), Z3Ast::Bool(y)) => Z3Ast::Bool(x.eq(&y)),
            (x, y) => {
                let x = match x {
                    Z3Ast::Int(i) => i,
                    Z3Ast::Bool(b) => b.ite(&Int::from_i64(1), &Int::from_i64(0)),
                };
                let y = match y {
                    Z3Ast::Int(i) => i,
                    Z3Ast::Bool(b) => b.ite(&Int::from_i64(1), &Int::from_i64(0)),
                };
                Z3Ast::Bool(x.eq(&y))
            }
        },
        Term::And(v) => {
            let bs: Vec<Bool> = v.iter().map(|t| to_bool(t, vars)).collect();
            Z3Ast::Bool(Bool::and(&bs))
        }
        Term::Or(v) => {
            let bs: Vec<Bool> = v.iter().map(|t| to_bool(t, vars)).collect();
            Z3Ast::Bool(Bool::or(&bs))
        }
        Term::Not(a) => Z3Ast::Bool(to_bool(a, vars).not()),
    }
}

/// Each query is first given to [`crate::presolve`], which proves most of a schedule's
/// obligations without z3 (and leaves the rest, and every counterexample, to it).
impl Solver for Z3Solver {
    fn check_valid(&mut self, facts: &[Term], goal: &Term) -> Validity {
        if crate::presolve::proves(facts, goal) {
            return Validity::Valid;
        }
        self.answer(facts, goal, true)
    }

    fn check_valid_attempt(&mut self, facts: &[Term], goal: &Term) -> Validity {
        if crate::presolve::proves(facts, goal) {
            return Validity::Valid;
        }
        self.answer(facts, goal, false)
    }

    fn check_valid_quick(&mut self, facts: &[Term], goal: &Term) -> Validity {
        if crate::presolve::proves(facts, goal) {
            return Validity::Valid;
        }
        self.quick(&canonical_order(facts), goal)
    }

    fn new_budget(&mut self) {
        self.unknowns = 0;
    }

    fn answers_are_shared(&self) -> bool {
        true
    }
}

/// The facts in the order of their text: z3's search, and so whether it decides a query within
/// its limit, depends on the order of the assertions.
fn canonical_order(facts: &[Term]) -> Vec<&Term> {
    let mut sorted: Vec<(String, &Term)> = facts.iter().map(|f| (f.to_string(), f)).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted.into_iter().map(|(_, f)| f).collect()
}

impl Z3Solver {
    /// The first try, in the long-lived context with the small limit.
    fn quick(&mut self, facts: &[&Term], goal: &Term) -> Validity {
        let linear = goal.is_linear() && facts.iter().all(|f| f.is_linear());
        // Incremental mode (a scope pushed) runs z3's SMT core directly: fast on most queries.
        self.warm(!linear);
        let solver = self.solvers[!linear as usize]
            .as_ref()
            .expect("made by `warm`");
        self.in_query = true;
        solver.push();
        let quick = solve(solver, facts, goal);
        solver.pop(1);
        self.in_query = false;
        quick
    }

    /// The answer; `count`: an undecided one counts toward the tighter limit.
    pub(crate) fn answer(&mut self, facts: &[Term], goal: &Term, count: bool) -> Validity {
        let facts = canonical_order(facts);
        let quick = self.quick(&facts, goal);
        if quick != Validity::Unknown {
            return quick;
        }
        let rlimit = if self.unknowns >= FULL_LIMITS {
            LATER_RLIMIT
        } else {
            FIRST_RLIMIT
        };
        // The one-shot solver (no scope pushed): its preprocessing eliminates quotients, which
        // some obligations (case splits over vector lanes) need to be decided at all.
        let result = z3::with_z3_config(&z3::Config::new(), || {
            let solver = z3::Solver::new();
            limit(&solver, rlimit, true);
            solve(&solver, &facts, goal)
        });
        if count && result == Validity::Unknown {
            self.unknowns += 1;
        }
        result
    }
}

/// Whether `facts` imply `goal`, asserted into `solver` (in the thread's current context).
fn solve(solver: &z3::Solver, facts: &[&Term], goal: &Term) -> Validity {
    let mut vars = HashMap::new();
    for f in facts {
        solver.assert(to_bool(f, &mut vars));
    }
    solver.assert(to_bool(goal, &mut vars).not());
    match solver.check() {
        z3::SatResult::Unsat => Validity::Valid,
        z3::SatResult::Unknown => Validity::Unknown,
        z3::SatResult::Sat => {
            let mut names = Vec::new();
            for f in facts {
                f.vars(&mut names);
            }
            goal.vars(&mut names);
            names.sort();
            let mut cex = Vec::new();
            if let Some(m) = solver.get_model() {
                for v in names {
                    let value = match vars.get(&v.id) {
                        Some(Z3Ast::Int(i)) => m.eval(i, true).and_then(|x| x.as_i64()),
                        Some(Z3Ast::Bool(b)) => {
                            m.eval(b, true).and_then(|x| x.as_bool()).map(|x| x as i64)
                        }
                        None => None,
                    };
                    if let Some(value) = value {
                        cex.push((v, value));
                    }
                }
            }
            Validity::Invalid(cex)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `0 < x ⇒ 1 < x`, which is not valid.
    fn invalid_query(s: &mut Z3Solver) -> Validity {
        let x = Term::IntVar(Var {
            id: 7,
            name: "x".into(),
        });
        s.check_valid(
            &[Term::lt(Term::Int(0), x.clone())],
            &Term::lt(Term::Int(1), x),
        )
    }

    /// A query decided by one checker's solver is answered to another of the same thread from
    /// the shared answers (no solver call), until they are forgotten.
    #[test]
    fn decided_answers_are_shared_by_the_threads_caching_solvers() {
        forget_shared_answers();
        let mut first = CachingSolver::new(Z3Solver::new());
        let x = || {
            Term::IntVar(Var {
                id: 7,
                name: "x".into(),
            })
        };
        let ask = |s: &mut CachingSolver<Z3Solver>| {
            s.check_valid(&[Term::lt(Term::Int(0), x())], &Term::lt(Term::Int(1), x()))
        };
        let answer = ask(&mut first);
        assert!(matches!(answer, Validity::Invalid(_)));
        assert_eq!(first.stats.cache_hits, 0);
        let mut second = CachingSolver::new(Z3Solver::new());
        assert_eq!(ask(&mut second), answer);
        assert_eq!(
            second.stats.cache_hits, 1,
            "answered from the shared answers"
        );
        forget_shared_answers();
        let mut third = CachingSolver::new(Z3Solver::new());
        assert_eq!(ask(&mut third), answer);
        assert_eq!(third.stats.cache_hits, 0, "asked again once forgotten");
    }

    /// A query that panicked between its `push` and `pop` (a caller may catch the unwinding)
    /// left its assertions in the solver; the pool must not hand that solver out again, where
    /// an assertion `false` would make every later query valid.
    #[test]
    fn a_solver_left_inside_a_query_does_not_go_back_to_the_pool() {
        let mut s = Z3Solver::new();
        let z = s.warm(false);
        z.push();
        z.assert(z3::ast::Bool::from_bool(false));
        s.in_query = true;
        drop(s);
        for _ in 0..=WARM_SOLVERS_KEPT {
            let mut t = Z3Solver::new();
            assert!(matches!(invalid_query(&mut t), Validity::Invalid(_)));
        }
        // Solvers that ended their queries are reused, and answer as before.
        let mut t = Z3Solver::new();
        assert!(matches!(invalid_query(&mut t), Validity::Invalid(_)));
        drop(t);
        assert!(WARM_SOLVERS.with(|w| !w.borrow().is_empty()));
    }
}
