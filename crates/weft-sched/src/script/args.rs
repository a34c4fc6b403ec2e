//! Reading a step's arguments: the parser has read them by their kinds (`weft_ir::primitives`);
//! here statements are found, and the names in expressions and regions, placeholders until now,
//! are resolved in the scope of the step's statement in the proc as it stands.

use crate::error::SchedError;
use crate::path::{self, Path};
use crate::schedule::{Cursor, Schedule};
use std::collections::HashMap;
use std::sync::Arc;
use weft_ir::primitives::{ParamKind, Primitive};
use weft_ir::{
    ArgKind, Config, CtrlType, DType, Expr, ExprKind, Proc, SchedArg, SchedStep, SchedValue,
    StmtKind, Sym, Ty, WinCoord,
};

/// A step's arguments, read against its primitive's signature.
pub(super) struct Args<'a> {
    pub step: &'a SchedStep,
    pub prim: &'static Primitive,
}

impl<'a> Args<'a> {
    /// The step's arguments, when their number fits the signature.
    pub fn new(step: &'a SchedStep, prim: &'static Primitive) -> Result<Args<'a>, SchedError> {
        if !prim.accepts(step.args.len()) {
            return Err(arg_error(step, None, prim.arity_message(step.args.len())));
        }
        Ok(Args { step, prim })
    }

    pub fn error(&self, k: usize, message: String) -> SchedError {
        arg_error(self.step, self.step.args.get(k), message)
    }

    /// Whether the optional argument `k` was given.
    pub fn has(&self, k: usize) -> bool {
        k < self.step.args.len()
    }

    /// Argument `k`, which must be of a kind whose value is `expect`ed.
    fn get(&self, k: usize) -> Result<&'a SchedArg, SchedError> {
        self.step.args.get(k).ok_or_else(|| {
            arg_error(
                self.step,
                None,
                self.prim.arity_message(self.step.args.len()),
            )
        })
    }

    fn wrong(&self, k: usize) -> SchedError {
        let form = self
            .prim
            .param(k)
            .map_or("nothing".to_string(), |p| p.kind.form());
        let text = self.step.args.get(k).map_or("", |a| a.text.as_str());
        self.error(
            k,
            format!(
                "argument {} of `{}` must be {form}, found `{text}`",
                k + 1,
                self.prim.name
            ),
        )
    }

    /// A statement argument.
    pub fn stmt(&self, s: &Schedule, k: usize) -> Result<Cursor, SchedError> {
        match &self.get(k)?.value {
            SchedValue::Stmt(pattern) => s.find(pattern).map_err(|e| self.error(k, e.message)),
            _ => Err(self.wrong(k)),
        }
    }

    pub fn int(&self, k: usize) -> Result<i64, SchedError> {
        match &self.get(k)?.value {
            SchedValue::Int(v) => Ok(*v),
            _ => Err(self.wrong(k)),
        }
    }

    /// A name argument (new names are checked by the primitives, which know what is in use).
    pub fn name(&self, k: usize) -> Result<&'a str, SchedError> {
        match &self.get(k)?.value {
            SchedValue::Name(n) => Ok(n),
            _ => Err(self.wrong(k)),
        }
    }

    /// A config field: the config, the field's index and its type.
    pub fn config_field(&self, k: usize) -> Result<(Arc<Config>, usize, Ty), SchedError> {
        match &self.get(k)?.value {
            SchedValue::ConfigField { config, field } => match config.fields.get(*field) {
                Some(f) => Ok((config.clone(), *field, f.ty.ty())),
                None => Err(self.error(
                    k,
                    format!("config `{}` has no field number {field}", config.name),
                )),
            },
            _ => Err(self.wrong(k)),
        }
    }

    /// Every argument as a binding `NAME = value`.
    pub fn bindings(&self) -> Result<Vec<(&'a str, i64)>, SchedError> {
        (0..self.step.args.len())
            .map(|k| match &self.step.args[k].value {
                SchedValue::Binding { name, value } => Ok((name.as_str(), *value)),
                _ => Err(self.wrong(k)),
            })
            .collect()
    }

    /// An expression argument, its names resolved at the statement `at`, checked to be of the
    /// parameter's kind: a control integer, a condition, a data expression, or (for `Value`) a
    /// value of type `value_ty`.
    pub fn expr(
        &self,
        s: &Schedule,
        at: &Cursor,
        k: usize,
        value_ty: Option<Ty>,
    ) -> Result<Expr, SchedError> {
        let SchedValue::Expr(e) = &self.get(k)?.value else {
            return Err(self.wrong(k));
        };
        let names = self.names_at(s, at, k)?;
        let e = names.resolve(e).map_err(|m| self.error(k, m))?;
        let kind = self.prim.param(k).map(|p| p.kind);
        let want = match (kind, value_ty) {
            (Some(ParamKind::IntExpr), _) => Want::Ctrl(Ty::Int),
            (Some(ParamKind::Cond), _) => Want::Ctrl(Ty::Bool),
            (Some(ParamKind::DataExpr), _) => Want::Data,
            (Some(ParamKind::Expr), _) => Want::Any,
            (_, Some(t @ (Ty::Int | Ty::Bool))) => Want::Ctrl(t),
            (_, Some(t)) => Want::Exactly(t),
            _ => Want::Data,
        };
        let e = match want {
            Want::Ctrl(t) | Want::Exactly(t) => e.coerce(t),
            Want::Data | Want::Any => e,
        };
        let text = &self.step.args[k].text;
        match want {
            Want::Ctrl(t) => {
                if let Some(r) = data_read(&e) {
                    return Err(self.error(
                        k,
                        format!("`{text}` is not a control expression: it reads `{r}`"),
                    ));
                }
                if e.ty != t {
                    return Err(self.error(
                        k,
                        format!("expected {}, found `{text}` of type {}", describe(t), e.ty),
                    ));
                }
            }
            Want::Exactly(t) if e.ty != t => {
                return Err(self.error(
                    k,
                    format!("expected a {t} value, found `{text}` of type {}", e.ty),
                ))
            }
            Want::Data if !matches!(e.ty, Ty::Data(_)) => {
                return Err(self.error(
                    k,
                    format!(
                        "expected a data expression, found `{text}` of type {}",
                        e.ty
                    ),
                ))
            }
            _ => {}
        }
        Ok(e)
    }

    /// A region argument `A[lo:hi, ...]`: the buffer's name and the resolved bounds.
    pub fn region(
        &self,
        s: &Schedule,
        at: &Cursor,
        k: usize,
    ) -> Result<(&'a str, Region), SchedError> {
        let SchedValue::Region { buf, dims } = &self.get(k)?.value else {
            return Err(self.wrong(k));
        };
        let names = self.names_at(s, at, k)?;
        let mut out = Vec::new();
        for (lo, hi) in dims {
            out.push((self.bound(&names, k, lo)?, self.bound(&names, k, hi)?));
        }
        Ok((buf, out))
    }

    /// A window argument `A[i, lo:hi, ...]`, resolved at the statement: the window expression,
    /// as a call passes it.
    pub fn window(&self, s: &Schedule, at: &Cursor, k: usize) -> Result<Expr, SchedError> {
        let SchedValue::Window { buf, coords } = &self.get(k)?.value else {
            return Err(self.wrong(k));
        };
        let names = self.names_at(s, at, k)?;
        let (sym, elem) = names
            .buf(buf)
            .cloned()
            .ok_or_else(|| self.error(k, format!("no buffer named `{buf}` is in scope here")))?;
        let mut out = Vec::new();
        for c in coords {
            out.push(match c {
                WinCoord::Point(e) => WinCoord::Point(self.bound(&names, k, e)?),
                WinCoord::Interval(lo, hi) => {
                    WinCoord::Interval(self.bound(&names, k, lo)?, self.bound(&names, k, hi)?)
                }
            });
        }
        Ok(Expr::window(&sym, elem, out).with_span(self.get(k)?.span))
    }

    /// A bound of a region or window: a control expression with its names resolved.
    fn bound(&self, names: &Names, k: usize, e: &Expr) -> Result<Expr, SchedError> {
        let r = names
            .resolve(e)
            .map_err(|m| self.error(k, m))?
            .coerce(Ty::Int);
        if let Some(x) = data_read(&r) {
            return Err(self.error(
                k,
                format!(
                    "the bounds of a region or window are control expressions; `{x}` reads data"
                ),
            ));
        }
        Ok(r)
    }

    fn names_at(&self, s: &Schedule, at: &Cursor, k: usize) -> Result<Names, SchedError> {
        let path = s
            .resolve(at)
            .ok_or_else(|| self.error(k, "the statement no longer exists".into()))?;
        Ok(Names::at(s.proc(), &path))
    }
}

