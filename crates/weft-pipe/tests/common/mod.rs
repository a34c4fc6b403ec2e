//! Helpers shared by the lowering tests: build, lower, check, run in the proc interpreter and
//! compare with the pipeline interpreter.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{ArgValue, Buffer, ConfigState, Scalar};
use weft_ir::{BinOp, Expr as IExpr, Memory};
use weft_pipe::ast::{Expr, Pipeline};
use weft_pipe::interp::{realize, Args, InputBuffer};
use weft_pipe::lower::{lower_with, Engine, Lowered};
use weft_pipe::schedule::Schedule;

pub fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

pub fn add(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Add, a, b)
}

pub fn x(k: usize) -> Expr {
    Expr::Var(k)
}

pub fn off(v: usize, d: i32) -> Expr {
    if d == 0 {
        x(v)
    } else {
        add(x(v), Expr::int(d))
    }
}

/// A deterministic pseudo-random stream.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// What running a lowered proc gave.
#[derive(Debug)]
pub enum Outcome {
    /// Matched the reference on every point where the reference has a value.
    Matched,
    /// Stopped at a precondition (a run-time assertion), with its message.
    Asserted(String),
}

/// Output windows: sizes 1, ones that split factors do not divide, non-zero and negative mins,
/// and one wider than the usual vector widths.
pub fn windows() -> Vec<Vec<(i64, i64)>> {
    vec![
        vec![(0, 1), (0, 1)],
        vec![(-3, 7), (5, 5)],
        vec![(2, 16), (-1, 9)],
        vec![(10, 13), (3, 1)],
        vec![(-5, 40), (2, 3)],
    ]
}

/// Lower with `engine` and check the proc (panics if either fails).
pub fn lowered(p: &Pipeline, s: &Schedule, engine: Engine) -> Lowered {
    let l = lower_with(p, s, &dram(), engine).unwrap_or_else(|e| panic!("lowering failed: {e}"));
    if let Err(d) = weft_check::check_proc(&l.proc) {
        panic!("the lowered proc does not check: {d:#?}\n{}", l.proc);
    }
    l
}

/// Lower `p` under `s` (tight engine), check it, run it with `params` on `window`, with inputs
/// `margin` wider than the window on every side, and compare with the reference.
pub fn run(
    p: &Pipeline,
    s: &Schedule,
    params: &[Scalar],
    window: &[(i64, i64)],
    margin: i64,
    seed: u64,
) -> Outcome {
    let l = lowered(p, s, Engine::Tight);
    run_proc(&l, p, params, window, margin, seed)
}

pub fn run_proc(
    l: &Lowered,
    p: &Pipeline,
    params: &[Scalar],
    window: &[(i64, i64)],
    margin: i64,
    seed: u64,
) -> Outcome {
    let proc = &l.proc;
    let mut rng = Rng(seed | 1);
    let mut inputs = Vec::new();
    let mut args: Vec<ArgValue> = params
        .iter()
        .map(|s| match s {
            Scalar::I32(v) => ArgValue::Int(*v as i64),
            other => ArgValue::Buf(Buffer::from_scalars(other.dtype(), vec![], vec![*other])),
        })
        .collect();
    for inp in &p.inputs {
        let region: Vec<(i64, i64)> = (0..inp.rank)
            .map(|d| (window[d].0 - margin, window[d].1 + 2 * margin))
            .collect();
        let n: i64 = region.iter().map(|r| r.1).product();
        let data: Vec<Scalar> = (0..n)
            .map(|_| Scalar::from_int_wrapping((rng.next() % 1000) as i128, inp.elem))
            .collect();
        for &(m, e) in &region {
            args.push(ArgValue::Int(m));
            args.push(ArgValue::Int(e));
        }
        let shape = region.iter().rev().map(|r| r.1 as usize).collect();
        args.push(ArgValue::Buf(Buffer::from_scalars(
            inp.elem,
            shape,
            data.clone(),
        )));
        inputs.push(InputBuffer { region, data });
    }
    for &o in &p.outputs {
        for &(m, e) in window {
            args.push(ArgValue::Int(m));
            args.push(ArgValue::Int(e));
        }
        let shape = window.iter().rev().map(|r| r.1 as usize).collect();
        args.push(ArgValue::Buf(Buffer::new_uninit(p.funcs[o].ty, shape)));
    }
    push_derived(proc, &mut args);
    let derived = args.len() - weft_pipe::lower::first_derived(proc);
    let reference_args = Args {
        params: params.to_vec(),
        inputs,
    };
    if let Err(e) = weft_interp::run(proc, &mut args, &mut ConfigState::default()) {
        if e.message.contains("precondition") {
            return Outcome::Asserted(e.message);
        }
        panic!("the lowered proc failed: {e}\n{proc}");
    }
    let mut at = args.len() - derived;
    for &o in p.outputs.iter().rev() {
        at -= 2 * window.len() + 1;
        let got = args[at + 2 * window.len()].as_buffer().unwrap().clone();
        let want = realize(p, &reference_args, o, window).unwrap();
        assert_eq!(got.data.len(), want.len());
        for (k, (g, w)) in got.data.iter().zip(&want).enumerate() {
            if let Ok(w) = w {
                assert_eq!(
                    *g,
                    Some(*w),
                    "point {k} of `{}` on {window:?} differs\n{proc}",
                    p.funcs[o].name
                );
            }
        }
    }
    Outcome::Matched
}

/// Append a lowered proc's derived arguments (named region ends) to `args`.
pub fn push_derived(proc: &weft_ir::Proc, args: &mut Vec<ArgValue>) {
    let ints: Vec<Option<i64>> = args
        .iter()
        .map(|a| match a {
            ArgValue::Int(v) => Some(*v),
            _ => None,
        })
        .collect();
    let derived = weft_pipe::lower::derived_args(proc, &ints)
        .unwrap_or_else(|e| panic!("derived arguments: {e}\n{proc}"));
    args.extend(derived.into_iter().map(ArgValue::Int));
}

/// The value of a control expression with its variables named in `env`.
pub fn eval(e: &IExpr, env: &HashMap<&str, i64>) -> i64 {
    weft_pipe::lower::eval_control(e, &|n| env.get(n).copied())
        .unwrap_or_else(|| panic!("cannot evaluate {e} with {env:?}"))
}

/// A func's regions evaluated: (computed, allocated), per dimension (min, max).
pub type Ranges = (Vec<(i64, i64)>, Vec<(i64, i64)>);

pub fn regions(l: &Lowered, func: &str, env: &HashMap<&str, i64>) -> Ranges {
    let r = l
        .regions
        .iter()
        .find(|r| r.func == func)
        .unwrap_or_else(|| panic!("`{func}` is not realized"));
    let ev = |v: &[(IExpr, IExpr)]| -> Vec<(i64, i64)> {
        v.iter()
            .map(|(a, b)| (eval(a, env), eval(b, env)))
            .collect()
    };
    (ev(&r.computed), ev(&r.allocated))
}
