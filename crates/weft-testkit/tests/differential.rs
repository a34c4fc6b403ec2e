//! Differential test: random procs run by the reference interpreter and as compiled C must give
//! bit-identical outputs (integers equal, floats equal by bits, any NaN equal to any NaN).
//!
//! `WEFT_DIFF_CASES` sets the number of procs (default 150), `WEFT_DIFF_SEED` the generator seed.
//! Procs are compiled 25 to a C module so that the C compiler runs once per batch, not once per
//! proc. Each proc runs at its generated sizes, at all sizes 1, and at fresh random sizes.

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::HashMap;
use std::sync::Arc;
use weft::hostbuf::{same_bits, HostData};
use weft_interp::{ArgValue, Buffer, ConfigState, Scalar};
use weft_ir::print::module_to_string;
use weft_ir::{Module, Proc};
use weft_jit::{Arg, Jit};
use weft_testkit::{random_proc_named, random_sizes, GeneratedProc};

const BATCH: usize = 25;

/// The typed copy of a fully initialised input buffer.
fn host_data(b: &Buffer) -> Result<HostData, String> {
    if b.error_cells() > 0 {
        return Err(format!(
            "an input buffer of dtype {} has uninitialised cells",
            b.dtype
        ));
    }
    Ok(HostData::from_buffer(b))
}

/// Row-major index of flat position `k` in `shape`.
fn unflatten(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1);
        idx[d] = k % n;
        k /= n;
    }
    idx
}

fn proc_text(g: &GeneratedProc) -> String {
    let mut procs = g.helper_procs.clone();
    procs.push(g.proc.clone());
    module_to_string(&Module {
        procs,
        ..Module::default()
    })
}

/// The outcome of one run: the arguments before, after the interpreter, and after the kernel.
struct Outcome {
    inputs: Vec<ArgValue>,
    expected: Vec<ArgValue>,
    got: Vec<Option<(HostData, Vec<usize>)>>,
}

