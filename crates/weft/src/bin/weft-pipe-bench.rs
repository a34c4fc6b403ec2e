//! Pipelines against Halide 21 (issue 9), side by side on the same input in one run: weft's
//! lowered, checked and JIT-compiled pipeline, and the same algorithm with the Halide app's
//! manual schedule in Halide's Python JIT (`bench/peers/halide_apps.py`). Outputs are compared
//! (integers bit for bit, floats within a stated tolerance); times (best of the runs) on 1 and 2 threads, and compile times, are reported.
//!
//! Run: `bash bench/peers/setup.sh && cargo run --release -p weft --bin weft-pipe-bench`
//! (`--size 6400x4800`, `--reps 10`, `--python .venv-peers/bin/python`, `--apps blur,harris`).

mod allocator;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use weft::jit::{Arg, BufArg, Jit};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An app: its schedule in `examples/halide_apps.weft` (the Halide app's manual schedule in
/// weft's directives), and the layout of its input and output, as `bench/peers/halide_apps.py`
/// reads and writes them.
struct App {
    /// The app's name in `halide_apps.py`; the weft schedule is `NAME_fast`.
    name: &'static str,
    /// Pixels around the image that the input holds (an app without a boundary condition).
    border: usize,
    /// Pixels of zeros around that (harris: as its `filter.cpp` pads the image).
    pad: usize,
    input: Layout,
    output: Layout,
    /// The values of weft's parameters, in order, and the same as the peer's
    /// `--param NAME=VALUE` options.
    params: &'static [ParamValue],
    /// The largest difference of an integer output from the peer's (local_laplacian: its
    /// float arithmetic, rounded to u16 at the end, may round a contracted multiply-add the
    /// other way).
    int_tolerance: u16,
    peer_params: &'static [&'static str],
}

/// Element type and channels (`None`: a 2-D image) of an input or output.
#[derive(Clone, Copy)]
struct Layout {
    f32: bool,
    channels: Option<usize>,
}

const U16: Layout = u16s(None);

const fn u16s(channels: Option<usize>) -> Layout {
    Layout {
        f32: false,
        channels,
    }
}

/// A scalar parameter: `i32` parameters are passed by value, others as 0-d buffers.
#[derive(Clone, Copy)]
enum ParamValue {
    I32(i64),
    F32(f32),
}

fn f32s(channels: Option<usize>) -> Layout {
    Layout {
        f32: true,
        channels,
    }
}

fn apps() -> Vec<App> {
    vec![
        App {
            name: "blur",
            border: 1,
            pad: 0,
            input: U16,
            output: U16,
            params: &[],
            int_tolerance: 0,
            peer_params: &[],
        },
        App {
            name: "unsharp",
            border: 0,
            pad: 0,
            input: f32s(Some(3)),
            output: f32s(Some(3)),
            params: &[],
            int_tolerance: 0,
            peer_params: &[],
        },
        App {
            name: "harris",
            border: 0,
            pad: 32,
            input: f32s(Some(3)),
            output: f32s(None),
            params: &[],
            int_tolerance: 0,
            peer_params: &[],
        },
        App {
            name: "bilateral_grid",
            border: 0,
            pad: 0,
            input: f32s(None),
            output: f32s(None),
            // 10 range cells: Halide's r_sigma 0.1 (1 / 0.1 is 10 in f32).
            params: &[ParamValue::I32(10)],
            int_tolerance: 0,
            peer_params: &["r_sigma=0.1"],
        },
        App {
            name: "interpolate",
            border: 0,
            pad: 0,
            input: f32s(Some(4)),
            output: f32s(Some(3)),
            params: &[],
            int_tolerance: 0,
            peer_params: &[],
        },
        App {
            name: "local_laplacian",
            border: 0,
            pad: 0,
            input: u16s(Some(3)),
            output: u16s(Some(3)),
            // 8 intensity levels; the peer divides alpha by levels - 1 (as the app's
            // process.cpp does), weft's pipeline is given the quotient.
            params: &[
                ParamValue::I32(8),
                ParamValue::F32(1.0 / 7.0),
                ParamValue::F32(1.0),
            ],
            int_tolerance: 1,
            peer_params: &["levels=8", "alpha=1", "beta=1"],
        },
    ]
}

