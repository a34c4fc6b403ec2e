//! Regression tests of issue 8 for the JIT: failed allocations, overlapping written windows,
//! control values outside the entry bound, per-call configuration state, damaged cache entries,
//! instruction-set requirements, and files that declare instructions.

use std::sync::Arc;
use weft_ir::Proc;
use weft_jit::{Arg, BufArg, Jit, JitError};

/// The procs of `src` (parsed against the prelude and the built-in libraries).
fn procs(src: &str) -> Vec<Arc<Proc>> {
    let mut sources = weft_syntax::SourceMap::new();
    match weft_syntax::parse_module(&mut sources, "t.weft", src) {
        Ok(m) => m.procs,
        Err(d) => panic!("{}", sources.render(&d[0])),
    }
}

fn jit(dir: &tempfile::TempDir) -> Jit {
    Jit::with_compiler(dir.path(), "cc", vec!["-O2".into()]).unwrap()
}

const ALLOCS: &str = "
proc square(n: size, y: u8[2]) {
    alloc t: u8[n, n];
    for i in 0..n {
        t[i, 0] = y[1];
    }
    y[0] = t[n - 1, 0];
    free t;
}
proc cube(n: size, y: f32[2]) {
    alloc t: f32[n, n, n];
    t[0, 0, 0] = 1.0;
    y[0] = t[0, 0, 0];
}
proc rows(k: size, y: u8[2, 2], z: u8[2]) {
    alloc keep: u8[4];
    keep[0] = 1;
    for i in par(0..2) {
        square(k, y[i, 0:2]);
    }
    z[0] = keep[0];
}
";

