//! Host buffers: dense row-major arrays of cells, the data the interpreter reads and writes.

use crate::scalar::{Cell, Scalar};
use weft_ir::DType;

/// A dense row-major array of cells of one element type.
///
/// The constructors never fail: a buffer whose `data` length does not match its shape is only
/// reported (as an [`crate::InterpError`]) when it is passed to [`crate::run`].
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<Cell>,
}

macro_rules! typed_buffer {
    ($from:ident, $to:ident, $t:ty, $variant:ident) => {
        #[doc = concat!("A buffer of `", stringify!($t), "` values in row-major order.")]
        pub fn $from(shape: Vec<usize>, values: &[$t]) -> Buffer {
            Buffer {
                dtype: DType::$variant,
                shape,
                data: values.iter().map(|v| Some(Scalar::$variant(*v))).collect(),
            }
        }

        #[doc = concat!("The cells as `", stringify!($t), "` values; `None` if any cell is the error value or the buffer has another type.")]
        pub fn $to(&self) -> Option<Vec<$t>> {
            self.data
                .iter()
                .map(|c| match c {
                    Some(Scalar::$variant(v)) => Some(*v),
                    _ => None,
                })
                .collect()
        }
    };
}

impl Buffer {
    /// A buffer with every cell uninitialised (the error value).
    pub fn new_uninit(dtype: DType, shape: Vec<usize>) -> Buffer {
        let n = shape.iter().product();
        Buffer {
            dtype,
            shape,
            data: vec![None; n],
        }
    }

    /// A buffer with every cell zero (`false` for bool).
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Buffer {
        let n = shape.iter().product();
        Buffer {
            dtype,
            shape,
            data: vec![Some(Scalar::from_int_wrapping(0, dtype)); n],
        }
    }

    /// A buffer from values in row-major order. Values of another type than `dtype` are kept as
    /// they are; [`crate::run`] reports them.
    pub fn from_scalars(dtype: DType, shape: Vec<usize>, values: Vec<Scalar>) -> Buffer {
        Buffer {
            dtype,
            shape,
            data: values.into_iter().map(Some).collect(),
        }
    }

    typed_buffer!(from_bool, to_bool_vec, bool, Bool);
    typed_buffer!(from_i8, to_i8_vec, i8, I8);
    typed_buffer!(from_u8, to_u8_vec, u8, U8);
    typed_buffer!(from_i16, to_i16_vec, i16, I16);
    typed_buffer!(from_u16, to_u16_vec, u16, U16);
    typed_buffer!(from_i32, to_i32_vec, i32, I32);
    typed_buffer!(from_u32, to_u32_vec, u32, U32);
    typed_buffer!(from_i64, to_i64_vec, i64, I64);
    typed_buffer!(from_f32, to_f32_vec, f32, F32);
    typed_buffer!(from_f64, to_f64_vec, f64, F64);

    /// The number of cells the shape calls for.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the shape has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many cells hold the error value.
    pub fn error_cells(&self) -> usize {
        self.data.iter().filter(|c| c.is_none()).count()
    }

    /// The cell at a multi-index, or `None` when the index is out of range.
    pub fn get(&self, idx: &[usize]) -> Option<Cell> {
        if idx.len() != self.shape.len() {
            return None;
        }
        let mut flat = 0usize;
        for (&i, &n) in idx.iter().zip(&self.shape) {
            if i >= n {
                return None;
            }
            flat = flat * n + i;
        }
        self.data.get(flat).copied()
    }
}
