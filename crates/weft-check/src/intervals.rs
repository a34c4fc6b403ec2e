//! Interval bounds of control terms, for the control-arithmetic rule (docs/language.md §2):
//! control integers entering a proc lie in ±[`ENTRY_MAX`], and every control value and
//! intermediate a program evaluates lies in the 64-bit range. Intervals settle almost every
//! such obligation (and the easy ones of other rules) without a solver query; only what they
//! cannot place goes to the solver, which also has the relations between variables.

use crate::smt::Term;
use std::collections::HashMap;

pub use weft_ir::types::ENTRY_MAX;

/// A closed interval of integers, `lo <= hi`, in 128 bits so that 64-bit overflow shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub lo: i128,
    pub hi: i128,
}

impl Interval {
    /// Every 64-bit value.
    pub const I64: Interval = Interval {
        lo: i64::MIN as i128,
        hi: i64::MAX as i128,
    };
    /// A control value entering a proc (an `index` or `stride` argument, a window stride, a
    /// control config field).
    pub const ENTRY: Interval = Interval {
        lo: -(ENTRY_MAX as i128),
        hi: ENTRY_MAX as i128,
    };
    /// A `size` argument.
    pub const SIZE: Interval = Interval {
        lo: 1,
        hi: ENTRY_MAX as i128,
    };
    const BOOL: Interval = Interval { lo: 0, hi: 1 };

    pub fn new(lo: i128, hi: i128) -> Interval {
        Interval { lo, hi: hi.max(lo) }
    }

    fn point(v: i128) -> Interval {
        Interval { lo: v, hi: v }
    }

    pub fn within(&self, outer: &Interval) -> bool {
        outer.lo <= self.lo && self.hi <= outer.hi
    }

    /// The part of `self` inside `outer` (a point of `outer` when they do not meet).
    pub fn clamp(&self, outer: &Interval) -> Interval {
        let lo = self.lo.clamp(outer.lo, outer.hi);
        Interval::new(lo, self.hi.clamp(lo, outer.hi))
    }

    fn union(&self, o: &Interval) -> Interval {
        Interval::new(self.lo.min(o.lo), self.hi.max(o.hi))
    }

    fn magnitude(&self) -> i128 {
        self.lo.saturating_abs().max(self.hi.saturating_abs())
    }
}

/// Bounds of the variables: what is not listed may be any 64-bit value.
pub type VarRanges = HashMap<u64, Interval>;

fn mul(a: &Interval, b: &Interval) -> Interval {
    let c = [
        a.lo.saturating_mul(b.lo),
        a.lo.saturating_mul(b.hi),
        a.hi.saturating_mul(b.lo),
        a.hi.saturating_mul(b.hi),
    ];
    Interval::new(
        c.iter().copied().min().unwrap_or(0),
        c.iter().copied().max().unwrap_or(0),
    )
}

/// Euclidean division and remainder with `x / 0 = 0`, `x % 0 = 0` (weft's semantics).
fn div(x: &Interval, y: &Interval) -> Interval {
    if y.lo == y.hi && y.lo > 0 {
        let d = y.lo;
        return Interval::new(x.lo.div_euclid(d), x.hi.div_euclid(d));
    }
    // Any other divisor: the quotient is no larger in magnitude than the dividend.
    let m = x.magnitude();
    Interval::new(-m, m)
}

fn rem(x: &Interval, y: &Interval) -> Interval {
    let m = y.magnitude();
    if m == 0 {
        return Interval::point(0);
    }
    if x.lo >= 0 && x.hi < m && y.lo > 0 {
        return *x;
    }
    Interval::new(0, m - 1)
}

/// The interval of an integer term (a boolean subterm counts as 0 or 1). Every arithmetic
/// intermediate whose interval is not inside the 64-bit range is pushed to `unplaced`, innermost
/// first: those are the intermediates the solver must place.
pub fn interval(t: &Term, vars: &VarRanges, unplaced: &mut Vec<Term>) -> Interval {
    let mut iv = |x: &Term| interval(x, vars, unplaced);
    let r = match t {
        Term::Int(v) => return Interval::point(*v as i128),
        Term::IntVar(v) => return vars.get(&v.id).copied().unwrap_or(Interval::I64),
        Term::Bool(_)
        | Term::BoolVar(_)
        | Term::Lt(..)
        | Term::Le(..)
        | Term::Eq(..)
        | Term::And(_)
        | Term::Or(_)
        | Term::Not(_) => {
            // Comparisons still evaluate their operands.
            let mut ops = Vec::new();
            t.children(&mut ops);
            for o in ops {
                iv(o);
            }
            return Interval::BOOL;
        }
        Term::Ite(c, a, b) => {
            iv(c);
            return iv(a).union(&iv(b));
        }
        Term::Add(a, b) => {
            let (x, y) = (iv(a), iv(b));
            Interval::new(x.lo.saturating_add(y.lo), x.hi.saturating_add(y.hi))
        }
        Term::Sub(a, b) => {
            let (x, y) = (iv(a), iv(b));
            Interval::new(x.lo.saturating_sub(y.hi), x.hi.saturating_sub(y.lo))
        }
        Term::Neg(a) => {
            let x = iv(a);
            Interval::new(x.hi.saturating_neg(), x.lo.saturating_neg())
        }
        Term::Mul(a, b) => mul(&iv(a), &iv(b)),
        Term::Div(a, b) => div(&iv(a), &iv(b)),
        Term::Mod(a, b) => rem(&iv(a), &iv(b)),
    };
    if !r.within(&Interval::I64) {
        unplaced.push(t.clone());
    }
    r
}

/// What intervals say about a boolean term: `Some(true)` when it holds for every value in the
/// ranges, `Some(false)` when for none, `None` when they cannot tell.
pub fn truth(t: &Term, vars: &VarRanges) -> Option<bool> {
    let iv = |x: &Term| interval(x, vars, &mut Vec::new());
    match t {
        Term::Bool(b) => Some(*b),
        Term::Le(a, b) => compare(&iv(a), &iv(b), false),
        Term::Lt(a, b) => compare(&iv(a), &iv(b), true),
        Term::And(v) => {
            let mut all = Some(true);
            for x in v {
                match truth(x, vars) {
                    Some(false) => return Some(false),
                    None => all = None,
                    Some(true) => {}
                }
            }
            all
        }
        Term::Or(v) => {
            let mut any = Some(false);
            for x in v {
                match truth(x, vars) {
                    Some(true) => return Some(true),
                    None => any = None,
                    Some(false) => {}
                }
            }
            any
        }
        Term::Not(x) => truth(x, vars).map(|b| !b),
        _ => None,
    }
}

/// Whether `x <= y` (`x < y` when `strict`) for all, none, or some values of the intervals.
fn compare(x: &Interval, y: &Interval, strict: bool) -> Option<bool> {
    // Bounds saturate at the ends of i128: a sum past them decides nothing.
    let s = strict as i128;
    if x.hi.checked_add(s).is_some_and(|h| h <= y.lo) {
        Some(true)
    } else if x.lo.checked_add(s).is_some_and(|l| l > y.hi) {
        Some(false)
    } else {
        None
    }
}

/// `lo <= t <= hi` as a term.
pub fn in_interval(t: &Term, r: &Interval) -> Term {
    let bound = |v: i128| Term::Int(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64);
    Term::And(vec![
        Term::le(bound(r.lo), t.clone()),
        Term::le(t.clone(), bound(r.hi)),
    ])
}
