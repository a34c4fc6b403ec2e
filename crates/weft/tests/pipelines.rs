//! Pipelines through the facade and the CLI as a user runs them: `weft lower`, `weft bounds`,
//! `weft realize` (with PNG in and out, and the comparison with the pipeline interpreter), the
//! shipped example with its multi-level schedule, and diagnostics for bad schedules.

mod common;

use common::{cache_dir, text, weft};
use std::path::Path;

fn example() -> String {
    format!(
        "{}/../../examples/pipelines.weft",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The example's multi-level schedule: directives, then a proc-level step on the lowered proc.
#[test]
fn a_pipeline_schedule_continues_with_proc_level_steps() {
    let program = weft::load(Path::new(&example())).unwrap();
    let lp = weft::pipeline::lower(&program, "box_blur_tiles").unwrap();
    let before = lp.lowered.proc.to_string();
    let after = lp.proc.to_string();
    assert!(
        before.contains("alloc blur_x: u16[") && before.contains("@ DRAM;"),
        "{before}"
    );
    assert!(after.contains("@ DRAM_STACK;"), "{after}");
    // Both compute what the pipeline interpreter computes.
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    for window in [vec![(0, 300), (0, 70)], vec![(-5, 33), (7, 3)]] {
        let r = weft::pipeline::realize(&lp, &jit, &window, &[], vec![], 1).unwrap();
        let n = weft::pipeline::check_against_reference(&lp, &[], &r).unwrap();
        assert_eq!(n, (window[0].1 * window[1].1) as usize);
    }
}

#[test]
fn lower_prints_the_proc_before_and_after_the_schedule() {
    let o = weft(&["lower", &example(), "box_blur_fast"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("// box_blur_fast: every func at its default level"),
        "{t}"
    );
    assert!(t.contains("// box_blur_fast: after its schedule"), "{t}");
    assert!(t.contains("for blur_y_y in par("), "{t}");
}

#[test]
fn bounds_reports_regions_and_input_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("b.weft");
    std::fs::write(
        &f,
        "pipeline b(input: u16[2]) -> out {
            out(x, y): u16 = input(x - 1, y) + input(x + 1, y + 2);
        }",
    )
    .unwrap();
    let o = weft(&["bounds", f.to_str().unwrap(), "b", "--size", "640x480"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("input input for 640x480: [-1, 640] x [0, 481]"),
        "{t}"
    );
}

#[test]
fn realize_reads_and_writes_png_and_checks_against_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("in.png");
    let img = image::GrayImage::from_fn(64, 48, |x, y| image::Luma([(x * 3 + y * 5) as u8]));
    img.save(&png).unwrap();
    let f = dir.path().join("p.weft");
    std::fs::write(
        &f,
        "pipeline brighten(input: u8[2], gain: f32) -> out {
            e = repeat_edge(input);
            out(x, y): u8 = u8_sat(f32(e(x - 1, y) + e(x + 1, y)) * gain);
        }
        schedule brighten_fast = brighten {
            out.vectorize(x, 16).parallel(y);
        }",
    )
    .unwrap();
    let out = dir.path().join("out.png");
    let o = weft(&[
        "realize",
        f.to_str().unwrap(),
        "brighten_fast",
        "--in",
        png.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--param",
        "gain=0.75",
        "--check",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("3072 points equal to the pipeline interpreter"),
        "{t}"
    );
    let back = image::open(&out).unwrap().to_luma8();
    assert_eq!((back.width(), back.height()), (64, 48));
    // out(10, 3) = sat((in(9, 3) + in(11, 3)) * 0.75), in u8 arithmetic before the conversion.
    let px = |x: u32, y: u32| (x * 3 + y * 5) as u8;
    let want = ((px(9, 3).wrapping_add(px(11, 3))) as f32 * 0.75).min(255.0) as u8;
    assert_eq!(back.get_pixel(10, 3).0[0], want);
}

#[test]
fn illegal_directives_are_reported_at_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.weft");
    std::fs::write(
        &f,
        "pipeline p(input: u16[2]) -> out {
    g(x, y): u16 = input(x, y) + 1;
    out(x, y): u16 = g(x, y) + g(x, y + 1);
}
schedule p_bad = p {
    out.split(y, y, yi, 8).parallel(y);
}
schedule p_bad2 = p {
    out.split(y, y, yi, 8, GuardWithIf);
    g.compute_at(g, x);
}
",
    )
    .unwrap();
    let o = weft(&["lower", f.to_str().unwrap(), "p_bad"]);
    let t = text(&o);
    assert!(!o.status.success());
    assert!(
        t.contains("parallel-overlap") && t.contains("GuardWithIf"),
        "{t}"
    );
    assert!(
        t.contains("6 |     out.split(y, y, yi, 8).parallel(y);"),
        "{t}"
    );
    let o = weft(&["lower", f.to_str().unwrap(), "p_bad2"]);
    let t = text(&o);
    assert!(!o.status.success());
    assert!(t.contains("compute-at"), "{t}");
    // The loop levels where it would be legal.
    assert!(
        t.contains("compute_at(out, y)") && t.contains("compute_at(out, yi)"),
        "{t}"
    );
    let o = weft(&["lower", f.to_str().unwrap(), "nope"]);
    assert!(text(&o).contains("no pipeline or pipeline schedule named `nope`"));
}

