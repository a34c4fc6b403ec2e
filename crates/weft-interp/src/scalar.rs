//! Host data values and the data arithmetic of weft (DESIGN.md §2).
//!
//! Every operation here works in the exact element type: integers wrap, floats are IEEE in their
//! own width (f32 math is done in f32, so results match C compiled with `-ffp-contract=off`).

use std::fmt;
use weft_ir::{BinOp, DType, MathFn, UnOp};

/// One data value of a known element type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    F32(f32),
    F64(f64),
}

/// A memory cell or the value of a data expression: `None` is the error value (uninitialised
/// memory, or anything computed from it).
pub type Cell = Option<Scalar>;

impl Scalar {
    /// The element type of this value.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::I8(_) => DType::I8,
            Scalar::U8(_) => DType::U8,
            Scalar::I16(_) => DType::I16,
            Scalar::U16(_) => DType::U16,
            Scalar::I32(_) => DType::I32,
            Scalar::U32(_) => DType::U32,
            Scalar::I64(_) => DType::I64,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }

    /// The value of an integer (or bool, as 0/1) scalar; `None` for floats.
    pub fn as_i128(self) -> Option<i128> {
        Some(match self {
            Scalar::Bool(b) => b as i128,
            Scalar::I8(v) => v as i128,
            Scalar::U8(v) => v as i128,
            Scalar::I16(v) => v as i128,
            Scalar::U16(v) => v as i128,
            Scalar::I32(v) => v as i128,
            Scalar::U32(v) => v as i128,
            Scalar::I64(v) => v as i128,
            Scalar::F32(_) | Scalar::F64(_) => return None,
        })
    }

    /// The value as an f64 (exact for every type but i64 beyond 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::F32(v) => v as f64,
            Scalar::F64(v) => v,
            other => other.as_i128().unwrap_or(0) as f64,
        }
    }

    /// An integer converted into `to` the way a C cast to an exact-width type does: two's
    /// complement truncation for integers, round-to-nearest for floats, `!= 0` for bool.
    pub fn from_int_wrapping(v: i128, to: DType) -> Scalar {
        match to {
            DType::Bool => Scalar::Bool(v != 0),
            DType::I8 => Scalar::I8(v as i8),
            DType::U8 => Scalar::U8(v as u8),
            DType::I16 => Scalar::I16(v as i16),
            DType::U16 => Scalar::U16(v as u16),
            DType::I32 => Scalar::I32(v as i32),
            DType::U32 => Scalar::U32(v as u32),
            DType::I64 => Scalar::I64(v as i64),
            DType::F32 => Scalar::F32(v as f32),
            DType::F64 => Scalar::F64(v as f64),
        }
    }

    /// A float converted into `to` with Rust `as` semantics: saturating, NaN becomes 0, `!= 0`
    /// for bool. The C backend must emit conversions with the same results.
    fn from_float(v: f64, to: DType) -> Scalar {
        match to {
            DType::Bool => Scalar::Bool(v != 0.0),
            DType::I8 => Scalar::I8(v as i8),
            DType::U8 => Scalar::U8(v as u8),
            DType::I16 => Scalar::I16(v as i16),
            DType::U16 => Scalar::U16(v as u16),
            DType::I32 => Scalar::I32(v as i32),
            DType::U32 => Scalar::U32(v as u32),
            DType::I64 => Scalar::I64(v as i64),
            DType::F32 => Scalar::F32(v as f32),
            DType::F64 => Scalar::F64(v),
        }
    }

    /// `self` cast to `to`: int→int wraps, int→float rounds to nearest, float→int saturates with
    /// NaN→0, bool→number is 0/1, number→bool is `x != 0`, f32↔f64 as Rust `as`.
    pub fn cast(self, to: DType) -> Scalar {
        match self {
            // f32 → f64 is exact, so going through f64 gives the same result as a direct cast.
            Scalar::F32(v) => Scalar::from_float(v as f64, to),
            Scalar::F64(v) => Scalar::from_float(v, to),
            other => Scalar::from_int_wrapping(other.as_i128().unwrap_or(0), to),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::I8(v) => write!(f, "{v}"),
            Scalar::U8(v) => write!(f, "{v}"),
            Scalar::I16(v) => write!(f, "{v}"),
            Scalar::U16(v) => write!(f, "{v}"),
            Scalar::I32(v) => write!(f, "{v}"),
            Scalar::U32(v) => write!(f, "{v}"),
            Scalar::I64(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v}"),
            Scalar::F64(v) => write!(f, "{v}"),
        }
    }
}

