//! Windows and calls: window shapes and root coordinates, argument shapes and ranges,
//! callee preconditions, aliasing of written arguments, and what a call reads and writes.

use super::*;

impl Walk<'_> {
    pub(super) fn window(&mut self, e: &Expr) -> Option<Rc<BufInfo>> {
        let ExprKind::Window { buf, coords } = &e.kind else {
            self.err(
                "type",
                e.span,
                format!("`{}` is not a buffer or window", expr_to_string(e)),
            );
            return None;
        };
        let src = self.buffer(buf, e.span)?;
        if coords.is_empty() {
            return Some(src);
        }
        if coords.len() != src.rank() {
            self.err(
                "type",
                e.span,
                format!(
                    "`{buf}` has rank {} but the window has {} coordinates",
                    src.rank(),
                    coords.len()
                ),
            );
            return None;
        }
        let mut shape = Vec::new();
        let mut shape_text = Vec::new();
        let mut strides = Vec::new();
        let mut src_to_new: Vec<Result<usize, Term>> = Vec::new();
        let mut offsets = Vec::new();
        let mut last_interval = None;
        let mut ok = true;
        for (d, c) in coords.iter().enumerate() {
            let n = src.shape[d].clone();
            match c {
                WinCoord::Point(p) => {
                    let Some(pt) = self.expect_ctrl(p, Ty::Int, "a window coordinate") else {
                        ok = false;
                        continue;
                    };
                    if let Some(n) = n {
                        let (buf, p, extent) = (buf.clone(), p.clone(), src.shape_text[d].clone());
                        let msg = Msg::lazy(move || {
                            format!(
                                "window of `{buf}` may be out of bounds: point `{}` in dimension {d} must lie in 0..{extent}",
                                expr_to_string(&p)
                            )
                        });
                        self.require(
                            in_range(pt.clone(), n.clone()),
                            "bounds",
                            e.span,
                            msg,
                            &[("index", &pt), ("extent", &n)],
                        );
                    }
                    src_to_new.push(Err(pt.clone()));
                    offsets.push(pt);
                }
                WinCoord::Interval(lo, hi) => {
                    let l = self.expect_ctrl(lo, Ty::Int, "a window bound");
                    let h = self.expect_ctrl(hi, Ty::Int, "a window bound");
                    let (Some(l), Some(h)) = (l, h) else {
                        ok = false;
                        continue;
                    };
                    if let Some(n) = n {
                        let (buf, lo, hi) = (buf.clone(), lo.clone(), hi.clone());
                        let extent = src.shape_text[d].clone();
                        let msg = Msg::lazy(move || {
                            format!(
                                "window of `{buf}` may be out of bounds: interval `{}:{}` in dimension {d} must lie within 0..{extent}",
                                expr_to_string(&lo), expr_to_string(&hi)
                            )
                        });
                        let goal = Term::And(vec![
                            Term::le(Term::Int(0), l.clone()),
                            Term::le(l.clone(), h.clone()),
                            Term::le(h.clone(), n.clone()),
                        ]);
                        self.require(
                            goal,
                            "bounds",
                            e.span,
                            msg,
                            &[("low", &l), ("high", &h), ("extent", &n)],
                        );
                    }
                    if d + 1 == coords.len() {
                        last_interval = Some((l.clone(), h.clone()));
                    }
                    src_to_new.push(Ok(shape.len()));
                    shape.push(Some(Term::sub(h, l.clone())));
                    shape_text.push(ShapeText::Interval {
                        lo: lo.clone(),
                        hi: hi.clone(),
                    });
                    strides.push(src.strides[d].clone());
                    offsets.push(l);
                }
            }
        }
        if !ok {
            return None;
        }
        self.check_window_last_dim(e, &src, last_interval);
        let root_map = src
            .root_map
            .iter()
            .map(|rc| match rc {
                RootCoord::Fixed(t) => RootCoord::Fixed(t.clone()),
                RootCoord::Dim(k, off) => {
                    let at = terms::add_simplified(off, &offsets[*k]);
                    match &src_to_new[*k] {
                        Err(_) => RootCoord::Fixed(at),
                        Ok(nd) => RootCoord::Dim(*nd, at),
                    }
                }
            })
            .collect();
        Some(Rc::new(BufInfo {
            sym: buf.clone(),
            elem: src.elem,
            shape,
            shape_text,
            strides,
            mem: src.mem.clone(),
            window: true,
            root: src.root.clone(),
            root_map,
            alloc_depth: None,
        }))
    }

    /// The box of root cells a buffer view covers: per root dimension, `[lo, hi)`.
    pub(super) fn root_box(b: &BufInfo) -> Option<Vec<(Term, Term)>> {
        b.root_map
            .iter()
            .map(|rc| match rc {
                RootCoord::Fixed(t) => Some((t.clone(), Term::add(t.clone(), Term::Int(1)))),
                RootCoord::Dim(k, off) => {
                    let n = b.shape.get(*k)?.clone()?;
                    Some((off.clone(), Term::add(off.clone(), n)))
                }
            })
            .collect()
    }

    pub(super) fn call(&mut self, callee: &Arc<Proc>, args: &[Expr], span: Span) {
        self.call_checks(callee, args, span);
        // The values of the config fields the callee may write are not known after it.
        self.forget_configs_of(callee);
    }

    pub(super) fn call_checks(&mut self, callee: &Arc<Proc>, args: &[Expr], span: Span) {
        if args.len() != callee.args.len() {
            self.err(
                "call",
                span,
                format!(
                    "`{}` takes {} arguments, found {}",
                    callee.name,
                    callee.args.len(),
                    args.len()
                ),
            );
            return;
        }
        let mut env = CalleeEnv {
            ctrl: HashMap::new(),
            bufs: HashMap::new(),
            counter: 0,
            reads: HashMap::new(),
            facts: Vec::new(),
        };
        let mut ok = true;
        let mut buf_args: Vec<(usize, Rc<BufInfo>)> = Vec::new();
        let mut mismatched: Vec<(usize, Rc<BufInfo>)> = Vec::new();
        for (k, (param, arg)) in callee.args.iter().zip(args).enumerate() {
            let pname = param.sym.name();
            match &param.kind {
                ArgKind::Ctrl(c) => {
                    let what = format!("argument `{pname}` of `{}`", callee.name);
                    match self.expect_ctrl(arg, c.ty(), &what) {
                        Some(t) => {
                            if c.ty() == Ty::Int {
                                let what = move || what;
                                self.require_range(&t, Interval::ENTRY, arg.span.to(span), what);
                            }
                            if *c == CtrlType::Size {
                                let (callee, arg_e) = (callee.clone(), arg.clone());
                                let param = param.sym.clone();
                                let msg = Msg::lazy(move || {
                                    format!(
                                        "size argument `{param}` of `{}` may not be positive: `{}`",
                                        callee.name,
                                        expr_to_string(&arg_e)
                                    )
                                });
                                self.require(
                                    Term::lt(Term::Int(0), t.clone()),
                                    "precondition",
                                    arg.span.to(span),
                                    msg,
                                    &[(pname, &t)],
                                );
                            }
                            env.ctrl.insert(param.sym.clone(), t);
                        }
                        None => ok = false,
                    }
                }
                ArgKind::Buf(bt) => {
                    let Some(info) = self.window(arg) else {
                        ok = false;
                        continue;
                    };
                    let problem = if info.elem != bt.elem {
                        Some(format!(
                            "has element type {} but `{pname}` expects {}",
                            info.elem, bt.elem
                        ))
                    } else if info.rank() != bt.rank() {
                        Some(format!(
                            "has rank {} but `{pname}` expects rank {}",
                            info.rank(),
                            bt.rank()
                        ))
                    } else if info.mem.name != bt.mem.name {
                        Some(format!(
                            "lives in {} but `{pname}` expects memory {}",
                            info.mem.name, bt.mem.name
                        ))
                    } else if !bt.window && info.window {
                        Some(format!("is a window but `{pname}` expects a dense tensor (declare the parameter as a window `[{}][..]`)", bt.elem))
                    } else {
                        None
                    };
                    if let Some(p) = problem {
                        self.err(
                            "call",
                            arg.span.to(span),
                            format!(
                                "argument `{}` of `{}` {p}",
                                expr_to_string(arg),
                                callee.name
                            ),
                        );
                        ok = false;
                        // What the call writes is still written (a wrong memory, say, is
                        // reported, but must not make later reads look undefined too).
                        if info.rank() == bt.rank() {
                            mismatched.push((k, info));
                        }
                        continue;
                    }
                    // The callee assumes its window parameters' strides lie in the entry
                    // range where it reads them as control values.
                    for (d, ext) in info.shape.iter().enumerate() {
                        if let Some(ext) = ext {
                            let (callee, arg_e) = (callee.clone(), arg.clone());
                            let what = move || {
                                format!(
                                    "extent {d} of argument `{}` of `{}`",
                                    expr_to_string(&arg_e),
                                    callee.name
                                )
                            };
                            self.require_range(ext, Interval::ENTRY, arg.span.to(span), what);
                        }
                    }
                    if bt.window && self.ck.param_uses(callee).strides_read.contains(&k) {
                        for (d, st) in info.strides.iter().enumerate() {
                            let (callee, arg_e) = (callee.clone(), arg.clone());
                            let what = move || {
                                format!(
                                    "stride {d} of argument `{}` of `{}`",
                                    expr_to_string(&arg_e),
                                    callee.name
                                )
                            };
                            self.require_range(st, Interval::ENTRY, arg.span.to(span), what);
                        }
                    }
                    env.bufs.insert(param.sym.clone(), info.clone());
                    buf_args.push((k, info));
                }
            }
        }
        if !ok {
            let sub = call_subst(callee, &env.ctrl, buf_args.iter().chain(&mismatched));
            for (k, info) in buf_args.iter().chain(&mismatched) {
                self.call_cells(callee, (*k, info), &args[*k], span, &sub);
            }
            return;
        }
        // The arguments' own config reads are numbered by now: the callee's come after them.
        env.counter = self.ck.next_unknown;
        env.reads = std::mem::take(&mut self.config_reads);
        // Shapes of buffer arguments must equal the parameters' declared shapes.
        let mut obligations: Vec<(Term, &'static str, Span, Msg)> = Vec::new();
        for (k, info) in &buf_args {
            let param = &callee.args[*k];
            let Some(bt) = param.buf() else { continue };
            for (d, dim) in bt.shape.iter().enumerate() {
                let Ok(want) = to_term(dim, &mut env) else {
                    continue;
                };
                let Some(have) = info.shape[d].clone() else {
                    continue;
                };
                let (arg, callee, have_text) =
                    (args[*k].clone(), callee.clone(), info.shape_text[d].clone());
                let (psym, dim) = (param.sym.clone(), dim.clone());
                obligations.push((
                    Term::eq(have, want),
                    "call",
                    args[*k].span.to(span),
                    Msg::lazy(move || {
                        format!(
                            "argument `{}` of `{}` may have the wrong shape: dimension {d} is {have_text} but `{psym}` expects {}",
                            expr_to_string(&arg), callee.name, expr_to_string(&dim)
                        )
                    }),
                ));
            }
        }
        for pred in &callee.preds {
            if let Ok(t) = to_term(pred, &mut env) {
                let (pred, callee) = (pred.clone(), callee.clone());
                obligations.push((
                    t,
                    "precondition",
                    span,
                    Msg::lazy(move || {
                        format!(
                            "this call may violate the precondition `{}` of `{}`",
                            expr_to_string(&pred),
                            callee.name
                        )
                    }),
                ));
            }
        }
        self.ck.next_unknown = env.counter;
        self.config_reads = std::mem::take(&mut env.reads);
        self.facts.append(&mut env.facts);
        for (goal, rule, sp, msg) in obligations {
            self.require(goal, rule, sp, msg, &[]);
        }
        // Overlapping views of one buffer may not be passed where the callee writes one of them.
        let written = &self.ck.param_uses(callee).written;
        for (i, (ki, a)) in buf_args.iter().enumerate() {
            for (kj, b) in &buf_args[i + 1..] {
                if a.root != b.root || !(written.contains(ki) || written.contains(kj)) {
                    continue;
                }
                let (Some(ba), Some(bb)) = (Self::root_box(a), Self::root_box(b)) else {
                    continue;
                };
                let disjoint = Term::Or(
                    ba.iter()
                        .zip(&bb)
                        .flat_map(|((alo, ahi), (blo, bhi))| {
                            [
                                Term::le(ahi.clone(), blo.clone()),
                                Term::le(bhi.clone(), alo.clone()),
                            ]
                        })
                        .collect(),
                );
                let (a, b, callee) = (args[*ki].clone(), args[*kj].clone(), callee.clone());
                let msg = Msg::lazy(move || {
                    format!(
                        "arguments `{}` and `{}` of `{name}` may overlap, and `{name}` writes one of them",
                        expr_to_string(&a),
                        expr_to_string(&b),
                        name = callee.name
                    )
                });
                self.require(disjoint, "alias", span, msg, &[]);
            }
        }
        let sub = call_subst(callee, &env.ctrl, &buf_args);
        for (k, info) in &buf_args {
            self.call_cells(callee, (*k, info), &args[*k], span, &sub);
        }
    }
}

/// What a call puts for the callee's variables, by variable id: its control parameters are the
/// control arguments (`ctrl`), the strides of its window parameters the buffer arguments'.
fn call_subst<'a>(
    callee: &Proc,
    ctrl: &HashMap<Sym, Term>,
    bufs: impl IntoIterator<Item = &'a (usize, Rc<BufInfo>)>,
) -> HashMap<u64, Term> {
    let mut sub: HashMap<u64, Term> = ctrl.iter().map(|(s, t)| (s.id(), t.clone())).collect();
    for (k, info) in bufs {
        let param = &callee.args[*k];
        if param.buf().is_some_and(|bt| bt.window) {
            for (d, st) in info.strides.iter().enumerate() {
                sub.insert(stride_var(&param.sym, d).id, st.clone());
            }
        }
    }
    sub
}
