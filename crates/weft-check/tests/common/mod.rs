//! Helpers shared by the checker tests that write their programs as text.
#![allow(dead_code)]

use weft_ir::Diagnostic;

/// Parse `text` and check it: `Ok` when accepted, the diagnostics otherwise.
pub fn check(text: &str) -> Result<(), Vec<Diagnostic>> {
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", text)
        .unwrap_or_else(|d| panic!("does not parse: {d:?}"));
    weft_check::check_module(&m).map(|_| ())
}

/// The notes of a diagnostic, joined.
pub fn note(d: &Diagnostic) -> String {
    d.notes.join(" ")
}
