//! Emit C for hand-built procs and compile (and run) it with the system C compiler.

mod common;

use common::*;
use std::sync::Arc;
use weft_c::{emit, status, EntryArgKind};
use weft_ir::build::ProcBuilder;
use weft_ir::{BinOp, DType, Expr, MathFn, Proc, WinCoord};

/// `scale(n, row: [f32][n], s: f32)`: row[i] = row[i] * s.
fn scale_proc() -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new("scale", &mem);
    let n = p.size("n");
    let row = p.window("row", DType::F32, vec![n.clone()]);
    let s = p.scalar("s", DType::F32);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(&row, vec![i.clone()], row.at(vec![i.clone()]) * s.get());
    });
    p.finish()
}

/// `mm(M, N, K, A, B, C, alpha)`: C = alpha * (A @ B), through a temporary row and a call
/// taking a window.
fn matmul_proc() -> Arc<Proc> {
    let mem = dram();
    let stack = dram_stack();
    let scale = scale_proc();
    let mut p = ProcBuilder::new("mm", &mem);
    let m = p.size("M");
    let n = p.size("N");
    let k = p.size("K");
    let a = p.tensor("A", DType::F32, vec![m.clone(), k.clone()]);
    let b = p.tensor("B", DType::F32, vec![k.clone(), n.clone()]);
    let c = p.tensor("C", DType::F32, vec![m.clone(), n.clone()]);
    let alpha = p.scalar("alpha", DType::F32);
    p.body().for_("i", 0, &m, |bb, i| {
        let acc = bb.alloc("acc", DType::F32, vec![Expr::int(1)], &stack);
        bb.for_("j", 0, &n, |bj, j| {
            bj.assign(&acc, vec![Expr::int(0)], Expr::float(0.0));
            bj.for_("k", 0, &k, |bk, kk| {
                bk.reduce(
                    &acc,
                    vec![Expr::int(0)],
                    a.at(vec![i.clone(), kk.clone()]) * b.at(vec![kk.clone(), j.clone()]),
                );
            });
            bj.assign(&c, vec![i.clone(), j.clone()], acc.at(vec![Expr::int(0)]));
        });
        bb.call(
            &scale,
            vec![
                n.clone(),
                c.win(vec![
                    WinCoord::Point(i.clone()),
                    WinCoord::Interval(Expr::int(0), n.clone()),
                ]),
                alpha.all(),
            ],
        );
    });
    p.finish()
}

#[test]
fn matmul_compiles_warning_free() {
    let unit = emit(&[matmul_proc()]).unwrap();
    assert!(unit.source.contains("static void weft_p_scale("));
    assert!(unit.source.contains("struct weft_win_f32_1"));
    assert!(unit.source.contains("int32_t kernel_mm_entry("));
    assert!(unit
        .header
        .contains("int32_t kernel_mm(struct kernel_context *ctxt, "));
    assert!(!unit.header.contains("weft_p_"));
    assert_eq!(unit.entries.len(), 1);
    let e = &unit.entries[0];
    assert_eq!(e.symbol, "kernel_mm_entry");
    let written: Vec<bool> = e
        .args
        .iter()
        .map(|a| matches!(a.kind, EntryArgKind::Buffer { written: true, .. }))
        .collect();
    assert_eq!(
        written,
        vec![false, false, false, false, false, true, false]
    );
    compile_object("mm", &unit.source, &[]);
    // The header alone, twice (include guard), from C.
    let d = scratch("hdr");
    std::fs::write(d.join("k.h"), &unit.header).unwrap();
    std::fs::write(
        d.join("u.c"),
        "#include \"k.h\"\n#include \"k.h\"\nint use(void) { return WEFT_ERR_NULL; }\n",
    )
    .unwrap();
    cc(
        &d,
        &["-std=c99", "-Wall", "-Wextra", "-Werror", "-c", "u.c"],
    );
}

