//! Definedness of reads (the translation-validation paper's second obligation, §3.3): every read
//! of a local buffer reads a cell written before. What is known to be written is a set of
//! *chunks*, the paper's heap without values: `{ t[ē] | x̄ in their ranges, conditions }`. A write
//! adds a chunk under the branch conditions around it; when a loop ends, the chunks its body added
//! keep holding for every iteration, with the loop variable bound to its range; an allocation's
//! chunks end with its scope (a temporary in a loop body is fresh in each iteration).
//!
//! A read of cell `c` is defined when some chunk holds it: `∃x̄. conditions ∧ ē(x̄) = c`. The
//! existential is eliminated before the solver sees it, by solving an index equation for each
//! bound variable (`4 * x + 1 = c` gives `x = (c - 1) / 4` where `(c - 1) % 4 == 0`), by
//! dropping a variable that only its range mentions (the range is then non-empty), or by trying
//! values: each of a small constant range, else the first and the last of the range. Values not
//! tried only make the chunk smaller, which is safe: a read it would have covered is reported.
//! Reads rely on writes of earlier statements, of the same iteration, and of earlier iterations
//! of the loops around them (a body is walked ahead for what one iteration writes).

use crate::smt::{Term, Var};
use std::collections::{BTreeMap, HashMap};
use weft_ir::Sym;

/// Bound variables whose range has at most this many values are eliminated by trying each.
const SMALL_RANGE: i64 = 16;

/// The elimination of one chunk's quantifier takes at most `MEMBER_STEPS` steps (each case
/// split and each value tried is one) on terms of at most `MEMBER_NODES` nodes, and the
/// chunks of one read return at most `MEMBER_OUTPUT` nodes in all: splits nested in
/// splits multiply (a fused, shifted tile around a sliding window), and past the limits the
/// cases not yet explored are left out, which is safe (the chunk only gets smaller).
const MEMBER_STEPS: u32 = 2048;
const MEMBER_NODES: usize = 200_000;
const MEMBER_OUTPUT: usize = 1_000_000;

