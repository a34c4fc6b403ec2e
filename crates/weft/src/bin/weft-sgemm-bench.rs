//! SGEMM (`C += A·B`, row-major f32) side by side with OpenBLAS, MKL and BLIS, in one process.
//!
//! The peers are the shared libraries that `bench/peers/setup.sh` installs from PyPI into a
//! virtual environment (default `.venv-peers`, or `WEFT_PEERS_VENV`): numpy's OpenBLAS
//! (`scipy_cblas_sgemm64_`), MKL's `libmkl_rt` (`cblas_sgemm`, on the GNU OpenMP threading layer,
//! the runtime weft's parallel loops use) and the `blis` package's BLIS (`bli_sgemm`). They are
//! loaded with libloading and called directly, like the weft kernel, so no interpreter overhead
//! enters any time. Every library is set to the same thread count (`--threads`). At one thread
//! Exo's x86 SGEMM joins them: exo-lang's apps/x86/sgemm schedule, ported to the exo-lang 1.0.0
//! package (bench/peers/exo/sgemm.py), compiled by `setup.sh` with exocc and the C compiler.
//!
//! For each shape, the libraries are called in turn, round after round, each round in a new order
//! (so all see the same machine conditions); the table reports each one's median GFLOP/s and
//! weft's ratio to the fastest peer. Every library's result is checked in every run: C starts as
//! a known matrix, and after one call sampled cells are compared with dot products computed
//! here in f64. The run starts with the machine's FMA peak, measured by `fma_peak` of
//! `examples/fma_peak.weft` (`fma_peak_avx2` on a CPU without AVX-512).
//!
//! Run: `bash bench/peers/setup.sh && cargo run --release -p weft --bin weft-sgemm-bench`
//! Options: `--threads N` (default 1), `--shapes MxNxK,...`, `--proc NAME` (the weft kernel,
//! default `sgemm_avx512`, or `sgemm_avx512_par` with two threads; `sgemm_avx2` and
//! `sgemm_avx2_par` on a CPU without AVX-512), `--file PATH` (default
//! `examples/sgemm.weft`), `--seconds S` (time per shape and library, default 0.3), `--variant
//! PATH` (a second file with the same proc, a schedule being tried: timed in the same rounds, and
//! reported with its ratio to weft's, which a comparison across runs on this VM cannot give).

mod allocator;

mod support;

use libloading::Library;
use std::path::{Path, PathBuf};
use std::time::Instant;
use support::{find_lib, median, opt, python_library, site_packages};
use weft::jit::{Arg, BufArg, Kernel};

/// Squares, then shapes that real callers use and register tiles do not divide.
const SHAPES: &[(usize, usize, usize)] = &[
    (64, 64, 64),
    (128, 128, 128),
    (256, 256, 256),
    (512, 512, 512),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    // primes
    (97, 97, 97),
    (251, 251, 251),
    (509, 509, 509),
    (1021, 1021, 1021),
    // one below and one above multiples of a 6 x 64 register tile
    (383, 383, 383),
    (385, 385, 385),
    (767, 1023, 511),
    (769, 1025, 513),
    // tall and skinny, short and wide (a few rows: a batch of inputs through a layer)
    (4096, 32, 256),
    (4096, 64, 64),
    (32, 4096, 256),
    (16, 1024, 1024),
    (8, 2048, 512),
    (4, 2048, 512),
    (1, 4096, 1024),
    // small K
    (1024, 1024, 16),
    (512, 512, 8),
    // tiny
    (1, 1, 1),
    (7, 5, 3),
];

type Sgemm = Box<dyn Fn(usize, usize, usize, &[f32], &[f32], &mut [f32])>;

struct Peer {
    name: &'static str,
    call: Sgemm,
    /// Keeps the library loaded while `call` uses it.
    _lib: Library,
}

const CBLAS_ROW_MAJOR: i32 = 101;
const CBLAS_NO_TRANS: i32 = 111;