/// A validity violation is reported at the statement that breaks the rule, by `weft lower` and
/// `weft check`.
#[test]
fn validity_violations_are_reported_at_their_statement() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.weft");
    std::fs::write(
        &f,
        "pipeline p(input: f32[2]) -> g {
    g(x, y): f32 = input(x, y);
    g(x, y) += g(x + 1, y);
}
",
    )
    .unwrap();
    // `weft check` checks pipelines too.
    for verb in ["lower", "check"] {
        let mut args = vec![verb, f.to_str().unwrap()];
        if verb == "lower" {
            args.push("p");
        }
        let o = weft(&args);
        let t = text(&o);
        assert!(!o.status.success(), "{verb}");
        assert!(
            t.contains("syntactic-separation") && t.contains(":3:5"),
            "{t}"
        );
    }
}

/// Storage folding: a window of constant extent folds into a power of two rows; one wider than
/// 2^30 rows does not (no power of two up to 2^30 would hold it).
#[test]
fn bounds_reports_folded_storage() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fold.weft");
    let pipeline = |far: i64| {
        format!(
            "pipeline p{far}(input: u8[2]) -> out {{
    f(x, y): u8 = input(x, y);
    out(x, y): i32 = i32(f(x, y)) + i32(f(x, y + {far}));
}}
schedule s{far} = p{far} {{
    f.store_root().compute_at(out, y);
}}
"
        )
    };
    std::fs::write(&f, pipeline(2) + &pipeline(1_100_000_000)).unwrap();
    let t = text(&weft(&["bounds", f.to_str().unwrap(), "s2"]));
    assert!(t.contains("f: ") && t.contains("folded: 4 rows"), "{t}");
    let t = text(&weft(&["bounds", f.to_str().unwrap(), "s1100000000"]));
    assert!(t.contains("f: ") && !t.contains("folded"), "{t}");
}

/// The JIT caches compiled pipelines: a second compile loads the shared object its entry names
/// and skips lowering, the proofs and emitting C (the proc is read back when asked for); a
/// damaged entry is rebuilt; all compute the same.
#[test]
fn compiled_pipelines_are_cached() {
    let dir = tempfile::tempdir().unwrap();
    let jit = weft::jit::Jit::with_cache_dir(dir.path()).unwrap();
    let p = weft::pipe::parse::parse_pipeline(
        0,
        "pipeline twice(input: i32[1]) -> out {
            out(x): i32 = input(x) * 2 + input(x + 1);
        }",
        0,
    )
    .unwrap();
    let s = weft::pipe::schedule::Schedule::new(&p);
    let first = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(!first.cached);
    let t = std::time::Instant::now();
    let second = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(second.cached);
    eprintln!("cache hit in {:?}", t.elapsed());
    let run = |m: &weft::jit::Module| {
        let mut input: Vec<i32> = (0..9).collect();
        let mut out = vec![0i32; 8];
        let k = m.kernel("twice").unwrap();
        let mut args = vec![
            weft::jit::Arg::Int(0),
            weft::jit::Arg::Int(9),
            weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut input, &[9])),
            weft::jit::Arg::Int(0),
            weft::jit::Arg::Int(8),
            weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut out, &[8])),
        ];
        weft::pipeline::push_derived(&second.derivation, &mut args).unwrap();
        k.call(&mut args).unwrap();
        out
    };
    assert_eq!(run(&first.module), run(&second.module));
    assert_eq!(run(&first.module)[3], 3 * 2 + 4);
    // The hit loaded the shared object the entry names, and reads the proc back when asked.
    assert_eq!(first.module.path(), second.module.path());
    assert!(weft::ir::alpha::alpha_eq_proc(
        &first.proc().unwrap(),
        &second.proc().unwrap()
    ));
    // An entry whose shared object is gone still hits: the proc it holds is compiled again.
    std::fs::remove_file(first.module.path()).unwrap();
    let rebuilt = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(rebuilt.cached);
    assert!(rebuilt.module.path().exists());
    assert_eq!(run(&rebuilt.module), run(&first.module));
    // Another compiler configuration has entries of its own: a hit never loads an object
    // that other flags built.
    let other = weft::jit::Jit::with_compiler(dir.path(), "cc", vec!["-O1".to_string()]).unwrap();
    let o = weft::pipeline::compile(&other, &p, &s).unwrap();
    assert!(!o.cached);
    assert_ne!(o.module.path(), first.module.path());
    assert_eq!(run(&o.module), run(&first.module));
    // A damaged entry (its seal no longer matches) is ignored and rebuilt: every entry (one
    // per compiler configuration) damaged.
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pipe-")
                && p.extension().is_some_and(|x| x == "weft")
        })
        .collect();
    assert_eq!(entries.len(), 2, "{entries:?}");
    for entry in &entries {
        let text = std::fs::read_to_string(entry).unwrap();
        std::fs::write(entry, text.replacen("proc", "proc ", 1)).unwrap();
    }
    let third = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(!third.cached);
    assert_eq!(run(&third.module), run(&first.module));
}

