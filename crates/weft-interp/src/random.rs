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
    args_drawn_by(proc, sizes, seed, random_scalar)
}

/// One random value of type `dtype` from its whole range, with its edge values often.
///
/// Floats, in eighths: one is special (±0, ±infinity, NaN, the largest and smallest normal and
/// subnormal magnitudes), one is a small dyadic value as [`random_scalar`] draws it, four are in
/// `(-4, 4)` with every mantissa bit random (so sums round, and their order shows), and two have
/// random bits (any sign, exponent and mantissa, NaNs included). Integers: a quarter are edge
/// values (the minimum, the maximum, 0, ±1), the rest uniform over the type's range.
fn full_range_scalar(rng: &mut SplitMix64, dtype: DType) -> Scalar {
    let bits = rng.next_u64();
    let pick = rng.next_u64() % 8;
    // In (-4, 4), with 53 random bits.
    let rounding = ((bits >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 8.0;
    match dtype {
        DType::Bool => Scalar::Bool(bits & 1 == 1),
        DType::F32 => Scalar::F32(match pick {
            0 => {
                const SPECIAL: [f32; 11] = [
                    0.0,
                    -0.0,
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                    f32::NAN,
                    f32::MAX,
                    f32::MIN,
                    f32::MIN_POSITIVE,
                    -f32::MIN_POSITIVE,
                    1.0e-45,
                    -1.0e-45,
                ];
                SPECIAL[(bits % SPECIAL.len() as u64) as usize]
            }
            1 => rng.range(-256, 256) as f32 / 256.0,
            2..=5 => rounding as f32,
            _ => f32::from_bits(bits as u32),
        }),
        DType::F64 => Scalar::F64(match pick {
            0 => {
                const SPECIAL: [f64; 11] = [
                    0.0,
                    -0.0,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::NAN,
                    f64::MAX,
                    f64::MIN,
                    f64::MIN_POSITIVE,
                    -f64::MIN_POSITIVE,
                    5.0e-324,
                    -5.0e-324,
                ];
                SPECIAL[(bits % SPECIAL.len() as u64) as usize]
            }
            1 => rng.range(-256, 256) as f64 / 256.0,
            2..=5 => rounding,
            _ => f64::from_bits(bits),
        }),
        d => {
            let v = if pick < 2 {
                let (lo, hi) = d.int_range().unwrap_or((0, 1));
                [lo, hi, 0, 1, -1][(bits % 5) as usize]
            } else {
                bits as i64 as i128
            };
            Scalar::from_int_wrapping(v, d)
        }
    }
}

/// [`random_args`] with every buffer cell drawn from its type's whole range, edge values and
/// special floats included ([`full_range_scalar`]): for testing that an instruction's C computes
/// what its body says on every input, not only on the small exact values of [`random_args`].
pub fn random_args_full_range(
    proc: &Proc,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<Vec<ArgValue>, InterpError> {
    args_drawn_by(proc, sizes, seed, full_range_scalar)
}

fn args_drawn_by(
    proc: &Proc,
    sizes: &HashMap<String, i64>,
    seed: u64,
    draw: fn(&mut SplitMix64, DType) -> Scalar,
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
                let values = (0..n).map(|_| draw(&mut rng, dtype)).collect();
                out.push(ArgValue::Buf(Buffer::from_scalars(dtype, shape, values)));
            }
        }
    }
    Ok(out)
}
