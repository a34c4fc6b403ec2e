//! Compile, cache, load and call kernels built from hand-written IR.

use ndarray::{s, Array2};
use std::sync::Arc;
use std::time::Instant;
use weft_ir::build::ProcBuilder;
use weft_ir::{BinOp, DType, Expr, Memory, Proc};
use weft_jit::{Arg, BufArg, Jit, JitError};

fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

/// `saxpy(n, a, x: [f32][n], y: f32[n])`: y += a * x, with `n % 2 == 0` required.
fn saxpy(name: &str) -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new(name, &mem);
    let n = p.size("n");
    let a = p.scalar("a", DType::F32);
    let x = p.window("x", DType::F32, vec![n.clone()]);
    let y = p.tensor("y", DType::F32, vec![n.clone()]);
    p.assert(Expr::binary(BinOp::Eq, n.clone() % 2, Expr::int(0)));
    p.body().for_("i", 0, &n, |b, i| {
        b.reduce(&y, vec![i.clone()], a.get() * x.at(vec![i.clone()]));
    });
    p.finish()
}

/// `add2(m, n, A: [f64][m, n], B: f64[m, n], C: [f64][m, n])`: C = A + B.
fn add2() -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new("add2", &mem);
    let m = p.size("m");
    let n = p.size("n");
    let a = p.window("A", DType::F64, vec![m.clone(), n.clone()]);
    let b = p.tensor("B", DType::F64, vec![m.clone(), n.clone()]);
    let c = p.window("C", DType::F64, vec![m.clone(), n.clone()]);
    p.body().for_("i", 0, &m, |bb, i| {
        bb.for_("j", 0, &n, |bj, j| {
            let ij = vec![i.clone(), j.clone()];
            bj.assign(&c, ij.clone(), a.at(ij.clone()) + b.at(ij));
        });
    });
    p.finish()
}

fn jit(dir: &tempfile::TempDir) -> Jit {
    Jit::with_compiler(dir.path(), "cc", vec!["-O2".into()]).unwrap()
}

fn so_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn call_with_slices() {
    let dir = tempfile::tempdir().unwrap();
    let module = jit(&dir).compile(&[saxpy("saxpy")]).unwrap();
    let k = module.kernel("saxpy").unwrap();
    let a = 2.0f32;
    let x: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; 8];
    k.call(&mut [
        Arg::Int(8),
        Arg::Buf(BufArg::scalar(&a)),
        Arg::Buf(BufArg::from(&x[..])),
        Arg::Buf(BufArg::new(&mut y, &[8])),
    ])
    .unwrap();
    let want: Vec<f32> = (0..8).map(|i| 1.0 + 2.0 * i as f32).collect();
    assert_eq!(y, want);
}

#[test]
fn call_with_ndarray_views() {
    let dir = tempfile::tempdir().unwrap();
    let module = jit(&dir).compile(&[add2()]).unwrap();
    let k = module.kernel("add2").unwrap();
    let a = Array2::from_shape_fn((4, 3), |(i, j)| (i * 10 + j) as f64);
    let b = Array2::from_shape_fn((3, 4), |(i, j)| (i * 100 + j) as f64);
    let mut c = Array2::<f64>::zeros((3, 8));
    // A transposed (strides [1, 3]); C every other column (strides [8, 2]).
    k.call(&mut [
        Arg::Int(3),
        Arg::Int(4),
        Arg::Buf(a.t().into()),
        Arg::Buf(b.view().into()),
        Arg::Buf(c.slice_mut(s![.., ..;2]).into()),
    ])
    .unwrap();
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(c[[i, 2 * j]], a[[j, i]] + b[[i, j]]);
            assert_eq!(c[[i, 2 * j + 1]], 0.0);
        }
    }
}

#[test]
fn second_compile_hits_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let j = jit(&dir);
    let p = saxpy("cached");
    let t0 = Instant::now();
    let m1 = j.compile(std::slice::from_ref(&p)).unwrap();
    let first = t0.elapsed();
    let t1 = Instant::now();
    let m2 = j.compile(&[p]).unwrap();
    let second = t1.elapsed();
    assert_eq!(m1.path(), m2.path());
    assert!(
        second * 3 < first,
        "cache hit took {second:?}, compile {first:?}"
    );
    let files = so_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with(".so"));
    // Another JIT on the same directory reuses the file too.
    let m3 = jit(&dir).compile(&[saxpy("cached")]).unwrap();
    assert_eq!(m3.path(), m1.path());
    assert_eq!(so_files(dir.path()).len(), 1);
}