/// `compile_named` lowers a pipeline schedule with its proc-level steps, as `weft realize` and
/// `weft::build` do (the JIT cache once compiled the directives alone); its cache entry holds
/// the proc with the instruction it calls, which reads back; and an entry is not found again
/// when the instruction's definition changes.
#[test]
fn compiled_pipelines_apply_proc_level_steps() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.weft");
    let source = |template: &str| {
        format!(
            "instr touch(src: [f32][1] @ DRAM) \"{template}\" {{
    pass;
}}

pipeline twice(input: f32[1]) -> out {{
    out(x): f32 = input(x) * 2.0 + input(x + 1);
}}

schedule twice_pf = twice {{
    insert_call(\"out =\", touch, input[min(-1 * input_0_min + out_x + 8, input_0_extent - 1):min(-1 * input_0_min + out_x + 8, input_0_extent - 1) + 1]);
}}
"
        )
    };
    std::fs::write(&file, source("__builtin_prefetch(&{src_data}, 0, 3);")).unwrap();
    let program = weft::load(&file).unwrap();
    let jit = weft::jit::Jit::with_cache_dir(dir.path().join("cache")).unwrap();
    let first = weft::pipeline::compile_named(&jit, &program, "twice_pf").unwrap();
    assert!(!first.cached);
    let calls = |p: &weft::ir::Proc| p.to_string().contains("touch(input[");
    assert!(calls(&first.proc().unwrap()), "{}", first.proc().unwrap());
    let run = |c: &weft::pipeline::CompiledPipeline| {
        let mut input: Vec<f32> = (0..41).map(|v| v as f32).collect();
        let mut out = vec![0f32; 40];
        let mut args = vec![
            weft::jit::Arg::Int(0),
            weft::jit::Arg::Int(41),
            weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut input, &[41])),
            weft::jit::Arg::Int(0),
            weft::jit::Arg::Int(40),
            weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut out, &[40])),
        ];
        weft::pipeline::push_derived(&c.derivation, &mut args).unwrap();
        c.module
            .kernel("twice_pf")
            .unwrap()
            .call(&mut args)
            .unwrap();
        out
    };
    assert_eq!(run(&first)[39], 39.0 * 2.0 + 40.0);
    // A hit: the proc reads back from the entry, with the instruction it calls.
    let second = weft::pipeline::compile_named(&jit, &program, "twice_pf").unwrap();
    assert!(second.cached);
    let back = second.proc().unwrap();
    assert!(calls(&back));
    assert!(weft::ir::alpha::alpha_eq_proc(
        &first.proc().unwrap(),
        &back
    ));
    // Its shared object gone, the hit compiles the proc it read back.
    std::fs::remove_file(first.module.path()).unwrap();
    let rebuilt = weft::pipeline::compile_named(&jit, &program, "twice_pf").unwrap();
    assert!(rebuilt.cached);
    assert_eq!(run(&rebuilt), run(&first));
    // Another definition of the instruction is another entry.
    std::fs::write(&file, source("(void) &{src_data};")).unwrap();
    let changed = weft::load(&file).unwrap();
    let third = weft::pipeline::compile_named(&jit, &changed, "twice_pf").unwrap();
    assert!(!third.cached);
    assert_eq!(run(&third), run(&first));
}

/// `weft::pipeline::lower` (behind `weft lower` and `weft realize`) remembers the proc its
/// proc-level steps make, in the JIT cache, so that a step's proofs run once: a second lowering
/// takes the remembered proc (shown by an entry edited to a proc that is still checked and
/// safe), a damaged entry is a miss that applies the steps again, and another definition of the
/// instruction a step inserts is another entry.
#[test]
fn lowering_remembers_the_proc_its_steps_make() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.weft");
    // A marker unique to this run names the entries (the cache is the environment's).
    let marker = format!("stepped_probe_{}_{}", std::process::id(), line!());
    let source = |template: &str| {
        format!(
            "instr touch(src: [f32][1] @ DRAM) \"{template} /* {marker} */\" {{
    pass;
}}

pipeline twice(input: f32[1]) -> out {{
    out(x): f32 = input(x) * 2.0 + input(x + 1);
}}

