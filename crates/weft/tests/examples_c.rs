//! Every shipped example's generated C compiles warning-free with `-Wall -Wextra` and runs clean
//! under AddressSanitizer and UndefinedBehaviorSanitizer, called through its uniform entry point
//! from a generated C `main` at the sizes of the example's last `// run:` line, and of each
//! `// sanitize:` line (cases the last run line does not reach, written like a run line).

use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;
use std::process::Command;
use weft::interp::ArgValue;

fn run_line_sizes(text: &str) -> Option<(String, HashMap<String, i64>)> {
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("// run:"))?;
    line_sizes(line)
}

/// The proc and sizes of a run line's arguments (`--proc P --size N=4 ...`).
fn line_sizes(line: &str) -> Option<(String, HashMap<String, i64>)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut proc = None;
    let mut sizes = HashMap::new();
    let mut k = 0;
    while k + 1 < words.len() {
        match words[k] {
            "--proc" => proc = Some(words[k + 1].to_string()),
            "--size" => {
                let (n, v) = words[k + 1].split_once('=')?;
                sizes.insert(n.to_string(), v.parse().ok()?);
            }
            _ => {}
        }
        k += 2;
    }
    Some((proc?, sizes))
}

/// A C `main` that allocates every buffer argument on the heap (so ASan sees overruns), fills it,
/// and calls the entry point.
fn harness(symbol: &str, args: &[ArgValue]) -> String {
    let mut s = String::from("\n#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n");
    let mut list = Vec::new();
    for (k, a) in args.iter().enumerate() {
        match a {
            ArgValue::Int(v) => list.push(format!("{{0, {v}LL, 0}}")),
            ArgValue::Bool(b) => list.push(format!("{{1, {}, 0}}", *b as i32)),
            ArgValue::Buf(b) => {
                let t = weft::c::helpers::c_type(b.dtype);
                let n = b.shape.iter().product::<usize>().max(1);
                let rank = b.shape.len();
                let mut strides = vec![1i64; rank];
                for d in (0..rank.saturating_sub(1)).rev() {
                    strides[d] = strides[d + 1] * b.shape[d + 1] as i64;
                }
                let list_of = |v: &[i64]| {
                    if v.is_empty() {
                        "0".to_string()
                    } else {
                        v.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                };
                let shape: Vec<i64> = b.shape.iter().map(|&x| x as i64).collect();
                let _ = writeln!(s, "    {t} *b{k} = ({t} *) malloc({n} * sizeof({t}));");
                let _ = writeln!(
                    s,
                    "    for (long i = 0; i < {n}; i++) b{k}[i] = ({t}) (i % 7);"
                );
                let _ = writeln!(
                    s,
                    "    static const int64_t s{k}[] = {{{}}};",
                    list_of(&shape)
                );
                let _ = writeln!(
                    s,
                    "    static const int64_t st{k}[] = {{{}}};",
                    list_of(&strides)
                );
                let _ = writeln!(
                    s,
                    "    weft_buffer w{k} = {{ b{k}, {}, {rank}, s{k}, st{k} }};",
                    weft::c::dtype_code(b.dtype)
                );
                list.push(format!("{{2, 0, &w{k}}}"));
            }
        }
    }
    let _ = writeln!(s, "    weft_arg args[] = {{ {} }};", list.join(", "));
    let _ = writeln!(s, "    char err[512] = {{0}};");
    let _ = writeln!(
        s,
        "    int32_t rc = {symbol}(NULL, args, {}, err, sizeof err);",
        args.len()
    );
    let _ = writeln!(
        s,
        "    if (rc != 0) {{ printf(\"error %d: %s\\n\", (int) rc, err); return 1; }}"
    );
    for (k, a) in args.iter().enumerate() {
        if matches!(a, ArgValue::Buf(_)) {
            let _ = writeln!(s, "    free(b{k});");
        }
    }
    s.push_str("    return 0;\n}\n");
    s
}

#[test]
fn example_c_is_warning_free_and_sanitizer_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let work = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files {
        if path.extension().is_none_or(|e| e != "weft") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let program = weft::load(&path).unwrap_or_else(|e| panic!("{e}"));
        // A proc of a `// run:` line, or the lowered proc of each pipeline of `// realize:` lines.
        let mut cases = Vec::new();
        let sanitize_lines = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("// sanitize:"))
            .map(|l| line_sizes(l).unwrap_or_else(|| panic!("a malformed sanitize line: {l}")));
        for (proc_name, sizes) in run_line_sizes(&text).into_iter().chain(sanitize_lines) {
            let proc = program.module.proc(&proc_name).unwrap().clone();
            let args = weft::interp::random_args(&proc, &sizes, 1).unwrap();
            let stem = path.file_stem().unwrap().to_string_lossy();
            cases.push((format!("{stem}_{}", cases.len()), proc, args));
        }
        for (name, sizes) in realize_line_sizes(&program, &text) {
            let lp = weft::pipeline::lower(&program, &name).unwrap_or_else(|e| panic!("{e}"));
            let args = weft::interp::random_args(&lp.proc, &sizes, 1).unwrap();
            cases.push((name, lp.proc.clone(), args));
        }
        assert!(
            !cases.is_empty(),
            "{}: no // run: or // realize: line",
            path.display()
        );
        for (stem, proc, args) in cases {
            let unit = weft::c::emit(std::slice::from_ref(&proc)).unwrap();
            let entry = &unit.entries[0];
            let c_path = work.path().join(format!("{stem}.c"));
            std::fs::write(
                &c_path,
                format!("{}{}", unit.source, harness(&entry.symbol, &args)),
            )
            .unwrap();
            let exe = work.path().join(&stem);
            let out = Command::new("cc")
                .args([
                    "-std=c99",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-O1",
                    "-g",
                    "-march=native",
                ])
                .args([
                    "-ffp-contract=off",
                    "-fno-trapping-math",
                    "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all",
                ])
                .args(unit.parallel.then_some(weft::jit::OPENMP_FLAG))
                // The extensions the kernel's memories declare, as the JIT adds them.
                .args(weft::jit::isa::flags(&unit.isa).unwrap())
                .arg(&c_path)
                .arg("-o")
                .arg(&exe)
                .arg("-lm")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{stem}: the generated C does not compile cleanly:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            if let Some(why) = weft::jit::isa::missing(&unit.isa) {
                // Compiled clean; this CPU cannot run it.
                eprintln!("{stem}: not run: {why}");
                checked += 1;
                continue;
            }
            let run = Command::new(&exe)
                .env("ASAN_OPTIONS", "detect_leaks=1")
                .output()
                .unwrap();
            assert!(
                run.status.success(),
                "{stem}: sanitizers or the entry point reported a problem:\n{}{}",
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} examples checked");
}

/// For the first `// realize:` line of each pipeline: its name and the values of the lowered
/// proc's control arguments (the window, the parameters, the inputs' regions as the window needs
/// them; an input whose region depends on its own bounds covers the window).
fn realize_line_sizes(program: &weft::Program, text: &str) -> Vec<(String, HashMap<String, i64>)> {
    let mut out: Vec<(String, HashMap<String, i64>)> = Vec::new();
    for line in text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("// realize:"))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        let name = words[0].to_string();
        if out.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let lp = weft::pipeline::lower(program, &name).unwrap_or_else(|e| panic!("{e}"));
        let mut window = Vec::new();
        let mut params = Vec::new();
        for pair in words[1..].chunks(2) {
            match pair {
                ["--size", v] => window = v.split('x').map(|e| (0, e.parse().unwrap())).collect(),
                ["--param", kv] => {
                    let (k, v) = kv.split_once('=').unwrap();
                    // Float parameters are rank-0 buffers, given random values below.
                    if let Ok(v) = v.parse::<i64>() {
                        params.push((k.to_string(), v));
                    }
                }
                _ => {}
            }
        }
        let mut sizes: HashMap<String, i64> = params.iter().cloned().collect();
        let p = &lp.pipeline;
        for &o in &p.outputs {
            for (d, &(m, e)) in window.iter().enumerate() {
                sizes.insert(format!("{}_{d}_min", p.funcs[o].name), m);
                sizes.insert(format!("{}_{d}_extent", p.funcs[o].name), e);
            }
        }
        let regions = weft::pipeline::input_regions(&lp, &window, &params)
            .unwrap_or_else(|_| p.inputs.iter().map(|i| window[..i.rank].to_vec()).collect());
        for (i, r) in p.inputs.iter().zip(regions) {
            for (d, (m, e)) in r.into_iter().enumerate() {
                sizes.insert(format!("{}_{d}_min", i.name), m);
                sizes.insert(format!("{}_{d}_extent", i.name), e);
            }
        }
        // The proc's derived arguments (named region ends) from the others.
        let ints: Vec<Option<i64>> = lp
            .proc
            .args
            .iter()
            .map(|a| sizes.get(a.sym.name()).copied())
            .collect();
        let derived = weft::pipe::lower::derived_args(&lp.proc, &ints)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // What the pipeline cache keeps of the proc computes the same.
        let derivation = weft::pipe::lower::derivation(&lp.proc);
        assert_eq!(
            weft::pipe::lower::derived_args(&derivation, &ints).as_ref(),
            Ok(&derived),
            "{name}"
        );
        let first = lp.proc.args.len() - derived.len();
        for (a, v) in lp.proc.args[first..].iter().zip(derived) {
            sizes.insert(a.sym.name().to_string(), v);
        }
        out.push((name, sizes));
    }
    out
}