/// A module's description loads its shared object again without the procs: the same entry
/// points, callable; a description that was altered, or an object that was, is refused.
#[test]
fn described_modules_load_again_without_their_c() {
    let dir = tempfile::tempdir().unwrap();
    let j = jit(&dir);
    let m = j.compile(&[saxpy("described"), add2()]).unwrap();
    let text = m.describe().unwrap();
    assert!(!text.contains('\n'), "{text}");
    let again = j.load_described(&text).unwrap();
    assert_eq!(again.path(), m.path());
    assert_eq!(again.entries(), m.entries());
    let a = 3.0f32;
    let x = [1.0f32; 4];
    let mut y = vec![0.5f32; 4];
    again
        .kernel("described")
        .unwrap()
        .call(&mut [
            Arg::Int(4),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..])),
            Arg::Buf(BufArg::new(&mut y, &[4])),
        ])
        .unwrap();
    assert_eq!(y, vec![3.5f32; 4]);
    let words: Vec<&str> = text.split(' ').collect();
    let file = words[1];
    let altered = [
        String::new(),
        words[0].to_string(),
        words[..words.len() - 1].join(" "),
        format!("{text} =extra"),
        text.replacen("weft-module/1", "weft-module/2", 1),
        text.replacen(file, "=../escape.so", 1),
        text.replacen(file, "=/tmp/escape.so", 1),
        text.replacen(file, "=other.txt", 1),
        text.replacen("=f32", "=f33", 1),
        text.replacen("=written", "=both", 1),
        // A context larger than any config set (the module's context bytes are the fourth
        // token): refused, not allocated.
        {
            let mut w = words.clone();
            w[3] = "=18446744073709551615";
            w.join(" ")
        },
    ];
    for bad in &altered {
        assert!(j.load_described(bad).is_err(), "accepted: {bad}");
    }
    // Another configuration of the compiler has another fingerprint.
    let other = Jit::with_compiler(dir.path(), "cc", vec!["-O1".into()]).unwrap();
    assert_ne!(other.fingerprint(), j.fingerprint());
    assert_eq!(jit(&dir).fingerprint(), j.fingerprint());
    // A damaged object is refused (compiling the procs again rebuilds it). It is replaced by
    // a rename, as the cache replaces its entries: the loaded one keeps its pages.
    let mut bytes = std::fs::read(m.path()).unwrap();
    bytes[100] ^= 1;
    let aside = dir.path().join("damaged");
    std::fs::write(&aside, bytes).unwrap();
    std::fs::rename(&aside, m.path()).unwrap();
    assert!(matches!(j.load_described(&text), Err(JitError::Io(_))));
}

