//! The solver's answers do not depend on the work before them: a proc's obligation is decided
//! the same way alone and after procs whose obligations the solver gives up on (undecided
//! queries tighten the limit only within one proc).

mod common;

use common::check;

/// An index proved in range only through four remainders (the Chinese remainder theorem): the
/// solver needs a few seconds of work for it.
const NEEDS_WORK: &str = "proc d(x: index, a: f32[1] @ DRAM) {
    assert x % 3 == 1;
    assert x % 5 == 2;
    assert x % 7 == 3;
    assert x % 11 == 4;
    a[x % 1155 - 367] = 1.0;
}";

/// The same shape over larger moduli: beyond the solver's limit.
fn undecided(name: &str, m: i64, offset: i64) -> String {
    format!(
        "proc {name}(x: index, a: f32[1] @ DRAM) {{
            assert x % 7 == 1;
            assert x % 11 == 2;
            assert x % 13 == 3;
            assert x % {m} == 4;
            a[x % {} - {offset}] = 1.0;
        }}",
        7 * 11 * 13 * m
    )
}

#[test]
fn an_answer_does_not_depend_on_undecided_procs_before_it() {
    check(NEEDS_WORK).expect("decided alone");
    let text = format!(
        "{}\n{}\n{NEEDS_WORK}",
        undecided("u1", 17, 10221),
        undecided("u2", 19, 6217)
    );
    let d = check(&text).expect_err("u1 and u2 are undecided");
    assert!(
        d.iter()
            .all(|d| d.notes.iter().any(|n| n.contains("could not decide"))),
        "{d:?}"
    );
    let lines: Vec<usize> = d
        .iter()
        .map(|d| text[..d.span.lo as usize].lines().count())
        .collect();
    assert!(lines.iter().all(|&l| l <= 14), "d was not decided: {d:?}");
}

/// Queries are first asked of the facts that bear on the goal (`smt::relevant_facts`); a body
/// that is dead because facts about other variables contradict each other must still be
/// accepted (the full query is asked when the sliced one does not prove the goal), and a
/// failing access must still be rejected with a counterexample.
#[test]
fn facts_left_out_of_a_query_never_change_its_answer() {
    check(
        "proc dead(m: index, i: index, a: f32[4] @ DRAM) {
            assert m >= 0;
            if m < 0 {
                a[i] = 1.0;
            }
        }",
    )
    .expect("the body is unreachable");
    let e = check(
        "proc live(m: index, i: index, a: f32[4] @ DRAM) {
            assert m >= 0;
            if m < 5 {
                a[i] = 1.0;
            }
        }",
    )
    .expect_err("i is not bounded");
    assert!(common::note(&e[0]).contains("counterexample"), "{e:?}");
}

#[test]
fn relevant_facts_follow_definitions_from_the_goal_only() {
    use weft_check::smt::{relevant_facts, Term, Var};
    let v = |id, name: &str| {
        Term::IntVar(Var {
            id,
            name: name.into(),
        })
    };
    let (n, a, b, i, j) = (v(1, "n"), v(2, "a"), v(3, "b"), v(4, "i"), v(5, "j"));
    let facts = vec![
        Term::le(Term::Int(0), n.clone()), // kept: n reached through a's definition
        Term::eq(a.clone(), Term::add(n.clone(), Term::Int(1))), // kept: a is in the goal
        Term::eq(b.clone(), Term::add(n.clone(), Term::Int(2))), // dropped: b is never reached
        Term::lt(i.clone(), a.clone()),    // kept: mentions i
        Term::lt(j.clone(), b.clone()),    // dropped
        Term::Bool(true),                  // kept: no variables
    ];
    let goal = Term::le(i.clone(), n.clone());
    let kept = relevant_facts(&facts, &goal);
    assert_eq!(
        kept,
        vec![
            facts[0].clone(),
            facts[1].clone(),
            facts[3].clone(),
            facts[5].clone()
        ]
    );
}

/// A check inside `z3::with_z3_config` runs in another z3 context than the thread's: solvers
/// that earlier checks of the thread used (kept for reuse) must not serve it, nor its solvers
/// the checks after it (z3 crashes on terms of one context in a solver of another). From the
/// review of the solver pool.
#[test]
fn checks_inside_and_after_another_z3_context_use_solvers_of_their_own_context() {
    const BAD: &str = "proc bad(a: f32[4] @ DRAM) {\n    a[4] = 1.0;\n}\n";
    const GOOD: &str =
        "proc good(n: size, a: f32[8] @ DRAM) {\n    assert n <= 8;\n    for i in 0..n {\n        a[i] = 1.0;\n    }\n}\n";
    assert!(check(GOOD).is_ok());
    let inside = z3::with_z3_config(&z3::Config::new(), || (check(GOOD), check(BAD)));
    assert!(inside.0.is_ok() && inside.1.is_err());
    for _ in 0..3 {
        assert!(check(GOOD).is_ok());
        assert!(check(BAD).is_err());
    }
    assert!(z3::with_z3_config(&z3::Config::new(), || check(GOOD).is_ok()));
}