schedule twice_pf = twice {{
    insert_call(\"out =\", touch, input[min(-1 * input_0_min + out_x + 8, input_0_extent - 1):min(-1 * input_0_min + out_x + 8, input_0_extent - 1) + 1]);
}}
"
        )
    };
    let cache = weft::jit::Jit::new().unwrap().cache_dir().to_path_buf();
    let entries = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&cache)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                f.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("stepped-")
                    && std::fs::read_to_string(f).is_ok_and(|t| t.contains(&marker))
            })
            .collect()
    };
    std::fs::write(&file, source("__builtin_prefetch(&{src_data}, 0, 3);")).unwrap();
    let program = weft::load(&file).unwrap();
    let first = weft::pipeline::lower(&program, "twice_pf").unwrap();
    assert!(first.proc.to_string().contains("touch(input["));
    let [entry] = &entries()[..] else {
        panic!("not one entry: {:?}", entries())
    };
    // An entry edited to prefetch 9 ahead rather than 8: the hit is that proc.
    let text = std::fs::read_to_string(entry).unwrap();
    assert!(text.contains("out_x + 8"), "{text}");
    std::fs::write(entry, text.replace("out_x + 8", "out_x + 9")).unwrap();
    let hit = weft::pipeline::lower(&program, "twice_pf").unwrap();
    assert!(hit.proc.to_string().contains("out_x + 9"), "{}", hit.proc);
    // Damaged, it is a miss: the steps run again and the entry is written again.
    std::fs::write(entry, "proc not a proc").unwrap();
    let again = weft::pipeline::lower(&program, "twice_pf").unwrap();
    assert!(weft::ir::alpha::alpha_eq_proc(&first.proc, &again.proc));
    assert!(std::fs::read_to_string(entry)
        .unwrap()
        .contains("out_x + 8"));
    // Another definition of the instruction: another entry.
    std::fs::write(&file, source("(void) &{src_data};")).unwrap();
    let changed = weft::load(&file).unwrap();
    weft::pipeline::lower(&changed, "twice_pf").unwrap();
    let now = entries();
    assert_eq!(now.len(), 2, "{now:?}");
    for f in now {
        std::fs::remove_file(f).unwrap();
    }
}

/// A hit reads the proc's own file only when asked for, checked against the hash its entry
/// holds: a damaged proc file is an error of `proc()`, and when the shared object is gone too,
/// the entry is a miss and everything is rebuilt.
#[test]
fn cached_procs_are_read_when_asked_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let jit = weft::jit::Jit::with_cache_dir(dir.path()).unwrap();
    let p = weft::pipe::parse::parse_pipeline(
        0,
        "pipeline plus(input: i32[1]) -> out { out(x): i32 = input(x) + 7; }",
        0,
    )
    .unwrap();
    let s = weft::pipe::schedule::Schedule::new(&p);
    let first = weft::pipeline::compile(&jit, &p, &s).unwrap();
    let file = |ext: &str| {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|q| q.extension().is_some_and(|x| x == ext))
            .unwrap()
    };
    let proc_file = file("proc");
    let hit = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(hit.cached);
    assert!(weft::ir::alpha::alpha_eq_proc(
        &hit.proc().unwrap(),
        &first.proc().unwrap()
    ));
    let text = std::fs::read_to_string(&proc_file).unwrap();
    std::fs::write(&proc_file, format!("{text}\n")).unwrap();
    let damaged = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(damaged.cached);
    assert!(damaged.proc().is_err());
    std::fs::remove_file(first.module.path()).unwrap();
    let rebuilt = weft::pipeline::compile(&jit, &p, &s).unwrap();
    assert!(!rebuilt.cached);
    assert!(weft::ir::alpha::alpha_eq_proc(
        &rebuilt.proc().unwrap(),
        &first.proc().unwrap()
    ));
}

/// Review of partitioning around reduction loops: (1) an update whose own reads the checker
/// cannot combine across the three loops is lowered without that partitioning instead of
/// rejected (it was accepted before partitioning reached such loops); (2) nested reduction
/// loops are not cut at every level (the copies of the body grew as 3^k).
#[test]
fn partitioning_around_reduction_loops_keeps_pipelines_checkable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.weft");
    std::fs::write(
        &path,
        "pipeline p(input: i32[2]) -> out {
    c = repeat_edge(input);
    f(x, y): i32 = c(x, y);
    f(x, y) += c(-x + 3 * ra + 2 * rb + 2, clamp(y - 1, 0, 5)) + c(clamp(-2 * x + ra + rb + 2, 2, 4), clamp(y + 3 * ra + rb + 2, 0, 6)) for ra in -1..1, rb in 0..4;
    out(x, y): i32 = f(x, y);
}
schedule s = p { f.compute_root(); }
pipeline deep(input: f32[2]) -> out {
    c = repeat_edge(input);
    out(x, y): f32 = 0.0;
    out(x, y) += c(x + ra + rb + rc + rd + re - 3, y + ra - rb + rc - rd + re) for ra in 0..2, rb in 0..2, rc in 0..2, rd in 0..2, re in 0..2;
}
schedule d = deep { }
",
    )
    .unwrap();
    let program = weft::load(&path).unwrap();
    let jit = weft::jit::Jit::with_cache_dir(dir.path().join("cache")).unwrap();
    for (name, window) in [("s", vec![(0, 5), (0, 2)]), ("d", vec![(-2, 7), (1, 3)])] {
        let lp = weft::pipeline::lower(&program, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = lp.proc.to_string();
        assert!(
            text.lines().count() < 400,
            "{name}: {} lines",
            text.lines().count()
        );
        let r = weft::pipeline::realize(&lp, &jit, &window, &[], vec![], 1).unwrap();
        assert!(weft::pipeline::check_against_reference(&lp, &[], &r).unwrap() > 0);
    }
}