/// DRAM's allocator (lib/std.weft): buffers 64-byte aligned; a freed block of 64 KiB or more
/// is reused by the next allocation of about its size (the smallest that fits), and with every
/// slot full a larger block takes the smallest one's place; a request that overflows fails.
/// Run under UndefinedBehaviorSanitizer (AddressSanitizer builds take the exact allocator).
#[test]
fn dram_allocator_reuses_aligned_blocks() {
    let header = dram().header.clone();
    let harness = format!(
        r#"#include <assert.h>
#include <string.h>
{header}
int main(void) {{
    for (size_t n = 1; n < 60000; n = n * 3 + 1) {{
        char *p = (char *) weft_dram_alloc(n);
        assert(p != NULL && (uintptr_t) p % 64 == 0);
        memset(p, 1, n);
        weft_dram_free(p);
    }}
    void *a = weft_dram_alloc(1 << 20);
    weft_dram_free(a);
    void *b = weft_dram_alloc((1 << 20) - 1000);
    assert(a == b);
    void *s = weft_dram_alloc(100000), *l = weft_dram_alloc(150000);
    weft_dram_free(l);
    weft_dram_free(s);
    void *f = weft_dram_alloc(90000);
    assert(f == s);
    void *g = weft_dram_alloc(120000);
    assert(g == l);
    weft_dram_free(f);
    weft_dram_free(g);
    void *blocks[WEFT_DRAM_SLOTS];
    for (int i = 0; i < WEFT_DRAM_SLOTS; i++) blocks[i] = weft_dram_alloc(70000 + 1000 * i);
    for (int i = 0; i < WEFT_DRAM_SLOTS; i++) weft_dram_free(blocks[i]);
    weft_dram_free(b);
    void *big = weft_dram_alloc(8 << 20);
    assert((uintptr_t) big % 64 == 0 && (uintptr_t) l % 64 == 0);
    weft_dram_free(big);
    assert(weft_dram_alloc(8 << 20) == big);
    assert(weft_dram_alloc(1 << 20) == b);
    assert(weft_dram_alloc((size_t) -1) == NULL);
    assert(weft_dram_alloc((size_t) -100) == NULL);
    return 0;
}}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let (c, exe) = (dir.path().join("a.c"), dir.path().join("a"));
    std::fs::write(&c, harness).unwrap();
    let built = std::process::Command::new("cc")
        .args([
            "-std=c99",
            "-O1",
            "-g",
            "-fsanitize=undefined",
            "-fno-sanitize-recover=undefined",
        ])
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = std::process::Command::new(&exe).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    // Under AddressSanitizer a write one past a buffer is caught (no slack, no reuse).
    let overrun = format!(
        "{header}\nint main(void) {{\n    char *p = (char *) weft_dram_alloc(100000);\n    ((volatile char *) p)[100000] = 1;\n    weft_dram_free(p);\n    return 0;\n}}\n"
    );
    std::fs::write(&c, overrun).unwrap();
    let built = std::process::Command::new("cc")
        .args(["-std=c99", "-O1", "-g", "-fsanitize=address"])
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(built.status.success());
    let ran = std::process::Command::new(&exe).output().unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        !ran.status.success() && stderr.contains("heap-buffer-overflow"),
        "{stderr}"
    );
}

#[test]
fn concurrent_compiles_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                let j = Jit::with_compiler(&path, "cc", vec!["-O2".into()]).unwrap();
                let m = j.compile(&[saxpy("racy")]).unwrap();
                let k = m.kernel("racy").unwrap();
                let a = 1.0f32;
                let x = [3.0f32; 4];
                let mut y = vec![1.0f32; 4];
                k.call(&mut [
                    Arg::Int(4),
                    Arg::Buf(BufArg::scalar(&a)),
                    Arg::Buf(BufArg::from(&x[..])),
                    Arg::Buf(BufArg::new(&mut y, &[4])),
                ])
                .unwrap();
                y
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), vec![4.0f32; 4]);
    }
    let files = so_files(&path);
    assert_eq!(files.len(), 1, "{files:?}");
}