/// The values of a buffer (row-major, x innermost, then y, then channels).
#[derive(Clone, PartialEq)]
enum Data {
    U16(Aligned<u16>),
    F32(Aligned<f32>),
}

/// Elements whose first lies on a 64-byte boundary, as in Halide's buffers (`halide_malloc`):
/// a `Vec` of that size from the system allocator may start 16 bytes past one, and vector
/// loads and stores that straddle cache lines would time the allocator, not the kernel.
struct Aligned<T> {
    storage: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Copy + Default> FromIterator<T> for Aligned<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        Aligned::copied(&items.into_iter().collect::<Vec<T>>(), false)
    }
}

impl<T: Copy + Default> Aligned<T> {
    /// `values` in aligned storage; with `huge_pages`, storage of 4 MiB or more is advised
    /// into transparent huge pages before it is first touched, as numpy does for its arrays
    /// (so the peer's input, a numpy array, has them: 2.x, on Linux).
    fn copied(values: &[T], huge_pages: bool) -> Self {
        let len = values.len();
        let slack = 64 / std::mem::size_of::<T>();
        let mut storage: Vec<T> = Vec::with_capacity(len + slack);
        let bytes = (len + slack) * std::mem::size_of::<T>();
        if huge_pages && bytes >= 1 << 22 {
            advise_huge_pages(storage.as_mut_ptr() as usize, bytes);
        }
        storage.resize(len + slack, T::default());
        let start = storage.as_ptr().align_offset(64).min(slack);
        storage[start..start + len].copy_from_slice(values);
        Aligned {
            storage,
            start,
            len,
        }
    }
}

/// `madvise(MADV_HUGEPAGE)` on the whole pages within `[addr, addr + bytes)`; a hint, so a
/// kernel that refuses it (or another OS) leaves ordinary pages.
#[cfg(target_os = "linux")]
fn advise_huge_pages(addr: usize, bytes: usize) {
    const MADV_HUGEPAGE: i32 = 14;
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    let (lo, hi) = ((addr + 4095) & !4095, (addr + bytes) & !4095);
    if hi > lo {
        // SAFETY: the range lies within an allocation this process owns (whole pages of a
        // Vec's capacity); the advice changes how pages are backed, never their contents.
        unsafe { madvise(lo as *mut std::ffi::c_void, hi - lo, MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_addr: usize, _bytes: usize) {}

impl<T: Copy + Default> Clone for Aligned<T> {
    /// Aligned again: a copy of the storage may lie elsewhere relative to a boundary.
    fn clone(&self) -> Self {
        self.iter().copied().collect()
    }
}

impl<T: PartialEq> PartialEq for Aligned<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T> std::ops::Deref for Aligned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.storage[self.start..self.start + self.len]
    }
}

impl<T> std::ops::DerefMut for Aligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

impl Data {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Data::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    fn from_bytes(b: &[u8], f32: bool) -> Data {
        if f32 {
            Data::F32(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )
        } else {
            Data::U16(
                b.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            )
        }
    }

    fn arg(&mut self, shape: &[usize]) -> Arg<'_> {
        match self {
            Data::U16(v) => Arg::Buf(BufArg::new(v, shape)),
            Data::F32(v) => Arg::Buf(BufArg::new(v, shape)),
        }
    }

    /// Where `self` (weft) and `peer` (Halide) differ beyond the tolerance (integers: by more
    /// than `int_tolerance`; floats: 1e-4 relative plus 1e-5 of the largest magnitude, for the
    /// rounding of contracted multiply-adds), and the largest difference.
    fn compare(&self, peer: &Data, int_tolerance: u16) -> Result<f64, String> {
        match (self, peer) {
            (Data::U16(a), Data::U16(b)) if a.len() == b.len() => {
                let worst = a.iter().zip(b.iter()).map(|(x, y)| x.abs_diff(*y)).max();
                match a
                    .iter()
                    .zip(b.iter())
                    .position(|(x, y)| x.abs_diff(*y) > int_tolerance)
                {
                    None => Ok(worst.unwrap_or(0) as f64),
                    Some(k) => Err(format!("differ at element {k}: {} and {}", a[k], b[k])),
                }
            }
            (Data::F32(a), Data::F32(b)) if a.len() == b.len() => {
                let scale = b.iter().fold(0f64, |m, y| m.max((*y as f64).abs()));
                let mut worst = 0f64;
                for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                    let d = (*x as f64 - *y as f64).abs();
                    if d.is_nan() || d > 1e-4 * (*y as f64).abs() + 1e-5 * scale {
                        return Err(format!("differ at element {k}: {x} and {y}"));
                    }
                    worst = worst.max(d);
                }
                Ok(worst)
            }
            _ => Err("outputs of different types or sizes".into()),
        }
    }
}