/// A peer calling `cblas_sgemm` (row-major, no transposes, alpha = beta = 1) through `$symbol`
/// of `$lib`, whose integers are `$int`.
macro_rules! cblas_peer {
    ($lib:expr, $name:expr, $symbol:expr, $int:ty) => {{
        type Gemm = unsafe extern "C" fn(
            i32,
            i32,
            i32,
            $int,
            $int,
            $int,
            f32,
            *const f32,
            $int,
            *const f32,
            $int,
            f32,
            *mut f32,
            $int,
        );
        let f: Gemm = *$lib.get::<Gemm>($symbol).map_err(|e| e.to_string())?;
        Peer {
            name: $name,
            call: Box::new(move |m, n, k, a, b, c| {
                let (m, n, k) = (m as $int, n as $int, k as $int);
                f(
                    CBLAS_ROW_MAJOR,
                    CBLAS_NO_TRANS,
                    CBLAS_NO_TRANS,
                    m,
                    n,
                    k,
                    1.0,
                    a.as_ptr(),
                    k,
                    b.as_ptr(),
                    n,
                    1.0,
                    c.as_mut_ptr(),
                    n,
                )
            }),
            _lib: $lib,
        }
    }};
}

fn load_peers(venv: &Path, threads: usize) -> Result<Vec<Peer>, String> {
    let site = site_packages(venv).ok_or_else(|| {
        format!(
            "no site-packages under {}; run bash bench/peers/setup.sh first",
            venv.display()
        )
    })?;
    let mut peers = Vec::new();
    // SAFETY (all four): the libraries are the peers' own releases (Exo's: its compiler's output);
    // the signatures are their documented C interfaces (CBLAS with 64-bit integers for
    // scipy-openblas, LP64 CBLAS for mkl_rt, BLIS's typed API with 64-bit dim_t/inc_t, the header
    // exocc writes for sgemm_exo), and every pointer passed points into buffers of the sizes those
    // calls read and write (Exo's kernel asserts sizes of at least 1, which every shape has).
    unsafe {
        let path = find_lib(&site.join("numpy.libs"), "libscipy_openblas")
            .ok_or("numpy's OpenBLAS not found")?;
        let lib = Library::new(&path).map_err(|e| e.to_string())?;
        let set: libloading::Symbol<unsafe extern "C" fn(i32)> = lib
            .get(b"scipy_openblas_set_num_threads64_")
            .map_err(|e| e.to_string())?;
        set(threads as i32);
        peers.push(cblas_peer!(lib, "OpenBLAS", b"scipy_cblas_sgemm64_", i64));

        let path = find_lib(&venv.join("lib"), "libmkl_rt").ok_or("MKL not found")?;
        let lib = Library::new(&path).map_err(|e| e.to_string())?;
        // MKL_THREADING_GNU: MKL's threads are libgomp's, as weft's are.
        let layer: libloading::Symbol<unsafe extern "C" fn(i32) -> i32> = lib
            .get(b"MKL_Set_Threading_Layer")
            .map_err(|e| e.to_string())?;
        layer(3);
        let set: libloading::Symbol<unsafe extern "C" fn(i32)> =
            lib.get(b"MKL_Set_Num_Threads").map_err(|e| e.to_string())?;
        set(threads as i32);
        peers.push(cblas_peer!(lib, "MKL", b"cblas_sgemm", i32));

        // The `blis` package's library is a Python extension: the symbols it refers to come
        // from libpython, loaded first for the process (no interpreter is started; bli_sgemm
        // calls none of it).
        let libpython = python_library(venv)?;
        let python = libloading::os::unix::Library::open(
            Some(&libpython),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
        )
        .map_err(|e| e.to_string())?;
        std::mem::forget(python);
        let path = find_lib(&site.join("blis"), "cy.").ok_or("BLIS not found")?;
        let lib = Library::new(&path).map_err(|e| e.to_string())?;
        let init: libloading::Symbol<unsafe extern "C" fn()> =
            lib.get(b"bli_init").map_err(|e| e.to_string())?;
        init();
        let set: libloading::Symbol<unsafe extern "C" fn(i64)> = lib
            .get(b"bli_thread_set_num_threads")
            .map_err(|e| e.to_string())?;
        set(threads as i64);
        type BliGemm = unsafe extern "C" fn(
            i32,
            i32,
            i64,
            i64,
            i64,
            *const f32,
            *const f32,
            i64,
            i64,
            *const f32,
            i64,
            i64,
            *const f32,
            *mut f32,
            i64,
            i64,
        );
        let f: BliGemm = *lib
            .get::<BliGemm>(b"bli_sgemm")
            .map_err(|e| e.to_string())?;
        peers.push(Peer {
            name: "BLIS",
            call: Box::new(move |m, n, k, a, b, c| {
                let one = 1.0f32;
                f(
                    0,
                    0,
                    m as i64,
                    n as i64,
                    k as i64,
                    &one,
                    a.as_ptr(),
                    k as i64,
                    1,
                    b.as_ptr(),
                    n as i64,
                    1,
                    &one,
                    c.as_mut_ptr(),
                    n as i64,
                    1,
                )
            }),
            _lib: lib,
        });

        // Exo's x86 SGEMM (bench/peers/exo/sgemm.py, built by setup.sh): one thread, as Exo's
        // app is; its `int_fast32_t` sizes are 64-bit on x86-64 Linux. Its kernels are AVX-512
        // only (without it, setup.sh does not build them).
        let path = venv.join("exo-build/libexo_sgemm.so");
        if threads == 1 && path.is_file() && support::has_avx512() {
            let lib = Library::new(&path).map_err(|e| e.to_string())?;
            type ExoGemm = unsafe extern "C" fn(
                *mut std::ffi::c_void,
                i64,
                i64,
                i64,
                *const f32,
                *const f32,
                *mut f32,
            );
            let f: ExoGemm = *lib
                .get::<ExoGemm>(b"sgemm_exo")
                .map_err(|e| e.to_string())?;
            peers.push(Peer {
                name: "Exo",
                call: Box::new(move |m, n, k, a, b, c| {
                    f(
                        std::ptr::null_mut(),
                        m as i64,
                        n as i64,
                        k as i64,
                        a.as_ptr(),
                        b.as_ptr(),
                        c.as_mut_ptr(),
                    )
                }),
                _lib: lib,
            });
        }
    }
    Ok(peers)
}

