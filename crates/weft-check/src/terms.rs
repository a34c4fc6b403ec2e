//! Translation of control expressions into solver terms, with the quasi-affine rule.

use crate::smt::{Term, Var};
use std::collections::HashMap;
use weft_ir::{BinOp, Config, Const, Expr, ExprKind, Sym, Ty, UnOp};

/// How the symbols of an expression map to terms (a proc's own scope, or a callee's parameters
/// substituted by a call's arguments).
pub trait TermEnv {
    fn var(&self, sym: &Sym) -> Option<Term>;
    fn stride(&self, buf: &Sym, dim: usize) -> Option<Term>;
    /// A config field is mutable global state: a read is an unknown value (unless the
    /// environment knows the field's current value).
    fn config(&mut self, config: &Config, field: usize) -> Term;
    /// A term that stands for `t`, which `min`/`max` use twice: an environment that can assume
    /// facts may name a large `t` by a fresh variable (with the fact that they are equal), so
    /// that nested `min`/`max` do not double the term at each level. By default, `t` itself.
    fn share(&mut self, t: Term) -> Term {
        t
    }
    /// A term the environment has made for the whole `min`/`max` expression `e` (a variable
    /// it knows to equal it), or `None` to translate `e` as usual.
    fn named(&mut self, _e: &Expr) -> Option<Term> {
        None
    }
}

/// Why an expression has no term.
pub enum TermError {
    /// `a * b` with neither side constant, or `/`/`%` by a non-constant or non-positive divisor.
    NotQuasiAffine(Expr),
    /// The expression is not a control value (a data read, a cast, ...).
    NotControl(Expr),
    Unbound(Sym),
}

pub fn sym_var(sym: &Sym) -> Var {
    Var {
        id: sym.id(),
        name: sym.name().to_string(),
    }
}

/// `a + b`, leaving out a constant 0.
pub fn add_simplified(a: &Term, b: &Term) -> Term {
    match (const_value(a), const_value(b)) {
        (Some(0), _) => b.clone(),
        (_, Some(0)) => a.clone(),
        _ => Term::add(a.clone(), b.clone()),
    }
}

/// The value of a term without variables.
pub fn const_value(t: &Term) -> Option<i64> {
    eval(t, &HashMap::new())
}

/// Evaluate a term under an assignment (None when a variable is missing or it overflows).
pub fn eval(t: &Term, vals: &HashMap<u64, i64>) -> Option<i64> {
    let fits = |v: i128| i64::try_from(v).is_ok();
    eval_with(t, vals, &fits).and_then(|v| i64::try_from(v).ok())
}

/// Evaluate a term in 128 bits, so that intermediates beyond the 64-bit range can be shown (in
/// counterexamples of the overflow rule); None when a variable is missing.
pub fn eval_wide(t: &Term, vals: &HashMap<u64, i64>) -> Option<i128> {
    eval_with(t, vals, &|_| true)
}

/// Evaluation with checked 128-bit arithmetic, where every integer result must satisfy `fits`.
fn eval_with(t: &Term, vals: &HashMap<u64, i64>, fits: &dyn Fn(i128) -> bool) -> Option<i128> {
    let b = |x: bool| x as i128;
    let ev = |x: &Term| eval_with(x, vals, fits);
    let v = match t {
        Term::Int(v) => *v as i128,
        Term::Bool(v) => b(*v),
        Term::IntVar(v) | Term::BoolVar(v) => *vals.get(&v.id)? as i128,
        Term::Add(x, y) => ev(x)?.checked_add(ev(y)?)?,
        Term::Sub(x, y) => ev(x)?.checked_sub(ev(y)?)?,
        Term::Neg(x) => ev(x)?.checked_neg()?,
        Term::Mul(x, y) => ev(x)?.checked_mul(ev(y)?)?,
        Term::Div(x, y) => {
            let d = ev(y)?;
            if d == 0 {
                0
            } else {
                ev(x)?.checked_div_euclid(d)?
            }
        }
        Term::Mod(x, y) => {
            let d = ev(y)?;
            if d == 0 {
                0
            } else {
                ev(x)?.checked_rem_euclid(d)?
            }
        }
        Term::Ite(c, x, y) => {
            if ev(c)? != 0 {
                ev(x)?
            } else {
                ev(y)?
            }
        }
        Term::Lt(x, y) => b(ev(x)? < ev(y)?),
        Term::Le(x, y) => b(ev(x)? <= ev(y)?),
        Term::Eq(x, y) => b(ev(x)? == ev(y)?),
        Term::And(v) => {
            let mut r = true;
            for t in v {
                r &= ev(t)? != 0;
            }
            b(r)
        }
        Term::Or(v) => {
            let mut r = false;
            for t in v {
                r |= ev(t)? != 0;
            }
            b(r)
        }
        Term::Not(x) => b(ev(x)? == 0),
    };
    fits(v).then_some(v)
}

