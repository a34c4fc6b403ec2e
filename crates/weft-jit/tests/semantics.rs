//! Every cast between the ten dtypes, every arithmetic operator on every type and every math
//! function, compiled with `-Wall -Wextra -Werror` and UBSan through the JIT, on edge-case
//! inputs, compared with Rust's semantics (`as`, wrapping, Euclidean division with `x / 0 = 0`).

use std::sync::Arc;
use weft_ir::build::{Buf, ProcBuilder};
use weft_ir::{BinOp, DType, Expr, MathFn, Memory, Proc, UnOp};
use weft_jit::{Arg, BufArg, Jit};

const N: usize = 8;

fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

/// A value of any dtype, for computing expectations.
#[derive(Clone, Copy, Debug)]
enum V {
    B(bool),
    I(i128),
    F(f64),
}

fn wrap(v: i128, d: DType) -> i128 {
    let bits = d.bits();
    let m = v.rem_euclid(1i128 << bits);
    if d.is_signed() && m >= 1i128 << (bits - 1) {
        m - (1i128 << bits)
    } else {
        m
    }
}

fn round_to(v: f64, d: DType) -> f64 {
    if d == DType::F32 {
        v as f32 as f64
    } else {
        v
    }
}

fn cast(v: V, to: DType) -> V {
    match (v, to) {
        (V::B(b), DType::Bool) => V::B(b),
        (V::I(i), DType::Bool) => V::B(i != 0),
        (V::F(f), DType::Bool) => V::B(f != 0.0),
        (V::B(b), t) if t.is_float() => V::F(b as u8 as f64),
        (V::B(b), _) => V::I(b as i128),
        (V::I(i), t) if t.is_float() => V::F(if t == DType::F32 {
            i as f32 as f64
        } else {
            i as f64
        }),
        (V::I(i), t) => V::I(wrap(i, t)),
        (V::F(f), t) if t.is_float() => V::F(round_to(f, t)),
        (V::F(f), t) => {
            let (lo, hi) = t.int_range().unwrap();
            V::I(if f.is_nan() {
                0
            } else if f <= lo as f64 {
                lo
            } else if f >= hi as f64 {
                hi
            } else {
                f.trunc() as i128
            })
        }
    }
}

fn inputs(d: DType) -> Vec<V> {
    match d {
        DType::Bool => (0..N).map(|i| V::B(i % 3 == 1)).collect(),
        d if d.is_float() => [
            0.0,
            1.5,
            -2.5,
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            1e10,
            -0.7,
        ]
        .iter()
        .map(|v| V::F(round_to(*v, d)))
        .collect(),
        d => {
            let (lo, hi) = d.int_range().unwrap();
            [0, 1, -1, lo, hi, 7, -7, 100]
                .iter()
                .map(|v| V::I(wrap(*v, d)))
                .collect()
        }
    }
}

/// Typed storage for one buffer.
enum Data {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Data {
    fn new(d: DType, vals: &[V]) -> Data {
        let i = |v: &V| match v {
            V::I(x) => *x,
            _ => 0,
        };
        let f = |v: &V| match v {
            V::F(x) => *x,
            _ => 0.0,
        };
        match d {
            DType::Bool => Data::Bool(vals.iter().map(|v| matches!(v, V::B(true))).collect()),
            DType::I8 => Data::I8(vals.iter().map(|v| i(v) as i8).collect()),
            DType::U8 => Data::U8(vals.iter().map(|v| i(v) as u8).collect()),
            DType::I16 => Data::I16(vals.iter().map(|v| i(v) as i16).collect()),
            DType::U16 => Data::U16(vals.iter().map(|v| i(v) as u16).collect()),
            DType::I32 => Data::I32(vals.iter().map(|v| i(v) as i32).collect()),
            DType::U32 => Data::U32(vals.iter().map(|v| i(v) as u32).collect()),
            DType::I64 => Data::I64(vals.iter().map(|v| i(v) as i64).collect()),
            DType::F32 => Data::F32(vals.iter().map(|v| f(v) as f32).collect()),
            DType::F64 => Data::F64(vals.iter().map(f).collect()),
        }
    }

