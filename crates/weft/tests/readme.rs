//! The README's JIT example is `examples/jit.rs` verbatim: that file is built as an example and
//! run as a doc test (`weft::readme_jit_example`), so the README cannot show code that rots.

#[test]
fn readme_shows_the_jit_example_verbatim() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/jit.rs")).unwrap();
    assert!(
        readme.contains(&format!("```rust\n{example}```\n")),
        "README.md must show crates/weft/examples/jit.rs verbatim in a ```rust block"
    );
}

/// `fn main() -> Result<(), weft::Error>` prints an error with `Debug`: that must be the rendered
/// diagnostic, as `weft check` prints it, not a dump of the structure.
#[test]
fn error_debug_is_the_rendered_diagnostic() {
    let e = weft::load_str("bad.weft", "proc f(n: size, x: f32[n]) { x[n] = 1.0; }")
        .err()
        .expect("an out-of-bounds write is rejected");
    let debug = format!("{e:?}");
    assert_eq!(debug, e.to_string());
    assert!(debug.contains("bad.weft"), "{debug}");
    assert!(!debug.contains("diagnostics:"), "{debug}");
}

/// `docs/schedules.md` is generated from the primitives' signatures (`weft primitives`), so the
/// reference cannot drift from what the parser and the scheduler accept.
#[test]
fn schedule_reference_is_generated_from_the_signatures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../../docs/schedules.md")).unwrap();
    assert!(
        doc == weft::ir::primitives::reference_markdown(),
        "docs/schedules.md is out of date: run `cargo run --bin weft -- primitives > docs/schedules.md`"
    );
}