macro_rules! int_binary {
    ($op:expr, $x:expr, $y:expr, $ctor:path, $zero:expr) => {{
        let (x, y) = ($x, $y);
        Ok(match $op {
            BinOp::Add => $ctor(x.wrapping_add(y)),
            BinOp::Sub => $ctor(x.wrapping_sub(y)),
            BinOp::Mul => $ctor(x.wrapping_mul(y)),
            // Euclidean division and remainder; x / 0 = 0 and x % 0 = 0; MIN / -1 wraps.
            BinOp::Div if y == $zero => $ctor($zero),
            BinOp::Div => $ctor(x.wrapping_div_euclid(y)),
            BinOp::Mod if y == $zero => $ctor($zero),
            BinOp::Mod => $ctor(x.wrapping_rem_euclid(y)),
            BinOp::Min => $ctor(if x < y { x } else { y }),
            BinOp::Max => $ctor(if x > y { x } else { y }),
            BinOp::Lt => Scalar::Bool(x < y),
            BinOp::Le => Scalar::Bool(x <= y),
            BinOp::Gt => Scalar::Bool(x > y),
            BinOp::Ge => Scalar::Bool(x >= y),
            BinOp::Eq => Scalar::Bool(x == y),
            BinOp::Ne => Scalar::Bool(x != y),
            BinOp::And | BinOp::Or => {
                return Err(format!("`{}` applied to integers", $op.symbol()))
            }
        })
    }};
}

macro_rules! float_binary {
    ($op:expr, $x:expr, $y:expr, $ctor:path) => {{
        let (x, y) = ($x, $y);
        Ok(match $op {
            BinOp::Add => $ctor(x + y),
            BinOp::Sub => $ctor(x - y),
            BinOp::Mul => $ctor(x * y),
            BinOp::Div => $ctor(x / y),
            // The C semantics the backend emits: `a < b ? a : b` and `a > b ? a : b`.
            BinOp::Min => $ctor(if x < y { x } else { y }),
            BinOp::Max => $ctor(if x > y { x } else { y }),
            BinOp::Lt => Scalar::Bool(x < y),
            BinOp::Le => Scalar::Bool(x <= y),
            BinOp::Gt => Scalar::Bool(x > y),
            BinOp::Ge => Scalar::Bool(x >= y),
            BinOp::Eq => Scalar::Bool(x == y),
            BinOp::Ne => Scalar::Bool(x != y),
            BinOp::Mod | BinOp::And | BinOp::Or => {
                return Err(format!("`{}` applied to floats", $op.symbol()))
            }
        })
    }};
}

