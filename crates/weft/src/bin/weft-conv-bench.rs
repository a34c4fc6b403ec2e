//! A convolution layer (NHWC, R x R window, stride 1, no padding, bias and ReLU, f32) side by
//! side with oneDNN and Exo, in one process.
//!
//! weft's kernel is `conv_avx512` of `examples/conv.weft` (`conv_avx2` on a CPU without
//! AVX-512, where Exo's kernel, AVX-512 code, is left out); its inputs are the Exo paper's layout:
//! images `[N, H + R - 1, W + R - 1, C]`, weights `[R, R, C, K]` (HWIO), bias `[K]`, output
//! `[N, H, W, K]`. The peer is oneDNN's convolution primitive (the `onednn-cpu-gomp` package that
//! `bench/peers/setup.sh` installs: libdnnl on GNU OpenMP, the runtime weft's parallel loops use),
//! called through its C API with the same images and output (NHWC strides) and a ReLU post-op.
//! oneDNN is given its weights in the blocked layout it prefers, reordered from the same array
//! once before timing, so its time does not include that reorder; weft reads the weights as they
//! are. Exo's kernel is the Exo paper's layer with the schedule of Exo's own app
//! (bench/peers/exo/conv.py, compiled by `setup.sh` with exocc and the system C compiler), for
//! its one shape; it takes the same arrays, its weights transposed to [C, R, R, K] once.
//!
//! Shapes: the Exo paper's layer (batch 5, 80 x 100 output, 128 channels in and out, 3 x 3), the
//! same with 100 channels (not a multiple of the 16-lane vector), and smaller layers of ResNet's
//! kind. Each round calls each library in turn, in a new order; the table reports medians in
//! GFLOP/s and weft's ratio. Every run checks every output at sampled points against sums computed
//! here in f64.
//!
//! Run: `bash bench/peers/setup.sh && cargo run --release -p weft --bin weft-conv-bench`
//! Options: `--threads N` (default 1), `--shapes NxHxWxCxKxR,...`, `--proc NAME`, `--file PATH`,
//! `--seconds S` (time per shape and library, default 0.5), `--variant PATH` (a second file with
//! the same proc, timed in the same rounds and reported with its ratio to weft's, as in the SGEMM
//! benchmark).

mod allocator;

mod support;

use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::time::Instant;
use support::{find_lib, median, opt};
use weft::jit::{Arg, BufArg, Kernel};

/// (N, H, W, C, K, R): batch, output height and width, input and output channels, window.
type Shape = (usize, usize, usize, usize, usize, usize);

const SHAPES: &[Shape] = &[
    // The Exo paper's x86 convolution layer.
    (5, 80, 100, 128, 128, 3),
    // Channels that do not divide the vector width.
    (5, 80, 100, 100, 100, 3),
    // ResNet-like layers: 56 x 56 x 64, 28 x 28 x 128, and a 1 x 1 window.
    (1, 56, 56, 64, 64, 3),
    (1, 28, 28, 128, 128, 3),
    (1, 56, 56, 64, 256, 1),
    // Small and odd.
    (2, 7, 9, 3, 20, 3),
];

/// The input, weight, bias and output arrays of one shape.
struct Layer {
    shape: Shape,
    inp: Vec<f32>,
    wt: Vec<f32>,
    bias: Vec<f32>,
}

impl Layer {
    fn new(shape: Shape) -> Layer {
        let (n, h, w, c, k, r) = shape;
        let (ih, iw) = (h + r - 1, w + r - 1);
        Layer {
            shape,
            inp: (0..n * ih * iw * c)
                .map(|x| ((x * 7) % 17) as f32 / 16.0 - 0.5)
                .collect(),
            wt: (0..c * r * r * k)
                .map(|x| ((x * 5) % 13) as f32 / 64.0 - 0.1)
                .collect(),
            bias: (0..k).map(|x| ((x * 3) % 11) as f32 / 8.0 - 0.6).collect(),
        }
    }