/// The input: `(w + 2 border + 2 pad) x (h + ...)` pixels per channel, the pad zero.
fn input_data(app: &App, (w, h): (usize, usize)) -> (Data, Vec<usize>) {
    let (b, p) = (app.border, app.pad);
    let (fw, fh) = (w + 2 * b, h + 2 * b);
    let (tw, th) = (fw + 2 * p, fh + 2 * p);
    let c = app.input.channels.unwrap_or(1);
    let mut shape = vec![th, tw];
    if let Some(c) = app.input.channels {
        shape.insert(0, c);
    }
    let hash = |i: usize| (i as u64).wrapping_mul(2654435761) >> 11;
    let inside = |k: usize| {
        let (x, y) = (k % tw, (k / tw) % th);
        (p..p + fw).contains(&x) && (p..p + fh).contains(&y)
    };
    let n = c * tw * th;
    // In huge pages, as the peer's numpy input is.
    let data = if app.input.f32 {
        let values: Vec<f32> = (0..n)
            .map(|k| {
                if inside(k) {
                    (hash(k) & 0xffff) as f32 / 65536.0
                } else {
                    0.0
                }
            })
            .collect();
        Data::F32(Aligned::copied(&values, true))
    } else {
        let values: Vec<u16> = (0..n).map(|k| hash(k) as u16 & 0x3fff).collect();
        Data::U16(Aligned::copied(&values, true))
    };
    (data, shape)
}

/// The input as the peer reads it: without the pad, which it adds itself.
fn peer_input(app: &App, data: &Data, shape: &[usize]) -> Data {
    let p = app.pad;
    let (th, tw) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let keep = |k: &usize| {
        let (x, y) = (k % tw, (k / tw) % th);
        (p..tw - p).contains(&x) && (p..th - p).contains(&y)
    };
    match data {
        Data::U16(v) => Data::U16((0..v.len()).filter(keep).map(|k| v[k]).collect()),
        Data::F32(v) => Data::F32((0..v.len()).filter(keep).map(|k| v[k]).collect()),
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
    out: Data,
}

fn halide(
    python: &Path,
    app: &App,
    out_f32: bool,
    input: &Path,
    (w, h): (usize, usize),
    threads: i32,
    reps: usize,
) -> Result<Peer, String> {
    let out_path = input.with_extension(format!("halide{threads}.raw"));
    let script = root().join("bench/peers/halide_apps.py");
    let o = Command::new(python)
        .arg(&script)
        .arg(app.name)
        .args(app.peer_params.iter().flat_map(|p| ["--param", p]))
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
        out: Data::from_bytes(&bytes, out_f32),
    })
}