#[test]
fn misuse_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let module = jit(&dir).compile(&[saxpy("saxpy"), add2()]).unwrap();
    let k = module.kernel("saxpy").unwrap();
    assert!(matches!(
        module.kernel("nope"),
        Err(JitError::NoSuchKernel(_))
    ));
    let a = 2.0f32;
    let ad = 2.0f64;
    let x = vec![1.0f32; 8];
    let mut y = vec![1.0f32; 8];
    let mut y64 = vec![1.0f64; 8];
    let xs = [1.0f32; 4];

    let e = k
        .call(&mut [Arg::Int(8), Arg::Buf(BufArg::scalar(&a))])
        .unwrap_err();
    assert!(
        matches!(
            e,
            JitError::ArgCount {
                expected: 4,
                got: 2
            }
        ),
        "{e}"
    );

    let e = k
        .call(&mut [
            Arg::Bool(true),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::ArgKind(_)), "{e}");

    let e = k
        .call(&mut [
            Arg::Int(8),
            Arg::Buf(BufArg::scalar(&ad)),
            Arg::Buf(BufArg::from(&x[..])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Dtype(_)), "{e}");

    let e = k
        .call(&mut [
            Arg::Int(8),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from_slice(&x[..], &[2, 4])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Rank(_)), "{e}");

    // Shape disagrees with n: detected by the C entry.
    let e = k
        .call(&mut [
            Arg::Int(6),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap_err();
    assert!(matches!(&e, JitError::Shape(m) if m.contains("'x'")), "{e}");

    // Slice shorter than its claimed shape: detected in Rust.
    let e = k
        .call(&mut [
            Arg::Int(8),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from_slice(&xs[..], &[8])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap_err();
    assert!(
        matches!(&e, JitError::Shape(m) if m.contains("4 elements")),
        "{e}"
    );

    // A strided buffer for a dense parameter.
    let mut y2 = vec![1.0f32; 16];
    let e = k
        .call(&mut [
            Arg::Int(8),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..])),
            Arg::Buf(BufArg::strided(&mut y2, &[8], &[2])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Stride(_)), "{e}");

    // Negative strides from ndarray.
    let xa = ndarray::Array1::from_vec(x.clone());
    let e = k
        .call(&mut [
            Arg::Int(8),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(xa.slice(s![..;-1]).into()),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Stride(_)), "{e}");

    let e = k
        .call(&mut [
            Arg::Int(0),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..0])),
            Arg::Buf(BufArg::new(&mut y[..0], &[0])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Size(_)), "{e}");

    // n = 7 violates `n % 2 == 0`.
    let e = k
        .call(&mut [
            Arg::Int(7),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..7])),
            Arg::Buf(BufArg::new(&mut y[..7], &[7])),
        ])
        .unwrap_err();
    assert!(
        matches!(&e, JitError::Precondition(m) if m.contains("n % 2 == 0")),
        "{e}"
    );

    // y is written: a read-only slice is refused.
    let yr = [0.0f32; 8];
    let e = k
        .call(&mut [
            Arg::Int(8),
            Arg::Buf(BufArg::scalar(&a)),
            Arg::Buf(BufArg::from(&x[..])),
            Arg::Buf(BufArg::from(&yr[..])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::ReadOnly(_)), "{e}");

    // A wrong element type for a whole f64 buffer.
    let k2 = module.kernel("add2").unwrap();
    let e = k2
        .call(&mut [
            Arg::Int(2),
            Arg::Int(4),
            Arg::Buf(BufArg::new(&mut y64, &[2, 4])),
            Arg::Buf(BufArg::from_slice(&x, &[2, 4])),
            Arg::Buf(BufArg::new(&mut y, &[2, 4])),
        ])
        .unwrap_err();
    assert!(matches!(e, JitError::Dtype(_)), "{e}");
    // Nothing ran: the outputs are untouched.
    assert_eq!(y, vec![1.0f32; 8]);
}

#[test]
fn compiler_failure_is_reported_with_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let j = Jit::with_compiler(dir.path(), "cc", vec!["-fno-such-weft-flag".into()]).unwrap();
    match j.compile(&[saxpy("bad")]) {
        Err(JitError::Compile { stderr, command }) => {
            assert!(stderr.contains("no-such-weft-flag"), "{stderr}");
            assert!(command.contains("-ffp-contract=off"), "{command}");
            assert!(command.contains("-fno-trapping-math"), "{command}");
        }
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("compiled with a bogus flag"),
    }
    let j = Jit::with_compiler(dir.path(), "false", vec![]).unwrap();
    assert!(matches!(
        j.compile(&[saxpy("bad")]),
        Err(JitError::Compile { .. })
    ));
    let j = Jit::with_compiler(dir.path(), "/nonexistent/weft-cc", vec![]).unwrap();
    assert!(matches!(
        j.compile(&[saxpy("bad")]),
        Err(JitError::Compile { .. })
    ));
    // No temporary files are left behind.
    assert!(
        so_files(dir.path()).is_empty(),
        "{:?}",
        so_files(dir.path())
    );
}