    /// The weights laid out [C, R, R, K], as Exo's kernel takes them.
    fn weights_crrk(&self) -> Vec<f32> {
        let (_, _, _, c, k, r) = self.shape;
        let mut out = vec![0.0; self.wt.len()];
        for dy in 0..r {
            for dx in 0..r {
                for ch in 0..c {
                    for o in 0..k {
                        out[((ch * r + dy) * r + dx) * k + o] =
                            self.wt[((dy * r + dx) * c + ch) * k + o];
                    }
                }
            }
        }
        out
    }

    fn out_len(&self) -> usize {
        let (n, h, w, _, k, _) = self.shape;
        n * h * w * k
    }

    fn flops(&self) -> f64 {
        let (n, h, w, c, k, r) = self.shape;
        2.0 * (n * h * w * k * c * r * r) as f64
    }

    /// Sampled outputs against max(bias + sum, 0) computed in f64.
    fn check(&self, who: &str, out: &[f32]) -> Result<(), String> {
        let (n, h, w, c, k, r) = self.shape;
        let (ih, iw) = (h + r - 1, w + r - 1);
        for s in 0..97usize {
            let (b, y, x, o) = (s % n, (s * 7 + 1) % h, (s * 13 + 5) % w, (s * 31 + 3) % k);
            let mut sum = self.bias[o] as f64;
            for dy in 0..r {
                for dx in 0..r {
                    for ch in 0..c {
                        let i = self.inp[((b * ih + y + dy) * iw + x + dx) * c + ch] as f64;
                        let wv = self.wt[((dy * r + dx) * c + ch) * k + o] as f64;
                        sum += i * wv;
                    }
                }
            }
            let want = sum.max(0.0);
            let got = out[((b * h + y) * w + x) * k + o] as f64;
            if (want - got).abs() > 1e-4 * (c * r * r) as f64 * want.abs().max(1.0) {
                return Err(format!(
                    "{who} at {n}x{h}x{w}x{c}x{k}x{r}: out[{b}, {y}, {x}, {o}] = {got}, expected {want}"
                ));
            }
        }
        Ok(())
    }
}

/// oneDNN's C API (v3), the functions this benchmark calls. Enumeration values are looked up
/// by name through the library's own `*2str` functions rather than copied from its headers.
mod dnnl {
    use super::*;

    pub type Handle = *mut c_void;
    pub type Dims = [i64; 12];
    type Status = c_int;

    pub const ARG_SRC: c_int = 1;
    pub const ARG_DST: c_int = 17;
    pub const ARG_WEIGHTS: c_int = 33;
    pub const ARG_BIAS: c_int = 41;
    const QUERY_WEIGHTS_MD: c_int = 131;
    const STREAM_DEFAULT_FLAGS: u32 = 1;
    /// `DNNL_MEMORY_ALLOCATE`: the library allocates the memory.
    const MEMORY_ALLOCATE: *mut c_void = usize::MAX as *mut c_void;

    #[repr(C)]
    pub struct ExecArg {
        pub arg: c_int,
        pub memory: Handle,
    }

    /// A convolution primitive ready to run on fixed buffers.
    pub struct Conv {
        lib: Library,
        stream: Handle,
        prim: Handle,
        engine: Handle,
        /// Weights in the primitive's layout (owned by the library).
        weights: Handle,
        dst_md: Handle,
        src_md: Handle,
        bias_md: Handle,
    }

    fn ok(what: &str, s: Status) -> Result<(), String> {
        if s == 0 {
            Ok(())
        } else {
            Err(format!("oneDNN: {what} failed with status {s}"))
        }
    }

    /// The value of an enumeration whose `*2str` function names `name`.
    fn enum_value(lib: &Library, to_str: &[u8], name: &str) -> Result<c_int, String> {
        // SAFETY: `to_str` is one of oneDNN's `const char *dnnl_*2str(enum)` functions, which
        // return a static string for every value (a placeholder for unknown ones).
        unsafe {
            let f = lib
                .get::<unsafe extern "C" fn(c_int) -> *const c_char>(to_str)
                .map_err(|e| e.to_string())?;
            (0..0x4000)
                .find(|&v| {
                    let p = f(v);
                    !p.is_null() && CStr::from_ptr(p).to_bytes() == name.as_bytes()
                })
                .ok_or_else(|| format!("oneDNN has no {name}"))
        }
    }