/// Threads of one process compiling one pipeline at once all succeed (each writes the cache
/// entry under a name of its own before renaming it into place), and compute the same.
#[test]
fn threads_compiling_one_pipeline_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let p = weft::pipe::parse::parse_pipeline(
        0,
        "pipeline thrice(input: i32[1]) -> out { out(x): i32 = input(x) * 3; }",
        0,
    )
    .unwrap();
    let s = weft::pipe::schedule::Schedule::new(&p);
    // A fresh cache each round, so that every thread writes the entry.
    for round in 0..3 {
        let cache = dir.path().join(round.to_string());
        let paths: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let jit = weft::jit::Jit::with_cache_dir(&cache).unwrap();
                        let c = weft::pipeline::compile(&jit, &p, &s)
                            .unwrap_or_else(|d| panic!("round {round}: {d:?}"));
                        c.module.path().to_path_buf()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(paths.iter().all(|q| q == &paths[0]), "{paths:?}");
        let leftovers: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

/// The pipeline cache stores the lowered proc as text: every shipped schedule's proc must parse
/// back to itself (literal arithmetic such as unsharp's kernel is folded, so no literal loses
/// its data type on the way), or a hit whose shared object is gone would compile other C, and
/// `CompiledPipeline::proc` would give another proc.
#[test]
fn lowered_example_procs_round_trip_through_text() {
    for file in ["pipelines.weft", "halide_apps.weft"] {
        let path = format!("{}/../../examples/{file}", env!("CARGO_MANIFEST_DIR"));
        let program = weft::load(Path::new(&path)).unwrap();
        for name in weft::pipeline::names(&program) {
            // The apps' bare pipelines would run with every func inlined, Halide's default:
            // bilateral_grid's output then reads its histogram 2000 times per point, which
            // nobody runs (and which takes the checker minutes). Their schedules are checked.
            if file == "halide_apps.weft" && !name.ends_with("_fast") {
                continue;
            }
            let Ok(lp) = weft::pipeline::lower(&program, &name) else {
                continue;
            };
            let text = format!("{}\n", lp.lowered.proc);
            let module =
                weft::syntax::parse_module(&mut weft::syntax::SourceMap::new(), "t", &text)
                    .unwrap_or_else(|d| panic!("{name}: {d:?}"));
            assert!(
                weft::ir::alpha::alpha_eq_proc(&lp.lowered.proc, &module.procs[0]),
                "{name} changed in the round trip:\n{text}"
            );
            // A cache hit reads the derivation alone, and computes the derived arguments from it.
            let derivation = weft::pipe::lower::derivation(&lp.lowered.proc);
            let back = weft::pipeline::lowered_from_text(&format!("{derivation}\n"), &name)
                .unwrap_or_else(|| panic!("{name}: the derivation does not read back"));
            assert!(weft::ir::alpha::alpha_eq_proc(&derivation, &back), "{name}");
        }
    }
}

/// Review of the literal folding: literals between literals (a `select` of two) have no context
/// to type them when the cached proc is read back, so lowering writes them as casts. A cache hit
/// must be the same proc and compute the same values.
#[test]
fn cache_hits_of_literal_arithmetic_are_the_same_proc() {
    for body in [
        "out(x): i32 = i32(select(input(x) > 3, u8(250), u8(9)) + u8(10));",
        "out(x): i32 = i32(select(input(x) > 3, f32(16777216.0), f32(0.0)) + f32(1.0));",
        "out(x): i32 = i32(select(input(x) > 3 and (1 < 2), u8(7), u8(9)));",
        "out(x): i32 = i32(select(input(x) > 3, f32(0.1) * f32(3.0), f32(2.0)) * f32(1000000.0));",
        "out(x): i32 = i32(input(x) + i32(f32(0.0) / f32(0.0)));",
    ] {
        let src = format!("pipeline fc(input: i32[1]) -> out {{ {body} }}");
        let p = weft::pipe::parse::parse_pipeline(0, &src, 0).unwrap();
        let s = weft::pipe::schedule::Schedule::new(&p);
        let dir = tempfile::tempdir().unwrap();
        let jit = weft::jit::Jit::with_cache_dir(dir.path().to_path_buf()).unwrap();
        let first = weft::pipeline::compile(&jit, &p, &s).unwrap();
        let second = weft::pipeline::compile(&jit, &p, &s)
            .unwrap_or_else(|d| panic!("{body}: the cache hit fails: {d:?}"));
        assert!(second.cached, "{body}: missed the cache");
        assert!(
            weft::ir::alpha::alpha_eq_proc(&first.proc().unwrap(), &second.proc().unwrap()),
            "{body}: the cache hit is another proc:\n{}\n{}",
            first.proc().unwrap(),
            second.proc().unwrap()
        );
        let run = |m: &weft::jit::Module| {
            let mut input: Vec<i32> = (0..8).collect();
            let mut out = vec![0i32; 8];
            let mut args = vec![
                weft::jit::Arg::Int(0),
                weft::jit::Arg::Int(8),
                weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut input, &[8])),
                weft::jit::Arg::Int(0),
                weft::jit::Arg::Int(8),
                weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut out, &[8])),
            ];
            weft::pipeline::push_derived(&second.derivation, &mut args).unwrap();
            m.kernel("fc").unwrap().call(&mut args).unwrap();
            out
        };
        assert_eq!(run(&first.module), run(&second.module), "{body}");
    }
}