#[test]
fn matmul_runs_clean_under_sanitizers_and_validates_arguments() {
    let unit = emit(&[matmul_proc()]).unwrap();
    let main_c = r#"
#include <stdio.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
typedef struct weft_buffer { void *data; int32_t dtype; int32_t rank; const int64_t *shape; const int64_t *strides; } weft_buffer;
typedef struct weft_arg { int32_t kind; int64_t i; const weft_buffer *buf; } weft_arg;
int32_t kernel_mm_entry(void *ctxt, const weft_arg *args, int64_t nargs, char *err, int64_t err_len);
int main(void) {
    float A[6] = {1, 2, 3, 4, 5, 6};      /* 2x3 */
    float B[6] = {1, 0, 0, 1, 1, 1};      /* 3x2 */
    float C[4] = {0};
    float alpha = 2.0f;
    int64_t sa[2] = {2, 3}, ta[2] = {3, 1};
    int64_t sb[2] = {3, 2}, tb[2] = {2, 1};
    int64_t sc[2] = {2, 2}, tc[2] = {2, 1};
    weft_buffer bA = {A, 8, 2, sa, ta}, bB = {B, 8, 2, sb, tb}, bC = {C, 8, 2, sc, tc};
    weft_buffer bs = {&alpha, 8, 0, NULL, NULL};
    weft_arg args[7] = {{0, 2, NULL}, {0, 2, NULL}, {0, 3, NULL}, {2, 0, &bA}, {2, 0, &bB}, {2, 0, &bC}, {2, 0, &bs}};
    char err[256];
    int32_t rc = kernel_mm_entry(NULL, args, 7, err, sizeof err);
    printf("rc=%d C=%g %g %g %g\n", rc, C[0], C[1], C[2], C[3]);
    rc = kernel_mm_entry(NULL, args, 6, err, sizeof err); printf("count=%d %s\n", rc, err);
    args[0].kind = 1; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("kind=%d %s\n", rc, err); args[0].kind = 0;
    args[0].i = 0; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("size=%d %s\n", rc, err); args[0].i = 2;
    bA.dtype = 9; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("dtype=%d %s\n", rc, err); bA.dtype = 8;
    bA.rank = 1; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("rank=%d %s\n", rc, err); bA.rank = 2;
    sa[1] = 4; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("shape=%d %s\n", rc, err); sa[1] = 3;
    ta[0] = 4; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("stride=%d %s\n", rc, err); ta[0] = 3;
    bA.data = NULL; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("null=%d %s\n", rc, err); bA.data = A;
    rc = kernel_mm_entry(NULL, args, 7, NULL, 0); printf("noerr=%d\n", rc);
    bC.data = A + 2; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("alias=%d %s\n", rc, err); bC.data = C;
    bB.data = A; rc = kernel_mm_entry(NULL, args, 7, err, sizeof err); printf("readalias=%d\n", rc);
    return 0;
}
"#;
    let out = run_with_main("mmrun", &unit.source, main_c);
    let lines: Vec<&str> = out.lines().collect();
    // A @ B = [[1+3, 2+3], [4+6, 5+6]] = [[4, 5], [10, 11]]; times 2.
    assert_eq!(lines[0], "rc=0 C=8 10 20 22");
    let expect = [
        ("count", status::ARG_COUNT, "takes 7 arguments"),
        ("kind", status::ARG_KIND, "'M'"),
        ("size", status::SIZE, "'M'"),
        ("dtype", status::DTYPE, "'A'"),
        ("rank", status::RANK, "'A'"),
        (
            "shape",
            status::SHAPE,
            "dimension 1 has extent 4, expected 3",
        ),
        ("stride", status::STRIDE, "dimension 0 has stride 4"),
        ("null", status::NULL, "null data"),
    ];
    for (line, (tag, code, msg)) in lines[1..].iter().zip(expect) {
        assert!(line.starts_with(&format!("{tag}={code} ")), "{line}");
        assert!(line.contains(msg), "{line} lacks {msg}");
    }
    assert_eq!(lines[9], "noerr=0");
    assert!(
        lines[10].starts_with(&format!("alias={} ", status::ALIAS)),
        "{}",
        lines[10]
    );
    assert!(lines[10].contains("'A' and 'C'"), "{}", lines[10]);
    // Two read-only buffers may overlap.
    assert_eq!(lines[11], "readalias=0");
}

/// Integer and cast semantics: Euclidean division, wrapping, saturating casts.
fn ops_proc() -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new("ops", &mem);
    let n = p.size("n");
    let a = p.tensor("a", DType::I32, vec![n.clone()]);
    let b = p.tensor("b", DType::I32, vec![n.clone()]);
    let q = p.tensor("q", DType::I32, vec![n.clone()]);
    let r = p.tensor("r", DType::I32, vec![n.clone()]);
    let x = p.tensor("x", DType::U16, vec![n.clone()]);
    let m = p.tensor("m", DType::U16, vec![n.clone()]);
    let f = p.tensor("f", DType::F32, vec![n.clone()]);
    let c = p.tensor("c", DType::I32, vec![n.clone()]);
    let u = p.tensor("u", DType::U8, vec![n.clone()]);
    let s = p.tensor("s", DType::I8, vec![n.clone()]);
    p.body().for_("i", 0, &n, |bb, i| {
        let at = |t: &weft_ir::build::Buf| t.at(vec![i.clone()]);
        bb.assign(&q, vec![i.clone()], at(&a) / at(&b));
        bb.assign(&r, vec![i.clone()], at(&a) % at(&b));
        bb.assign(&m, vec![i.clone()], at(&x) * at(&x));
        bb.assign(&c, vec![i.clone()], Expr::cast(DType::I32, at(&f)));
        bb.assign(&u, vec![i.clone()], Expr::cast(DType::U8, at(&f)));
        bb.assign(&s, vec![i.clone()], Expr::cast(DType::I8, at(&a)));
        bb.reduce(&q, vec![i.clone()], at(&a));
    });
    p.finish()
}

#[test]
fn integer_semantics_match_rust() {
    let unit = emit(&[ops_proc()]).unwrap();
    let a: [i32; 6] = [7, -7, 7, -7, i32::MIN, 5];
    let b: [i32; 6] = [2, 2, -2, -2, -1, 0];
    let x: [u16; 6] = [65535, 300, 256, 2, 0, 40000];
    let f: [f32; 6] = [f32::NAN, 1e10, -1e10, -3.7, 3.7, 255.9];
    let main_c = format!(
        r#"
#include <stdio.h>
#include <math.h>
#include "k.h"
int main(void) {{
    int64_t shape[1] = {{6}}, strides[1] = {{1}};
    int32_t a[6] = {{7, -7, 7, -7, INT32_MIN, 5}}, b[6] = {{2, 2, -2, -2, -1, 0}}, q[6], r[6], c[6];
    uint16_t x[6] = {{65535, 300, 256, 2, 0, 40000}}, m[6];
    float f[6] = {{NAN, 1e10f, -1e10f, -3.7f, 3.7f, 255.9f}};
    uint8_t u[6]; int8_t s[6];
    weft_buffer ba = {{a, 5, 1, shape, strides}}, bb = {{b, 5, 1, shape, strides}}, bq = {{q, 5, 1, shape, strides}},
        br = {{r, 5, 1, shape, strides}}, bx = {{x, 4, 1, shape, strides}}, bm = {{m, 4, 1, shape, strides}},
        bf = {{f, 8, 1, shape, strides}}, bc = {{c, 5, 1, shape, strides}}, bu = {{u, 2, 1, shape, strides}},
        bs = {{s, 1, 1, shape, strides}};
    int rc = {sym}(NULL, 6, &ba, &bb, &bq, &br, &bx, &bm, &bf, &bc, &bu, &bs);
    printf("%d\n", rc);
    for (int i = 0; i < 6; i++) printf("%d %d %u %d %u %d\n", (int) q[i], (int) r[i], (unsigned) m[i], (int) c[i], (unsigned) u[i], (int) s[i]);
    return 0;
}}
"#,
        sym = unit.entries[0].direct_symbol
    );
    let d_src = unit.source.clone();
    let d = scratch("opsh");
    std::fs::write(d.join("k.h"), &unit.header).unwrap();
    // run_with_main writes into a fresh dir; include the header inline instead.
    let main_c = main_c.replace("#include \"k.h\"", &unit.header);
    let out = run_with_main("ops", &d_src, &main_c);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("0"));
    for i in 0..6 {
        let q = a[i]
            .checked_div_euclid(b[i])
            .unwrap_or(if b[i] == 0 { 0 } else { a[i] });
        let q = q.wrapping_add(a[i]);
        let r = if b[i] == 0 {
            0
        } else {
            a[i].wrapping_rem_euclid(b[i])
        };
        let m = x[i].wrapping_mul(x[i]);
        let expect = format!("{q} {r} {m} {} {} {}", f[i] as i32, f[i] as u8, a[i] as i8);
        assert_eq!(lines.next(), Some(expect.as_str()), "row {i}");
    }
}

