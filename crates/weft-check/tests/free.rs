//! `free`: a freed allocation is used neither directly nor through any window of it (nor by a
//! call given such a window), and it is freed once. Each rejection names the `free`.

mod common;

use common::check;
use weft_ir::Diagnostic;

/// The one diagnostic of `body` in `proc f(y: f32[2])` (with a callee `g` in scope).
fn rejected(body: &str, rule: &str) -> Diagnostic {
    let text = format!(
        "proc g(v: [f32][2]) {{ v[0] = 1.0; }}
         proc f(y: f32[2]) {{ {body} }}"
    );
    let d = check(&text).expect_err(body);
    assert_eq!(d.len(), 1, "{body}: {d:?}");
    assert_eq!(d[0].rule, rule, "{body}: {d:?}");
    d[0].clone()
}

#[test]
fn use_through_a_window_after_free_is_rejected() {
    let d = rejected(
        "alloc t: f32[4]; let w = t[0:2]; w[0] = 1.0; w[1] = 2.0; free t; y[0] = w[0];",
        "use-after-free",
    );
    assert!(
        d.message.contains("`w`") && d.message.contains("`t` was freed"),
        "{d:?}"
    );
    // The label points at the `free`.
    assert_eq!(d.labels.len(), 1, "{d:?}");
    assert!(d.labels[0].message.contains("freed here"), "{d:?}");
    assert!(d.labels[0].span.lo < d.span.lo, "{d:?}");
}

#[test]
fn every_kind_of_use_after_free_is_rejected() {
    for body in [
        // Directly, by a write, a read and a stride.
        "alloc t: f32[4]; free t; t[0] = 1.0;",
        "alloc t: f32[4]; t[0] = 1.0; free t; y[0] = t[0];",
        "alloc t: f32[4]; free t; if stride(t, 0) == 1 { y[0] = 1.0; }",
        // Through a window, a window of a window, and a window taken after the free.
        "alloc t: f32[4]; let w = t[1:3]; free t; w[0] = 1.0;",
        "alloc t: f32[4]; let w = t[1:4]; let v = w[0:2]; free t; v[1] = 1.0;",
        "alloc t: f32[4]; free t; let w = t[0:2];",
        // A call given a window of the freed allocation.
        "alloc t: f32[4]; let w = t[0:2]; free t; g(w);",
        "alloc t: f32[4]; free t; g(t[2:4]);",
    ] {
        rejected(body, "use-after-free");
    }
}

#[test]
fn double_free_and_freeing_a_window_are_rejected() {
    let d = rejected("alloc t: f32[4]; free t; free t;", "free");
    assert!(d.message.contains("freed twice"), "{d:?}");
    assert!(d.labels[0].message.contains("first freed here"), "{d:?}");
    let d = rejected("alloc t: f32[4]; let w = t[0:2]; free w; free t;", "free");
    assert!(d.message.contains("not an allocation"), "{d:?}");
}

#[test]
fn uses_before_free_and_fresh_allocations_are_accepted() {
    check(
        "proc g(v: [f32][2]) { v[0] = 1.0; v[1] = 2.0; }
         proc f(y: f32[2]) {
             alloc t: f32[4];
             let w = t[0:2];
             g(w);
             y[0] = w[0];
             free t;
             for i in 0..2 { alloc u: f32[2]; g(u); y[i] = u[1]; free u; }
         }",
    )
    .unwrap();
}
