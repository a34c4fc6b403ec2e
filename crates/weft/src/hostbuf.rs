//! Typed host buffers: the bridge between the interpreter's cell buffers (which can hold the
//! error value) and the plain Rust vectors the compiled code reads and writes.

use weft_interp::{Buffer, Scalar};
use weft_ir::DType;
use weft_jit::{Arg, BufArg};

/// A dense buffer of one of weft's data types.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

macro_rules! each_type {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            HostData::Bool($v) => $body,
            HostData::I8($v) => $body,
            HostData::U8($v) => $body,
            HostData::I16($v) => $body,
            HostData::U16($v) => $body,
            HostData::I32($v) => $body,
            HostData::U32($v) => $body,
            HostData::I64($v) => $body,
            HostData::F32($v) => $body,
            HostData::F64($v) => $body,
        }
    };
}

impl HostData {
    /// The values of an interpreter buffer; error cells become zero.
    pub fn from_buffer(b: &Buffer) -> HostData {
        let cells = &b.data;
        macro_rules! conv {
            ($variant:ident, $t:ty, $zero:expr) => {
                HostData::$variant(
                    cells
                        .iter()
                        .map(|c| match c {
                            Some(Scalar::$variant(v)) => *v,
                            _ => $zero,
                        })
                        .collect::<Vec<$t>>(),
                )
            };
        }
        match b.dtype {
            DType::Bool => conv!(Bool, bool, false),
            DType::I8 => conv!(I8, i8, 0),
            DType::U8 => conv!(U8, u8, 0),
            DType::I16 => conv!(I16, i16, 0),
            DType::U16 => conv!(U16, u16, 0),
            DType::I32 => conv!(I32, i32, 0),
            DType::U32 => conv!(U32, u32, 0),
            DType::I64 => conv!(I64, i64, 0),
            DType::F32 => conv!(F32, f32, 0.0),
            DType::F64 => conv!(F64, f64, 0.0),
        }
    }

    pub fn len(&self) -> usize {
        each_type!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at a linear position, as an interpreter scalar.
    pub fn scalar(&self, i: usize) -> Scalar {
        match self {
            HostData::Bool(v) => Scalar::Bool(v[i]),
            HostData::I8(v) => Scalar::I8(v[i]),
            HostData::U8(v) => Scalar::U8(v[i]),
            HostData::I16(v) => Scalar::I16(v[i]),
            HostData::U16(v) => Scalar::U16(v[i]),
            HostData::I32(v) => Scalar::I32(v[i]),
            HostData::U32(v) => Scalar::U32(v[i]),
            HostData::I64(v) => Scalar::I64(v[i]),
            HostData::F32(v) => Scalar::F32(v[i]),
            HostData::F64(v) => Scalar::F64(v[i]),
        }
    }

    /// A pointer to the first element, for calling C directly.
    pub fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        each_type!(self, v => v.as_mut_ptr() as *mut std::ffi::c_void)
    }

    /// A JIT argument viewing this buffer with a dense row-major `shape`.
    pub fn as_arg<'a>(&'a mut self, shape: &[usize]) -> Arg<'a> {
        each_type!(self, v => Arg::Buf(BufArg::new(v.as_mut_slice(), shape)))
    }
}

/// Whether two scalars are the same bit for bit (every NaN equals every NaN).
pub fn same_bits(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Scalar::F64(x), Scalar::F64(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        _ => a == b,
    }
}
