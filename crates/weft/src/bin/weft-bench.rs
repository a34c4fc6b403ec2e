//! Side-by-side benchmarks of issue 2, reported in the README:
//! - each example kernel compiled by weft against the same loop nest written by hand in C
//!   (`bench/handwritten.c`), same compiler and flags, same inputs, same run;
//! - JIT cold compile time per example, cache-hit load time, and call overhead on a tiny kernel;
//! - time to parse and check all examples.
//!
//! Run: `cargo run --release -p weft --bin weft-bench`

mod allocator;

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft::hostbuf::HostData;
use weft::interp::ArgValue;
use weft::ir::Proc;
use weft::jit::{Arg, Jit};

type Handwritten = unsafe extern "C" fn(*const i64, *const *mut c_void);

/// Timed runs of each kernel; the best is reported.
const REPS: usize = 21;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The proc and sizes of the first `// run:` line of each example.
fn first_runs(text: &str) -> Option<(String, HashMap<String, i64>)> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("// run:"))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let (mut proc, mut sizes) = (None, HashMap::new());
    for pair in w.chunks(2) {
        match pair {
            ["--proc", p] => proc = Some(p.to_string()),
            ["--size", kv] => {
                let (k, v) = kv.split_once('=')?;
                sizes.insert(k.to_string(), v.parse().ok()?);
            }
            _ => {}
        }
    }
    Some((proc?, sizes))
}

/// The best of `reps` timings of each of two competitors, run alternately so that a slow spell of
/// the machine (it is a shared VM) hits both.
fn best_of_pair(
    reps: usize,
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    let (mut best_a, mut best_b) = (Duration::MAX, Duration::MAX);
    for _ in 0..reps {
        best_a = best_a.min(a());
        best_b = best_b.min(b());
    }
    (best_a, best_b)
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let examples = root().join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&examples)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .collect();
    files.sort();

    // Checking all examples.
    let t = Instant::now();
    let mut programs = Vec::new();
    for f in &files {
        programs.push(weft::load(f)?);
    }
    let check_time = t.elapsed();
    println!(
        "parse + check all {} example files: {} ms",
        files.len(),
        ms(check_time)
    );

    let cache = tempfile_dir()?;
    let jit = Jit::with_cache_dir(&cache)?;
    println!("compiler: {} {}", jit.compiler(), jit.all_flags().join(" "));

    // The handwritten reference, compiled with the JIT's compiler and flags.
    let hw_so = cache.join("handwritten.so");
    let status = std::process::Command::new(jit.compiler())
        .args(jit.all_flags())
        .arg(root().join("bench/handwritten.c"))
        .arg("-o")
        .arg(&hw_so)
        .arg("-lm")
        .status()?;
    if !status.success() {
        return Err("compiling bench/handwritten.c failed".into());
    }
    let hw = unsafe { libloading::Library::new(&hw_so)? };

    println!();
    println!("| kernel | sizes | weft ms | hand-written C ms | weft / C | JIT cold compile ms | cache-hit load ms |");
    println!("|---|---|---|---|---|---|---|");
    for (f, program) in files.iter().zip(&programs) {
        let text = std::fs::read_to_string(f)?;
        let Some((name, sizes)) = first_runs(&text) else {
            continue;
        };
        let proc: Arc<Proc> = program.module.proc(&name).ok_or("no proc")?.clone();

        let t = Instant::now();
        let module = jit.compile(std::slice::from_ref(&proc))?;
        let cold = t.elapsed();
        drop(module);
        let t = Instant::now();
        let module = jit.compile(std::slice::from_ref(&proc))?;
        let hit = t.elapsed();
        let kernel = module.kernel(&name)?;

        let args = weft::interp::random_args(&proc, &sizes, 7)?;
        let ints: Vec<i64> = args
            .iter()
            .filter_map(|a| match a {
                ArgValue::Int(v) => Some(*v),
                _ => None,
            })
            .collect();
        let fresh = || -> Vec<(HostData, Vec<usize>)> {
            args.iter()
                .filter_map(|a| match a {
                    ArgValue::Buf(b) => Some((HostData::from_buffer(b), b.shape.clone())),
                    _ => None,
                })
                .collect()
        };
        let weft_run = || {
            let mut bufs = fresh();
            let mut it = bufs.iter_mut();
            let mut jargs: Vec<Arg> = args
                .iter()
                .map(|a| match a {
                    ArgValue::Int(v) => Arg::Int(*v),
                    ArgValue::Bool(v) => Arg::Bool(*v),
                    ArgValue::Buf(_) => {
                        let (h, shape) = it.next().expect("one host buffer per buffer argument");
                        h.as_arg(shape)
                    }
                })
                .collect();
            let t = Instant::now();
            kernel.call(&mut jargs).expect("weft kernel call");
            t.elapsed()
        };
        let func: libloading::Symbol<Handwritten> =
            unsafe { hw.get(format!("hw_{name}").as_bytes())? };
        let c_run = || {
            let mut bufs = fresh();
            let ptrs: Vec<*mut c_void> = bufs.iter_mut().map(|(h, _)| h.as_mut_ptr()).collect();
            let t = Instant::now();
            unsafe { func(ints.as_ptr(), ptrs.as_ptr()) };
            t.elapsed()
        };
        let (weft_time, c_time) = best_of_pair(REPS, weft_run, c_run);
        let size_text: Vec<String> = proc
            .args
            .iter()
            .filter_map(|a| {
                sizes
                    .get(a.sym.name())
                    .map(|v| format!("{}={v}", a.sym.name()))
            })
            .collect();
        println!(
            "| {name} | {} | {} | {} | {:.2} | {} | {} |",
            size_text.join(" "),
            ms(weft_time),
            ms(c_time),
            weft_time.as_secs_f64() / c_time.as_secs_f64().max(1e-12),
            ms(cold),
            ms(hit)
        );
    }

    // Call overhead: a kernel doing almost nothing, called many times.
    let tiny = weft::syntax::parse_module(
        &mut weft::syntax::SourceMap::new(),
        "tiny.weft",
        "proc tiny(n: size, x: f32[n]) {\n    x[0] = 1.0;\n}\n",
    )
    .map_err(|_| "tiny kernel does not parse")?;
    let module = jit.compile(&tiny.procs)?;
    let kernel = module.kernel("tiny")?;
    let mut x = vec![0f32; 4];
    let calls = 200_000;
    let t = Instant::now();
    for _ in 0..calls {
        let mut a = [Arg::Int(4), Arg::Buf(weft::jit::BufArg::new(&mut x, &[4]))];
        kernel.call(&mut a)?;
    }
    let per_call = t.elapsed() / calls;
    println!();
    println!(
        "call overhead (tiny kernel, checked call through the typed API): {:.0} ns per call",
        per_call.as_secs_f64() * 1e9
    );
    let _ = std::fs::remove_dir_all(&cache);
    Ok(())
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("weft-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}
