//! The text form of pipelines (`docs/pipelines.md`): a `pipeline` item of a `.weft` file, which
//! `weft-syntax` keeps as text ([`weft_ir::PipelineItem`]) for this parser.
//!
//! ```text
//! pipeline blur(input: u16[2]) -> blur_y {
//!     blur_x(x, y): u16 = (input(x - 1, y) + input(x, y) + input(x + 1, y)) / 3;
//!     blur_y(x, y): u16 = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) / 3;
//! }
//! ```
//!
//! A definition `f(x, y): T = e;` defines func `f`; a later `f(e1, e2) = e;` (or `+=`) is an
//! update stage, optionally over a reduction domain `for r in lo..hi, s in lo..hi` and with a
//! predicate `where c`. `g = repeat_edge(input);`, `constant_exterior(input, v)` and
//! `mirror(input)` define boundary-condition funcs. Literals take the type of what they meet (as
//! in procs): `input(x, y) + 1` adds a u16 one; alone, an integer literal is i32 and a float
//! literal f32.

use crate::ast::{Callee, Expr, Func, Input, Param, Pipeline, Place, RDim, Update, COORD};
use std::collections::HashMap;
use weft_interp::Scalar;
use weft_ir::{BinOp, DType, Diagnostic, MathFn, Span, UnOp};
use weft_syntax::{Tok, Token};

type PResult<T> = Result<T, Diagnostic>;

/// Parse the text of a `pipeline` item (`text` starts at byte `offset` of file `file`).
pub fn parse_pipeline(file: u32, text: &str, offset: u32) -> PResult<Pipeline> {
    let mut p = Parser::new(file, text, offset)?;
    p.pipeline()
}

/// What a name denotes inside a pipeline.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Name {
    Param(usize),
    Input(usize),
    Func(usize),
    Var(usize),
    RVar(usize),
}

/// An expression before typing: literals do not know their type yet.
#[derive(Clone, Debug)]
enum PExpr {
    Int(u64, Span),
    Float(f64, Span),
    Bool(bool),
    Typed(Expr, DType),
    Unary(UnOp, Box<PExpr>),
    Binary(BinOp, Box<PExpr>, Box<PExpr>),
    Select(Box<PExpr>, Box<PExpr>, Box<PExpr>),
    Call(Callee, Vec<PExpr>, DType),
    /// A cast; `true` saturates.
    Cast(DType, bool, Box<PExpr>),
    Math(MathFn, Vec<PExpr>),
}

pub(crate) struct Parser {
    file: u32,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    p: Pipeline,
    names: HashMap<String, Name>,
    /// Reading a schedule's condition: `out.min(d)` / `out.extent(d)` of outputs are values.
    windows: bool,
}

fn dtype(s: &str) -> Option<DType> {
    Some(match s {
        "bool" => DType::Bool,
        "i8" => DType::I8,
        "u8" => DType::U8,
        "i16" => DType::I16,
        "u16" => DType::U16,
        "i32" => DType::I32,
        "u32" => DType::U32,
        "i64" => DType::I64,
        "f32" => DType::F32,
        "f64" => DType::F64,
        _ => return None,
    })
}

fn math(s: &str) -> Option<MathFn> {
    Some(match s {
        "sqrt" => MathFn::Sqrt,
        "exp" => MathFn::Exp,
        "log" => MathFn::Log,
        "sin" => MathFn::Sin,
        "cos" => MathFn::Cos,
        "tanh" => MathFn::Tanh,
        "floor" => MathFn::Floor,
        "ceil" => MathFn::Ceil,
        "round" => MathFn::Round,
        "pow" => MathFn::Pow,
        "fma" => MathFn::Fma,
        _ => return None,
    })
}

/// The range of an integer type, for saturating casts.
fn int_range(t: DType) -> Option<(i128, i128)> {
    Some(match t {
        DType::I8 => (i8::MIN as i128, i8::MAX as i128),
        DType::U8 => (0, u8::MAX as i128),
        DType::I16 => (i16::MIN as i128, i16::MAX as i128),
        DType::U16 => (0, u16::MAX as i128),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        DType::U32 => (0, u32::MAX as i128),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128),
        _ => return None,
    })
}

const MAX_DEPTH: usize = 200;

impl Parser {
    pub(crate) fn new(file: u32, text: &str, offset: u32) -> PResult<Parser> {
        let mut toks = weft_syntax::lex(file, text)?;
        for t in &mut toks {
            t.lo += offset;
            t.hi += offset;
        }
        Ok(Parser {
            file,
            toks,
            pos: 0,
            depth: 0,
            p: Pipeline {
                name: String::new(),
                params: Vec::new(),
                inputs: Vec::new(),
                funcs: Vec::new(),
                outputs: Vec::new(),
            },
            names: HashMap::new(),
            windows: false,
        })
    }

