//! Typed buffer arguments: slices and ndarray views with a shape and element strides.

use ndarray::{ArrayView, ArrayViewMut, Dimension};
use std::marker::PhantomData;
use weft_ir::DType;

mod sealed {
    pub trait Sealed {}
}

/// A Rust element type with a weft [`DType`] of the same size and representation.
///
/// Sealed: only the ten types below implement it, so the C side always sees the layout it expects.
pub trait Element: Copy + sealed::Sealed + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    )*};
}
element!(bool => Bool, i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, f32 => F32, f64 => F64);

/// A buffer argument borrowed for `'a`: a pointer to its first element, the number of elements
/// that may be touched from there, a shape and strides (in elements), and whether it may be
/// written.
pub struct BufArg<'a> {
    pub(crate) ptr: *mut u8,
    /// Elements available from `ptr` on.
    pub(crate) len: usize,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<i64>,
    pub(crate) strides: Vec<i64>,
    pub(crate) mutable: bool,
    /// A problem found when the argument was made (for example negative strides), reported when
    /// it is used.
    pub(crate) invalid: Option<String>,
    _borrow: PhantomData<&'a mut [u8]>,
}

fn dense_strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1].saturating_mul(shape[k + 1] as i64);
    }
    strides
}

fn to_i64(v: &[usize]) -> Vec<i64> {
    v.iter()
        .map(|x| i64::try_from(*x).unwrap_or(i64::MAX))
        .collect()
}

