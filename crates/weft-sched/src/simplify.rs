//! Affine normalisation of control expressions.
//!
//! A control integer expression built from `+`, `-`, negation and multiplication by constants is
//! rewritten as `c1 * a1 + ... + cn * an + c0` over its atoms (variables, and the normalised forms
//! of the sub-expressions that are not affine: `/`, `%`, `min`, `max`, `select`, strides, config
//! reads), with like atoms merged, zero terms dropped and constants folded; `x / 1`, `x % 1` and
//! operations on constants fold too. Control arithmetic is exact integer arithmetic (the checker
//! rules out overflow of the index type), so this is an identity on values; any fold that would
//! overflow an `i64` is left undone. Data expressions are left alone apart from the control
//! expressions inside them (indices).
//!
//! Inside loops with constant bounds, a quotient or remainder by a positive constant `d` folds
//! when the loop variables' ranges decide it: writing the dividend as `d·Q + R`, where `R` holds
//! each term's coefficient modulo `d` (and the constant's remainder), and `R` only loop variables
//! of known ranges, a proof that `q·d <= R < q·d + d` on those ranges for some integer `q`
//! gives `e / d = Q + q` and `e % d = R - q·d` (Euclidean division's quotient and remainder are
//! unique). So `(16 * v + l) / 16` is `v` and
//! `(16 * v + l) % 16` is `l` in `for l in 0..16`, the accesses a split leaves in a divided
//! buffer.

use std::collections::HashMap;
use weft_ir::{BinOp, Const, Expr, ExprKind, Stmt, StmtKind, Sym, Ty, UnOp, WinCoord};

/// The ranges `[lo, hi]` of the loop variables around an expression, from loops with constant
/// bounds.
type Ranges = HashMap<Sym, (i64, i64)>;

/// An atom of the normal form: a sub-expression that is not affine, merged with the atoms that
/// are the same expression (same symbols, not just the same names: two variables named `i` may
/// be different variables after inlining).
#[derive(Clone)]
struct Atom {
    text: String,
    expr: Expr,
}

impl Atom {
    fn new(expr: Expr) -> Atom {
        Atom {
            text: structural_key(&expr),
            expr,
        }
    }
}

/// A text that two expressions share exactly when they are the same expression: operators,
/// constants (bit for bit), types, and symbols by identity.
pub(crate) fn structural_key(e: &Expr) -> String {
    fn go(e: &Expr, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{:?}:", e.ty);
        match &e.kind {
            ExprKind::Const(c) => {
                let _ = match c {
                    Const::Int(v) => write!(out, "i{v}"),
                    Const::Float(v) => write!(out, "f{:x}", v.to_bits()),
                    Const::Bool(v) => write!(out, "b{v}"),
                };
            }
            ExprKind::Var(s) => {
                let _ = write!(out, "v{}", s.id());
            }
            ExprKind::Read { buf, idx } => {
                let _ = write!(out, "r{}", buf.id());
                list(idx, out);
            }
            ExprKind::Unary(op, a) => {
                let _ = write!(out, "u{op:?}");
                list(std::slice::from_ref(a), out);
            }
            ExprKind::Binary(op, a, b) => {
                let _ = write!(out, "b{op:?}");
                list(&[a.clone(), b.clone()], out);
            }
            ExprKind::Select(a, b, c) => {
                out.push('s');
                list(&[a.clone(), b.clone(), c.clone()], out);
            }
            ExprKind::DataIndex { value, lo, hi } => {
                out.push('d');
                list(&[value.clone(), lo.clone(), hi.clone()], out);
            }
            ExprKind::Cast(t, a) => {
                let _ = write!(out, "c{t:?}");
                list(std::slice::from_ref(a), out);
            }
            ExprKind::Math(f, args) => {
                let _ = write!(out, "m{f:?}");
                list(args, out);
            }
            ExprKind::Window { buf, coords } => {
                let _ = write!(out, "w{}", buf.id());
                for c in coords {
                    match c {
                        WinCoord::Point(p) => list(std::slice::from_ref(p), out),
                        WinCoord::Interval(lo, hi) => list(&[lo.clone(), hi.clone()], out),
                    }
                }
            }
            ExprKind::Stride { buf, dim } => {
                let _ = write!(out, "t{}.{dim}", buf.id());
            }
            ExprKind::ReadConfig { config, field } => {
                let _ = write!(out, "g{}.{field}", config.name);
            }
        }
    }
    fn list(es: &[Expr], out: &mut String) {
        out.push('(');
        for e in es {
            go(e, out);
            out.push(',');
        }
        out.push(')');
    }
    let mut out = String::new();
    go(e, &mut out);
    out
}

impl PartialEq for Atom {
    fn eq(&self, other: &Atom) -> bool {
        self.text == other.text
    }
}