/// A binary data operation on two defined values of the same type.
pub fn binary(op: BinOp, a: Scalar, b: Scalar) -> Result<Scalar, String> {
    match (a, b) {
        (Scalar::I8(x), Scalar::I8(y)) => int_binary!(op, x, y, Scalar::I8, 0),
        (Scalar::U8(x), Scalar::U8(y)) => int_binary!(op, x, y, Scalar::U8, 0),
        (Scalar::I16(x), Scalar::I16(y)) => int_binary!(op, x, y, Scalar::I16, 0),
        (Scalar::U16(x), Scalar::U16(y)) => int_binary!(op, x, y, Scalar::U16, 0),
        (Scalar::I32(x), Scalar::I32(y)) => int_binary!(op, x, y, Scalar::I32, 0),
        (Scalar::U32(x), Scalar::U32(y)) => int_binary!(op, x, y, Scalar::U32, 0),
        (Scalar::I64(x), Scalar::I64(y)) => int_binary!(op, x, y, Scalar::I64, 0),
        (Scalar::F32(x), Scalar::F32(y)) => float_binary!(op, x, y, Scalar::F32),
        (Scalar::F64(x), Scalar::F64(y)) => float_binary!(op, x, y, Scalar::F64),
        (Scalar::Bool(x), Scalar::Bool(y)) => Ok(Scalar::Bool(match op {
            BinOp::And => x && y,
            BinOp::Or => x || y,
            BinOp::Eq => x == y,
            BinOp::Ne => x != y,
            BinOp::Lt => !x & y,
            BinOp::Le => x <= y,
            BinOp::Gt => x & !y,
            BinOp::Ge => x >= y,
            _ => return Err(format!("`{}` applied to bools", op.symbol())),
        })),
        _ => Err(format!(
            "operands of `{}` have different types {} and {}",
            op.symbol(),
            a.dtype(),
            b.dtype()
        )),
    }
}

/// A unary data operation: `-` wraps for integers, `not` needs a bool.
pub fn unary(op: UnOp, a: Scalar) -> Result<Scalar, String> {
    Ok(match (op, a) {
        (UnOp::Not, Scalar::Bool(b)) => Scalar::Bool(!b),
        (UnOp::Not, other) => return Err(format!("`not` applied to {}", other.dtype())),
        (UnOp::Neg, Scalar::I8(v)) => Scalar::I8(v.wrapping_neg()),
        (UnOp::Neg, Scalar::U8(v)) => Scalar::U8(v.wrapping_neg()),
        (UnOp::Neg, Scalar::I16(v)) => Scalar::I16(v.wrapping_neg()),
        (UnOp::Neg, Scalar::U16(v)) => Scalar::U16(v.wrapping_neg()),
        (UnOp::Neg, Scalar::I32(v)) => Scalar::I32(v.wrapping_neg()),
        (UnOp::Neg, Scalar::U32(v)) => Scalar::U32(v.wrapping_neg()),
        (UnOp::Neg, Scalar::I64(v)) => Scalar::I64(v.wrapping_neg()),
        (UnOp::Neg, Scalar::F32(v)) => Scalar::F32(-v),
        (UnOp::Neg, Scalar::F64(v)) => Scalar::F64(-v),
        (UnOp::Neg, Scalar::Bool(_)) => return Err("`-` applied to bool".into()),
    })
}