/// `align_bounds` widens a producer's region to whole aligned blocks: the input it reads grows
/// accordingly (Halide's `infer_input_bounds`), and the values stay the pipeline's.
#[test]
fn align_bounds_widens_the_region_to_aligned_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.weft");
    std::fs::write(
        &path,
        "pipeline p(input: i32[2]) -> out {
    f(x, y): i32 = input(x - 1, y) + input(x + 1, y);
    out(x, y): i32 = f(x, y) * 2;
}
schedule plain = p { f.compute_root(); }
schedule aligned = p { f.compute_root().align_bounds(x, 8).align_bounds(y, 4, 1); }
",
    )
    .unwrap();
    let program = weft::load(&path).unwrap();
    let window = vec![(2, 16), (3, 2)];
    let reads = |name: &str| {
        let lp = weft::pipeline::lower(&program, name).unwrap();
        weft::pipeline::input_regions(&lp, &window, &[]).unwrap()[0].clone()
    };
    // f on x in [2, 17] and y in [3, 4]: the input one column wider on each side.
    assert_eq!(reads("plain"), vec![(1, 18), (3, 2)]);
    // Aligned: x in [0, 23] (blocks of 8), y in [1, 4] (blocks of 4 starting at 1 mod 4).
    assert_eq!(reads("aligned"), vec![(-1, 26), (1, 4)]);
    let lp = weft::pipeline::lower(&program, "aligned").unwrap();
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    for window in [window.clone(), vec![(-5, 1), (0, 1)], vec![(7, 9), (-2, 5)]] {
        let r = weft::pipeline::realize(&lp, &jit, &window, &[], vec![], 1).unwrap();
        let n = weft::pipeline::check_against_reference(&lp, &[], &r).unwrap();
        assert_eq!(n, (window[0].1 * window[1].1) as usize);
    }
    // An output's region is the caller's window.
    std::fs::write(
        &path,
        "pipeline p(input: i32[1]) -> out { out(x): i32 = input(x); }
schedule s = p { out.align_bounds(x, 8); }
",
    )
    .unwrap();
    let program = weft::load(&path).unwrap();
    let Err(e) = weft::pipeline::parse(&program, "s") else {
        panic!("align_bounds on an output is accepted");
    };
    assert!(e.to_string().contains("align-bounds"), "{e}");
}

/// An input the pipeline never reads has no region; realize still passes it (review: the call
/// had too few arguments).
#[test]
fn an_input_that_is_not_read_is_still_passed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.weft");
    std::fs::write(
        &path,
        "pipeline u(input: f32[2]) -> out { out(x): f32 = 4.0; }\n",
    )
    .unwrap();
    let program = weft::load(&path).unwrap();
    let lp = weft::pipeline::lower(&program, "u").unwrap();
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    let r = weft::pipeline::realize(&lp, &jit, &[(3, 16)], &[], vec![], 1).unwrap();
    assert_eq!(
        weft::pipeline::check_against_reference(&lp, &[], &r).unwrap(),
        16
    );
}

