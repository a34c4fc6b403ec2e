//! Whole programs: loops, allocation, windows, calls, configs, argument checking, random inputs.

mod common;

use common::{buf, dram, run_fresh};
use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{random_args, run, ArgValue, Buffer, ConfigState, ConfigValue, Scalar};
use weft_ir::build::ProcBuilder;
use weft_ir::proc::FieldType;
use weft_ir::{Config, ConfigField, CtrlType, DType, Expr, Proc, Span, WinCoord};

fn sgemm() -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new("sgemm", &mem);
    let m = p.size("M");
    let n = p.size("N");
    let k = p.size("K");
    let a = p.tensor("A", DType::F32, vec![m.clone(), k.clone()]);
    let b = p.tensor("B", DType::F32, vec![k.clone(), n.clone()]);
    let c = p.tensor("C", DType::F32, vec![m.clone(), n.clone()]);
    p.body().for_("i", 0, &m, |bb, i| {
        bb.for_("j", 0, &n, |bb, j| {
            bb.for_("k", 0, &k, |bb, kk| {
                bb.reduce(
                    &c,
                    vec![i.clone(), j.clone()],
                    a.at(vec![i.clone(), kk.clone()]) * b.at(vec![kk.clone(), j.clone()]),
                );
            });
        });
    });
    p.finish()
}

#[test]
fn sgemm_matches_a_direct_triple_loop() {
    let (m, n, k) = (3usize, 4usize, 5usize);
    let a: Vec<f32> = (0..m * k).map(|v| (v as f32 * 0.37).sin()).collect();
    let b: Vec<f32> = (0..k * n).map(|v| (v as f32 * 0.91).cos()).collect();
    let c0: Vec<f32> = (0..m * n).map(|v| v as f32 * 0.25 - 1.0).collect();
    let mut want = c0.clone();
    for i in 0..m {
        for j in 0..n {
            for kk in 0..k {
                want[i * n + j] += a[i * k + kk] * b[kk * n + j];
            }
        }
    }
    let mut args = vec![
        ArgValue::Int(m as i64),
        ArgValue::Int(n as i64),
        ArgValue::Int(k as i64),
        ArgValue::Buf(Buffer::from_f32(vec![m, k], &a)),
        ArgValue::Buf(Buffer::from_f32(vec![k, n], &b)),
        ArgValue::Buf(Buffer::from_f32(vec![m, n], &c0)),
    ];
    run_fresh(&sgemm(), &mut args).unwrap();
    let got = buf(&args, 5).to_f32_vec().unwrap();
    // The same operations in the same order in f32: bit-identical.
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // Inputs are untouched.
    assert_eq!(buf(&args, 3).to_f32_vec().unwrap(), a);
}

