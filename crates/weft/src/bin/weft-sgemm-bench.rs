//! SGEMM side by side with numpy's OpenBLAS (single-threaded), in one run.
//!
//! The weft kernel is `sgemm_sched` of `examples/sgemm.weft`: the naive three-loop SGEMM scheduled
//! with loop and buffer rewrites only, compiled by the JIT (`cc -O3 -march=native`). numpy runs
//! from the virtual environment made by `bench/peers/setup.sh` (default `.venv-peers`, or
//! `WEFT_PEERS_VENV`), with `OPENBLAS_NUM_THREADS=1`.
//!
//! Run: `bash bench/peers/setup.sh && cargo run --release -p weft --bin weft-sgemm-bench`

use std::path::Path;
use std::process::Command;
use std::time::Instant;
use weft::jit::{Arg, BufArg, Jit};

const SIZES: [usize; 3] = [64, 256, 1024];

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

    // numpy first, in one process, so that both are measured in this run.
    let venv = std::env::var("WEFT_PEERS_VENV").unwrap_or_else(|_| ".venv-peers".into());
    let python = root.join(&venv).join("bin/python");
    let sizes: Vec<String> = SIZES.iter().map(|n| n.to_string()).collect();
    let out = Command::new(&python)
        .arg(root.join("bench/peers/numpy_sgemm.py"))
        .args(&sizes)
        .env("OPENBLAS_NUM_THREADS", "1")
        .output()
        .map_err(|e| {
            format!(
                "cannot run {} ({e}); run bash bench/peers/setup.sh first",
                python.display()
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "numpy benchmark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let numpy: Vec<f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    if numpy.len() != SIZES.len() {
        return Err("numpy benchmark printed an unexpected answer".into());
    }

    println!();
    println!("| n | weft GFLOP/s | OpenBLAS (numpy) GFLOP/s | weft / OpenBLAS |");
    println!("|---|---|---|---|");
    for (n, np_time) in SIZES.iter().zip(numpy) {
        let n = *n;
        let a: Vec<f32> = (0..n * n).map(|k| ((k * 7) % 17) as f32 / 16.0).collect();
        let b: Vec<f32> = (0..n * n).map(|k| ((k * 5) % 13) as f32 / 16.0).collect();
        let mut c = vec![0f32; n * n];
        let flops = 2.0 * (n as f64).powi(3);
        let reps = ((4e9 / flops) as usize).clamp(7, 200);
        let mut best = f64::INFINITY;
        for _ in 0..reps + 1 {
            let mut args = [
                Arg::Int(n as i64),
                Arg::Int(n as i64),
                Arg::Int(n as i64),
                Arg::Buf(BufArg::from_slice(&a, &[n, n])),
                Arg::Buf(BufArg::from_slice(&b, &[n, n])),
                Arg::Buf(BufArg::new(&mut c, &[n, n])),
            ];
            let t = Instant::now();
            kernel.call(&mut args)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        // One more call on a zeroed C, checked against dot products computed here (sampled).
        c.iter_mut().for_each(|x| *x = 0.0);
        let mut args = [
            Arg::Int(n as i64),
            Arg::Int(n as i64),
            Arg::Int(n as i64),
            Arg::Buf(BufArg::from_slice(&a, &[n, n])),
            Arg::Buf(BufArg::from_slice(&b, &[n, n])),
            Arg::Buf(BufArg::new(&mut c, &[n, n])),
        ];
        kernel.call(&mut args)?;
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
        let (w, o) = (flops / best / 1e9, flops / np_time / 1e9);
        println!("| {n} | {w:.1} | {o:.1} | {:.2} |", w / o);
    }
    Ok(())
}