/// A pyramid's region bounds nest every coarser level's quotients and clamps; lowering binds the
/// large ones to derived arguments (each stated equal to its definition by a precondition), so
/// the checker's proofs stay small. Before, six levels of this pyramid left the solver
/// undecided. The derived arguments are computed by `realize`; wrong values stop at the
/// precondition, never read out of bounds.
#[test]
fn pyramid_bounds_are_derived_arguments() {
    let levels = 7;
    let mut src = String::from(
        "pipeline pyramid(input: f32[2]) -> out {\n    clamped = repeat_edge(input);\n    d0(x, y): f32 = clamped(x, y);\n",
    );
    for l in 1..levels {
        let p = l - 1;
        src += &format!(
            "    d{l}(x, y): f32 = d{p}(2 * x - 1, 2 * y) + d{p}(2 * x, 2 * y + 1) + d{p}(clamp(2 * x + 1, 0, input.extent(0) / 4), 2 * y);\n"
        );
    }
    src += &format!("    u{}(x, y): f32 = d{}(x, y);\n", levels - 1, levels - 1);
    for l in (0..levels - 1).rev() {
        let n = l + 1;
        src += &format!(
            "    u{l}(x, y): f32 = d{l}(x, y) + u{n}(x / 2, y / 2) + u{n}((x + 1) / 2, (y + 1) / 2);\n"
        );
    }
    src += "    out(x, y): f32 = u0(x, y);\n}\nschedule pyramid_root = pyramid {\n";
    for l in 1..levels {
        src += &format!("    d{l}.compute_root();\n    u{l}.compute_root();\n");
    }
    src += "}\n";
    let program = weft::load_str("pyramid.weft", &src).unwrap();
    let lp = weft::pipeline::lower(&program, "pyramid_root").unwrap_or_else(|e| panic!("{e}"));
    let proc = &lp.proc;
    let first = weft::pipe::lower::first_derived(proc);
    let derived: Vec<&str> = proc.args[first..].iter().map(|a| a.sym.name()).collect();
    assert!(!derived.is_empty(), "no derived arguments:\n{proc}");
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    for window in [
        vec![(0, 45), (0, 23)],
        vec![(-9, 1), (5, 1)],
        vec![(3, 64), (-2, 7)],
    ] {
        let r = weft::pipeline::realize(&lp, &jit, &window, &[], vec![], 1).unwrap();
        let n = weft::pipeline::check_against_reference(&lp, &[], &r).unwrap();
        assert_eq!(n, (window[0].1 * window[1].1) as usize);
    }
    // A wrong derived value is refused at the entry, by the precondition that defines it.
    let module = jit.compile(std::slice::from_ref(proc)).unwrap();
    let kernel = module.kernel(&proc.name).unwrap();
    let mut input = vec![0f32; 64 * 64];
    let mut out = vec![0f32; 16 * 16];
    let mut args = vec![
        weft::jit::Arg::Int(-24),
        weft::jit::Arg::Int(64),
        weft::jit::Arg::Int(-24),
        weft::jit::Arg::Int(64),
        weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut input, &[64, 64])),
        weft::jit::Arg::Int(0),
        weft::jit::Arg::Int(16),
        weft::jit::Arg::Int(0),
        weft::jit::Arg::Int(16),
        weft::jit::Arg::Buf(weft::jit::BufArg::new(&mut out, &[16, 16])),
    ];
    weft::pipeline::push_derived(proc, &mut args).unwrap();
    let weft::jit::Arg::Int(v) = args[first] else {
        panic!("a derived argument is an integer")
    };
    args[first] = weft::jit::Arg::Int(v - 1);
    let err = kernel.call(&mut args).unwrap_err().to_string();
    assert!(err.contains("precondition"), "{err}");
}

/// Review: derived arguments were computed by looking arguments up by name, and a parameter
/// named like a generated argument (`input_0_extent`, an input's extent) took its place: a valid
/// call was refused, or computed from the parameter's value. They are told apart by symbol.
#[test]
fn derived_arguments_tell_a_parameter_from_a_generated_name() {
    let src = "pipeline pyr(input_0_extent: i32, input: f32[2]) -> out {
        c = repeat_edge(input);
        d1(x, y): f32 = c(2 * x - 1, y) + c(2 * x + 1, y) + f32(input_0_extent);
        d2(x, y): f32 = d1(clamp(2 * x + 1, 0, input.extent(0) / 4), y) + d1(clamp(2 * x - 1, 0, input.extent(0) / 4), y);
        d3(x, y): f32 = d2(clamp(x / 2, 0, input.extent(0) / 8), y) + d2(clamp((x + 1) / 2, 0, input.extent(0) / 8), y);
        out(x, y): f32 = d3(x / 2, y) + d3((x + 1) / 2, y);
    }
    schedule s1 = pyr { d1.compute_root(); d2.compute_root(); d3.compute_root(); }";
    let program = weft::load_str("pyr.weft", src).unwrap();
    let lp = weft::pipeline::lower(&program, "s1").unwrap_or_else(|e| panic!("{e}"));
    assert!(
        weft::pipe::lower::first_derived(&lp.proc) < lp.proc.args.len(),
        "no derived arguments:\n{}",
        lp.proc
    );
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    for k in [3, -40, 17] {
        let params = [("input_0_extent".to_string(), weft::interp::Scalar::I32(k))];
        let window = vec![(0, 17), (0, 5)];
        let r = weft::pipeline::realize(&lp, &jit, &window, &params, vec![], 1)
            .unwrap_or_else(|e| panic!("k = {k}: {e}"));
        let n = weft::pipeline::check_against_reference(&lp, &params, &r).unwrap();
        assert_eq!(n, 85);
    }
}

