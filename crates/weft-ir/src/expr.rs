//! Expressions.
//!
//! An [`Expr`] is an immutable, reference-counted node carrying its kind, its type and its source
//! span. Constructors never fail: they compute the type from the operands and coerce *literals*
//! (constants) to the type of the other operand, the way Halide and Exo type `x * 2.0`. Whether the
//! result is well typed is decided by the checker.

use crate::diag::Span;
use crate::proc::Config;
use crate::sym::Sym;
use crate::types::{DType, Ty};
use std::fmt;
use std::sync::Arc;

/// A literal value. Its type is the enclosing [`Expr`]'s `ty`.
#[derive(Clone, Copy, Debug)]
pub enum Const {
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// Literals are equal when they are the same value bit for bit: `-0.0` and `0.0` differ (they
/// give different results, e.g. as divisors), and a NaN equals the same NaN (structural equality
/// of code, not IEEE comparison).
impl PartialEq for Const {
    fn eq(&self, other: &Const) -> bool {
        match (self, other) {
            (Const::Int(a), Const::Int(b)) => a == b,
            (Const::Float(a), Const::Float(b)) => a.to_bits() == b.to_bits(),
            (Const::Bool(a), Const::Bool(b)) => a == b,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Integer division rounds so that the remainder is Euclidean (for a positive divisor this is
    /// floor division); `x / 0 = 0`. Float division is IEEE.
    Div,
    /// Euclidean remainder; `x % 0 = 0`. Integers only.
    Mod,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Min,
    Max,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    }

    pub fn is_logic(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn is_arith(self) -> bool {
        !self.is_comparison() && !self.is_logic()
    }
}

/// Float math functions (and `abs`, which also takes integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Abs,
    Floor,
    Ceil,
    /// Round to the nearest integer, ties to even (C's `nearbyint` in the default rounding
    /// mode; Halide's `round`).
    Round,
    Pow,
    Fma,
}

impl MathFn {
    pub const ALL: [MathFn; 12] = [
        MathFn::Sqrt,
        MathFn::Exp,
        MathFn::Log,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tanh,
        MathFn::Abs,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Round,
        MathFn::Pow,
        MathFn::Fma,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Exp => "exp",
            MathFn::Log => "log",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tanh => "tanh",
            MathFn::Abs => "abs",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Round => "round",
            MathFn::Pow => "pow",
            MathFn::Fma => "fma",
        }
    }

    pub fn from_name(s: &str) -> Option<MathFn> {
        MathFn::ALL.iter().copied().find(|f| f.name() == s)
    }

    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow => 2,
            MathFn::Fma => 3,
            _ => 1,
        }
    }
}