    fn get(&self, k: usize) -> V {
        match self {
            Data::Bool(v) => V::B(v[k]),
            Data::I8(v) => V::I(v[k] as i128),
            Data::U8(v) => V::I(v[k] as i128),
            Data::I16(v) => V::I(v[k] as i128),
            Data::U16(v) => V::I(v[k] as i128),
            Data::I32(v) => V::I(v[k] as i128),
            Data::U32(v) => V::I(v[k] as i128),
            Data::I64(v) => V::I(v[k] as i128),
            Data::F32(v) => V::F(v[k] as f64),
            Data::F64(v) => V::F(v[k]),
        }
    }

    fn arg(&mut self, shape: &[usize]) -> Arg<'_> {
        Arg::Buf(match self {
            Data::Bool(v) => BufArg::new(v, shape),
            Data::I8(v) => BufArg::new(v, shape),
            Data::U8(v) => BufArg::new(v, shape),
            Data::I16(v) => BufArg::new(v, shape),
            Data::U16(v) => BufArg::new(v, shape),
            Data::I32(v) => BufArg::new(v, shape),
            Data::U32(v) => BufArg::new(v, shape),
            Data::I64(v) => BufArg::new(v, shape),
            Data::F32(v) => BufArg::new(v, shape),
            Data::F64(v) => BufArg::new(v, shape),
        })
    }
}

const INT_OPS: [&str; 9] = [
    "add", "sub", "mul", "div", "mod", "min", "max", "neg", "abs",
];
const FLOAT_OPS: [&str; 19] = [
    "add", "sub", "mul", "div", "min", "max", "neg", "abs", "sqrt", "floor", "ceil", "round",
    "fma", "exp", "log", "sin", "cos", "tanh", "pow",
];

fn ops_of(d: DType) -> &'static [&'static str] {
    if d.is_float() {
        &FLOAT_OPS
    } else {
        &INT_OPS
    }
}

fn build() -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new("sink", &mem);
    let n = Expr::int(N as i64);
    let ins: Vec<Buf> = DType::ALL
        .iter()
        .map(|d| p.tensor(&format!("in_{d}"), *d, vec![n.clone()]))
        .collect();
    let casts: Vec<Buf> = DType::ALL
        .iter()
        .map(|d| p.tensor(&format!("cast_{d}"), *d, vec![Expr::int(10), n.clone()]))
        .collect();
    let arith: Vec<(DType, Buf)> = DType::ALL
        .iter()
        .filter(|d| **d != DType::Bool)
        .map(|d| {
            let rows = ops_of(*d).len() as i64;
            (
                *d,
                p.tensor(&format!("ar_{d}"), *d, vec![Expr::int(rows), n.clone()]),
            )
        })
        .collect();
    p.body().for_("i", 0, n.clone(), |b, i| {
        let j = (i + 3) % (N as i64);
        for (to_k, to) in casts.iter().enumerate() {
            for (from_k, from) in ins.iter().enumerate() {
                let _ = to_k;
                b.assign(
                    to,
                    vec![Expr::int(from_k as i64), i.clone()],
                    Expr::cast(to.elem, from.at(vec![i.clone()])),
                );
            }
        }
        for (d, out) in &arith {
            let src = &ins[DType::ALL.iter().position(|x| x == d).unwrap()];
            let x = src.at(vec![i.clone()]);
            let y = src.at(vec![j.clone()]);
            for (row, op) in ops_of(*d).iter().enumerate() {
                let bin = |o| Expr::binary(o, x.clone(), y.clone());
                let m1 = |f| Expr::math(f, vec![x.clone()]);
                let e = match *op {
                    "add" => bin(BinOp::Add),
                    "sub" => bin(BinOp::Sub),
                    "mul" => bin(BinOp::Mul),
                    "div" => bin(BinOp::Div),
                    "mod" => bin(BinOp::Mod),
                    "min" => bin(BinOp::Min),
                    "max" => bin(BinOp::Max),
                    "neg" => Expr::unary(UnOp::Neg, x.clone()),
                    "abs" => m1(MathFn::Abs),
                    "sqrt" => m1(MathFn::Sqrt),
                    "floor" => m1(MathFn::Floor),
                    "ceil" => m1(MathFn::Ceil),
                    "round" => m1(MathFn::Round),
                    "exp" => m1(MathFn::Exp),
                    "log" => m1(MathFn::Log),
                    "sin" => m1(MathFn::Sin),
                    "cos" => m1(MathFn::Cos),
                    "tanh" => m1(MathFn::Tanh),
                    "pow" => Expr::math(MathFn::Pow, vec![x.clone(), y.clone()]),
                    _ => Expr::math(MathFn::Fma, vec![x.clone(), y.clone(), x.clone()]),
                };
                b.assign(out, vec![Expr::int(row as i64), i.clone()], e);
            }
        }
    });
    p.finish()
}