/// A pyramid left inline (Halide's default) would nest every level's taps into one expression
/// of billions of nodes: lowering stops at a size limit with the rule `inline-size`, and
/// `weft lower` still prints the scheduled proc (before the limit it ran for minutes).
#[test]
fn a_pyramid_left_inline_stops_at_the_size_limit() {
    let path = format!(
        "{}/../../examples/halide_apps.weft",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = weft(&["lower", &path, "interpolate_fast"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("// not lowered:") && t.contains("inline-size"),
        "{t}"
    );
    assert!(t.contains("proc interpolate_fast("), "{t}");
    let program = weft::load(Path::new(&path)).unwrap();
    let err = weft::pipeline::lower(&program, "interpolate")
        .err()
        .unwrap();
    assert!(err.to_string().contains("inline-size"), "{err}");
}

/// `specialize`: the caller gets the input region of the version its window selects, and a
/// version that does not run cannot stop the call with its derived arguments (found by review:
/// both took every version's, so an input 16M pixels wide was allocated for a 16-pixel
/// window, and a region end of the unused version overflowed the argument range).
#[test]
fn specialized_versions_that_do_not_run_cost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("specialized.weft");
    std::fs::write(
        &path,
        "pipeline blur(input: u16[2]) -> blur_y {
    blur_x(x, y): u16 = (input(x - 1, y) + input(x, y) + input(x + 1, y)) / 3;
    blur_y(x, y): u16 = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) / 3;
}
schedule huge = blur {
    blur_x.compute_root();
    blur_x.specialize(blur_y.extent(0) > 1000000).split(x, x, xi, 16777216, RoundUp);
}
pipeline m(input: i32[1]) -> out {
    c = repeat_edge(input);
    f(x): i32 = c(x - 1) + c(x + 1);
    g(x): i32 = f(clamp(2 * x - 1, 0, input.extent(0) / 2)) + f(2 * x + 1);
    out(x): i32 = g(x / 2) + g((x + 1) / 2) + f(x);
}
schedule never = m {
    f.compute_root();
    g.compute_root();
    g.specialize(out.extent(0) > 1000000).split(x, x, xi, 2147483647, RoundUp);
}
",
    )
    .unwrap();
    let program = weft::load(&path).unwrap();
    let lp = weft::pipeline::lower(&program, "huge").unwrap();
    let reads = weft::pipeline::input_regions(&lp, &[(0, 16), (0, 4)], &[]).unwrap();
    assert_eq!(reads[0], vec![(-1, 18), (-1, 6)]);
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    for (name, window) in [("huge", vec![(0, 16), (0, 4)]), ("never", vec![(-3, 16)])] {
        let lp = weft::pipeline::lower(&program, name).unwrap();
        let r = weft::pipeline::realize(&lp, &jit, &window, &[], vec![], 1).unwrap();
        let n = weft::pipeline::check_against_reference(&lp, &[], &r).unwrap();
        assert_eq!(n, window.iter().map(|w| w.1 as usize).product::<usize>());
    }
}

/// `fma(a, b, c)` rounds once: compiled (scalar and vectorized) it equals the interpreter bit
/// for bit, and `fma(a, a, -(a * a))` is the rounding error of `a * a`, not zero (a compiler
/// that computed `a * b + c` instead would give zeros).
#[test]
fn fma_rounds_once_in_compiled_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.weft");
    std::fs::write(
        &path,
        "pipeline residual(input: f32[1]) -> out {
            a(x): f32 = input(x) * 0.1 + 0.3;
            out(x): f32 = fma(a(x), a(x), -(a(x) * a(x)));
        }
        schedule residual_vec = residual { out.vectorize(x, 8); }",
    )
    .unwrap();
    let program = weft::load(&path).unwrap();
    let jit = weft::jit::Jit::with_cache_dir(cache_dir()).unwrap();
    for name in ["residual", "residual_vec"] {
        let lp = weft::pipeline::lower(&program, name).unwrap();
        let data: Vec<f32> = (0..37).map(|k| (k * 7919 % 1000) as f32).collect();
        let input = weft::pipeline::InputData {
            region: vec![(0, 37)],
            data: weft::hostbuf::HostData::F32(data),
        };
        let r = weft::pipeline::realize(&lp, &jit, &[(0, 37)], &[], vec![Some(input)], 1).unwrap();
        assert_eq!(
            weft::pipeline::check_against_reference(&lp, &[], &r).unwrap(),
            37,
            "{name}"
        );
        let out = &r.outputs[0].1;
        let nonzero = (0..37)
            .filter(|&k| out.scalar(k) != weft::interp::Scalar::F32(0.0))
            .count();
        assert!(nonzero > 10, "{name}: {nonzero} residuals are not zero");
    }
}