thread_local! {
    /// Steps taken and nodes returned by the elimination in progress on this thread (see
    /// [`MEMBER_STEPS`]).
    static SPENT: std::cell::Cell<(u32, usize)> = const { std::cell::Cell::new((0, 0)) };
    /// Whether the last [`Defined::holds`] on this thread left cases out at a limit.
    static GAVE_UP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the last [`Defined::holds`] on this thread stopped at a limit of the elimination:
/// a read it does not prove is then undecided rather than shown unwritten.
pub fn gave_up() -> bool {
    GAVE_UP.with(|g| g.get())
}

/// Cells of one buffer written for sure (under `cond`).
#[derive(Clone, Debug)]
pub struct Chunk {
    /// The buffer written (a root: an allocation or a parameter).
    pub root: Sym,
    /// Root coordinates of the cells.
    pub idx: Vec<Term>,
    /// Conditions under which the write happened (enclosing branches).
    pub cond: Vec<Term>,
    /// Variables bound to a range `lo <= x < hi` (loops the write was in, all iterations done).
    pub bound: Vec<(Var, Term, Term)>,
}

impl Chunk {
    /// Whether [`Defined::holds`] decides membership in this chunk exactly: every bound variable
    /// occurs once, in one coordinate made only of sums and differences (so it is solved for
    /// exactly), with no other bound variable. `holds` may leave out cells of other chunks (it
    /// tries some values of a variable it cannot solve for): safe for cells written, but a chunk
    /// of cells read must be exact to be used as one.
    pub fn is_exact(&self) -> bool {
        fn sums_only(t: &Term) -> bool {
            match t {
                Term::Int(_) | Term::IntVar(_) => true,
                Term::Add(a, b) | Term::Sub(a, b) => sums_only(a) && sums_only(b),
                Term::Neg(a) => sums_only(a),
                _ => false,
            }
        }
        self.bound.iter().all(|(v, _, _)| {
            let mut coords = self.idx.iter().filter(|c| c.occurrences(v.id) > 0);
            let (Some(c), None) = (coords.next(), coords.next()) else {
                return false;
            };
            c.occurrences(v.id) == 1
                && sums_only(c)
                && self
                    .bound
                    .iter()
                    .all(|(w, _, _)| w.id == v.id || c.occurrences(w.id) == 0)
        })
    }

    /// The variables the chunk mentions that are not bound in it.
    fn free_vars(&self) -> Vec<Var> {
        let mut vars = Vec::new();
        for t in self.idx.iter().chain(&self.cond) {
            t.vars(&mut vars);
        }
        for (_, lo, hi) in &self.bound {
            lo.vars(&mut vars);
            hi.vars(&mut vars);
        }
        vars.retain(|v| !self.bound.iter().any(|(b, _, _)| b.id == v.id));
        vars
    }

    /// Replace unknowns above `id` that name a shared term by that term (they may nest).
    pub fn expand_shared(&mut self, id: u64, shared: &HashMap<u64, Term>) {
        for _ in 0..16 {
            let named: HashMap<u64, Term> = self
                .free_vars()
                .into_iter()
                .filter(|v| v.id > id)
                .filter_map(|v| shared.get(&v.id).map(|t| (v.id, t.clone())))
                .collect();
            if named.is_empty() {
                return;
            }
            let sub = |t: &Term| t.subst_all(&named);
            self.idx = self.idx.iter().map(sub).collect();
            self.cond = self.cond.iter().map(sub).collect();
            for b in &mut self.bound {
                b.1 = sub(&b.1);
                b.2 = sub(&b.2);
            }
        }
    }

    /// Whether a variable that is not bound here has an id above `id` (unknowns are numbered
    /// from 2^62 up, after every symbol).
    pub fn mentions_unknowns_above(&self, id: u64) -> bool {
        self.free_vars().iter().any(|v| v.id > id)
    }

    /// Whether every variable not bound here satisfies `known`.
    pub fn free_vars_all(&self, known: impl Fn(u64) -> bool) -> bool {
        self.free_vars().iter().all(|v| known(v.id))
    }
}

/// The chunks known at a point of a proc.
#[derive(Default)]
pub struct Defined {
    pub chunks: Vec<Chunk>,
}

impl Defined {
    /// The loop over `var` in `lo..hi` whose body added the chunks from `mark` on has ended: they
    /// hold for every iteration. `fresh` renames the variable apart (each chunk its own copy,
    /// so that reads in a later loop over the same symbol cannot capture it). A chunk that
    /// mentions an unknown made in the body (ids above `made_since`: a config read, say) is
    /// dropped: that unknown may have had another value in each iteration.
    ///
    /// Unknowns that only name a control expression (`shared`: the operands of `min`/`max` the
    /// walk names to keep terms small) are not dropped with them: they are replaced by what they
    /// name, which holds in every iteration alike.
    pub fn bind_loop(
        &mut self,
        (mark, made_since): (usize, u64),
        var: &Var,
        lo: &Term,
        hi: &Term,
        shared: &HashMap<u64, Term>,
        fresh: &mut dyn FnMut() -> Var,
    ) {
        for c in self.chunks.iter_mut().skip(mark) {
            c.expand_shared(made_since, shared);
        }
        let mut k = mark;
        while k < self.chunks.len() {
            if self.chunks[k].mentions_unknowns_above(made_since) {
                self.chunks.remove(k);
            } else {
                k += 1;
            }
        }
        for c in self.chunks.iter_mut().skip(mark) {
            let mentions = c
                .idx
                .iter()
                .chain(&c.cond)
                .any(|t| t.occurrences(var.id) > 0)
                || c.bound
                    .iter()
                    .any(|(_, l, h)| l.occurrences(var.id) + h.occurrences(var.id) > 0);
            if !mentions {
                // Written in every iteration alike: once the range is non-empty.
                c.cond.push(Term::lt(lo.clone(), hi.clone()));
                continue;
            }
            let v = fresh();
            let by = Term::IntVar(v.clone());
            let sub = |t: &Term| t.subst(var.id, &by);
            c.idx = c.idx.iter().map(sub).collect();
            c.cond = c.cond.iter().map(sub).collect();
            for b in &mut c.bound {
                b.1 = sub(&b.1);
                b.2 = sub(&b.2);
            }
            c.bound.push((v, lo.clone(), hi.clone()));
        }
    }

    /// The allocation `root` ended.
    pub fn forget(&mut self, root: &Sym) {
        self.chunks.retain(|c| c.root != *root);
    }

    /// The condition under which cell `cell` of `root` is known written.
    pub fn holds(&self, root: &Sym, cell: &[Term]) -> Term {
        SPENT.with(|s| s.set((0, 0)));
        GAVE_UP.with(|g| g.set(false));
        let ors: Vec<Term> = self
            .chunks
            .iter()
            .filter(|c| c.root == *root && c.idx.len() == cell.len())
            .map(|c| {
                let eqs = c.idx.iter().cloned().zip(cell.iter().cloned()).collect();
                let (eqs, mut cond) = join_divided(eqs);
                cond.extend(c.cond.iter().cloned());
                SPENT.with(|s| s.set((0, s.get().1)));
                member(eqs, cond, c.bound.clone())
            })
            .filter(|t| *t != Term::Bool(false))
            .collect();
        match ors.len() {
            0 => Term::Bool(false),
            1 => ors.into_iter().next().unwrap_or(Term::Bool(false)),
            _ => Term::Or(ors),
        }
    }
}

/// A dimension divided in two (`divide_dim`) indexes with `e / k` and `e % k`: the two
/// equations `e / k = a`, `e % k = b` are the one `e = k * a + b` with `0 <= b < k`, which can be
/// solved for a variable of `e`. Returns the equations and the conditions added.
fn join_divided(mut eqs: Vec<(Term, Term)>) -> (Vec<(Term, Term)>, Vec<Term>) {
    let mut cond = Vec::new();
    let mut i = 0;
    while i < eqs.len() {
        let pair = match &eqs[i].0 {
            Term::Div(e, k) => eqs
                .iter()
                .position(|(l, _)| matches!(l, Term::Mod(e2, k2) if e2 == e && k2 == k)),
            _ => None,
        };
        let (Some(j), Term::Div(e, k)) = (pair, eqs[i].0.clone()) else {
            i += 1;
            continue;
        };
        let Some(kv) = crate::terms::const_value(&k).filter(|k| *k > 0) else {
            i += 1;
            continue;
        };
        let (a, b) = (eqs[i].1.clone(), eqs[j].1.clone());
        cond.push(Term::le(Term::Int(0), b.clone()));
        cond.push(Term::lt(b.clone(), Term::Int(kv)));
        eqs[i] = (*e, Term::add(Term::mul(Term::Int(kv), a), b));
        eqs.remove(j);
        if j < i {
            i -= 1;
        }
    }
    (eqs, cond)
}

/// `∃ bound. cond ∧ eqs` without the quantifier (false when it cannot be eliminated).
fn member(eqs: Vec<(Term, Term)>, mut cond: Vec<Term>, mut bound: Vec<(Var, Term, Term)>) -> Term {
    let (steps, returned) = SPENT.with(|s| {
        let (steps, returned) = s.get();
        s.set((steps.saturating_add(1), returned));
        (steps + 1, returned)
    });
    let mut budget = MEMBER_NODES;
    let small = eqs.iter().flat_map(|(l, r)| [l, r]).chain(&cond).all(|t| {
        let n = t.size_at_most(budget);
        budget = budget.saturating_sub(n);
        budget > 0
    });
    if steps > MEMBER_STEPS || returned > MEMBER_OUTPUT || !small {
        GAVE_UP.with(|g| g.set(true));
        return Term::Bool(false);
    }
    // Substituted witnesses leave comparisons of constants (`(e + 1) - e < 0`): a false one
    // ends the case, a true one is left out.
    let mut eqs = eqs;
    let mut contradicted = false;
    cond.retain(|t| match decided(t) {
        Some(holds) => {
            contradicted |= !holds;
            false
        }
        None => true,
    });
    eqs.retain(|(l, r)| match constant_difference(l, r) {
        Some(k) => {
            contradicted |= k != 0;
            false
        }
        None => true,
    });
    if contradicted {
        return Term::Bool(false);
    }
    // A variable inside a `min`/`max` of an index equation goes first: splitting the equation
    // by cases then solves it, where solving another variable first would leave it inside the
    // range conditions, which only trying values can satisfy.
    // Then a variable of an index equation with a range too large to try every value: solving
    // it first leaves the small ranges (a split's inner loop) to be tried value by value.
    let in_ite = |v: &Var| {
        eqs.iter()
            .any(|(l, r)| ite_with(l, v.id).is_some() || ite_with(r, v.id).is_some())
    };
    let large_in_eq = |(v, lo, hi): &(Var, Term, Term)| {
        let small = matches!(
            (crate::terms::const_value(lo), crate::terms::const_value(hi)),
            (Some(l), Some(h)) if h.saturating_sub(l) <= SMALL_RANGE
        );
        !small
            && eqs
                .iter()
                .any(|(l, r)| l.occurrences(v.id) + r.occurrences(v.id) > 0)
    };
    // Among those, one with a unit coefficient solves without a divisibility condition (which
    // trying values of the other could not satisfy): `32 * xo + xi = c` solves `xi` first.
    let unit = |b: &(Var, Term, Term)| {
        eqs.iter().any(|(l, r)| {
            l.occurrences(b.0.id) == 1
                && r.occurrences(b.0.id) == 0
                && solve(b.0.id, l, r.clone()).is_some_and(|(_, side)| side.is_empty())
        })
    };
    let first = bound
        .iter()
        .rposition(|b| in_ite(&b.0))
        .or_else(|| bound.iter().rposition(|b| large_in_eq(b) && unit(b)))
        .or_else(|| bound.iter().rposition(large_in_eq));
    if let Some(k) = first {
        let last = bound.len() - 1;
        bound.swap(k, last);
    }
    if let Some(joined) = member_split(&eqs, &cond, &bound) {
        return joined;
    }
    let Some((v, lo, hi)) = bound.pop() else {
        let mut all = cond;
        all.extend(eqs.into_iter().map(|(l, r)| Term::eq(l, r)));
        let all = Term::And(all);
        let n = all.size_at_most(MEMBER_OUTPUT + 1);
        let total = SPENT.with(|s| {
            let (steps, returned) = s.get();
            s.set((steps, returned.saturating_add(n)));
            returned.saturating_add(n)
        });
        if total > MEMBER_OUTPUT {
            GAVE_UP.with(|g| g.set(true));
            return Term::Bool(false);
        }
        return all;
    };
    let id = v.id;
    let in_range = |x: &Term| {
        vec![
            Term::le(lo.clone(), x.clone()),
            Term::lt(x.clone(), hi.clone()),
        ]
    };
    if let Some(folded) = member_folded(&eqs, &cond, &bound, (&v, &lo, &hi)) {
        return folded;
    }
    // Solve an index equation for `v`.
    for (k, (l, r)) in eqs.iter().enumerate() {
        if l.occurrences(id) != 1 || r.occurrences(id) != 0 {
            continue;
        }
        let Some((value, mut side)) = solve(id, l, r.clone()) else {
            continue;
        };
        let sub = |t: &Term| t.subst(id, &value);
        let rest: Vec<(Term, Term)> = eqs
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, (a, b))| (sub(a), sub(b)))
            .collect();
        side.extend(in_range(&value));
        side.extend(cond.iter().map(sub));
        for b in &mut bound {
            b.1 = sub(&b.1);
            b.2 = sub(&b.2);
        }
        return member(rest, side, bound);
    }
    // A `min`/`max` (an `ite`) around the variable in an index equation, as in the shifted last
    // tile of a split: split the equation by the cases of its condition.
    if let Some((c, a, b)) = eqs
        .iter()
        .find_map(|(l, r)| ite_with(l, id).or_else(|| ite_with(r, id)))
    {
        let ite = Term::ite(c.clone(), a.clone(), b.clone());
        let mut bound = bound;
        bound.push((v, lo, hi));
        let case = |by: &Term, holds: Term| {
            let eqs = eqs
                .iter()
                .map(|(l, r)| (replace(l, &ite, by), replace(r, &ite, by)))
                .collect();
            let mut cond = cond.clone();
            cond.push(holds);
            member(eqs, cond, bound.clone())
        };
        return Term::Or(vec![case(&a, c.clone()), case(&b, Term::not(c))]);
    }
    if occurrences(id, &eqs, None, &cond, &bound) == 0 {
        // Only the range mentions it: it exists when the range is not empty.
        cond.push(Term::lt(lo, hi));
        return member(eqs, cond, bound);
    }
    // A `min`/`max`/`select` around the variable in a condition (a loop bound that depends on
    // an outer loop, as in a sliding window): split the conditions by its cases.
    if let Some((c, a, b)) = cond.iter().find_map(|t| ite_with(t, id)) {
        let ite = Term::ite(c.clone(), a.clone(), b.clone());
        bound.push((v, lo, hi));
        let case = |by: &Term, holds: Term| {
            let mut cond: Vec<Term> = cond.iter().map(|t| replace(t, &ite, by)).collect();
            cond.push(holds);
            member(eqs.clone(), cond, bound.clone())
        };
        return Term::Or(vec![case(&a, c.clone()), case(&b, Term::not(c))]);
    }
    // Try values: each of a small constant range, or else the first and the last, and the
    // values that make a condition on the variable tight (`x <= e` gives `x = e`): the last
    // iteration that wrote a cell is usually one of them. A witness is enough for the
    // existential; other values are not tried, which is safe.
    let (mut values, every): (Vec<Term>, bool) = match (
        crate::terms::const_value(&lo),
        crate::terms::const_value(&hi),
    ) {
        (Some(l), Some(h)) if h.saturating_sub(l) <= SMALL_RANGE => {
            ((l..h).map(Term::Int).collect(), true)
        }
        _ => (vec![lo.clone(), Term::sub(hi.clone(), Term::Int(1))], false),
    };
    // A range tried value by value needs no other candidates (they would repeat its values).
    if !every {
        for t in &cond {
            let (l, r, strict) = match t {
                Term::Le(l, r) => (l, r, false),
                Term::Lt(l, r) => (l, r, true),
                _ => continue,
            };
            let tight = |side: &Term, other: Term| {
                if side.occurrences(id) == 1 && other.occurrences(id) == 0 {
                    tight_values(id, side, other)
                } else {
                    Vec::new()
                }
            };
            let one = |t: &Term, k: i64| Term::add(t.clone(), Term::Int(k));
            let found = if l.occurrences(id) > 0 {
                tight(l, if strict { one(r, -1) } else { (**r).clone() })
            } else {
                tight(r, if strict { one(l, 1) } else { (**l).clone() })
            };
            for x in found {
                if values.len() < 8 {
                    values.push(x);
                }
            }
        }
    }
    let ors: Vec<Term> = values
        .into_iter()
        .map(|by| {
            let sub = |t: &Term| t.subst(id, &by);
            let eqs = eqs.iter().map(|(a, b)| (sub(a), sub(b))).collect();
            let mut cond: Vec<Term> = cond.iter().map(sub).collect();
            cond.extend(in_range(&by));
            let bound = bound
                .iter()
                .map(|(w, a, b)| (w.clone(), sub(a), sub(b)))
                .collect();
            member(eqs, cond, bound)
        })
        .collect();
    Term::Or(ors)
}