fn int_expect(op: &str, a: i128, b: i128, d: DType) -> i128 {
    let v = match op {
        "add" => a + b,
        "sub" => a - b,
        "mul" => a * b,
        "div" if b == 0 => 0,
        "div" => a.div_euclid(b),
        "mod" if b == 0 => 0,
        "mod" => a.rem_euclid(b),
        "min" => {
            if a < b {
                a
            } else {
                b
            }
        }
        "max" => {
            if a > b {
                a
            } else {
                b
            }
        }
        "neg" => -a,
        _ => a.abs(),
    };
    wrap(v, d)
}

fn float_expect(op: &str, a: f64, b: f64, d: DType) -> f64 {
    if d == DType::F32 {
        let (a, b) = (a as f32, b as f32);
        (match op {
            "add" => a + b,
            "sub" => a - b,
            "mul" => a * b,
            "div" => a / b,
            "min" => {
                if a < b {
                    a
                } else {
                    b
                }
            }
            "max" => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            "neg" => -a,
            "abs" => a.abs(),
            "sqrt" => a.sqrt(),
            "floor" => a.floor(),
            "ceil" => a.ceil(),
            "round" => a.round_ties_even(),
            "fma" => a.mul_add(b, a),
            "exp" => a.exp(),
            "log" => a.ln(),
            "sin" => a.sin(),
            "cos" => a.cos(),
            "tanh" => a.tanh(),
            _ => a.powf(b),
        }) as f64
    } else {
        match op {
            "add" => a + b,
            "sub" => a - b,
            "mul" => a * b,
            "div" => a / b,
            "min" => {
                if a < b {
                    a
                } else {
                    b
                }
            }
            "max" => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            "neg" => -a,
            "abs" => a.abs(),
            "sqrt" => a.sqrt(),
            "floor" => a.floor(),
            "ceil" => a.ceil(),
            "round" => a.round_ties_even(),
            "fma" => a.mul_add(b, a),
            "exp" => a.exp(),
            "log" => a.ln(),
            "sin" => a.sin(),
            "cos" => a.cos(),
            "tanh" => a.tanh(),
            _ => a.powf(b),
        }
    }
}

fn same(got: V, want: V, exact: bool) -> bool {
    match (got, want) {
        (V::B(a), V::B(b)) => a == b,
        (V::I(a), V::I(b)) => a == b,
        (V::F(a), V::F(b)) => {
            (a.is_nan() && b.is_nan())
                || a.to_bits() == b.to_bits()
                || (!exact && (a - b).abs() <= 1e-5 * b.abs().max(1e-30))
        }
        _ => false,
    }
}