    macro_rules! sym {
        ($lib:expr, $name:literal, $ty:ty) => {
            *$lib.get::<$ty>($name).map_err(|e| e.to_string())?
        };
    }

    impl Conv {
        /// Creates the primitive for `layer` and reorders its weights.
        pub fn new(path: &Path, layer: &Layer) -> Result<Conv, String> {
            let (n, h, w, c, k, r) = layer.shape;
            let (ih, iw) = (h + r - 1, w + r - 1);
            let dims = |v: &[usize]| {
                let mut d: Dims = [0; 12];
                for (i, x) in v.iter().enumerate() {
                    d[i] = *x as i64;
                }
                d
            };
            // SAFETY: the declared signatures are oneDNN v3's C API; every descriptor, primitive
            // and memory passed is one the library made, and the dimension arrays hold 12 values.
            unsafe {
                let lib = Library::new(path).map_err(|e| e.to_string())?;
                let f32_ = enum_value(&lib, b"dnnl_dt2str", "f32")?;
                let cpu = enum_value(&lib, b"dnnl_engine_kind2str", "cpu")?;
                let inference = enum_value(&lib, b"dnnl_prop_kind2str", "forward_inference")?;
                let direct = enum_value(&lib, b"dnnl_alg_kind2str", "convolution_direct")?;
                let relu = enum_value(&lib, b"dnnl_alg_kind2str", "eltwise_relu")?;
                let any = enum_value(&lib, b"dnnl_fmt_tag2str", "any")?;

                let engine_create = sym!(
                    lib,
                    b"dnnl_engine_create",
                    unsafe extern "C" fn(*mut Handle, c_int, usize) -> Status
                );
                let stream_create = sym!(
                    lib,
                    b"dnnl_stream_create",
                    unsafe extern "C" fn(*mut Handle, Handle, u32) -> Status
                );
                let md_strides = sym!(
                    lib,
                    b"dnnl_memory_desc_create_with_strides",
                    unsafe extern "C" fn(
                        *mut Handle,
                        c_int,
                        *const i64,
                        c_int,
                        *const i64,
                    ) -> Status
                );
                let md_tag = sym!(
                    lib,
                    b"dnnl_memory_desc_create_with_tag",
                    unsafe extern "C" fn(*mut Handle, c_int, *const i64, c_int, c_int) -> Status
                );
                let attr_create = sym!(
                    lib,
                    b"dnnl_primitive_attr_create",
                    unsafe extern "C" fn(*mut Handle) -> Status
                );
                let post_ops_create = sym!(
                    lib,
                    b"dnnl_post_ops_create",
                    unsafe extern "C" fn(*mut Handle) -> Status
                );
                let append_eltwise = sym!(
                    lib,
                    b"dnnl_post_ops_append_eltwise",
                    unsafe extern "C" fn(Handle, c_int, f32, f32) -> Status
                );
                let set_post_ops = sym!(
                    lib,
                    b"dnnl_primitive_attr_set_post_ops",
                    unsafe extern "C" fn(Handle, Handle) -> Status
                );
                type ConvPd = unsafe extern "C" fn(
                    *mut Handle,
                    Handle,
                    c_int,
                    c_int,
                    Handle,
                    Handle,
                    Handle,
                    Handle,
                    *const i64,
                    *const i64,
                    *const i64,
                    *const i64,
                    Handle,
                ) -> Status;
                let conv_pd = sym!(
                    lib,
                    b"dnnl_convolution_forward_primitive_desc_create",
                    ConvPd
                );
                let query_md = sym!(
                    lib,
                    b"dnnl_primitive_desc_query_md",
                    unsafe extern "C" fn(Handle, c_int, c_int) -> Handle
                );
                let md_equal = sym!(
                    lib,
                    b"dnnl_memory_desc_equal",
                    unsafe extern "C" fn(Handle, Handle) -> c_int
                );
                let prim_create = sym!(
                    lib,
                    b"dnnl_primitive_create",
                    unsafe extern "C" fn(*mut Handle, Handle) -> Status
                );
                let mem_create = sym!(
                    lib,
                    b"dnnl_memory_create",
                    unsafe extern "C" fn(*mut Handle, Handle, Handle, *mut c_void) -> Status
                );
                let reorder_pd = sym!(
                    lib,
                    b"dnnl_reorder_primitive_desc_create",
                    unsafe extern "C" fn(
                        *mut Handle,
                        Handle,
                        Handle,
                        Handle,
                        Handle,
                        Handle,
                    ) -> Status
                );

                let mut engine = std::ptr::null_mut();
                ok("engine", engine_create(&mut engine, cpu, 0))?;
                let mut stream = std::ptr::null_mut();
                ok(
                    "stream",
                    stream_create(&mut stream, engine, STREAM_DEFAULT_FLAGS),
                )?;
                // Logical dimensions are (N, C, H, W) for images and (K, C, R, R) for weights;
                // the strides give the NHWC images and the [R, R, C, K] weights.
                let mut src_md = std::ptr::null_mut();
                let (sd, ss) = (dims(&[n, c, ih, iw]), dims(&[ih * iw * c, 1, iw * c, c]));
                ok(
                    "src desc",
                    md_strides(&mut src_md, 4, sd.as_ptr(), f32_, ss.as_ptr()),
                )?;
                let mut dst_md = std::ptr::null_mut();
                let (dd, ds) = (dims(&[n, k, h, w]), dims(&[h * w * k, 1, w * k, k]));
                ok(
                    "dst desc",
                    md_strides(&mut dst_md, 4, dd.as_ptr(), f32_, ds.as_ptr()),
                )?;
                let mut user_wt_md = std::ptr::null_mut();
                let (wd, ws) = (dims(&[k, c, r, r]), dims(&[1, k, r * c * k, c * k]));
                ok(
                    "weights desc",
                    md_strides(&mut user_wt_md, 4, wd.as_ptr(), f32_, ws.as_ptr()),
                )?;
                let mut any_wt_md = std::ptr::null_mut();
                ok(
                    "weights desc",
                    md_tag(&mut any_wt_md, 4, wd.as_ptr(), f32_, any),
                )?;
                let mut bias_md = std::ptr::null_mut();
                let (bd, bs) = (dims(&[k]), dims(&[1]));
                ok(
                    "bias desc",
                    md_strides(&mut bias_md, 1, bd.as_ptr(), f32_, bs.as_ptr()),
                )?;

                let mut post_ops = std::ptr::null_mut();
                ok("post-ops", post_ops_create(&mut post_ops))?;
                ok("relu", append_eltwise(post_ops, relu, 0.0, 0.0))?;
                let mut attr = std::ptr::null_mut();
                ok("attr", attr_create(&mut attr))?;
                ok("attr post-ops", set_post_ops(attr, post_ops))?;
                let zeros: Dims = [0; 12];
                let ones = dims(&[1, 1]);
                let mut pd = std::ptr::null_mut();
                ok(
                    "convolution descriptor",
                    conv_pd(
                        &mut pd,
                        engine,
                        inference,
                        direct,
                        src_md,
                        any_wt_md,
                        bias_md,
                        dst_md,
                        ones.as_ptr(),
                        zeros.as_ptr(),
                        zeros.as_ptr(),
                        zeros.as_ptr(),
                        attr,
                    ),
                )?;
                let mut prim = std::ptr::null_mut();
                ok("convolution primitive", prim_create(&mut prim, pd))?;

                // The weights, once, in the layout the primitive chose.
                let wt_md = query_md(pd, QUERY_WEIGHTS_MD, 0);
                let mut user_wt = std::ptr::null_mut();
                ok(
                    "weights memory",
                    mem_create(
                        &mut user_wt,
                        user_wt_md,
                        engine,
                        layer.wt.as_ptr() as *mut c_void,
                    ),
                )?;
                let weights = if md_equal(wt_md, user_wt_md) != 0 {
                    user_wt
                } else {
                    let mut wmem = std::ptr::null_mut();
                    ok(
                        "weights memory",
                        mem_create(&mut wmem, wt_md, engine, MEMORY_ALLOCATE),
                    )?;
                    let mut rpd = std::ptr::null_mut();
                    ok(
                        "reorder descriptor",
                        reorder_pd(
                            &mut rpd,
                            user_wt_md,
                            engine,
                            wt_md,
                            engine,
                            std::ptr::null_mut(),
                        ),
                    )?;
                    let mut reorder = std::ptr::null_mut();
                    ok("reorder primitive", prim_create(&mut reorder, rpd))?;
                    let conv = Conv {
                        lib,
                        stream,
                        prim,
                        engine,
                        weights: wmem,
                        dst_md,
                        src_md,
                        bias_md,
                    };
                    let args = [
                        ExecArg {
                            arg: ARG_SRC,
                            memory: user_wt,
                        },
                        ExecArg {
                            arg: ARG_DST,
                            memory: wmem,
                        },
                    ];
                    conv.execute(reorder, &args)?;
                    return Ok(conv);
                };
                Ok(Conv {
                    lib,
                    stream,
                    prim,
                    engine,
                    weights,
                    dst_md,
                    src_md,
                    bias_md,
                })
            }
        }

