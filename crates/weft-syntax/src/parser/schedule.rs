//! `schedule NAME = BASE { step; ... }`: each step's arguments are read by the kinds of its
//! primitive's signature (`weft_ir::primitives`), with the expression grammar of the language.
//!
//! The names in expressions and regions refer to the proc as it stands when the step applies,
//! which changes from step to step; the parser makes each a placeholder symbol carrying the name
//! (`placeholders`), and `weft-sched` resolves the names where the step applies.

use super::{PResult, Parser};
use crate::lexer::Tok;
use std::sync::Arc;
use weft_ir::primitives::{self, ParamKind, Primitive};
use weft_ir::{DType, Diagnostic, SchedArg, SchedStep, SchedValue, WinCoord};

impl Parser<'_, '_> {
    /// `schedule NAME = BASE { step; ... }`. The steps are data here: `weft-sched` applies them.
    pub(super) fn schedule(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, name_span) = self.name()?;
        self.define_item(&name, name_span)?;
        self.expect_punct("=")?;
        let (base, base_span) = self.name()?;
        if self.module.pipelines.iter().any(|p| p.name == base) {
            // A schedule of a pipeline: its directives are the pipeline layer's to read.
            self.skip_braced()?;
            self.push_pipeline_item(name, Some(base), lo);
            return Ok(());
        }
        let known = self.scope.procs.contains_key(&base)
            || self.module.schedules.iter().any(|d| d.name == base);
        if !known {
            return Err(Diagnostic::new(
                "unknown-name",
                base_span,
                format!("unknown proc `{base}` (a schedule's base must be defined before it)"),
            ));
        }
        let (steps, structured) = self.schedule_body()?;
        // Procs defined later may call the schedule. Until it is applied (after checking), a call
        // resolves to a stand-in: the base under the schedule's name, with the base as its origin
        // (`weft::link` swaps in the scheduled proc).
        if let Some(base_proc) = self.scope.procs.get(&base).cloned() {
            let stand_in = Arc::new(weft_ir::Proc {
                name: name.clone(),
                origin: Some(weft_ir::Origin {
                    parent: base_proc.clone(),
                    polluted: Vec::new(),
                }),
                ..(*base_proc).clone()
            });
            self.scope.procs.insert(name.clone(), stand_in);
        }
        let span = self.span_from(lo);
        let text = structured.then(|| self.span_text(span));
        self.module.schedules.push(weft_ir::ScheduleDecl {
            name,
            base,
            steps,
            text,
            span,
        });
        Ok(())
    }

    /// One step: `primitive(arg, ...);`.
    pub(super) fn step(&mut self) -> PResult<SchedStep> {
        let lo = self.lo();
        let (name, name_span) = self.name()?;
        let prim = primitives::primitive(&name).ok_or_else(|| {
            Diagnostic::new("schedule", name_span, primitives::unknown_message(&name))
        })?;
        self.expect_punct("(")?;
        let mut args = Vec::new();
        while !self.is_punct(")") {
            let Some(param) = prim.param(args.len()) else {
                let got = args.len() + self.remaining_args();
                return Err(self.arity_error(prim, got, self.cur_span()));
            };
            let arg_lo = self.lo();
            let arg_pos = self.pos;
            let value = self.step_arg(param.kind).map_err(|d| {
                d.with_note(format!(
                    "argument {} of `{}` is {}: {}",
                    args.len() + 1,
                    prim.name,
                    param.role,
                    param.kind.form()
                ))
            })?;
            let span = self.span_from(arg_lo);
            let text = if self.expanded {
                // Expanded from a loop or a `steps` call: the tokens come from several places.
                super::steps::tokens_text(&self.toks[arg_pos..self.pos])
            } else {
                self.text
                    .get(span.lo as usize..span.hi as usize)
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            args.push(SchedArg { text, value, span });
            if !self.eat_punct(",") && !self.is_punct(")") {
                return Err(self.expected("`,` or `)`"));
            }
        }
        self.bump();
        let span = self.span_from(lo);
        if !prim.accepts(args.len()) {
            return Err(self.arity_error(prim, args.len(), span));
        }
        self.expect_punct(";")?;
        Ok(SchedStep {
            primitive: name,
            args,
            span,
        })
    }

    fn arity_error(&self, prim: &Primitive, got: usize, span: weft_ir::Span) -> Diagnostic {
        Diagnostic::new("schedule", span, prim.arity_message(got))
            .with_note(format!("usage: {}", prim.usage()))
    }

    /// How many arguments follow, up to the closing `)` (for the message about too many).
    fn remaining_args(&self) -> usize {
        let mut depth = 0usize;
        let mut count = 1;
        for k in 0.. {
            match self.tok_at(k) {
                Tok::Eof | Tok::Punct(";" | "{" | "}") => break,
                Tok::Punct("(" | "[") => depth += 1,
                Tok::Punct(")") if depth == 0 => break,
                Tok::Punct(")" | "]") => depth = depth.saturating_sub(1),
                Tok::Punct(",") if depth == 0 => count += 1,
                _ => {}
            }
        }
        count
    }

    /// One argument of the given kind.
    fn step_arg(&mut self, kind: ParamKind) -> PResult<SchedValue> {
        match kind {
            ParamKind::Stmt => match self.tok().clone() {
                Tok::Str(p) => {
                    self.bump();
                    Ok(SchedValue::Stmt(p))
                }
                _ => {
                    let (v, _) = self.name()?;
                    Ok(SchedValue::Stmt(format!("for {v}")))
                }
            },
            ParamKind::Int => Ok(SchedValue::Int(self.signed_int()?)),
            ParamKind::NewName
            | ParamKind::Func
            | ParamKind::Var
            | ParamKind::Memory
            | ParamKind::Proc
            | ParamKind::Buffer
            | ParamKind::DType
            | ParamKind::Word(_) => {
                let sp = self.cur_span();
                let (n, _) = match (kind, self.tok()) {
                    // Data type names are keywords of the grammar.
                    (ParamKind::DType, Tok::Ident(s)) => {
                        let s = s.clone();
                        self.bump();
                        (s, sp)
                    }
                    // A name made in a `steps` item or a loop (`"Ce{w}"`): a quoted identifier.
                    (_, Tok::Str(s)) => {
                        let s = s.clone();
                        if !weft_ir::print::is_identifier(&s) || super::is_keyword(&s) {
                            return Err(Diagnostic::new(
                                "schedule",
                                sp,
                                format!("`{s}` is not a name"),
                            ));
                        }
                        self.bump();
                        (s, sp)
                    }
                    _ => self.name()?,
                };
                match kind {
                    ParamKind::Word(words) if !words.contains(&n.as_str()) => Err(Diagnostic::new(
                        "schedule",
                        sp,
                        format!("`{n}` is not {}", kind.form()),
                    )),
                    ParamKind::DType if DType::from_name(&n).is_none() => Err(Diagnostic::new(
                        "schedule",
                        sp,
                        format!("unknown data type `{n}`"),
                    )),
                    ParamKind::Memory => {
                        self.lookup_memory(&n, sp)?;
                        Ok(SchedValue::Name(n))
                    }
                    _ => Ok(SchedValue::Name(n)),
                }
            }
            ParamKind::IntExpr
            | ParamKind::Cond
            | ParamKind::DataExpr
            | ParamKind::Expr
            | ParamKind::Value => {
                if let Tok::Str(s) = self.tok().clone() {
                    return Err(self.unquote_hint(&s));
                }
                Ok(SchedValue::Expr(self.with_placeholders(|p| p.expr())?))
            }
            ParamKind::Region => {
                if let Tok::Str(s) = self.tok().clone() {
                    return Err(self.unquote_hint(&s));
                }
                self.with_placeholders(|p| p.region())
            }
            ParamKind::Window => {
                if let Tok::Str(s) = self.tok().clone() {
                    return Err(self.unquote_hint(&s));
                }
                self.with_placeholders(|p| p.window_arg())
            }
            ParamKind::ConfigField => {
                let (config, field) = self.config_field()?;
                Ok(SchedValue::ConfigField { config, field })
            }
            ParamKind::Binding => {
                let (name, _) = self.name()?;
                self.expect_punct("=")?;
                let value = self.signed_int()?;
                Ok(SchedValue::Binding { name, value })
            }
        }
    }

    /// A quoted expression or region: the language reads them directly.
    fn unquote_hint(&self, s: &str) -> Diagnostic {
        Diagnostic::new(
            "schedule",
            self.cur_span(),
            format!("expressions and regions are written without quotes: `{s}`"),
        )
    }

    /// `-`? integer literal.
    fn signed_int(&mut self) -> PResult<i64> {
        let lo = self.lo();
        let neg = self.eat_punct("-");
        match *self.tok() {
            Tok::Int(m) => {
                self.bump();
                super::int_value(m, neg).ok_or_else(|| {
                    Diagnostic::new(
                        "syntax",
                        self.span_from(lo),
                        "integer literal out of range for i64",
                    )
                })
            }
            _ => Err(self.expected("an integer")),
        }
    }

    /// `A[lo:hi, ...]`: a window with an interval in every dimension.
    fn region(&mut self) -> PResult<SchedValue> {
        let lo = self.lo();
        let (buf, coords) = self.window_parts()?;
        let mut dims = Vec::new();
        for c in coords {
            match c {
                WinCoord::Interval(a, b) => dims.push((a, b)),
                WinCoord::Point(_) => {
                    return Err(Diagnostic::new(
                        "syntax",
                        self.span_from(lo),
                        "a region has an interval `lo:hi` in every dimension",
                    ))
                }
            }
        }
        Ok(SchedValue::Region { buf, dims })
    }

    /// `A[i, lo:hi, ...]`: a point or an interval in every dimension.
    fn window_arg(&mut self) -> PResult<SchedValue> {
        let (buf, coords) = self.window_parts()?;
        Ok(SchedValue::Window { buf, coords })
    }

    /// The buffer's name and the coordinates of `A[i, lo:hi, ...]`.
    fn window_parts(&mut self) -> PResult<(String, Vec<WinCoord>)> {
        let (buf, _) = self.name()?;
        self.expect_punct("[")?;
        let mut coords = Vec::new();
        loop {
            let a = self.expr()?;
            coords.push(match self.eat_punct(":") {
                true => WinCoord::Interval(a, self.expr()?),
                false => WinCoord::Point(a),
            });
            if self.eat_punct("]") {
                return Ok((buf, coords));
            }
            if !self.eat_punct(",") {
                return Err(self.expected("`,`, `:` or `]`"));
            }
        }
    }

    fn with_placeholders<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.placeholder_syms.borrow_mut().clear();
        self.placeholders = true;
        let r = f(self);
        self.placeholders = false;
        r
    }
}
