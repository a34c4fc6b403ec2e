//! Translation of control expressions into solver terms, with the quasi-affine rule.

use crate::smt::{Term, Var};
use std::collections::HashMap;
use weft_ir::{BinOp, Config, Const, Expr, ExprKind, Sym, Ty, UnOp};

/// How the symbols of an expression map to terms (a proc's own scope, or a callee's parameters
/// substituted by a call's arguments).
pub trait TermEnv {
    fn var(&self, sym: &Sym) -> Option<Term>;
    fn stride(&self, buf: &Sym, dim: usize) -> Option<Term>;
    /// A config field is mutable global state: each read is an unknown value.
    fn config(&mut self, config: &Config, field: usize) -> Term;
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

/// The value of a term without variables.
pub fn const_value(t: &Term) -> Option<i64> {
    eval(t, &HashMap::new())
}

/// Evaluate a term under an assignment (None when a variable is missing or it overflows).
pub fn eval(t: &Term, vals: &HashMap<u64, i64>) -> Option<i64> {
    let b = |x: bool| x as i64;
    Some(match t {
        Term::Int(v) => *v,
        Term::Bool(v) => b(*v),
        Term::IntVar(v) | Term::BoolVar(v) => *vals.get(&v.id)?,
        Term::Add(x, y) => eval(x, vals)?.checked_add(eval(y, vals)?)?,
        Term::Sub(x, y) => eval(x, vals)?.checked_sub(eval(y, vals)?)?,
        Term::Neg(x) => eval(x, vals)?.checked_neg()?,
        Term::Mul(x, y) => eval(x, vals)?.checked_mul(eval(y, vals)?)?,
        Term::Div(x, y) => {
            let d = eval(y, vals)?;
            if d == 0 {
                0
            } else {
                eval(x, vals)?.checked_div_euclid(d)?
            }
        }
        Term::Mod(x, y) => {
            let d = eval(y, vals)?;
            if d == 0 {
                0
            } else {
                eval(x, vals)?.checked_rem_euclid(d)?
            }
        }
        Term::Ite(c, x, y) => {
            if eval(c, vals)? != 0 {
                eval(x, vals)?
            } else {
                eval(y, vals)?
            }
        }
        Term::Lt(x, y) => b(eval(x, vals)? < eval(y, vals)?),
        Term::Le(x, y) => b(eval(x, vals)? <= eval(y, vals)?),
        Term::Eq(x, y) => b(eval(x, vals)? == eval(y, vals)?),
        Term::And(v) => {
            let mut r = true;
            for t in v {
                r &= eval(t, vals)? != 0;
            }
            b(r)
        }
        Term::Or(v) => {
            let mut r = false;
            for t in v {
                r |= eval(t, vals)? != 0;
            }
            b(r)
        }
        Term::Not(x) => b(eval(x, vals)? == 0),
    })
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
                BinOp::Min => Term::ite(Term::lt(x.clone(), y.clone()), x, y),
                BinOp::Max => Term::ite(Term::lt(y.clone(), x.clone()), x, y),
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