/// A circular buffer (storage folded by `m`) is written at `e(v) % m` with `e` of unit
/// coefficient in `v`. Two ways to eliminate `v`, either enough for the existential:
/// - a read of the buffer at `e' % m` is most often of the very row written: `v` with
///   `e(v) = e'` is a witness, which keeps the conditions on the loops around (the row's range in
///   each iteration of a sliding window, a split's guard) solvable for them;
/// - when `v` occurs nowhere else, exactly: the cells written for `v` in `lo..hi` are those `c`
///   with `0 <= c < m` and `e⁻¹(c) ≡ v (mod m)` for some `v` of the range, that is
///   `(e⁻¹(c) - lo) % m < hi - lo` (`%` is Euclidean: non-negative for `m > 0`).
fn member_folded(
    eqs: &[(Term, Term)],
    cond: &[Term],
    bound: &[(Var, Term, Term)],
    (v, lo, hi): (&Var, &Term, &Term),
) -> Option<Term> {
    let id = v.id;
    // `e(v) = x` solved for `v` without a divisibility condition (unit coefficient).
    let unit = |inner: &Term, x: Term| solve(id, inner, x).filter(|(_, side)| side.is_empty());
    for (k, (l, r)) in eqs.iter().enumerate() {
        let Term::Mod(inner, m) = l else { continue };
        let Some(m) = crate::terms::const_value(m).filter(|m| *m > 0) else {
            continue;
        };
        if inner.occurrences(id) != 1 || r.occurrences(id) != 0 {
            continue;
        }
        let rest: Vec<(Term, Term)> = eqs
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, e)| e.clone())
            .collect();
        let mut alternatives = Vec::new();
        if let Term::Mod(read, m2) = r {
            if let (Some(_), Some((same, _))) = (
                crate::terms::const_value(m2).filter(|m2| *m2 == m),
                unit(inner, (**read).clone()),
            ) {
                let sub = |t: &Term| t.subst(id, &same);
                let rest = rest.iter().map(|(a, b)| (sub(a), sub(b))).collect();
                let mut cond: Vec<Term> = cond.iter().map(sub).collect();
                cond.push(Term::le(lo.clone(), same.clone()));
                cond.push(Term::lt(same.clone(), hi.clone()));
                let bound = bound
                    .iter()
                    .map(|(w, a, b)| (w.clone(), sub(a), sub(b)))
                    .collect();
                alternatives.push(member(rest, cond, bound));
            }
        }
        if occurrences(id, eqs, Some(k), cond, bound) == 0 {
            if let Some((value, _)) = unit(inner, r.clone()) {
                let mut cond = cond.to_vec();
                cond.push(Term::le(Term::Int(0), r.clone()));
                cond.push(Term::lt(r.clone(), Term::Int(m)));
                cond.push(Term::lt(lo.clone(), hi.clone()));
                cond.push(Term::lt(
                    Term::Mod(
                        Box::new(Term::sub(value, lo.clone())),
                        Box::new(Term::Int(m)),
                    ),
                    Term::sub(hi.clone(), lo.clone()),
                ));
                alternatives.push(member(rest, cond, bound.to_vec()));
            }
        }
        if !alternatives.is_empty() {
            return Some(Term::Or(alternatives));
        }
    }
    None
}

