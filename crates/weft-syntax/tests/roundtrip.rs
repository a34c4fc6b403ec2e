//! Printer round trip: `parse(print(m))` is alpha-equivalent to `m`, and printing is a fixpoint.

mod common;

use proptest::prelude::*;
use weft_ir::alpha::alpha_eq_proc;
use weft_ir::print::module_to_string;
use weft_ir::Module;
use weft_syntax::{parse_module, prelude, SourceMap};

fn parse_or_render(name: &str, text: &str) -> Result<Module, String> {
    let mut sm = SourceMap::new();
    parse_module(&mut sm, name, text).map_err(|ds| {
        let shown: Vec<String> = ds.iter().map(|d| sm.render(d)).collect();
        format!("{}\n--- in ---\n{text}", shown.join("\n"))
    })
}

/// Why `b` is not a faithful re-reading of `a`, if it is not.
fn module_mismatch(a: &Module, b: &Module) -> Option<String> {
    if a.imports != b.imports {
        return Some(format!("imports {:?} vs {:?}", a.imports, b.imports));
    }
    if a.procs.len() != b.procs.len() {
        return Some("proc count differs".into());
    }
    for (x, y) in a.procs.iter().zip(&b.procs) {
        if !alpha_eq_proc(x, y) {
            return Some(format!("proc `{}` differs:\n{x}\n--- vs ---\n{y}", x.name));
        }
    }
    if a.memories.len() != b.memories.len() {
        return Some("memory count differs".into());
    }
    for (x, y) in a.memories.iter().zip(&b.memories) {
        let same = x.name == y.name
            && x.header == y.header
            && x.alloc == y.alloc
            && x.free == y.free
            && x.access == y.access
            && x.addressable == y.addressable
            && x.last_dim == y.last_dim
            && x.max_bytes == y.max_bytes
            && x.isa == y.isa
            && x.dtypes == y.dtypes;
        if !same {
            return Some(format!("memory `{}` differs: {x:?} vs {y:?}", x.name));
        }
    }
    let cfgs = |m: &Module| -> Vec<_> {
        m.configs
            .iter()
            .map(|c| (c.name.clone(), c.fields.clone()))
            .collect()
    };
    if cfgs(a) != cfgs(b) {
        return Some("configs differ".into());
    }
    None
}

fn check_round_trip(name: &str, text: &str) {
    let m1 = parse_or_render(name, text).unwrap_or_else(|e| panic!("{e}"));
    let t1 = module_to_string(&m1);
    let m2 = parse_or_render("printed.weft", &t1).unwrap_or_else(|e| panic!("{e}"));
    if let Some(why) = module_mismatch(&m1, &m2) {
        panic!("{name}: {why}");
    }
    let t2 = module_to_string(&m2);
    assert_eq!(t1, t2, "{name}: printing is not a fixpoint");
}

#[test]
fn hand_written_programs_round_trip() {
    let dir = format!("{}/tests/programs", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        check_round_trip(&path.display().to_string(), &text);
        n += 1;
    }
    assert!(n >= 4);
}

#[test]
fn tricky_expressions_round_trip() {
    check_round_trip(
        "tricky.weft",
        "proc f(n: size, b: bool, x: f64[n], c: bool @ DRAM) {
            assert not not b;
            assert not (b or b) and not n < 3;
            assert (n < 3) == b;
            assert n - (n - 1) - -1 - -(1) >= -(n % 3);
            for i in 0..n {
                x[i] = -(-(-0.0)) + -x[i] * -(x[i] + 1.0) / (x[i] * 2.0);
                x[i] = 5e-324 + 1e16 + 2.5e300 - 0.1;
                c = not (c and c) or c == (x[i] < 0.0);
                x[i] = -9223372036854775808 + 9223372036854775807;
            }
        }",
    );
}

#[test]
fn prelude_round_trips() {
    let text = module_to_string(prelude());
    let m = parse_or_render("std-printed.weft", &text).unwrap();
    assert!(module_mismatch(prelude(), &m).is_none());
}

