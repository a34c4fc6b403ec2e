//! SGEMM side by side with numpy's OpenBLAS (single-threaded), in one run.
//!
//! The weft kernel is `sgemm_sched` of `examples/sgemm.weft`: the naive three-loop SGEMM scheduled
//! with loop and buffer rewrites only, compiled by the JIT (`cc -O3 -march=native`). numpy runs
//! from the virtual environment made by `bench/peers/setup.sh` (default `.venv-peers`, or
//! `WEFT_PEERS_VENV`), with `OPENBLAS_NUM_THREADS=1`, in a child process; numpy and weft calls
//! alternate, and the table reports medians and the median of the per-pair ratios.
//!
//! Run: `bash bench/peers/setup.sh && cargo run --release -p weft --bin weft-sgemm-bench`

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;
use weft::jit::{Arg, BufArg, Jit};

const SIZES: [usize; 3] = [64, 256, 1024];

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let t = Instant::now();
    // WEFT_SGEMM_FILE / WEFT_SGEMM_PROC select another schedule (for trying variants).
    let file = std::env::var("WEFT_SGEMM_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join("examples/sgemm.weft"));
    let name = std::env::var("WEFT_SGEMM_PROC").unwrap_or_else(|_| "sgemm_sched".into());
    let program = weft::load(&file)?;
    let load = t.elapsed();
    let proc = program
        .module
        .proc(&name)
        .ok_or_else(|| format!("{} has no proc {name}", file.display()))?
        .clone();
    let jit = Jit::new()?;
    let module = jit.compile(std::slice::from_ref(&proc))?;
    let kernel = module.kernel(&name)?;
    println!(
        "weft: {name} of {} parsed, checked and scheduled in {:.1} ms; compiler: {} {}",
        file.display(),
        load.as_secs_f64() * 1e3,
        jit.compiler(),
        jit.all_flags().join(" ")
    );

    // numpy in a child process that times one matmul per request, alternated with weft calls.
    let venv = std::env::var("WEFT_PEERS_VENV").unwrap_or_else(|_| ".venv-peers".into());
    let python = root.join(&venv).join("bin/python");
    let mut child = Command::new(&python)
        .arg(root.join("bench/peers/numpy_sgemm.py"))
        .env("OPENBLAS_NUM_THREADS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot run {} ({e}); run bash bench/peers/setup.sh first",
                python.display()
            )
        })?;
    let mut to_numpy = child.stdin.take().ok_or("no stdin")?;
    let mut from_numpy = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut numpy_time = |n: usize| -> Result<f64, Box<dyn std::error::Error>> {
        writeln!(to_numpy, "{n}")?;
        let mut line = String::new();
        from_numpy.read_line(&mut line)?;
        line.trim()
            .parse::<f64>()
            .map_err(|_| format!("numpy answered `{}`", line.trim()).into())
    };

    println!();
    println!("| n | weft GFLOP/s | OpenBLAS (numpy) GFLOP/s | weft / OpenBLAS |");
    println!("|---|---|---|---|");
    for n in SIZES {
        let a: Vec<f32> = (0..n * n).map(|k| ((k * 7) % 17) as f32 / 16.0).collect();
        let b: Vec<f32> = (0..n * n).map(|k| ((k * 5) % 13) as f32 / 16.0).collect();
        let mut c = vec![0f32; n * n];
        let call = |c: &mut [f32]| {
            kernel.call(&mut [
                Arg::Int(n as i64),
                Arg::Int(n as i64),
                Arg::Int(n as i64),
                Arg::Buf(BufArg::from_slice(&a, &[n, n])),
                Arg::Buf(BufArg::from_slice(&b, &[n, n])),
                Arg::Buf(BufArg::new(c, &[n, n])),
            ])
        };
        let flops = 2.0 * (n as f64).powi(3);
        let reps = ((4e9 / flops) as usize).clamp(11, 200);
        let (mut times, mut np_times, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        numpy_time(n)?;
        for _ in 0..reps + 1 {
            let np = numpy_time(n)?;
            let t = Instant::now();
            call(&mut c)?;
            let w = t.elapsed().as_secs_f64();
            times.push(w);
            np_times.push(np);
            ratios.push(np / w);
        }
        // One more call on a zeroed C, checked against dot products computed here (sampled).
        c.iter_mut().for_each(|x| *x = 0.0);
        call(&mut c)?;
        for s in 0..97 {
            let (i, j) = ((s * 31 + 7) % n, (s * 57 + 3) % n);
            let want: f64 = (0..n)
                .map(|k| a[i * n + k] as f64 * b[k * n + j] as f64)
                .sum();
            let got = c[i * n + j] as f64;
            if (want - got).abs() > 1e-3 * want.abs().max(1.0) {
                return Err(format!("n = {n}: C[{i}, {j}] = {got}, expected {want}").into());
            }
        }
        // Medians: this VM's clock and speed jump now and then; each ratio compares a weft call
        // with the numpy call just before it.
        let (w, o, r) = (median(&times), median(&np_times), median(&ratios));
        println!(
            "| {n} | {:.1} | {:.1} | {r:.2} |",
            flops / w / 1e9,
            flops / o / 1e9
        );
    }
    Ok(())
}
