//! Differential tests of the entry points and the runtime (issue 8): random kernels and random
//! arguments, compiled C against the interpreter, on the classes the first generators never
//! produced:
//!
//! - hostile shapes, strides, ranks, dtypes, counts and control values passed to the entry point
//!   of random procs (compiled with UBSan, which aborts on any overflow): the exact error, or,
//!   where the change cannot matter (a stride of an extent-1 dimension), the interpreter's result;
//! - written windows with random strides: refused when two indices reach one element (checked
//!   by enumeration), otherwise the interpreter's result (some injective layouts the entry cannot
//!   prove are refused too; they are counted);
//! - index and stride arguments at and just beyond the bound `±(2^31 - 1)`;
//! - kernels that read and write configs, called from several threads at once, on fresh contexts
//!   and on contexts kept across calls.
//!
//! `WEFT_RUNTIME_CASES=N` scales every generator (default 40); `WEFT_RUNTIME_SEED` seeds them.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use weft::hostbuf::{same_bits, HostData};
use weft_interp::{ArgValue, Buffer, ConfigState};
use weft_ir::Proc;
use weft_jit::{Arg, BufArg, Jit, JitError};

/// The bound of control values entering a proc.
const MAX: i64 = (1 << 31) - 1;

fn cases() -> usize {
    std::env::var("WEFT_RUNTIME_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

fn rng(salt: u64) -> StdRng {
    let seed: u64 = std::env::var("WEFT_RUNTIME_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x0c0f_fee5);
    StdRng::seed_from_u64(seed ^ salt)
}

fn jit(dir: &tempfile::TempDir, flags: &[&str]) -> Jit {
    Jit::with_compiler(
        dir.path(),
        "cc",
        flags.iter().map(|s| s.to_string()).collect(),
    )
    .unwrap()
}

/// Parse, check and schedule `src` (which must be accepted).
fn load(src: &str) -> weft::Program {
    weft::load_str("gen.weft", src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Run `proc` in the interpreter on a fresh config state.
fn interpret(proc: &Proc, args: &[ArgValue]) -> Vec<ArgValue> {
    let mut out = args.to_vec();
    weft_interp::run(proc, &mut out, &mut ConfigState::default())
        .unwrap_or_else(|e| panic!("interpreter: {e}"));
    out
}

// ---------------------------------------------------------------------------------------------
// Hostile arguments through the uniform entry point.

#[repr(C)]
struct RawBuffer {
    data: *mut c_void,
    dtype: i32,
    rank: i32,
    shape: *const i64,
    strides: *const i64,
}

#[repr(C)]
struct RawArg {
    kind: i32,
    i: i64,
    buf: *const RawBuffer,
}

type RawEntry = unsafe extern "C" fn(*mut c_void, *const RawArg, i64, *mut c_char, i64) -> i32;

/// One change that makes valid arguments invalid (or, for the stride of an extent-1 dimension,
/// leaves them meaning the same).
#[derive(Clone, Debug)]
enum Mutation {
    Size { arg: usize, value: i64 },
    Extent { arg: usize, dim: usize, value: i64 },
    Stride { arg: usize, dim: usize, value: i64 },
    Rank { arg: usize, value: i32 },
    Dtype { arg: usize, value: i32 },
    Kind { arg: usize },
    Count { delta: i64 },
}

const HOSTILE: [i64; 8] = [
    0,
    -1,
    i64::MIN,
    i64::MAX,
    1 << 31,
    -(1 << 31),
    1 << 62,
    -(1 << 62),
];

/// A random mutation of arguments whose buffers have `shapes` (None for control arguments).
fn mutation(rng: &mut StdRng, shapes: &[Option<Vec<usize>>]) -> Mutation {
    let bufs: Vec<usize> = (0..shapes.len()).filter(|k| shapes[*k].is_some()).collect();
    let ctrl: Vec<usize> = (0..shapes.len()).filter(|k| shapes[*k].is_none()).collect();
    let hostile = |rng: &mut StdRng, not: i64| loop {
        let v = if rng.gen_bool(0.2) {
            not + rng.gen_range(1..4)
        } else {
            *HOSTILE.choose(rng).unwrap()
        };
        if v != not {
            return v;
        }
    };
    loop {
        match rng.gen_range(0..7) {
            0 if !ctrl.is_empty() => {
                return Mutation::Size {
                    arg: *ctrl.choose(rng).unwrap(),
                    value: *HOSTILE[..7].choose(rng).unwrap(),
                }
            }
            1..=3 => {
                let arg = *bufs.choose(rng).unwrap();
                let shape = shapes[arg].as_ref().unwrap();
                if shape.is_empty() {
                    continue;
                }
                let dim = rng.gen_range(0..shape.len());
                let dense: i64 = shape[dim + 1..].iter().product::<usize>() as i64;
                return if rng.gen_bool(0.5) {
                    Mutation::Extent {
                        arg,
                        dim,
                        value: hostile(rng, shape[dim] as i64),
                    }
                } else {
                    Mutation::Stride {
                        arg,
                        dim,
                        value: hostile(rng, dense),
                    }
                };
            }
            4 => {
                let arg = *bufs.choose(rng).unwrap();
                let rank = shapes[arg].as_ref().unwrap().len() as i32;
                let value = *[rank + 1, -1, i32::MAX, i32::MIN].choose(rng).unwrap();
                return Mutation::Rank { arg, value };
            }
            5 => {
                let arg = *bufs.choose(rng).unwrap();
                let value = *[10, -1, 99, i32::MIN].choose(rng).unwrap();
                return if rng.gen_bool(0.5) {
                    Mutation::Dtype { arg, value }
                } else {
                    Mutation::Kind {
                        arg: rng.gen_range(0..shapes.len()),
                    }
                };
            }
            6 => {
                return Mutation::Count {
                    delta: *[-1, 1, -(shapes.len() as i64) - 1].choose(rng).unwrap(),
                }
            }
            _ => {}
        }
    }
}

/// Call `entry` with `args` changed by `m`; returns the status and the buffers after the call.
fn call_mutated(
    entry: RawEntry,
    args: &[ArgValue],
    m: &Mutation,
) -> (i32, Vec<Option<HostData>>, String) {
    let mut data: Vec<Option<HostData>> = args
        .iter()
        .map(|a| a.as_buffer().map(HostData::from_buffer))
        .collect();
    let mut shapes: Vec<Vec<i64>> = args
        .iter()
        .map(|a| match a {
            ArgValue::Buf(b) => b.shape.iter().map(|&d| d as i64).collect(),
            _ => Vec::new(),
        })
        .collect();
    let mut strides: Vec<Vec<i64>> = shapes
        .iter()
        .map(|s| {
            (0..s.len())
                .map(|d| s[d + 1..].iter().product::<i64>())
                .collect()
        })
        .collect();
    match *m {
        Mutation::Extent { arg, dim, value } => shapes[arg][dim] = value,
        Mutation::Stride { arg, dim, value } => strides[arg][dim] = value,
        _ => {}
    }
    let bufs: Vec<Option<RawBuffer>> = args
        .iter()
        .zip(data.iter_mut())
        .enumerate()
        .map(|(k, (a, d))| {
            let (ArgValue::Buf(b), Some(d)) = (a, d) else {
                return None;
            };
            Some(RawBuffer {
                data: d.as_mut_ptr(),
                dtype: match *m {
                    Mutation::Dtype { arg, value } if arg == k => value,
                    _ => weft::c::dtype_code(b.dtype),
                },
                rank: match *m {
                    Mutation::Rank { arg, value } if arg == k => value,
                    _ => shapes[k].len() as i32,
                },
                shape: shapes[k].as_ptr(),
                strides: strides[k].as_ptr(),
            })
        })
        .collect();
    let raw: Vec<RawArg> = args
        .iter()
        .zip(&bufs)
        .enumerate()
        .map(|(k, (a, b))| {
            let mut r = match a {
                ArgValue::Int(v) => RawArg {
                    kind: 0,
                    i: *v,
                    buf: std::ptr::null(),
                },
                ArgValue::Bool(v) => RawArg {
                    kind: 1,
                    i: *v as i64,
                    buf: std::ptr::null(),
                },
                ArgValue::Buf(_) => RawArg {
                    kind: 2,
                    i: 0,
                    buf: b.as_ref().map_or(std::ptr::null(), |b| b as *const _),
                },
            };
            match *m {
                Mutation::Size { arg, value } if arg == k => r.i = value,
                Mutation::Kind { arg } if arg == k => r.kind = if r.kind == 2 { 0 } else { 2 },
                _ => {}
            }
            r
        })
        .collect();
    let nargs = match *m {
        Mutation::Count { delta } => raw.len() as i64 + delta,
        _ => raw.len() as i64,
    };
    let mut err = vec![0u8; 512];
    // SAFETY: `raw` matches the C ABI and every pointer is valid for the arguments' true shapes;
    // the entry point must refuse, without touching data, what the mutation made invalid. A count
    // above the array's length is passed with a null array, which the entry refuses first.
    let rc = unsafe {
        entry(
            std::ptr::null_mut(),
            if nargs > raw.len() as i64 {
                std::ptr::null()
            } else {
                raw.as_ptr()
            },
            nargs,
            err.as_mut_ptr() as *mut c_char,
            err.len() as i64,
        )
    };
    let end = err.iter().position(|b| *b == 0).unwrap_or(err.len());
    let msg = String::from_utf8_lossy(&err[..end]).into_owned();
    (rc, data, msg)
}

/// The status the entry point must return for `m`; `None`: the call must succeed.
fn expected(m: &Mutation, args: &[ArgValue]) -> Option<i32> {
    use weft::c::status;
    let extent = |arg: usize, dim: usize| args[arg].as_buffer().unwrap().shape[dim];
    Some(match *m {
        Mutation::Size { .. } => status::SIZE,
        Mutation::Extent { .. } => status::SHAPE,
        Mutation::Stride { arg, dim, .. } if extent(arg, dim) == 1 => return None,
        Mutation::Stride { .. } => status::STRIDE,
        Mutation::Rank { .. } => status::RANK,
        Mutation::Dtype { .. } => status::DTYPE,
        Mutation::Kind { .. } => status::ARG_KIND,
        Mutation::Count { .. } => status::ARG_COUNT,
    })
}

#[test]
fn hostile_arguments_are_errors_never_undefined_behaviour() {
    let mut rng = rng(1);
    let dram = weft_syntax::std_memory("DRAM").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let j = jit(
        &dir,
        &[
            "-O1",
            "-fsanitize=undefined",
            "-fno-sanitize-recover=undefined",
        ],
    );
    let (mut calls, mut accepted) = (0, 0);
    let mut done = 0;
    while done < cases() {
        let batch: Vec<_> = (0..20.min(cases() - done))
            .map(|k| weft_testkit::random_proc_named(&mut rng, &dram, &format!("h{done}_{k}")))
            .collect();
        done += batch.len();
        let roots: Vec<Arc<Proc>> = batch.iter().map(|g| g.proc.clone()).collect();
        let module = j.compile(&roots).unwrap();
        // SAFETY: the module's own file; its entry points have the `RawEntry` signature.
        let lib = unsafe { libloading::Library::new(module.path()) }.unwrap();
        for g in &batch {
            let info = module
                .entries()
                .iter()
                .find(|e| e.name == g.proc.name)
                .unwrap();
            let sym = format!("{}\0", info.symbol);
            // SAFETY: weft-c defines the symbol with this signature.
            let entry: RawEntry = unsafe { *lib.get::<RawEntry>(sym.as_bytes()).unwrap() };
            let args = weft_interp::random_args(&g.proc, &g.sizes, rng.gen()).unwrap();
            let shapes: Vec<Option<Vec<usize>>> = args
                .iter()
                .map(|a| a.as_buffer().map(|b| b.shape.clone()))
                .collect();
            for _ in 0..8 {
                let m = mutation(&mut rng, &shapes);
                let (rc, data, msg) = call_mutated(entry, &args, &m);
                calls += 1;
                match expected(&m, &args) {
                    Some(code) => assert_eq!(
                        rc, code,
                        "{m:?} on `{}`: got {rc} ({msg})\n{}",
                        g.proc.name, g.proc
                    ),
                    None => {
                        assert_eq!(rc, 0, "{m:?} on `{}`: {msg}", g.proc.name);
                        accepted += 1;
                        let want = interpret(&g.proc, &args);
                        for (w, d) in want.iter().zip(&data) {
                            let (ArgValue::Buf(w), Some(d)) = (w, d) else {
                                continue;
                            };
                            for (i, cell) in w.data.iter().enumerate() {
                                if let Some(c) = cell {
                                    assert!(same_bits(*c, d.scalar(i)), "{m:?} cell {i}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("hostile arguments: {calls} calls, {accepted} harmless changes accepted");
}

// ---------------------------------------------------------------------------------------------
// Written windows with random strides.

/// Whether distinct indices of `shape` reach distinct offsets under `strides` (enumerated).
fn injective(shape: &[usize], strides: &[isize]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let n: usize = shape.iter().product();
    (0..n).all(|mut k| {
        let mut off = 0isize;
        for d in (0..shape.len()).rev() {
            off += (k % shape[d]) as isize * strides[d];
            k /= shape[d];
        }
        seen.insert(off)
    })
}

/// The entry's sufficient condition: by |stride|, each stepped dimension steps past what the
/// smaller ones reach.
fn nested(shape: &[usize], strides: &[isize]) -> bool {
    let mut dims: Vec<(isize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(e, _)| **e > 1)
        .map(|(e, s)| (s.abs(), *e))
        .collect();
    dims.sort();
    let mut span = 0;
    dims.iter().all(|&(s, e)| {
        let ok = s > span;
        span += (e as isize - 1) * s;
        ok
    })
}

/// The offset of flat row-major position `k` of `shape` under `strides`.
fn offset(mut k: usize, shape: &[usize], strides: &[isize]) -> usize {
    let mut off = 0;
    for d in (0..shape.len()).rev() {
        off += (k % shape[d]) * strides[d] as usize;
        k /= shape[d];
    }
    off
}

#[test]
fn written_windows_with_random_strides() {
    let mut rng = rng(2);
    let dir = tempfile::tempdir().unwrap();
    let j = jit(&dir, &["-O2"]);
    // One kernel per rank; the outer loop is parallel (proved race-free over distinct elements).
    let mut src = String::new();
    for rank in 1..=3 {
        let sizes: Vec<String> = (0..rank).map(|d| format!("n{d}")).collect();
        let vars = ["i", "j", "l"];
        let idx = vars[..rank].join(", ");
        let mut body = format!("w[{idx}] = w[{idx}] * 3 + x[{idx}];");
        for d in (0..rank).rev() {
            let par = if d == 0 { "par(0..n0)" } else { "" };
            let range = if d == 0 {
                par.to_string()
            } else {
                format!("0..n{d}")
            };
            body = format!("for {} in {range} {{ {body} }}", vars[d]);
        }
        src.push_str(&format!(
            "proc w{rank}({}, w: [i32][{}], x: i32[{}]) {{ {body} }}\n",
            sizes
                .iter()
                .map(|s| format!("{s}: size"))
                .collect::<Vec<_>>()
                .join(", "),
            sizes.join(", "),
            sizes.join(", ")
        ));
    }
    let program = load(&src);
    let module = j.compile(&program.module.procs).unwrap();
    let (mut ran, mut refused_overlap, mut refused_unproved) = (0, 0, 0);
    for _ in 0..cases() * 5 {
        let rank = rng.gen_range(1..=3usize);
        let proc = program.module.proc(&format!("w{rank}")).unwrap();
        let shape: Vec<usize> = (0..rank).map(|_| rng.gen_range(1..=4)).collect();
        let strides: Vec<isize> = match rng.gen_range(0..3) {
            // A permutation of dense strides, possibly padded: always nested.
            0 => {
                let mut order: Vec<usize> = (0..rank).collect();
                order.shuffle(&mut rng);
                let mut s = vec![0isize; rank];
                let mut step = 1;
                for d in order {
                    s[d] = step;
                    step *= shape[d] as isize + rng.gen_range(0..2);
                }
                s
            }
            _ => (0..rank).map(|_| rng.gen_range(0..=6)).collect(),
        };
        let reach: usize = shape
            .iter()
            .zip(&strides)
            .map(|(e, s)| (e - 1) * *s as usize)
            .sum();
        let backing: Vec<i32> = (0..=reach).map(|_| rng.gen_range(-50..50)).collect();
        let x: Vec<i32> = (0..shape.iter().product())
            .map(|_| rng.gen_range(-50..50))
            .collect();
        let mut got = backing.clone();
        let mut args: Vec<Arg> = shape.iter().map(|&e| Arg::Int(e as i64)).collect();
        args.push(Arg::Buf(BufArg::strided(&mut got, &shape, &strides)));
        args.push(Arg::Buf(BufArg::from_slice(&x, &shape)));
        let r = module.kernel(&proc.name).unwrap().call(&mut args);
        let case = format!("shape {shape:?} strides {strides:?}");
        if !injective(&shape, &strides) {
            assert!(matches!(r, Err(JitError::Alias(_))), "{case}: {r:?}");
            refused_overlap += 1;
            continue;
        }
        if !nested(&shape, &strides) {
            assert!(matches!(r, Err(JitError::Alias(_))), "{case}: {r:?}");
            refused_unproved += 1;
            continue;
        }
        r.unwrap_or_else(|e| panic!("{case}: {e}"));
        ran += 1;
        // The interpreter on the window's elements, gathered densely, scattered back.
        let n: usize = shape.iter().product();
        let dense: Vec<i32> = (0..n)
            .map(|k| backing[offset(k, &shape, &strides)])
            .collect();
        let mut iargs: Vec<ArgValue> = shape.iter().map(|&e| ArgValue::Int(e as i64)).collect();
        iargs.push(ArgValue::Buf(Buffer::from_i32(shape.clone(), &dense)));
        iargs.push(ArgValue::Buf(Buffer::from_i32(shape.clone(), &x)));
        let out = interpret(proc, &iargs);
        let w = out[rank].as_buffer().unwrap().to_i32_vec().unwrap();
        let mut want = backing.clone();
        for (k, v) in w.iter().enumerate() {
            want[offset(k, &shape, &strides)] = *v;
        }
        assert_eq!(got, want, "{case}");
    }
    eprintln!(
        "written windows: {ran} ran and matched, {refused_overlap} overlapping refused, {refused_unproved} injective but unproved refused"
    );
    assert!(ran > 0 && refused_overlap > 0);
}

// ---------------------------------------------------------------------------------------------
// Control values at the bound.

/// A random quasi-affine control expression over `k`, `s` and `i` with small coefficients.
fn control_expr(rng: &mut StdRng) -> String {
    let mut terms = Vec::new();
    for v in ["k", "s", "i"] {
        let c = rng.gen_range(-3..=3);
        if c != 0 {
            terms.push(format!("{c} * {v}"));
        }
    }
    terms.push(rng.gen_range(-5..=5).to_string());
    let sum = terms.join(" + ").replace("+ -", "- ");
    match rng.gen_range(0..4) {
        0 => format!("({sum}) / {}", rng.gen_range(2..=7)),
        1 => format!("({sum}) % {}", rng.gen_range(2..=7)),
        _ => sum,
    }
}

#[test]
fn control_values_at_the_bound() {
    let mut rng = rng(3);
    let dir = tempfile::tempdir().unwrap();
    let j = jit(&dir, &["-O2"]);
    let mut src = String::new();
    let n_procs = cases();
    for p in 0..n_procs {
        let ops = ["<", "<=", ">", ">=", "==", "!="];
        let cond = |rng: &mut StdRng| {
            format!(
                "{} {} {}",
                control_expr(rng),
                ops.choose(rng).unwrap(),
                control_expr(rng)
            )
        };
        src.push_str(&format!(
            "proc e{p}(n: size, k: index, s: stride, y: i64[n]) {{\n    for i in 0..n {{\n        if {} {{\n            y[i] = 1;\n        }} else {{\n            y[i] = 2;\n        }}\n        if {} {{\n            y[i] += 10;\n        }}\n    }}\n}}\n",
            cond(&mut rng),
            cond(&mut rng)
        ));
    }
    let program = load(&src);
    let module = j.compile(&program.module.procs).unwrap();
    let values = [MAX, -MAX, MAX - 1, -MAX + 1, 0, 1, -1, 1 << 30];
    let mut compared = 0;
    for p in 0..n_procs {
        let proc = program.module.proc(&format!("e{p}")).unwrap();
        let kernel = module.kernel(&proc.name).unwrap();
        for _ in 0..6 {
            let (k, s) = (
                *values.choose(&mut rng).unwrap(),
                *values.choose(&mut rng).unwrap(),
            );
            let n = rng.gen_range(1..=4i64);
            let mut y = vec![0i64; n as usize];
            kernel
                .call(&mut [
                    Arg::Int(n),
                    Arg::Int(k),
                    Arg::Int(s),
                    Arg::Buf(BufArg::new(&mut y, &[n as usize])),
                ])
                .unwrap_or_else(|e| panic!("k={k} s={s}: {e}\n{proc}"));
            let args = [
                ArgValue::Int(n),
                ArgValue::Int(k),
                ArgValue::Int(s),
                ArgValue::Buf(Buffer::from_i64(vec![n as usize], &y)),
            ];
            let want = interpret(proc, &args)[3].as_buffer().unwrap().to_i64_vec();
            assert_eq!(Some(y), want, "k={k} s={s}\n{proc}");
            compared += 1;
        }
        // One past the bound, in either argument: refused before anything runs.
        for (k, s) in [(MAX + 1, 0), (0, -MAX - 1), (i64::MIN, 0), (0, i64::MAX)] {
            let mut y = vec![0i64; 1];
            let r = kernel.call(&mut [
                Arg::Int(1),
                Arg::Int(k),
                Arg::Int(s),
                Arg::Buf(BufArg::new(&mut y, &[1])),
            ]);
            assert!(matches!(r, Err(JitError::Range(_))), "k={k} s={s}: {r:?}");
        }
    }
    eprintln!("control bound: {compared} calls compared");
}

// ---------------------------------------------------------------------------------------------
// Config-writing kernels on several threads.

/// A random statement over the config `C` and the buffer `y` of length `n`.
fn config_stmt(rng: &mut StdRng, helper: Option<&str>) -> String {
    let c = rng.gen_range(1..=4);
    match rng.gen_range(0..9) {
        0 => format!("C.a = (C.a + {c}) % 7;"),
        // (Kept in range: control config writes are proved within ±(2^31 - 1).)
        1 => format!("C.b = (C.b - {c}) % 1000;"),
        2 => format!("C.s = C.s * 0.5 + {}.25;", c - 1),
        3 => "C.on = not C.on;".to_string(),
        4 => format!("C.on = C.a > {c};"),
        5 => "for i in 0..n {\n if i < C.a {\n y[i] = y[i] + C.s;\n }\n C.s = C.s + 1.0;\n }"
            .to_string(),
        6 => "if C.on {\n y[0] = y[0] - C.s;\n } else {\n C.a = (C.a + 1) % 7;\n }".to_string(),
        7 => format!("if C.b > {c} {{\n C.s = C.s + 0.5;\n y[n - 1] = C.s;\n }}"),
        _ => match helper {
            Some(h) => format!("{h}(n, y);"),
            None => "y[0] = y[0] * 2.0;".to_string(),
        },
    }
}

#[test]
fn config_kernels_on_several_threads() {
    let mut rng = rng(4);
    let dir = tempfile::tempdir().unwrap();
    let j = jit(&dir, &["-O2"]);
    let mut src = String::from("config C { a: index, b: index, s: f32, on: bool }\n");
    let n_procs = (cases() / 4).max(4);
    for p in 0..n_procs {
        let helper: Vec<String> = (0..3).map(|_| config_stmt(&mut rng, None)).collect();
        src.push_str(&format!(
            "proc h{p}(n: size, y: f32[n]) {{\n{}\n}}\n",
            helper.join("\n")
        ));
        let body: Vec<String> = (0..6)
            .map(|_| config_stmt(&mut rng, Some(&format!("h{p}"))))
            .collect();
        src.push_str(&format!(
            "proc k{p}(n: size, v: index, y: f32[n]) {{\n C.a = v % 5;\n C.b = v;\n C.s = 0.5;\n C.on = v > 2;\n{}\n}}\n",
            body.join("\n")
        ));
    }
    // A kernel that only reads: on a kept context it sees what the others left.
    src.push_str("proc peek(y: f32[4]) {\n if C.on {\n y[0] = C.s;\n }\n if C.a > 2 {\n y[1] = C.s;\n }\n if C.b > 5 {\n y[2] = 1.0;\n }\n}\n");
    let program = load(&src);
    let module = j.compile(&program.module.procs).unwrap();
    let kernels: Vec<(Arc<Proc>, weft_jit::Kernel)> = (0..n_procs)
        .map(|p| format!("k{p}"))
        .chain(std::iter::once("peek".to_string()))
        .map(|name| {
            let proc = program.module.proc(&name).unwrap().clone();
            (proc, module.kernel(&name).unwrap())
        })
        .collect();
    let seeds: Vec<u64> = (0..4).map(|_| rng.gen()).collect();
    std::thread::scope(|scope| {
        for seed in seeds {
            let (kernels, module) = (&kernels, &module);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed);
                let mut ctx = module.context();
                let mut state = ConfigState::default();
                for _ in 0..cases() * 2 {
                    let (proc, kernel) = kernels.choose(&mut rng).unwrap();
                    let kept = rng.gen_bool(0.5);
                    // `peek` reads fields nothing wrote on a fresh context: only on a kept one,
                    // after a kernel wrote them all.
                    if proc.name == "peek" && (!kept || state == ConfigState::default()) {
                        continue;
                    }
                    let n = if proc.name == "peek" {
                        4
                    } else {
                        rng.gen_range(1..=6)
                    };
                    let v = rng.gen_range(-3..12i64);
                    let y0: Vec<f32> = (0..n)
                        .map(|_| rng.gen_range(-256..256) as f32 / 256.0)
                        .collect();
                    let mut iargs = Vec::new();
                    if proc.name != "peek" {
                        iargs.push(ArgValue::Int(n as i64));
                        iargs.push(ArgValue::Int(v));
                    }
                    iargs.push(ArgValue::Buf(Buffer::from_f32(vec![n], &y0)));
                    let mut fresh = ConfigState::default();
                    let cfg = if kept { &mut state } else { &mut fresh };
                    weft_interp::run(proc, &mut iargs, cfg)
                        .unwrap_or_else(|e| panic!("interpreter: {e}\n{proc}"));
                    let want = iargs
                        .last()
                        .unwrap()
                        .as_buffer()
                        .unwrap()
                        .to_f32_vec()
                        .unwrap();
                    let mut y = y0.clone();
                    let mut args = Vec::new();
                    if proc.name != "peek" {
                        args.push(Arg::Int(n as i64));
                        args.push(Arg::Int(v));
                    }
                    args.push(Arg::Buf(BufArg::new(&mut y, &[n])));
                    if kept {
                        kernel.call_with(&mut ctx, &mut args).unwrap();
                    } else {
                        kernel.call(&mut args).unwrap();
                    }
                    let same = y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{} v={v} kept={kept}: {y:?} != {want:?}\n{proc}",
                        proc.name
                    );
                }
            });
        }
    });
}
