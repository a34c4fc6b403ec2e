//! Validity of an algorithm (the formalisation's Def. 4.5, `halide-formal-semantics.md` §1):
//! unique names, define-before-use, startup expressions for reduction bounds, syntactic
//! separation of update stages, arities and types. A valid pipeline's interpretation terminates
//! (Lemma 4.6) and every directive's legality is stated against it.

use crate::ast::{Callee, Expr, Func, Pipeline, Update, COORD};
use std::collections::HashSet;
use weft_ir::{BinOp, DType, Diagnostic, Span, UnOp};

/// Where an expression stands, for the checks that depend on it.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    func: usize,
    /// `None` in the pure definition.
    update: Option<&'a Update>,
    /// In a reduction bound (a startup expression).
    startup: bool,
}

/// Every violation of the validity rules, each naming the func and stage.
pub fn validate(p: &Pipeline) -> Result<(), Vec<Diagnostic>> {
    let mut v = Validator {
        p,
        errs: Vec::new(),
        place: Span::DUMMY,
    };
    v.pipeline();
    if v.errs.is_empty() {
        Ok(())
    } else {
        Err(v.errs)
    }
}

struct Validator<'a> {
    p: &'a Pipeline,
    errs: Vec<Diagnostic>,
    /// The statement being checked (its source text, where it has one).
    place: Span,
}