#[test]
fn hostile_names_are_sanitised() {
    let mem = dram();
    let mut p = ProcBuilder::new("x; system(\"rm\")", &mem);
    let n = p.size("int");
    let t = p.tensor("__foo", DType::F64, vec![n.clone()]);
    let w = p.tensor("weft_fail", DType::F64, vec![n.clone()]);
    p.body().for_("return", 0, &n, |b, i| {
        b.assign(
            &t,
            vec![i.clone()],
            Expr::math(MathFn::Sqrt, vec![w.at(vec![i.clone()])]),
        );
    });
    let inner = p.finish();
    let mut q = ProcBuilder::new("int", &mem);
    let n2 = q.size("n");
    let t2 = q.tensor("a", DType::F64, vec![n2.clone()]);
    let t3 = q.tensor("b", DType::F64, vec![n2.clone()]);
    q.body().call(&inner, vec![n2.clone(), t2.all(), t3.all()]);
    let outer = q.finish();
    let unit = emit(&[outer.clone(), inner]).unwrap();
    assert!(!unit.source.contains("system(\""));
    assert!(unit.source.contains("int32_t kernel_int("));
    assert!(unit.source.contains("v___foo_"));
    compile_object("hostile", &unit.source, &[]);
    let names: Vec<&str> = unit
        .entries
        .iter()
        .map(|e| e.direct_symbol.as_str())
        .collect();
    assert_eq!(names, vec!["kernel_int", "kernel_x__system__rm__"]);
}

#[test]
fn constant_window_strides_from_preconditions() {
    let mem = dram();
    let mut p = ProcBuilder::new("copy", &mem);
    let n = p.size("n");
    let src = p.window("src", DType::I16, vec![n.clone(), Expr::int(4)]);
    let dst = p.window("dst", DType::I16, vec![n.clone(), Expr::int(4)]);
    p.assert(Expr::binary(BinOp::Eq, src.stride(1), Expr::int(1)));
    p.assert(Expr::binary(BinOp::Eq, n.clone() % 2, Expr::int(0)));
    p.body().for_("i", 0, &n, |b, i| {
        b.for_("j", 0, 4, |b2, j| {
            b2.assign(
                &dst,
                vec![i.clone(), j.clone()],
                -src.at(vec![i.clone(), j.clone()]),
            );
        });
    });
    let unit = emit(&[p.finish()]).unwrap();
    assert!(unit.source.contains("v_src_"), "{}", unit.source);
    assert!(!unit.source.contains("src_2.strides[1]"));
    assert!(unit.source.contains(".strides[0]"));
    assert!(unit.source.contains("WEFT_ASSUME("));
    assert!(unit.source.contains("WEFT_ERR_PRECONDITION"));
    compile_object("strides", &unit.source, &[]);
}

#[test]
fn float_literals_are_exact_and_typed() {
    let mem = dram();
    let mut p = ProcBuilder::new("lit", &mem);
    let x = p.scalar("x", DType::F32);
    let y = p.scalar("y", DType::F64);
    p.body()
        .assign(&x, vec![], x.get() * 0.1 + Expr::float(-2.5));
    p.body().assign(&y, vec![], y.get() * 0.1);
    let unit = emit(&[p.finish()]).unwrap();
    assert!(unit.source.contains("1e-1f"), "{}", unit.source);
    assert!(unit.source.contains("(-2.5e0f)"));
    assert!(unit.source.contains("* 1e-1)"));
    compile_object("lits", &unit.source, &[]);
}

/// `<math.h>` is included only where needed, which a float-free unit calling a math function
/// is (`sqrt(2.0) < 1.5` into a bool buffer names no C float type): it compiles warning-free.
/// A unit without floats or math gets neither `<math.h>` nor `<stdio.h>`.
#[test]
fn a_math_call_without_float_types_still_includes_math_h() {
    let mem = dram();
    let mut p = ProcBuilder::new("root2", &mem);
    let n = p.size("n");
    let a = p.tensor("A", DType::Bool, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        let root = Expr::math(MathFn::Sqrt, vec![Expr::float(2.0)]);
        b.assign(&a, vec![i.clone()], root.lt(Expr::float(1.5)));
    });
    let unit = emit(&[p.finish()]).unwrap();
    assert!(unit.source.contains("#include <math.h>"), "{}", unit.source);
    compile_object("math_h", &unit.source, &[]);

    let mut q = ProcBuilder::new("ints", &mem);
    let n = q.size("n");
    let b = q.tensor("B", DType::I32, vec![n.clone()]);
    q.body().for_("i", 0, &n, |bb, i| {
        bb.assign(&b, vec![i.clone()], b.at(vec![i.clone()]) + Expr::int(1));
    });
    let unit = emit(&[q.finish()]).unwrap();
    assert!(!unit.source.contains("#include <math.h>"));
    assert!(!unit.source.contains("#include <stdio.h>"));
    compile_object("no_math_h", &unit.source, &[]);
}