impl<'a> BufArg<'a> {
    fn raw<T: Element>(
        ptr: *mut T,
        len: usize,
        shape: Vec<i64>,
        strides: Vec<i64>,
        mutable: bool,
    ) -> BufArg<'a> {
        BufArg {
            ptr: ptr as *mut u8,
            len,
            dtype: T::DTYPE,
            shape,
            strides,
            mutable,
            invalid: None,
            _borrow: PhantomData,
        }
    }

    /// A dense row-major tensor of `shape` over a mutable slice.
    pub fn new<T: Element>(data: &'a mut [T], shape: &[usize]) -> BufArg<'a> {
        let strides = dense_strides(shape);
        Self::raw(data.as_mut_ptr(), data.len(), to_i64(shape), strides, true)
    }

    /// A dense row-major tensor of `shape` over a read-only slice.
    pub fn from_slice<T: Element>(data: &'a [T], shape: &[usize]) -> BufArg<'a> {
        let strides = dense_strides(shape);
        Self::raw(
            data.as_ptr() as *mut T,
            data.len(),
            to_i64(shape),
            strides,
            false,
        )
    }

    /// A strided view of a mutable slice (`strides` in elements, each non-negative).
    pub fn strided<T: Element>(
        data: &'a mut [T],
        shape: &[usize],
        strides: &[isize],
    ) -> BufArg<'a> {
        let mut b = Self::raw(
            data.as_mut_ptr(),
            data.len(),
            to_i64(shape),
            strides.iter().map(|s| *s as i64).collect(),
            true,
        );
        b.check_strides(shape.len());
        b
    }

    /// A strided view of a read-only slice.
    pub fn strided_ref<T: Element>(
        data: &'a [T],
        shape: &[usize],
        strides: &[isize],
    ) -> BufArg<'a> {
        let mut b = Self::raw(
            data.as_ptr() as *mut T,
            data.len(),
            to_i64(shape),
            strides.iter().map(|s| *s as i64).collect(),
            false,
        );
        b.check_strides(shape.len());
        b
    }

    /// A read-only scalar (a rank-0 buffer).
    pub fn scalar<T: Element>(value: &'a T) -> BufArg<'a> {
        Self::raw(value as *const T as *mut T, 1, vec![], vec![], false)
    }

    /// A writable scalar (a rank-0 buffer).
    pub fn scalar_mut<T: Element>(value: &'a mut T) -> BufArg<'a> {
        Self::raw(value as *mut T, 1, vec![], vec![], true)
    }

    fn check_strides(&mut self, rank: usize) {
        if self.strides.len() != rank {
            self.invalid = Some(format!(
                "{} strides given for a shape of rank {rank}",
                self.strides.len()
            ));
        } else if self.strides.iter().any(|s| *s < 0) {
            self.invalid = Some(format!(
                "negative strides {:?} are not supported",
                self.strides
            ));
        }
    }

    fn from_view_parts<T: Element>(
        ptr: *mut T,
        shape: &[usize],
        strides: &[isize],
        mutable: bool,
    ) -> BufArg<'a> {
        let mut b = Self::raw(
            ptr,
            0,
            to_i64(shape),
            strides.iter().map(|s| *s as i64).collect(),
            mutable,
        );
        b.check_strides(shape.len());
        // ndarray guarantees every element the view reaches is valid: the span from the first
        // element to the furthest one is what C may touch.
        b.len = if b.invalid.is_none() {
            b.reach().map(|r| r.map_or(0, |last| last + 1)).unwrap_or(0)
        } else {
            0
        };
        b
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The strides in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The largest element offset reachable through shape and strides (`None` inside when the
    /// buffer has no element), or an error when it overflows.
    pub(crate) fn reach(&self) -> Result<Option<usize>, String> {
        let mut last: i64 = 0;
        for (d, s) in self.shape.iter().zip(&self.strides) {
            if *d < 0 {
                return Err(format!("negative extent {d}"));
            }
            if *d == 0 {
                return Ok(None);
            }
            let step = (d - 1)
                .checked_mul(*s)
                .and_then(|x| last.checked_add(x))
                .ok_or_else(|| "shape and strides overflow".to_string())?;
            last = step;
        }
        usize::try_from(last)
            .map(Some)
            .map_err(|_| "negative offsets".to_string())
    }
}

impl<'a, T: Element> From<&'a mut [T]> for BufArg<'a> {
    /// A rank-1 tensor over the whole slice.
    fn from(data: &'a mut [T]) -> BufArg<'a> {
        let n = data.len();
        BufArg::new(data, &[n])
    }
}

impl<'a, T: Element> From<&'a [T]> for BufArg<'a> {
    /// A read-only rank-1 tensor over the whole slice.
    fn from(data: &'a [T]) -> BufArg<'a> {
        BufArg::from_slice(data, &[data.len()])
    }
}

impl<'a, T: Element> From<&'a mut Vec<T>> for BufArg<'a> {
    fn from(data: &'a mut Vec<T>) -> BufArg<'a> {
        BufArg::from(data.as_mut_slice())
    }
}

impl<'a, T: Element, D: Dimension> From<ArrayViewMut<'a, T, D>> for BufArg<'a> {
    /// A writable view with the view's shape and strides (negative strides are reported at call
    /// time).
    fn from(mut v: ArrayViewMut<'a, T, D>) -> BufArg<'a> {
        let shape = v.shape().to_vec();
        let strides = v.strides().to_vec();
        BufArg::from_view_parts(v.as_mut_ptr(), &shape, &strides, true)
    }
}

impl<'a, T: Element, D: Dimension> From<ArrayView<'a, T, D>> for BufArg<'a> {
    /// A read-only view with the view's shape and strides.
    fn from(v: ArrayView<'a, T, D>) -> BufArg<'a> {
        let shape = v.shape().to_vec();
        let strides = v.strides().to_vec();
        BufArg::from_view_parts(v.as_ptr() as *mut T, &shape, &strides, false)
    }
}

/// One argument of a kernel call.
pub enum Arg<'a> {
    /// A size, index or stride.
    Int(i64),
    /// A control boolean.
    Bool(bool),
    /// A buffer.
    Buf(BufArg<'a>),
}

impl<'a> From<BufArg<'a>> for Arg<'a> {
    fn from(b: BufArg<'a>) -> Arg<'a> {
        Arg::Buf(b)
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}