impl Validator<'_> {
    /// A violation of `rule` in the statement being checked.
    fn err(&mut self, rule: &'static str, message: String) {
        self.errs.push(Diagnostic::new(rule, self.place, message));
    }

    fn pipeline(&mut self) {
        let p = self.p;
        let mut names = HashSet::new();
        let all = p
            .params
            .iter()
            .map(|x| (&x.name, Span::DUMMY))
            .chain(p.inputs.iter().map(|x| (&x.name, Span::DUMMY)))
            .chain(p.funcs.iter().map(|x| (&x.name, x.place.0)));
        for (name, place) in all {
            self.place = place;
            if !names.insert(name.as_str()) {
                self.err(
                    "unique-names",
                    format!("the name `{name}` is defined twice"),
                );
            }
        }
        self.place = Span::DUMMY;
        if p.outputs.is_empty() {
            self.err("outputs", format!("pipeline `{}` has no output", p.name));
        }
        for &o in &p.outputs {
            if o >= p.funcs.len() {
                self.err(
                    "outputs",
                    format!("output {o} is not a func of the pipeline"),
                );
            }
        }
        for (k, f) in p.funcs.iter().enumerate() {
            self.func(k, f);
        }
    }

    fn func(&mut self, k: usize, f: &Func) {
        self.place = f.place.0;
        let mut vars = HashSet::new();
        for x in &f.vars {
            if !vars.insert(x) {
                self.err(
                    "unique-names",
                    format!("`{}` has two pure variables named `{x}`", f.name),
                );
            }
        }
        let pure = Ctx {
            func: k,
            update: None,
            startup: false,
        };
        self.typed(&f.pure, pure, f.ty, "its pure definition");
        for (j, u) in f.updates.iter().enumerate() {
            self.place = u.place.0;
            let what = format!("update {}", j + 1);
            let mut rvars = HashSet::new();
            for r in &u.rdom {
                if !rvars.insert(&r.name) {
                    self.err(
                        "unique-names",
                        format!(
                            "{what} of `{}` has two reduction variables named `{}`",
                            f.name, r.name
                        ),
                    );
                }
                let startup = Ctx {
                    func: k,
                    update: Some(u),
                    startup: true,
                };
                self.typed(
                    &r.min,
                    startup,
                    COORD,
                    &format!("a reduction bound of {what}"),
                );
                self.typed(
                    &r.extent,
                    startup,
                    COORD,
                    &format!("a reduction bound of {what}"),
                );
            }
            let ctx = Ctx {
                func: k,
                update: Some(u),
                startup: false,
            };
            if u.lhs.len() != f.vars.len() {
                self.err(
                    "arity",
                    format!(
                        "{what} of `{}` writes {} coordinates; it has {} dimensions",
                        f.name,
                        u.lhs.len(),
                        f.vars.len()
                    ),
                );
            }
            for e in &u.lhs {
                self.coordinate(e, ctx, &what);
            }
            for w in &u.wheres {
                self.typed(w, ctx, DType::Bool, &format!("a predicate of {what}"));
            }
            self.typed(&u.value, ctx, f.ty, &format!("the value of {what}"));
            self.separation(k, f, u, &what);
        }
    }

    /// Def. 4.2: a pure variable used anywhere in an update stage is that dimension's coordinate,
    /// exactly, on the left-hand side and in every read of the func itself.
    fn separation(&mut self, k: usize, f: &Func, u: &Update, what: &str) {
        let mut used = HashSet::new();
        let mut note = |e: &Expr| {
            e.walk(&mut |x| {
                if let Expr::Var(i) = x {
                    used.insert(*i);
                }
            })
        };
        u.lhs.iter().for_each(&mut note);
        u.wheres.iter().for_each(&mut note);
        note(&u.value);
        let mut self_reads: Vec<&Vec<Expr>> = Vec::new();
        for e in u
            .lhs
            .iter()
            .chain(&u.wheres)
            .chain(std::iter::once(&u.value))
        {
            e.walk(&mut |x| {
                if let Expr::Call(Callee::Func(g), args) = x {
                    if *g == k {
                        self_reads.push(args);
                    }
                }
            });
        }
        for &i in &used {
            let name = f.vars.get(i).map_or("?", String::as_str);
            if u.lhs.get(i) != Some(&Expr::Var(i)) {
                self.err("syntactic-separation", format!(
                    "{what} of `{}` uses the pure variable `{name}`, so its coordinate {} must be `{name}` itself (syntactic separation)",
                    f.name,
                    i + 1
                ));
            }
            for args in &self_reads {
                if args.get(i) != Some(&Expr::Var(i)) {
                    self.err("syntactic-separation", format!(
                        "{what} of `{}` uses the pure variable `{name}`, so coordinate {} of its reads of `{}` must be `{name}` itself (syntactic separation)",
                        f.name,
                        i + 1,
                        f.name
                    ));
                }
            }
        }
    }

    fn coordinate(&mut self, e: &Expr, ctx: Ctx, what: &str) {
        if let Some(t) = self.ty(e, ctx) {
            if !t.is_int() {
                self.err(
                    "types",
                    format!(
                        "a coordinate in {what} of `{}` has type {t}, not an integer type",
                        self.p.funcs[ctx.func].name
                    ),
                );
            }
        }
    }

    fn typed(&mut self, e: &Expr, ctx: Ctx, want: DType, what: &str) {
        if let Some(t) = self.ty(e, ctx) {
            if t != want {
                self.err(
                    "types",
                    format!(
                        "{what} of `{}` has type {t}; {want} is expected",
                        self.p.funcs[ctx.func].name
                    ),
                );
            }
        }
    }

    /// The type of `e`, after reporting what is wrong in it (`None` when it has no type).
    fn ty(&mut self, e: &Expr, ctx: Ctx) -> Option<DType> {
        let f = &self.p.funcs[ctx.func];
        let fname = f.name.clone();
        match e {
            Expr::Lit(v) => Some(v.dtype()),
            Expr::Param(k) => match self.p.params.get(*k) {
                Some(q) => Some(q.ty),
                None => {
                    self.err(
                        "unknown-name",
                        format!("`{fname}` reads parameter {k}, which does not exist"),
                    );
                    None
                }
            },
            Expr::InputDim { input, dim, .. } => match self.p.inputs.get(*input) {
                Some(i) if *dim < i.rank => Some(COORD),
                _ => {
                    self.err("unknown-name", format!(
                        "`{fname}` reads the bounds of dimension {dim} of input {input}, which does not exist"
                    ));
                    None
                }
            },
            Expr::OutputDim { .. } => {
                self.err("startup-expression", format!(
                    "`{fname}` reads the window of an output, which only a schedule's `specialize` condition may"
                ));
                None
            }
            Expr::Var(k) | Expr::RVar(k) if ctx.startup => {
                let _ = k;
                self.err("startup-expression", format!(
                    "a reduction bound of `{fname}` uses a variable; it must be a startup expression (literals and parameters)"
                ));
                None
            }
            Expr::Var(k) => {
                if *k >= f.vars.len() {
                    self.err(
                        "unknown-name",
                        format!("`{fname}` has no pure variable {k}"),
                    );
                    return None;
                }
                Some(COORD)
            }
            Expr::RVar(k) => {
                let n = ctx.update.map_or(0, |u| u.rdom.len());
                if *k >= n {
                    self.err(
                        "unknown-name",
                        format!("`{fname}` uses reduction variable {k} where its stage has {n}"),
                    );
                    return None;
                }
                Some(COORD)
            }
            Expr::Call(callee, args) => {
                if ctx.startup {
                    self.err("startup-expression", format!(
                        "a reduction bound of `{fname}` reads a func or input; it must be a startup expression (literals and parameters)"
                    ));
                }
                for a in args {
                    self.coordinate(a, ctx, "a call");
                }
                let (name, rank, ty) = match callee {
                    Callee::Input(k) => match self.p.inputs.get(*k) {
                        Some(i) => (i.name.clone(), i.rank, i.elem),
                        None => {
                            self.err(
                                "unknown-name",
                                format!("`{fname}` reads input {k}, which does not exist"),
                            );
                            return None;
                        }
                    },
                    Callee::Func(g) => {
                        let Some(h) = self.p.funcs.get(*g) else {
                            self.err(
                                "unknown-name",
                                format!("`{fname}` calls func {g}, which does not exist"),
                            );
                            return None;
                        };
                        if *g > ctx.func || (*g == ctx.func && ctx.update.is_none()) {
                            let why = if *g == ctx.func {
                                "a pure definition cannot read its own func"
                            } else {
                                "a func reads only funcs defined before it"
                            };
                            self.err(
                                "define-before-use",
                                format!("`{fname}` reads `{}`: {why}", h.name),
                            );
                        }
                        (h.name.clone(), h.vars.len(), h.ty)
                    }
                };
                if args.len() != rank {
                    self.err(
                        "arity",
                        format!(
                        "`{fname}` reads `{name}` with {} coordinates; it has {rank} dimensions",
                        args.len()
                    ),
                    );
                }
                Some(ty)
            }
            Expr::Unary(op, a) => {
                let t = self.ty(a, ctx)?;
                let ok = match op {
                    UnOp::Not => t == DType::Bool,
                    UnOp::Neg => t != DType::Bool,
                };
                if !ok {
                    let sym = if *op == UnOp::Not { "not" } else { "-" };
                    self.err("types", format!("`{fname}` applies `{sym}` to a {t}"));
                }
                Some(t)
            }
            Expr::Binary(op, a, b) => {
                let (ta, tb) = (self.ty(a, ctx)?, self.ty(b, ctx)?);
                if ta != tb {
                    self.err(
                        "types",
                        format!(
                            "`{fname}` applies `{}` to a {ta} and a {tb} (cast one of them)",
                            op.symbol()
                        ),
                    );
                    return None;
                }
                let logic = matches!(op, BinOp::And | BinOp::Or);
                if logic != (ta == DType::Bool) && !op.is_comparison() {
                    self.err(
                        "types",
                        format!("`{fname}` applies `{}` to {ta} values", op.symbol()),
                    );
                }
                Some(if op.is_comparison() { DType::Bool } else { ta })
            }
            Expr::Select(c, a, b) => {
                let tc = self.ty(c, ctx);
                if tc.is_some_and(|t| t != DType::Bool) {
                    self.err(
                        "types",
                        format!("the condition of a select in `{fname}` is not a bool"),
                    );
                }
                let (ta, tb) = (self.ty(a, ctx)?, self.ty(b, ctx)?);
                if ta != tb {
                    self.err(
                        "types",
                        format!("the branches of a select in `{fname}` have types {ta} and {tb}"),
                    );
                    return None;
                }
                Some(ta)
            }
            Expr::Cast(to, a) => {
                self.ty(a, ctx)?;
                Some(*to)
            }
            Expr::Math(m, args) => {
                let (mut first, mut mixed) = (None, false);
                for a in args {
                    let t = self.ty(a, ctx)?;
                    if !t.is_float() {
                        self.err(
                            "types",
                            format!("`{fname}` applies `{}` to a {t}", m.name()),
                        );
                    }
                    match first {
                        Some(f) if f != t && !mixed => {
                            mixed = true;
                            self.err(
                                "types",
                                format!(
                                    "`{fname}` applies `{}` to a {f} and a {t} (cast one of them)",
                                    m.name()
                                ),
                            )
                        }
                        Some(_) => {}
                        None => first = Some(t),
                    }
                }
                if args.len() != m.arity() {
                    self.err(
                        "arity",
                        format!(
                            "`{}` takes {} arguments, given {}",
                            m.name(),
                            m.arity(),
                            args.len()
                        ),
                    );
                }
                first
            }
        }
    }
}