#[test]
fn uninitialised_reads_propagate_as_error_values() {
    let mem = dram();
    let mut p = ProcBuilder::new("partial", &mem);
    let n = p.size("n");
    let out = p.tensor("out", DType::F32, vec![n.clone()]);
    let body = p.body();
    let tmp = body.alloc("tmp", DType::F32, vec![n.clone()], &mem);
    body.for_("i", 0, n.clone() - 1, |b, i| {
        b.assign(&tmp, vec![i.clone()], Expr::cast(DType::F32, i.clone()));
    });
    body.for_("i", 0, &n, |b, i| {
        b.assign(&out, vec![i.clone()], tmp.at(vec![i.clone()]) * 2.0);
    });
    body.free(&tmp);
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Int(4),
        ArgValue::Buf(Buffer::from_f32(vec![4], &[9.0; 4])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    let out = buf(&args, 1);
    assert_eq!(out.error_cells(), 1);
    assert_eq!(out.to_f32_vec(), None);
    assert_eq!(
        out.data,
        vec![
            Some(Scalar::F32(0.0)),
            Some(Scalar::F32(2.0)),
            Some(Scalar::F32(4.0)),
            None
        ]
    );
}

/// An empty loop runs zero times; a negative extent is an error (DESIGN.md §2), which the checker
/// also rejects statically (rule `extent`).
#[test]
fn empty_loops_run_zero_times_and_negative_extents_are_errors() {
    let mem = dram();
    let mut p = ProcBuilder::new("rev", &mem);
    let lo = p.index("lo");
    let hi = p.index("hi");
    let x = p.scalar("x", DType::I32);
    p.body().for_("i", &lo, &hi, |b, _| {
        b.reduce(&x, vec![], Expr::int(1));
    });
    let proc = p.finish();
    let args = |l, h| {
        vec![
            ArgValue::Int(l),
            ArgValue::Int(h),
            ArgValue::Buf(Buffer::from_i32(vec![], &[0])),
        ]
    };
    for (l, h, want) in [(2, 7, 5), (3, 3, 0)] {
        let mut a = args(l, h);
        run_fresh(&proc, &mut a).unwrap();
        assert_eq!(buf(&a, 2).to_i32_vec().unwrap(), vec![want]);
    }
    let err = run_fresh(&proc, &mut args(5, -2)).unwrap_err();
    assert!(
        err.message.contains("negative extent") && err.message.contains("5..-2"),
        "{err}"
    );
}

#[test]
fn windows_alias_their_source_and_compose() {
    let mem = dram();
    let mut p = ProcBuilder::new("win", &mem);
    let a = p.tensor("A", DType::I32, vec![Expr::int(3), Expr::int(4)]);
    let s = p.tensor("s", DType::I64, vec![Expr::int(4)]);
    let body = p.body();
    // w = A[1, 0:3]: a row segment.
    let w = body.window(
        "w",
        &a,
        vec![
            WinCoord::Point(Expr::int(1)),
            WinCoord::Interval(Expr::int(0), Expr::int(3)),
        ],
    );
    body.for_("i", 0, 3, |b, i| {
        b.assign(&w, vec![i.clone()], Expr::cast(DType::I32, i.clone() + 10));
    });
    // v = w[1:3]; v[0] is A[1, 1].
    let v = body.window(
        "v",
        &w,
        vec![WinCoord::Interval(Expr::int(1), Expr::int(3))],
    );
    body.assign(&v, vec![Expr::int(0)], Expr::int(100));
    // col = A[0:3, 2]: a column, stride 4.
    let col = body.window(
        "col",
        &a,
        vec![
            WinCoord::Interval(Expr::int(0), Expr::int(3)),
            WinCoord::Point(Expr::int(2)),
        ],
    );
    body.assign(&col, vec![Expr::int(2)], Expr::int(-7));
    body.assign(&s, vec![Expr::int(0)], Expr::cast(DType::I64, a.stride(0)));
    body.assign(&s, vec![Expr::int(1)], Expr::cast(DType::I64, a.stride(1)));
    body.assign(&s, vec![Expr::int(2)], Expr::cast(DType::I64, w.stride(0)));
    body.assign(
        &s,
        vec![Expr::int(3)],
        Expr::cast(DType::I64, col.stride(0)),
    );
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Buf(Buffer::from_i32(vec![3, 4], &[0; 12])),
        ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![4])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(
        buf(&args, 0).to_i32_vec().unwrap(),
        vec![0, 0, 0, 0, 10, 100, 12, 0, 0, 0, -7, 0]
    );
    assert_eq!(buf(&args, 1).to_i64_vec().unwrap(), vec![4, 1, 1, 4]);
}

#[test]
fn out_of_bounds_window_and_access_are_reported() {
    let mem = dram();
    let mut p = ProcBuilder::new("oob", &mem);
    let n = p.size("n");
    let x = p.tensor("x", DType::F32, vec![n.clone()]);
    p.body().for_("i", 0, n.clone() + 1, |b, i| {
        b.assign(&x, vec![i.clone()], Expr::float(1.0));
    });
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Int(3),
        ArgValue::Buf(Buffer::new_uninit(DType::F32, vec![3])),
    ];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("out-of-bounds"), "{err}");
    // Writes before the error are kept in the argument.
    assert_eq!(buf(&args, 1).to_f32_vec().unwrap(), vec![1.0; 3]);

    let mut p = ProcBuilder::new("oob_win", &mem);
    let x = p.tensor("x", DType::F32, vec![Expr::int(4)]);
    let body = p.body();
    let w = body.window(
        "w",
        &x,
        vec![WinCoord::Interval(Expr::int(2), Expr::int(5))],
    );
    body.assign(&w, vec![Expr::int(0)], Expr::float(0.0));
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::new_uninit(DType::F32, vec![4]))];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("window"), "{err}");
}