/// A file's procs include its instructions: they are not exported (a call of one is its
/// template), so emitting every proc of a file works.
#[test]
fn instructions_among_the_roots_are_not_exported() {
    let mem = dram();
    let mut p = ProcBuilder::new("zero", &mem);
    let x = p.scalar("x", DType::F64);
    p.body().assign(&x, vec![], Expr::float(0.0));
    p.instr_template("{x_data} = 0.0;");
    let instr = p.finish();
    let mut q = ProcBuilder::new("use_zero", &mem);
    let y = q.scalar("y", DType::F64);
    q.body().call(&instr, vec![y.all()]);
    let unit = emit(&[instr.clone(), q.finish()]).unwrap();
    let names: Vec<&str> = unit.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["use_zero"]);
    compile_object("instr", &unit.source, &[]);
    assert!(emit(&[instr]).unwrap().entries.is_empty());
}

#[test]
fn two_procs_with_one_name_are_a_diagnostic() {
    let mem = dram();
    let make = |v: f64| {
        let mut p = ProcBuilder::new("helper", &mem);
        let x = p.scalar("x", DType::F64);
        p.body().assign(&x, vec![], Expr::float(v));
        p.finish()
    };
    let (h1, h2) = (make(1.0), make(2.0));
    let mut p = ProcBuilder::new("top", &mem);
    let x = p.scalar("x", DType::F64);
    p.body().call(&h1, vec![x.all()]);
    p.body().call(&h2, vec![x.all()]);
    let e = emit(&[p.finish()]).unwrap_err();
    assert!(e.message.contains("'helper'"), "{}", e.message);
}

/// Dense buffers are addressed in Horner form with each index's sum spliced into the chain, the
/// form GCC analyses best in deep nests (see `BufView::dense_shape`); constant extents fold.
#[test]
fn dense_offsets_are_in_horner_form() {
    let src = "proc shift(n: size, m: size, a: f32[n, m, 4] @ DRAM, b: f32[n, m] @ DRAM) {\n\
               for i in 0..n {\n for j in 1..m {\n for k in 0..4 {\n\
               b[i, j] += a[i, j - 1, k];\n }\n }\n }\n}\n";
    let module = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src)
        .expect("parses");
    let unit = emit(&module.procs).unwrap();
    let body = unit.source.split("entry points").next().unwrap();
    // The innermost loop's access along its variable is hoisted (below); its base keeps the form.
    assert!(
        body.contains(
            "const int64_t t_base_8 = 0 < 4 ? (((((v_i_5) * v_m_2) + ((v_j_6 - 1))) * 4)) : 0;"
        ),
        "{body}"
    );
    assert!(body.contains("v_b_4[((v_i_5 * v_m_2) + v_j_6)]"), "{body}");
    compile_object("horner", &unit.source, &[]);
}

/// The invariant part of an innermost loop's unit-stride accesses is computed once before the
/// loop, at its first iteration and only when it runs, so that the C compiler vectorizes a loop
/// whose accesses start at a `min` (a shifted tile); an access whose other indices use the loop
/// variable is left alone.
#[test]
fn innermost_offsets_are_hoisted() {
    let src = "proc tile(n: size, a: f32[n + 8, n + 8] @ DRAM, b: f32[n + 8] @ DRAM) {
               for o in 0..n {
 for v in 2..6 {
               b[v + min(o, n - 1)] = a[o, v + min(o, n - 1)] + a[v, o];
 }
 }
}
";
    let module = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src)
        .expect("parses");
    let unit = emit(&module.procs).unwrap();
    let body = unit.source.split("entry points").next().unwrap();
    assert_eq!(body.matches("const int64_t t_base").count(), 2, "{body}");
    assert!(body.contains("= 2 < 6 ? (2 + weft_min_i64("), "{body}");
    assert!(body.contains("[t_base_6 + (v_v_5 - 2)]"), "{body}");
    // `a[v, o]` moves along its first dimension: not hoisted.
    assert!(
        body.contains("v_a_2[((v_v_5 * (v_n_1 + 8)) + v_o_4)]"),
        "{body}"
    );
    compile_object("hoisted", &unit.source, &[]);
}