        fn execute(&self, prim: Handle, args: &[ExecArg]) -> Result<(), String> {
            // SAFETY: `prim` and every memory in `args` were made by this library for this
            // engine; `args` lives through the call, which `dnnl_stream_wait` completes.
            unsafe {
                let exec = sym!(
                    self.lib,
                    b"dnnl_primitive_execute",
                    unsafe extern "C" fn(Handle, Handle, c_int, *const ExecArg) -> Status
                );
                let wait = sym!(
                    self.lib,
                    b"dnnl_stream_wait",
                    unsafe extern "C" fn(Handle) -> Status
                );
                ok(
                    "execute",
                    exec(prim, self.stream, args.len() as c_int, args.as_ptr()),
                )?;
                ok("wait", wait(self.stream))
            }
        }

        /// Memory objects over the caller's images and output, made once per batch of calls.
        pub fn bind(&self, layer: &Layer, out: &mut [f32]) -> Result<[ExecArg; 4], String> {
            // SAFETY: the memories wrap buffers of exactly the descriptors' sizes (the layer's
            // arrays and an output of `out_len`), which outlive the calls they are used in.
            unsafe {
                let mem_create = sym!(
                    self.lib,
                    b"dnnl_memory_create",
                    unsafe extern "C" fn(*mut Handle, Handle, Handle, *mut c_void) -> Status
                );
                let mut src = std::ptr::null_mut();
                ok(
                    "src memory",
                    mem_create(
                        &mut src,
                        self.src_md,
                        self.engine,
                        layer.inp.as_ptr() as *mut c_void,
                    ),
                )?;
                let mut bias = std::ptr::null_mut();
                ok(
                    "bias memory",
                    mem_create(
                        &mut bias,
                        self.bias_md,
                        self.engine,
                        layer.bias.as_ptr() as *mut c_void,
                    ),
                )?;
                let mut dst = std::ptr::null_mut();
                ok(
                    "dst memory",
                    mem_create(
                        &mut dst,
                        self.dst_md,
                        self.engine,
                        out.as_mut_ptr() as *mut c_void,
                    ),
                )?;
                Ok([
                    ExecArg {
                        arg: ARG_SRC,
                        memory: src,
                    },
                    ExecArg {
                        arg: ARG_WEIGHTS,
                        memory: self.weights,
                    },
                    ExecArg {
                        arg: ARG_BIAS,
                        memory: bias,
                    },
                    ExecArg {
                        arg: ARG_DST,
                        memory: dst,
                    },
                ])
            }
        }