/// Each dimension's bounds `lo..hi`.
type Region = Vec<(Expr, Expr)>;

enum Want {
    Ctrl(Ty),
    Exactly(Ty),
    Data,
    /// Any expression (one to find in a statement, data or control).
    Any,
}

fn describe(t: Ty) -> &'static str {
    match t {
        Ty::Bool => "a condition",
        _ => "a control integer expression",
    }
}

/// The first data read in `e`, printed.
fn data_read(e: &Expr) -> Option<String> {
    let mut found = None;
    weft_ir::visit::walk_expr(e, &mut |x| {
        if found.is_none() && matches!(x.kind(), ExprKind::Read { .. }) {
            found = Some(weft_ir::print::expr_to_string(x));
        }
    });
    found
}

/// A step's error at one of its arguments (or at the step).
pub(super) fn arg_error(step: &SchedStep, arg: Option<&SchedArg>, message: String) -> SchedError {
    let mut e = SchedError::new("schedule", message);
    e.stmts
        .push((arg.map_or(step.span, |a| a.span), step.to_string()));
    e
}

/// The names visible at a statement (outside it: a step's expressions are evaluated before or
/// around the statement, never inside it): the proc's control arguments and the enclosing loops'
/// variables; the proc's buffer arguments and the allocations and windows of the enclosing
/// blocks before it. A symbol is named as the printer names it (`weft sched` shows the proc so),
/// so that of two enclosing loops both called `i`, the inner one is `i_1`.
struct Names {
    ctrl: Vec<(Sym, Ty)>,
    bufs: Vec<(Sym, DType)>,
    printed: HashMap<Sym, String>,
}

