//! Fuzz the text front end: any input must give a module or diagnostics, never a panic, a hang
//! or a stack overflow; rendering the diagnostics must not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_syntax::{parse_module, SourceMap};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut sources = SourceMap::new();
    if let Err(diags) = parse_module(&mut sources, "fuzz.weft", &text) {
        for d in &diags {
            let _ = sources.render(d);
        }
    }
});
