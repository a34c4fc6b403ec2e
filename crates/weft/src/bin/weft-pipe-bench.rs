//! Pipelines against Halide 21 (issue 9), side by side on the same input in one run: weft's
//! lowered, checked and JIT-compiled pipeline, and the same algorithm with the Halide app's
//! manual schedule in Halide's Python JIT (`bench/peers/halide_apps.py`). Outputs are compared
//! bit for bit; times (best of the runs) on 1 and 2 threads, and compile times, are reported.
//!
//! Run: `bash bench/peers/setup.sh && cargo run --release -p weft --bin weft-pipe-bench`
//! (`--size 6400x4800`, `--reps 10`, `--python .venv-peers/bin/python`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use weft::jit::{Arg, BufArg, Jit};
use weft::pipe::ast::Pipeline;
use weft::pipe::schedule::Schedule;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An app: its pipeline and schedule, and how many pixels of border its input needs.
struct App {
    name: &'static str,
    pipeline: Pipeline,
    schedule: Schedule,
    border: usize,
}

/// The 3x3 box blur of `apps/blur`, u16: `blur_x` averages three columns, `blur_y` three rows
/// of it. Schedule: Halide's (strips of 8 rows in parallel, `blur_x` stored per strip and
/// computed per row, which slides), vectorized 32 wide (AVX-512 holds 32 u16). The strips are
/// guarded rather than shifted: shifted strips overlap, and threads writing the same rows race.
fn blur() -> App {
    let p = weft::pipe::parse::parse_pipeline(
        0,
        "pipeline blur(input: u16[2]) -> blur_y {
            blur_x(x, y): u16 = (input(x - 1, y) + input(x, y) + input(x + 1, y)) / 3;
            blur_y(x, y): u16 = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) / 3;
        }",
        0,
    )
    .expect("the blur pipeline parses");
    let s = weft::pipe::script::parse_schedule(
        0,
        "schedule blur_fast = blur {
            blur_y.split(y, y, yi, 8, GuardWithIf).parallel(y).vectorize(x, 32);
            blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, 32);
        }",
        0,
        &p,
        Schedule::new(&p),
    )
    .expect("the blur schedule is legal")
    .schedule;
    App {
        name: "blur",
        pipeline: p,
        schedule: s,
        border: 1,
    }
}

/// Set the OpenMP thread count of this process (the JIT's modules use the process's libgomp).
fn set_threads(n: i32) -> Result<(), String> {
    // SAFETY: libgomp's `omp_set_num_threads(int)` has this signature and no preconditions.
    unsafe {
        let lib = libloading::Library::new("libgomp.so.1").map_err(|e| e.to_string())?;
        let f: libloading::Symbol<unsafe extern "C" fn(i32)> =
            lib.get(b"omp_set_num_threads").map_err(|e| e.to_string())?;
        f(n);
        // Keep the runtime loaded: the kernels use it.
        std::mem::forget(lib);
    }
    Ok(())
}

struct Peer {
    compile: Duration,
    best: Duration,
    out: Vec<u16>,
}

