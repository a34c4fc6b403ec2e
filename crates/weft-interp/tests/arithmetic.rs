//! Data and control arithmetic: wrapping, Euclidean division, casts, min/max, select, math.

mod common;

use common::{buf, dram, run_fresh};
use weft_interp::{ArgValue, Buffer, Scalar};
use weft_ir::build::ProcBuilder;
use weft_ir::{BinOp, DType, Expr, MathFn};

/// `c = a op b` on rank-0 buffers of type `d`.
fn scalar_binop(op: BinOp, d: DType, a: Scalar, b: Scalar) -> Option<Scalar> {
    let mem = dram();
    let mut p = ProcBuilder::new("binop", &mem);
    let x = p.scalar("a", d);
    let y = p.scalar("b", d);
    let z = p.scalar("c", d);
    p.body()
        .assign(&z, vec![], Expr::binary(op, x.get(), y.get()));
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Buf(Buffer::from_scalars(d, vec![], vec![a])),
        ArgValue::Buf(Buffer::from_scalars(d, vec![], vec![b])),
        ArgValue::Buf(Buffer::new_uninit(d, vec![])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    buf(&args, 2).data[0]
}

#[test]
fn integer_arithmetic_wraps() {
    assert_eq!(
        scalar_binop(BinOp::Add, DType::U8, Scalar::U8(200), Scalar::U8(100)),
        Some(Scalar::U8(44))
    );
    assert_eq!(
        scalar_binop(
            BinOp::Add,
            DType::I32,
            Scalar::I32(i32::MAX),
            Scalar::I32(1)
        ),
        Some(Scalar::I32(i32::MIN))
    );
    assert_eq!(
        scalar_binop(BinOp::Mul, DType::I16, Scalar::I16(300), Scalar::I16(300)),
        Some(Scalar::I16(300i16.wrapping_mul(300)))
    );
    assert_eq!(
        scalar_binop(BinOp::Sub, DType::U32, Scalar::U32(0), Scalar::U32(1)),
        Some(Scalar::U32(u32::MAX))
    );
}

#[test]
fn data_division_is_euclidean_and_total() {
    let cases: [(i32, i32, i32, i32); 7] = [
        (7, 2, 3, 1),
        (-7, 2, -4, 1),
        (7, -2, -3, 1),
        (-7, -2, 4, 1),
        (5, 0, 0, 0),
        (-5, 0, 0, 0),
        (i32::MIN, -1, i32::MIN, 0),
    ];
    for (a, b, q, r) in cases {
        let got_q = scalar_binop(BinOp::Div, DType::I32, Scalar::I32(a), Scalar::I32(b));
        let got_r = scalar_binop(BinOp::Mod, DType::I32, Scalar::I32(a), Scalar::I32(b));
        assert_eq!(got_q, Some(Scalar::I32(q)), "{a} / {b}");
        assert_eq!(got_r, Some(Scalar::I32(r)), "{a} % {b}");
    }
    assert_eq!(
        scalar_binop(BinOp::Div, DType::U8, Scalar::U8(250), Scalar::U8(0)),
        Some(Scalar::U8(0))
    );
}

#[test]
fn float_modulo_is_an_error() {
    let mem = dram();
    let mut p = ProcBuilder::new("fmod", &mem);
    let x = p.scalar("a", DType::F32);
    p.body()
        .assign(&x, vec![], Expr::binary(BinOp::Mod, x.get(), x.get()));
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::from_f32(vec![], &[1.5]))];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains('%'), "{err}");
}

#[test]
fn control_division_is_euclidean_and_total() {
    // out[i] = (i - 3) / d and (i - 3) % d, computed in control arithmetic, then cast to data.
    let mem = dram();
    let mut p = ProcBuilder::new("ctrl_div", &mem);
    let n = p.size("n");
    let d = p.index("d");
    let q = p.tensor("q", DType::I64, vec![n.clone()]);
    let r = p.tensor("r", DType::I64, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(
            &q,
            vec![i.clone()],
            Expr::cast(DType::I64, (i - 3) / d.clone()),
        );
        b.assign(
            &r,
            vec![i.clone()],
            Expr::cast(DType::I64, (i - 3) % d.clone()),
        );
    });
    let proc = p.finish();
    for divisor in [2i64, -2, 0, 3] {
        let mut args = vec![
            ArgValue::Int(7),
            ArgValue::Int(divisor),
            ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![7])),
            ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![7])),
        ];
        run_fresh(&proc, &mut args).unwrap();
        let want_q: Vec<i64> = (0..7)
            .map(|i: i64| {
                if divisor == 0 {
                    0
                } else {
                    (i - 3).div_euclid(divisor)
                }
            })
            .collect();
        let want_r: Vec<i64> = (0..7)
            .map(|i: i64| {
                if divisor == 0 {
                    0
                } else {
                    (i - 3).rem_euclid(divisor)
                }
            })
            .collect();
        assert_eq!(buf(&args, 2).to_i64_vec().unwrap(), want_q, "d = {divisor}");
        assert_eq!(buf(&args, 3).to_i64_vec().unwrap(), want_r, "d = {divisor}");
    }
    // Spot values written out by hand for d = 2: (-3)/2 = -2, (-3)%2 = 1.
    let mut args = vec![
        ArgValue::Int(1),
        ArgValue::Int(2),
        ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![1])),
        ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![1])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(buf(&args, 2).to_i64_vec().unwrap(), vec![-2]);
    assert_eq!(buf(&args, 3).to_i64_vec().unwrap(), vec![1]);
}