fn main() -> Result<(), String> {
    let mut size = (6400usize, 4800usize);
    let mut reps = 10usize;
    let mut python = root().join(".venv-peers/bin/python");
    let mut only: Vec<String> = Vec::new();
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
            ("--apps", Some(v)) => only = v.split(',').map(str::to_string).collect(),
            _ => return Err(format!("unknown argument {}", pair[0])),
        }
    }
    let tmp = std::env::temp_dir().join(format!("weft-pipe-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let program =
        weft::load(&root().join("examples/halide_apps.weft")).map_err(|e| e.to_string())?;
    println!("| app | threads | weft (ms) | Halide 21 (ms) | weft / Halide | largest difference |");
    println!("|---|---|---|---|---|---|");
    let mut compiles = Vec::new();
    for app in apps() {
        if !only.is_empty() && !only.iter().any(|o| o == app.name) {
            continue;
        }
        let sched = format!("{}_fast", app.name);
        // Cold: lower, check (every proof, the race proof too) and compile into an empty
        // cache; then a hit, which loads the shared object its entry names (no lowering, proofs or C).
        let jit = Jit::with_cache_dir(tmp.join("cache")).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let compiled = weft::pipeline::compile_named(&jit, &program, &sched)
            .map_err(|e| format!("{} does not compile: {e}", app.name))?;
        let cold = t0.elapsed();
        let t1 = Instant::now();
        let again = weft::pipeline::compile_named(&jit, &program, &sched)
            .map_err(|e| format!("{} does not compile: {e}", app.name))?;
        let hit = t1.elapsed();
        if compiled.cached || !again.cached {
            return Err("the pipeline cache did not behave".into());
        }
        let (module, derivation) = (compiled.module, compiled.derivation);
        let kernel = module.kernel(&sched).map_err(|e| e.to_string())?;
        let (w, h) = size;
        let (mut input, in_shape) = input_data(&app, size);
        let in_path = tmp.join(format!("{}.raw", app.name));
        std::fs::write(&in_path, peer_input(&app, &input, &in_shape).bytes())
            .map_err(|e| e.to_string())?;
        let mut out_shape = vec![h, w];
        if let Some(c) = app.output.channels {
            out_shape.insert(0, c);
        }
        let n: usize = out_shape.iter().product();
        let mut out = if app.output.f32 {
            Data::F32(std::iter::repeat_n(0.0, n).collect())
        } else {
            Data::U16(std::iter::repeat_n(0, n).collect())
        };
        let lo = -((app.border + app.pad) as i64);
        let mut float_params: Vec<Vec<f32>> = app
            .params
            .iter()
            .filter_map(|p| match p {
                ParamValue::F32(v) => Some(vec![*v]),
                ParamValue::I32(_) => None,
            })
            .collect();
        for threads in [1, 2] {
            set_threads(threads)?;
            let mut run = || -> Result<Duration, String> {
                let t = Instant::now();
                // Per dimension (x, y, c) its min and extent, then the buffer.
                let mut floats = float_params.iter_mut();
                let mut args: Vec<Arg> = Vec::new();
                for p in app.params {
                    args.push(match p {
                        ParamValue::I32(v) => Arg::Int(*v),
                        ParamValue::F32(_) => {
                            let v = floats.next().expect("one per f32 parameter");
                            Arg::Buf(BufArg::new(v, &[]))
                        }
                    });
                }
                for (d, &e) in in_shape.iter().rev().enumerate() {
                    args.push(Arg::Int(if d < 2 { lo } else { 0 }));
                    args.push(Arg::Int(e as i64));
                }
                args.push(input.arg(&in_shape));
                for &e in out_shape.iter().rev() {
                    args.push(Arg::Int(0));
                    args.push(Arg::Int(e as i64));
                }
                args.push(out.arg(&out_shape));
                weft::pipeline::push_derived(&derivation, &mut args).map_err(|e| e.to_string())?;
                kernel.call(&mut args).map_err(|e| e.to_string())?;
                Ok(t.elapsed())
            };
            run()?;
            let mut best = Duration::MAX;
            for _ in 0..reps {
                best = best.min(run()?);
            }
            let peer = halide(&python, &app, app.output.f32, &in_path, size, threads, reps)?;
            // Once more after the peer, so that a slow spell of the machine hits both.
            for _ in 0..reps {
                best = best.min(run()?);
            }
            let diff = out
                .compare(&peer.out, app.int_tolerance)
                .map_err(|e| format!("{}: weft and Halide {e}", app.name))?;
            println!(
                "| {} | {threads} | {:.2} | {:.2} | {:.2} | {diff:.1e} |",
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