/// Item 8: an allocation that fails, or whose size overflows, is an error naming the buffer,
/// returned through callees and parallel loops, never a crash; the kernel stays usable.
#[test]
fn failed_allocations_are_errors_that_name_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let m = jit(&dir).compile(&procs(ALLOCS)).unwrap();
    let (square, cube, rows) = (
        m.kernel("square").unwrap(),
        m.kernel("cube").unwrap(),
        m.kernel("rows").unwrap(),
    );
    let mut y = [0u8, 7];
    // 2^62 bytes: no malloc gives that.
    let e = square
        .call(&mut [Arg::Int((1 << 31) - 1), Arg::Buf(BufArg::new(&mut y, &[2]))])
        .unwrap_err();
    assert!(matches!(e, JitError::Alloc(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("'t'") && msg.contains("'square'") && msg.contains("elements"),
        "{msg}"
    );
    // (2^31 - 1)^3 * 4 bytes overflows 64 bits.
    let mut f = [0f32; 2];
    let e = cube
        .call(&mut [Arg::Int((1 << 31) - 1), Arg::Buf(BufArg::new(&mut f, &[2]))])
        .unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
    // From a callee inside a parallel loop, through the caller.
    let mut y = [0u8, 7, 0, 7];
    let mut z = [0u8; 2];
    let e = rows
        .call(&mut [
            Arg::Int((1 << 31) - 1),
            Arg::Buf(BufArg::new(&mut y, &[2, 2])),
            Arg::Buf(BufArg::new(&mut z, &[2])),
        ])
        .unwrap_err();
    assert!(
        e.to_string().contains("'t'") && e.to_string().contains("'rows'"),
        "{e}"
    );
    // Still usable.
    rows.call(&mut [
        Arg::Int(3),
        Arg::Buf(BufArg::new(&mut y, &[2, 2])),
        Arg::Buf(BufArg::new(&mut z, &[2])),
    ])
    .unwrap();
    assert_eq!((y, z), ([7, 7, 7, 7], [1, 0]));
}

/// Item 11: a written window whose strides map two indices to one element is refused, so a
/// parallel loop proved race-free over distinct elements cannot race; layouts that keep elements
/// apart (dense, transposed, padded) and read-only overlapping views are accepted.
#[test]
fn written_windows_whose_strides_overlap_are_rejected() {
    let src = "
proc add1(n: size, dst: [f32][n]) {
    for i in par(0..n) {
        dst[i] += 1.0;
    }
}
proc fill(m: size, n: size, d: [i32][m, n]) {
    for i in 0..m {
        for j in 0..n {
            d[i, j] = 1;
        }
    }
}
proc sum(n: size, src: [f32][n], out: f32) {
    out = 0.0;
    for i in 0..n {
        out += src[i];
    }
}
";
    let dir = tempfile::tempdir().unwrap();
    let m = jit(&dir).compile(&procs(src)).unwrap();
    let add1 = m.kernel("add1").unwrap();
    let mut one = [0f32; 1];
    let e = add1
        .call(&mut [
            Arg::Int(1 << 16),
            Arg::Buf(BufArg::strided(&mut one, &[1 << 16], &[0])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Alias(_)), "{e:?}");
    assert!(e.to_string().contains("'dst'"), "{e}");
    assert_eq!(one[0], 0.0, "nothing ran");

    let fill = m.kernel("fill").unwrap();
    let run = |shape: [usize; 2], strides: [isize; 2]| {
        let mut data = vec![0i32; 64];
        fill.call(&mut [
            Arg::Int(shape[0] as i64),
            Arg::Int(shape[1] as i64),
            Arg::Buf(BufArg::strided(&mut data, &shape, &strides)),
        ])
        .map(|()| data.iter().filter(|v| **v == 1).count())
    };
    // Rows that overlap, columns that coincide, a zero stride: refused.
    for strides in [[1, 1], [2, 1], [0, 1], [4, 0]] {
        let r = run([4, 4], strides);
        assert!(matches!(r, Err(JitError::Alias(_))), "{strides:?}: {r:?}");
    }
    // Dense, transposed, padded, and a dimension of extent 1 with any stride: accepted.
    assert_eq!(run([4, 4], [4, 1]).unwrap(), 16);
    assert_eq!(run([4, 4], [1, 4]).unwrap(), 16);
    assert_eq!(run([4, 4], [6, 1]).unwrap(), 16);
    assert_eq!(run([1, 4], [0, 1]).unwrap(), 4);

    // Reading one element many times is fine.
    let sum = m.kernel("sum").unwrap();
    let (x, mut out) = ([2.5f32], 0f32);
    sum.call(&mut [
        Arg::Int(4),
        Arg::Buf(BufArg::strided_ref(&x, &[4], &[0])),
        Arg::Buf(BufArg::scalar_mut(&mut out)),
    ])
    .unwrap();
    assert_eq!(out, 10.0);
}

/// Items 7 and 18: control values enter within +-(2^31 - 1) (sizes from 1), window strides
/// too; the bound itself is accepted.
#[test]
fn control_values_outside_the_bound_are_errors() {
    let src = "
proc pick(n: size, k: index, s: stride, w: [f32][1], y: f32[n]) {
    for i in 0..n {
        if k + i > 2147483640 or s < -2147483640 or stride(w, 0) > 2147483640 {
            y[i] = w[0];
        }
    }
}
";
    let dir = tempfile::tempdir().unwrap();
    let pick = jit(&dir)
        .compile(&procs(src))
        .unwrap()
        .kernel("pick")
        .unwrap();
    let max = (1i64 << 31) - 1;
    let call = |n: i64, k: i64, s: i64, ws: isize| {
        let w = [3.0f32];
        let mut y = [0f32; 2];
        pick.call(&mut [
            Arg::Int(n),
            Arg::Int(k),
            Arg::Int(s),
            Arg::Buf(BufArg::strided_ref(&w, &[1], &[ws])),
            Arg::Buf(BufArg::new(&mut y, &[2])),
        ])
        .map(|()| y)
    };
    assert_eq!(call(2, max, 0, 1).unwrap(), [3.0, 3.0]);
    assert_eq!(call(2, -max, -max, 1).unwrap(), [3.0, 3.0]);
    assert_eq!(call(2, 0, 0, max as isize).unwrap(), [3.0, 3.0]);
    assert_eq!(call(2, 0, 0, 1).unwrap(), [0.0, 0.0]);
    for (k, s, ws) in [
        (max + 1, 0, 1),
        (-max - 1, 0, 1),
        (i64::MIN, 0, 1),
        (0, max + 1, 1),
        (0, i64::MIN, 1),
        (0, 0, max as isize + 1),
    ] {
        let r = call(2, k, s, ws);
        assert!(matches!(r, Err(JitError::Range(_))), "{k} {s} {ws}: {r:?}");
    }
    // The size argument must equal y's extent; beyond the bound it is refused first.
    let w = [3.0f32];
    let mut y = [0f32; 2];
    let r = pick.call(&mut [
        Arg::Int(max + 1),
        Arg::Int(0),
        Arg::Int(0),
        Arg::Buf(BufArg::strided_ref(&w, &[1], &[1])),
        Arg::Buf(BufArg::new(&mut y, &[2])),
    ]);
    assert!(matches!(r, Err(JitError::Size(_))), "{r:?}");
}

const CONFIGS: &str = "
config C { k: index, s: f32 }
proc set(v: index) {
    C.k = v;
    C.s = 0.5;
}
proc get(y: f32[2]) {
    if C.k == 7 {
        y[0] = 1.0;
    } else {
        y[0] = 2.0;
    }
    y[1] = C.s;
}
";

/// Item 12: `call` runs on a fresh zeroed context, `call_with` on the caller's, which keeps
/// what a call writes for the next call given it (of any kernel of the module).
#[test]
fn config_state_is_per_call_or_in_the_callers_context() {
    let dir = tempfile::tempdir().unwrap();
    let m = jit(&dir).compile(&procs(CONFIGS)).unwrap();
    let (set, get) = (m.kernel("set").unwrap(), m.kernel("get").unwrap());
    let mut y = [0f32; 2];
    set.call(&mut [Arg::Int(7)]).unwrap();
    get.call(&mut [Arg::Buf(BufArg::new(&mut y, &[2]))])
        .unwrap();
    assert_eq!(y, [2.0, 0.0], "nothing persists across `call`s");

    let mut ctx = m.context();
    set.call_with(&mut ctx, &mut [Arg::Int(7)]).unwrap();
    get.call_with(&mut ctx, &mut [Arg::Buf(BufArg::new(&mut y, &[2]))])
        .unwrap();
    assert_eq!(y, [1.0, 0.5]);
    ctx.reset();
    get.call_with(&mut ctx, &mut [Arg::Buf(BufArg::new(&mut y, &[2]))])
        .unwrap();
    assert_eq!(y, [2.0, 0.0]);

    // A context of other configs is refused; one of the same configs from another module is not.
    let other = jit(&dir)
        .compile(&procs("config D { k: index }\nproc setd() { D.k = 1; }"))
        .unwrap();
    let e = set
        .call_with(&mut other.context(), &mut [Arg::Int(7)])
        .unwrap_err();
    assert!(matches!(e, JitError::Context(_)), "{e:?}");
    let same = jit(&dir).compile(&procs(CONFIGS)[1..]).unwrap();
    let mut shared = same.context();
    set.call_with(&mut shared, &mut [Arg::Int(7)]).unwrap();
    same.kernel("get")
        .unwrap()
        .call_with(&mut shared, &mut [Arg::Buf(BufArg::new(&mut y, &[2]))])
        .unwrap();
    assert_eq!(y, [1.0, 0.5]);
}

/// Item 12: `Kernel` is `Sync`; threads calling a kernel that writes and reads a config field at
/// once must not see each other's writes. (Compiled at -O0 so every access goes to memory: with
/// the configs in C globals, 9 of these 400 calls saw another thread's value.)
#[test]
fn concurrent_calls_that_write_configs_do_not_race() {
    let src = "
config C { k: index }
proc stamp(v: index, n: size, y: i32[n]) {
    C.k = v;
    for i in 0..n {
        y[i] = 0;
    }
    for i in 0..n {
        if C.k == v {
            y[i] = 1;
        }
    }
}
";
    let dir = tempfile::tempdir().unwrap();
    let j = Jit::with_compiler(dir.path(), "cc", vec!["-O0".into()]).unwrap();
    let stamp = j.compile(&procs(src)).unwrap().kernel("stamp").unwrap();
    std::thread::scope(|s| {
        for t in 0..4i64 {
            let stamp = &stamp;
            s.spawn(move || {
                let mut y = vec![0i32; 50_000];
                for call in 0..100 {
                    stamp
                        .call(&mut [
                            Arg::Int(t * 100 + call),
                            Arg::Int(50_000),
                            Arg::Buf(BufArg::new(&mut y, &[50_000])),
                        ])
                        .unwrap();
                    assert!(y.iter().all(|v| *v == 1), "thread {t} saw another's config");
                }
            });
        }
    });
}

fn truncate(path: &std::path::Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Item 14: a truncated, emptied or altered cache entry is detected before it is loaded (a
/// truncated one used to raise SIGBUS in `dlopen`, an empty one to fail for good) and rebuilt,
/// also when several threads find it at once.
#[test]
fn damaged_cache_entries_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let j = jit(&dir);
    let src = procs(CONFIGS);
    let path = j.compile(&src).unwrap().path().to_path_buf();
    let whole = std::fs::read(&path).unwrap();
    let check = |j: &Jit| {
        let m = j.compile(&src).unwrap();
        let mut y = [0f32; 2];
        m.kernel("get")
            .unwrap()
            .call(&mut [Arg::Buf(BufArg::new(&mut y, &[2]))])
            .unwrap();
        assert_eq!(y, [2.0, 0.0]);
        // Rebuilt and sealed again (the object embeds its temporary's name, so the bytes may
        // differ from the first build).
        let now = std::fs::read(m.path()).unwrap();
        assert!(now.len() > whole.len() / 2 && now.ends_with(b"WEFTSO01"));
    };
    // Each damage with the module unloaded, so the next compile opens the file again.
    truncate(&path, whole.len() as u64 / 2);
    check(&j);
    truncate(&path, 0);
    check(&j);
    let mut altered = whole.clone();
    altered[whole.len() / 3] ^= 0x40;
    std::fs::write(&path, &altered).unwrap();
    check(&j);
    // Without the trailer (an entry of an older weft, or a foreign file).
    std::fs::write(&path, &whole[..whole.len() - 48]).unwrap();
    check(&j);
    truncate(&path, 100);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| check(&jit(&dir)));
        }
    });
}

