//! Config state, `let` windows, if/else, select, bool and index arguments, explicit `free`, and
//! an instruction template with control and stride placeholders, run through the JIT.

use std::sync::Arc;
use weft_ir::build::ProcBuilder;
use weft_ir::proc::{ConfigField, FieldType};
use weft_ir::{Config, CtrlType, DType, Expr, Memory, Proc, Span, WinCoord};
use weft_jit::{Arg, BufArg, Jit};

fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

fn misc() -> Arc<Proc> {
    let mem = dram();
    let cfg = Arc::new(Config {
        name: "Cfg".into(),
        fields: vec![
            ConfigField {
                name: "scale".into(),
                ty: FieldType::Data(DType::F32),
            },
            ConfigField {
                name: "count".into(),
                ty: FieldType::Ctrl(CtrlType::Index),
            },
        ],
        span: Span::DUMMY,
    });
    // An instruction in plain DRAM: a strided copy written as a C loop.
    let mut c = ProcBuilder::new("copy_strided", &mem);
    c.instr_template(
        "for (int64_t k = 0; k < {n}; k++) (&{dst_data})[k * {dst_stride_0}] = (&{src_data})[k * {src_stride_0}];",
    );
    let cn = c.size("n");
    let dst = c.window("dst", DType::F32, vec![cn.clone()]);
    let src = c.window("src", DType::F32, vec![cn.clone()]);
    c.body().for_("i", 0, &cn, |b, i| {
        b.assign(&dst, vec![i.clone()], src.at(vec![i.clone()]));
    });
    let copy = c.finish();

    let mut p = ProcBuilder::new("misc", &mem);
    let n = p.size("n");
    let flag = p.bool_arg("flag");
    let off = p.index("off");
    let x = p.window("x", DType::F32, vec![n.clone()]);
    let y = p.tensor("y", DType::F32, vec![n.clone()]);
    let b = p.body();
    b.write_config(&cfg, 0, Expr::float(2.0));
    b.write_config(&cfg, 1, off.clone());
    let t = b.alloc("t", DType::F32, vec![n.clone() + 1], &mem);
    b.for_("i", 0, &n, |bb, i| {
        let xi = x.at(vec![i.clone()]);
        bb.if_else(
            flag.clone(),
            |tb| {
                tb.assign(
                    &t,
                    vec![i.clone() + 1],
                    xi.clone() * Expr::read_config(&cfg, 0),
                );
            },
            |eb| {
                eb.assign(
                    &t,
                    vec![i.clone() + 1],
                    Expr::select(xi.clone().gt(0.0), xi.clone(), -xi.clone()),
                );
            },
        );
    });
    let w = b.window(
        "w",
        &t,
        vec![WinCoord::Interval(Expr::int(1), n.clone() + 1)],
    );
    b.call(&copy, vec![n.clone(), y.all(), w.all()]);
    b.free(&t);
    b.reduce(
        &y,
        vec![Expr::int(0)],
        Expr::cast(DType::F32, Expr::read_config(&cfg, 1)),
    );
    p.finish()
}

#[test]
fn statements_run_as_specified() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fsanitize=undefined",
        "-fno-sanitize-recover=undefined",
    ];
    let jit = Jit::with_compiler(
        dir.path(),
        "cc",
        flags.iter().map(|s| s.to_string()).collect(),
    )
    .unwrap();
    let k = jit.compile(&[misc()]).unwrap().kernel("misc").unwrap();
    let x: Vec<f32> = vec![1.0, -2.0, 3.5, -0.25, 0.0, 10.0, -1.0, 8.0];
    // x viewed with stride 2 from a longer array.
    let backing: Vec<f32> = x.iter().flat_map(|v| [*v, 99.0]).collect();
    for flag in [true, false] {
        let mut y = vec![0.0f32; 8];
        k.call(&mut [
            Arg::Int(8),
            Arg::Bool(flag),
            Arg::Int(-5),
            Arg::Buf(BufArg::strided_ref(&backing, &[8], &[2])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap();
        let mut want: Vec<f32> = x
            .iter()
            .map(|v| {
                if flag {
                    v * 2.0
                } else if *v > 0.0 {
                    *v
                } else {
                    -v
                }
            })
            .collect();
        want[0] += -5.0;
        assert_eq!(y, want, "flag {flag}");
    }
}
