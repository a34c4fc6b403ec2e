//! The control rules: loop extents are never negative (rule `extent`), control arithmetic fits
//! 64 bits under the argument ranges (rule `overflow`), and values entering a proc or a control
//! config field lie in ±(2^31 - 1) (rule `range`). Programs are written as text.

mod common;

use common::{check, note};
use weft_ir::Diagnostic;

/// The single diagnostic of a rejected program, which must be of `rule`.
fn rejected(text: &str, rule: &str) -> Diagnostic {
    let d = check(text).expect_err("the checker accepted it");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].rule, rule, "{:?}", d[0]);
    d[0].clone()
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

/// The example of issue 8: the bound is `n` mathematically, but `n * 2^62` overflows for n >= 2.
#[test]
fn overflowing_loop_bound_is_rejected() {
    let d = rejected(
        "proc f(n: size, x: f32[8]) {
            assert n < 4;
            for i in 0..n - (n * 4611686018427387904) / 4611686018427387904 { x[i + 5] = 1.0; }
        }",
        "overflow",
    );
    assert!(d.message.contains("n * 4611686018427387904"), "{d:?}");
    // A real counterexample: the intermediate's value is shown beyond the 64-bit range.
    let n = note(&d);
    assert!(n.contains("n = 2") || n.contains("n = 3"), "{d:?}");
    assert!(n.contains("value = 92233720368547758"), "{d:?}");
}

#[test]
fn arguments_lie_in_the_entry_range() {
    // Sizes and indices are at most 2^31 - 1, so these fit 64 bits whatever the arguments.
    check("proc f(n: size, k: index, x: f32[n]) { for i in 0..n { if k * 1000000 + i < n { x[i] = 1.0; } } }")
        .unwrap();
    check("proc f(n: size, s: stride, x: f32[n]) { if s * 4294967296 + n > 0 { x[0] = 1.0; } }")
        .unwrap();
    // But not these: 2^31 - 1 times 2^33 is beyond 2^63.
    let d = rejected(
        "proc f(n: size, k: index, x: f32[n]) { if k * 8589934592 < 0 { x[0] = 1.0; } }",
        "overflow",
    );
    assert!(note(&d).contains("k = "), "{d:?}");
    // Preconditions narrow the range.
    check("proc f(n: size, k: index, x: f32[n]) { assert k < 1000 and k > -1000; if k * 8589934592 < 0 { x[0] = 1.0; } }")
        .unwrap();
    // Window strides lie in the entry range too.
    check("proc f(n: size, w: [f32][n]) { if stride(w, 0) * 4294967296 > 0 { w[0] = 1.0; } }")
        .unwrap();
}

#[test]
fn every_intermediate_and_every_place_counts() {
    // An intermediate that overflows even though the whole is small again.
    rejected(
        "proc f(n: size, x: f32[n]) { x[n - 1 + 9223372036854775807 - 9223372036854775807] = 1.0; }",
        "overflow",
    );
    // In a condition, a window coordinate, an allocation size, a call argument, a cast and a
    // `select` condition of data.
    for body in [
        "if n + 9223372036854775807 > 0 { x[0] = 1.0; }",
        "let w = x[n + 9223372036854775807 - 9223372036854775807 - 1:n]; w[0] = 1.0;",
        "alloc t: f32[9223372036854775807 + n]; free t;",
        "x[0] = f32(n + 9223372036854775807);",
        "x[0] = select(n + 9223372036854775807 < 0, x[0], 2.0);",
        "g(-n - 9223372036854775807);",
    ] {
        let text = format!(
            "proc g(k: index) {{ pass; }}
            proc f(n: size, x: f32[n]) {{ {body} }}"
        );
        let d = check(&text).expect_err(body);
        assert!(d.iter().any(|d| d.rule == "overflow"), "{body}: {d:?}");
    }
}

#[test]
fn values_entering_callees_and_config_fields_stay_in_range() {
    let callee = "proc g(k: index, x: f32[1]) { x[0] = 1.0; }\n";
    check(&format!(
        "{callee}proc f(n: size, x: f32[1]) {{ g(n * 2 - 2, x); }}"
    ))
    .unwrap_err();
    check(&format!(
        "{callee}proc f(n: size, x: f32[1]) {{ assert n < 1000; g(n * 2 - 2, x); }}"
    ))
    .unwrap();
    let d = rejected(
        &format!("{callee}proc f(n: size, x: f32[1]) {{ g(n + 2147483647, x); }}"),
        "range",
    );
    assert!(d.message.contains("argument `k` of `g`"), "{d:?}");
    assert!(note(&d).contains("value = 2147483648"), "{d:?}");
    // Config fields: a write proves the range, so a read may assume it.
    let d = rejected(
        "config C { k: index }
         proc f(n: size, x: f32[1]) { C.k = n + 1; }",
        "range",
    );
    assert!(d.message.contains("`C.k`"), "{d:?}");
    check(
        "config C { k: index }
         proc f(n: size, x: f32[1]) { assert n < 1000; C.k = n + 1; if C.k * 4294967296 > 0 { x[0] = 1.0; } }",
    )
    .unwrap();
    // Extents of buffer arguments lie in the entry range: `n + 3` is one, so it can be passed
    // as a size; an allocation's extent is not, so passing it needs a precondition.
    let scallee = "proc g(m: size, x: f32[m]) { x[0] = 1.0; }\n";
    check(&format!(
        "{scallee}proc f(n: size, x: f32[n + 3]) {{ g(n + 3, x); }}"
    ))
    .unwrap();
    let d = check(&format!(
        "{scallee}proc f(n: size) {{ alloc t: f32[n + 3]; g(n + 3, t); free t; }}"
    ))
    .unwrap_err();
    assert!(d.iter().all(|d| d.rule == "range"), "{d:?}");
    check(&format!(
        "{scallee}proc f(n: size) {{ assert n < 100; alloc t: f32[n + 3]; g(n + 3, t); free t; }}"
    ))
    .unwrap();
    // Strides of windows passed to window parameters whose strides the callee reads: 2^31 - 1
    // at most.
    let wcallee = "proc g(w: [f32][2]) { if stride(w, 0) == 1 { w[0] = 1.0; } }\n";
    check(&format!(
        "{wcallee}proc f(n: size, x: f32[2, n]) {{ g(x[0:2, 0]); }}"
    ))
    .unwrap();
    let d = rejected(
        &format!("{wcallee}proc f(n: size) {{ alloc t: f32[2, n, 4]; g(t[0:2, 0, 0]); free t; }}"),
        "range",
    );
    assert!(d.message.contains("stride 0"), "{d:?}");
    // A callee that does not read them does not care.
    check(
        "proc g(w: [f32][2]) { w[0] = 1.0; }
           proc f(n: size) { alloc t: f32[2, n, 4]; g(t[0:2, 0, 0]); free t; }",
    )
    .unwrap();
}