impl crate::lin::Atom for Atom {
    const DROP_ZEROS: bool = false;
}

type Lin = crate::lin::Lin<Atom>;

impl Lin {
    fn to_expr(&self) -> Expr {
        let mut out: Option<Expr> = None;
        let terms = self.terms.iter().filter(|t| t.1 != 0);
        // Positive terms first, so that `a - b` rather than `-b + a`.
        let (pos, neg): (Vec<_>, Vec<_>) = terms.partition(|t| t.1 > 0);
        for (Atom { expr: e, .. }, c) in pos.into_iter().chain(neg) {
            let magnitude = c.unsigned_abs();
            let term = if magnitude == 1 {
                e.clone()
            } else {
                Expr::binary(BinOp::Mul, Expr::int(magnitude as i64), e.clone())
            };
            out = Some(match (out, *c > 0) {
                (None, true) => term,
                (None, false) => Expr::unary(UnOp::Neg, term),
                (Some(acc), true) => Expr::binary(BinOp::Add, acc, term),
                (Some(acc), false) => Expr::binary(BinOp::Sub, acc, term),
            });
        }
        match out {
            None => Expr::int(self.constant),
            Some(acc) if self.constant > 0 => {
                Expr::binary(BinOp::Add, acc, Expr::int(self.constant))
            }
            Some(acc) if self.constant < 0 && self.constant != i64::MIN => {
                Expr::binary(BinOp::Sub, acc, Expr::int(-self.constant))
            }
            Some(acc) if self.constant < 0 => {
                Expr::binary(BinOp::Add, acc, Expr::int(self.constant))
            }
            Some(acc) => acc,
        }
    }
}

/// The linear form of a (simplified) control integer expression.
fn linear(e: &Expr) -> Lin {
    let go = || -> Option<Lin> {
        match &e.kind {
            ExprKind::Const(Const::Int(v)) => Some(Lin::constant(*v)),
            ExprKind::Binary(BinOp::Add, a, b) => linear(a).add(linear(b), 1),
            ExprKind::Binary(BinOp::Sub, a, b) => linear(a).add(linear(b), -1),
            ExprKind::Unary(UnOp::Neg, a) => linear(a).scale(-1),
            ExprKind::Binary(BinOp::Mul, a, b) => {
                let (la, lb) = (linear(a), linear(b));
                match (la.as_const(), lb.as_const()) {
                    (Some(k), _) => lb.scale(k),
                    (_, Some(k)) => la.scale(k),
                    _ => None,
                }
            }
            _ => None,
        }
    };
    go().unwrap_or_else(|| Lin::atom(Atom::new(e.clone())))
}

/// Simplify an expression (control parts normalised, data parts rebuilt around them).
pub fn expr(e: &Expr) -> Expr {
    expr_in(e, &Ranges::new())
}

/// `e / d` (`div`) or `e % d` where the ranges decide it (see the module comment).
fn fold_by_ranges(e: &Expr, d: i64, div: bool, ranges: &Ranges) -> Option<Expr> {
    if d <= 0 || ranges.is_empty() {
        return None;
    }
    let lin = linear(e);
    let mut quotient = Lin::constant(lin.constant.div_euclid(d));
    let mut remainder = Lin::constant(lin.constant.rem_euclid(d));
    let (mut lo, mut hi) = (remainder.constant, remainder.constant);
    for (atom, c) in &lin.terms {
        let (q, r) = (c.div_euclid(d), c.rem_euclid(d));
        if q != 0 {
            quotient = quotient.add(Lin::atom(atom.clone()).scale(q)?, 1)?;
        }
        if r != 0 {
            let ExprKind::Var(v) = &atom.expr.kind else {
                return None;
            };
            let (vlo, vhi) = ranges.get(v)?;
            lo = lo.checked_add(r.checked_mul(*vlo)?)?;
            hi = hi.checked_add(r.checked_mul(*vhi)?)?;
            remainder = remainder.add(Lin::atom(atom.clone()).scale(r)?, 1)?;
        }
    }
    // `R` in `[q·d, q·d + d)` for some `q`: then `e = d·(Q + q) + (R - q·d)`.
    let q = lo.div_euclid(d);
    if hi.div_euclid(d) != q {
        return None;
    }
    let out = if div {
        quotient.add(Lin::constant(q), 1)?
    } else {
        remainder.add(Lin::constant(q.checked_mul(d)?), -1)?
    };
    Some(out.to_expr())
}