/// Float-to-integer conversions saturate and map NaN to 0 (Rust's `as`), at every edge: the
/// largest float below the upper limit, the limit itself, infinities, values just inside.
#[test]
fn float_to_int_conversions_saturate_at_every_edge() {
    let src = "proc conv(n: size, f: f32[n] @ DRAM, d: f64[n] @ DRAM, a: i32[n] @ DRAM, b: u8[n] @ DRAM, c: i16[n] @ DRAM, e: u32[n] @ DRAM, g: i64[n] @ DRAM) {
    for i in 0..n {
        a[i] = i32(f[i]);
        b[i] = u8(f[i]);
        c[i] = i16(f[i]);
        e[i] = u32(f[i]);
        g[i] = i64(d[i]);
    }
}
";
    let module = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", src)
        .expect("parses");
    let unit = emit(&module.procs).unwrap();
    // The conversion has no branches, so that loops around it vectorize.
    let helper = unit
        .source
        .split("weft_f32_to_i32(float x)")
        .nth(1)
        .unwrap();
    let helper = &helper[..helper.find("\n}").unwrap()];
    assert!(!helper.contains("if ("), "{helper}");
    let fs: Vec<f32> = vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        2147483520.0,
        2147483648.0,
        -2147483648.0,
        -2147483904.0,
        4294967040.0,
        4294967296.0,
        255.99998,
        256.0,
        -0.5,
        -0.99,
        32767.9,
        -32768.9,
        -32769.0,
        0.0,
        -3.7,
    ];
    let ds: Vec<f64> = fs
        .iter()
        .map(|&x| x as f64)
        .chain([
            9223372036854774784.0,
            9223372036854775808.0,
            -9223372036854775808.0,
            -9223372036854777856.0,
            18446744073709549568.0,
            18446744073709551616.0,
        ])
        .collect();
    let n = ds.len();
    let mut fs_all = fs.clone();
    fs_all.resize(n, 1.5);
    // A C literal of `x` (`suffix` "f" for float).
    let literal = |x: f64, suffix: &str| {
        if x.is_nan() {
            "NAN".to_string()
        } else if x.is_infinite() {
            if x > 0.0 { "INFINITY" } else { "-INFINITY" }.to_string()
        } else {
            format!("{x:e}{suffix}")
        }
    };
    let floats = |v: &[f32]| {
        let c: Vec<String> = v.iter().map(|&x| literal(x as f64, "f")).collect();
        c.join(", ")
    };
    let doubles = |v: &[f64]| {
        let c: Vec<String> = v.iter().map(|&x| literal(x, "")).collect();
        c.join(", ")
    };
    let code = |d: DType| weft_c::dtype_code(d);
    let main_c = format!(
        r#"
#include <stdio.h>
#include <math.h>
{header}
int main(void) {{
    int64_t shape[1] = {{{n}}}, strides[1] = {{1}};
    float f[{n}] = {{{f}}};
    double d[{n}] = {{{d}}};
    int32_t a[{n}]; uint8_t b[{n}]; int16_t c[{n}]; uint32_t e[{n}]; int64_t g[{n}];
    weft_buffer bf = {{f, {cf}, 1, shape, strides}}, bd = {{d, {cd}, 1, shape, strides}},
        ba = {{a, {ca}, 1, shape, strides}}, bb = {{b, {cb}, 1, shape, strides}},
        bc = {{c, {cc}, 1, shape, strides}}, be = {{e, {ce}, 1, shape, strides}},
        bg = {{g, {cg}, 1, shape, strides}};
    int rc = {sym}(NULL, {n}, &bf, &bd, &ba, &bb, &bc, &be, &bg);
    printf("%d\n", rc);
    for (int i = 0; i < {n}; i++) printf("%d %u %d %u %lld\n", (int) a[i], (unsigned) b[i], (int) c[i], (unsigned) e[i], (long long) g[i]);
    return 0;
}}
"#,
        header = unit.header,
        f = floats(&fs_all),
        d = doubles(&ds),
        cf = code(DType::F32),
        cd = code(DType::F64),
        ca = code(DType::I32),
        cb = code(DType::U8),
        cc = code(DType::I16),
        ce = code(DType::U32),
        cg = code(DType::I64),
        sym = unit.entries[0].direct_symbol
    );
    let out = run_with_main("conv", &unit.source, &main_c);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("0"));
    for (i, (&x, &y)) in fs_all.iter().zip(&ds).enumerate() {
        let expect = format!(
            "{} {} {} {} {}",
            x as i32, x as u8, x as i16, x as u32, y as i64
        );
        assert_eq!(lines.next(), Some(expect.as_str()), "row {i}: {x} {y}");
    }
}

/// A short loop of stores whose iterations touch different cells is marked `ivdep` (GCC then
/// vectorizes reads at indices computed from data inside OpenMP regions); a loop where one
/// iteration may read or write what another writes is not.
#[test]
fn independent_short_loops_are_marked_ivdep() {
    let cases = [
        // Gathers through a data index, stores at distinct cells: independent.
        ("b[o, v + 2 * o] = a[clamp_index(i64(t[v]), 0, 15)];", true),
        // Reads the stored buffer at the same cell: independent.
        ("b[o, v + 2 * o] = b[o, v + 2 * o] + a[v];", true),
        // Reads the stored buffer one cell over: another iteration's cell.
        ("b[o, v + 2 * o] = b[o, v + 2 * o + 1];", false),
        // Writes at a data index (a histogram): iterations may collide.
        (
            "a[clamp_index(i64(t[v]), 0, 15)] = a[clamp_index(i64(t[v]), 0, 15)] + 1.0;",
            false,
        ),
        // The loop variable in two coordinates: a diagonal, not known one to one here.
        ("b[v, v] = a[v];", false),
        // A tile of two cells per iteration (an unrolled split by 2): `2 v` and `2 v + 1`.
        (
            "b[o, 2 * v] = a[v];\n            b[o, 2 * v + 1] = b[o, 2 * v] + 1.0;",
            true,
        ),
        // Stride 2 and offsets 2 apart: iteration v writes the cell v + 1 writes.
        (
            "b[o, 2 * v] = a[v];\n            b[o, 2 * v + 2] = a[v];",
            false,
        ),
        // Reads a cell of the next iteration (offset 3 against a stride of 2).
        ("b[o, 2 * v + 1] = b[o, 2 * v + 3];", false),
        // Rows of a constant apart (unrolled channels): they never meet.
        ("b[0, v] = a[v];\n            b[1, v + 1] = b[0, v];", true),
        // Rows that may be the same: `o` and `0` are not known apart.
        ("b[0, v] = a[v];\n            b[o, v + 1] = a[v];", false),
        // The same cell written by every iteration.
        ("b[o, 0 * v] = a[v];", false),
    ];
    for (stmt, independent) in cases {
        let src = format!(
            "proc k(a: f32[16] @ DRAM, t: i32[16] @ DRAM, b: f32[16, 64] @ DRAM) {{
    for o in 0..8 {{
        for v in 0..16 {{
            {stmt}
        }}
    }}
}}
"
        );
        let module = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", &src)
            .expect("parses");
        let unit = emit(&module.procs).unwrap();
        assert_eq!(
            unit.source.contains("#pragma GCC ivdep"),
            independent,
            "{stmt}"
        );
        compile_object("ivdep", &unit.source, &[]);
    }
}

