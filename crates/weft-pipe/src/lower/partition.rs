//! Loop partitioning (Halide's `partition_loops`): an innermost serial loop whose coordinates
//! clamp its variable (`repeat_edge`'s `min(max(x, lo), hi)`, a `clamp` in the algorithm) runs
//! as three loops: before the clamps let go, the steady state, and after. A loop whose inner
//! loops all have constant ranges is partitioned the same way, where every value of them is
//! past the clamps: the outer loop of a split (a vectorized or unrolled tile, where a
//! `ShiftInwards` tile is not shifted), and a loop no split made whose own range is not
//! constant (around a reduction domain's loops, as in a histogram's `h(in(8 x + r.x, ..)) +=
//! ..`; not the constant loops inside, so a nest is cut once; `weft::pipeline` lowers without
//! it where the checker cannot combine the pieces). In the steady state
//! every such `min`/`max` takes its side that moves with the variable, so the C compiler sees
//! contiguous accesses (vector loads instead of gathers). The steady range comes from the
//! `min`/`max` themselves, so each resolved one holds there by construction; the proc checker
//! proves the accesses of the three loops like any others.

use super::*;

/// The `min`/`max` atoms of a stage's coordinates that the steady state resolves, each with
/// the side it takes there.
pub(super) type Resolved = HashMap<Atom, Lin>;

/// The steady state of a loop over `v`: `v >= low` for each low, `v <= high` for each high,
/// and there each resolved atom takes its side.
pub(super) struct SteadyState {
    pub resolved: Resolved,
    /// The `GuardWithIf` splits (variables of the stage) whose guards inside the loop hold.
    pub guards: Vec<usize>,
    pub lows: Vec<Lin>,
    pub highs: Vec<Lin>,
}

impl Lower<'_> {
    /// The steady state of a loop over `v` of stage `(f, s)`; `None` when no coordinate clamps
    /// `v`. `inner` are the loops inside it, each with its constant range `lo..=hi` (the lanes
    /// of a vectorized split, unrolled loops): a `min`/`max` resolves only where it takes the
    /// same side for every value of them.
    pub(super) fn steady_state(
        &self,
        f: usize,
        s: usize,
        depth: usize,
        inner: &[(VarId, i64, i64)],
    ) -> Res<Option<SteadyState>> {
        let st = &self.funcs[f].stages[s];
        let v = st.vars[st.loops[depth].0].id;
        let mut atoms = Vec::new();
        for l in self.coordinate_lins(f, s)? {
            collect_extrema(&self.expand_defs(&l), &mut atoms);
        }
        let moves = |l: &Lin| l.mentions(v) || inner.iter().any(|(u, ..)| l.mentions(*u));
        let mut resolved = Resolved::new();
        let (mut lows, mut highs) = (Vec::new(), Vec::new());
        loop {
            let before = resolved.len();
            for atom in &atoms {
                if resolved.contains_key(atom) {
                    continue;
                }
                let (Atom::Min(a, b) | Atom::Max(a, b)) = atom else {
                    continue;
                };
                let is_min = matches!(atom, Atom::Min(..));
                let (ra, rb) = (substitute(a, &resolved), substitute(b, &resolved));
                let (moving, fixed, chosen) = match (moves(&ra), moves(&rb)) {
                    (true, false) => (&ra, &rb, a),
                    (false, true) => (&rb, &ra, b),
                    _ => continue,
                };
                // moving - fixed = c v + (inner terms) + rest, rest free of them all.
                let Some((c, rest)) = linear_in(&moving.sub(fixed), v, inner) else {
                    continue;
                };
                // The moving side is chosen where `c v + rest <= 0` (min) or `>= 0` (max),
                // with `rest` at its worst over the inner loops.
                let rest = rest(is_min);
                let (upper, bound) = match (is_min, c > 0) {
                    // c v <= -rest: v <= floor(-rest / c).
                    (true, true) => (true, rest.scale(-1).div(c)),
                    // |c| v >= rest: v >= ceil(rest / |c|).
                    (true, false) => (false, rest.ceil_div(-c)),
                    // c v >= -rest: v >= ceil(-rest / c).
                    (false, true) => (false, rest.scale(-1).ceil_div(c)),
                    // |c| v <= rest: v <= floor(rest / |c|).
                    (false, false) => (true, rest.div(-c)),
                };
                if upper {
                    highs.push(bound);
                } else {
                    lows.push(bound);
                }
                resolved.insert(atom.clone(), chosen.clone());
            }
            if resolved.len() == before {
                break;
            }
        }
        // The guards of `GuardWithIf` splits inside the loop: `def < min + extent`, which holds
        // for every inner value where `c v + rest <= 0` does, rest at its largest.
        let mut guards = Vec::new();
        for (u, du) in st.vars.iter().enumerate() {
            if !matches!(
                du.how,
                How::Split {
                    tail: Tail::GuardWithIf,
                    ..
                }
            ) || super::emit::deepest_loop(st, u) <= depth
            {
                continue;
            }
            let def = self.expand_defs(&self.defs[&du.id]);
            let past = resolve(&def.sub(&du.min.add(&du.ext)).add_k(1), &resolved);
            let Some((c, rest)) = linear_in(&past, v, inner) else {
                continue;
            };
            let rest = rest(true);
            match c > 0 {
                true => highs.push(rest.scale(-1).div(c)),
                false => lows.push(rest.ceil_div(-c)),
            }
            guards.push(u);
        }
        Ok(
            (!resolved.is_empty() || !guards.is_empty()).then_some(SteadyState {
                resolved,
                guards,
                lows,
                highs,
            }),
        )
    }

    /// The coordinates of the stage's reads and writes of buffers, as offsets into them.
    fn coordinate_lins(&self, f: usize, s: usize) -> Res<Vec<Lin>> {
        let (lhs, value, wheres) = &self.bodies[f][s];
        let mut calls = vec![(Callee::Func(f), lhs.clone())];
        let mut collect = |e: &Expr| {
            e.walk(&mut |x| {
                if let Expr::Call(c, args) = x {
                    calls.push((*c, args.clone()));
                }
            })
        };
        collect(value);
        wheres.iter().for_each(&mut collect);
        let mut out = Vec::new();
        for (callee, args) in calls {
            for (d, a) in args.iter().enumerate() {
                if self.reads_data(a) {
                    continue;
                }
                let base = match callee {
                    Callee::Input(k) => Lin::var(self.inputs[k].mins[d]),
                    Callee::Func(g) => match self.funcs[g].alloc.get(d) {
                        Some((lo, _)) => lo.clone(),
                        None => continue,
                    },
                };
                out.push(self.to_lin(a, Some((f, s)))?.sub(&base));
            }
        }
        Ok(out)
    }
}