impl Names {
    fn at(p: &Proc, at: &Path) -> Names {
        let mut ctrl = Vec::new();
        let mut bufs = Vec::new();
        for a in &p.args {
            match &a.kind {
                ArgKind::Ctrl(c) => ctrl.push((
                    a.sym.clone(),
                    if *c == CtrlType::Bool {
                        Ty::Bool
                    } else {
                        Ty::Int
                    },
                )),
                ArgKind::Buf(b) => bufs.push((a.sym.clone(), b.elem)),
            }
        }
        for (_, s) in path::ancestors(p, at) {
            if let StmtKind::For { var, .. } = &s.kind {
                ctrl.push((var.clone(), Ty::Int));
            }
        }
        let mut levels = Vec::new();
        let mut q = Some(at.clone());
        while let Some(x) = q {
            q = x.parent();
            levels.push(x);
        }
        for x in levels.iter().rev() {
            let Some(block) = path::block_of(p, x) else {
                continue;
            };
            for st in block.iter().take(x.last().index) {
                match &st.kind {
                    StmtKind::Alloc { buf, ty } => bufs.push((buf.clone(), ty.elem)),
                    StmtKind::Window { name, rhs } => {
                        if let Ty::Buffer(d) = rhs.ty {
                            bufs.push((name.clone(), d));
                        }
                    }
                    _ => {}
                }
            }
        }
        Names {
            ctrl,
            bufs,
            printed: weft_ir::print::printed_names(p),
        }
    }

    fn name_of<'s>(&'s self, s: &'s Sym) -> &'s str {
        self.printed.get(s).map_or(s.name(), String::as_str)
    }

    fn ctrl(&self, name: &str) -> Option<&(Sym, Ty)> {
        self.ctrl
            .iter()
            .rev()
            .find(|(s, _)| self.name_of(s) == name)
    }

    fn buf(&self, name: &str) -> Option<&(Sym, DType)> {
        self.bufs
            .iter()
            .rev()
            .find(|(s, _)| self.name_of(s) == name)
    }

    fn unknown(&self, name: &str) -> String {
        let mut known: Vec<&str> = self.ctrl.iter().map(|(s, _)| self.name_of(s)).collect();
        known.extend(self.bufs.iter().map(|(s, _)| self.name_of(s)));
        known.dedup();
        format!(
            "`{name}` is not a control argument, loop variable or buffer in scope here (in scope: {})",
            known.join(", ")
        )
    }

    /// `e` with every placeholder name replaced by what it names here, rebuilt with the typed
    /// constructors so that types and literal coercions are those of the resolved names.
    fn resolve(&self, e: &Expr) -> Result<Expr, String> {
        let r = match e.kind() {
            ExprKind::Const(_) | ExprKind::ReadConfig { .. } => e.clone(),
            ExprKind::Var(v) => match (self.ctrl(v.name()), self.buf(v.name())) {
                (Some((s, ty)), _) => Expr::var(s, *ty),
                (None, Some((b, elem))) => Expr::read(b, *elem, Vec::new()),
                (None, None) => return Err(self.unknown(v.name())),
            },
            ExprKind::Read { buf, idx } => {
                let Some((b, elem)) = self.buf(buf.name()) else {
                    if self.ctrl(buf.name()).is_some() {
                        return Err(format!(
                            "`{}` is a control value and cannot be indexed",
                            buf.name()
                        ));
                    }
                    return Err(self.unknown(buf.name()));
                };
                let idx = idx
                    .iter()
                    .map(|i| self.resolve(i))
                    .collect::<Result<_, _>>()?;
                Expr::read(b, *elem, idx)
            }
            ExprKind::Stride { buf, dim } => match self.buf(buf.name()) {
                Some((b, _)) => Expr::stride(b, *dim),
                None => return Err(self.unknown(buf.name())),
            },
            ExprKind::Unary(op, a) => Expr::unary(*op, self.resolve(a)?),
            ExprKind::Binary(op, a, b) => Expr::binary(*op, self.resolve(a)?, self.resolve(b)?),
            ExprKind::Select(c, a, b) => {
                Expr::select(self.resolve(c)?, self.resolve(a)?, self.resolve(b)?)
            }
            ExprKind::DataIndex { value, lo, hi } => {
                Expr::data_index(self.resolve(value)?, self.resolve(lo)?, self.resolve(hi)?)
            }
            ExprKind::Cast(t, a) => Expr::cast(*t, self.resolve(a)?),
            ExprKind::Math(f, args) => Expr::math(
                *f,
                args.iter()
                    .map(|a| self.resolve(a))
                    .collect::<Result<_, _>>()?,
            ),
            ExprKind::Window { .. } => return Err("a window is not a value".into()),
        };
        Ok(r.with_span(e.span))
    }
}