/// Floor division and modulo by a power of two are emitted as a shift and a mask; they must still
/// be the floor (toward minus infinity, remainder non-negative) for negative operands, at every
/// width, for data and for control values.
#[test]
fn power_of_two_division_is_the_floor_at_every_width() {
    let vals: [i64; 10] = [i64::MIN, -129, -9, -8, -7, -1, 0, 1, 7, i64::MAX];
    let cases: [(DType, i64); 8] = [
        (DType::I8, 4),
        (DType::I16, 16),
        (DType::I32, 2),
        (DType::I32, 1 << 30),
        (DType::I64, 8),
        (DType::I64, 1 << 62),
        (DType::U8, 128),
        (DType::U32, 4),
    ];
    for (d, k) in cases {
        let mem = dram();
        let mut p = ProcBuilder::new("pow2", &mem);
        let n = p.size("n");
        let a = p.tensor("a", d, vec![n.clone()]);
        let q = p.tensor("q", d, vec![n.clone()]);
        let r = p.tensor("r", d, vec![n.clone()]);
        let cq = p.tensor("cq", DType::I64, vec![n.clone()]);
        let cr = p.tensor("cr", DType::I64, vec![n.clone()]);
        p.body().for_("i", 0, &n, |bb, i| {
            let ai = a.at(vec![i.clone()]);
            bb.assign(&q, vec![i.clone()], ai.clone() / Expr::int(k));
            bb.assign(&r, vec![i.clone()], ai % Expr::int(k));
            // Control arithmetic: i - 5 is negative for the first elements.
            let c = i.clone() - Expr::int(5);
            bb.assign(
                &cq,
                vec![i.clone()],
                Expr::cast(DType::I64, c.clone() / Expr::int(4)),
            );
            bb.assign(
                &cr,
                vec![i.clone()],
                Expr::cast(DType::I64, c % Expr::int(4)),
            );
        });
        let unit = emit(&[p.finish()]).unwrap();
        // (Unsigned division is C's `/`, already the floor.)
        assert!(
            !d.is_signed() || unit.source.contains(&format!(">> {}", k.trailing_zeros())),
            "{d} / {k} is not a shift"
        );
        let t = match d {
            DType::I8 => "int8_t",
            DType::I16 => "int16_t",
            DType::I32 => "int32_t",
            DType::I64 => "int64_t",
            DType::U8 => "uint8_t",
            _ => "uint32_t",
        };
        let bits = d.bits();
        let wrap = |v: i64| -> i64 {
            // The value as the element type holds it (two's complement truncation).
            let m = if bits == 64 {
                v
            } else {
                v & ((1i64 << bits) - 1)
            };
            if d.is_signed() && bits < 64 && m >= 1i64 << (bits - 1) {
                m - (1i64 << bits)
            } else {
                m
            }
        };
        let inputs: Vec<i64> = vals.iter().map(|&v| wrap(v)).collect();
        let init = inputs
            .iter()
            .map(|&v| format!("({t}) (uint64_t) {}ULL", v as u64))
            .collect::<Vec<_>>()
            .join(", ");
        let code = weft_c::dtype_code(d);
        let i64_code = weft_c::dtype_code(DType::I64);
        let main_c = format!(
            r#"
#include <stdio.h>
{header}
int main(void) {{
    int64_t shape[1] = {{10}}, strides[1] = {{1}};
    {t} a[10] = {{{init}}}, q[10], r[10];
    int64_t cq[10], cr[10];
    weft_buffer ba = {{a, {code}, 1, shape, strides}}, bq = {{q, {code}, 1, shape, strides}},
        br = {{r, {code}, 1, shape, strides}}, bcq = {{cq, {i64_code}, 1, shape, strides}},
        bcr = {{cr, {i64_code}, 1, shape, strides}};
    int rc = {sym}(NULL, 10, &ba, &bq, &br, &bcq, &bcr);
    printf("%d\n", rc);
    for (int i = 0; i < 10; i++) printf("%lld %lld %lld %lld\n", (long long) q[i], (long long) r[i], (long long) cq[i], (long long) cr[i]);
    return 0;
}}
"#,
            header = unit.header,
            sym = unit.entries[0].direct_symbol
        );
        let out = run_with_main("pow2", &unit.source, &main_c);
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("0"), "{d}");
        for (i, &v) in inputs.iter().enumerate() {
            let (fq, fr) = if d.is_signed() {
                (v.div_euclid(k), v.rem_euclid(k))
            } else {
                let u = v as u64;
                ((u / k as u64) as i64, (u % k as u64) as i64)
            };
            let c = i as i64 - 5;
            let expect = format!("{fq} {fr} {} {}", c.div_euclid(4), c.rem_euclid(4));
            assert_eq!(lines.next(), Some(expect.as_str()), "{d} / {k}, a = {v}");
        }
    }
}

