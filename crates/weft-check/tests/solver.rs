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
