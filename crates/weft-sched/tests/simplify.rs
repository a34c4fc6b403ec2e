//! Soundness of affine normalisation: random control expressions evaluate to the same value
//! before and after `simplify`, for random values of their variables.

use proptest::prelude::*;
use weft_ir::{BinOp, Expr, ExprKind, Sym, Ty, UnOp};

fn eval(e: &Expr, vars: &[(Sym, i64)]) -> Option<i64> {
    Some(match &e.kind {
        ExprKind::Const(weft_ir::Const::Int(v)) => *v,
        ExprKind::Var(s) => vars.iter().find(|(v, _)| v == s)?.1,
        ExprKind::Unary(UnOp::Neg, a) => eval(a, vars)?.checked_neg()?,
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (eval(a, vars)?, eval(b, vars)?);
            match op {
                BinOp::Add => x.checked_add(y)?,
                BinOp::Sub => x.checked_sub(y)?,
                BinOp::Mul => x.checked_mul(y)?,
                BinOp::Div => {
                    if y == 0 {
                        0
                    } else {
                        x.checked_div_euclid(y)?
                    }
                }
                BinOp::Mod => {
                    if y == 0 {
                        0
                    } else {
                        x.checked_rem_euclid(y)?
                    }
                }
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                _ => return None,
            }
        }
        _ => return None,
    })
}

fn arb_expr(vars: Vec<Sym>) -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (-20i64..20).prop_map(Expr::int),
        (0..vars.len()).prop_map(move |k| Expr::var(&vars[k], Ty::Int)),
    ];
    leaf.prop_recursive(5, 40, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::binary(BinOp::Add, a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::binary(BinOp::Sub, a, b)),
            (inner.clone(), -5i64..6).prop_map(|(a, k)| Expr::binary(BinOp::Mul, Expr::int(k), a)),
            (inner.clone(), -5i64..6).prop_map(|(a, k)| Expr::binary(BinOp::Mul, a, Expr::int(k))),
            (inner.clone(), 1i64..6).prop_map(|(a, k)| Expr::binary(BinOp::Div, a, Expr::int(k))),
            (inner.clone(), 1i64..6).prop_map(|(a, k)| Expr::binary(BinOp::Mod, a, Expr::int(k))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::binary(BinOp::Min, a, b)),
            inner.prop_map(|a| Expr::unary(UnOp::Neg, a)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn simplify_preserves_values(
        e in arb_expr(vec![Sym::new("x"), Sym::new("y")]),
        vals in proptest::collection::vec(-50i64..50, 2),
    ) {
        let mut vars = Vec::new();
        weft_ir::visit::walk_expr(&e, &mut |x| {
            if let ExprKind::Var(s) = &x.kind {
                if !vars.iter().any(|(v, _): &(Sym, i64)| v == s) {
                    let k = vars.len() % 2;
                    vars.push((s.clone(), vals[k]));
                }
            }
        });
        let s = weft_sched::simplify::expr(&e);
        prop_assert_eq!(eval(&e, &vars), eval(&s, &vars), "{} simplified to {}", e, s);
    }
}

#[test]
fn folds_and_merges_like_terms() {
    let (i, n) = (Sym::new("i"), Sym::new("n"));
    let iv = Expr::var(&i, Ty::Int);
    let nv = Expr::var(&n, Ty::Int);
    let e = Expr::binary(
        BinOp::Sub,
        Expr::binary(
            BinOp::Add,
            Expr::binary(BinOp::Mul, Expr::int(4), iv.clone()),
            Expr::int(4),
        ),
        Expr::binary(BinOp::Mul, Expr::int(4), iv.clone()),
    );
    assert_eq!(weft_sched::simplify::expr(&e).to_string(), "4");
    let e = Expr::binary(
        BinOp::Add,
        Expr::binary(BinOp::Sub, nv.clone(), iv.clone()),
        Expr::binary(BinOp::Mul, iv, Expr::int(2)),
    );
    assert_eq!(weft_sched::simplify::expr(&e).to_string(), "n + i");
    let e = Expr::binary(BinOp::Div, nv, Expr::int(1));
    assert_eq!(weft_sched::simplify::expr(&e).to_string(), "n");
}
