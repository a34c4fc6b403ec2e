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
/// Floats, in eighths: one is an edge value ([`F64_EDGES`]: ±0, ±infinity, NaNs of both signs
/// and a signalling one, the largest and smallest normal and subnormal magnitudes, ±2^31 and its
/// neighbours in f32, ties of rounding, 2^24 - 1 and 2^24 + 1, which f32 rounds to 2^24), one
/// is a small dyadic value as
/// [`random_scalar`] draws it, four have a random sign, an exponent in `[-3, 1]` and every
/// mantissa bit random (so sums round, and their order shows), and two have random bits (any
/// sign, exponent and mantissa). Integers: a quarter are edge values (the bounds of every integer
/// type, and their neighbours, wrapped into this type; 0, ±1), the rest uniform over the type's
/// range.
fn full_range_scalar(rng: &mut SplitMix64, dtype: DType) -> Scalar {
    let bits = rng.next_u64();
    let pick = rng.next_u64() % 8;
    let edge_bits = rng.next_u64();
    let edge = |n: usize| (edge_bits % n as u64) as usize;
    match dtype {
        DType::Bool => Scalar::Bool(bits & 1 == 1),
        DType::F32 => Scalar::F32(match pick {
            0 => {
                match F64_EDGES[edge(F64_EDGES.len())] {
                    // A signalling NaN with a payload, as f32 bits.
                    EdgeFloat::SignallingNan => f32::from_bits(0x7fa0_0001),
                    EdgeFloat::Value(v) => v as f32,
                    EdgeFloat::F32Min => f32::MIN_POSITIVE,
                    EdgeFloat::F32Sub => f32::from_bits(1),
                    EdgeFloat::F32Max => f32::MAX,
                }
            }
            1 => rng.range(-256, 256) as f32 / 256.0,
            2..=5 => {
                let exp = (127 - 3 + (bits >> 40) % 5) as u32;
                f32::from_bits(((bits >> 63) as u32) << 31 | exp << 23 | (bits as u32 & 0x7f_ffff))
            }
            _ => f32::from_bits(bits as u32),
        }),
        DType::F64 => Scalar::F64(match pick {
            0 => match F64_EDGES[edge(F64_EDGES.len())] {
                EdgeFloat::SignallingNan => f64::from_bits(0x7ff4_0000_0000_0001),
                EdgeFloat::Value(v) => v,
                EdgeFloat::F32Min => f64::MIN_POSITIVE,
                EdgeFloat::F32Sub => f64::from_bits(1),
                EdgeFloat::F32Max => f64::MAX,
            },
            1 => rng.range(-256, 256) as f64 / 256.0,
            2..=5 => {
                let exp = 1023 - 3 + (bits >> 55) % 5;
                f64::from_bits((bits >> 63) << 63 | exp << 52 | (bits & 0xf_ffff_ffff_ffff))
            }
            _ => f64::from_bits(bits),
        }),
        d => {
            let v = if pick < 2 {
                INT_EDGES[edge(INT_EDGES.len())]
            } else {
                bits as i64 as i128
            };
            Scalar::from_int_wrapping(v, d)
        }
    }
}

/// An edge value of a float type (the largest and smallest magnitudes are the type's own).
#[derive(Clone, Copy)]
enum EdgeFloat {
    Value(f64),
    SignallingNan,
    /// The smallest positive normal of the type.
    F32Min,
    /// The smallest positive subnormal of the type.
    F32Sub,
    /// The largest finite value of the type.
    F32Max,
}

const F64_EDGES: [EdgeFloat; 24] = [
    EdgeFloat::Value(0.0),
    EdgeFloat::Value(-0.0),
    EdgeFloat::Value(f64::INFINITY),
    EdgeFloat::Value(f64::NEG_INFINITY),
    EdgeFloat::Value(f64::NAN),
    EdgeFloat::Value(-f64::NAN),
    EdgeFloat::SignallingNan,
    EdgeFloat::F32Min,
    EdgeFloat::F32Sub,
    EdgeFloat::F32Max,
    EdgeFloat::Value(2147483648.0),
    EdgeFloat::Value(-2147483648.0),
    EdgeFloat::Value(2147483520.0),
    EdgeFloat::Value(-2147483904.0),
    EdgeFloat::Value(4294967296.0),
    EdgeFloat::Value(0.5),
    EdgeFloat::Value(-0.5),
    EdgeFloat::Value(1.5),
    EdgeFloat::Value(2.5),
    EdgeFloat::Value(-2.5),
    EdgeFloat::Value(16777215.0),
    EdgeFloat::Value(16777217.0),
    EdgeFloat::Value(1.0),
    EdgeFloat::Value(-1.0),
];

/// The bounds of every integer type and their neighbours (wrapped into the drawn type).
const INT_EDGES: [i128; 27] = [
    0,
    1,
    -1,
    127,
    128,
    -128,
    -129,
    255,
    256,
    32767,
    32768,
    -32768,
    -32769,
    65535,
    65536,
    2147483647,
    2147483648,
    -2147483648,
    -2147483649,
    4294967295,
    4294967296,
    9223372036854775807,
    -9223372036854775808,
    2,
    -2,
    100,
    -100,
];

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