    /// Read what follows as a schedule's startup condition over pipeline `p`: a boolean
    /// expression of its i32 parameters, the bounds of its inputs and the windows of its
    /// outputs (`out.extent(0)`).
    pub(crate) fn startup_condition(&mut self, p: &Pipeline) -> PResult<Expr> {
        self.p = p.clone();
        self.names.clear();
        for (k, q) in p.params.iter().enumerate() {
            self.names.insert(q.name.clone(), Name::Param(k));
        }
        for (k, i) in p.inputs.iter().enumerate() {
            self.names.insert(i.name.clone(), Name::Input(k));
        }
        for (k, f) in p.funcs.iter().enumerate() {
            self.names.insert(f.name.clone(), Name::Func(k));
        }
        self.windows = true;
        let e = self.expr();
        self.windows = false;
        self.typed(e?, Some(DType::Bool))
    }

    pub(crate) fn tok(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    pub(crate) fn span(&self) -> Span {
        let t = &self.toks[self.pos.min(self.toks.len() - 1)];
        Span::new(self.file, t.lo, t.hi)
    }

    /// From `start` to the end of the last token read.
    fn since(&self, start: Span) -> Span {
        let last = &self.toks[self.pos.saturating_sub(1).min(self.toks.len() - 1)];
        Span::new(self.file, start.lo, last.hi.max(start.lo))
    }

    pub(crate) fn bump(&mut self) {
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
    }

    /// The token after the current one.
    pub(crate) fn peek(&self) -> &Tok {
        &self.toks[(self.pos + 1).min(self.toks.len() - 1)].tok
    }

    /// Skip a statement up to and including its `;` (at nesting depth 0): its byte range.
    pub(crate) fn until_semicolon(&mut self) -> PResult<(u32, u32)> {
        let lo = self.toks[self.pos.min(self.toks.len() - 1)].lo;
        let mut depth = 0usize;
        loop {
            match self.tok() {
                Tok::Eof => return Err(self.err("expected `;`".into())),
                Tok::Punct("(" | "[" | "{") => depth += 1,
                Tok::Punct(")" | "]" | "}") if depth > 0 => depth -= 1,
                Tok::Punct("}") => return Err(self.err("expected `;`".into())),
                Tok::Punct(";") if depth == 0 => {
                    let hi = self.toks[self.pos].hi;
                    self.bump();
                    return Ok((lo, hi));
                }
                _ => {}
            }
            self.bump();
        }
    }

    pub(crate) fn is(&self, p: &str) -> bool {
        match self.tok() {
            Tok::Punct(q) => *q == p,
            Tok::Ident(s) => s == p,
            _ => false,
        }
    }

    pub(crate) fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        if yes {
            self.bump();
        }
        yes
    }

    pub(crate) fn err(&self, message: String) -> Diagnostic {
        Diagnostic::new("syntax", self.span(), message)
    }

