//! The algorithm language of pipelines (Halide's; `../shared/reference/halide-formal-semantics.md`
//! §1): funcs over all of Z^n with a pure definition and update stages over reduction domains.
//!
//! Names are resolved to indices when a pipeline is built: an expression refers to the pure
//! variables of the func it defines, the reduction variables of its stage, the pipeline's scalar
//! parameters, its input buffers, and funcs by their position (a func may call only funcs defined
//! before it, and itself from an update stage).

use weft_interp::Scalar;
use weft_ir::{BinOp, DType, MathFn, Span, UnOp};

/// Where a definition stands in its source text ([`Place::NONE`] for pipelines built in Rust),
/// for diagnostics. Not part of a definition's identity: definitions that differ only in their
/// place are equal.
#[derive(Clone, Copy, Debug)]
pub struct Place(pub Span);

impl Place {
    pub const NONE: Place = Place(Span::DUMMY);
}

impl Default for Place {
    fn default() -> Place {
        Place::NONE
    }
}

impl PartialEq for Place {
    fn eq(&self, _: &Place) -> bool {
        true
    }
}

/// A pipeline: scalar parameters, input buffers, funcs in definition order, and which of them
/// are outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub name: String,
    pub params: Vec<Param>,
    pub inputs: Vec<Input>,
    pub funcs: Vec<Func>,
    /// Indices into `funcs`.
    pub outputs: Vec<usize>,
}

/// A scalar parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: DType,
}

/// An input buffer of `rank` dimensions.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    pub name: String,
    pub elem: DType,
    pub rank: usize,
}

/// `f(x1..xn) = pure; updates...`: the value of `f` at a point is the pure definition at it,
/// rewritten by each update stage in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: String,
    /// The pure variables, `x1` (innermost) first.
    pub vars: Vec<String>,
    /// The type of its values.
    pub ty: DType,
    pub pure: Expr,
    pub updates: Vec<Update>,
    /// The pure definition's statement.
    pub place: Place,
}

impl Func {
    /// Whether one of the func's definitions (pure or update) calls func `f`.
    pub fn calls(&self, f: usize) -> bool {
        let mut found = false;
        let mut look = |e: &Expr| {
            e.walk(&mut |x| found |= matches!(x, Expr::Call(Callee::Func(h), _) if *h == f))
        };
        look(&self.pure);
        for u in &self.updates {
            u.lhs.iter().for_each(&mut look);
            look(&u.value);
            u.wheres.iter().for_each(&mut look);
        }
        found
    }
}

/// `f(lhs...) = value` for every point of `rdom` where every `where` predicate holds, the
/// points in order (the first reduction variable innermost).
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    pub rdom: Vec<RDim>,
    pub wheres: Vec<Expr>,
    /// One coordinate per dimension of the func.
    pub lhs: Vec<Expr>,
    pub value: Expr,
    /// The update's statement.
    pub place: Place,
}

/// A reduction variable ranging over `min .. min + extent`; both are startup expressions
/// (literals and parameters only).
#[derive(Clone, Debug, PartialEq)]
pub struct RDim {
    pub name: String,
    pub min: Expr,
    pub extent: Expr,
}

/// What a call reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    Func(usize),
    Input(usize),
}

/// An expression. Coordinates (pure and reduction variables) are `i32`, as in Halide.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Lit(Scalar),
    /// The k-th pure variable of the func being defined.
    Var(usize),
    /// The k-th reduction variable of the stage being defined.
    RVar(usize),
    /// The k-th scalar parameter.
    Param(usize),
    /// The min (or, `extent`, the extent) of dimension `dim` of input `input`'s buffer: a
    /// startup expression, what boundary conditions clamp to.
    InputDim {
        input: usize,
        dim: usize,
        extent: bool,
    },
    /// The min (or the extent) of dimension `dim` of the window of output `output` (a position
    /// in the pipeline's outputs): known only to schedules, for `specialize` conditions.
    OutputDim {
        output: usize,
        dim: usize,
        extent: bool,
    },
    Call(Callee, Vec<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// All three operands are evaluated (no short circuit).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(DType, Box<Expr>),
    Math(MathFn, Vec<Expr>),
}

/// The type of coordinates.
pub const COORD: DType = DType::I32;

impl Expr {
    pub fn int(v: i32) -> Expr {
        Expr::Lit(Scalar::I32(v))
    }

    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    pub fn call(f: usize, args: Vec<Expr>) -> Expr {
        Expr::Call(Callee::Func(f), args)
    }

    pub fn input(k: usize, args: Vec<Expr>) -> Expr {
        Expr::Call(Callee::Input(k), args)
    }

    pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
        Expr::Select(Box::new(c), Box::new(a), Box::new(b))
    }

    pub fn cast(to: DType, a: Expr) -> Expr {
        Expr::Cast(to, Box::new(a))
    }

    /// Every sub-expression, this one first.
    pub fn walk<'e>(&'e self, f: &mut impl FnMut(&'e Expr)) {
        f(self);
        match self {
            Expr::Lit(_)
            | Expr::Var(_)
            | Expr::RVar(_)
            | Expr::Param(_)
            | Expr::InputDim { .. }
            | Expr::OutputDim { .. } => {}
            Expr::Call(_, args) | Expr::Math(_, args) => args.iter().for_each(|a| a.walk(f)),
            Expr::Unary(_, a) | Expr::Cast(_, a) => a.walk(f),
            Expr::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::Select(c, a, b) => {
                c.walk(f);
                a.walk(f);
                b.walk(f);
            }
        }
    }
}