/// Item 14: temporaries left by a compile that was killed are removed when a JIT opens the
/// cache; those of running compiles stay.
#[test]
fn temporaries_of_killed_compiles_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    // No process has an id above the kernel's limit (2^22).
    let dead = ["tmp-4000000000-0-1.c", "tmp-4000000000-0-1.so"];
    let mine = format!("tmp-{}-77-0.so", std::process::id());
    let old = "tmp-1-5-0.so";
    for f in dead.iter().chain([&mine.as_str(), &old]) {
        std::fs::write(dir.path().join(f), b"partial").unwrap();
    }
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86400);
    std::fs::File::options()
        .write(true)
        .open(dir.path().join(old))
        .unwrap()
        .set_modified(two_days_ago)
        .unwrap();
    let _j = jit(&dir);
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![mine], "{left:?}");
}

/// An extension this CPU lacks, if any.
fn lacking_extension() -> Option<&'static str> {
    weft_jit::isa::EXTENSIONS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| weft_jit::isa::missing(&[n.to_string()]).is_some())
}

/// New-user item: a kernel that needs an instruction-set extension the CPU lacks is refused
/// before it is compiled or loaded (never an illegal instruction); so is an unknown extension.
#[test]
fn kernels_needing_missing_extensions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut names = vec!["x87fancy"];
    names.extend(lacking_extension());
    for isa in names {
        let src = format!(
            "memory VEC {{\n header \"#error the unit must not be compiled\"\n alloc \"{{type}} {{name}}[{{size}}];\"\n free \"\"\n access \"{{name}}[{{offset}}]\"\n addressable true\n isa \"{isa}\"\n}}\nproc k(x: f32[4] @ VEC) {{\n x[0] = 1.0;\n}}\n"
        );
        let e = jit(&dir).compile(&procs(&src)).err().expect("refused");
        assert!(matches!(e, JitError::Isa(_)), "{isa}: {e:?}");
        assert!(e.to_string().contains(isa), "{e}");
    }
}