/// Run `proc` at `sizes` in the interpreter and through `kernel`.
fn run_both(
    proc: &Proc,
    kernel: &weft_jit::Kernel,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<Outcome, String> {
    let inputs = weft_interp::random_args(proc, sizes, seed)
        .map_err(|e| format!("random_args failed: {e}"))?;
    let mut expected = inputs.clone();
    weft_interp::run(proc, &mut expected, &mut ConfigState::default())
        .map_err(|e| format!("the interpreter failed: {e}"))?;

    let mut got: Vec<Option<(HostData, Vec<usize>)>> = Vec::new();
    for a in &inputs {
        got.push(match a {
            ArgValue::Buf(b) => Some((host_data(b)?, b.shape.clone())),
            _ => None,
        });
    }
    {
        let mut args: Vec<Arg> = Vec::new();
        for (a, t) in inputs.iter().zip(got.iter_mut()) {
            args.push(match (a, t) {
                (ArgValue::Int(v), _) => Arg::Int(*v),
                (ArgValue::Bool(v), _) => Arg::Bool(*v),
                (ArgValue::Buf(_), Some((t, shape))) => t.as_arg(shape),
                (ArgValue::Buf(_), None) => return Err("internal: buffer lost".into()),
            });
        }
        kernel
            .call(&mut args)
            .map_err(|e| format!("the compiled kernel failed: {e:?}"))?;
    }
    Ok(Outcome {
        inputs,
        expected,
        got,
    })
}

/// The first output cell where the interpreter and the kernel disagree, described.
fn first_mismatch(proc: &Proc, o: &Outcome) -> Result<(), String> {
    for (k, (arg, t)) in o.expected.iter().zip(&o.got).enumerate() {
        let (ArgValue::Buf(want), Some((got, _))) = (arg, t) else {
            continue;
        };
        let got: Vec<Scalar> = (0..got.len()).map(|i| got.scalar(i)).collect();
        if got.len() != want.data.len() {
            return Err(format!("argument {k}: cell counts differ"));
        }
        for (cell, (w, g)) in want.data.iter().zip(&got).enumerate() {
            let name = proc.args[k].sym.name();
            let at = unflatten(cell, &want.shape);
            match w {
                None => {
                    return Err(format!(
                        "the interpreter left `{name}{at:?}` as the error value (the generator read uninitialised memory)"
                    ))
                }
                Some(w) if !same_bits(*w, *g) => {
                    return Err(format!(
                        "`{name}{at:?}`: interpreter {w:?}, compiled C {g:?}"
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Whether the interpreter changed any output cell (a run that changes nothing tests little).
fn changed_something(o: &Outcome) -> bool {
    o.inputs.iter().zip(&o.expected).any(|(a, b)| match (a, b) {
        (ArgValue::Buf(a), ArgValue::Buf(b)) => {
            a.data.iter().zip(&b.data).any(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => !same_bits(*x, *y),
                _ => true,
            })
        }
        _ => false,
    })
}

fn small_batch(seed: u64, n: usize, prefix: &str) -> Vec<GeneratedProc> {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|k| random_proc_named(&mut rng, &dram, &format!("{prefix}{k}")))
        .collect()
}

/// The comparison is not vacuous: a single changed bit in the kernel's output is reported.
#[test]
fn a_changed_output_cell_is_reported() {
    let cache = tempfile::tempdir().expect("a temporary directory");
    let jit = Jit::with_cache_dir(cache.path()).expect("a JIT with a temporary cache");
    let gens = small_batch(7, 10, "t");
    let roots: Vec<Arc<Proc>> = gens.iter().map(|g| g.proc.clone()).collect();
    let module = jit.compile(&roots).expect("the batch compiles");
    let mut tampered = 0;
    for g in &gens {
        let kernel = module.kernel(&g.proc.name).expect("the kernel exists");
        let mut o = run_both(&g.proc, &kernel, &g.sizes, 1).expect("both run");
        assert!(first_mismatch(&g.proc, &o).is_ok());
        if let Some(Some((t, _))) = o.got.iter_mut().find(|t| t.is_some()) {
            match t {
                HostData::Bool(v) => v[0] = !v[0],
                HostData::I8(v) => v[0] ^= 1,
                HostData::U8(v) => v[0] ^= 1,
                HostData::I16(v) => v[0] ^= 1,
                HostData::U16(v) => v[0] ^= 1,
                HostData::I32(v) => v[0] ^= 1,
                HostData::U32(v) => v[0] ^= 1,
                HostData::I64(v) => v[0] ^= 1,
                HostData::F32(v) => {
                    v[0] = if v[0].is_nan() {
                        0.0
                    } else {
                        f32::from_bits(v[0].to_bits() ^ 1)
                    }
                }
                HostData::F64(v) => {
                    v[0] = if v[0].is_nan() {
                        0.0
                    } else {
                        f64::from_bits(v[0].to_bits() ^ 1)
                    }
                }
            }
            assert!(
                first_mismatch(&g.proc, &o).is_err(),
                "a flipped bit went unnoticed in `{}`",
                g.proc.name
            );
            tampered += 1;
        }
    }
    assert_eq!(tampered, gens.len());
}

#[test]
fn nan_equals_nan_but_signed_zeros_differ() {
    assert!(same_bits(Scalar::F32(f32::NAN), Scalar::F32(-f32::NAN)));
    assert!(same_bits(Scalar::F64(f64::NAN), Scalar::F64(f64::NAN)));
    assert!(!same_bits(Scalar::F32(0.0), Scalar::F32(-0.0)));
    assert!(!same_bits(Scalar::I32(1), Scalar::I32(2)));
}

#[test]
fn interpreter_and_compiled_c_agree_bit_exactly() {
    let cases: usize = std::env::var("WEFT_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let cache = tempfile::tempdir().expect("a temporary directory");
    let jit = Jit::with_cache_dir(cache.path()).expect("a JIT with a temporary cache");
    let seed: u64 = std::env::var("WEFT_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_d1ff);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut failures: Vec<String> = Vec::new();
    let mut runs = 0usize;
    let mut changed = 0usize;
    let mut done = 0usize;
    let mut batch_no = 0usize;
    while done < cases {
        let count = BATCH.min(cases - done);
        let gens: Vec<GeneratedProc> = (0..count)
            .map(|k| random_proc_named(&mut rng, &dram, &format!("d{batch_no}_{k}")))
            .collect();
        for g in &gens {
            let mut all = g.helper_procs.clone();
            all.push(g.proc.clone());
            if let Err(d) = weft_check::check_procs(&all) {
                panic!(
                    "generated proc rejected by the checker:\n{}\n{d:?}",
                    proc_text(g)
                );
            }
        }
        let roots: Vec<Arc<Proc>> = gens.iter().map(|g| g.proc.clone()).collect();
        let module = match jit.compile(&roots) {
            Ok(m) => m,
            Err(e) => panic!(
                "batch {batch_no} failed to compile: {e:?}\n{}",
                gens.iter().map(proc_text).collect::<Vec<_>>().join("\n")
            ),
        };
        for g in &gens {
            let kernel = match module.kernel(&g.proc.name) {
                Ok(k) => k,
                Err(e) => panic!("no kernel `{}`: {e:?}", g.proc.name),
            };
            let ones: HashMap<String, i64> = g.size_names().into_iter().map(|n| (n, 1)).collect();
            let size_sets = [g.sizes.clone(), ones, random_sizes(&mut rng, g)];
            for (r, sizes) in size_sets.iter().enumerate() {
                runs += 1;
                let seed = (batch_no * 1000 + r) as u64;
                let result = run_both(&g.proc, &kernel, sizes, seed).and_then(|o| {
                    changed += usize::from(changed_something(&o));
                    first_mismatch(&g.proc, &o)
                });
                if let Err(e) = result {
                    failures.push(format!(
                        "proc `{}` at sizes {sizes:?} (data seed {seed}): {e}\n{}",
                        g.proc.name,
                        proc_text(g)
                    ));
                    break;
                }
            }
        }
        done += count;
        batch_no += 1;
    }
    eprintln!(
        "differential: {done} procs, {runs} runs ({changed} changed an output), {} failures",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {done} procs disagree; first:\n{}",
        failures.len(),
        failures[0]
    );
    // Most runs must do something observable, or the test compares inputs with inputs.
    assert!(
        changed * 2 > runs,
        "only {changed} of {runs} runs changed any output"
    );
}