    pub(crate) fn expect(&mut self, p: &str) -> PResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{p}`, found {}", self.tok().describe())))
        }
    }

    pub(crate) fn name(&mut self) -> PResult<(String, Span)> {
        match self.tok().clone() {
            Tok::Ident(s) => {
                let sp = self.span();
                self.bump();
                Ok((s, sp))
            }
            t => Err(self.err(format!("expected a name, found {}", t.describe()))),
        }
    }

    pub(crate) fn int(&mut self) -> PResult<i64> {
        let neg = self.eat("-");
        match self.tok().clone() {
            Tok::Int(v) if v <= i64::MAX as u64 => {
                self.bump();
                Ok(if neg { -(v as i64) } else { v as i64 })
            }
            t => Err(self.err(format!("expected an integer, found {}", t.describe()))),
        }
    }

    fn define(&mut self, name: &str, span: Span, what: Name) -> PResult<()> {
        if self.names.contains_key(name) {
            return Err(Diagnostic::new(
                "pipeline",
                span,
                format!("`{name}` is defined twice in pipeline `{}`", self.p.name),
            ));
        }
        self.names.insert(name.to_string(), what);
        Ok(())
    }

    fn pipeline(&mut self) -> PResult<Pipeline> {
        self.expect("pipeline")?;
        let (name, _) = self.name()?;
        self.p.name = name;
        self.expect("(")?;
        while !self.is(")") {
            let (n, sp) = self.name()?;
            self.expect(":")?;
            let (t, tsp) = self.name()?;
            let ty = dtype(&t)
                .ok_or_else(|| Diagnostic::new("syntax", tsp, format!("`{t}` is not a type")))?;
            if self.eat("[") {
                let rank = self.int()?;
                if !(1..=8).contains(&rank) {
                    return Err(self.err(format!("an input has 1 to 8 dimensions, not {rank}")));
                }
                self.expect("]")?;
                self.define(&n, sp, Name::Input(self.p.inputs.len()))?;
                self.p.inputs.push(Input {
                    name: n,
                    elem: ty,
                    rank: rank as usize,
                });
            } else {
                self.define(&n, sp, Name::Param(self.p.params.len()))?;
                self.p.params.push(Param { name: n, ty });
            }
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        self.expect("-")?;
        self.expect(">")?;
        let mut outputs = Vec::new();
        let paren = self.eat("(");
        loop {
            outputs.push(self.name()?);
            if !paren || !self.eat(",") {
                break;
            }
        }
        if paren {
            self.expect(")")?;
        }
        self.expect("{")?;
        while !self.is("}") {
            if *self.tok() == Tok::Eof {
                return Err(self.err("expected `}`".into()));
            }
            self.definition()?;
        }
        self.bump();
        if *self.tok() != Tok::Eof {
            return Err(self.err("expected the end of the pipeline".into()));
        }
        for (o, sp) in outputs {
            match self.names.get(&o) {
                Some(Name::Func(f)) => self.p.outputs.push(*f),
                _ => {
                    return Err(Diagnostic::new(
                        "pipeline",
                        sp,
                        format!("output `{o}` is not a func of the pipeline"),
                    ))
                }
            }
        }
        Ok(std::mem::replace(
            &mut self.p,
            Pipeline {
                name: String::new(),
                params: Vec::new(),
                inputs: Vec::new(),
                funcs: Vec::new(),
                outputs: Vec::new(),
            },
        ))
    }

    /// A pure definition, an update stage or a boundary condition.
    fn definition(&mut self) -> PResult<()> {
        let (name, sp) = self.name()?;
        if self.eat("=") {
            return self.boundary(name, sp);
        }
        let known = self.names.get(&name).copied();
        self.expect("(")?;
        match known {
            None => self.pure(name, sp),
            Some(Name::Func(f)) => self.update(f, sp),
            Some(_) => Err(Diagnostic::new(
                "pipeline",
                sp,
                format!("`{name}` is not a func: only funcs have update stages"),
            )),
        }
    }

    fn pure(&mut self, name: String, sp: Span) -> PResult<()> {
        let mut vars = Vec::new();
        while !self.is(")") {
            vars.push(self.name()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        self.expect(":")?;
        let (t, tsp) = self.name()?;
        let ty = dtype(&t)
            .ok_or_else(|| Diagnostic::new("syntax", tsp, format!("`{t}` is not a type")))?;
        self.expect("=")?;
        let saved = self.names.clone();
        for (k, (v, vsp)) in vars.iter().enumerate() {
            if self.names.get(v).is_some_and(|n| matches!(n, Name::Var(_))) {
                return Err(Diagnostic::new(
                    "pipeline",
                    *vsp,
                    format!("`{name}` has two pure variables named `{v}`"),
                ));
            }
            self.names.insert(v.clone(), Name::Var(k));
        }
        let value = self.expr()?;
        self.expect(";")?;
        self.names = saved;
        let natural = self.natural(&value);
        let mut pure = self.typed(value, Some(ty))?;
        if natural.is_some_and(|t| t != ty) {
            // The value is converted to the declared type.
            pure = Expr::cast(ty, pure);
        }
        let f = self.p.funcs.len();
        self.define(&name, sp, Name::Func(f))?;
        self.p.funcs.push(Func {
            name,
            vars: vars.into_iter().map(|v| v.0).collect(),
            ty,
            pure,
            updates: Vec::new(),
            place: Place(self.since(sp)),
        });
        Ok(())
    }

    fn update(&mut self, f: usize, sp: Span) -> PResult<()> {
        // The left-hand side may name reduction variables declared after it: read it as tokens
        // first, then again once the domain is known.
        let lhs_at = self.pos;
        let mut depth = 1usize;
        while depth > 0 {
            match self.tok() {
                Tok::Eof => return Err(self.err("expected `)`".into())),
                Tok::Punct("(") => depth += 1,
                Tok::Punct(")") => depth -= 1,
                _ => {}
            }
            self.bump();
        }
        let accumulate = if self.eat("+=") {
            true
        } else {
            self.expect("=")?;
            false
        };
        let value_at = self.pos;
        // Skip the value to find the domain and predicate.
        let mut depth = 0usize;
        while !(depth == 0 && (self.is(";") || self.is("for") || self.is("where"))) {
            match self.tok() {
                Tok::Eof => return Err(self.err("expected `;`".into())),
                Tok::Punct("(") => depth += 1,
                Tok::Punct(")") => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.bump();
        }
        let value_end = self.pos;
        let saved = self.names.clone();
        let fvars = self.p.funcs[f].vars.clone();
        for (k, v) in fvars.iter().enumerate() {
            self.names.insert(v.clone(), Name::Var(k));
        }
        let mut rdom = Vec::new();
        if self.eat("for") {
            loop {
                let (r, rsp) = self.name()?;
                self.expect("in")?;
                let lo_at = self.span();
                let lo = self.expr()?;
                self.expect("..")?;
                let hi_at = self.span();
                let hi = self.expr()?;
                for (e, at) in [(&lo, lo_at), (&hi, hi_at)] {
                    if let Some(t) = self.natural(e).filter(|t| *t != COORD) {
                        return Err(Diagnostic::new(
                            "types",
                            at,
                            format!("a reduction bound has type {t}; bounds are {COORD}"),
                        ));
                    }
                }
                let lo = self.typed(lo, Some(COORD))?;
                let hi = self.typed(hi, Some(COORD))?;
                if rdom.iter().any(|d: &RDim| d.name == r) {
                    return Err(Diagnostic::new(
                        "pipeline",
                        rsp,
                        format!("two reduction variables named `{r}`"),
                    ));
                }
                self.names.insert(r.clone(), Name::RVar(rdom.len()));
                rdom.push(RDim {
                    name: r,
                    extent: Expr::binary(BinOp::Sub, hi, lo.clone()),
                    min: lo,
                });
                if !self.eat(",") {
                    break;
                }
            }
        }
        let mut wheres = Vec::new();
        while self.eat("where") {
            let c = self.expr()?;
            wheres.push(self.typed(c, Some(DType::Bool))?);
        }
        self.expect(";")?;
        let after = self.pos;
        // Now the left-hand side and the value, with every name in scope.
        self.pos = lhs_at;
        let mut lhs = Vec::new();
        while !self.is(")") {
            let e = self.expr()?;
            lhs.push(self.typed(e, Some(COORD))?);
            if !self.eat(",") {
                break;
            }
        }
        self.pos = value_at;
        let v = self.expr()?;
        if self.pos != value_end {
            return Err(self.err("unexpected text after the value".into()));
        }
        let ty = self.p.funcs[f].ty;
        let natural = self.natural(&v);
        let mut value = self.typed(v, Some(ty))?;
        if natural.is_some_and(|t| t != ty) {
            value = Expr::cast(ty, value);
        }
        if accumulate {
            value = Expr::binary(BinOp::Add, Expr::call(f, lhs.clone()), value);
        }
        self.pos = after;
        self.names = saved;
        let place = Place(self.since(sp));
        self.p.funcs[f].updates.push(Update {
            rdom,
            wheres,
            lhs,
            value,
            place,
        });
        Ok(())
    }

    /// `g = repeat_edge(input);`, `constant_exterior(input, v)`, `mirror(input)`.
    fn boundary(&mut self, name: String, sp: Span) -> PResult<()> {
        let (kind, ksp) = self.name()?;
        self.expect("(")?;
        let (inp, isp) = self.name()?;
        let Some(Name::Input(k)) = self.names.get(&inp).copied() else {
            return Err(Diagnostic::new(
                "pipeline",
                isp,
                format!("`{inp}` is not an input of the pipeline"),
            ));
        };
        let input = self.p.inputs[k].clone();
        let exterior = if kind == "constant_exterior" {
            self.expect(",")?;
            let v = self.expr()?;
            Some(self.typed(v, Some(input.elem))?)
        } else {
            None
        };
        self.expect(")")?;
        self.expect(";")?;
        let dim = |d: usize, extent: bool| Expr::InputDim {
            input: k,
            dim: d,
            extent,
        };
        let last = |d: usize| {
            Expr::binary(
                BinOp::Sub,
                Expr::binary(BinOp::Add, dim(d, false), dim(d, true)),
                Expr::int(1),
            )
        };
        let clamp = |e: Expr, d: usize| {
            Expr::binary(
                BinOp::Min,
                Expr::binary(BinOp::Max, e, dim(d, false)),
                last(d),
            )
        };
        let vars: Vec<String> = (0..input.rank)
            .map(|d| {
                ["x", "y", "z", "w"]
                    .get(d)
                    .map_or(format!("v{d}"), |s| s.to_string())
            })
            .collect();
        let pure = match kind.as_str() {
            "repeat_edge" => {
                Expr::input(k, (0..input.rank).map(|d| clamp(Expr::Var(d), d)).collect())
            }
            "constant_exterior" => {
                let inside = (0..input.rank)
                    .map(|d| {
                        Expr::binary(
                            BinOp::And,
                            Expr::binary(BinOp::Le, dim(d, false), Expr::Var(d)),
                            Expr::binary(BinOp::Le, Expr::Var(d), last(d)),
                        )
                    })
                    .reduce(|a, b| Expr::binary(BinOp::And, a, b))
                    .unwrap_or(Expr::Lit(Scalar::Bool(true)));
                let read =
                    Expr::input(k, (0..input.rank).map(|d| clamp(Expr::Var(d), d)).collect());
                Expr::select(inside, read, exterior.unwrap_or(Expr::int(0)))
            }
            "mirror" => {
                // Reflection about each edge, the edge point repeated (Halide's `mirror_image`:
                // min - 1 reads min, max + 1 reads max), for points within one extent of the
                // input; farther out the edge repeats (a periodic reflection would take a
                // remainder by the extent, which quasi-affine control arithmetic cannot).
                let coord = |d: usize| {
                    let v = Expr::Var(d);
                    let lo = dim(d, false);
                    let below = Expr::binary(
                        BinOp::Sub,
                        Expr::binary(
                            BinOp::Sub,
                            Expr::binary(BinOp::Mul, lo.clone(), Expr::int(2)),
                            Expr::int(1),
                        ),
                        v.clone(),
                    );
                    let above = Expr::binary(
                        BinOp::Sub,
                        Expr::binary(
                            BinOp::Add,
                            Expr::binary(BinOp::Mul, last(d), Expr::int(2)),
                            Expr::int(1),
                        ),
                        v.clone(),
                    );
                    let r = Expr::select(
                        Expr::binary(BinOp::Lt, v.clone(), lo),
                        below,
                        Expr::select(Expr::binary(BinOp::Gt, v.clone(), last(d)), above, v),
                    );
                    clamp(r, d)
                };
                Expr::input(k, (0..input.rank).map(coord).collect())
            }
            _ => {
                return Err(Diagnostic::new(
                    "syntax",
                    ksp,
                    format!(
                    "unknown boundary condition `{kind}` (repeat_edge, constant_exterior, mirror)"
                ),
                ))
            }
        };
        let f = self.p.funcs.len();
        self.define(&name, sp, Name::Func(f))?;
        self.p.funcs.push(Func {
            name,
            vars,
            ty: input.elem,
            pure,
            updates: Vec::new(),
            place: Place(self.since(sp)),
        });
        Ok(())
    }

    // ----- expressions -----

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(format!("nesting too deep (more than {MAX_DEPTH} levels)")));
        }
        Ok(())
    }

    fn expr(&mut self) -> PResult<PExpr> {
        self.enter()?;
        let r = self.or();
        self.depth -= 1;
        r
    }

    fn or(&mut self) -> PResult<PExpr> {
        let mut a = self.and()?;
        while self.eat("or") {
            let b = self.and()?;
            a = PExpr::Binary(BinOp::Or, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn and(&mut self) -> PResult<PExpr> {
        let mut a = self.not()?;
        while self.eat("and") {
            let b = self.not()?;
            a = PExpr::Binary(BinOp::And, Box::new(a), Box::new(b));
        }
        Ok(a)
    }

    fn not(&mut self) -> PResult<PExpr> {
        if self.eat("not") {
            self.enter()?;
            let a = self.not();
            self.depth -= 1;
            return Ok(PExpr::Unary(UnOp::Not, Box::new(a?)));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> PResult<PExpr> {
        let a = self.sum()?;
        for (p, op) in [
            ("==", BinOp::Eq),
            ("!=", BinOp::Ne),
            ("<=", BinOp::Le),
            (">=", BinOp::Ge),
            ("<", BinOp::Lt),
            (">", BinOp::Gt),
        ] {
            if self.eat(p) {
                let b = self.sum()?;
                return Ok(PExpr::Binary(op, Box::new(a), Box::new(b)));
            }
        }
        Ok(a)
    }

    fn sum(&mut self) -> PResult<PExpr> {
        let mut a = self.product()?;
        loop {
            let op = if self.eat("+") {
                BinOp::Add
            } else if self.is("-")
                && !matches!(
                    self.toks.get(self.pos + 1).map(|t| &t.tok),
                    Some(Tok::Punct(">"))
                )
            {
                self.bump();
                BinOp::Sub
            } else {
                return Ok(a);
            };
            let b = self.product()?;
            a = PExpr::Binary(op, Box::new(a), Box::new(b));
        }
    }

    fn product(&mut self) -> PResult<PExpr> {
        let mut a = self.unary()?;
        loop {
            let op = if self.eat("*") {
                BinOp::Mul
            } else if self.eat("/") {
                BinOp::Div
            } else if self.eat("%") {
                BinOp::Mod
            } else {
                return Ok(a);
            };
            let b = self.unary()?;
            a = PExpr::Binary(op, Box::new(a), Box::new(b));
        }
    }

    fn unary(&mut self) -> PResult<PExpr> {
        if self.eat("-") {
            self.enter()?;
            let a = self.unary();
            self.depth -= 1;
            return Ok(match a? {
                PExpr::Float(v, sp) => PExpr::Float(-v, sp),
                a => PExpr::Unary(UnOp::Neg, Box::new(a)),
            });
        }
        self.atom()
    }

    fn args(&mut self) -> PResult<Vec<PExpr>> {
        self.expect("(")?;
        let mut out = Vec::new();
        while !self.is(")") {
            out.push(self.expr()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        Ok(out)
    }

    fn atom(&mut self) -> PResult<PExpr> {
        let sp = self.span();
        match self.tok().clone() {
            Tok::Int(v) => {
                self.bump();
                Ok(PExpr::Int(v, sp))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(PExpr::Float(v, sp))
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident(s) if s == "true" || s == "false" => {
                self.bump();
                Ok(PExpr::Bool(s == "true"))
            }
            Tok::Ident(s) => {
                self.bump();
                self.named(&s, sp)
            }
            t => Err(self.err(format!("expected an expression, found {}", t.describe()))),
        }
    }

    /// `.min(d)` or `.extent(d)`: `d`, which, and where the name is.
    fn dim_query(&mut self) -> PResult<(i64, String, Span)> {
        self.expect(".")?;
        let (m, msp) = self.name()?;
        if m != "min" && m != "extent" {
            return Err(Diagnostic::new(
                "syntax",
                msp,
                format!("expected `min` or `extent`, found `{m}`"),
            ));
        }
        self.expect("(")?;
        let d = self.int()?;
        self.expect(")")?;
        Ok((d, m, msp))
    }

    fn named(&mut self, s: &str, sp: Span) -> PResult<PExpr> {
        let arity = |this: &Self, args: &[PExpr], n: usize| -> PResult<()> {
            if args.len() != n {
                return Err(Diagnostic::new(
                    "syntax",
                    sp,
                    format!("`{s}` takes {n} arguments, given {}", args.len()),
                ));
            }
            let _ = this;
            Ok(())
        };
        if let Some(n) = self.names.get(s).copied() {
            return match n {
                Name::Var(k) => Ok(PExpr::Typed(Expr::Var(k), COORD)),
                Name::RVar(k) => Ok(PExpr::Typed(Expr::RVar(k), COORD)),
                Name::Param(k) => Ok(PExpr::Typed(Expr::Param(k), self.p.params[k].ty)),
                Name::Func(f) if self.windows => {
                    // `out.min(d)`, `out.extent(d)` of an output's window
                    let (d, m, msp) = self.dim_query()?;
                    let output = self.p.outputs.iter().position(|&o| o == f);
                    let rank = self.p.funcs[f].vars.len();
                    match (output, usize::try_from(d).ok().filter(|d| *d < rank)) {
                        (Some(output), Some(dim)) => Ok(PExpr::Typed(
                            Expr::OutputDim {
                                output,
                                dim,
                                extent: m == "extent",
                            },
                            COORD,
                        )),
                        _ => Err(Diagnostic::new(
                            "syntax",
                            msp,
                            format!("`{s}.{m}({d})`: a condition may use `.min(d)` and `.extent(d)` of an output's window, for d below its rank"),
                        )),
                    }
                }
                Name::Func(f) => {
                    let args = self.args()?;
                    arity(self, &args, self.p.funcs[f].vars.len())?;
                    Ok(PExpr::Call(Callee::Func(f), args, self.p.funcs[f].ty))
                }
                Name::Input(k) => {
                    if self.is(".") {
                        // `input.min(d)`, `input.extent(d)`
                        let (d, m, msp) = self.dim_query()?;
                        let rank = self.p.inputs[k].rank;
                        let Some(dim) = usize::try_from(d).ok().filter(|d| *d < rank) else {
                            return Err(Diagnostic::new(
                                "syntax",
                                msp,
                                format!("`{s}.{m}({d})`: an input has `.min(d)` and `.extent(d)` for d below its rank"),
                            ));
                        };
                        return Ok(PExpr::Typed(
                            Expr::InputDim {
                                input: k,
                                dim,
                                extent: m == "extent",
                            },
                            COORD,
                        ));
                    }
                    let args = self.args()?;
                    arity(self, &args, self.p.inputs[k].rank)?;
                    Ok(PExpr::Call(Callee::Input(k), args, self.p.inputs[k].elem))
                }
            };
        }
        let bx = Box::new;
        match s {
            "select" => {
                let mut a = self.args()?;
                arity(self, &a, 3)?;
                let (c, x, y) = (a.remove(0), a.remove(0), a.remove(0));
                Ok(PExpr::Select(bx(c), bx(x), bx(y)))
            }
            "min" | "max" => {
                let mut a = self.args()?;
                arity(self, &a, 2)?;
                let op = if s == "min" { BinOp::Min } else { BinOp::Max };
                let (x, y) = (a.remove(0), a.remove(0));
                Ok(PExpr::Binary(op, bx(x), bx(y)))
            }
            "clamp" => {
                let mut a = self.args()?;
                arity(self, &a, 3)?;
                let (x, lo, hi) = (a.remove(0), a.remove(0), a.remove(0));
                Ok(PExpr::Binary(
                    BinOp::Min,
                    bx(PExpr::Binary(BinOp::Max, bx(x), bx(lo))),
                    bx(hi),
                ))
            }
            "lerp" => {
                // Halide's `lerp` of floats: `a * (1 - t) + b * t`.
                let mut a = self.args()?;
                arity(self, &a, 3)?;
                let (mut x, y, t) = (a.remove(0), a.remove(0), a.remove(0));
                match [&x, &y, &t].iter().find_map(|e| self.natural(e)) {
                    Some(ty) if !ty.is_float() => {
                        return Err(Diagnostic::new(
                            "syntax",
                            sp,
                            format!("`lerp` takes floats, not {ty} (Halide's integer lerp, which scales the weight, is not supported): convert the operands"),
                        ));
                    }
                    Some(_) => {}
                    // Literals only: a float lerp in f32 (like a float literal alone), converted
                    // where it is used, never an integer lerp in the func's type.
                    None => x = PExpr::Cast(DType::F32, false, bx(x)),
                }
                let one = PExpr::Float(1.0, sp);
                let rest = PExpr::Binary(BinOp::Sub, bx(one), bx(t.clone()));
                Ok(PExpr::Binary(
                    BinOp::Add,
                    bx(PExpr::Binary(BinOp::Mul, bx(x), bx(rest))),
                    bx(PExpr::Binary(BinOp::Mul, bx(y), bx(t))),
                ))
            }
            "abs" => {
                let mut a = self.args()?;
                arity(self, &a, 1)?;
                Ok(PExpr::Math(MathFn::Abs, vec![a.remove(0)]))
            }
            _ => {
                if let Some(m) = math(s) {
                    let a = self.args()?;
                    arity(self, &a, m.arity())?;
                    return Ok(PExpr::Math(m, a));
                }
                let (base, sat) = match s.strip_suffix("_sat") {
                    Some(b) => (b, true),
                    None => (s, false),
                };
                if let Some(t) = dtype(base) {
                    let mut a = self.args()?;
                    arity(self, &a, 1)?;
                    return Ok(PExpr::Cast(t, sat, bx(a.remove(0))));
                }
                Err(Diagnostic::new(
                    "unknown-name",
                    sp,
                    format!("unknown name `{s}` in pipeline `{}`", self.p.name),
                ))
            }
        }
    }

    // ----- typing -----

    /// The natural type of an expression, when it has one without context.
    fn natural(&self, e: &PExpr) -> Option<DType> {
        match e {
            PExpr::Int(..) | PExpr::Float(..) => None,
            PExpr::Bool(_) => Some(DType::Bool),
            PExpr::Typed(_, t) | PExpr::Call(_, _, t) | PExpr::Cast(t, ..) => Some(*t),
            PExpr::Unary(UnOp::Not, _) => Some(DType::Bool),
            PExpr::Unary(_, a) => self.natural(a),
            PExpr::Binary(op, a, b) => {
                if op.is_comparison() || op.is_logic() {
                    Some(DType::Bool)
                } else {
                    self.natural(a).or_else(|| self.natural(b))
                }
            }
            PExpr::Select(_, a, b) => self.natural(a).or_else(|| self.natural(b)),
            PExpr::Math(_, a) => a.iter().find_map(|x| self.natural(x)).map(|t| {
                if t.is_float() {
                    t
                } else {
                    DType::F32
                }
            }),
        }
    }

    /// Type `e`, literals taking `want` (or their partner's type).
    fn typed(&self, e: PExpr, want: Option<DType>) -> PResult<Expr> {
        Ok(match e {
            PExpr::Int(v, sp) => {
                let t = want.filter(|t| *t != DType::Bool).unwrap_or(COORD);
                if t.is_float() {
                    Expr::Lit(Scalar::F64(v as f64).cast(t))
                } else {
                    match int_range(t) {
                        Some((_, hi)) if (v as i128) <= hi => {
                            Expr::Lit(Scalar::from_int_wrapping(v as i128, t))
                        }
                        _ => {
                            return Err(Diagnostic::new(
                                "syntax",
                                sp,
                                format!("the literal {v} does not fit {t}"),
                            ))
                        }
                    }
                }
            }
            PExpr::Float(v, sp) => match want {
                Some(DType::F64) => Expr::Lit(Scalar::F64(v)),
                None | Some(DType::F32) => Expr::Lit(Scalar::F32(v as f32)),
                Some(t) => {
                    return Err(Diagnostic::new(
                        "syntax",
                        sp,
                        format!("the float literal {v} cannot be {t}"),
                    ))
                }
            },
            PExpr::Bool(b) => Expr::Lit(Scalar::Bool(b)),
            PExpr::Typed(e, _) => e,
            PExpr::Unary(op, a) => {
                let w = if op == UnOp::Not {
                    Some(DType::Bool)
                } else {
                    want
                };
                Expr::Unary(op, Box::new(self.typed(*a, w)?))
            }
            PExpr::Binary(op, a, b) => {
                let operand = if op.is_logic() {
                    Some(DType::Bool)
                } else if op.is_comparison() {
                    self.natural(&a)
                        .or_else(|| self.natural(&b))
                        .or(Some(COORD))
                } else {
                    self.natural(&a).or_else(|| self.natural(&b)).or(want)
                };
                Expr::binary(op, self.typed(*a, operand)?, self.typed(*b, operand)?)
            }
            PExpr::Select(c, a, b) => {
                let t = self.natural(&a).or_else(|| self.natural(&b)).or(want);
                Expr::select(
                    self.typed(*c, Some(DType::Bool))?,
                    self.typed(*a, t)?,
                    self.typed(*b, t)?,
                )
            }
            PExpr::Call(c, args, _) => Expr::Call(
                c,
                args.into_iter()
                    .map(|a| self.typed(a, Some(COORD)))
                    .collect::<PResult<_>>()?,
            ),
            PExpr::Cast(t, sat, a) => {
                let from = self
                    .natural(&a)
                    .unwrap_or(if matches!(*a, PExpr::Float(..)) {
                        DType::F32
                    } else {
                        COORD
                    });
                let x = self.typed(*a, Some(from))?;
                if !sat || from == t {
                    return Ok(Expr::cast_to(t, x));
                }
                // Saturating: clamp to the target's range in the source type, where it fits.
                let (lo, hi) = int_range(t).unwrap_or((i64::MIN as i128, i64::MAX as i128));
                let bound = |v: i128| -> Option<Expr> {
                    if from.is_float() {
                        Some(Expr::Lit(Scalar::F64(v as f64).cast(from)))
                    } else {
                        let (flo, fhi) = int_range(from)?;
                        (flo < v && v < fhi).then(|| Expr::Lit(Scalar::from_int_wrapping(v, from)))
                    }
                };
                let mut y = x;
                if let Some(l) = bound(lo) {
                    y = Expr::binary(BinOp::Max, y, l);
                }
                if let Some(h) = bound(hi) {
                    y = Expr::binary(BinOp::Min, y, h);
                }
                Expr::cast(t, y)
            }
            PExpr::Math(MathFn::Abs, mut args)
                if args.len() == 1 && self.natural(&args[0]).is_none_or(|t| !t.is_float()) =>
            {
                // An integer's absolute value (wrapping at the type's minimum, as negation does).
                let a = self.typed(args.remove(0), want.filter(|t| !t.is_float()))?;
                Expr::select(
                    Expr::binary(
                        BinOp::Lt,
                        a.clone(),
                        Expr::Lit(Scalar::I64(0).cast(self.lit_type(&a))),
                    ),
                    Expr::Unary(UnOp::Neg, Box::new(a.clone())),
                    a,
                )
            }
            PExpr::Math(m, args) => {
                let t = args
                    .iter()
                    .find_map(|x| self.natural(x))
                    .filter(|t| m == MathFn::Abs || t.is_float())
                    .unwrap_or(if m == MathFn::Abs { COORD } else { DType::F32 });
                let t = if m != MathFn::Abs && !t.is_float() {
                    DType::F32
                } else {
                    t
                };
                Expr::Math(
                    m,
                    args.into_iter()
                        .map(|a| {
                            let n = self.natural(&a);
                            let x = self.typed(a, Some(t))?;
                            // Integers become floats, as in Halide; floats of another
                            // width are left for validation to reject.
                            Ok(match n {
                                Some(nt) if nt != t && !nt.is_float() => Expr::cast(t, x),
                                _ => x,
                            })
                        })
                        .collect::<PResult<_>>()?,
                )
            }
        })
    }
}

impl Parser {
    /// The type of a typed expression, as far as literals need it (the type of a leaf).
    fn lit_type(&self, e: &Expr) -> DType {
        match e {
            Expr::Lit(s) => s.dtype(),
            Expr::Var(_) | Expr::RVar(_) | Expr::InputDim { .. } | Expr::OutputDim { .. } => COORD,
            Expr::Param(k) => self.p.params[*k].ty,
            Expr::Call(Callee::Func(f), _) => self.p.funcs[*f].ty,
            Expr::Call(Callee::Input(k), _) => self.p.inputs[*k].elem,
            Expr::Cast(t, _) => *t,
            Expr::Math(_, args) => args.first().map_or(DType::F32, |a| self.lit_type(a)),
            Expr::Binary(op, a, _) if !op.is_comparison() && !op.is_logic() => self.lit_type(a),
            Expr::Binary(..) => DType::Bool,
            Expr::Select(_, a, _) => self.lit_type(a),
            Expr::Unary(_, a) => self.lit_type(a),
        }
    }
}

impl Expr {
    /// `e` as type `t` (a cast only when it is not already a `t` literal).
    pub fn cast_to(t: DType, e: Expr) -> Expr {
        match &e {
            Expr::Lit(s) if s.dtype() == t => e,
            _ => Expr::cast(t, e),
        }
    }
}
