//! Fuzz the checker: whatever parses must be checked without a panic or a hang (the solver has a
//! timeout), whether the checker accepts it or not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut sources = weft_syntax::SourceMap::new();
    if let Ok(module) = weft_syntax::parse_module(&mut sources, "fuzz.weft", &text) {
        if let Err(diags) = weft_check::check_module(&module) {
            for d in &diags {
                let _ = sources.render(d);
            }
        }
    }
});