/// A split loop writes at `a * xo + xi + k` with `xi` over a constant range `lo..lo + a` (its
/// inner loop, `xo` the outer): the cell `c` is written, if at all, by the one pair
/// `xo = (c - k - lo) / a`, `xi = lo + (c - k - lo) % a` (Euclidean). Eliminating both at once
/// by that witness keeps the existential free of the divisibility conditions and the case split
/// over every `xi` that solving `xo` first and trying each `xi` makes, which the solver cannot
/// always decide behind a folded row and a shifted tile. Any witness is sound (the equations
/// and conditions are kept, substituted, for the solver to check); this one is complete for the
/// pair.
fn member_split(eqs: &[(Term, Term)], cond: &[Term], bound: &[(Var, Term, Term)]) -> Option<Term> {
    for (yi, (y, ylo, yhi)) in bound.iter().enumerate() {
        let (Some(lo), Some(hi)) = (
            crate::terms::const_value(ylo),
            crate::terms::const_value(yhi),
        ) else {
            continue;
        };
        let Some(a) = hi.checked_sub(lo).filter(|a| (2..=1 << 20).contains(a)) else {
            continue;
        };
        for (l, r) in eqs {
            if l.occurrences(y.id) != 1 || r.occurrences(y.id) != 0 {
                continue;
            }
            let Some((value, side)) = solve(y.id, l, r.clone()) else {
                continue;
            };
            if !side.is_empty() {
                continue;
            }
            // `value` = `t - a * xo` for an outer loop `xo` of the pair, and no other bound
            // variable: with one (the outer loop of a nested split), the pair's witness would
            // bury it in a division, where only trying values could find it; solving it first
            // (the general path) leaves this pair whole for later.
            let Some((xi, (x, _, _))) = bound
                .iter()
                .enumerate()
                .find(|(k, (x, _, _))| *k != yi && linear_coefficient(&value, x.id) == Some(-a))
            else {
                continue;
            };
            let others = bound
                .iter()
                .enumerate()
                .any(|(k, (w, _, _))| k != yi && k != xi && value.occurrences(w.id) > 0);
            if others {
                continue;
            }
            let t = value.subst(x.id, &Term::Int(0));
            let from_lo = Term::sub(t, Term::Int(lo));
            let xo = Term::Div(Box::new(from_lo.clone()), Box::new(Term::Int(a)));
            let yv = Term::add(
                Term::Int(lo),
                Term::Mod(Box::new(from_lo), Box::new(Term::Int(a))),
            );
            let sub = |t: &Term| t.subst(x.id, &xo).subst(y.id, &yv);
            let eqs: Vec<(Term, Term)> = eqs.iter().map(|(p, q)| (sub(p), sub(q))).collect();
            let mut cond: Vec<Term> = cond.iter().map(sub).collect();
            let mut rest = Vec::new();
            for (k, (w, wlo, whi)) in bound.iter().enumerate() {
                if k == xi {
                    cond.push(Term::le(sub(wlo), xo.clone()));
                    cond.push(Term::lt(xo.clone(), sub(whi)));
                } else if k != yi {
                    rest.push((w.clone(), sub(wlo), sub(whi)));
                }
            }
            return Some(member(eqs, cond, rest));
        }
    }
    None
}