/// Translate a control expression. Multiplication, division and remainder must have a constant
/// operand (division and remainder a positive constant divisor).
pub fn to_term(e: &Expr, env: &mut dyn TermEnv) -> Result<Term, TermError> {
    let bx = Box::new;
    Ok(match &e.kind {
        ExprKind::Const(Const::Int(v)) if e.ty == Ty::Int => Term::Int(*v),
        ExprKind::Const(Const::Bool(v)) if e.ty == Ty::Bool => Term::Bool(*v),
        ExprKind::Var(s) => env.var(s).ok_or_else(|| TermError::Unbound(s.clone()))?,
        ExprKind::Stride { buf, dim } => env
            .stride(buf, *dim)
            .ok_or_else(|| TermError::Unbound(buf.clone()))?,
        ExprKind::ReadConfig { config, field } if e.ty.is_control() => env.config(config, *field),
        ExprKind::Unary(UnOp::Neg, a) if e.ty == Ty::Int => Term::Neg(bx(to_term(a, env)?)),
        ExprKind::Unary(UnOp::Not, a) if e.ty == Ty::Bool => Term::not(to_term(a, env)?),
        ExprKind::Select(c, a, b) if e.ty.is_control() => {
            Term::ite(to_term(c, env)?, to_term(a, env)?, to_term(b, env)?)
        }
        ExprKind::Binary(op, a, b) if e.ty.is_control() => {
            let x = to_term(a, env)?;
            let y = to_term(b, env)?;
            match op {
                BinOp::Add => Term::add(x, y),
                BinOp::Sub => Term::sub(x, y),
                BinOp::Mul => {
                    if const_value(&x).is_none() && const_value(&y).is_none() {
                        return Err(TermError::NotQuasiAffine(e.clone()));
                    }
                    Term::mul(x, y)
                }
                BinOp::Div | BinOp::Mod => {
                    match const_value(&y) {
                        Some(d) if d > 0 => {}
                        _ => return Err(TermError::NotQuasiAffine(e.clone())),
                    }
                    if *op == BinOp::Div {
                        Term::Div(bx(x), bx(y))
                    } else {
                        Term::Mod(bx(x), bx(y))
                    }
                }
                BinOp::Min | BinOp::Max => {
                    if let Some(t) = env.named(e) {
                        return Ok(t);
                    }
                    let (x, y) = (env.share(x), env.share(y));
                    let lt = if *op == BinOp::Min {
                        Term::lt(x.clone(), y.clone())
                    } else {
                        Term::lt(y.clone(), x.clone())
                    };
                    Term::ite(lt, x, y)
                }
                BinOp::Lt => Term::lt(x, y),
                BinOp::Le => Term::le(x, y),
                BinOp::Gt => Term::lt(y, x),
                BinOp::Ge => Term::le(y, x),
                BinOp::Eq => Term::eq(x, y),
                BinOp::Ne => Term::not(Term::eq(x, y)),
                BinOp::And => Term::And(vec![x, y]),
                BinOp::Or => Term::Or(vec![x, y]),
            }
        }
        _ => return Err(TermError::NotControl(e.clone())),
    })
}