/// Integer edge cases under UBSan: Euclidean division by -1 and 0, wrapping, float-to-int casts.
#[test]
fn sanitized_kernel_runs_clean() {
    let mem = dram();
    let mut p = ProcBuilder::new("edge", &mem);
    let n = p.size("n");
    let a = p.tensor("a", DType::I32, vec![n.clone()]);
    let b = p.tensor("b", DType::I32, vec![n.clone()]);
    let f = p.tensor("f", DType::F32, vec![n.clone()]);
    let q = p.tensor("q", DType::I32, vec![n.clone()]);
    let r = p.tensor("r", DType::I64, vec![n.clone()]);
    let u = p.tensor("u", DType::U16, vec![n.clone()]);
    p.body().for_("i", 0, &n, |bb, i| {
        let at = |t: &weft_ir::build::Buf| t.at(vec![i.clone()]);
        bb.assign(
            &q,
            vec![i.clone()],
            at(&a) / at(&b) + at(&a) * at(&a) - (at(&a) % at(&b)),
        );
        bb.assign(&r, vec![i.clone()], Expr::cast(DType::I64, at(&f)));
        bb.assign(
            &u,
            vec![i.clone()],
            Expr::cast(DType::U16, at(&a)) * Expr::cast(DType::U16, at(&a)),
        );
    });
    let proc = p.finish();
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "-O1",
        "-g",
        "-fsanitize=undefined",
        "-fno-sanitize-recover=undefined",
    ];
    let j = Jit::with_compiler(
        dir.path(),
        "cc",
        flags.iter().map(|s| s.to_string()).collect(),
    )
    .unwrap();
    let k = j.compile(&[proc]).unwrap().kernel("edge").unwrap();
    let av = [i32::MIN, i32::MAX, -7, 65535, 9];
    let bv = [-1, 0, 2, -2, 0];
    let fv = [f32::NAN, 1e30, -1e30, -2.9, 2.9];
    let mut qv = [0i32; 5];
    let mut rv = [0i64; 5];
    let mut uv = [0u16; 5];
    k.call(&mut [
        Arg::Int(5),
        Arg::Buf(BufArg::from(&av[..])),
        Arg::Buf(BufArg::from(&bv[..])),
        Arg::Buf(BufArg::from(&fv[..])),
        Arg::Buf(BufArg::from(&mut qv[..])),
        Arg::Buf(BufArg::from(&mut rv[..])),
        Arg::Buf(BufArg::from(&mut uv[..])),
    ])
    .unwrap();
    for i in 0..5 {
        let (x, y) = (av[i], bv[i]);
        let div = if y == 0 { 0 } else { x.wrapping_div_euclid(y) };
        let rem = if y == 0 { 0 } else { x.wrapping_rem_euclid(y) };
        assert_eq!(
            qv[i],
            div.wrapping_add(x.wrapping_mul(x)).wrapping_sub(rem),
            "row {i}"
        );
        assert_eq!(rv[i], fv[i] as i64, "row {i}");
        assert_eq!(uv[i], (x as u16).wrapping_mul(x as u16), "row {i}");
    }
}

/// A call passes its arguments to C from the stack up to 16 of them and through the heap beyond:
/// a kernel of 18 arguments runs, and its C's error messages (written only on an error, into a
/// buffer the call does not clear) come back whole on both paths.
#[test]
fn calls_of_many_arguments_run_and_report_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mem = dram();
    let mut p = ProcBuilder::new("many", &mem);
    let sizes: Vec<Expr> = (0..16).map(|k| p.size(&format!("n{k}"))).collect();
    let x = p.window("x", DType::F32, vec![sizes[0].clone()]);
    let y = p.tensor("y", DType::F32, vec![sizes[0].clone()]);
    let sum = sizes[1..]
        .iter()
        .cloned()
        .fold(Expr::int(0), |acc, s| acc + s);
    p.assert(Expr::binary(BinOp::Lt, sum, Expr::int(100)));
    p.body().for_("i", 0, &sizes[0], |b, i| {
        b.assign(&y, vec![i.clone()], x.at(vec![i.clone()]));
    });
    let k = jit(&dir).compile(&[p.finish()]).unwrap();
    let k = k.kernel("many").unwrap();
    let x = [1.0f32, 2.0, 3.0];
    let mut y = [0.0f32; 3];
    let mut args: Vec<Arg> = (0..16)
        .map(|k| Arg::Int(if k == 0 { 3 } else { 1 }))
        .collect();
    args.push(Arg::Buf(BufArg::from(&x[..])));
    args.push(Arg::Buf(BufArg::new(&mut y[..], &[3])));
    k.call(&mut args).unwrap();
    drop(args);
    assert_eq!(y, x);
    // A precondition the C refuses, with its message, through the heap path.
    let mut args: Vec<Arg> = (0..16)
        .map(|k| Arg::Int(if k == 0 { 3 } else { 50 }))
        .collect();
    args.push(Arg::Buf(BufArg::from(&x[..])));
    args.push(Arg::Buf(BufArg::new(&mut y[..], &[3])));
    let e = k.call(&mut args).unwrap_err();
    assert!(
        matches!(&e, JitError::Precondition(m) if m.contains("< 100")),
        "{e}"
    );
}