#[test]
fn use_after_free_is_an_error() {
    let mem = dram();
    let mut p = ProcBuilder::new("uaf", &mem);
    let x = p.scalar("x", DType::F32);
    let body = p.body();
    let t = body.alloc("t", DType::F32, vec![Expr::int(2)], &mem);
    body.assign(&t, vec![Expr::int(0)], Expr::float(1.0));
    body.free(&t);
    body.assign(&x, vec![], t.at(vec![Expr::int(0)]));
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::new_uninit(DType::F32, vec![]))];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("freed"), "{err}");
}

/// `scale(n, x: [f32][n] window)`: x[i] *= 2, with `assert n >= 2`.
fn scale_proc(window: bool) -> Arc<Proc> {
    let mem = dram();
    let mut p = ProcBuilder::new(if window { "scale_w" } else { "scale_t" }, &mem);
    let n = p.size("n");
    let x = if window {
        p.window("x", DType::F32, vec![n.clone()])
    } else {
        p.tensor("x", DType::F32, vec![n.clone()])
    };
    p.assert(n.clone().ge(2));
    p.body().for_("i", 0, &n, |b, i| {
        b.assign(&x, vec![i.clone()], x.at(vec![i.clone()]) * 2.0);
    });
    p.finish()
}

#[test]
fn calls_pass_buffers_and_windows_by_reference() {
    let mem = dram();
    let callee = scale_proc(true);
    let dense_callee = scale_proc(false);
    let mut p = ProcBuilder::new("caller", &mem);
    let a = p.tensor("A", DType::F32, vec![Expr::int(3), Expr::int(4)]);
    let v = p.tensor("v", DType::F32, vec![Expr::int(2)]);
    p.body()
        // Row 1 (dense) through a window parameter.
        .call(
            &callee,
            vec![
                Expr::int(4),
                a.win(vec![
                    WinCoord::Point(Expr::int(1)),
                    WinCoord::Interval(Expr::int(0), Expr::int(4)),
                ]),
            ],
        )
        // Column 2 (stride 4), rows 0..3.
        .call(
            &callee,
            vec![
                Expr::int(3),
                a.win(vec![
                    WinCoord::Interval(Expr::int(0), Expr::int(3)),
                    WinCoord::Point(Expr::int(2)),
                ]),
            ],
        )
        // A whole tensor to a tensor parameter.
        .call(&dense_callee, vec![Expr::int(2), v.all()]);
    let proc = p.finish();
    let a0: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let mut args = vec![
        ArgValue::Buf(Buffer::from_f32(vec![3, 4], &a0)),
        ArgValue::Buf(Buffer::from_f32(vec![2], &[1.5, -3.0])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    let mut want = a0.clone();
    for j in 0..4 {
        want[4 + j] *= 2.0;
    }
    for i in 0..3 {
        want[i * 4 + 2] *= 2.0;
    }
    assert_eq!(buf(&args, 0).to_f32_vec().unwrap(), want);
    assert_eq!(buf(&args, 1).to_f32_vec().unwrap(), vec![3.0, -6.0]);
}

#[test]
fn failing_callee_precondition_is_an_error() {
    let mem = dram();
    let callee = scale_proc(true);
    let mut p = ProcBuilder::new("caller", &mem);
    let a = p.tensor("A", DType::F32, vec![Expr::int(4)]);
    p.body().call(
        &callee,
        vec![
            Expr::int(1),
            a.win(vec![WinCoord::Interval(Expr::int(0), Expr::int(1))]),
        ],
    );
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::from_f32(vec![4], &[1.0; 4]))];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("precondition"), "{err}");
    assert_eq!(buf(&args, 0).to_f32_vec().unwrap(), vec![1.0; 4]);
}

#[test]
fn call_shape_mismatch_and_strided_tensor_argument_are_errors() {
    let mem = dram();
    let window_callee = scale_proc(true);
    let tensor_callee = scale_proc(false);
    let mut p = ProcBuilder::new("bad_shape", &mem);
    let a = p.tensor("A", DType::F32, vec![Expr::int(3), Expr::int(4)]);
    let row = a.win(vec![
        WinCoord::Point(Expr::int(0)),
        WinCoord::Interval(Expr::int(0), Expr::int(4)),
    ]);
    p.body().call(&window_callee, vec![Expr::int(3), row]);
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::from_f32(vec![3, 4], &[0.0; 12]))];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("shape"), "{err}");

    let mut p = ProcBuilder::new("strided", &mem);
    let a = p.tensor("A", DType::F32, vec![Expr::int(3), Expr::int(4)]);
    let col = a.win(vec![
        WinCoord::Interval(Expr::int(0), Expr::int(3)),
        WinCoord::Point(Expr::int(0)),
    ]);
    p.body().call(&tensor_callee, vec![Expr::int(3), col]);
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::from_f32(vec![3, 4], &[0.0; 12]))];
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("strided"), "{err}");
}