/// `q[i] = a[i] / divisor` over four values of `elem`, compiled: no `>> 7` in the C, and the
/// quotients are the Euclidean ones by -128.
fn divides_by_minus_128(elem: DType, divisor: Expr, values: [i64; 4]) {
    let mem = dram();
    let mut p = ProcBuilder::new("wrapdiv", &mem);
    let n = p.size("n");
    let a = p.tensor("a", elem, vec![n.clone()]);
    let q = p.tensor("q", elem, vec![n.clone()]);
    p.body().for_("i", 0, &n, |bb, i| {
        bb.assign(&q, vec![i.clone()], a.at(vec![i.clone()]) / divisor.clone());
    });
    let unit = emit(&[p.finish()]).unwrap();
    assert!(!unit.source.contains(">> 7"), "{}", unit.source);
    let (code, t) = (weft_c::dtype_code(elem), weft_c::helpers::c_type(elem));
    let init: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    let main_c = format!(
        r#"
#include <stdio.h>
{header}
int main(void) {{
    int64_t shape[1] = {{4}}, strides[1] = {{1}};
    {t} a[4] = {{{init}}}, q[4];
    weft_buffer ba = {{a, {code}, 1, shape, strides}}, bq = {{q, {code}, 1, shape, strides}};
    int rc = {sym}(NULL, 4, &ba, &bq);
    printf("%d %lld %lld %lld %lld\n", rc, (long long) q[0], (long long) q[1], (long long) q[2], (long long) q[3]);
    return 0;
}}
"#,
        header = unit.header,
        init = init.join(", "),
        sym = unit.entries[0].direct_symbol
    );
    let out = run_with_main("wrapdiv", &unit.source, &main_c);
    let expect: Vec<String> = values
        .iter()
        .map(|&v| match elem {
            DType::I8 => (v as i8).wrapping_div_euclid(-128).to_string(),
            _ => v.div_euclid(-128).to_string(),
        })
        .collect();
    assert_eq!(out.trim(), format!("0 {}", expect.join(" ")));
}

/// `-(-128)` is -128 in i8 (wrapping negation), not the power of two 128 that it folds to in
/// i64: dividing by it is not a shift (found by review: `x >> 7` gave -1 where the interpreter
/// gives 1 for x = -128). The same through a cast: `i64(-(-128))` of an i8 constant is
/// `i64(-128)`, but the constant inside folds to 128 in i64 (found by review: the divisor seen
/// through the cast was taken for 2^7); only control constants are seen through a cast.
#[test]
fn a_wrapped_constant_divisor_is_not_taken_for_a_power_of_two() {
    divides_by_minus_128(DType::I8, -(-Expr::int(128)), [-128, -7, 7, 127]);
    let c8 = Expr::typed_const(weft_ir::Const::Int(-128), weft_ir::Ty::Data(DType::I8));
    let divisor = Expr::cast(DType::I64, Expr::unary(weft_ir::UnOp::Neg, c8));
    divides_by_minus_128(DType::I64, divisor, [-300, -7, 7, 300]);
}

/// A short vector loop's gathers are indexed in 32 bits in a version of the loop that runs
/// only when every buffer they read has fewer than 2^31 elements; with a larger buffer (here a
/// 65537 × 32769 grid, allocated but barely touched) the 64-bit version reads the right cells
/// past 2^31. (Sizes are at most 2^31 - 1, so only a buffer of rank 2 or more can be larger;
/// the table of 2^31 - 1 elements is read near its end in 32 bits.)
#[test]
fn gathers_are_narrowed_only_where_the_buffers_are_small() {
    let mem = dram();
    let mut p = ProcBuilder::new("gather", &mem);
    let m = p.size("m");
    let r = p.size("r");
    let c = p.size("c");
    let lut = p.tensor("lut", DType::U8, vec![m.clone()]);
    let grid = p.tensor("grid", DType::U8, vec![r.clone(), c.clone()]);
    let d = p.tensor("d", DType::I64, vec![Expr::int(8)]);
    let e = p.tensor("e", DType::I64, vec![Expr::int(8)]);
    let o = p.tensor("o", DType::U8, vec![Expr::int(8)]);
    p.body().for_("i", 0, 8, |bb, i| {
        let at = |t: &weft_ir::build::Buf| t.at(vec![i.clone()]);
        let one = Expr::int(1);
        let k = Expr::data_index(at(&d), Expr::int(0), m.clone() - one.clone());
        let y = Expr::data_index(at(&e), Expr::int(0), r.clone() - one.clone());
        let x = Expr::data_index(at(&e), Expr::int(0), c.clone() - one);
        bb.assign(&o, vec![i.clone()], lut.at(vec![k]) + grid.at(vec![y, x]));
    });
    let unit = emit(&[p.finish()]).unwrap();
    assert!(
        unit.source.contains("(int64_t) (int32_t)"),
        "{}",
        unit.source
    );
    assert!(unit.source.contains("weft_mul_sat("), "{}", unit.source);
    let code = weft_c::dtype_code(DType::U8);
    let i64_code = weft_c::dtype_code(DType::I64);
    let main_c = format!(
        r#"
#include <stdio.h>
#include <stdlib.h>
{header}
static int run(int64_t m, int64_t r, int64_t c, const int64_t *d, const int64_t *e) {{
    uint8_t *lut = malloc((size_t) m), *grid = malloc((size_t) (r * c)), o[8];
    if (!lut || !grid) return 99;
    for (int i = 0; i < 8; i++) {{
        lut[d[i]] = (uint8_t) (d[i] * 7 + 1);
        int64_t y = e[i] < r ? e[i] : r - 1, x = e[i] < c ? e[i] : c - 1;
        grid[y * c + x] = (uint8_t) (y + 3 * x);
    }}
    int64_t sm[1] = {{m}}, sg[2] = {{r, c}}, s8[1] = {{8}}, st1[1] = {{1}}, stg[2] = {{c, 1}};
    weft_buffer bl = {{lut, {code}, 1, sm, st1}}, bg = {{grid, {code}, 2, sg, stg}},
        bd = {{(void *) d, {i64_code}, 1, s8, st1}}, be = {{(void *) e, {i64_code}, 1, s8, st1}},
        bo = {{o, {code}, 1, s8, st1}};
    int rc = {sym}(NULL, m, r, c, &bl, &bg, &bd, &be, &bo);
    printf("%d", rc);
    for (int i = 0; i < 8; i++) printf(" %u", (unsigned) o[i]);
    printf("\n");
    free(lut);
    free(grid);
    return 0;
}}
int main(void) {{
    int64_t small_d[8] = {{0, 1, 5, 99, 3, 7, 50, 2}}, small_e[8] = {{0, 9, 4, 1, 8, 2, 3, 6}};
    int64_t m = 2147483647LL, r = 65537, c = 32769;
    int64_t big_d[8] = {{m - 1, 2147483600LL, 5, 65536, 1, 2147483646LL, 0, 65535}};
    int64_t big_e[8] = {{65536, 1, 65535, 0, 40000, 32768, 2, 65536}};
    return run(100, 100, 10, small_d, small_e) || run(m, r, c, big_d, big_e);
}}
"#,
        header = unit.header,
        sym = unit.entries[0].direct_symbol
    );
    let out = run_with_main("gather", &unit.source, &main_c);
    let expect = |m: i64, r: i64, c: i64, d: [i64; 8], e: [i64; 8]| {
        let vals: Vec<String> = (0..8)
            .map(|i| {
                let k = d[i].clamp(0, m - 1);
                let (y, x) = (e[i].clamp(0, r - 1), e[i].clamp(0, c - 1));
                let lut = (k * 7 + 1) as u8;
                lut.wrapping_add((y + 3 * x) as u8).to_string()
            })
            .collect();
        format!("0 {}", vals.join(" "))
    };
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(
            expect(
                100,
                100,
                10,
                [0, 1, 5, 99, 3, 7, 50, 2],
                [0, 9, 4, 1, 8, 2, 3, 6]
            )
            .as_str()
        )
    );
    let m = (1i64 << 31) - 1;
    let big_d = [m - 1, 2147483600, 5, 65536, 1, m - 1, 0, 65535];
    let big_e = [65536, 1, 65535, 0, 40000, 32768, 2, 65536];
    assert_eq!(
        lines.next(),
        Some(expect(m, 65537, 32769, big_d, big_e).as_str())
    );
}

