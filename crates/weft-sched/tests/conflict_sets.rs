//! `Analysis::conflict` proves whole sets of accesses disjoint at once (one solver query per
//! buffer and kind of access); it must answer exactly what the pairwise check answers: some pair
//! of accesses of conflicting kinds may touch one cell. Random access sets, with index variables
//! shared inside a side (loop variables bound in the code) and between the sides (the sizes and
//! the loop around both), guards, buffers of one and two dimensions, all three kinds, both race
//! modes, are compared with the pairwise answer.

use proptest::prelude::*;
use weft_check::smt::{Term, Var};
use weft_ir::{Span, Sym};
use weft_sched::effects::{kinds_conflict, Access, AccessKind, Analysis, Effects, Root};

/// The variables of the random terms: `n` (a size), `i` (the loop around both sides), and per
/// side two bound ones (`a`, `b` for the first side, `a'`, `b'` for the second).
struct Vars {
    n: Var,
    i: Var,
    bound: [[Var; 2]; 2],
}

fn var(name: &str) -> Var {
    Var {
        id: Sym::new(name).id(),
        name: name.to_string(),
    }
}

fn vars() -> Vars {
    Vars {
        n: var("n"),
        i: var("i"),
        bound: [[var("a"), var("b")], [var("a'"), var("b'")]],
    }
}

/// One random access, described by small numbers: buffer, rank, kind, the coefficients and
/// constant of each index (over i, the two bound variables, n), and an optional guard.
type AccessSpec = (
    u8,
    bool,
    u8,
    Vec<(i64, i64, i64, i64, i64)>,
    Option<(i64, i64)>,
);

fn access_spec() -> impl Strategy<Value = AccessSpec> {
    (
        0u8..2,
        any::<bool>(),
        0u8..3,
        prop::collection::vec((-1i64..=2, -1i64..=2, -1i64..=1, 0i64..=1, -2i64..=3), 2),
        prop::option::of((0i64..2, 0i64..4)),
    )
}

fn access(v: &Vars, side: usize, spec: &AccessSpec) -> Access {
    let (buf, two_dims, kind, coefs, guard) = spec;
    let [x, y] = &v.bound[side];
    let t = |v: &Var| Term::IntVar(v.clone());
    let idx: Vec<Term> = coefs
        .iter()
        .take(if *two_dims { 2 } else { 1 })
        .map(|&(ci, cx, cy, cn, k)| {
            let mut e = Term::Int(k);
            for (c, var) in [(ci, &v.i), (cx, x), (cy, y), (cn, &v.n)] {
                if c != 0 {
                    e = Term::add(e, Term::mul(Term::Int(c), t(var)));
                }
            }
            e
        })
        .collect();
    // Every access runs for 0 <= x < n and 0 <= y < 3, and maybe only where x (or y) < a bound.
    let mut guards = vec![
        Term::le(Term::Int(0), t(x)),
        Term::lt(t(x), t(&v.n)),
        Term::le(Term::Int(0), t(y)),
        Term::lt(t(y), Term::Int(3)),
    ];
    if let Some((which, bound)) = guard {
        let g = if *which == 0 { x } else { y };
        guards.push(Term::lt(t(g), Term::Int(*bound)));
    }
    Access {
        root: Root::Buf(u64::from(*buf) + 1_000_000),
        name: format!("buf{buf}"),
        idx,
        kind: [AccessKind::Read, AccessKind::Write, AccessKind::Reduce][*kind as usize],
        guard: guards,
        bound: vec![x.clone(), y.clone()],
        exact: true,
        span: Span::DUMMY,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn set_conflicts_answer_what_pairs_answer(
        first in prop::collection::vec(access_spec(), 1..6),
        second in prop::collection::vec(access_spec(), 1..6),
        races in any::<bool>(),
        apart in any::<bool>(),
    ) {
        let v = vars();
        let a = Effects { accesses: first.iter().map(|s| access(&v, 0, s)).collect() };
        let b = Effects { accesses: second.iter().map(|s| access(&v, 1, s)).collect() };
        let t = |v: &Var| Term::IntVar(v.clone());
        let facts = vec![Term::le(Term::Int(1), t(&v.n)), Term::lt(t(&v.n), Term::Int(6))];
        // Two executions at one i, or (apart) at i and i + 1.
        let extra = if apart { vec![Term::eq(t(&v.i), Term::Int(2))] } else { Vec::new() };
        let mut analysis = Analysis::new();
        let sets = analysis.conflict(&facts, &extra, &a, &b, races).is_some();
        let mut pairs = false;
        for x in &a.accesses {
            for y in &b.accesses {
                if kinds_conflict(x.kind, y.kind, races)
                    && analysis.overlap(&facts, &extra, x, y).is_some()
                {
                    pairs = true;
                }
            }
        }
        prop_assert_eq!(sets, pairs, "first {:?}\nsecond {:?}", first, second);
    }
}