/// `check_control` proves the control rules alone: an out-of-bounds write passes it, an overflow
/// does not.
#[test]
fn check_control_proves_only_the_control_rules() {
    let parse = |text: &str| {
        let mut sources = weft_syntax::SourceMap::new();
        weft_syntax::parse_module(&mut sources, "t.weft", text)
            .unwrap()
            .procs[0]
            .clone()
    };
    let oob = parse("proc f(n: size, x: f32[n]) { x[n] = 1.0; }");
    weft_check::check_control(&oob).unwrap();
    weft_check::check_proc(&oob).unwrap_err();
    let over = parse("proc f(n: size, x: f32[n]) { x[n * 9223372036854775807 - n * 9223372036854775807] = 1.0; }");
    let d = weft_check::check_control(&over).unwrap_err();
    assert_eq!(d[0].rule, "overflow", "{d:?}");
    let neg = parse("proc f(n: size, x: f32[n]) { for i in 1..n { x[i] = 1.0; } for i in 2..n { x[i] = 1.0; } }");
    let d = weft_check::check_control(&neg).unwrap_err();
    assert_eq!((d.len(), d[0].rule), (1, "extent"), "{d:?}");
}

/// A control config field's value is known where it was written, or read, with no write, call
/// or loop iteration since; everywhere else each read may see another value.
#[test]
fn config_values_are_known_until_they_may_change() {
    let cfg = "config C { k: index }\nproc g() { C.k = 7; }\n";
    check(&format!(
        "{cfg}proc f(n: size, x: f32[n]) {{ C.k = n; for i in 0..C.k {{ x[i] = 1.0; }} }}"
    ))
    .unwrap();
    check(&format!(
        "{cfg}proc f(n: size, x: f32[n]) {{ if C.k >= 0 and C.k < n {{ x[C.k] = 1.0; }} }}"
    ))
    .unwrap();
    // A call may change it.
    let d = check(&format!(
        "{cfg}proc f(n: size, x: f32[n]) {{ C.k = n; g(); for i in 0..C.k {{ x[i] = 1.0; }} }}"
    ))
    .unwrap_err();
    assert!(d.iter().any(|d| d.rule == "bounds"), "{d:?}");
    // So may an earlier iteration of a loop, or a branch.
    check(&format!(
        "{cfg}proc f(n: size, x: f32[n]) {{ C.k = n; for j in 0..2 {{ for i in 0..C.k {{ x[i] = 1.0; }} C.k = n + 1; }} }}"
    ))
    .unwrap_err();
    check(&format!(
        "{cfg}proc f(n: size, x: f32[n], c: bool) {{ C.k = n; if c {{ C.k = n + 1; }} for i in 0..C.k {{ x[i] = 1.0; }} }}"
    ))
    .unwrap_err();
}

/// Nested `min`/`max` use each operand twice; their terms must not double at each level (40
/// levels would be 2^40 nodes).
#[test]
fn nested_min_max_stay_small() {
    let mut e = String::from("n - 1");
    for k in 0..40 {
        e = if k % 2 == 0 {
            format!("min({e}, n + {k})")
        } else {
            format!("max({e}, 0)")
        };
    }
    let t0 = std::time::Instant::now();
    check(&format!("proc f(n: size, x: f32[n]) {{ x[{e}] = 1.0; }}")).unwrap();
    assert!(t0.elapsed().as_secs() < 20, "{:?}", t0.elapsed());
}

/// An operand of a nested `min`/`max`, named apart to keep the term small, is still checked.
#[test]
fn overflow_inside_a_shared_min_operand_is_found() {
    let mut e = String::from("n * 4611686018427387904 / 4611686018427387904 + 1 + 2 + 3 + 4 + 5");
    for _ in 0..3 {
        e = format!("min(max({e}, 0), n - 1)");
    }
    let d = check(&format!("proc f(n: size, x: f32[n]) {{ x[{e}] = 1.0; }}")).unwrap_err();
    assert!(d.iter().any(|d| d.rule == "overflow"), "{d:?}");
}
