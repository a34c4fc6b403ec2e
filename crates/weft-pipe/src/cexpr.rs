//! Control expressions of lowering: the integer expressions that bounds inference builds (loop
//! bounds, regions, allocation extents) over the lowered proc's control variables.
//!
//! An expression is kept in a canonical linear form, `k + Σ c·atom`, whose atoms are variables and
//! the non-linear operators of quasi-affine arithmetic (`min`, `max`, floor division and Euclidean
//! remainder by a positive constant, `select`). The smart constructors fold what the form decides
//! (`min(a, a + 3)` is `a`, `(8·t + 5) / 8` is `t`), which keeps the bounds of tiled loops small;
//! anything they cannot decide stays an atom, so every expression is exact.
//!
//! [`Scope::lower`] and [`Scope::upper`] are the interval analysis of bounds inference: the least
//! and greatest value of an expression when some variables range over intervals (themselves
//! expressions, relaxed in turn), `None` when there is no bound (an infinite interval end).

use std::collections::HashMap;

/// A control variable of the lowered proc (an argument, a loop variable), by its index in the
/// lowering's variable table.
pub type VarId = u32;

/// A non-linear part of an expression.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    Var(VarId),
    Min(Lin, Lin),
    Max(Lin, Lin),
    /// Floor division by a positive constant.
    Div(Lin, i64),
    /// Euclidean remainder by a positive constant.
    Mod(Lin, i64),
    Select(Box<Cond>, Lin, Lin),
}

/// `k + Σ c·atom`, the atoms sorted and their coefficients non-zero.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lin {
    pub terms: Vec<(Atom, i64)>,
    pub k: i64,
}

/// A control condition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cond {
    Const(bool),
    /// `e <= 0`.
    Le0(Lin),
    /// `e == 0`.
    Eq0(Lin),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// Whether `x <= y` (`Some(true)`) or `x >= y` (`Some(false)`) for every value, when both are
/// quotients `u / d + k` by the same divisor whose dividends differ by a constant `c`: then
/// `floor(c / d) <= x - y - (kx - ky) <= ceil(c / d)` (the pyramid's `min(n / 2, (n + 1) / 2)`).
fn quotient_order(x: &Lin, y: &Lin) -> Option<bool> {
    let (ux, dx, kx) = x.as_quotient()?;
    let (uy, dy, ky) = y.as_quotient()?;
    let c = ux.sub(uy).as_const()?;
    if dx != dy {
        return None;
    }
    let (lo, hi) = (c.div_euclid(dx) + kx - ky, -((-c).div_euclid(dx)) + kx - ky);
    if hi <= 0 {
        Some(true)
    } else if lo >= 0 {
        Some(false)
    } else {
        None
    }
}

impl Lin {
    pub fn konst(k: i64) -> Lin {
        Lin {
            terms: Vec::new(),
            k,
        }
    }

    pub fn var(v: VarId) -> Lin {
        Lin::atom(Atom::Var(v))
    }

    fn atom(a: Atom) -> Lin {
        Lin {
            terms: vec![(a, 1)],
            k: 0,
        }
    }

