//! The control rules: loop extents are never negative (rule `extent`), control arithmetic fits
//! 64 bits under the argument ranges (rule `overflow`), and values entering a proc or a control
//! config field lie in ±(2^31 - 1) (rule `range`). Programs are written as text.

use weft_check::check_module;
use weft_ir::Diagnostic;

/// Parse `text` and check it: `Ok` when accepted, the diagnostics otherwise.
fn check(text: &str) -> Result<(), Vec<Diagnostic>> {
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", text)
        .unwrap_or_else(|d| panic!("does not parse: {d:?}"));
    check_module(&m).map(|_| ())
}

/// The single diagnostic of a rejected program, which must be of `rule`.
fn rejected(text: &str, rule: &str) -> Diagnostic {
    let d = check(text).expect_err("the checker accepted it");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].rule, rule, "{:?}", d[0]);
    d[0].clone()
}

fn note(d: &Diagnostic) -> String {
    d.notes.join(" ")
}

#[test]
fn negative_extent_is_rejected_with_counterexample() {
    let d = rejected(
        "proc f(n: size, x: f32[n]) { for i in 2..n { x[i] = 1.0; } }",
        "extent",
    );
    assert!(
        d.message.contains("loop `i`") && d.message.contains("negative extent"),
        "{d:?}"
    );
    assert!(
        note(&d).contains("n = 1") && note(&d).contains("low = 2"),
        "{d:?}"
    );
}

#[test]
fn extents_follow_from_preconditions_and_guards() {
    check("proc f(n: size, x: f32[n]) { assert n >= 2; for i in 2..n { x[i] = 1.0; } }").unwrap();
    check("proc f(n: size, x: f32[n]) { if n > 2 { for i in 2..n { x[i] = 1.0; } } }").unwrap();
    check("proc f(n: size, x: f32[n]) { for i in 0..n - 1 { x[i] = 1.0; } }").unwrap();
    check("proc f(n: size, x: f32[n]) { for i in 0..n { for j in i..n { x[j] = 1.0; } } }")
        .unwrap();
    // An empty loop is fine.
    check("proc f(n: size, x: f32[n]) { for i in n..n { x[i] = 1.0; } }").unwrap();
    rejected(
        "proc f(n: size, x: f32[n]) { for i in 0..n { for j in i + 2..n { x[j] = 1.0; } } }",
        "extent",
    );
}
