//! The `weft` command-line tool as a user runs it: exit codes, diagnostics with place, rule and
//! counterexample, and run-time misuse reported as errors.

mod common;

use common::{text, weft};

fn write(dir: &tempfile::TempDir, name: &str, src: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, src).unwrap();
    p.display().to_string()
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `weft check` rejects the program with exit code 1, showing the rule, the source line with a
/// caret, and every expected fragment.
fn rejects(src: &str, rule: &str, fragments: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "bad.weft", src);
    let o = weft(&["check", &f]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!("[{rule}]")),
        "expected rule {rule}:\n{out}"
    );
    assert!(out.contains("bad.weft:"), "no file:line:\n{out}");
    // ariadne underlines a span with carets; a one-character span gets a pointer instead.
    assert!(out.contains('^') || out.contains("`--"), "no caret:\n{out}");
    for frag in fragments {
        assert!(out.contains(frag), "expected `{frag}` in:\n{out}");
    }
}

#[test]
fn check_accepts_every_example() {
    for f in [
        "sgemm.weft",
        "blur.weft",
        "conv2d.weft",
        "reduce.weft",
        "vec_fma.weft",
    ] {
        let o = weft(&["check", &example(f)]);
        assert!(o.status.success(), "{f}: {}", text(&o));
        assert!(text(&o).contains("ok"));
    }
}

#[test]
fn check_rejects_out_of_bounds_with_counterexample() {
    rejects(
        "proc shift(n: size, x: f32[n], y: f32[n]) {\n    for i in 0..n {\n        y[i] = x[i + 1];\n    }\n}\n",
        "bounds",
        &["`x`", "i + 1", "counterexample", "n = ", "i = ", "y[i] = x[i + 1];"],
    );
}

#[test]
fn check_rejects_ill_typed_expression() {
    rejects(
        "proc mix(n: size, x: f32[n], y: i8[n]) {\n    for i in 0..n {\n        x[i] = x[i] + y[i];\n    }\n}\n",
        "type",
        &["f32", "i8", "cast"],
    );
}

#[test]
fn check_rejects_data_dependent_loop_bound() {
    rejects(
        "proc dd(n: size, len: i32, x: f32[n]) {\n    for i in 0..len {\n        x[0] = 1.0;\n    }\n}\n",
        "data-dependent-control",
        &["loop bound", "depends on data"],
    );
}

#[test]
fn check_rejects_non_affine_index() {
    rejects(
        "proc na(n: size, x: f32[n, n]) {\n    for i in 0..n {\n        for j in 0..n {\n            x[i * j, 0] = 0.0;\n        }\n    }\n}\n",
        "quasi-affine",
        &["i * j"],
    );
}

#[test]
fn check_rejects_call_violating_precondition() {
    rejects(
        "proc small(m: size, x: [f32][m]) {\n    assert m <= 16;\n    for i in 0..m {\n        x[i] = 0.0;\n    }\n}\n\nproc big(x: f32[17]) {\n    small(17, x);\n}\n",
        "precondition",
        &["m <= 16", "small"],
    );
}

#[test]
fn check_rejects_unknown_name() {
    rejects(
        "proc u(n: size, x: f32[n]) {\n    for i in 0..n {\n        x[i] = z[i];\n    }\n}\n",
        "unknown-name",
        &["`z`"],
    );
}

#[test]
fn check_rejects_duplicate_definition() {
    rejects(
        "proc p(n: size) {\n}\n\nproc p(n: size) {\n}\n",
        "duplicate-definition",
        &["`p`"],
    );
}

#[test]
fn fmt_prints_canonical_text_that_checks() {
    let o = weft(&["fmt", &example("conv2d.weft")]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "canon.weft", &String::from_utf8_lossy(&o.stdout));
    let again = weft(&["fmt", &f]);
    assert_eq!(o.stdout, again.stdout, "fmt is not a fixpoint");
    assert!(weft(&["check", &f]).status.success());
}