/// One coordinate of a window: a point drops the dimension, an interval `lo:hi` keeps it with
/// extent `hi - lo`.
#[derive(Clone, Debug, PartialEq)]
pub enum WinCoord {
    Point(Expr),
    Interval(Expr, Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Const(Const),
    /// A control variable: a size, index, stride or bool argument, or a loop variable.
    Var(Sym),
    /// A data read `buf[idx...]`; a rank-0 buffer (a scalar) has no indices.
    Read {
        buf: Sym,
        idx: Vec<Expr>,
    },
    Unary(UnOp, Expr),
    Binary(BinOp, Expr, Expr),
    /// `select(cond, a, b)`: all operands are evaluated.
    Select(Expr, Expr, Expr),
    Cast(DType, Expr),
    Math(MathFn, Vec<Expr>),
    /// A view of a buffer, used as a call argument or bound by a window statement. Empty `coords`
    /// means the whole buffer.
    Window {
        buf: Sym,
        coords: Vec<WinCoord>,
    },
    /// `stride(buf, dim)`: the distance in elements between neighbours along `dim`.
    Stride {
        buf: Sym,
        dim: usize,
    },
    ReadConfig {
        config: Arc<Config>,
        field: usize,
    },
    /// `clamp_index(value, lo, hi)`: an index computed from data (a lookup table, a histogram
    /// bin), `max(min(value, hi), lo)` with `value` an integer data expression and `lo`, `hi`
    /// control expressions. Allowed only as a whole index of a read, assignment or reduction:
    /// control flow never depends on data, and the analyses see the access as touching some
    /// unknown point of `[lo, hi]` (or `lo` when `hi < lo`).
    DataIndex {
        value: Expr,
        lo: Expr,
        hi: Expr,
    },
}

#[derive(Debug, PartialEq)]
pub struct ExprNode {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
    /// Nodes on the longest path from this node to a leaf (a leaf has height 1), saturating.
    height: u32,
}

impl ExprNode {
    /// Nodes on the longest path from this node to a leaf (a leaf has height 1). Computed when
    /// the node is built, so depth limits (`crate::limits`) are checked without recursion.
    pub fn height(&self) -> u32 {
        self.height
    }
}

/// Trees at most this high are dropped by plain recursion.
const SHALLOW: u32 = 64;

/// Dropping a deep tree must not overflow the stack (a builder can make any depth): children
/// that this node owns alone are moved to a work list and dropped one by one, each after its own
/// children were moved out.
impl Drop for ExprNode {
    fn drop(&mut self) {
        if self.height <= SHALLOW {
            return;
        }
        let mut work = Vec::new();
        take_children(&mut self.kind, &mut work);
        while let Some(e) = work.pop() {
            if let Ok(mut node) = Arc::try_unwrap(e.0) {
                take_children(&mut node.kind, &mut work);
            }
        }
    }
}

/// Move the sub-expressions of `kind` into `out`, leaving a leaf.
fn take_children(kind: &mut ExprKind, out: &mut Vec<Expr>) {
    match std::mem::replace(kind, ExprKind::Const(Const::Bool(false))) {
        ExprKind::Const(_)
        | ExprKind::Var(_)
        | ExprKind::Stride { .. }
        | ExprKind::ReadConfig { .. } => {}
        ExprKind::Read { idx: v, .. } | ExprKind::Math(_, v) => out.extend(v),
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => out.push(a),
        ExprKind::Binary(_, a, b) => out.extend([a, b]),
        ExprKind::Select(c, a, b) => out.extend([c, a, b]),
        ExprKind::DataIndex { value, lo, hi } => out.extend([value, lo, hi]),
        ExprKind::Window { coords, .. } => {
            for c in coords {
                match c {
                    WinCoord::Point(p) => out.push(p),
                    WinCoord::Interval(a, b) => out.extend([a, b]),
                }
            }
        }
    }
}

/// An immutable, shared expression node.
#[derive(Clone, PartialEq)]
pub struct Expr(Arc<ExprNode>);

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::print::expr_to_string(self))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::print::expr_to_string(self))
    }
}

impl std::ops::Deref for Expr {
    type Target = ExprNode;
    fn deref(&self) -> &ExprNode {
        &self.0
    }
}

impl Expr {
    /// A node with an explicitly given type. Prefer the typed constructors below.
    pub fn raw(kind: ExprKind, ty: Ty, span: Span) -> Expr {
        let mut below = 0;
        crate::visit::for_each_child(&kind, |c| below = below.max(c.height));
        let height = below.saturating_add(1);
        Expr(Arc::new(ExprNode {
            kind,
            ty,
            span,
            height,
        }))
    }

    pub fn kind(&self) -> &ExprKind {
        &self.0.kind
    }

    pub fn ptr_eq(a: &Expr, b: &Expr) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// The same node with another span.
    pub fn with_span(&self, span: Span) -> Expr {
        Expr::raw(self.kind.clone(), self.ty, span)
    }

    // ----- leaves -----

    /// An integer literal; a control int until coerced by context.
    pub fn int(v: i64) -> Expr {
        Expr::raw(ExprKind::Const(Const::Int(v)), Ty::Int, Span::DUMMY)
    }

    /// A float literal; f64 until coerced by context (for example by `x * 2.0` with `x: f32`).
    pub fn float(v: f64) -> Expr {
        Expr::raw(
            ExprKind::Const(Const::Float(v)),
            Ty::Data(DType::F64),
            Span::DUMMY,
        )
    }

    pub fn bool(v: bool) -> Expr {
        Expr::raw(ExprKind::Const(Const::Bool(v)), Ty::Bool, Span::DUMMY)
    }

