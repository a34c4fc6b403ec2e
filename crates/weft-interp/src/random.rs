//! Random arguments for running a proc on test data ([`random_args`]).

use crate::interp::{cell_count, eval_shape, Ctrl};
use crate::scalar::Scalar;
use crate::{ArgValue, Buffer, InterpError};
use std::collections::HashMap;
use weft_ir::{ArgKind, CtrlType, DType, Proc};

/// SplitMix64: a small, well-mixed generator. It lives here (rather than coming from `rand`) so
/// that the data a seed produces never changes with a dependency's version, which keeps failing
/// differential tests reproducible.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (`hi - lo` is small, so the modulo bias is negligible).
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo) as u64) as i64
    }
}

/// One random value of type `dtype`.
///
/// Floats are `k / 256` for `k` uniform in `-256..256`, so in `[-1, 1)`: products of two such
/// values and their sums stay exact in f32 as long as the sums are below 2^8 in magnitude, which
/// makes results independent of the summation order a schedule picks. Signed integers are uniform
/// in `-8..8`, unsigned in `0..16`, bools fair coins.
fn random_scalar(rng: &mut SplitMix64, dtype: DType) -> Scalar {
    match dtype {
        DType::Bool => Scalar::Bool(rng.next_u64() & 1 == 1),
        DType::F32 => Scalar::F32(rng.range(-256, 256) as f32 / 256.0),
        DType::F64 => Scalar::F64(rng.range(-256, 256) as f64 / 256.0),
        d if d.is_signed() => Scalar::from_int_wrapping(rng.range(-8, 8) as i128, d),
        d => Scalar::from_int_wrapping(rng.range(0, 16) as i128, d),
    }
}

/// The element type and shape of a buffer argument.
pub type BufShape = (DType, Vec<usize>);

/// The shape and element type of each buffer argument `proc` gets at `sizes` (`None` for control
/// arguments), without allocating anything, so a caller can check that [`random_args`]' buffers
/// fit in memory first. Errors as [`random_args`].
pub fn arg_shapes(
    proc: &Proc,
    sizes: &HashMap<String, i64>,
) -> Result<Vec<Option<BufShape>>, InterpError> {
    let ctrl = control_values(proc, sizes)?;
    proc.args
        .iter()
        .map(|arg| match &arg.kind {
            ArgKind::Ctrl(_) => Ok(None),
            ArgKind::Buf(ty) => {
                let shape = eval_shape(&ctrl, &ty.shape)?;
                cell_count(&shape, &format!("argument `{}`", arg.sym), arg.span)?;
                Ok(Some((ty.elem, shape.iter().map(|&d| d as usize).collect())))
            }
        })
        .collect()
}

/// The control arguments of `proc` taken from `sizes` (bools as 0/1), checked.
fn control_values(
    proc: &Proc,
    sizes: &HashMap<String, i64>,
) -> Result<Vec<(weft_ir::Sym, Ctrl)>, InterpError> {
    let missing: Vec<&str> = proc
        .args
        .iter()
        .filter(|a| a.ctrl().is_some() && !sizes.contains_key(a.sym.name()))
        .map(|a| a.sym.name())
        .collect();
    if !missing.is_empty() {
        return Err(InterpError::new(
            format!(
                "no value given for control arguments of `{}`: {}",
                proc.name,
                missing.join(", ")
            ),
            proc.span,
        ));
    }
    let mut ctrl = Vec::new();
    for arg in &proc.args {
        if let ArgKind::Ctrl(c) = arg.kind {
            let v = sizes[arg.sym.name()];
            if c == CtrlType::Size && v <= 0 {
                return Err(InterpError::new(
                    format!("size argument `{}` is {v}; sizes must be positive", arg.sym),
                    arg.span,
                ));
            }
            let value = match c {
                CtrlType::Bool => Ctrl::Bool(v != 0),
                _ => Ctrl::Int(v),
            };
            ctrl.push((arg.sym.clone(), value));
        }
    }
    Ok(ctrl)
}

/// Arguments for `proc`: size, index, stride and bool arguments are taken from `sizes` by argument
/// name (bools as 0/1); buffers get the shapes their declarations give with those values and are
/// filled with random data from `seed` (see the value ranges above). The same proc, sizes and seed
/// always give the same arguments.
///
/// Errors: a control argument missing from `sizes` (all missing names are listed), a size `<= 0`,
/// a shape that cannot be evaluated or is negative or too large.
pub fn random_args(
    proc: &Proc,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<Vec<ArgValue>, InterpError> {
    let ctrl = control_values(proc, sizes)?;
    let shapes = arg_shapes(proc, sizes)?;
    let mut rng = SplitMix64(seed);
    let mut out = Vec::with_capacity(proc.args.len());
    let mut ctrl_values = ctrl.iter();
    for (arg, shape) in proc.args.iter().zip(shapes) {
        match shape {
            None => match ctrl_values.next() {
                Some((_, Ctrl::Int(v))) => out.push(ArgValue::Int(*v)),
                Some((_, Ctrl::Bool(b))) => out.push(ArgValue::Bool(*b)),
                None => {
                    return Err(InterpError::new(
                        "internal: control argument lost",
                        arg.span,
                    ))
                }
            },
            Some((dtype, shape)) => {
                let n = shape.iter().product();
                let values = (0..n).map(|_| random_scalar(&mut rng, dtype)).collect();
                out.push(ArgValue::Buf(Buffer::from_scalars(dtype, shape, values)));
            }
        }
    }
    Ok(out)
}