/// A file with comments everywhere a user puts them, a scalar `let`, and a proc that calls a
/// schedule declared before it (so the item order matters).
const COMMENTED: &str = "// run: --proc h --size n=7
// A header comment.
config C { k: index } // trailing after an item
memory M {
    header \"\"
    alloc \"{type} {name}[{size}];\"
    free \"\"
    access \"{name}[{offset}]\"
    addressable true
    // inside a memory
}
proc f(n: size, x: f32[n]) { // after the header
    assert n >= 1;
    // before a loop
    for i in 0..n {
        let t: f32 = x[i] * 2.0; // a scalar temporary
        if i > 0 { x[i] = t; } else {
            // in an else
            x[i] = t + 1.0;
        }
        if i == 0 {
            // only in an empty then
        } else {
            x[i] = x[i];
        }
        // last in the loop
    }
    // last in the proc
}
schedule g = f {
    // why we split
    split(i, 4, io, ii, cut); // trailing a step
    cut(\"for ii #1\", n % 4 // a comment inside an argument
        - 0);
}
proc h(n: size, x: f32[n]) {
    g(n, x);
}
// the end
";

#[test]
fn fmt_keeps_comments_order_and_scalar_lets_and_is_a_fixpoint() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "c.weft", COMMENTED);
    let o = weft(&["fmt", &f]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    for line in COMMENTED.lines() {
        if let Some(k) = line.find("//") {
            assert!(out.contains(&line[k..]), "lost `{}`:\n{out}", &line[k..]);
        }
    }
    for expected in [
        "config C {\n    k: index,\n} // trailing after an item\n",
        "proc f(n: size, x: f32[n] @ DRAM) { // after the header\n    assert n >= 1;\n    // before a loop\n    for i in 0..n {\n",
        "        let t: f32 @ DRAM = x[i] * 2.0; // a scalar temporary\n",
        "        } else {\n            // in an else\n            x[i] = t + 1.0;\n        }\n",
        "            x[i] = x[i];\n        }\n        // last in the loop\n    }\n    // last in the proc\n}\n",
        "    // why we split\n    split(i, 4, io, ii, cut); // trailing a step\n    cut(\"for ii #1\", n % 4 - 0); // a comment inside an argument\n}\n",
        "        if i == 0 {\n            // only in an empty then\n        } else {\n",
        "    // inside a memory\n}\n",
        "// the end\n",
    ] {
        assert!(out.contains(expected), "missing:\n{expected}\nin:\n{out}");
    }
    // The schedule stays before the proc that calls it, so the output checks.
    assert!(
        out.find("\nschedule g").unwrap() < out.find("\nproc h(").unwrap(),
        "{out}"
    );
    let g = write(&dir, "canon.weft", &out);
    assert!(weft(&["check", &g]).status.success(), "{out}");
    assert_eq!(weft(&["fmt", &g]).stdout, o.stdout, "fmt is not a fixpoint");
    // `// run:` lines still drive the examples runner.
    let o = weft(&["examples", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
}

/// The shipped examples and libraries are in canonical form: `weft fmt` keeps their comments,
/// blank lines, item order, names and wrapped signatures as written.
#[test]
fn shipped_files_are_fmt_fixpoints() {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for dir in ["examples", "lib"] {
        for e in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "weft") {
                let o = weft(&["fmt", "--check", path.to_str().unwrap()]);
                assert!(o.status.success(), "{}: {}", path.display(), text(&o));
                seen += 1;
            }
        }
    }
    assert!(seen >= 7, "{seen}");
}

#[test]
fn fmt_write_rewrites_in_place_and_check_reports_non_canonical_files() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "c.weft", COMMENTED);
    let o = weft(&["fmt", "--check", &f]);
    assert!(
        !o.status.success() && text(&o).contains("not in canonical form"),
        "{}",
        text(&o)
    );
    let expected = weft(&["fmt", &f]).stdout;
    let o = weft(&["fmt", "-w", &f]);
    assert!(
        o.status.success() && text(&o).contains("formatted"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read(&f).unwrap(), expected);
    assert!(weft(&["fmt", "--check", &f]).status.success());
    // Nothing is left beside the file.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // Written through the path: a link keeps pointing at its target, which gets the text, and a
    // read-only file is an error, never made writable.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let target = write(&dir, "target.weft", COMMENTED);
        let link = dir.path().join("link.weft");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(weft(&["fmt", "-w", link.to_str().unwrap()])
            .status
            .success());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), expected);
        let ro = write(&dir, "ro.weft", COMMENTED);
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        let o = weft(&["fmt", "-w", &ro]);
        let mode = std::fs::metadata(&ro).unwrap().permissions().mode() & 0o777;
        // (Root may write a read-only file; either way its mode stays.)
        assert_eq!(mode, 0o444, "{}", text(&o));
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            assert!(!name.starts_with('.'), "a temporary is left: {name}");
        }
    }
    // A file that does not parse is left as it is.
    let bad = write(&dir, "bad.weft", "proc f( {");
    assert!(!weft(&["fmt", "-w", &bad]).status.success());
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "proc f( {");
}