        pub fn run(&self, args: &[ExecArg; 4], times: usize) -> Result<(), String> {
            for _ in 0..times {
                self.execute(self.prim, args)?;
            }
            Ok(())
        }
    }
}

/// Exo's convolution (bench/peers/exo/conv.py, built by bench/peers/setup.sh): the Exo paper's
/// layer scheduled as in Exo's own app, for its one shape.
struct ExoConv {
    run: unsafe extern "C" fn(*mut c_void, *const f32, *mut f32, *const f32, *const f32),
    _lib: Library,
}

impl ExoConv {
    const SHAPE: Shape = (5, 80, 100, 128, 128, 3);

    fn load(venv: &Path) -> Result<Option<ExoConv>, String> {
        let path = venv.join("exo-build/libexo_conv.so");
        // Exo's convolution is AVX-512 code (setup.sh builds it only where the CPU has it).
        if !path.is_file() || !crate::support::has_avx512() {
            return Ok(None);
        }
        // SAFETY: the library is Exo's output for bench/peers/exo/conv.py, whose header declares
        // `void conv_specialized(void *ctxt, const float *inp, float *output,
        // const float *weights, const float *bias)`.
        unsafe {
            let lib = Library::new(&path).map_err(|e| e.to_string())?;
            let run = *lib
                .get(b"conv_specialized")
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Some(ExoConv { run, _lib: lib }))
        }
    }

    fn run(&self, layer: &Layer, wt_crrk: &[f32], out: &mut [f32], times: usize) {
        assert!(layer.shape == Self::SHAPE && out.len() == layer.out_len());
        for _ in 0..times {
            // SAFETY: the arrays have the sizes of the one shape the kernel is built for (checked
            // above); Exo's kernels ignore the context.
            unsafe {
                (self.run)(
                    std::ptr::null_mut(),
                    layer.inp.as_ptr(),
                    out.as_mut_ptr(),
                    wt_crrk.as_ptr(),
                    layer.bias.as_ptr(),
                )
            }
        }
    }
}