fn cfg() -> Arc<Config> {
    Arc::new(Config {
        name: "Cfg".into(),
        fields: vec![
            ConfigField {
                name: "scale".into(),
                ty: FieldType::Data(DType::F32),
            },
            ConfigField {
                name: "step".into(),
                ty: FieldType::Ctrl(CtrlType::Stride),
            },
        ],
        span: Span::DUMMY,
    })
}

#[test]
fn config_state_persists_across_runs() {
    let mem = dram();
    let cfg = cfg();
    let mut setter = ProcBuilder::new("set_cfg", &mem);
    let s = setter.scalar("s", DType::F32);
    let k = setter.stride_arg("k");
    setter
        .body()
        .write_config(&cfg, 0, s.get())
        .write_config(&cfg, 1, k.clone() * 2);
    let setter = setter.finish();
    let mut getter = ProcBuilder::new("get_cfg", &mem);
    let x = getter.scalar("x", DType::F32);
    let y = getter.scalar("y", DType::I64);
    getter
        .body()
        .assign(&x, vec![], Expr::read_config(&cfg, 0))
        .assign(
            &y,
            vec![],
            Expr::cast(DType::I64, Expr::read_config(&cfg, 1)),
        );
    let getter = getter.finish();

    let mut state = ConfigState::default();
    // Before any write: reading the control field is an error.
    let mut gargs = vec![
        ArgValue::Buf(Buffer::new_uninit(DType::F32, vec![])),
        ArgValue::Buf(Buffer::new_uninit(DType::I64, vec![])),
    ];
    let err = run(&getter, &mut gargs, &mut state).unwrap_err();
    assert!(err.message.contains("before it was ever written"), "{err}");
    // The data field read before the failing statement gave the error value.
    assert_eq!(buf(&gargs, 0).data, vec![None]);

    let mut sargs = vec![
        ArgValue::Buf(Buffer::from_f32(vec![], &[2.5])),
        ArgValue::Int(3),
    ];
    run(&setter, &mut sargs, &mut state).unwrap();
    assert_eq!(state.get("Cfg", 1), Some(ConfigValue::Int(6)));
    run(&getter, &mut gargs, &mut state).unwrap();
    assert_eq!(buf(&gargs, 0).to_f32_vec().unwrap(), vec![2.5]);
    assert_eq!(buf(&gargs, 1).to_i64_vec().unwrap(), vec![6]);
    // set() from the host is seen by the program.
    state.set("Cfg", 0, ConfigValue::Data(Some(Scalar::F32(-1.0))));
    run(&getter, &mut gargs, &mut state).unwrap();
    assert_eq!(buf(&gargs, 0).to_f32_vec().unwrap(), vec![-1.0]);
}

#[test]
fn argument_errors_are_reported() {
    let proc = sgemm();
    let good = || {
        vec![
            ArgValue::Int(2),
            ArgValue::Int(3),
            ArgValue::Int(4),
            ArgValue::Buf(Buffer::from_f32(vec![2, 4], &[0.0; 8])),
            ArgValue::Buf(Buffer::from_f32(vec![4, 3], &[0.0; 12])),
            ArgValue::Buf(Buffer::from_f32(vec![2, 3], &[0.0; 6])),
        ]
    };
    let mut args = good();
    run_fresh(&proc, &mut args).unwrap();

    let mut args = good();
    args.pop();
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("takes 6 arguments"), "{err}");

    let mut args = good();
    args[5] = ArgValue::Buf(Buffer::from_f32(vec![3, 2], &[0.0; 6]));
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("shape"), "{err}");

    let mut args = good();
    args[0] = ArgValue::Int(0);
    args[3] = ArgValue::Buf(Buffer::from_f32(vec![0, 4], &[]));
    args[5] = ArgValue::Buf(Buffer::from_f32(vec![0, 3], &[]));
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("positive"), "{err}");

    let mut args = good();
    args[1] = ArgValue::Bool(true);
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("bool"), "{err}");

    let mut args = good();
    args[4] = ArgValue::Buf(Buffer::from_f64(vec![4, 3], &[0.0; 12]));
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("f64"), "{err}");

    let mut args = good();
    args[4] = ArgValue::Int(1);
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("buffer"), "{err}");

    // A buffer whose data does not fill its shape.
    let mut args = good();
    args[3] = ArgValue::Buf(Buffer::from_f32(vec![2, 4], &[0.0; 7]));
    let err = run_fresh(&proc, &mut args).unwrap_err();
    assert!(err.message.contains("cells"), "{err}");
}