#[test]
fn all_casts_and_operators_match_rust_semantics() {
    let proc = build();
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "-O1",
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
    let module = jit.compile(&[proc]).unwrap();
    let kernel = module.kernel("sink").unwrap();

    let input_vals: Vec<Vec<V>> = DType::ALL.iter().map(|d| inputs(*d)).collect();
    let mut ins: Vec<Data> = DType::ALL
        .iter()
        .zip(&input_vals)
        .map(|(d, v)| Data::new(*d, v))
        .collect();
    let mut casts: Vec<Data> = DType::ALL
        .iter()
        .map(|d| Data::new(*d, &vec![V::I(0); 10 * N]))
        .collect();
    let arith_types: Vec<DType> = DType::ALL
        .iter()
        .copied()
        .filter(|d| *d != DType::Bool)
        .collect();
    let mut arith: Vec<Data> = arith_types
        .iter()
        .map(|d| Data::new(*d, &vec![V::I(0); ops_of(*d).len() * N]))
        .collect();
    {
        let mut args: Vec<Arg> = Vec::new();
        for d in ins.iter_mut() {
            args.push(d.arg(&[N]));
        }
        for d in casts.iter_mut() {
            args.push(d.arg(&[10, N]));
        }
        for (d, t) in arith.iter_mut().zip(&arith_types) {
            let rows = ops_of(*t).len();
            args.push(d.arg(&[rows, N]));
        }
        kernel.call(&mut args).unwrap();
    }
    // Re-read inputs as stored (f32 rounding etc.).
    let stored: Vec<Vec<V>> = ins
        .iter()
        .map(|d| (0..N).map(|k| d.get(k)).collect())
        .collect();
    for (to_k, to) in DType::ALL.iter().enumerate() {
        for (from_k, from) in DType::ALL.iter().enumerate() {
            for (i, input) in stored[from_k].iter().enumerate() {
                let got = casts[to_k].get(from_k * N + i);
                let want = cast(*input, *to);
                assert!(
                    same(got, want, true),
                    "cast {from} -> {to} of {input:?}: got {got:?}, want {want:?}"
                );
            }
        }
    }
    for (t_k, t) in arith_types.iter().enumerate() {
        let src = &stored[DType::ALL.iter().position(|x| x == t).unwrap()];
        for (row, op) in ops_of(*t).iter().enumerate() {
            for i in 0..N {
                let (a, b) = (src[i], src[(i + 3) % N]);
                let got = arith[t_k].get(row * N + i);
                let want = match (a, b) {
                    (V::I(a), V::I(b)) => V::I(int_expect(op, a, b, *t)),
                    (V::F(a), V::F(b)) => V::F(float_expect(op, a, b, *t)),
                    _ => unreachable!(),
                };
                let exact = !matches!(*op, "exp" | "log" | "sin" | "cos" | "tanh" | "pow");
                assert!(
                    same(got, want, exact),
                    "{op} on {t} of {a:?}, {b:?}: got {got:?}, want {want:?}"
                );
            }
        }
    }
}