/// `times` calls of the weft kernel on the same arguments (made once, as a caller's loop would).
#[allow(clippy::too_many_arguments)]
fn weft_call(
    kernel: &Kernel,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    times: usize,
) {
    let mut args = [
        Arg::Int(m as i64),
        Arg::Int(n as i64),
        Arg::Int(k as i64),
        Arg::Buf(BufArg::from_slice(a, &[m, k])),
        Arg::Buf(BufArg::from_slice(b, &[k, n])),
        Arg::Buf(BufArg::new(c, &[m, n])),
    ];
    for _ in 0..times {
        kernel.call(&mut args).expect("the weft kernel runs");
    }
}

/// Sampled cells of `c` (which started as `c0`) against `c0 + A·B` computed in f64.
fn check(
    who: &str,
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    c0: &[f32],
    c: &[f32],
) -> Result<(), String> {
    for s in 0..97 {
        let (i, j) = ((s * 31 + 7) % m, (s * 57 + 3) % n);
        let want: f64 = c0[i * n + j] as f64
            + (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum::<f64>();
        let got = c[i * n + j] as f64;
        if (want - got).abs() > 1e-4 * (k as f64) * want.abs().max(1.0) {
            return Err(format!(
                "{who} at {m}x{n}x{k}: C[{i}, {j}] = {got}, expected {want}"
            ));
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| opt(&args, name);
    let threads: usize = opt("--threads").map_or(Ok(1), |s| s.parse())?;
    let seconds: f64 = opt("--seconds").map_or(Ok(0.3), |s| s.parse())?;
    let file = opt("--file").map_or_else(|| root.join("examples/sgemm.weft"), PathBuf::from);
    let name = opt("--proc").unwrap_or_else(|| {
        let isa = if support::has_avx512() {
            "avx512"
        } else {
            "avx2"
        };
        let cores = if threads > 1 { "_par" } else { "" };
        format!("sgemm_{isa}{cores}")
    });
    let shapes: Vec<(usize, usize, usize)> = match opt("--shapes") {
        None => SHAPES.to_vec(),
        Some(s) => s
            .split(',')
            .map(|t| {
                let d: Vec<usize> = t.split('x').filter_map(|x| x.parse().ok()).collect();
                match d[..] {
                    [m, n, k] => Ok((m, n, k)),
                    _ => Err(format!("shape `{t}` is not MxNxK")),
                }
            })
            .collect::<Result<_, _>>()?,
    };

    support::set_thread_env(threads);
    let venv = support::peers_venv(&root);
    let peers = load_peers(&venv, threads)?;
    let (kernel, peak) = support::weft_kernel(&root, &file, &name, threads)?;
    let variant = match opt("--variant") {
        Some(path) => Some(support::weft_kernel(&root, Path::new(&path), &name, threads)?.0),
        None => None,
    };
    let mut names: Vec<&str> = peers.iter().map(|p| p.name).collect();
    if variant.is_some() {
        names.push("variant");
    }
    println!(
        "| M x N x K | weft GFLOP/s | {} | weft / fastest | weft / peak |{}",
        names
            .iter()
            .map(|n| format!("{n} GFLOP/s"))
            .collect::<Vec<_>>()
            .join(" | "),
        if variant.is_some() {
            " variant / weft |"
        } else {
            ""
        }
    );
    println!(
        "|---|---|{}---|---|{}",
        "---|".repeat(names.len()),
        if variant.is_some() { "---|" } else { "" }
    );
    let mut worst = f64::MAX;
    for &(m, n, k) in &shapes {
        let a: Vec<f32> = (0..m * k)
            .map(|x| ((x * 7) % 17) as f32 / 16.0 - 0.5)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|x| ((x * 5) % 13) as f32 / 16.0 - 0.4)
            .collect();
        let c0: Vec<f32> = (0..m * n).map(|x| ((x * 3) % 11) as f32 / 8.0).collect();
        // Check every library once, from the same C.
        let mut c = c0.clone();
        weft_call(&kernel, m, n, k, &a, &b, &mut c, 1);
        check("weft", (m, n, k), &a, &b, &c0, &c)?;
        for p in &peers {
            let mut c = c0.clone();
            (p.call)(m, n, k, &a, &b, &mut c);
            check(p.name, (m, n, k), &a, &b, &c0, &c)?;
        }
        if let Some(v) = &variant {
            let mut c = c0.clone();
            weft_call(v, m, n, k, &a, &b, &mut c, 1);
            check("variant", (m, n, k), &a, &b, &c0, &c)?;
        }
        // Rounds of calls, all libraries in turn; each round calls each library `batch` times,
        // so that one timing is long enough for the clock.
        let flops = 2.0 * (m * n * k) as f64;
        let batch = ((2e6 / flops) as usize).clamp(1, 2000);
        let rounds = ((seconds * 100e9 / (flops * batch as f64)) as usize).clamp(5, 400);
        let mut c = c0.clone();
        let mut times = vec![Vec::new(); names.len() + 1];
        // Each round calls the libraries in a new order (the same in every run): one that runs
        // right after another libgomp user finds that pool's threads still spinning, and one
        // that runs after a long call of OpenBLAS or BLIS (own threads) finds them asleep
        // (waking one costs about 130 us on this VM), so a fixed order, or a rotated one,
        // would favour the same library every time.
        let mut order: Vec<usize> = (0..times.len()).collect();
        for round in 0..rounds {
            support::shuffle(&mut order, round as u64);
            for &lib in &order {
                let t = Instant::now();
                if lib == 0 {
                    weft_call(&kernel, m, n, k, &a, &b, &mut c, batch);
                } else if let Some(p) = peers.get(lib - 1) {
                    for _ in 0..batch {
                        (p.call)(m, n, k, &a, &b, &mut c);
                    }
                } else if let Some(v) = &variant {
                    weft_call(v, m, n, k, &a, &b, &mut c, batch);
                }
                times[lib].push(t.elapsed().as_secs_f64() / batch as f64);
            }
            // Keep C finite: it accumulates every call.
            if c[0].abs() > 1e6 {
                c.copy_from_slice(&c0);
            }
        }
        let gflops: Vec<f64> = times.iter().map(|t| flops / median(t) / 1e9).collect();
        let fastest = gflops[1..=peers.len()].iter().cloned().fold(0.0, f64::max);
        let ratio = gflops[0] / fastest;
        worst = worst.min(ratio);
        println!(
            "| {m} x {n} x {k} | {:.1} | {} | {ratio:.2} | {:.2} |{}",
            gflops[0],
            gflops[1..]
                .iter()
                .map(|g| format!("{g:.1}"))
                .collect::<Vec<_>>()
                .join(" | "),
            gflops[0] / peak,
            match variant {
                Some(_) => format!(" {:.2} |", gflops[names.len()] / gflops[0]),
                None => String::new(),
            }
        );
    }
    println!();
    println!("lowest weft / fastest peer: {worst:.2}");
    Ok(())
}