/// `t` as a linear form: coefficients by variable id, and a constant (`None` when `t` is not
/// linear in variables, or a coefficient or the constant leaves ±2^100).
fn linear_form(
    t: &Term,
    out: &mut BTreeMap<u64, i128>,
    scale: i128,
    constant: &mut i128,
) -> Option<()> {
    const LIMIT: i128 = 1 << 100;
    let fits = |x: Option<i128>| x.filter(|x| x.abs() < LIMIT);
    match t {
        Term::Int(k) => *constant = fits(scale.checked_mul(*k as i128)?.checked_add(*constant))?,
        Term::IntVar(v) => {
            let c = out.entry(v.id).or_insert(0);
            *c = fits(c.checked_add(scale))?;
        }
        Term::Add(a, b) => {
            linear_form(a, out, scale, constant)?;
            linear_form(b, out, scale, constant)?;
        }
        Term::Sub(a, b) => {
            linear_form(a, out, scale, constant)?;
            linear_form(b, out, -scale, constant)?;
        }
        Term::Neg(a) => linear_form(a, out, -scale, constant)?,
        Term::Mul(a, b) => match (crate::terms::const_value(a), crate::terms::const_value(b)) {
            (Some(k), _) => linear_form(b, out, fits(scale.checked_mul(k as i128))?, constant)?,
            (_, Some(k)) => linear_form(a, out, fits(scale.checked_mul(k as i128))?, constant)?,
            _ => return None,
        },
        _ => return None,
    }
    Some(())
}