/// A kernel linked ahead of time checks the CPU when called, before its code runs.
#[test]
fn aot_kernels_check_the_cpu_before_running() {
    let Some(isa) = lacking_extension() else {
        return;
    };
    unsafe extern "C" fn never(
        _: *mut std::ffi::c_void,
        _: *const weft_jit::WeftArg,
        _: i64,
        _: *mut std::ffi::c_char,
        _: i64,
    ) -> i32 {
        std::process::abort()
    }
    let info = weft_c::EntryInfo {
        name: "k".into(),
        direct_symbol: "ns_k".into(),
        symbol: "ns_k_entry".into(),
        args: vec![],
        context: weft_c::ContextInfo {
            signature: String::new(),
            bytes: 8,
        },
        isa: vec![isa.to_string()],
    };
    // SAFETY: `never` has the entry signature; it must not be called.
    let k = unsafe { weft_jit::Kernel::from_entry(never, info) };
    assert!(matches!(k.call(&mut []), Err(JitError::Isa(_))));
}

/// New-user item: AVX-512 kernels compile whatever the configured flags (here no
/// `-march=native`), since the library declares the extension; and a file that declares an
/// instruction compiles as a whole (instructions are not exported).
#[test]
fn avx512_kernels_compile_without_march_native() {
    let src = r#"
import "avx512";
instr zero16(dst: [f32][16] @ DRAM) "for (int z = 0; z < 16; z++) (&{dst_data})[z] = 0.0f;" {
    for i in 0..16 {
        dst[i] = 0.0;
    }
}
proc vec_fma(n: size, a: f32[n, 16] @ DRAM, b: f32[n, 16] @ DRAM, c: f32[16] @ DRAM) {
    alloc acc: f32[16] @ AVX512;
    alloc va: f32[16] @ AVX512;
    alloc vb: f32[16] @ AVX512;
    zero16(c);
    mm512_loadu_ps(acc, c);
    for i in 0..n {
        mm512_loadu_ps(va, a[i, 0:16]);
        mm512_loadu_ps(vb, b[i, 0:16]);
        mm512_fmadd_ps(acc, va, vb);
    }
    mm512_storeu_ps(c, acc);
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let r = jit(&dir).compile(&procs(src));
    if weft_jit::isa::missing(&["avx512f".into()]).is_some() {
        assert!(matches!(r, Err(JitError::Isa(_))), "{:?}", r.err());
        return;
    }
    let m = r.unwrap();
    let names: Vec<&str> = m.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["vec_fma"]);
    let a: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let b = vec![2.0f32; 32];
    let mut c = vec![9.0f32; 16];
    m.kernel("vec_fma")
        .unwrap()
        .call(&mut [
            Arg::Int(2),
            Arg::Buf(BufArg::from_slice(&a, &[2, 16])),
            Arg::Buf(BufArg::from_slice(&b, &[2, 16])),
            Arg::Buf(BufArg::new(&mut c, &[16])),
        ])
        .unwrap();
    let want: Vec<f32> = (0..16)
        .map(|j| 2.0 * (j as f32 + (j + 16) as f32))
        .collect();
    assert_eq!(c, want);
}