/// Float-to-integer conversions at every edge of every integer type: the last values that
/// convert exactly, the first that saturate, NaN and the infinities, in both forms of the C
/// helper: the branch-free one (`y`, in a short vector loop; `w`, in a loop whose extent is an
/// argument) and the range test of a statement that scatters (`s`, stored at an index read
/// from the data, `clamp_index(.., 0, 0)`, as a histogram's update is). The emitted C is checked
/// to use each form where it should. Each runs on all the values (vectorized by GCC where it
/// can) and on one value at a time (the scalar path), at `-O3` and under UBSan, whose
/// float-cast-overflow check catches a conversion out of range.
#[test]
fn float_to_int_conversions_saturate_at_every_edge() {
    let ints = DType::ALL.iter().copied().filter(|d| d.is_int());
    for flags in [
        &["-O3", "-march=native", "-Wall", "-Wextra", "-Werror"][..],
        &[
            "-O1",
            "-fsanitize=undefined,float-cast-overflow",
            "-fno-sanitize-recover=all",
        ][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let jit = Jit::with_compiler(
            dir.path(),
            "cc",
            flags.iter().map(|s| s.to_string()).collect(),
        )
        .unwrap();
        for from in [DType::F32, DType::F64] {
            for to in ints.clone() {
                let (lo, hi) = to.int_range().unwrap();
                let mut values = vec![0.0, -0.0, 0.99, -0.99, f64::NAN, f64::INFINITY];
                values.push(-f64::INFINITY);
                for edge in [lo as f64, hi as f64 + 1.0] {
                    for d in [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5] {
                        values.push(edge + d);
                    }
                    // The neighbours of the edge in the float type itself (of 0, which is
                    // the lower edge of unsigned types, the smallest subnormals).
                    if edge == 0.0 {
                        let tiny = if from == DType::F32 {
                            f32::from_bits(1) as f64
                        } else {
                            f64::from_bits(1)
                        };
                        values.extend([tiny, -tiny]);
                    } else if from == DType::F32 {
                        let e = edge as f32;
                        values.push(f32::from_bits(e.to_bits() - 1) as f64);
                        values.push(f32::from_bits(e.to_bits() + 1) as f64);
                    } else {
                        values.push(f64::from_bits(edge.to_bits() - 1));
                        values.push(f64::from_bits(edge.to_bits() + 1));
                    }
                }
                let values: Vec<V> = values.iter().map(|v| V::F(round_to(*v, from))).collect();
                let mut p = ProcBuilder::new("conv", &dram());
                let n = p.size("n");
                let k = p.size("k");
                let x = p.tensor("x", from, vec![n.clone(), Expr::int(16)]);
                let y = p.tensor("y", to, vec![n.clone(), Expr::int(16)]);
                let w = p.tensor("w", to, vec![n.clone(), k.clone()]);
                let sc = p.tensor("s", to, vec![n.clone(), k.clone(), Expr::int(1)]);
                p.assert(Expr::binary(BinOp::Eq, k.clone(), Expr::int(16)));
                p.body().for_("i", 0, n, |b, i| {
                    b.for_("l", 0, Expr::int(16), |b, l| {
                        let at = vec![i.clone(), l.clone()];
                        b.assign(&y, at.clone(), Expr::cast(to, x.at(at)));
                    });
                    b.for_("m", 0, k, |b, m| {
                        let at = vec![i.clone(), m.clone()];
                        let converted = Expr::cast(to, x.at(at.clone()));
                        b.assign(&w, at.clone(), converted.clone());
                        let zero = Expr::data_index(
                            Expr::cast(DType::I64, converted.clone()),
                            Expr::int(0),
                            Expr::int(0),
                        );
                        b.assign(&sc, vec![i.clone(), m.clone(), zero], converted);
                    });
                });
                let proc = p.finish();
                let c = weft_c::emit(std::slice::from_ref(&proc)).unwrap().source;
                let scalar = format!("weft_{}_to_{}_s(", from.name(), to.name());
                let line_of = |buf: &str| {
                    c.lines()
                        .find(|l| l.trim_start().starts_with(&format!("(v_{buf}_")))
                        .unwrap_or_else(|| panic!("no store to {buf} in\n{c}"))
                };
                assert!(line_of("s").contains(&scalar), "{}", line_of("s"));
                for buf in ["y", "w"] {
                    assert!(!line_of(buf).contains(&scalar), "{}", line_of(buf));
                }
                let module = jit.compile(&[proc]).unwrap();
                let kernel = module.kernel("conv").unwrap();
                // All at once, then one at a time (the other lanes 0).
                let mut runs: Vec<Vec<V>> = vec![values.clone()];
                runs.extend(values.iter().map(|v| vec![*v]));
                for mut run in runs {
                    run.resize(run.len().div_ceil(16) * 16, V::F(0.0));
                    let rows = run.len() / 16;
                    let mut xs = Data::new(from, &run);
                    let zeros = vec![V::I(0); run.len()];
                    let (mut ys, mut ws, mut ss) = (
                        Data::new(to, &zeros),
                        Data::new(to, &zeros),
                        Data::new(to, &zeros),
                    );
                    let mut args = vec![
                        Arg::Int(rows as i64),
                        Arg::Int(16),
                        xs.arg(&[rows, 16]),
                        ys.arg(&[rows, 16]),
                        ws.arg(&[rows, 16]),
                        ss.arg(&[rows, 16, 1]),
                    ];
                    kernel.call(&mut args).unwrap();
                    drop(args);
                    for (j, v) in run.iter().enumerate() {
                        let want = cast(*v, to);
                        let placements = [
                            ("branch-free, vector loop", &ys),
                            ("branch-free, other loop", &ws),
                            ("range test, scattering store", &ss),
                        ];
                        for (form, out) in placements {
                            let got = out.get(j);
                            assert!(
                                same(got, want, true),
                                "{from} -> {to} of {v:?}, {form} ({flags:?}): got {got:?}, want {want:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