#[test]
fn control_overflow_is_an_error() {
    let mem = dram();
    let mut p = ProcBuilder::new("ovf", &mem);
    let k = p.index("k");
    let x = p.scalar("x", DType::I64);
    p.body()
        .assign(&x, vec![], Expr::cast(DType::I64, k.clone() * (1i64 << 62)));
    let proc = p.finish();
    // Arguments lie in ±(2^31 - 1); the product does not fit 64 bits.
    let mut args = vec![
        ArgValue::Int(2),
        ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![])),
    ];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("overflow"), "{err}");
    let mut args = vec![
        ArgValue::Int(-2),
        ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(buf(&args, 1).to_i64_vec().unwrap(), vec![i64::MIN]);
}

/// `out[i] = cast(to, x[i])` over a vector.
fn cast_vec(x: Buffer, to: DType) -> Buffer {
    let mem = dram();
    let mut p = ProcBuilder::new("cast", &mem);
    let n = p.size("n");
    let xs = p.tensor("x", x.dtype, vec![n.clone()]);
    let out = p.tensor("out", to, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(
            &out,
            vec![i.clone()],
            Expr::cast(to, xs.at(vec![i.clone()])),
        );
    });
    let proc = p.finish();
    let len = x.data.len();
    let mut args = vec![
        ArgValue::Int(len as i64),
        ArgValue::Buf(x),
        ArgValue::Buf(Buffer::new_uninit(to, vec![len])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    buf(&args, 2).clone()
}

#[test]
fn float_to_int_casts_saturate_and_map_nan_to_zero() {
    let x = Buffer::from_f32(vec![6], &[1e10, -1e10, f32::NAN, 2.7, -2.7, f32::INFINITY]);
    let got = cast_vec(x.clone(), DType::I32).to_i32_vec().unwrap();
    assert_eq!(got, vec![i32::MAX, i32::MIN, 0, 2, -2, i32::MAX]);
    let got = cast_vec(x, DType::U8).to_u8_vec().unwrap();
    assert_eq!(got, vec![255, 0, 0, 2, 0, 255]);
}

#[test]
fn int_casts_wrap_and_bool_casts_compare_with_zero() {
    let x = Buffer::from_i32(vec![4], &[200, -1, 65537, 0]);
    assert_eq!(
        cast_vec(x.clone(), DType::I8).to_i8_vec().unwrap(),
        vec![-56, -1, 1, 0]
    );
    assert_eq!(
        cast_vec(x.clone(), DType::U16).to_u16_vec().unwrap(),
        vec![200, 65535, 1, 0]
    );
    assert_eq!(
        cast_vec(x.clone(), DType::Bool).to_bool_vec().unwrap(),
        vec![true, true, true, false]
    );
    assert_eq!(
        cast_vec(x, DType::F32).to_f32_vec().unwrap(),
        vec![200.0, -1.0, 65537.0, 0.0]
    );
    let b = Buffer::from_bool(vec![2], &[true, false]);
    assert_eq!(
        cast_vec(b.clone(), DType::I32).to_i32_vec().unwrap(),
        vec![1, 0]
    );
    assert_eq!(
        cast_vec(b, DType::F64).to_f64_vec().unwrap(),
        vec![1.0, 0.0]
    );
    // i64 -> f32 rounds to nearest (2^24 + 1 is not representable).
    let big = Buffer::from_i64(vec![1], &[(1 << 24) + 1]);
    assert_eq!(
        cast_vec(big, DType::F32).to_f32_vec().unwrap(),
        vec![16777216.0]
    );
    let f = Buffer::from_f64(vec![2], &[0.1, -0.0]);
    let got = cast_vec(f, DType::F32).to_f32_vec().unwrap();
    assert_eq!(got[0], 0.1f64 as f32);
    assert!(got[1] == 0.0 && got[1].is_sign_negative());
}

#[test]
fn float_min_max_follow_the_c_ternary() {
    let nan = f32::NAN;
    let min = |a: f32, b: f32| {
        scalar_binop(BinOp::Min, DType::F32, Scalar::F32(a), Scalar::F32(b)).unwrap()
    };
    let max = |a: f32, b: f32| {
        scalar_binop(BinOp::Max, DType::F32, Scalar::F32(a), Scalar::F32(b)).unwrap()
    };
    assert_eq!(min(1.0, 2.0), Scalar::F32(1.0));
    assert_eq!(max(1.0, 2.0), Scalar::F32(2.0));
    // a < b is false with a NaN, so the second operand wins.
    assert_eq!(min(nan, 2.0), Scalar::F32(2.0));
    assert!(matches!(min(2.0, nan), Scalar::F32(v) if v.is_nan()));
    assert_eq!(max(nan, 2.0), Scalar::F32(2.0));
    assert_eq!(
        scalar_binop(BinOp::Min, DType::I8, Scalar::I8(-3), Scalar::I8(4)),
        Some(Scalar::I8(-3))
    );
}

#[test]
fn comparisons_give_data_bools_and_select_picks() {
    let mem = dram();
    let mut p = ProcBuilder::new("relu_mask", &mem);
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    let y = p.tensor("y", DType::F32, vec![n.clone()]);
    let m = p.tensor("m", DType::Bool, vec![n.clone()]);
    p.body().for_("i", 0, &n, |b, i| {
        let xi = x.at(vec![i.clone()]);
        b.assign(&m, vec![i.clone()], xi.clone().gt(0.0));
        b.assign(
            &y,
            vec![i.clone()],
            Expr::select(xi.clone().gt(0.0), xi, Expr::float(0.0)),
        );
    });
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Int(3),
        ArgValue::Buf(Buffer::from_f32(vec![3], &[-1.0, 0.5, 2.0])),
        ArgValue::Buf(Buffer::new_uninit(DType::F32, vec![3])),
        ArgValue::Buf(Buffer::new_uninit(DType::Bool, vec![3])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(buf(&args, 2).to_f32_vec().unwrap(), vec![0.0, 0.5, 2.0]);
    assert_eq!(
        buf(&args, 3).to_bool_vec().unwrap(),
        vec![false, true, true]
    );
}

#[test]
fn math_functions_use_the_exact_type() {
    let mem = dram();
    let mut p = ProcBuilder::new("math", &mem);
    let x = p.scalar("x", DType::F32);
    let out = p.tensor("out", DType::F32, vec![Expr::int(4)]);
    let ai = p.scalar("ai", DType::I32);
    p.body()
        .assign(
            &out,
            vec![Expr::int(0)],
            Expr::math(MathFn::Sqrt, vec![x.get()]),
        )
        .assign(
            &out,
            vec![Expr::int(1)],
            Expr::math(MathFn::Exp, vec![x.get()]),
        )
        .assign(
            &out,
            vec![Expr::int(2)],
            Expr::math(MathFn::Fma, vec![x.get(), x.get(), Expr::float(1.0)]),
        )
        .assign(
            &out,
            vec![Expr::int(3)],
            Expr::math(MathFn::Pow, vec![x.get(), Expr::float(3.0)]),
        )
        .assign(&ai, vec![], Expr::math(MathFn::Abs, vec![ai.get()]));
    let proc = p.finish();
    let v = 1.7f32;
    let mut args = vec![
        ArgValue::Buf(Buffer::from_f32(vec![], &[v])),
        ArgValue::Buf(Buffer::new_uninit(DType::F32, vec![4])),
        ArgValue::Buf(Buffer::from_i32(vec![], &[i32::MIN])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    let got = buf(&args, 1).to_f32_vec().unwrap();
    assert_eq!(got, vec![v.sqrt(), v.exp(), v.mul_add(v, 1.0), v.powf(3.0)]);
    assert_eq!(buf(&args, 2).to_i32_vec().unwrap(), vec![i32::MIN]);
}

#[test]
fn negation_wraps_and_literals_convert() {
    let mem = dram();
    let mut p = ProcBuilder::new("neg", &mem);
    let a = p.scalar("a", DType::I8);
    let b = p.scalar("b", DType::U8);
    p.body()
        .assign(&a, vec![], -a.get())
        .assign(&b, vec![], b.get() + Expr::int(-1));
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Buf(Buffer::from_i8(vec![], &[i8::MIN])),
        ArgValue::Buf(Buffer::from_u8(vec![], &[5])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(buf(&args, 0).to_i8_vec().unwrap(), vec![i8::MIN]);
    assert_eq!(buf(&args, 1).to_u8_vec().unwrap(), vec![4]);
}
