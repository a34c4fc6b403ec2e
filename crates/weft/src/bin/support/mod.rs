//! What the side-by-side benchmarks share: finding the peers' libraries in the virtual
//! environment `bench/peers/setup.sh` makes, the FMA peak of this machine measured by a weft
//! kernel, medians, and command-line options.
//! Each benchmark uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;
use weft::jit::{Arg, BufArg, Jit, Kernel};

/// The value of `--name VALUE` among the command-line arguments.
pub fn opt(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The peers' virtual environment: `WEFT_PEERS_VENV`, or `.venv-peers` in the repository.
pub fn peers_venv(root: &Path) -> PathBuf {
    root.join(std::env::var("WEFT_PEERS_VENV").unwrap_or_else(|_| ".venv-peers".into()))
}

/// Every library's thread count, set before any of them starts a pool (OpenBLAS makes its pool
/// when it is loaded, and an idle pool spins on the other core).
pub fn set_thread_env(threads: usize) {
    for var in [
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "OMP_NUM_THREADS",
    ] {
        std::env::set_var(var, threads.to_string());
    }
    if threads > 1 {
        // Several thread pools share the cores: each must sleep between its calls rather than
        // spin (libgomp's, which weft, MKL and oneDNN use, and OpenBLAS's own), or the library
        // being timed waits for cores that idle pools hold. libgomp's threads spin a little
        // (10,000 rounds, microseconds) before they sleep: waking a sleeping thread took about
        // 130 us on this VM, more than a 256^3 SGEMM's whole time on two cores, so with no spin
        // at all every call of every libgomp library (weft's, MKL's) paid it.
        std::env::set_var("OMP_WAIT_POLICY", "PASSIVE");
        std::env::set_var("GOMP_SPINCOUNT", "10000");
        std::env::set_var("OPENBLAS_THREAD_TIMEOUT", "4");
    }
}

/// Shuffle `v` (Fisher-Yates) with a small generator seeded by `seed`: the same order for the
/// same seed in every run.
pub fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in (1..v.len()).rev() {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The one file in `dir` whose name starts with `prefix` and contains `.so`.
pub fn find_lib(dir: &Path, prefix: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.contains(".so"))
        })
}

pub fn site_packages(venv: &Path) -> Option<PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
}

/// The shared libpython of the virtual environment's Python, as its `sysconfig` names it.
pub fn python_library(venv: &Path) -> Result<PathBuf, String> {
    let out = std::process::Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sysconfig as s; print(s.get_config_var('LIBDIR') + '/' + s.get_config_var('LDLIBRARY'))",
        ])
        .output()
        .map_err(|e| format!("cannot run the peers' Python: {e}"))?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "the peers' Python has no shared libpython ({}), which the `blis` package needs",
            path.display()
        ))
    }
}

/// Whether this CPU runs AVX-512 code: the benchmarks' default kernels and the FMA peak are then
/// the 16-lane ones, otherwise the AVX2 ones (8 lanes).
pub fn has_avx512() -> bool {
    weft::jit::isa::missing(&["avx512f".to_string()]).is_none()
}

/// GFLOP/s of `fma_peak` (examples/fma_peak.weft): independent chains of 16-lane FMAs, or
/// `fma_peak_avx2`'s chains of 8 lanes on a CPU without AVX-512.
pub fn fma_peak(jit: &Jit, root: &Path, threads: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let program = weft::load(&root.join("examples/fma_peak.weft"))?;
    let (name, flops_per_iteration) = match (has_avx512(), threads > 1) {
        (true, false) => ("fma_peak", 24.0 * 16.0 * 2.0),
        (true, true) => ("fma_peak_par", 24.0 * 16.0 * 2.0),
        (false, false) => ("fma_peak_avx2", 12.0 * 8.0 * 2.0),
        (false, true) => ("fma_peak_avx2_par", 12.0 * 8.0 * 2.0),
    };
    let proc = program.module.proc(name).ok_or("no fma_peak")?.clone();
    let module = jit.compile(std::slice::from_ref(&proc))?;
    let kernel = module.kernel(name)?;
    let n = 2_000_000i64;
    let mut x = vec![0f32; 2 * 24 * 16];
    let y = vec![1f32; 16];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        kernel.call(&mut [
            Arg::Int(n),
            Arg::Buf(BufArg::new(&mut x, &[2, 24, 16])),
            Arg::Buf(BufArg::from_slice(&y, &[16])),
        ])?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    let chains = if threads > 1 { 2.0 } else { 1.0 };
    Ok(chains * n as f64 * flops_per_iteration / best / 1e9)
}

/// The weft kernel `name` of `file`: loaded (parsed, checked, scheduled) and compiled, with the
/// machine's FMA peak at `threads` threads, both reported on standard output.
pub fn weft_kernel(
    root: &Path,
    file: &Path,
    name: &str,
    threads: usize,
) -> Result<(Kernel, f64), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let program = weft::load(file)?;
    let load = t.elapsed();
    let proc = program
        .module
        .proc(name)
        .ok_or_else(|| format!("{} has no proc {name}", file.display()))?
        .clone();
    let jit = Jit::new()?;
    let module = jit.compile(std::slice::from_ref(&proc))?;
    let kernel = module.kernel(name)?;
    let peak = fma_peak(&jit, root, threads)?;
    println!(
        "weft: {name} of {} loaded (parsed, checked, scheduled) in {:.1} ms; compiler: {} {}",
        file.display(),
        load.as_secs_f64() * 1e3,
        jit.compiler(),
        jit.all_flags().join(" ")
    );
    println!("threads: {threads}; FMA peak (fma_peak): {peak:.1} GFLOP/s");
    println!();
    Ok((kernel, peak))
}