#[test]
fn top_level_precondition_is_checked() {
    let mut args = vec![
        ArgValue::Int(1),
        ArgValue::Buf(Buffer::from_f32(vec![1], &[1.0])),
    ];
    let err = run_fresh(&scale_proc(false), &mut args).unwrap_err();
    assert!(err.message.contains("precondition"), "{err}");
}

#[test]
fn random_args_follow_declared_shapes_and_seed() {
    let proc = sgemm();
    let sizes: HashMap<String, i64> = [("M", 3), ("N", 4), ("K", 5)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let a1 = random_args(&proc, &sizes, 7).unwrap();
    let a2 = random_args(&proc, &sizes, 7).unwrap();
    let a3 = random_args(&proc, &sizes, 8).unwrap();
    assert_eq!(a1, a2);
    assert_ne!(a1, a3);
    assert_eq!(a1[0], ArgValue::Int(3));
    assert_eq!(buf(&a1, 3).shape, vec![3, 5]);
    assert_eq!(buf(&a1, 4).shape, vec![5, 4]);
    let c = buf(&a1, 5).to_f32_vec().unwrap();
    assert_eq!(c.len(), 12);
    assert!(c.iter().all(|v| (-1.0..1.0).contains(v)));
    let mut args = a1.clone();
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(buf(&args, 5).error_cells(), 0);

    let partial: HashMap<String, i64> = [("N".to_string(), 4)].into_iter().collect();
    let err = random_args(&proc, &partial, 0).unwrap_err();
    assert!(
        err.message.contains("M") && err.message.contains("K") && !err.message.contains("N,"),
        "{err}"
    );
    let mut bad = sizes.clone();
    bad.insert("K".into(), 0);
    assert!(random_args(&proc, &bad, 0).is_err());
}

#[test]
fn random_integer_data_stays_in_small_ranges() {
    let mem = dram();
    let mut p = ProcBuilder::new("ints", &mem);
    let n = p.size("n");
    p.tensor("s", DType::I16, vec![n.clone()]);
    p.tensor("u", DType::U8, vec![n.clone() * 2]);
    let proc = p.finish();
    let sizes: HashMap<String, i64> = [("n".to_string(), 50)].into_iter().collect();
    let args = random_args(&proc, &sizes, 1).unwrap();
    let s = buf(&args, 1).to_i16_vec().unwrap();
    let u = buf(&args, 2).to_u8_vec().unwrap();
    assert_eq!((s.len(), u.len()), (50, 100));
    assert!(s.iter().all(|v| (-8..8).contains(v)));
    assert!(s.iter().any(|&v| v < 0));
    assert!(u.iter().all(|&v| v < 16));
}

#[test]
fn allocations_in_loops_are_fresh_each_iteration_and_instrs_run_their_body() {
    let mem = dram();
    // An instruction: its body is its meaning.
    let mut ins = ProcBuilder::new("vadd1", &mem);
    let n = ins.size("n");
    let dst = ins.window("dst", DType::I32, vec![n.clone()]);
    let src = ins.window("src", DType::I32, vec![n.clone()]);
    ins.instr_template("vadd1({dst_data}, {src_data});");
    ins.body().for_("i", 0, &n, |b, i| {
        b.assign(&dst, vec![i.clone()], src.at(vec![i.clone()]) + 1);
    });
    let ins = ins.finish();

    let mut p = ProcBuilder::new("rows", &mem);
    let r = p.size("r");
    let a = p.tensor("A", DType::I32, vec![r.clone(), Expr::int(2)]);
    let out = p.tensor("out", DType::I32, vec![r.clone(), Expr::int(2)]);
    p.body().for_("i", 0, &r, |b, i| {
        let t = b.alloc("t", DType::I32, vec![Expr::int(2)], &mem);
        // Only t[0] is written: t[1] must be uninitialised in every iteration, never a stale
        // value from the previous one.
        b.assign(&t, vec![Expr::int(0)], a.at(vec![i.clone(), Expr::int(0)]));
        b.call(
            &ins,
            vec![
                Expr::int(2),
                out.win(vec![
                    WinCoord::Point(i.clone()),
                    WinCoord::Interval(Expr::int(0), Expr::int(2)),
                ]),
                t.all(),
            ],
        );
    });
    let proc = p.finish();
    let mut args = vec![
        ArgValue::Int(3),
        ArgValue::Buf(Buffer::from_i32(vec![3, 2], &[1, 2, 3, 4, 5, 6])),
        ArgValue::Buf(Buffer::new_uninit(DType::I32, vec![3, 2])),
    ];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(
        buf(&args, 2).data,
        vec![
            Some(Scalar::I32(2)),
            None,
            Some(Scalar::I32(4)),
            None,
            Some(Scalar::I32(6)),
            None
        ]
    );
}

#[test]
fn reduce_into_uninitialised_cell_gives_error_value_and_select_is_strict_in_its_condition() {
    let mem = dram();
    let mut p = ProcBuilder::new("strict", &mem);
    let x = p.tensor("x", DType::F32, vec![Expr::int(3)]);
    let body = p.body();
    let t = body.alloc("t", DType::F32, vec![Expr::int(1)], &mem);
    let b = body.alloc("b", DType::Bool, vec![Expr::int(1)], &mem);
    // x[0] += uninit: the error value.
    body.reduce(&x, vec![Expr::int(0)], t.at(vec![Expr::int(0)]));
    // select(uninit bool, x[1], 2): the error value.
    body.assign(
        &x,
        vec![Expr::int(1)],
        Expr::select(
            b.at(vec![Expr::int(0)]),
            x.at(vec![Expr::int(1)]),
            Expr::float(2.0),
        ),
    );
    // select(true, 5, uninit): the picked branch is defined.
    body.assign(
        &x,
        vec![Expr::int(2)],
        Expr::select(
            x.at(vec![Expr::int(2)]).ge(0.0),
            Expr::float(5.0),
            t.at(vec![Expr::int(0)]),
        ),
    );
    let proc = p.finish();
    let mut args = vec![ArgValue::Buf(Buffer::from_f32(vec![3], &[1.0, 1.0, 1.0]))];
    run_fresh(&proc, &mut args).unwrap();
    assert_eq!(buf(&args, 0).data, vec![None, None, Some(Scalar::F32(5.0))]);
}

/// The control-arithmetic rule at run time: arguments, window strides and control config
/// writes must lie in the entry range (control overflow itself: `arithmetic.rs`).
#[test]
fn control_values_entering_a_proc_are_range_checked() {
    let mem = dram();
    let mut p = ProcBuilder::new("f", &mem);
    let n = p.size("n");
    let k = p.index("k");
    let x = p.tensor("x", DType::I64, vec![Expr::int(1)]);
    p.body().assign(
        &x,
        vec![Expr::int(0)],
        Expr::cast(DType::I64, &k * 4294967296i64 + &n),
    );
    let proc = p.finish();
    let args = |n: i64, k: i64| {
        vec![
            ArgValue::Int(n),
            ArgValue::Int(k),
            ArgValue::Buf(Buffer::from_i64(vec![1], &[0])),
        ]
    };
    let mut ok = args(2147483647, -2147483647);
    run_fresh(&proc, &mut ok).unwrap();
    assert_eq!(
        buf(&ok, 2).to_i64_vec().unwrap(),
        vec![-2147483647 * 4294967296 + 2147483647]
    );
    for (n, k, what) in [
        (2147483648, 0, "size argument `n`"),
        (1, 2147483648, "index argument `k`"),
        (1, -2147483648, "index argument `k`"),
        (1, i64::MIN, "index argument `k`"),
    ] {
        let err = run_fresh(&proc, &mut args(n, k)).unwrap_err();
        assert!(err.message.contains(what), "{n} {k}: {err}");
    }

    // A control config field holds only entry-range values.
    let cfg = cfg();
    let mut p = ProcBuilder::new("h", &mem);
    let k = p.stride_arg("k");
    p.body().write_config(&cfg, 1, &k * 2);
    let h = p.finish();
    run_fresh(&h, &mut [ArgValue::Int(1073741823)]).unwrap();
    let err = run_fresh(&h, &mut [ArgValue::Int(1073741824)]).unwrap_err();
    assert!(err.message.contains("Cfg.step"), "{err}");

    // Extents of buffer arguments and strides of window arguments lie in the entry range (an
    // empty buffer of shape [0, 2^31 - 1, 2] has stride 2^32 - 2 in dimension 0).
    let mut p = ProcBuilder::new("w", &mem);
    let k = p.index("k");
    let m = p.size("m");
    let w = p.window("w", DType::U8, vec![k.clone(), m.clone(), Expr::int(2)]);
    p.body().pass();
    let _ = w;
    let wp = p.finish();
    let mut a = vec![
        ArgValue::Int(0),
        ArgValue::Int(2147483647),
        ArgValue::Buf(Buffer::new_uninit(DType::U8, vec![0, 2147483647, 2])),
    ];
    let err = run_fresh(&wp, &mut a).unwrap_err();
    assert!(err.message.contains("has stride 4294967294"), "{err}");
    let mut p = ProcBuilder::new("e", &mem);
    let k = p.index("k");
    let m = p.size("m");
    let x = p.tensor("x", DType::U8, vec![k.clone(), &m + 1]);
    p.body().pass();
    let _ = x;
    let ep = p.finish();
    let mut a = vec![
        ArgValue::Int(0),
        ArgValue::Int(2147483647),
        ArgValue::Buf(Buffer::new_uninit(DType::U8, vec![0, 2147483648])),
    ];
    let err = run_fresh(&ep, &mut a).unwrap_err();
    assert!(err.message.contains("has extent 2147483648"), "{err}");
}

/// A window of a freed allocation is freed with it: reading, writing, taking its stride or a
/// window of it, or passing it to a callee is an error.
#[test]
fn use_through_a_window_after_free_is_an_error() {
    let mem = dram();
    let mut callee = ProcBuilder::new("g", &mem);
    let v = callee.window("v", DType::F32, vec![Expr::int(2)]);
    callee
        .body()
        .assign(&v, vec![Expr::int(0)], Expr::float(1.0));
    let g = callee.finish();
    type Use = fn(
        &mut weft_ir::build::BlockBuilder,
        &weft_ir::build::Buf,
        &weft_ir::build::Buf,
        &Arc<Proc>,
    );
    let uses: [(&str, Use); 5] = [
        ("read", |b, y, w, _| {
            b.assign(y, vec![Expr::int(0)], w.at(vec![Expr::int(0)]));
        }),
        ("write", |b, _, w, _| {
            b.assign(w, vec![Expr::int(1)], Expr::float(2.0));
        }),
        ("stride", |b, y, w, _| {
            b.assign(y, vec![Expr::int(0)], Expr::cast(DType::F32, w.stride(0)));
        }),
        ("window", |b, _, w, _| {
            b.window("v", w, vec![WinCoord::Interval(Expr::int(0), Expr::int(1))]);
        }),
        ("call", |b, _, w, g| {
            b.call(g, vec![w.all()]);
        }),
    ];
    for (what, use_) in uses {
        let mut p = ProcBuilder::new("uaf", &mem);
        let y = p.tensor("y", DType::F32, vec![Expr::int(2)]);
        let body = p.body();
        let t = body.alloc("t", DType::F32, vec![Expr::int(4)], &mem);
        let w = body.window(
            "w",
            &t,
            vec![WinCoord::Interval(Expr::int(1), Expr::int(3))],
        );
        body.assign(&w, vec![Expr::int(0)], Expr::float(1.0));
        body.free(&t);
        use_(body, &y, &w, &g);
        let proc = p.finish();
        let mut args = vec![ArgValue::Buf(Buffer::from_f32(vec![2], &[0.0, 0.0]))];
        let err = run_fresh(&proc, &mut args).unwrap_err();
        assert!(
            err.message.contains("`w` is used after `t` was freed"),
            "{what}: {err}"
        );
    }
}
