//! C types and the small `static inline` helpers that give C operations weft's semantics
//! (wrapping, Euclidean division with `x / 0 = 0`, saturating float-to-int casts).

use std::collections::BTreeMap;
use weft_ir::DType;

/// The C type of a data element.
pub fn c_type(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::I8 => "int8_t",
        DType::U8 => "uint8_t",
        DType::I16 => "int16_t",
        DType::U16 => "uint16_t",
        DType::I32 => "int32_t",
        DType::U32 => "uint32_t",
        DType::I64 => "int64_t",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// An upper bound of `sizeof` of the C type of a data element (exact on every common ABI; a
/// C `bool` may be wider than one byte, never wider than eight).
pub fn c_type_size(d: DType) -> i64 {
    if d == DType::Bool {
        8
    } else {
        d.bytes() as i64
    }
}

/// The unsigned type data arithmetic of an integer type is done in: at least 32 bits wide, so
/// that C's integer promotions never turn it into a signed `int`.
pub fn wide_unsigned(d: DType) -> &'static str {
    if d.bits() <= 32 {
        "uint32_t"
    } else {
        "uint64_t"
    }
}

/// The unsigned type of the same width (for int-to-int conversions).
pub fn same_width_unsigned(d: DType) -> &'static str {
    match d.bits() {
        8 => "uint8_t",
        16 => "uint16_t",
        32 => "uint32_t",
        _ => "uint64_t",
    }
}

/// The helpers used by one translation unit, keyed by name so each is emitted once.
#[derive(Default)]
pub struct Helpers {
    defs: BTreeMap<String, String>,
}

impl Helpers {
    fn add(&mut self, name: &str, body: impl FnOnce() -> String) -> String {
        if !self.defs.contains_key(name) {
            let b = body();
            self.defs.insert(name.to_string(), b);
        }
        name.to_string()
    }

