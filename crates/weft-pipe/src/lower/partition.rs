//! Loop partitioning (Halide's `partition_loops`): an innermost serial loop whose coordinates
//! clamp its variable (`repeat_edge`'s `min(max(x, lo), hi)`, a `clamp` in the algorithm) runs
//! as three loops: before the clamps let go, the steady state, and after. In the steady state
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
    pub lows: Vec<Lin>,
    pub highs: Vec<Lin>,
}

impl Lower<'_> {
    /// The steady state of the innermost loop over `v` of stage `(f, s)`; `None` when no
    /// coordinate clamps `v`.
    pub(super) fn steady_state(&self, f: usize, s: usize, v: VarId) -> Res<Option<SteadyState>> {
        let mut atoms = Vec::new();
        for l in self.coordinate_lins(f, s)? {
            collect_extrema(&self.expand_defs(&l), &mut atoms);
        }
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
                let (moving, fixed, chosen) = match (linear_in(&ra, v), linear_in(&rb, v)) {
                    (Some(_), None) if !mentions(&rb, v) => (&ra, &rb, a),
                    (None, Some(_)) if !mentions(&ra, v) => (&rb, &ra, b),
                    _ => continue,
                };
                // moving - fixed = c v + rest, c = ±1, rest free of v.
                let d = moving.sub(fixed);
                let Some(c) = linear_in(&d, v) else { continue };
                let rest = d.sub(&Lin::var(v).scale(c));
                // The moving side is chosen where `c v + rest <= 0` (min) or `>= 0` (max).
                let upper = is_min == (c == 1);
                let bound = if c == 1 { rest.scale(-1) } else { rest };
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
        Ok((!resolved.is_empty()).then_some(SteadyState {
            resolved,
            lows,
            highs,
        }))
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

/// The coefficient (±1) of `v` in `l` when `v` appears only as a top-level term.
fn linear_in(l: &Lin, v: VarId) -> Option<i64> {
    let c = l
        .terms
        .iter()
        .find(|(a, _)| *a == Atom::Var(v))
        .map(|(_, c)| *c)?;
    let rest = l.sub(&Lin::var(v).scale(c));
    (c.abs() == 1 && !mentions(&rest, v)).then_some(c)
}

fn mentions(l: &Lin, v: VarId) -> bool {
    let mut vars = Vec::new();
    l.vars(&mut vars);
    vars.contains(&v)
}