macro_rules! float_math {
    ($f:expr, $args:expr, $ctor:path, $get:ident) => {{
        let x = $get($args[0])?;
        Ok($ctor(match $f {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Exp => x.exp(),
            MathFn::Log => x.ln(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Tanh => x.tanh(),
            MathFn::Abs => x.abs(),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            MathFn::Round => x.round_ties_even(),
            MathFn::Pow => x.powf($get($args[1])?),
            MathFn::Fma => x.mul_add($get($args[1])?, $get($args[2])?),
        }))
    }};
}

fn get_f32(s: Scalar) -> Result<f32, String> {
    match s {
        Scalar::F32(v) => Ok(v),
        other => Err(format!(
            "math argument of type {} where f32 expected",
            other.dtype()
        )),
    }
}

fn get_f64(s: Scalar) -> Result<f64, String> {
    match s {
        Scalar::F64(v) => Ok(v),
        other => Err(format!(
            "math argument of type {} where f64 expected",
            other.dtype()
        )),
    }
}

/// A math function on defined values: Rust's f32/f64 methods (`ln` for log, `mul_add` for fma);
/// `abs` also takes integers and wraps (`i32::MIN` stays `i32::MIN`).
pub fn math(f: MathFn, args: &[Scalar]) -> Result<Scalar, String> {
    if args.len() != f.arity() {
        return Err(format!(
            "`{}` takes {} arguments, got {}",
            f.name(),
            f.arity(),
            args.len()
        ));
    }
    match args[0] {
        Scalar::F32(_) => float_math!(f, args, Scalar::F32, get_f32),
        Scalar::F64(_) => float_math!(f, args, Scalar::F64, get_f64),
        int if f == MathFn::Abs => Ok(match int {
            Scalar::I8(v) => Scalar::I8(v.wrapping_abs()),
            Scalar::I16(v) => Scalar::I16(v.wrapping_abs()),
            Scalar::I32(v) => Scalar::I32(v.wrapping_abs()),
            Scalar::I64(v) => Scalar::I64(v.wrapping_abs()),
            u @ (Scalar::U8(_) | Scalar::U16(_) | Scalar::U32(_)) => u,
            other => return Err(format!("`abs` applied to {}", other.dtype())),
        }),
        other => Err(format!("`{}` applied to {}", f.name(), other.dtype())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_between_every_kind() {
        assert_eq!(Scalar::I32(-1).cast(DType::U8), Scalar::U8(255));
        assert_eq!(Scalar::U8(255).cast(DType::I8), Scalar::I8(-1));
        assert_eq!(Scalar::I8(-1).cast(DType::U32), Scalar::U32(u32::MAX));
        assert_eq!(Scalar::U16(65535).cast(DType::I64), Scalar::I64(65535));
        assert_eq!(Scalar::F64(-1.5).cast(DType::U16), Scalar::U16(0));
        assert_eq!(Scalar::F64(f64::NAN).cast(DType::I64), Scalar::I64(0));
        assert_eq!(Scalar::F32(1e30).cast(DType::I64), Scalar::I64(i64::MAX));
        assert_eq!(Scalar::F32(f32::NAN).cast(DType::Bool), Scalar::Bool(true));
        assert_eq!(Scalar::F32(-0.0).cast(DType::Bool), Scalar::Bool(false));
        assert_eq!(Scalar::Bool(true).cast(DType::F32), Scalar::F32(1.0));
        assert_eq!(
            Scalar::I64(i64::MAX).cast(DType::F64),
            Scalar::F64(i64::MAX as f64)
        );
    }

    #[test]
    fn binary_rejects_mixed_and_meaningless_operands() {
        assert!(binary(BinOp::Add, Scalar::I32(1), Scalar::I64(1)).is_err());
        assert!(binary(BinOp::Mod, Scalar::F64(1.0), Scalar::F64(1.0)).is_err());
        assert!(binary(BinOp::And, Scalar::I8(1), Scalar::I8(1)).is_err());
        assert!(binary(BinOp::Add, Scalar::Bool(true), Scalar::Bool(true)).is_err());
        assert_eq!(
            binary(BinOp::Or, Scalar::Bool(false), Scalar::Bool(true)),
            Ok(Scalar::Bool(true))
        );
        assert_eq!(
            binary(BinOp::Div, Scalar::I64(i64::MIN), Scalar::I64(-1)),
            Ok(Scalar::I64(i64::MIN))
        );
        assert_eq!(
            binary(BinOp::Mod, Scalar::I8(-128), Scalar::I8(-1)),
            Ok(Scalar::I8(0))
        );
    }

    #[test]
    fn f32_arithmetic_rounds_in_f32() {
        // 1 + 2^-24 is exact in f64 but rounds to 1 in f32.
        let tiny = Scalar::F32(f32::EPSILON / 2.0);
        assert_eq!(
            binary(BinOp::Add, Scalar::F32(1.0), tiny),
            Ok(Scalar::F32(1.0))
        );
        assert!(math(MathFn::Sqrt, &[Scalar::I32(4)]).is_err());
        assert!(math(MathFn::Pow, &[Scalar::F32(2.0)]).is_err());
        assert_eq!(math(MathFn::Abs, &[Scalar::U8(200)]), Ok(Scalar::U8(200)));
        assert_eq!(math(MathFn::Log, &[Scalar::F64(1.0)]), Ok(Scalar::F64(0.0)));
    }
}
