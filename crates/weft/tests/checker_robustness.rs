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