/// An instruction whose buffers are in ordinary memories states the extension, header and
/// fence its C needs (`isa`, `header`, `finish`): the unit is compiled for the extension and
/// refused without it, the header comes once, and the entry point fences before it returns.
/// The non-temporal store takes its streaming form only at 64-byte aligned addresses: every
/// offset of the destination within a line stores the same values.
#[test]
fn instructions_state_their_extension_header_and_fence() {
    let src = r#"
import "avx512";
proc mul_stream(n: size, a: f32[n, 16] @ DRAM, b: f32[n, 16] @ DRAM, y: f32[n, 16] @ DRAM, z: f32[n, 16] @ DRAM) {
    for i in 0..n {
        alloc va: f32[16] @ AVX512;
        alloc vb: f32[16] @ AVX512;
        alloc t: f32[16] @ DRAM_STACK;
        mm512_loadu_ps(va, a[i, 0:16]);
        mm512_loadu_ps(vb, b[i, 0:16]);
        mm512_mul_ps(va, va, vb);
        mm512_storeu_ps(z[i, 0:16], va);
        for j in 0..16 {
            t[j] = a[i, j] - b[i, j];
        }
        mm512_stream_ps(y[i, 0:16], t);
    }
}
"#;
    let ps = procs(src);
    let unit = weft_c::emit(&ps).unwrap();
    assert_eq!(unit.isa, vec!["avx512f".to_string()]);
    assert_eq!(unit.source.matches("#include <immintrin.h>").count(), 1);
    assert_eq!(unit.source.matches("_mm_sfence();").count(), 1);
    // Without the AVX512 memory, the instruction's own clauses are all the unit has; an entry
    // that can fail (a DRAM allocation) fences on its way out too.
    let only = procs(
        r#"
import "avx512";
proc copy_stream(n: size, a: f32[n, 16] @ DRAM, y: f32[n, 16] @ DRAM) {
    alloc big: f32[n] @ DRAM;
    for i in 0..n {
        alloc t: f32[16] @ DRAM_STACK;
        for j in 0..16 {
            t[j] = a[i, j];
        }
        mm512_stream_ps(y[i, 0:16], t);
        big[i] = t[0];
    }
    free big;
}
proc untouched(y: f32[1] @ DRAM) {
    y[0] = 1.0;
}
"#,
    );
    let unit = weft_c::emit(&only).unwrap();
    assert_eq!(unit.isa, vec!["avx512f".to_string()]);
    assert!(unit
        .source
        .contains("/* instruction mm512_stream_ps */\n#include <immintrin.h>"));
    assert_eq!(unit.source.matches("_mm_sfence();").count(), 1);
    assert!(unit.source.contains("_mm_sfence();\n    return rc;"));
    let dir = tempfile::tempdir().unwrap();
    let r = jit(&dir).compile(&ps);
    if weft_jit::isa::missing(&["avx512f".into()]).is_some() {
        assert!(matches!(r, Err(JitError::Isa(_))), "{:?}", r.err());
        return;
    }
    let m = r.unwrap();
    let k = m.kernel("mul_stream").unwrap();
    let n = 3;
    let a: Vec<f32> = (0..n * 16).map(|i| i as f32 * 0.5 + 1.0).collect();
    let b: Vec<f32> = (0..n * 16).map(|i| 3.0 - i as f32 * 0.25).collect();
    for offset in 0..16 {
        let mut y = vec![-1.0f32; n * 16 + 16];
        let mut z = vec![-1.0f32; n * 16];
        k.call(&mut [
            Arg::Int(n as i64),
            Arg::Buf(BufArg::from_slice(&a, &[n, 16])),
            Arg::Buf(BufArg::from_slice(&b, &[n, 16])),
            Arg::Buf(BufArg::new(&mut y[offset..offset + n * 16], &[n, 16])),
            Arg::Buf(BufArg::new(&mut z, &[n, 16])),
        ])
        .unwrap();
        for i in 0..n * 16 {
            assert_eq!(y[offset + i], a[i] - b[i], "offset {offset}, element {i}");
            assert_eq!(z[i], a[i] * b[i], "element {i}");
        }
        assert!(y[..offset]
            .iter()
            .chain(&y[offset + n * 16..])
            .all(|&v| v == -1.0));
    }
    let m = jit(&dir).compile(&only).unwrap();
    let mut y = vec![0.0f32; n * 16];
    m.kernel("copy_stream")
        .unwrap()
        .call(&mut [
            Arg::Int(n as i64),
            Arg::Buf(BufArg::from_slice(&a, &[n, 16])),
            Arg::Buf(BufArg::new(&mut y, &[n, 16])),
        ])
        .unwrap();
    assert_eq!(y, a);
}
