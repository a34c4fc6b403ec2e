//! `parse_module` never panics (and terminates) on arbitrary text or on mutated valid programs.

mod common;

use proptest::prelude::*;
use weft_ir::print::module_to_string;
use weft_syntax::{parse_module, SourceMap};

/// Parse, and render every diagnostic (rendering must not panic either).
fn parse_and_render(text: &str) {
    let mut sm = SourceMap::new();
    if let Err(ds) = parse_module(&mut sm, "fuzz.weft", text) {
        assert!(
            !ds.is_empty(),
            "an error result carries at least one diagnostic"
        );
        for d in &ds {
            let r = sm.render(d);
            assert!(r.contains(&d.message), "{r}");
        }
    }
}

fn seeds() -> Vec<String> {
    let dir = format!("{}/tests/programs", env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    out
}

/// Pieces of weft syntax to insert, so mutations reach deep into the parser.
const SNIPPETS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "..",
    ".",
    "-",
    "--3",
    "not ",
    " and ",
    "+=",
    "=",
    "@",
    "\"",
    "\\",
    "for i in 0..n {",
    "if ",
    "else ",
    "alloc t: f32[4];",
    "free t;",
    "let w = x[0:2];",
    "assert true;",
    "proc p() {",
    "import \"std\";",
    "import \"x.weft\";",
    "9223372036854775808",
    "1e",
    "1.5e-3",
    "é",
    "\u{0}",
    "//",
    "\n",
    "Cfg.",
    "select(",
    "min(",
    "f32(",
    "stride(",
    "pow(1,",
    "memory M {",
    "config C {",
    "instr q() \"t\" {",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, usize),
    Duplicate(usize, usize, usize),
    InsertBytes(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), 0..SNIPPETS.len()).prop_map(|(a, k)| Mutation::Insert(a, k)),
        (any::<usize>(), 0usize..60, any::<usize>())
            .prop_map(|(a, n, b)| Mutation::Duplicate(a, n, b)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(a, v)| Mutation::InsertBytes(a, v)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    let at = |a: usize| if len == 0 { 0 } else { a % (len + 1) };
    match m {
        Mutation::Delete(a, n) => {
            let lo = at(*a);
            let hi = (lo + n).min(len);
            bytes.drain(lo..hi);
        }
        Mutation::Insert(a, k) => {
            let lo = at(*a);
            bytes.splice(lo..lo, SNIPPETS[*k].bytes());
        }
        Mutation::Duplicate(a, n, b) => {
            let lo = at(*a);
            let hi = (lo + n).min(len);
            let piece: Vec<u8> = bytes[lo..hi].to_vec();
            let dst = at(*b);
            bytes.splice(dst..dst, piece);
        }
        Mutation::InsertBytes(a, v) => {
            let lo = at(*a);
            bytes.splice(lo..lo, v.iter().copied());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,300}") {
        parse_and_render(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        parse_and_render(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_programs_never_panic(
        which in any::<usize>(),
        gen_seed in any::<u64>(),
        muts in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut all = seeds();
        all.push(module_to_string(&common::Gen::new(gen_seed).module()));
        let mut bytes = all[which % all.len()].clone().into_bytes();
        for m in &muts {
            apply(&mut bytes, m);
        }
        parse_and_render(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn every_truncation_of_a_program_is_handled() {
    for text in seeds() {
        for cut in 0..text.len() {
            if text.is_char_boundary(cut) {
                parse_and_render(&text[..cut]);
            }
        }
    }
}