/// In the 32-bit version of a vector loop, `min`, floor division and clamped data indices are
/// computed in `int32_t` where their operands provably fit, which assumes lane-invariant terms
/// within `±2^24`: the version's guard checks it. With `k` near 2^31 the guard fails and the
/// 64-bit loop runs; without the guard, `i + k` wraps in 32 bits, `min` picks the wrapped
/// value and the reads leave the 3-element table.
#[test]
fn narrowed_clamps_and_quotients_assume_small_invariants_only_under_the_guard() {
    let mem = dram();
    let mut p = ProcBuilder::new("clamps", &mem);
    let n = p.size("n");
    let k = p.size("k");
    let table = p.tensor("table", DType::I32, vec![n.clone()]);
    let d = p.tensor("d", DType::I32, vec![Expr::int(8)]);
    let o = p.tensor("o", DType::I32, vec![Expr::int(8)]);
    p.body().for_("i", 0, 8, |bb, i| {
        let last = n.clone() - 1;
        // min(i, n - 1) and min(i / 2, n - 1), written around the invariant k.
        let a = Expr::min(i.clone() + k.clone(), k.clone() + last.clone()) - k.clone();
        let half = (i.clone() + k.clone() * 2) / 2 - k.clone();
        let b = Expr::min(half, last.clone());
        let c = Expr::data_index(d.at(vec![i.clone()]), Expr::int(0), last);
        let sum = table.at(vec![a]) + table.at(vec![b]) + table.at(vec![c]);
        bb.assign(&o, vec![i.clone()], sum);
    });
    let unit = emit(&[p.finish()]).unwrap();
    for narrowed in [
        "weft_min_i32((int32_t)",
        ">> 1)",
        "<= 16777216",
        "weft_max_i32(",
    ] {
        assert!(
            unit.source.contains(narrowed),
            "{narrowed}: {}",
            unit.source
        );
    }
    let code = weft_c::dtype_code(DType::I32);
    let main_c = format!(
        r#"
#include <stdio.h>
{header}
static void run(int64_t k, const int32_t *d) {{
    int32_t table[3] = {{100, 2000, 30000}}, o[8];
    int64_t sn[1] = {{3}}, s8[1] = {{8}}, st1[1] = {{1}};
    weft_buffer bt = {{table, {code}, 1, sn, st1}}, bd = {{(void *) d, {code}, 1, s8, st1}},
        bo = {{o, {code}, 1, s8, st1}};
    int rc = {sym}(NULL, 3, k, &bt, &bd, &bo);
    printf("%d", rc);
    for (int i = 0; i < 8; i++) printf(" %d", o[i]);
    printf("\n");
}}
int main(void) {{
    int32_t d[8] = {{-5, 0, 1, 2, 3, 2147483647, -2147483647 - 1, 1}};
    run(5, d);
    run(2147483645LL, d);
    return 0;
}}
"#,
        header = unit.header,
        sym = unit.entries[0].direct_symbol
    );
    let out = run_with_main("clamps", &unit.source, &main_c);
    let table = [100, 2000, 30000];
    let d: [i64; 8] = [-5, 0, 1, 2, 3, 2147483647, -2147483648, 1];
    let vals: Vec<String> = (0..8usize)
        .map(|i| {
            let a = table[i.min(2)];
            let b = table[(i / 2).min(2)];
            let c = table[d[i].clamp(0, 2) as usize];
            (a + b + c).to_string()
        })
        .collect();
    let line = format!("0 {}", vals.join(" "));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, vec![line.as_str(); 2], "{out}");
}