/// `l - r` when it is a constant: both sides linear, every variable cancelled.
fn constant_difference(l: &Term, r: &Term) -> Option<i128> {
    let (mut coefficients, mut constant) = (BTreeMap::new(), 0);
    linear_form(l, &mut coefficients, 1, &mut constant)?;
    linear_form(r, &mut coefficients, -1, &mut constant)?;
    coefficients.values().all(|c| *c == 0).then_some(constant)
}

/// The truth of a comparison of two linear terms whose difference is a constant.
fn decided(t: &Term) -> Option<bool> {
    match t {
        Term::Bool(b) => Some(*b),
        Term::Not(a) => decided(a).map(|b| !b),
        Term::Lt(a, b) => constant_difference(a, b).map(|k| k < 0),
        Term::Le(a, b) => constant_difference(a, b).map(|k| k <= 0),
        Term::Eq(a, b) => constant_difference(a, b).map(|k| k == 0),
        _ => None,
    }
}

/// The coefficient of variable `id` in `t` when `t` is linear in it (sums, differences,
/// negations and products by constants around it), `Some(0)` when `t` does not mention it.
fn linear_coefficient(t: &Term, id: u64) -> Option<i64> {
    if t.occurrences(id) == 0 {
        return Some(0);
    }
    match t {
        Term::IntVar(v) if v.id == id => Some(1),
        Term::Add(a, b) => linear_coefficient(a, id)?.checked_add(linear_coefficient(b, id)?),
        Term::Sub(a, b) => linear_coefficient(a, id)?.checked_sub(linear_coefficient(b, id)?),
        Term::Neg(a) => linear_coefficient(a, id)?.checked_neg(),
        Term::Mul(a, b) => match (crate::terms::const_value(a), crate::terms::const_value(b)) {
            (Some(k), _) => k.checked_mul(linear_coefficient(b, id)?),
            (_, Some(k)) => k.checked_mul(linear_coefficient(a, id)?),
            _ => None,
        },
        _ => None,
    }
}