/// `times` calls of the weft kernel on the same arguments (made once, as a caller's loop would).
fn weft_call(kernel: &Kernel, layer: &Layer, out: &mut [f32], times: usize) -> Result<(), String> {
    let (n, h, w, c, k, r) = layer.shape;
    let (ih, iw) = (h + r - 1, w + r - 1);
    let mut args = [
        Arg::Int(n as i64),
        Arg::Int(h as i64),
        Arg::Int(w as i64),
        Arg::Int(c as i64),
        Arg::Int(k as i64),
        Arg::Int(r as i64),
        Arg::Buf(BufArg::from_slice(&layer.inp, &[n, ih, iw, c])),
        Arg::Buf(BufArg::from_slice(&layer.wt, &[r, r, c, k])),
        Arg::Buf(BufArg::from_slice(&layer.bias, &[k])),
        Arg::Buf(BufArg::new(out, &[n, h, w, k])),
    ];
    for _ in 0..times {
        kernel.call(&mut args).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn parse_shapes(s: &str) -> Result<Vec<Shape>, String> {
    s.split(',')
        .map(|t| {
            let d: Vec<usize> = t.split('x').filter_map(|x| x.parse().ok()).collect();
            match d[..] {
                [n, h, w, c, k, r] if d.iter().all(|&x| x > 0) => Ok((n, h, w, c, k, r)),
                _ => Err(format!("shape `{t}` is not NxHxWxCxKxR of positive sizes")),
            }
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| opt(&args, name);
    let threads: usize = opt("--threads").map_or(Ok(1), |s| s.parse())?;
    let seconds: f64 = opt("--seconds").map_or(Ok(0.5), |s| s.parse())?;
    let file = opt("--file").map_or_else(|| root.join("examples/conv.weft"), PathBuf::from);
    let name = opt("--proc").unwrap_or_else(|| {
        let isa = if support::has_avx512() {
            "avx512"
        } else {
            "avx2"
        };
        let cores = if threads > 1 { "_par" } else { "" };
        format!("conv_{isa}{cores}")
    });
    let shapes = match opt("--shapes") {
        None => SHAPES.to_vec(),
        Some(s) => parse_shapes(&s)?,
    };
    support::set_thread_env(threads);
    let venv = support::peers_venv(&root);
    let dnnl_path = find_lib(&venv.join("lib"), "libdnnl")
        .ok_or("oneDNN (onednn-cpu-gomp) not found; run bash bench/peers/setup.sh")?;

    let (kernel, peak) = support::weft_kernel(&root, &file, &name, threads)?;
    let variant = match opt("--variant") {
        Some(path) => Some(support::weft_kernel(&root, Path::new(&path), &name, threads)?.0),
        None => None,
    };
    let exo = ExoConv::load(&venv)?;
    if exo.is_none() {
        if support::has_avx512() {
            println!("(Exo's convolution not built: run bash bench/peers/setup.sh)");
        } else {
            println!("(Exo's convolution is AVX-512 code, which this CPU lacks: left out)");
        }
    }
    let extra = if variant.is_some() {
        " variant GFLOP/s | variant / weft |"
    } else {
        ""
    };
    println!(
        "| N x H x W x C x K x R | weft GFLOP/s | oneDNN GFLOP/s | Exo GFLOP/s | weft / fastest | weft / peak |{extra}"
    );
    println!(
        "|---|---|---|---|---|---|{}",
        if variant.is_some() { "---|---|" } else { "" }
    );
    let mut worst = f64::MAX;
    for &shape in &shapes {
        let layer = Layer::new(shape);
        let dnnl = dnnl::Conv::new(&dnnl_path, &layer)?;
        let mut out = vec![f32::NAN; layer.out_len()];
        weft_call(&kernel, &layer, &mut out, 1)?;
        layer.check("weft", &out)?;
        let mut out_dnnl = vec![f32::NAN; layer.out_len()];
        let dnnl_args = dnnl.bind(&layer, &mut out_dnnl)?;
        dnnl.run(&dnnl_args, 1)?;
        layer.check("oneDNN", &out_dnnl)?;
        // Exo's kernel is built for one shape, with its own weight layout.
        let exo = exo.as_ref().filter(|_| shape == ExoConv::SHAPE);
        let exo_wt = exo.map(|_| layer.weights_crrk());
        let mut out_exo = vec![f32::NAN; layer.out_len()];
        if let (Some(e), Some(wt)) = (exo, &exo_wt) {
            e.run(&layer, wt, &mut out_exo, 1);
            layer.check("Exo", &out_exo)?;
        }
        let flops = layer.flops();
        let batch = ((2e7 / flops) as usize).clamp(1, 1000);
        let rounds = ((seconds * 100e9 / (flops * batch as f64)) as usize).clamp(5, 200);
        let (mut tw, mut td, mut te, mut tv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut out_variant = vec![f32::NAN; layer.out_len()];
        if let Some(v) = &variant {
            weft_call(v, &layer, &mut out_variant, 1)?;
            layer.check("variant", &out_variant)?;
        }
        // Each round calls the libraries in a new order (see the SGEMM benchmark: a fixed order
        // would leave one library's thread pool asleep every time another's call ends).
        let mut order = [0, 1, 2, 3];
        for round in 0..rounds {
            support::shuffle(&mut order, round as u64);
            for &lib in &order {
                let t = Instant::now();
                match lib {
                    0 => {
                        weft_call(&kernel, &layer, &mut out, batch)?;
                        tw.push(t.elapsed().as_secs_f64() / batch as f64);
                    }
                    1 => {
                        dnnl.run(&dnnl_args, batch)?;
                        td.push(t.elapsed().as_secs_f64() / batch as f64);
                    }
                    2 => {
                        if let (Some(e), Some(wt)) = (exo, &exo_wt) {
                            e.run(&layer, wt, &mut out_exo, batch);
                            te.push(t.elapsed().as_secs_f64() / batch as f64);
                        }
                    }
                    _ => {
                        if let Some(v) = &variant {
                            weft_call(v, &layer, &mut out_variant, batch)?;
                            tv.push(t.elapsed().as_secs_f64() / batch as f64);
                        }
                    }
                }
            }
        }
        let gflops = |t: &[f64]| flops / median(t) / 1e9;
        let (gw, gd) = (gflops(&tw), gflops(&td));
        let ge = (!te.is_empty()).then(|| gflops(&te));
        let fastest = gd.max(ge.unwrap_or(0.0));
        worst = worst.min(gw / fastest);
        let (n, h, w, c, k, r) = shape;
        let gv = (!tv.is_empty()).then(|| gflops(&tv));
        println!(
            "| {n} x {h} x {w} x {c} x {k} x {r} | {gw:.1} | {gd:.1} | {} | {:.2} | {:.2} |{}",
            ge.map_or("-".to_string(), |g| format!("{g:.1}")),
            gw / fastest,
            gw / peak,
            gv.map_or(String::new(), |g| format!(" {g:.1} | {:.2} |", g / gw))
        );
    }
    println!();
    println!("lowest weft / fastest peer: {worst:.2}");
    Ok(())
}
