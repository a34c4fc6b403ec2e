//! Types: data types of buffer elements, control types of sizes/indices/strides/conditions, and
//! the type of an expression.

use std::fmt;

/// The element type of data (buffers, scalars, data expressions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::F32,
        DType::F64,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == s)
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool
    }

    pub fn is_signed(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// Width in bits (bool counts as 8, its storage size).
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 8,
            DType::I16 | DType::U16 => 16,
            DType::I32 | DType::U32 | DType::F32 => 32,
            DType::I64 | DType::F64 => 64,
        }
    }

    pub fn bytes(self) -> usize {
        (self.bits() / 8) as usize
    }

    /// The inclusive range of an integer type, as i128 so every type fits.
    pub fn int_range(self) -> Option<(i128, i128)> {
        if !self.is_int() {
            return None;
        }
        let bits = self.bits();
        Some(if self.is_signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The largest magnitude of a control integer that enters a proc from outside (docs/language.md
/// §2, the control-arithmetic rule): `size` arguments lie in `[1, ENTRY_MAX]`; `index` and
/// `stride` arguments, strides of window arguments and control config fields in
/// `[-ENTRY_MAX, ENTRY_MAX]`. Entry points check it; the checker assumes it and proves that every
/// control value and intermediate then fits in 64 bits.
pub const ENTRY_MAX: i64 = (1 << 31) - 1;

/// The declared type of a control value (a proc argument, a config field, a loop variable).
///
/// Control values are 64-bit integers (proved never to overflow) or booleans; they never depend
/// on data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CtrlType {
    /// A strictly positive integer (buffer extents, trip counts).
    Size,
    /// Any integer (offsets, loop variables).
    Index,
    /// A buffer stride in elements.
    Stride,
    /// A control boolean.
    Bool,
}

impl CtrlType {
    pub fn name(self) -> &'static str {
        match self {
            CtrlType::Size => "size",
            CtrlType::Index => "index",
            CtrlType::Stride => "stride",
            CtrlType::Bool => "bool",
        }
    }

    pub fn from_name(s: &str) -> Option<CtrlType> {
        match s {
            "size" => Some(CtrlType::Size),
            "index" => Some(CtrlType::Index),
            "stride" => Some(CtrlType::Stride),
            _ => None,
        }
    }

    /// The type an expression of this control type has.
    pub fn ty(self) -> Ty {
        match self {
            CtrlType::Bool => Ty::Bool,
            _ => Ty::Int,
        }
    }
}

/// The type of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A control integer (64 bits, quasi-affine).
    Int,
    /// A control boolean.
    Bool,
    /// A data value.
    Data(DType),
    /// A buffer or window used as a whole (a call argument or a window binding).
    Buffer(DType),
}

impl Ty {
    pub fn is_control(self) -> bool {
        matches!(self, Ty::Int | Ty::Bool)
    }

    pub fn data(self) -> Option<DType> {
        match self {
            Ty::Data(d) => Some(d),
            _ => None,
        }
    }

    /// A boolean of the same kind (control or data) as a comparison of two `self` values.
    pub fn bool_like(self) -> Ty {
        match self {
            Ty::Data(_) => Ty::Data(DType::Bool),
            _ => Ty::Bool,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("control int"),
            Ty::Bool => f.write_str("control bool"),
            Ty::Data(d) => write!(f, "{d}"),
            Ty::Buffer(d) => write!(f, "buffer of {d}"),
        }
    }
}
