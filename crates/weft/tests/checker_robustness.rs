//! The checker never panics: mutated versions of the shipped examples are parsed and, where they
//! parse, checked; every diagnostic is rendered.

use proptest::prelude::*;

fn examples() -> Vec<String> {
    let dir = format!("{}/../../examples", env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    v.sort();
    v
}

const SNIPPETS: &[&str] = &[
    "+ 1",
    "- 1",
    "* 2",
    "* i",
    "/ 0",
    "% 3",
    "[0]",
    "[i, j]",
    "0..",
    "..n",
    "f32(",
    "i8(",
    "0:4",
    "-",
    "select(true, 1, 2)",
    "min(",
    "stride(A, 0)",
    "assert n < 4;",
    "free A;",
    ";",
    "{",
    "}",
    "x",
    "17",
    "1.5",
    "true",
    "and",
    "not",
    "pass;",
    "for z in 0..3 { pass; }",
    "if i < 2 {",
    // Products past i64 in indices (the checker's linear forms and intervals saturate).
    "* 1125899906842624",
    "(n - 536870912) * 562949953421312 * ",
];

fn check_text(text: &str) {
    let mut sources = weft::syntax::SourceMap::new();
    if let Ok(m) = weft::syntax::parse_module(&mut sources, "m.weft", text) {
        if let Err(ds) = weft::check::check_module(&m) {
            for d in &ds {
                assert!(!sources.render(d).is_empty());
            }
        }
    }
}

/// Index arithmetic whose products leave i64 (and i128 when scaled again) is rejected or
/// accepted, never a panic (the definedness analysis' linear forms multiplied unchecked; the
/// interval comparison added past i128's end). Debug builds check the arithmetic.
#[test]
fn index_products_past_64_bits_do_not_panic() {
    for index in [
        "((i + 536870912 - 536870912) * 1125899906842624) * 562949953421312",
        "((n - 536870912) * 1125899906842624) * 562949953421312",
    ] {
        check_text(&format!(
            "proc p(n: size, A: f32[4] @ DRAM) {{\n    assert n == 536870912;\n    alloc B: f32[4] @ DRAM;\n    for i in 0..1 {{\n        B[{index}] = 0.0;\n    }}\n    A[0] = B[0];\n    free B;\n}}\n"
        ));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn mutated_examples_never_panic(which in 0usize..16, at in 0.0f64..1.0, len in 0usize..12, snippet in 0usize..SNIPPETS.len(), delete in any::<bool>()) {
        let ex = examples();
        let src = &ex[which % ex.len()];
        let mut pos = ((src.len() as f64) * at) as usize;
        while !src.is_char_boundary(pos) { pos -= 1; }
        let mut end = (pos + len).min(src.len());
        while !src.is_char_boundary(end) { end -= 1; }
        let mutated = if delete {
            format!("{}{}", &src[..pos], &src[end..])
        } else {
            format!("{}{}{}", &src[..pos], SNIPPETS[snippet], &src[pos..])
        };
        check_text(&mutated);
    }
}
