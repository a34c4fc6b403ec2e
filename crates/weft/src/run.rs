//! Run a proc both ways: compiled natively through the JIT and in the reference interpreter, on
//! the same random inputs, and compare every output cell bit for bit. This is `weft run` and the
//! main job of the README.

use crate::hostbuf::{same_bits, HostData};
use crate::{Error, Program};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_interp::{ArgValue, ConfigState};
use weft_ir::Proc;
use weft_jit::{Arg, Jit};

/// What a differential run measured.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub proc: String,
    pub sizes: Vec<(String, i64)>,
    /// Best native time over the repetitions.
    pub native: Duration,
    pub reps: usize,
    pub interpreter: Duration,
    /// Output cells compared.
    pub cells: usize,
}

impl std::fmt::Display for RunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sizes: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        write!(
            f,
            "{}({}): native {:.3} ms (best of {}), interpreter {:.1} ms, {} cells identical",
            self.proc,
            sizes.join(" "),
            self.native.as_secs_f64() * 1e3,
            self.reps,
            self.interpreter.as_secs_f64() * 1e3,
            self.cells
        )
    }
}

/// Options of a differential run.
pub struct RunOptions {
    pub sizes: HashMap<String, i64>,
    pub seed: u64,
    pub reps: usize,
}

fn shape_of(a: &ArgValue) -> Vec<usize> {
    match a {
        ArgValue::Buf(b) => b.shape.clone(),
        _ => Vec::new(),
    }
}

/// Compile `proc` with `jit`, run it natively and in the interpreter, and compare.
pub fn run_and_compare(
    program: &Program,
    proc: &Arc<Proc>,
    jit: &Jit,
    opts: &RunOptions,
) -> Result<RunReport, Error> {
    let args = weft_interp::random_args(proc, &opts.sizes, opts.seed)
        .map_err(|e| Error::message(format!("error: {}", e.message)))?;

    // The oracle.
    let mut expected = args.clone();
    let t0 = Instant::now();
    weft_interp::run(proc, &mut expected, &mut ConfigState::default()).map_err(|e| {
        let d = weft_ir::Diagnostic::new("run", e.span, e.message.clone());
        Error::new(&program.sources, vec![d])
    })?;
    let interpreter = t0.elapsed();

    let module = jit
        .compile(std::slice::from_ref(proc))
        .map_err(|e| Error::message(format!("error: {e}")))?;
    let kernel = module
        .kernel(&proc.name)
        .map_err(|e| Error::message(format!("error: {e}")))?;

    let shapes: Vec<Vec<usize>> = args.iter().map(shape_of).collect();
    let fresh = || -> Vec<Option<HostData>> {
        args.iter()
            .map(|a| match a {
                ArgValue::Buf(b) => Some(HostData::from_buffer(b)),
                _ => None,
            })
            .collect()
    };
    let call = |data: &mut Vec<Option<HostData>>| -> Result<Duration, Error> {
        let mut jargs: Vec<Arg> = Vec::new();
        for ((a, d), shape) in args.iter().zip(data.iter_mut()).zip(&shapes) {
            jargs.push(match (a, d) {
                (ArgValue::Int(v), _) => Arg::Int(*v),
                (ArgValue::Bool(v), _) => Arg::Bool(*v),
                (ArgValue::Buf(_), Some(h)) => h.as_arg(shape),
                (ArgValue::Buf(_), None) => unreachable!("every buffer argument has host data"),
            });
        }
        let t = Instant::now();
        kernel
            .call(&mut jargs)
            .map_err(|e| Error::message(format!("error: {e}")))?;
        Ok(t.elapsed())
    };

    let mut got = fresh();
    let mut best = call(&mut got)?;
    for _ in 1..opts.reps.max(1) {
        let mut scratch = fresh();
        best = best.min(call(&mut scratch)?);
    }

    let mut cells = 0;
    for (k, (want, have)) in expected.iter().zip(&got).enumerate() {
        let (ArgValue::Buf(want), Some(have)) = (want, have) else {
            continue;
        };
        let name = proc.args[k].sym.name();
        for (i, cell) in want.data.iter().enumerate() {
            let Some(w) = cell else {
                return Err(Error::message(format!(
                    "error: the interpreter's `{name}` holds an uninitialised value at element {i}: the proc reads memory it never wrote"
                )));
            };
            let h = have.scalar(i);
            if !same_bits(*w, h) {
                return Err(Error::message(format!(
                    "error: mismatch in `{name}` at element {i}: interpreter {w:?}, native {h:?}"
                )));
            }
            cells += 1;
        }
    }
    let mut sizes: Vec<(String, i64)> = proc
        .args
        .iter()
        .filter_map(|a| {
            opts.sizes
                .get(a.sym.name())
                .map(|v| (a.sym.name().to_string(), *v))
        })
        .collect();
    sizes.dedup();
    Ok(RunReport {
        proc: proc.name.clone(),
        sizes,
        native: best,
        reps: opts.reps.max(1),
        interpreter,
        cells,
    })
}
