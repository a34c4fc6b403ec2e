//! An AVX-512 hardware library built through the Rust API (the same items as lib/avx512.weft),
//! used by a tiny kernel that is emitted, compiled with -mavx512f and, where the CPU has
//! AVX-512F, run.

mod common;

use common::*;
use std::sync::Arc;
use weft_c::emit;
use weft_ir::build::ProcBuilder;
use weft_ir::{BinOp, BufType, DType, Expr, MathFn, Memory, Proc, Span, WinCoord};

fn avx512() -> Arc<Memory> {
    Arc::new(Memory {
        name: "AVX512".into(),
        header: "#include <immintrin.h>".into(),
        alloc: "__m512 {name}[({size}) / 16];".into(),
        free: "".into(),
        access: "{name}[({offset}) / 16]".into(),
        addressable: false,
        last_dim: Some(16),
        max_bytes: None,
        isa: vec!["avx512f".into()],
        dtypes: vec![DType::F32],
        span: Span::DUMMY,
    })
}

fn vec_ty(mem: &Arc<Memory>, len: i64) -> BufType {
    BufType {
        elem: DType::F32,
        shape: vec![Expr::int(len)],
        window: true,
        mem: mem.clone(),
    }
}

struct Lib {
    loadu: Arc<Proc>,
    storeu: Arc<Proc>,
    fmadd: Arc<Proc>,
    set1: Arc<Proc>,
}

fn lib() -> Lib {
    let dram = dram();
    let avx = avx512();
    let copy16 =
        |name: &str, tpl: &str, dst_mem: &Arc<Memory>, src_mem: &Arc<Memory>, unit: bool| {
            let mut p = ProcBuilder::new(name, &dram);
            p.instr_template(tpl);
            let dst = p.buffer("dst", vec_ty(dst_mem, 16));
            let src = p.buffer("src", vec_ty(src_mem, 16));
            if unit {
                let s = if dst_mem.addressable { &dst } else { &src };
                p.assert(Expr::binary(BinOp::Eq, s.stride(0), Expr::int(1)));
            }
            p.body().for_("i", 0, 16, |b, i| {
                b.assign(&dst, vec![i.clone()], src.at(vec![i.clone()]));
            });
            p.finish()
        };
    let loadu = copy16(
        "mm512_loadu_ps",
        "{dst_data} = _mm512_loadu_ps(&{src_data});",
        &avx,
        &dram,
        true,
    );
    let storeu = copy16(
        "mm512_storeu_ps",
        "_mm512_storeu_ps(&{dst_data}, {src_data});",
        &dram,
        &avx,
        true,
    );
    let mut p = ProcBuilder::new("mm512_fmadd_ps", &dram);
    p.instr_template("{acc_data} = _mm512_fmadd_ps({a_data}, {b_data}, {acc_data});");
    let acc = p.buffer("acc", vec_ty(&avx, 16));
    let a = p.buffer("a", vec_ty(&avx, 16));
    let b = p.buffer("b", vec_ty(&avx, 16));
    p.body().for_("i", 0, 16, |bb, i| {
        let at = |t: &weft_ir::build::Buf| t.at(vec![i.clone()]);
        bb.assign(
            &acc,
            vec![i.clone()],
            Expr::math(MathFn::Fma, vec![at(&a), at(&b), at(&acc)]),
        );
    });
    let fmadd = p.finish();
    let mut p = ProcBuilder::new("mm512_set1_ps", &dram);
    p.instr_template("{dst_data} = _mm512_set1_ps({src_data});");
    let dst = p.buffer("dst", vec_ty(&avx, 16));
    let src = p.buffer("src", vec_ty(&dram, 1));
    p.body().for_("i", 0, 16, |bb, i| {
        bb.assign(&dst, vec![i.clone()], src.at(vec![Expr::int(0)]));
    });
    let set1 = p.finish();
    Lib {
        loadu,
        storeu,
        fmadd,
        set1,
    }
}