fn halide(
    python: &Path,
    app: &str,
    input: &Path,
    (w, h): (usize, usize),
    threads: i32,
    reps: usize,
) -> Result<Peer, String> {
    let out_path = input.with_extension(format!("halide{threads}.raw"));
    let script = root().join("bench/peers/halide_apps.py");
    let o = Command::new(python)
        .arg(&script)
        .arg(app)
        .arg("--input")
        .arg(input)
        .args(["--width", &w.to_string(), "--height", &h.to_string()])
        .args([
            "--threads",
            &threads.to_string(),
            "--reps",
            &reps.to_string(),
        ])
        .arg("--out")
        .arg(&out_path)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !o.status.success() {
        return Err(format!(
            "the Halide peer failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let line = String::from_utf8_lossy(&o.stdout);
    let num = |key: &str| -> Vec<f64> {
        let Some(at) = line.find(key) else {
            return Vec::new();
        };
        let rest = &line[at + key.len()..];
        let rest = rest.trim_start_matches([':', ' ', '"']);
        let end = rest.find(['}', ']']).unwrap_or(rest.len());
        rest[..end]
            .trim_start_matches('[')
            .split(',')
            .filter_map(|t| t.trim().parse().ok())
            .collect()
    };
    let compile = num("\"compile_s\"");
    let times = num("\"times_ms\"");
    let best = times.iter().cloned().fold(f64::INFINITY, f64::min);
    if compile.is_empty() || !best.is_finite() {
        return Err(format!("unexpected output from the Halide peer: {line}"));
    }
    let bytes = std::fs::read(&out_path).map_err(|e| e.to_string())?;
    Ok(Peer {
        compile: Duration::from_secs_f64(compile[0]),
        best: Duration::from_secs_f64(best / 1e3),
        out: bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect(),
    })
}

fn main() -> Result<(), String> {
    let mut size = (6400usize, 4800usize);
    let mut reps = 10usize;
    let mut python = root().join(".venv-peers/bin/python");
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        match (pair[0].as_str(), pair.get(1)) {
            ("--size", Some(v)) => {
                let (w, h) = v.split_once('x').ok_or("--size WxH")?;
                size = (
                    w.parse().map_err(|_| "--size WxH")?,
                    h.parse().map_err(|_| "--size WxH")?,
                );
            }
            ("--reps", Some(v)) => reps = v.parse().map_err(|_| "--reps N")?,
            ("--python", Some(v)) => python = PathBuf::from(v),
            _ => return Err(format!("unknown argument {}", pair[0])),
        }
    }
    let tmp = std::env::temp_dir().join(format!("weft-pipe-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    println!("| app | threads | weft (ms) | Halide 21 (ms) | weft / Halide |");
    println!("|---|---|---|---|---|");
    let mut compiles = Vec::new();
    for app in [blur()] {
        // Cold: lower, check, emit and compile into an empty cache; then a cache hit.
        // Cold: lower, check (every proof, the race proof too) and compile into an empty
        // cache; then a hit, which reads the checked proc back and loads the shared object.
        let jit = Jit::with_cache_dir(tmp.join("cache")).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let compiled = weft::pipeline::compile(&jit, &app.pipeline, &app.schedule)
            .map_err(|d| format!("{} does not compile: {d:?}", app.name))?;
        let cold = t0.elapsed();
        let t1 = Instant::now();
        let again = weft::pipeline::compile(&jit, &app.pipeline, &app.schedule)
            .map_err(|d| format!("{} does not compile: {d:?}", app.name))?;
        let hit = t1.elapsed();
        if compiled.cached || !again.cached {
            return Err("the pipeline cache did not behave".into());
        }
        let module = compiled.module;
        let kernel = module.kernel(app.name).map_err(|e| e.to_string())?;
        let (w, h) = size;
        let (bw, bh) = (w + 2 * app.border, h + 2 * app.border);
        let mut input: Vec<u16> = (0..bw * bh)
            .map(|i| ((i as u64).wrapping_mul(2654435761) >> 11) as u16 & 0x3fff)
            .collect();
        let in_path = tmp.join(format!("{}.raw", app.name));
        let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&in_path, bytes).map_err(|e| e.to_string())?;
        let mut out = vec![0u16; w * h];
        let b = -(app.border as i64);
        for threads in [1, 2] {
            set_threads(threads)?;
            let mut run = || -> Result<Duration, String> {
                let t = Instant::now();
                let mut args = vec![
                    Arg::Int(b),
                    Arg::Int(bw as i64),
                    Arg::Int(b),
                    Arg::Int(bh as i64),
                    Arg::Buf(BufArg::new(&mut input, &[bh, bw])),
                    Arg::Int(0),
                    Arg::Int(w as i64),
                    Arg::Int(0),
                    Arg::Int(h as i64),
                    Arg::Buf(BufArg::new(&mut out, &[h, w])),
                ];
                kernel.call(&mut args).map_err(|e| e.to_string())?;
                Ok(t.elapsed())
            };
            run()?;
            let mut best = Duration::MAX;
            for _ in 0..reps {
                best = best.min(run()?);
            }
            let peer = halide(&python, app.name, &in_path, size, threads, reps)?;
            // Once more after the peer, so that a slow spell of the machine hits both.
            for _ in 0..reps {
                best = best.min(run()?);
            }
            if peer.out != out {
                let bad = peer.out.iter().zip(&out).position(|(a, b)| a != b);
                return Err(format!(
                    "{}: weft and Halide differ (first at element {bad:?})",
                    app.name
                ));
            }
            println!(
                "| {} | {threads} | {:.2} | {:.2} | {:.2} |",
                app.name,
                best.as_secs_f64() * 1e3,
                peer.best.as_secs_f64() * 1e3,
                best.as_secs_f64() / peer.best.as_secs_f64()
            );
            if threads == 1 {
                compiles.push((app.name, cold, hit, peer.compile));
            }
        }
    }
    println!();
    println!("| app | weft cold JIT (ms): lower, check, compile | weft cache hit (ms) | Halide JIT (ms) |");
    println!("|---|---|---|---|");
    for (name, cold, hit, peer) in compiles {
        println!(
            "| {name} | {:.0} | {:.2} | {:.0} |",
            cold.as_secs_f64() * 1e3,
            hit.as_secs_f64() * 1e3,
            peer.as_secs_f64() * 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