#[test]
fn generator_is_deterministic_and_nontrivial() {
    let a = module_to_string(&common::Gen::new(7).module());
    let b = module_to_string(&common::Gen::new(7).module());
    assert_eq!(a, b);
    let total: usize = (0..20)
        .map(|s| module_to_string(&common::Gen::new(s).module()).len())
        .sum();
    assert!(total > 5000, "generated programs are too small");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Random procs built with the Rust builder print, parse back alpha-equivalent, and print
    /// the same again.
    #[test]
    fn random_modules_round_trip(seed in any::<u64>()) {
        let m = common::Gen::new(seed).module();
        let text = module_to_string(&m);
        let parsed = parse_or_render("gen.weft", &text);
        prop_assert!(parsed.is_ok(), "{}", parsed.err().unwrap_or_default());
        let parsed = parsed.unwrap();
        let why = module_mismatch(&m, &parsed);
        prop_assert!(why.is_none(), "{}\n--- text ---\n{text}", why.unwrap_or_default());
        prop_assert_eq!(module_to_string(&parsed), text);
    }

    /// Comments put at random on lines of their own and at line ends of a printed module all
    /// come back, in order, from the comment-keeping printer (`weft fmt`), and what it prints
    /// parses to the same module and prints the same again.
    #[test]
    fn random_comments_survive_formatting(seed in any::<u64>(), marks in proptest::collection::vec(any::<u16>(), 1..12)) {
        let m = common::Gen::new(seed).module();
        let lines: Vec<String> = module_to_string(&m).lines().map(str::to_string).collect();
        let mut text = String::new();
        let mut expected = Vec::new();
        for (k, line) in lines.iter().enumerate() {
            let hit = marks.iter().position(|&x| x as usize % lines.len().max(1) == k);
            match hit {
                Some(j) if j % 2 == 0 => {
                    let c = format!("// own {k}");
                    text.push_str(&format!("{c}\n{line}\n"));
                    expected.push(c);
                }
                Some(_) => {
                    let c = format!("// end {k}");
                    text.push_str(&format!("{line} {c}\n"));
                    expected.push(c);
                }
                None => text.push_str(&format!("{line}\n")),
            }
        }
        let parsed = parse_or_render("c.weft", &text);
        prop_assert!(parsed.is_ok(), "{}", parsed.err().unwrap_or_default());
        let parsed = parsed.unwrap();
        let mut cs = weft_syntax::layout(&text);
        let out = weft_ir::print::module_with_comments(&parsed, &mut cs);
        let got: Vec<String> = weft_syntax::comments(&out).into_iter().map(|c| c.text).collect();
        prop_assert_eq!(&got, &expected, "{}\n--- from ---\n{}", out, text);
        let again = parse_or_render("d.weft", &out);
        prop_assert!(again.is_ok(), "{}", again.err().unwrap_or_default());
        let again = again.unwrap();
        let why = module_mismatch(&parsed, &again);
        prop_assert!(why.is_none(), "{}\n--- text ---\n{out}", why.unwrap_or_default());
        let mut cs = weft_syntax::layout(&out);
        prop_assert_eq!(weft_ir::print::module_with_comments(&again, &mut cs), out);
    }
}

/// The repository's example programs and hardware libraries parse and round-trip.
#[test]
fn repository_examples_round_trip() {
    let root = env!("CARGO_MANIFEST_DIR");
    let entries = std::fs::read_dir(format!("{root}/../../examples"))
        .unwrap()
        .chain(std::fs::read_dir(format!("{root}/../../lib")).unwrap());
    let mut seen = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("weft") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut sm = SourceMap::new();
        if let Err(ds) = parse_module(&mut sm, &path.display().to_string(), &text) {
            let shown: Vec<String> = ds.iter().map(|d| sm.render(d)).collect();
            panic!("{}", shown.join("\n"));
        }
        check_round_trip(&path.display().to_string(), &text);
        seen += 1;
    }
    assert!(
        seen >= 7,
        "expected the examples and libraries, found {seen} files"
    );
}
