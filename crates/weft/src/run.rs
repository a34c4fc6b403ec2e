//! Run a proc both ways: compiled natively through the JIT and in the reference interpreter, on
//! the same random inputs, and compare every output cell bit for bit. This is `weft run` and the
//! main job of the README.

use crate::hostbuf::{same_bits, HostData};
use crate::{Error, Program};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_c::CTRL_MAX;
use weft_interp::{ArgValue, ConfigState};
use weft_ir::{CtrlType, Proc};
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

/// The values of `--size NAME=VALUE` options for `proc`: every name must be a control argument
/// of `proc`, given once (a `bool` argument takes 0 or 1).
pub fn size_options(proc: &Proc, given: &[(String, i64)]) -> Result<HashMap<String, i64>, Error> {
    let ctrl: Vec<&str> = proc
        .args
        .iter()
        .filter(|a| a.ctrl().is_some())
        .map(|a| a.sym.name())
        .collect();
    let mut out = HashMap::new();
    for (name, v) in given {
        if !ctrl.contains(&name.as_str()) {
            return Err(Error::message(format!(
                "error: `{}` has no control argument `{name}` (its control arguments: {})",
                proc.name,
                if ctrl.is_empty() {
                    "none".to_string()
                } else {
                    ctrl.join(", ")
                }
            )));
        }
        if out.insert(name.clone(), *v).is_some() {
            return Err(Error::message(format!(
                "error: `--size {name}=...` is given twice"
            )));
        }
    }
    Ok(out)
}

/// Check the control arguments against the rule every entry point enforces: sizes in
/// `1..=2^31-1`, indices and strides within `±(2^31-1)`, bools 0 or 1.
fn check_control_values(proc: &Proc, sizes: &HashMap<String, i64>) -> Result<(), Error> {
    for a in &proc.args {
        let (Some(c), Some(&v)) = (a.ctrl(), sizes.get(a.sym.name())) else {
            continue;
        };
        let ok = match c {
            CtrlType::Size => (1..=CTRL_MAX).contains(&v),
            CtrlType::Bool => v == 0 || v == 1,
            _ => (-CTRL_MAX..=CTRL_MAX).contains(&v),
        };
        if !ok {
            let range = match c {
                CtrlType::Size => "1..=2147483647".to_string(),
                CtrlType::Bool => "0 or 1".to_string(),
                _ => "-2147483647..=2147483647".to_string(),
            };
            return Err(Error::message(format!(
                "error: {} argument `{}` of `{}` is {v}; it must lie in {range}",
                c.name(),
                a.sym.name(),
                proc.name
            )));
        }
    }
    Ok(())
}

/// The memory available for new allocations (Linux `MemAvailable`), if known.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Refuse sizes whose argument buffers do not fit in memory (rather than letting an allocation
/// abort the process): each cell is held twice by the interpreter (inputs and its results) and
/// twice natively (results and one repetition's scratch copy).
fn check_memory(proc: &Proc, sizes: &HashMap<String, i64>) -> Result<(), Error> {
    let shapes = weft_interp::arg_shapes(proc, sizes)
        .map_err(|e| Error::message(format!("error: {}", e.message)))?;
    let cell = std::mem::size_of::<weft_interp::Cell>() as u128;
    let needed: u128 = shapes
        .iter()
        .flatten()
        .map(|(d, shape)| {
            let n: u128 = shape.iter().map(|&x| x as u128).product();
            n * (2 * cell + 2 * d.bytes() as u128)
        })
        .sum();
    match available_memory() {
        Some(avail) if needed > u128::from(avail) => Err(Error::message(format!(
            "error: the arguments of `{}` at these sizes need about {:.1} GiB (interpreter cells and native buffers), but only {:.1} GiB are available",
            proc.name,
            needed as f64 / (1u64 << 30) as f64,
            avail as f64 / (1u64 << 30) as f64
        ))),
        _ => Ok(()),
    }
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
    check_control_values(proc, &opts.sizes)?;
    check_memory(proc, &opts.sizes)?;
    let args = weft_interp::random_args(proc, &opts.sizes, opts.seed)
        .map_err(|e| Error::message(format!("error: {}", e.message)))?;
    compare_on(program, proc, jit, &args, opts)
}

/// [`run_and_compare`] on the given arguments (control values and buffers), for callers that make
/// their own data (`weft_interp::random_args_full_range`); `opts.sizes` names the control values
/// for the report and `opts.seed` is not used.
pub fn compare_on(
    program: &Program,
    proc: &Arc<Proc>,
    jit: &Jit,
    args: &[weft_interp::ArgValue],
    opts: &RunOptions,
) -> Result<RunReport, Error> {
    check_control_values(proc, &opts.sizes)?;
    check_memory(proc, &opts.sizes)?;

    // The oracle.
    let mut expected = args.to_vec();
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