/// `saxpy16(n, a, x, y)`: y[i, :] = fma(a, x[i, :], y[i, :]) with AVX-512 registers.
fn saxpy16(lib: &Lib) -> Arc<Proc> {
    let dram = dram();
    let avx = avx512();
    let mut p = ProcBuilder::new("saxpy16", &dram);
    let n = p.size("n");
    let a = p.tensor("a", DType::F32, vec![Expr::int(1)]);
    let x = p.tensor("x", DType::F32, vec![n.clone(), Expr::int(16)]);
    let y = p.tensor("y", DType::F32, vec![n.clone(), Expr::int(16)]);
    p.body().for_("i", 0, &n, |b, i| {
        let row = |t: &weft_ir::build::Buf| {
            t.win(vec![
                WinCoord::Point(i.clone()),
                WinCoord::Interval(Expr::int(0), Expr::int(16)),
            ])
        };
        let va = b.alloc("va", DType::F32, vec![Expr::int(16)], &avx);
        let vx = b.alloc("vx", DType::F32, vec![Expr::int(16)], &avx);
        let vy = b.alloc("vy", DType::F32, vec![Expr::int(16)], &avx);
        b.call(
            &lib.set1,
            vec![
                va.all(),
                a.win(vec![WinCoord::Interval(Expr::int(0), Expr::int(1))]),
            ],
        );
        b.call(&lib.loadu, vec![vx.all(), row(&x)]);
        b.call(&lib.loadu, vec![vy.all(), row(&y)]);
        b.call(&lib.fmadd, vec![vy.all(), va.all(), vx.all()]);
        b.call(&lib.storeu, vec![row(&y), vy.all()]);
    });
    p.finish()
}

#[test]
fn avx512_kernel_compiles_and_runs() {
    let lib = lib();
    let unit = emit(&[saxpy16(&lib)]).unwrap();
    assert!(unit.source.contains("#include <immintrin.h>"));
    assert!(unit.source.contains("__m512 v_va_"));
    assert!(unit.source.contains("_mm512_fmadd_ps("));
    assert!(!unit.source.contains("{dst_data}"));
    // The memory declares the extension; every unit using it says so.
    assert_eq!(unit.isa, vec!["avx512f".to_string()]);
    assert_eq!(unit.entries[0].isa, unit.isa);
    compile_object("avx", &unit.source, &["-mavx512f"]);
    let has_avx512 = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.contains("avx512f"))
        .unwrap_or(false);
    if !has_avx512 {
        return;
    }
    let main_c = format!(
        r#"
#include <stdio.h>
#include <math.h>
{}
int main(void) {{
    float a[1] = {{0.1f}}, x[48], y[48], want[48];
    int64_t sa[1] = {{1}}, ta[1] = {{1}}, sx[2] = {{3, 16}}, tx[2] = {{16, 1}};
    for (int i = 0; i < 48; i++) {{ x[i] = (float) i * 0.37f; y[i] = 1.0f / (float) (i + 1); want[i] = fmaf(a[0], x[i], y[i]); }}
    weft_buffer ba = {{a, 8, 1, sa, ta}}, bx = {{x, 8, 2, sx, tx}}, by = {{y, 8, 2, sx, tx}};
    int rc = {sym}(NULL, 3, &ba, &bx, &by);
    int bad = 0;
    for (int i = 0; i < 48; i++) bad += y[i] != want[i];
    printf("%d %d\n", rc, bad);
    return 0;
}}
"#,
        unit.header,
        sym = unit.entries[0].direct_symbol
    );
    let out = run_with_main_flags("avxrun", &unit.source, &main_c, &["-mavx512f"]);
    assert_eq!(out.trim(), "0 0");
}

#[test]
fn direct_access_to_registers_is_a_diagnostic() {
    let dram = dram();
    let avx = avx512();
    let mut p = ProcBuilder::new("bad", &dram);
    let x = p.tensor("x", DType::F32, vec![Expr::int(16)]);
    p.body().for_("i", 0, 1, |b, _| {
        let v = b.alloc("v", DType::F32, vec![Expr::int(16)], &avx);
        b.assign(&x, vec![Expr::int(0)], v.at(vec![Expr::int(3)]));
    });
    let e = emit(&[p.finish()]).unwrap_err();
    assert_eq!(e.rule, "codegen");
    assert!(e.message.contains("AVX512"), "{}", e.message);
}