    /// A literal of a given type.
    pub fn typed_const(c: Const, ty: Ty) -> Expr {
        Expr::raw(ExprKind::Const(c), ty, Span::DUMMY)
    }

    /// A control variable of type `ty` (`Ty::Int` or `Ty::Bool`).
    pub fn var(sym: &Sym, ty: Ty) -> Expr {
        Expr::raw(ExprKind::Var(sym.clone()), ty, Span::DUMMY)
    }

    /// A data read of a buffer with element type `elem`.
    pub fn read(buf: &Sym, elem: DType, idx: Vec<Expr>) -> Expr {
        let idx = idx.into_iter().map(|e| e.coerce(Ty::Int)).collect();
        Expr::raw(
            ExprKind::Read {
                buf: buf.clone(),
                idx,
            },
            Ty::Data(elem),
            Span::DUMMY,
        )
    }

    pub fn window(buf: &Sym, elem: DType, coords: Vec<WinCoord>) -> Expr {
        let coords = coords
            .into_iter()
            .map(|c| match c {
                WinCoord::Point(e) => WinCoord::Point(e.coerce(Ty::Int)),
                WinCoord::Interval(a, b) => {
                    WinCoord::Interval(a.coerce(Ty::Int), b.coerce(Ty::Int))
                }
            })
            .collect();
        Expr::raw(
            ExprKind::Window {
                buf: buf.clone(),
                coords,
            },
            Ty::Buffer(elem),
            Span::DUMMY,
        )
    }

    pub fn stride(buf: &Sym, dim: usize) -> Expr {
        Expr::raw(
            ExprKind::Stride {
                buf: buf.clone(),
                dim,
            },
            Ty::Int,
            Span::DUMMY,
        )
    }

    pub fn read_config(config: &Arc<Config>, field: usize) -> Expr {
        let ty = config
            .fields
            .get(field)
            .map(|f| f.ty.ty())
            .unwrap_or(Ty::Int);
        Expr::raw(
            ExprKind::ReadConfig {
                config: config.clone(),
                field,
            },
            ty,
            Span::DUMMY,
        )
    }

    /// `clamp_index(value, lo, hi)`: see [`ExprKind::DataIndex`].
    pub fn data_index(value: Expr, lo: Expr, hi: Expr) -> Expr {
        Expr::raw(
            ExprKind::DataIndex {
                value,
                lo: lo.coerce(Ty::Int),
                hi: hi.coerce(Ty::Int),
            },
            Ty::Int,
            Span::DUMMY,
        )
    }

    // ----- operators -----