    /// All helper definitions, in name order.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for d in self.defs.values() {
            s.push_str(d);
            s.push('\n');
        }
        s
    }

    /// `a * b` for extents, or `INT64_MAX` where it overflows or an extent is negative.
    pub fn mul_sat(&mut self) -> String {
        self.add("weft_mul_sat", || {
            "static inline int64_t weft_mul_sat(int64_t a, int64_t b) {\n    int64_t r;\n    return (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) ? INT64_MAX : r;\n}\n".to_string()
        })
    }

    /// Euclidean division with `x / 0 = 0`; `MIN / -1` wraps to `MIN`.
    pub fn div(&mut self, d: DType) -> String {
        let name = format!("weft_div_{}", d.name());
        let t = c_type(d);
        self.add(&name.clone(), || {
            if d.is_signed() {
                format!(
                    "static inline {t} {name}({t} a, {t} b) {{\n    if (b == 0) return 0;\n    if (b == -1) return ({t}) (0u - ({w}) a);\n    {t} q = ({t}) (a / b);\n    {t} r = ({t}) (a % b);\n    if (r < 0) q = ({t}) (b > 0 ? q - 1 : q + 1);\n    return q;\n}}\n",
                    w = wide_unsigned(d)
                )
            } else {
                format!(
                    "static inline {t} {name}({t} a, {t} b) {{\n    return b == 0 ? 0 : ({t}) (a / b);\n}}\n"
                )
            }
        })
    }

    /// Euclidean remainder (never negative) with `x % 0 = 0`.
    pub fn rem(&mut self, d: DType) -> String {
        let name = format!("weft_mod_{}", d.name());
        let t = c_type(d);
        self.add(&name.clone(), || {
            if d.is_signed() {
                format!(
                    "static inline {t} {name}({t} a, {t} b) {{\n    if (b == 0 || b == -1) return 0;\n    {t} r = ({t}) (a % b);\n    if (r < 0) r = ({t}) (b > 0 ? r + b : r - b);\n    return r;\n}}\n"
                )
            } else {
                format!(
                    "static inline {t} {name}({t} a, {t} b) {{\n    return b == 0 ? 0 : ({t}) (a % b);\n}}\n"
                )
            }
        })
    }

    /// `(a < b ? a : b)` (or `>` for max), matching the interpreter, as a function so operands are
    /// evaluated once.
    pub fn min_max(&mut self, d: DType, is_min: bool) -> String {
        let which = if is_min { "min" } else { "max" };
        let op = if is_min { "<" } else { ">" };
        let name = format!("weft_{which}_{}", d.name());
        let t = c_type(d);
        self.add(&name.clone(), || {
            format!("static inline {t} {name}({t} a, {t} b) {{\n    return a {op} b ? a : b;\n}}\n")
        })
    }

    /// Wrapping absolute value of an integer.
    pub fn abs_int(&mut self, d: DType) -> String {
        let name = format!("weft_abs_{}", d.name());
        let t = c_type(d);
        let w = wide_unsigned(d);
        self.add(&name.clone(), || {
            if d.is_signed() {
                format!(
                    "static inline {t} {name}({t} a) {{\n    return a < 0 ? ({t}) (0u - ({w}) a) : a;\n}}\n"
                )
            } else {
                format!("static inline {t} {name}({t} a) {{\n    return a;\n}}\n")
            }
        })
    }

    /// A float-to-int conversion that saturates and maps NaN to 0 (Rust's `as`), in one of
    /// two forms, which give every value alike and differ in speed only. Code that stays
    /// scalar (`branch_free` false: a statement whose store scatters, such as a histogram's
    /// update, which GCC does not vectorize) gets a range test: values strictly between the
    /// float ends convert exactly (truncated, they lie in the integer range) and the rest
    /// saturate, so the common path is two predictable branches and the conversion, where the
    /// branch-free form costs three compares, a blend and, as GCC compiles it in scalar code,
    /// two branches more. Code that may be vectorized gets the branch-free form: the value
    /// clamped into the range converts exactly, then the ends and NaN are selected, which GCC
    /// vectorizes in loops of several statements (where it does not if-convert the range
    /// test's early return).
    pub fn float_to_int(&mut self, from: DType, to: DType, branch_free: bool) -> String {
        let name = format!(
            "weft_{}_to_{}{}",
            from.name(),
            to.name(),
            if branch_free { "" } else { "_s" }
        );
        let ft = c_type(from);
        let tt = c_type(to);
        let (lo, hi) = to.int_range().unwrap_or((0, 0));
        let suffix = if from == DType::F32 { "f" } else { "" };
        // lo is 0 or -2^(bits-1) and hi + 1 is 2^k: both exact in every float type.
        let lo_f = if lo == 0 {
            format!("0.0{suffix}")
        } else {
            format!("-0x1p{}{suffix}", to.bits() - 1)
        };
        let hi_bits = if to.is_signed() {
            to.bits() - 1
        } else {
            to.bits()
        };
        let hi_f = format!("0x1p{hi_bits}{suffix}");
        let (lo_c, hi_c) = (int_limit(to, lo), int_limit(to, hi));
        if !branch_free {
            return self.add(&name.clone(), || {
                format!(
                    "static inline {tt} {name}({ft} x) {{\n    if (x > {lo_f} && x < {hi_f}) return ({tt}) x;\n    return x != x ? 0 : x > 0 ? {hi_c} : {lo_c};\n}}\n"
                )
            });
        }
        // The largest value of the float type below 2^hi_bits: converting it never overflows.
        let below_hi = if from == DType::F32 {
            format!("0x1.fffffep{}f", hi_bits - 1)
        } else {
            format!("0x1.fffffffffffffp{}", hi_bits - 1)
        };
        self.add(&name.clone(), || {
            format!(
                "static inline {tt} {name}({ft} x) {{\n    {ft} c = x > {lo_f} ? x : {lo_f};\n    c = c < {below_hi} ? c : {below_hi};\n    {tt} r = ({tt}) c;\n    r = x >= {hi_f} ? {hi_c} : r;\n    return x != x ? 0 : r;\n}}\n"
            )
        })
    }
}

/// A C expression for an integer limit of type `d`.
fn int_limit(d: DType, v: i128) -> String {
    match (d, v) {
        (DType::I64, v) if v == i64::MIN as i128 => "INT64_MIN".to_string(),
        (DType::I64, _) => "INT64_MAX".to_string(),
        (DType::U32, v) if v > 0 => "UINT32_MAX".to_string(),
        (DType::I32, v) if v < 0 => "INT32_MIN".to_string(),
        (t, v) => format!("(({}) {v})", c_type(t)),
    }
}