/// How often variable `id` occurs in the equations (but equation `skip`), the conditions and
/// the ranges of the other bound variables.
fn occurrences(
    id: u64,
    eqs: &[(Term, Term)],
    skip: Option<usize>,
    cond: &[Term],
    bound: &[(Var, Term, Term)],
) -> usize {
    eqs.iter()
        .enumerate()
        .filter(|(j, _)| Some(*j) != skip)
        .map(|(_, (l, r))| l.occurrences(id) + r.occurrences(id))
        .chain(cond.iter().map(|t| t.occurrences(id)))
        .chain(
            bound
                .iter()
                .map(|b| b.1.occurrences(id) + b.2.occurrences(id)),
        )
        .sum()
}

/// The first `ite` in `t` (outermost first) whose branches mention variable `id` and whose
/// condition does not mention it in a way solving could not handle: its parts.
fn ite_with(t: &Term, id: u64) -> Option<(Term, Term, Term)> {
    if let Term::Ite(c, a, b) = t {
        if a.occurrences(id) + b.occurrences(id) > 0 {
            return Some(((**c).clone(), (**a).clone(), (**b).clone()));
        }
    }
    let mut kids = Vec::new();
    t.children(&mut kids);
    kids.into_iter().find_map(|k| ite_with(k, id))
}