    /// The constant value, if the expression is one.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.k)
    }

    pub fn add(&self, o: &Lin) -> Lin {
        let mut terms: Vec<(Atom, i64)> = Vec::with_capacity(self.terms.len() + o.terms.len());
        let (mut i, mut j) = (0, 0);
        while i < self.terms.len() || j < o.terms.len() {
            let pick = match (self.terms.get(i), o.terms.get(j)) {
                (Some(a), Some(b)) => a.0.cmp(&b.0),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match pick {
                std::cmp::Ordering::Less => {
                    terms.push(self.terms[i].clone());
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    terms.push(o.terms[j].clone());
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    let c = self.terms[i].1.wrapping_add(o.terms[j].1);
                    if c != 0 {
                        terms.push((self.terms[i].0.clone(), c));
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        Lin {
            terms,
            k: self.k.wrapping_add(o.k),
        }
        .fold_div_mod()
    }

    /// A remainder and a quotient of one operand, weighted
    /// `k·(e % d) + k·d·(e / d)`, are `k·e` (what a fused loop's two coordinates add up to).
    fn fold_div_mod(self) -> Lin {
        for (i, (a, k)) in self.terms.iter().enumerate() {
            let Atom::Mod(e, d) = a else { continue };
            let quotient = Atom::Div(e.clone(), *d);
            let Some(j) = self
                .terms
                .iter()
                .position(|(b, c)| *b == quotient && Some(*c) == k.checked_mul(*d))
            else {
                continue;
            };
            let (e, k) = (e.clone(), *k);
            let rest = Lin {
                terms: self
                    .terms
                    .iter()
                    .enumerate()
                    .filter(|(x, _)| *x != i && *x != j)
                    .map(|(_, t)| t.clone())
                    .collect(),
                k: self.k,
            };
            return rest.add(&e.scale(k));
        }
        self
    }

    pub fn add_k(&self, k: i64) -> Lin {
        Lin {
            terms: self.terms.clone(),
            k: self.k.wrapping_add(k),
        }
    }

    pub fn scale(&self, c: i64) -> Lin {
        if c == 0 {
            return Lin::konst(0);
        }
        Lin {
            terms: self
                .terms
                .iter()
                .map(|(a, x)| (a.clone(), x.wrapping_mul(c)))
                .collect(),
            k: self.k.wrapping_mul(c),
        }
    }

    pub fn sub(&self, o: &Lin) -> Lin {
        self.add(&o.scale(-1))
    }

    /// The product, when one side is a constant (quasi-affine arithmetic has no other).
    pub fn mul(&self, o: &Lin) -> Option<Lin> {
        match (self.as_const(), o.as_const()) {
            (Some(c), _) => Some(o.scale(c)),
            (_, Some(c)) => Some(self.scale(c)),
            _ => None,
        }
    }

    pub fn min_with(&self, o: &Lin) -> Lin {
        Lin::extremum(self, o, false)
    }

    pub fn max_with(&self, o: &Lin) -> Lin {
        Lin::extremum(self, o, true)
    }

    /// The operands of a nest of `min`s (or `max`s) around `self`.
    /// A constant added to a nest goes into its operands: `min(a, b) + k = min(a + k, b + k)`.
    fn operands(&self, max: bool, out: &mut Vec<Lin>) {
        match self.terms.as_slice() {
            [(Atom::Min(a, b), 1)] if !max => {
                a.add_k(self.k).operands(max, out);
                b.add_k(self.k).operands(max, out);
            }
            [(Atom::Max(a, b), 1)] if max => {
                a.add_k(self.k).operands(max, out);
                b.add_k(self.k).operands(max, out);
            }
            _ => out.push(self.clone()),
        }
    }

    /// `min(a, b)` (or `max`): the operands of nested `min`s are gathered, those that differ from
    /// another by a constant are decided, and the rest are nested again in a canonical order.
    fn extremum(a: &Lin, b: &Lin, max: bool) -> Lin {
        let mut ops = Vec::new();
        a.operands(max, &mut ops);
        b.operands(max, &mut ops);
        let mut kept: Vec<Lin> = Vec::new();
        'next: for x in ops {
            for y in kept.iter_mut() {
                if let Some(d) = x.sub(y).as_const() {
                    // x = y + d: the smaller (larger) one stands for both.
                    if (d < 0) != max && d != 0 {
                        *y = x;
                    }
                    continue 'next;
                }
                if let Some(x_le_y) = quotient_order(&x, y) {
                    if x_le_y != max {
                        *y = x;
                    }
                    continue 'next;
                }
            }
            kept.push(x);
        }
        kept.sort();
        let mut it = kept.into_iter().rev();
        let mut acc = it.next().unwrap_or_default();
        for x in it {
            acc = Lin::atom(if max {
                Atom::Max(x, acc)
            } else {
                Atom::Min(x, acc)
            });
        }
        acc
    }

    /// A constant no value of the expression exceeds: the constant itself, or for
    /// `k + c·(x / d) − c·(y / d)` with `c > 0` and dividends that differ by a constant `δ`,
    /// `k + c·ceil(δ / d)` (`floor((y + δ) / d) − floor(y / d)` is `floor(δ / d)` or
    /// `ceil(δ / d)`). An upsampled row's window, `(v + 1) / 2 − v / 2 + 1`, is at most 2.
    pub fn const_upper_bound(&self) -> Option<i64> {
        if let Some(k) = self.as_const() {
            return Some(k);
        }
        let [(Atom::Div(a, da), ca), (Atom::Div(b, db), cb)] = self.terms.as_slice() else {
            return None;
        };
        if da != db || *ca != -*cb {
            return None;
        }
        let (c, delta) = if *ca > 0 {
            (*ca, a.sub(b).as_const()?)
        } else {
            (*cb, b.sub(a).as_const()?)
        };
        let ceil = -((-delta).div_euclid(*da));
        c.checked_mul(ceil)?.checked_add(self.k)
    }

    /// `(u, d, k)` when `self` is `u / d + k`.
    fn as_quotient(&self) -> Option<(&Lin, i64, i64)> {
        match self.terms.as_slice() {
            [(Atom::Div(u, d), 1)] => Some((u, *d, self.k)),
            _ => None,
        }
    }

    /// Floor division by a positive constant `d`. The part of the sum whose coefficients `d`
    /// divides comes out exactly: `(d·t + k) / d == t + k / d`.
    pub fn div(&self, d: i64) -> Lin {
        assert!(d > 0, "division by a non-positive constant");
        if d == 1 {
            return self.clone();
        }
        let (whole, rest): (Vec<_>, Vec<_>) =
            self.terms.iter().cloned().partition(|t| t.1 % d == 0);
        let out = Lin {
            terms: whole.into_iter().map(|(a, c)| (a, c / d)).collect(),
            k: 0,
        };
        if rest.is_empty() {
            return out.add_k(self.k.div_euclid(d));
        }
        // Only the constant's multiple of `d` comes out too: (r + k) / d = (r + k % d) / d + k / d.
        let inner = Lin {
            terms: rest,
            k: self.k.rem_euclid(d),
        };
        // A quotient of a quotient is one quotient: (u / a + k) / d = (u + k a) / (a d), for
        // the floor divisions by positive constants (a pyramid's `x / 2 / 2`).
        let quotient = match inner.terms.as_slice() {
            [(Atom::Div(u, a), 1)] => match a.checked_mul(d) {
                Some(ad) if ad <= i32::MAX as i64 => Atom::Div(u.add_k(inner.k * a), ad),
                _ => Atom::Div(inner, d),
            },
            _ => Atom::Div(inner, d),
        };
        out.add(&Lin::atom(quotient)).add_k(self.k.div_euclid(d))
    }

    /// Euclidean remainder by a positive constant `d`.
    pub fn rem(&self, d: i64) -> Lin {
        assert!(d > 0, "remainder by a non-positive constant");
        let rest: Vec<_> = self
            .terms
            .iter()
            .filter(|t| t.1 % d != 0)
            .map(|(a, c)| (a.clone(), c.rem_euclid(d)))
            .collect();
        if rest.is_empty() {
            return Lin::konst(self.k.rem_euclid(d));
        }
        Lin::atom(Atom::Mod(
            Lin {
                terms: rest,
                k: self.k.rem_euclid(d),
            },
            d,
        ))
    }

    pub fn select(c: &Cond, a: &Lin, b: &Lin) -> Lin {
        match c {
            Cond::Const(true) => a.clone(),
            Cond::Const(false) => b.clone(),
            _ if a == b => a.clone(),
            _ => Lin::atom(Atom::Select(Box::new(c.clone()), a.clone(), b.clone())),
        }
    }

    /// `ceil(self / d)` for a positive constant `d`.
    pub fn ceil_div(&self, d: i64) -> Lin {
        self.add_k(d - 1).div(d)
    }

    /// The number of nodes (terms and atoms, nested) of the expression.
    pub fn size(&self) -> usize {
        1 + self
            .terms
            .iter()
            .map(|(a, _)| match a {
                Atom::Var(_) => 1,
                Atom::Min(x, y) | Atom::Max(x, y) => 1 + x.size() + y.size(),
                Atom::Div(x, _) | Atom::Mod(x, _) => 1 + x.size(),
                Atom::Select(c, x, y) => 1 + c.size() + x.size() + y.size(),
            })
            .sum::<usize>()
    }

    /// Every variable this expression mentions.
    pub fn vars(&self, out: &mut Vec<VarId>) {
        for (a, _) in &self.terms {
            match a {
                Atom::Var(v) => out.push(*v),
                Atom::Min(x, y) | Atom::Max(x, y) => {
                    x.vars(out);
                    y.vars(out);
                }
                Atom::Div(x, _) | Atom::Mod(x, _) => x.vars(out),
                Atom::Select(c, x, y) => {
                    c.vars(out);
                    x.vars(out);
                    y.vars(out);
                }
            }
        }
    }

    /// Whether the expression mentions `v`.
    pub fn mentions(&self, v: VarId) -> bool {
        let mut vars = Vec::new();
        self.vars(&mut vars);
        vars.contains(&v)
    }

    /// Whether `v` occurs once, in a positive multiple of a floor quotient `(a v + rest) / k`
    /// with `a > 0` (`rest` without `v`): the expression then never decreases when `v` grows,
    /// by steps that need not be constant (`(y + 1) / 2`).
    pub fn is_quotient_in(&self, v: VarId) -> bool {
        let mentions = |a: &Atom| {
            Lin {
                terms: vec![(a.clone(), 1)],
                k: 0,
            }
            .mentions(v)
        };
        let with_v: Vec<&(Atom, i64)> = self.terms.iter().filter(|(a, _)| mentions(a)).collect();
        let [(Atom::Div(x, _), c)] = with_v[..] else {
            return false;
        };
        let inner: Vec<&(Atom, i64)> = x.terms.iter().filter(|(a, _)| mentions(a)).collect();
        *c > 0 && matches!(inner[..], [(Atom::Var(u), a)] if *u == v && *a > 0)
    }

    /// The expression with variables replaced (`f` returns the replacement, or `None` to keep).
    pub fn subst(&self, f: &dyn Fn(VarId) -> Option<Lin>) -> Lin {
        let mut out = Lin::konst(self.k);
        for (a, c) in &self.terms {
            let t = match a {
                Atom::Var(v) => f(*v).unwrap_or_else(|| Lin::var(*v)),
                Atom::Min(x, y) => x.subst(f).min_with(&y.subst(f)),
                Atom::Max(x, y) => x.subst(f).max_with(&y.subst(f)),
                Atom::Div(x, d) => x.subst(f).div(*d),
                Atom::Mod(x, d) => x.subst(f).rem(*d),
                Atom::Select(k, x, y) => Lin::select(&k.subst(f), &x.subst(f), &y.subst(f)),
            };
            out = out.add(&t.scale(*c));
        }
        out
    }

    /// The value under an assignment of every variable it mentions.
    pub fn eval(&self, env: &dyn Fn(VarId) -> i64) -> i64 {
        let mut v = self.k;
        for (a, c) in &self.terms {
            let x = match a {
                Atom::Var(u) => env(*u),
                Atom::Min(x, y) => x.eval(env).min(y.eval(env)),
                Atom::Max(x, y) => x.eval(env).max(y.eval(env)),
                Atom::Div(x, d) => x.eval(env).div_euclid(*d),
                Atom::Mod(x, d) => x.eval(env).rem_euclid(*d),
                Atom::Select(k, x, y) => {
                    if k.eval(env) {
                        x.eval(env)
                    } else {
                        y.eval(env)
                    }
                }
            };
            v = v.wrapping_add(c.wrapping_mul(x));
        }
        v
    }
}

impl Cond {
    /// `a < b`.
    pub fn lt(a: &Lin, b: &Lin) -> Cond {
        Cond::le(&a.add_k(1), b)
    }

    /// `a <= b`.
    pub fn le(a: &Lin, b: &Lin) -> Cond {
        let d = a.sub(b);
        match d.as_const() {
            Some(v) => Cond::Const(v <= 0),
            None => Cond::Le0(d),
        }
    }

    pub fn eq(a: &Lin, b: &Lin) -> Cond {
        let d = a.sub(b);
        match d.as_const() {
            Some(v) => Cond::Const(v == 0),
            None => Cond::Eq0(d),
        }
    }

    pub fn and(a: Cond, b: Cond) -> Cond {
        match (a, b) {
            (Cond::Const(false), _) | (_, Cond::Const(false)) => Cond::Const(false),
            (Cond::Const(true), x) | (x, Cond::Const(true)) => x,
            (x, y) => Cond::And(Box::new(x), Box::new(y)),
        }
    }

    pub fn or(a: Cond, b: Cond) -> Cond {
        match (a, b) {
            (Cond::Const(true), _) | (_, Cond::Const(true)) => Cond::Const(true),
            (Cond::Const(false), x) | (x, Cond::Const(false)) => x,
            (x, y) => Cond::Or(Box::new(x), Box::new(y)),
        }
    }

    #[allow(clippy::should_implement_trait)]
    pub fn not(a: Cond) -> Cond {
        match a {
            Cond::Const(b) => Cond::Const(!b),
            Cond::Not(x) => *x,
            x => Cond::Not(Box::new(x)),
        }
    }

    fn size(&self) -> usize {
        match self {
            Cond::Const(_) => 1,
            Cond::Le0(e) | Cond::Eq0(e) => 1 + e.size(),
            Cond::And(a, b) | Cond::Or(a, b) => 1 + a.size() + b.size(),
            Cond::Not(a) => 1 + a.size(),
        }
    }

    fn vars(&self, out: &mut Vec<VarId>) {
        match self {
            Cond::Const(_) => {}
            Cond::Le0(e) | Cond::Eq0(e) => e.vars(out),
            Cond::And(a, b) | Cond::Or(a, b) => {
                a.vars(out);
                b.vars(out);
            }
            Cond::Not(a) => a.vars(out),
        }
    }

    pub fn subst(&self, f: &dyn Fn(VarId) -> Option<Lin>) -> Cond {
        match self {
            Cond::Const(b) => Cond::Const(*b),
            Cond::Le0(e) => Cond::le(&e.subst(f), &Lin::konst(0)),
            Cond::Eq0(e) => Cond::eq(&e.subst(f), &Lin::konst(0)),
            Cond::And(a, b) => Cond::and(a.subst(f), b.subst(f)),
            Cond::Or(a, b) => Cond::or(a.subst(f), b.subst(f)),
            Cond::Not(a) => Cond::not(a.subst(f)),
        }
    }

    /// An equivalent condition with the `min`/`max` of its comparisons split into conjunctions
    /// and disjunctions (`a <= min(b, c)` is `a <= b and a <= c`), each part decided where the
    /// least values of the variables (`least`: sizes are at least 1) settle it. Preconditions of
    /// clamped reads (`input_min <= max(input_min, ...)`) fold to `true` this way instead of
    /// reaching the solver as large assumptions. At most `budget` comparisons are split; the
    /// rest stay as they are.
    pub fn split_min_max(&self, least: &dyn Fn(VarId) -> Option<i64>, budget: &mut usize) -> Cond {
        match self {
            Cond::Le0(e) => split_le0(e, least, budget),
            Cond::And(a, b) => Cond::and(
                a.split_min_max(least, budget),
                b.split_min_max(least, budget),
            ),
            Cond::Or(a, b) => Cond::or(
                a.split_min_max(least, budget),
                b.split_min_max(least, budget),
            ),
            Cond::Not(a) => Cond::not(a.split_min_max(least, budget)),
            other => other.clone(),
        }
    }

    pub fn eval(&self, env: &dyn Fn(VarId) -> i64) -> bool {
        match self {
            Cond::Const(b) => *b,
            Cond::Le0(e) => e.eval(env) <= 0,
            Cond::Eq0(e) => e.eval(env) == 0,
            Cond::And(a, b) => a.eval(env) && b.eval(env),
            Cond::Or(a, b) => a.eval(env) || b.eval(env),
            Cond::Not(a) => !a.eval(env),
        }
    }
}

/// `e <= 0`, split at its `min`/`max` atoms of unit coefficient (see [`Cond::split_min_max`]).
fn split_le0(e: &Lin, least: &dyn Fn(VarId) -> Option<i64>, budget: &mut usize) -> Cond {
    // Decided by the variables' least values: every variable with a negative coefficient and a
    // least value gives `e` its greatest value; with a positive one, its least.
    let mut most = Some(e.k);
    let mut fewest = Some(e.k);
    for (a, c) in &e.terms {
        let l = match a {
            Atom::Var(v) => least(*v),
            _ => None,
        };
        let t = l.and_then(|l| l.checked_mul(*c));
        if *c < 0 {
            most = most.zip(t).and_then(|(m, t)| m.checked_add(t));
            fewest = None;
        } else {
            fewest = fewest.zip(t).and_then(|(m, t)| m.checked_add(t));
            most = None;
        }
    }
    if most.is_some_and(|m| m <= 0) {
        return Cond::Const(true);
    }
    if fewest.is_some_and(|m| m > 0) {
        return Cond::Const(false);
    }
    if *budget == 0 {
        return Cond::Le0(e.clone());
    }
    let split = e.terms.iter().enumerate().find_map(|(i, (a, c))| match a {
        Atom::Min(x, y) | Atom::Max(x, y) if c.abs() == 1 => Some((i, a, x, y, *c)),
        _ => None,
    });
    let Some((i, a, x, y, c)) = split else {
        return Cond::Le0(e.clone());
    };
    *budget -= 1;
    let mut rest = e.clone();
    rest.terms.remove(i);
    let (l, r) = (rest.add(&x.scale(c)), rest.add(&y.scale(c)));
    let side = |s: &Lin, budget: &mut usize| match s.as_const() {
        Some(v) => Cond::Const(v <= 0),
        None => split_le0(s, least, budget),
    };
    // `r + min(x, y) <= 0` holds when either side does; `r - min(x, y) <= 0` when both do.
    let both = matches!((a, c), (Atom::Min(..), -1) | (Atom::Max(..), 1));
    let l = side(&l, budget);
    if both {
        if l == Cond::Const(false) {
            return l;
        }
        Cond::and(l, side(&r, budget))
    } else {
        if l == Cond::Const(true) {
            return l;
        }
        Cond::or(l, side(&r, budget))
    }
}

/// The largest bound expression the interval analysis builds (in nodes).
pub const MAX_SIZE: usize = 4000;

/// An interval end: `None` is infinite (below for a lower end, above for an upper one).
pub type End = Option<Lin>;

/// What a relaxed variable ranges over.
#[derive(Clone, Debug)]
pub struct Range {
    pub lo: End,
    pub hi: End,
}

/// The variables that range over intervals in a bounds query. Ends of a variable's range may
/// mention other variables of the scope; they are relaxed in turn (ranges never refer back).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub ranges: HashMap<VarId, Range>,
}

fn add_ends(a: End, b: End) -> End {
    Some(a?.add(&b?))
}

impl Scope {
    pub fn bind(&mut self, v: VarId, lo: End, hi: End) {
        self.ranges.insert(v, Range { lo, hi });
    }

    /// The least value of `e` over the scope.
    pub fn lower(&self, e: &Lin) -> End {
        self.bound(e, false)
    }

    /// The greatest value of `e` over the scope.
    pub fn upper(&self, e: &Lin) -> End {
        self.bound(e, true)
    }

    fn bound(&self, e: &Lin, upper: bool) -> End {
        let mut out = Some(Lin::konst(e.k));
        for (a, c) in &e.terms {
            // A positive coefficient keeps the direction, a negative one turns it.
            let dir = upper == (*c > 0);
            let t = self.atom_bound(a, dir)?;
            out = add_ends(out, Some(t.scale(*c)));
        }
        // Bounds of nested tiles can grow with every level; past this size there is no bound
        // (lowering reports it) rather than an expression that exhausts memory.
        out.filter(|l| l.size() <= MAX_SIZE)
    }

    fn atom_bound(&self, a: &Atom, upper: bool) -> End {
        match a {
            Atom::Var(v) => match self.ranges.get(v) {
                None => Some(Lin::var(*v)),
                Some(r) => {
                    let end = if upper { r.hi.as_ref() } else { r.lo.as_ref() };
                    self.bound(end?, upper)
                }
            },
            Atom::Min(x, y) => {
                let (bx, by) = (self.bound(x, upper), self.bound(y, upper));
                match (bx, by) {
                    (Some(p), Some(q)) => Some(p.min_with(&q)),
                    // The minimum's upper end is either side's; its lower end needs both.
                    (Some(p), None) | (None, Some(p)) if upper => Some(p),
                    _ => None,
                }
            }
            Atom::Max(x, y) => {
                let (bx, by) = (self.bound(x, upper), self.bound(y, upper));
                match (bx, by) {
                    (Some(p), Some(q)) => Some(p.max_with(&q)),
                    (Some(p), None) | (None, Some(p)) if !upper => Some(p),
                    _ => None,
                }
            }
            Atom::Div(x, d) => Some(self.bound(x, upper)?.div(*d)),
            Atom::Mod(x, d) => {
                // Exact when the operand does not move.
                let (lo, hi) = (self.bound(x, false), self.bound(x, true));
                match (lo, hi) {
                    (Some(l), Some(h)) if l == h => Some(l.rem(*d)),
                    _ => Some(Lin::konst(if upper { d - 1 } else { 0 })),
                }
            }
            Atom::Select(_, x, y) => {
                let (bx, by) = (self.bound(x, upper)?, self.bound(y, upper)?);
                Some(if upper {
                    bx.max_with(&by)
                } else {
                    bx.min_with(&by)
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_simplify() {
        let t = Lin::var(0);
        let e = t.scale(8).add_k(5).div(8);
        assert_eq!(e, t);
        let m = t.min_with(&t.add_k(3));
        assert_eq!(m, t);
        // Nested minima share operands.
        let u = Lin::var(2);
        let m = t.min_with(&u);
        assert_eq!(t.min_with(&m), m);
        assert_eq!(m.min_with(&t.add_k(-1)), t.add_k(-1).min_with(&u));
        assert_eq!(
            t.max_with(&u.max_with(&t.add_k(2))),
            t.add_k(2).max_with(&u)
        );
        // A fused loop's two coordinates add up again.
        let f = Lin::var(1);
        assert_eq!(f.rem(5).add(&f.div(5).scale(5)).add_k(2), f.add_k(2));
        assert_eq!(t.scale(8).add_k(13).rem(8), Lin::konst(5));
    }

    #[test]
    fn quotient_differences_have_tight_constant_bounds() {
        // (y + δ) / d - y / d + k, both orders of the terms, against every y on a grid: the bound
        // holds and is reached.
        let y = Lin::var(0);
        for d in 1..5 {
            for delta in -7..8 {
                for k in [-1, 0, 1] {
                    let (a, b) = (y.add_k(delta).div(d), y.div(d));
                    for (e, sign) in [(a.sub(&b).add_k(k), 1), (b.sub(&a).add_k(k), -1)] {
                        let Some(bound) = e.const_upper_bound() else {
                            // Dividends equal up to a multiple of d: a constant.
                            assert!(e.as_const().is_some() || d == 1, "{e:?}");
                            continue;
                        };
                        let values: Vec<i64> = (-20..20).map(|v| e.eval(&|_| v)).collect();
                        let most = *values.iter().max().unwrap();
                        assert!(most <= bound, "{e:?}: {most} > {bound} ({sign})");
                        assert_eq!(most, bound, "{e:?}: the bound is not tight");
                    }
                }
            }
        }
        // Other shapes have none.
        assert_eq!(y.div(2).add(&y.div(3)).const_upper_bound(), None);
        assert_eq!(
            y.add_k(1)
                .div(2)
                .sub(&y.scale(2).div(2))
                .const_upper_bound(),
            None
        );
    }

    #[test]
    fn min_max_comparisons_split_exactly() {
        // A clamped read's precondition: lo <= max(lo, min(lo + n - 1, x)) holds for any x.
        let (lo, n, x) = (Lin::var(0), Lin::var(1), Lin::var(2));
        let clamped = lo.max_with(&lo.add(&n).add_k(-1).min_with(&x));
        let least = |v: VarId| (v == 1).then_some(1);
        let c = Cond::le(&lo, &clamped);
        assert!(
            matches!(c, Cond::Le0(_)),
            "the constructor alone cannot decide it"
        );
        assert_eq!(c.split_min_max(&least, &mut 64), Cond::Const(true));
        // lo <= min(lo + n - 1, x) needs n >= 1 and lo <= x: what stays is lo <= x.
        let c = Cond::le(&lo, &lo.add(&n).add_k(-1).min_with(&x));
        assert_eq!(c.split_min_max(&least, &mut 64), Cond::le(&lo, &x));
        // The split is an equivalence: both forms agree on every point of a grid.
        let y = Lin::var(3);
        let e = x.scale(2).min_with(&y.add_k(-3)).max_with(&x.sub(&y));
        let forms = [
            Cond::le(&e, &lo),
            Cond::le(&lo, &e.scale(-3)),
            Cond::lt(&e, &n.min_with(&lo)),
        ];
        for c in forms {
            let split = c.split_min_max(&|_| None, &mut 64);
            for p in 0..6i64.pow(4) {
                let v = [p % 6 - 3, p / 6 % 6 + 1, p / 36 % 6 - 3, p / 216 % 6 - 3];
                let env = |k: VarId| v[k as usize];
                assert_eq!(c.eval(&env), split.eval(&env), "{c:?} at {v:?}");
            }
        }
        // With no budget nothing is split.
        let c = Cond::le(&lo, &clamped);
        assert_eq!(c.split_min_max(&least, &mut 0), c);
    }

    #[test]
    fn relaxation_follows_ranges() {
        // x = 8·xo + xi with xo in [0, n), xi in [0, 8): x + 1 ranges over [1, 8n].
        let (xo, xi, n) = (0, 1, 2);
        let x = Lin::var(xo).scale(8).add(&Lin::var(xi));
        let mut s = Scope::default();
        s.bind(xo, Some(Lin::konst(0)), Some(Lin::var(n).add_k(-1)));
        s.bind(xi, Some(Lin::konst(0)), Some(Lin::konst(7)));
        assert_eq!(s.lower(&x.add_k(1)), Some(Lin::konst(1)));
        assert_eq!(s.upper(&x.add_k(1)), Some(Lin::var(n).scale(8)));
        // -x turns the ends around.
        assert_eq!(s.upper(&x.scale(-1)), Some(Lin::konst(0)));
        // An unbounded variable stays unbounded.
        s.bind(3, None, Some(Lin::konst(255)));
        assert_eq!(s.lower(&Lin::var(3)), None);
        let clamped = Lin::var(3)
            .max_with(&Lin::konst(0))
            .min_with(&Lin::konst(255));
        assert_eq!(s.lower(&clamped), Some(Lin::konst(0)));
        assert_eq!(s.upper(&clamped), Some(Lin::konst(255)));
    }
}