fn expr_in(e: &Expr, ranges: &Ranges) -> Expr {
    let expr = |x: &Expr| expr_in(x, ranges);
    // Simplify the children first.
    let kind = match &e.kind {
        ExprKind::Read { buf, idx } => ExprKind::Read {
            buf: buf.clone(),
            idx: idx.iter().map(expr).collect(),
        },
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, expr(a)),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, expr(a), expr(b)),
        ExprKind::Select(c, a, b) => ExprKind::Select(expr(c), expr(a), expr(b)),
        ExprKind::DataIndex { value, lo, hi } => ExprKind::DataIndex {
            value: expr(value),
            lo: expr(lo),
            hi: expr(hi),
        },
        ExprKind::Cast(t, a) => ExprKind::Cast(*t, expr(a)),
        ExprKind::Math(f, xs) => ExprKind::Math(*f, xs.iter().map(expr).collect()),
        ExprKind::Window { buf, coords } => ExprKind::Window {
            buf: buf.clone(),
            coords: coords
                .iter()
                .map(|c| match c {
                    WinCoord::Point(p) => WinCoord::Point(expr(p)),
                    WinCoord::Interval(a, b) => WinCoord::Interval(expr(a), expr(b)),
                })
                .collect(),
        },
        _ => return e.clone(),
    };
    let e = Expr::raw(kind, e.ty, e.span);
    if e.ty != Ty::Int {
        return e;
    }
    // Fold `/` and `%` by constants (Euclidean, as the semantics).
    if let ExprKind::Binary(op @ (BinOp::Div | BinOp::Mod), a, b) = &e.kind {
        if let Some(d) = b.as_int_const() {
            if d == 1 {
                return if *op == BinOp::Div {
                    a.clone()
                } else {
                    Expr::int(0)
                };
            }
            if let (Some(x), true) = (a.as_int_const(), d > 0) {
                return Expr::int(if *op == BinOp::Div {
                    x.div_euclid(d)
                } else {
                    x.rem_euclid(d)
                });
            }
            if let Some(folded) = fold_by_ranges(a, d, *op == BinOp::Div, ranges) {
                return Expr::raw(folded.kind.clone(), Ty::Int, e.span);
            }
        }
    }
    let lin = linear(&e);
    let out = lin.to_expr();
    Expr::raw(out.kind.clone(), Ty::Int, e.span)
}

/// Simplify every expression of a statement.
pub fn stmt(s: &Stmt) -> Stmt {
    stmt_in(s, &Ranges::new())
}

fn stmt_in(s: &Stmt, ranges: &Ranges) -> Stmt {
    let expr = |x: &Expr| expr_in(x, ranges);
    let b = |x: &[Stmt]| block_in(x, ranges);
    let kind = match &s.kind {
        StmtKind::Pass | StmtKind::Free { .. } => return s.clone(),
        StmtKind::Assign { buf, idx, rhs } => StmtKind::Assign {
            buf: buf.clone(),
            idx: idx.iter().map(expr).collect(),
            rhs: expr(rhs),
        },
        StmtKind::Reduce { buf, idx, rhs } => StmtKind::Reduce {
            buf: buf.clone(),
            idx: idx.iter().map(expr).collect(),
            rhs: expr(rhs),
        },
        StmtKind::WriteConfig { config, field, rhs } => StmtKind::WriteConfig {
            config: config.clone(),
            field: *field,
            rhs: expr(rhs),
        },
        StmtKind::If {
            cond,
            then_body,
            else_body,
        } => StmtKind::If {
            cond: expr(cond),
            then_body: b(then_body),
            else_body: b(else_body),
        },
        StmtKind::For {
            var,
            lo,
            hi,
            body,
            parallel,
        } => {
            let (lo, hi) = (expr(lo), expr(hi));
            let body = match (lo.as_int_const(), hi.as_int_const()) {
                (Some(l), Some(h)) if l < h => {
                    let mut inner = ranges.clone();
                    inner.insert(var.clone(), (l, h - 1));
                    block_in(body, &inner)
                }
                _ => b(body),
            };
            StmtKind::For {
                var: var.clone(),
                lo,
                hi,
                body,
                parallel: *parallel,
            }
        }
        StmtKind::Alloc { buf, ty } => StmtKind::Alloc {
            buf: buf.clone(),
            ty: weft_ir::BufType {
                shape: ty.shape.iter().map(expr).collect(),
                ..ty.clone()
            },
        },
        StmtKind::Window { name, rhs } => StmtKind::Window {
            name: name.clone(),
            rhs: expr(rhs),
        },
        StmtKind::Call { proc, args } => StmtKind::Call {
            proc: proc.clone(),
            args: args.iter().map(expr).collect(),
        },
    };
    Stmt::new(kind, s.span)
}

/// Simplify a block.
pub fn block(b: &[Stmt]) -> Vec<Stmt> {
    block_in(b, &Ranges::new())
}

fn block_in(b: &[Stmt], ranges: &Ranges) -> Vec<Stmt> {
    b.iter().map(|s| stmt_in(s, ranges)).collect()
}