/// `t` with every occurrence of the subterm `from` replaced by `to`.
fn replace(t: &Term, from: &Term, to: &Term) -> Term {
    if t == from {
        return to.clone();
    }
    let mut kids = Vec::new();
    t.children(&mut kids);
    if kids.is_empty() {
        return t.clone();
    }
    t.with_children(kids.into_iter().map(|k| replace(k, from, to)).collect())
}

/// Solve `l = r` for variable `id`, which occurs once in `l`: the value, and the conditions
/// under which that value is an integer solution.
fn solve(id: u64, l: &Term, r: Term) -> Option<(Term, Vec<Term>)> {
    let has = |t: &Term| t.occurrences(id) > 0;
    match l {
        Term::IntVar(v) if v.id == id => Some((r, Vec::new())),
        Term::Add(a, b) if has(a) => solve(id, a, Term::sub(r, (**b).clone())),
        Term::Add(a, b) => solve(id, b, Term::sub(r, (**a).clone())),
        Term::Sub(a, b) if has(a) => solve(id, a, Term::add(r, (**b).clone())),
        Term::Sub(a, b) => solve(id, b, Term::sub((**a).clone(), r)),
        Term::Neg(a) => solve(id, a, Term::Neg(Box::new(r))),
        Term::Mul(a, b) => {
            let (k, x) = match (crate::terms::const_value(a), crate::terms::const_value(b)) {
                (Some(k), _) if !has(a) => (k, b),
                (_, Some(k)) if !has(b) => (k, a),
                _ => return None,
            };
            if k == 0 {
                return None;
            }
            // k * x = r: r must be a multiple of k, and x = r / k.
            let (k, r) = if k < 0 {
                (k.checked_neg()?, Term::Neg(Box::new(r)))
            } else {
                (k, r)
            };
            let divides = Term::eq(
                Term::Mod(Box::new(r.clone()), Box::new(Term::Int(k))),
                Term::Int(0),
            );
            let (value, mut side) = solve(id, x, Term::Div(Box::new(r), Box::new(Term::Int(k))))?;
            side.push(divides);
            Some((value, side))
        }
        _ => None,
    }
}

/// Values of `id` that make `l = r` hold, or hold as nearly as integers allow: witnesses to
/// try, not solutions (a wrong one only fails its case). As [`solve`], where a solution through
/// a multiplication is the floor (`0 <= c - 32 * x` gives `x = c / 32`, a candidate even where
/// the bound is not a multiple); and through a floor quotient by a positive constant,
/// `a / k = r` holds for `k * r <= a <= k * r + k - 1`: both ends are candidates (a sliding
/// window over an upsampled row, `(y + 1) / 2`, wrote a row in the iteration at such an end).
fn tight_values(id: u64, l: &Term, r: Term) -> Vec<Term> {
    let has = |t: &Term| t.occurrences(id) > 0;
    match l {
        Term::IntVar(v) if v.id == id => vec![r],
        Term::Add(a, b) if has(a) => tight_values(id, a, Term::sub(r, (**b).clone())),
        Term::Add(a, b) => tight_values(id, b, Term::sub(r, (**a).clone())),
        Term::Sub(a, b) if has(a) => tight_values(id, a, Term::add(r, (**b).clone())),
        Term::Sub(a, b) => tight_values(id, b, Term::sub((**a).clone(), r)),
        Term::Neg(a) => tight_values(id, a, Term::Neg(Box::new(r))),
        Term::Mul(..) => solve(id, l, r).map(|(x, _)| x).into_iter().collect(),
        Term::Div(a, k) if has(a) && !has(k) => match crate::terms::const_value(k) {
            Some(kv) if kv > 0 => {
                let first = Term::mul(Term::Int(kv), r);
                let last = Term::add(first.clone(), Term::Int(kv - 1));
                let mut out = tight_values(id, a, first);
                out.extend(tight_values(id, a, last));
                out
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Fresh variables for renaming bound loop variables and for the cells of windows.
pub fn fresh_var(counter: &mut u64, name: &str) -> Var {
    *counter += 1;
    Var {
        id: *counter,
        name: name.to_string(),
    }
}