#[test]
fn c_writes_source_header_and_depfile() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = weft(&[
        "c",
        &example("vec_fma.weft"),
        "-o",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let c = std::fs::read_to_string(out.join("vec_fma.c")).unwrap();
    let h = std::fs::read_to_string(out.join("vec_fma.h")).unwrap();
    let d = std::fs::read_to_string(out.join("vec_fma.d")).unwrap();
    assert!(
        c.contains("_mm512_fmadd_ps"),
        "instruction template not emitted"
    );
    // Exported symbols carry the namespace (the stem, lowercase letters and digits).
    assert!(h.contains("int32_t vecfma_vec_fma_entry("), "{h}");
    assert!(h.contains("struct vecfma_context"), "{h}");
    assert!(d.contains("vec_fma.weft") && d.contains(':'), "{d}");
    // --proc selects one proc; a missing one is an error.
    let o = weft(&["c", &example("reduce.weft"), "--proc", "dot"]);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stdout).contains("sum_i32"));
    let o = weft(&["c", &example("reduce.weft"), "--proc", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("nope"));
    // --namespace chooses the prefix; one that could clash is refused.
    let o = weft(&["c", &example("reduce.weft"), "--namespace", "red2"]);
    assert!(text(&o).contains("int32_t red2_dot("), "{}", text(&o));
    let o = weft(&["c", &example("reduce.weft"), "--namespace", "weft"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("reserved"), "{}", text(&o));
}

/// `weft run` takes each control argument once, by its name, within the entry points' range, and
/// refuses sizes whose buffers do not fit in memory instead of aborting.
#[test]
fn run_checks_its_size_options() {
    let reduce = example("reduce.weft");
    let run = |sizes: &[&str]| {
        let mut args = vec!["run", &reduce, "--proc", "dot"];
        for s in sizes {
            args.extend(["--size", s]);
        }
        let o = weft(&args);
        (o.status.code(), text(&o))
    };
    let (code, t) = run(&["m=3"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(
        t.contains("no control argument `m`") && t.contains(": n"),
        "{t}"
    );
    let (code, t) = run(&["n=3", "n=4"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("given twice"), "{t}");
    let (code, t) = run(&["n=2147483648"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("1..=2147483647"), "{t}");
    // Fits the control range, not memory: an error, not an abort with a backtrace.
    let (code, t) = run(&["n=2147483647"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("GiB") && !t.contains("backtrace"), "{t}");
    // A local allocation of 2^32 cells (the interpreter's limit) of 16 bytes each: refused by
    // the allocator where it does not overcommit without bound (mode 1 would hand it out).
    let overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    if overcommit.trim() != "1" {
        let dir = tempfile::tempdir().unwrap();
        let f = write(
            &dir,
            "alloc.weft",
            "proc f(n: size, y: u8[2]) {\n    alloc t: u8[n, n];\n    t[0, 0] = 1;\n    y[0] = t[0, 0];\n    free t;\n}\n",
        );
        let o = weft(&["run", &f, "--proc", "f", "--size", "n=65536"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("does not fit in memory"), "{}", text(&o));
    }
}

#[test]
fn run_compares_native_and_interpreter() {
    let o = weft(&[
        "run",
        &example("sgemm.weft"),
        "--proc",
        "sgemm",
        "--size",
        "M=7",
        "--size",
        "N=5",
        "--size",
        "K=3",
        "--reps",
        "1",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("identical"), "{}", text(&o));
}

#[test]
fn run_reports_misuse() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "small.weft",
        "proc small(m: size, x: f32[m]) {\n    assert m <= 16;\n    for i in 0..m {\n        x[i] = 1.0;\n    }\n}\n",
    );
    // A size violating the precondition.
    let o = weft(&["run", &f, "--proc", "small", "--size", "m=17"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("m <= 16") || text(&o).contains("precondition"),
        "{}",
        text(&o)
    );
    // A non-positive size.
    let o = weft(&["run", &f, "--proc", "small", "--size", "m=0"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // A missing size.
    let o = weft(&["run", &f, "--proc", "small"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains('m'), "{}", text(&o));
    // A malformed size and an unknown proc.
    assert_eq!(
        weft(&["run", &f, "--proc", "small", "--size", "m"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        weft(&["run", &f, "--proc", "big", "--size", "m=1"])
            .status
            .code(),
        Some(1)
    );
    // A file that does not exist.
    assert_eq!(
        weft(&["check", "/nonexistent/x.weft"]).status.code(),
        Some(1)
    );
}

#[test]
fn every_subcommand_has_help() {
    for sub in ["check", "fmt", "c", "run", "sched", "examples"] {
        let o = weft(&[sub, "--help"]);
        assert!(o.status.success(), "{sub}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Usage"),
            "{sub}"
        );
    }
}

const SCHEDULED: &str = "proc sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM) {
    for i in 0..M {
        for j in 0..N {
            for k in 0..K {
                C[i, j] += A[i, k] * B[k, j];
            }
        }
    }
}

schedule tiled = sgemm {
    split(i, 4, io, ii, cut);
    reorder_loops(ii);
    split(j, 8, jo, ji, cut_and_guard);
    cut(k, K - 1);
}

schedule tiled_more = tiled {
    unroll(ii);
}
";

#[test]
fn sched_prints_the_scheduled_proc_and_traces_steps() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "s.weft", SCHEDULED);
    let o = weft(&["sched", &f, "tiled"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.starts_with("proc tiled("), "{out}");
    assert!(out.contains("for jo in 0..N / 8 {"), "{out}");
    assert!(out.contains("if N % 8 > 0 {"), "{out}");
    assert!(out.contains("for k in K - 1..K {"), "{out}");

    let o = weft(&["sched", &f, "tiled", "--trace"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    for step in [
        "// step 1: split(i, 4, io, ii, cut)",
        "// step 2: reorder_loops(ii)",
        "// step 4: cut(k, K - 1)",
    ] {
        assert!(out.contains(step), "no `{step}` in:\n{out}");
    }
    let o = weft(&["sched", &f, "tiled_more", "--trace"]);
    let out = text(&o);
    assert!(out.contains("// step 1: unroll(ii)"), "{out}");
    assert!(
        out.contains("C[4 * io + 3, 8 * jo + ji] +="),
        "ii should be unrolled:\n{out}"
    );

    // The scheduled procs check, run against the interpreter, emit C and print back.
    let o = weft(&["check", &f]);
    assert!(text(&o).contains("2 schedules"), "{}", text(&o));
    let o = weft(&[
        "run",
        &f,
        "--proc",
        "tiled_more",
        "--size",
        "M=9",
        "--size",
        "N=11",
        "--size",
        "K=3",
    ]);
    assert!(
        o.status.success() && text(&o).contains("identical"),
        "{}",
        text(&o)
    );
    let o = weft(&["c", &f, "--proc", "tiled"]);
    assert!(
        o.status.success() && text(&o).contains("int32_t tiled_tiled("),
        "{}",
        text(&o)
    );
    let o = weft(&["fmt", &f]);
    assert!(
        text(&o).contains("schedule tiled_more = tiled {\n    unroll(ii);\n}"),
        "{}",
        text(&o)
    );
}

#[test]
fn sched_rejects_a_step_with_place_rule_and_counterexample() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "{}\nschedule bad = sgemm {{\n    reorder_loops(j);\n    split(i, 4, io, ii, perfect);\n}}\n",
        SCHEDULED.split("schedule").next().unwrap()
    );
    let f = write(&dir, "bad.weft", &src);
    let o = weft(&["sched", &f, "bad"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("bad.weft:14:5: [schedule]"), "{out}");
    assert!(
        out.contains("split: a perfect split needs the trip count M to be divisible by 4"),
        "{out}"
    );
    assert!(out.contains("split(i, 4, io, ii, perfect);"), "{out}");
    assert!(out.contains("for i in 0..M"), "{out}");
    assert!(out.contains("counterexample: M = "), "{out}");
    // `weft check` rejects the file too, and an unknown primitive or schedule is an error.
    assert_eq!(weft(&["check", &f]).status.code(), Some(1));
    let f2 = write(
        &dir,
        "unknown.weft",
        &src.replace("reorder_loops(j)", "twist(j)"),
    );
    let out = text(&weft(&["sched", &f2, "bad"]));
    assert!(
        out.contains("unknown scheduling primitive `twist`"),
        "{out}"
    );
    let out = text(&weft(&["sched", &f, "nope"]));
    assert!(out.contains("no schedule named `nope`"), "{out}");
}

#[test]
fn check_rejects_a_racy_parallel_loop_with_the_two_iterations() {
    rejects(
        "proc total(n: size, x: f32[n] @ DRAM, s: f32[1] @ DRAM) {\n    for i in par(0..n) {\n        s[0] += x[i];\n    }\n}\n",
        "race",
        &["may race", "i' = "],
    );
}

#[test]
fn run_executes_a_parallel_loop_on_threads_and_matches_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "par.weft",
        "proc rows(m: size, n: size, a: f32[m, n] @ DRAM, y: f32[m] @ DRAM) {\n    for i in par(0..m) {\n        y[i] = 0.0;\n        for j in 0..n {\n            y[i] += a[i, j];\n        }\n    }\n}\n",
    );
    let c = weft(&["c", &f]);
    assert!(
        text(&c).contains("#pragma omp parallel for"),
        "{}",
        text(&c)
    );
    for m in ["1", "37"] {
        let o = weft(&[
            "run",
            &f,
            "--proc",
            "rows",
            "--size",
            &format!("m={m}"),
            "--size",
            "n=5",
            "--reps",
            "1",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("identical"), "{}", text(&o));
    }
}

#[test]
fn procs_of_the_file_call_a_schedule_and_get_the_scheduled_proc() {
    let dir = tempfile::tempdir().unwrap();
    let src = "proc scale(n: size, x: f32[n] @ DRAM) {\n    for i in 0..n {\n        x[i] = x[i] * 2.0;\n    }\n}\nschedule scale_fast = scale {\n    split(i, 4, io, ii, cut);\n}\nproc twice(n: size, x: f32[n] @ DRAM) {\n    scale_fast(n, x);\n    scale_fast(n, x);\n}\n";
    let f = write(&dir, "call.weft", src);
    let c = weft(&["c", &f, "--proc", "twice"]);
    let out = text(&c);
    assert!(c.status.success(), "{out}");
    // The callee is the scheduled proc (a loop of 4 from the split), not the base.
    assert!(out.contains("static void weft_p_scale_fast("), "{out}");
    assert!(out.contains("< 4; "), "{out}");
    for n in ["1", "7", "8"] {
        let o = weft(&[
            "run",
            &f,
            "--proc",
            "twice",
            "--size",
            &format!("n={n}"),
            "--reps",
            "1",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("identical"), "{}", text(&o));
    }
    // A schedule that changes its base's signature cannot stand in for it.
    let bad = src.replace("split(i, 4, io, ii, cut);", "partial_eval(n=8);");
    let f = write(&dir, "bad.weft", &bad);
    let o = weft(&["check", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("changes the signature"), "{}", text(&o));
}

/// A reader that stops early (`weft sched f.weft p | head -1`) ends `weft` quietly, as it ends
/// `cat`: printing to the closed pipe had panicked (exit 101, "failed printing to stdout").
#[test]
fn a_closed_output_pipe_ends_the_tool_without_a_panic() {
    use std::io::{BufRead, BufReader};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["sched", "--trace"])
        .arg(root.join("examples/sgemm.weft"))
        .arg("sgemm_avx512")
        .env("WEFT_CACHE_DIR", common::cache_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run weft");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a first line");
    // The reader is dropped here: the pipe closes with most of the trace unwritten.
    let out = child.wait_with_output().expect("weft ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!first.is_empty());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
}