/// Every `min` and `max` in `l`, inner ones first.
fn collect_extrema(l: &Lin, out: &mut Vec<Atom>) {
    for (a, _) in &l.terms {
        match a {
            Atom::Min(x, y) | Atom::Max(x, y) => {
                collect_extrema(x, out);
                collect_extrema(y, out);
                if !out.contains(a) {
                    out.push(a.clone());
                }
            }
            Atom::Div(x, _) | Atom::Mod(x, _) => collect_extrema(x, out),
            Atom::Select(_, x, y) => {
                collect_extrema(x, out);
                collect_extrema(y, out);
            }
            Atom::Var(_) => {}
        }
    }
}

/// `l` with its top-level resolved atoms replaced by their sides.
fn substitute(l: &Lin, resolved: &Resolved) -> Lin {
    let mut out = Lin::konst(l.k);
    for (a, c) in &l.terms {
        let t = match resolved.get(a) {
            Some(side) => substitute(side, resolved),
            None => Lin {
                terms: vec![(a.clone(), 1)],
                k: 0,
            },
        };
        out = out.add(&t.scale(*c));
    }
    out
}

/// `l` with every resolved atom, at any depth, replaced by its side and the quotients,
/// remainders and extrema around them formed again, so that they simplify with it: in the
/// steady state of a `ShiftInwards` split by 2, `(x_min + min(2 xo, e - 2) + xi) / 2` is
/// `xo + (x_min + xi) / 2`, which moves with `xo` by whole elements.
pub(super) fn resolve(l: &Lin, resolved: &Resolved) -> Lin {
    let mut out = Lin::konst(l.k);
    for (a, c) in &l.terms {
        let t = match (resolved.get(a), a) {
            (Some(side), _) => resolve(side, resolved),
            (None, Atom::Var(v)) => Lin::var(*v),
            (None, Atom::Min(x, y)) => resolve(x, resolved).min_with(&resolve(y, resolved)),
            (None, Atom::Max(x, y)) => resolve(x, resolved).max_with(&resolve(y, resolved)),
            (None, Atom::Div(x, d)) => resolve(x, resolved).div(*d),
            (None, Atom::Mod(x, d)) => resolve(x, resolved).rem(*d),
            (None, Atom::Select(k, x, y)) => {
                Lin::select(k, &resolve(x, resolved), &resolve(y, resolved))
            }
        };
        out = out.add(&t.scale(*c));
    }
    out
}

/// `l` as `c v + (terms of the inner loops) + rest`, with `c != 0` and `v` and the inner
/// loops' variables only as top-level terms: `c`, and `rest` with the inner terms at their
/// largest (for `true`) or smallest value over the loops' ranges.
fn linear_in(
    l: &Lin,
    v: VarId,
    inner: &[(VarId, i64, i64)],
) -> Option<(i64, impl Fn(bool) -> Lin)> {
    let coefficient = |u: VarId| {
        l.terms
            .iter()
            .find(|(a, _)| *a == Atom::Var(u))
            .map_or(0, |(_, c)| *c)
    };
    let c = coefficient(v);
    let mut rest = l.sub(&Lin::var(v).scale(c));
    let mut spans = Vec::new();
    for &(u, lo, hi) in inner {
        let k = coefficient(u);
        rest = rest.sub(&Lin::var(u).scale(k));
        let (a, b) = (k.checked_mul(lo)?, k.checked_mul(hi)?);
        spans.push((a.min(b), a.max(b)));
    }
    if c == 0 || rest.mentions(v) || inner.iter().any(|(u, ..)| rest.mentions(*u)) {
        return None;
    }
    // The bounds negate `c` and `rest` and divide by `c`: exactly, as the coefficients of
    // quasi-affine control are (`x * -2^31 * 65536 * 65536` has a coefficient of -2^63, whose
    // negation wraps; the checker rejects such a coordinate, which must not be partitioned).
    let exact = |k: i64| k.unsigned_abs() <= i32::MAX as u64;
    if !exact(c) || !rest.terms.iter().all(|(_, k)| k.checked_neg().is_some()) || !exact(rest.k) {
        return None;
    }
    let (least, most) = spans.iter().try_fold((0i64, 0i64), |(l, m), (a, b)| {
        Some((l.checked_add(*a)?, m.checked_add(*b)?))
    })?;
    Some((c, move |largest: bool| {
        rest.add_k(if largest { most } else { least })
    }))
}
