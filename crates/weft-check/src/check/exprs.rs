//! Typing of expressions, translation of control expressions to solver terms (with the
//! control-arithmetic rule) and bounds of accesses.

use super::*;

impl Walk<'_> {
    pub(super) fn type_of(&mut self, e: &Expr) -> Option<Ty> {
        let t = self.compute_type(e)?;
        if t != e.ty {
            self.err(
                "type",
                e.span,
                format!(
                    "`{}` is annotated as {} but has type {t}",
                    expr_to_string(e),
                    e.ty
                ),
            );
            return None;
        }
        Some(t)
    }

    pub(super) fn compute_type(&mut self, e: &Expr) -> Option<Ty> {
        let show = || expr_to_string(e);
        Some(match &e.kind {
            ExprKind::Const(c) => {
                let ok = match (c, e.ty) {
                    (Const::Int(_), Ty::Int) | (Const::Bool(_), Ty::Bool) => true,
                    (Const::Bool(_), Ty::Data(DType::Bool)) => true,
                    (Const::Int(v), Ty::Data(d)) if d.is_int() => {
                        let (lo, hi) = d.int_range().unwrap_or((0, 0));
                        if (*v as i128) < lo || (*v as i128) > hi {
                            self.err("type", e.span, format!("literal {v} does not fit in {d}"));
                            return None;
                        }
                        true
                    }
                    (Const::Int(_), Ty::Data(d)) | (Const::Float(_), Ty::Data(d)) => d.is_float(),
                    _ => false,
                };
                if !ok {
                    self.err(
                        "type",
                        e.span,
                        format!("literal `{}` cannot have type {}", show(), e.ty),
                    );
                    return None;
                }
                e.ty
            }
            ExprKind::Var(s) => match self.scope.get(s) {
                Some(Info::Ctrl(c)) => c.ty(),
                Some(Info::Buf(_)) => {
                    self.err(
                        "type",
                        e.span,
                        format!("buffer `{s}` used as a control value"),
                    );
                    return None;
                }
                None => {
                    self.err(
                        "unknown-name",
                        e.span,
                        format!("`{s}` is not in scope here"),
                    );
                    return None;
                }
            },
            ExprKind::Read { buf, idx } => {
                let b = self.buffer(buf, e.span)?;
                if idx.len() != b.rank() {
                    self.err(
                        "type",
                        e.span,
                        format!(
                            "`{buf}` has rank {} but is indexed with {} indices",
                            b.rank(),
                            idx.len()
                        ),
                    );
                    return None;
                }
                let mut terms = Vec::new();
                for i in idx {
                    terms.push(Some(self.index_term(i)?));
                }
                self.check_addressable(&b, e.span);
                self.bounds(&b, idx, &terms, e.span, "read");
                let cell: Option<Vec<Term>> = terms.into_iter().collect();
                if let Some(cell) = cell {
                    self.require_defined(&b, &cell, e.span, &show());
                }
                Ty::Data(b.elem)
            }
            ExprKind::DataIndex { .. } => {
                self.err(
                    "data-index",
                    e.span,
                    format!(
                        "`{}` may only be a whole index of a read or a write (control values never depend on data)",
                        show()
                    ),
                );
                return None;
            }
            ExprKind::Unary(op, a) => {
                let t = self.type_of(a)?;
                let ok = match op {
                    UnOp::Neg => {
                        matches!(t, Ty::Int) || matches!(t, Ty::Data(d) if d != DType::Bool)
                    }
                    UnOp::Not => matches!(t, Ty::Bool | Ty::Data(DType::Bool)),
                };
                if !ok {
                    self.err(
                        "type",
                        e.span,
                        format!("`{}` cannot be applied to {t}", show()),
                    );
                    return None;
                }
                t
            }
            ExprKind::Binary(op, a, b) => {
                let ta = self.type_of(a);
                let tb = self.type_of(b);
                let (ta, tb) = (ta?, tb?);
                if ta != tb {
                    self.err(
                        "type",
                        e.span,
                        format!(
                            "operands of `{}` have different types: {ta} and {tb} (weft inserts no implicit conversions; write a cast)",
                            op.symbol()
                        ),
                    );
                    return None;
                }
                let is_bool = matches!(ta, Ty::Bool | Ty::Data(DType::Bool));
                let is_float = matches!(ta, Ty::Data(d) if d.is_float());
                let ok = if op.is_logic() {
                    is_bool
                } else if matches!(op, BinOp::Eq | BinOp::Ne) {
                    !matches!(ta, Ty::Buffer(_))
                } else {
                    !(is_bool || matches!(ta, Ty::Buffer(_)) || (*op == BinOp::Mod && is_float))
                };
                if !ok {
                    self.err(
                        "type",
                        e.span,
                        format!("`{}` is not defined on {ta}", op.symbol()),
                    );
                    return None;
                }
                if op.is_comparison() {
                    ta.bool_like()
                } else {
                    ta
                }
            }
            ExprKind::Select(c, a, b) => {
                let tc = if c.ty == Ty::Bool && !e.ty.is_control() {
                    // A control condition of a data `select` is control arithmetic too.
                    self.expect_ctrl(c, Ty::Bool, "a `select` condition")
                        .map(|_| Ty::Bool)
                } else {
                    self.type_of(c)
                };
                let ta = self.type_of(a);
                let tb = self.type_of(b);
                let (tc, ta, tb) = (tc?, ta?, tb?);
                if !matches!(tc, Ty::Bool | Ty::Data(DType::Bool)) {
                    self.err(
                        "type",
                        c.span,
                        format!("the condition of `select` must be a bool, found {tc}"),
                    );
                    return None;
                }
                if ta != tb {
                    self.err(
                        "type",
                        e.span,
                        format!("the branches of `select` have different types: {ta} and {tb}"),
                    );
                    return None;
                }
                if matches!(tc, Ty::Data(_)) && ta.is_control() {
                    self.err(
                        "data-dependent-control",
                        e.span,
                        "a control value cannot be selected by a data condition",
                    );
                    return None;
                }
                ta
            }
            ExprKind::Cast(to, a) => {
                let t = if a.ty.is_control() {
                    // The operand is computed with control arithmetic before the conversion.
                    self.expect_ctrl(a, a.ty, "a cast operand").map(|_| a.ty)?
                } else {
                    self.type_of(a)?
                };
                if matches!(t, Ty::Buffer(_)) {
                    self.err("type", e.span, "a buffer cannot be cast");
                    return None;
                }
                Ty::Data(*to)
            }
            ExprKind::Math(f, args) => {
                if args.len() != f.arity() {
                    self.err(
                        "type",
                        e.span,
                        format!(
                            "`{}` takes {} arguments, found {}",
                            f.name(),
                            f.arity(),
                            args.len()
                        ),
                    );
                    return None;
                }
                let mut tys = Vec::new();
                for a in args {
                    tys.push(self.type_of(a));
                }
                let tys: Option<Vec<Ty>> = tys.into_iter().collect();
                let tys = tys?;
                let t = tys[0];
                let ok = tys.iter().all(|x| *x == t)
                    && match t {
                        Ty::Data(d) => d.is_float() || (*f == MathFn::Abs && d.is_int()),
                        _ => false,
                    };
                if !ok {
                    self.err(
                        "type",
                        e.span,
                        format!(
                            "`{}` needs float data arguments of one type, found {}",
                            f.name(),
                            tys.iter()
                                .map(|t| t.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                    return None;
                }
                t
            }
            ExprKind::Window { .. } => {
                self.err(
                    "type",
                    e.span,
                    "a window can only be a call argument or bound by `let`",
                );
                return None;
            }
            ExprKind::Stride { buf, dim } => {
                let b = self.buffer(buf, e.span)?;
                if *dim >= b.rank() {
                    self.err(
                        "type",
                        e.span,
                        format!(
                            "`{buf}` has rank {}, so it has no dimension {dim}",
                            b.rank()
                        ),
                    );
                    return None;
                }
                Ty::Int
            }
            ExprKind::ReadConfig { config, field } => match config.fields.get(*field) {
                Some(f) => f.ty.ty(),
                None => {
                    self.err(
                        "unknown-name",
                        e.span,
                        format!("config `{}` has no field {field}", config.name),
                    );
                    return None;
                }
            },
        })
    }

    /// Type-check an index of an access and translate it to a term. A `clamp_index(v, lo, hi)`
    /// is `max(min(u, hi), lo)` for a fresh unknown `u` in the range of `v`'s type: every
    /// proof about the access then holds for whatever the data is.
    pub(super) fn index_term(&mut self, i: &Expr) -> Option<Term> {
        let ExprKind::DataIndex { value, lo, hi } = &i.kind else {
            return self.expect_ctrl(i, Ty::Int, "an index");
        };
        let vt = self.type_of(value);
        let lo = self.expect_ctrl(lo, Ty::Int, "the lower bound of `clamp_index`");
        let hi = self.expect_ctrl(hi, Ty::Int, "the upper bound of `clamp_index`");
        let range = match vt? {
            Ty::Data(d) if d.is_int() => d.int_range(),
            t => {
                self.err(
                    "type",
                    value.span.to(i.span),
                    format!("the value of `clamp_index` must be an integer, found {t}"),
                );
                return None;
            }
        };
        let (lo, hi) = (lo?, hi?);
        let name = format!("value of {}", expr_to_string(value));
        let u = crate::init::fresh_var(&mut self.ck.next_unknown, &name);
        let (rlo, rhi) = range.unwrap_or((i64::MIN as i128, i64::MAX as i128));
        self.ranges.insert(u.id, Interval::new(rlo, rhi));
        let u = Term::IntVar(u);
        self.facts
            .push(intervals::in_interval(&u, &Interval::new(rlo, rhi)));
        let (lo, hi) = (self.share(lo), self.share(hi));
        let below = Term::ite(Term::lt(u.clone(), hi.clone()), u, hi);
        Some(Term::ite(Term::lt(lo.clone(), below.clone()), below, lo))
    }

    /// Type-check a control expression and translate it to a term.
    pub(super) fn expect_ctrl(&mut self, e: &Expr, want: Ty, what: &str) -> Option<Term> {
        let t = self.type_of(e)?;
        if let Ty::Data(_) = t {
            self.err(
                "data-dependent-control",
                e.span,
                format!(
                    "{what} depends on data (`{}` has type {t}); control values cannot be computed from buffer contents",
                    expr_to_string(e)
                ),
            );
            return None;
        }
        if t != want {
            self.err(
                "type",
                e.span,
                format!("{what} must be a {want}, found {t}"),
            );
            return None;
        }
        match to_term(e, self) {
            Ok(t) => {
                self.fits(e, &t);
                Some(t)
            }
            Err(TermError::NotQuasiAffine(sub)) => {
                self.err(
                    "quasi-affine",
                    sub.span.to(e.span),
                    format!(
                        "`{}` is not quasi-affine: control arithmetic may multiply, divide and take remainders only by constants (and divide only by positive ones)",
                        expr_to_string(&sub)
                    ),
                );
                None
            }
            Err(TermError::NotControl(sub)) => {
                self.err(
                    "type",
                    sub.span.to(e.span),
                    format!("`{}` is not a control value", expr_to_string(&sub)),
                );
                None
            }
            Err(TermError::Unbound(s)) => {
                self.err(
                    "unknown-name",
                    e.span,
                    format!("`{s}` is not in scope here"),
                );
                None
            }
        }
    }

    pub(super) fn bounds(
        &mut self,
        b: &BufInfo,
        idx: &[Expr],
        terms: &[Option<Term>],
        span: Span,
        what: &str,
    ) {
        for (d, (i, e)) in terms.iter().zip(idx).enumerate() {
            let (Some(i), Some(n)) = (i, b.shape[d].clone()) else {
                continue;
            };
            let (what, sym, e, extent) = (
                what.to_string(),
                b.sym.clone(),
                e.clone(),
                b.shape_text[d].clone(),
            );
            let msg = Msg::lazy(move || {
                format!(
                    "{what} of `{sym}` may be out of bounds: index `{}` in dimension {d} must lie in 0..{extent}",
                    expr_to_string(&e)
                )
            });
            self.require(
                in_range(i.clone(), n.clone()),
                "bounds",
                span,
                msg,
                &[("index", i), ("extent", &n)],
            );
        }
    }
}