    pub fn unary(op: UnOp, a: Expr) -> Expr {
        let ty = a.ty;
        Expr::raw(ExprKind::Unary(op, a), ty, Span::DUMMY)
    }

    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        let (a, b) = unify_literals(a, b);
        let ty = if op.is_comparison() {
            a.ty.bool_like()
        } else {
            a.ty
        };
        Expr::raw(ExprKind::Binary(op, a, b), ty, Span::DUMMY)
    }

    pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
        let (a, b) = unify_literals(a, b);
        let ty = a.ty;
        Expr::raw(ExprKind::Select(c, a, b), ty, Span::DUMMY)
    }

    pub fn cast(to: DType, a: Expr) -> Expr {
        Expr::raw(ExprKind::Cast(to, a), Ty::Data(to), Span::DUMMY)
    }

    pub fn math(f: MathFn, args: Vec<Expr>) -> Expr {
        // Literals take the type of the first non-literal argument.
        let target = args.iter().find(|a| !a.is_literal()).map(|a| a.ty);
        let args: Vec<Expr> = match target {
            Some(t) => args.into_iter().map(|a| a.coerce(t)).collect(),
            None => args,
        };
        let ty = args.first().map(|a| a.ty).unwrap_or(Ty::Data(DType::F64));
        Expr::raw(ExprKind::Math(f, args), ty, Span::DUMMY)
    }

    pub fn min(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Min, a, b)
    }
    pub fn max(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Max, a, b)
    }
    pub fn lt(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Lt, self, b.into())
    }
    pub fn le(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Le, self, b.into())
    }
    pub fn gt(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Gt, self, b.into())
    }
    pub fn ge(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ge, self, b.into())
    }
    pub fn eq_(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Eq, self, b.into())
    }
    pub fn ne_(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ne, self, b.into())
    }
    pub fn and(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::And, self, b.into())
    }
    pub fn or(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Or, self, b.into())
    }
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Expr {
        Expr::unary(UnOp::Not, self)
    }

    // ----- literal typing -----

    /// True for a constant, or a negated constant.
    pub fn is_literal(&self) -> bool {
        match &self.kind {
            ExprKind::Const(_) => true,
            ExprKind::Unary(UnOp::Neg, a) => a.is_literal(),
            _ => false,
        }
    }

    /// Retype a literal to `to` when the literal fits that kind of type; anything else is
    /// returned unchanged (the checker reports a remaining mismatch).
    pub fn coerce(self, to: Ty) -> Expr {
        if self.ty == to {
            return self;
        }
        match &self.kind {
            ExprKind::Const(c) => {
                let ok = match (c, to) {
                    (Const::Int(_), Ty::Int) => true,
                    (Const::Int(_), Ty::Data(d)) => d != DType::Bool,
                    (Const::Float(_), Ty::Data(d)) => d.is_float(),
                    (Const::Bool(_), Ty::Bool) => true,
                    (Const::Bool(_), Ty::Data(DType::Bool)) => true,
                    _ => false,
                };
                if ok {
                    Expr::raw(self.kind.clone(), to, self.span)
                } else {
                    self
                }
            }
            ExprKind::Unary(UnOp::Neg, a) if a.is_literal() => {
                let a2 = a.clone().coerce(to);
                if a2.ty == to {
                    Expr::raw(ExprKind::Unary(UnOp::Neg, a2), to, self.span)
                } else {
                    self
                }
            }
            _ => self,
        }
    }

    /// The value of an integer constant (possibly negated), if this is one.
    pub fn as_int_const(&self) -> Option<i64> {
        match &self.kind {
            ExprKind::Const(Const::Int(v)) => Some(*v),
            ExprKind::Unary(UnOp::Neg, a) => a.as_int_const().map(|v| v.wrapping_neg()),
            _ => None,
        }
    }
}

/// When exactly one side is a literal, give it the other side's type; when both are literals of
/// different kinds, promote the int literal to the float literal's type.
fn unify_literals(a: Expr, b: Expr) -> (Expr, Expr) {
    match (a.is_literal(), b.is_literal()) {
        (true, false) => {
            let t = b.ty;
            (a.coerce(t), b)
        }
        (false, true) => {
            let t = a.ty;
            (a, b.coerce(t))
        }
        (true, true) if a.ty != b.ty => {
            if matches!(a.ty, Ty::Data(_)) {
                let t = a.ty;
                (a, b.coerce(t))
            } else {
                let t = b.ty;
                (a.coerce(t), b)
            }
        }
        _ => (a, b),
    }
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::int(v)
    }
}
impl From<i32> for Expr {
    fn from(v: i32) -> Expr {
        Expr::int(v as i64)
    }
}
impl From<f64> for Expr {
    fn from(v: f64) -> Expr {
        Expr::float(v)
    }
}
impl From<bool> for Expr {
    fn from(v: bool) -> Expr {
        Expr::bool(v)
    }
}
impl From<&Expr> for Expr {
    fn from(e: &Expr) -> Expr {
        e.clone()
    }
}

macro_rules! arith_impl {
    ($tr:ident, $method:ident, $op:expr) => {
        impl<T: Into<Expr>> std::ops::$tr<T> for Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::binary($op, self, rhs.into())
            }
        }
        impl<T: Into<Expr>> std::ops::$tr<T> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::binary($op, self.clone(), rhs.into())
            }
        }
    };
}
arith_impl!(Add, add, BinOp::Add);
arith_impl!(Sub, sub, BinOp::Sub);
arith_impl!(Mul, mul, BinOp::Mul);
arith_impl!(Div, div, BinOp::Div);
arith_impl!(Rem, rem, BinOp::Mod);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::unary(UnOp::Neg, self)
    }
}
impl std::ops::Neg for &Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::unary(UnOp::Neg, self.clone())
    }
}
