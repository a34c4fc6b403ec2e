//! Schedules as programs: `steps` items and loops in schedule bodies.
//!
//! ```text
//! steps tile(rows, name) {                 // a named list of steps with parameters
//!     stage_mem(k, C[0:rows, 0:64], name);
//!     unroll("for {name}_0");              // `{p}` inside a quoted string: p's value
//! }
//! schedule s = p {
//!     tile(6, Ct);                         // a call: the body, each parameter replaced
//!     for w in [32, 16, 8] { ... }         // the body once per value, `w` replaced
//!     for r in 1..6 { ... }                // r = 1, 2, 3, 4, 5
//! }
//! ```
//!
//! The parser expands loops and calls into the flat list of primitive steps that `weft-sched`
//! applies (`ScheduleDecl::steps`), so every expanded step is read and checked like a written
//! one. Expansion works on tokens: a name that is a parameter or loop variable is replaced by the
//! argument's tokens (so `16 * w` becomes `16 * 32`), and `{name}` inside a quoted string by the
//! argument's text (patterns such as `"for k #{n}"`, and new names written as strings,
//! `"Ce{w}"`). A call sees only its own parameters; a `steps` item can call the items defined
//! before it, so expansion terminates; its size is bounded ([`MAX_EXPANDED`]).

use super::{PResult, Parser};
use crate::lexer::{Tok, Token};
use std::collections::HashMap;
use weft_ir::{Diagnostic, SchedStep, Span};

/// The most work a schedule's body may take to expand, counted in tokens written, substituted or
/// copied and in loop iterations and calls: loops and calls multiply, and a mistake such as
/// `for i in 0..1000000000`, with or without a body, must end in an error, not in a hang or in
/// exhausted memory.
pub const MAX_EXPANDED: usize = 1 << 20;

/// How deeply loops and calls may nest in an expansion.
const MAX_NESTING: usize = 64;

/// How deeply an integer argument folded into a string may nest its parentheses and signs (its
/// reading recurses; a deeper one keeps its text).
const MAX_FOLDED_DEPTH: usize = 64;

/// What names stand for while a body is expanded.
type Env = HashMap<String, Vec<Token>>;

/// What an expansion has spent of [`MAX_EXPANDED`].
struct Budget(usize);

impl Budget {
    fn spend(&mut self, n: usize, at: Span) -> PResult<()> {
        self.0 = self.0.saturating_add(n);
        if self.0 > MAX_EXPANDED {
            return Err(Diagnostic::new(
                "schedule",
                at,
                format!("the schedule takes more than {MAX_EXPANDED} steps of work to expand (its loops and calls, and the tokens they make)"),
            ));
        }
        Ok(())
    }
}

impl Parser<'_, '_> {
    /// `steps NAME(p, ...) { ... }`: kept as text for printing and as tokens for expansion.
    pub(super) fn steps_item(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, name_span) = self.name()?;
        if weft_ir::primitives::primitive(&name).is_some() {
            return Err(Diagnostic::new(
                "duplicate-definition",
                name_span,
                format!("`{name}` is a scheduling primitive; a `steps` item needs another name"),
            ));
        }
        self.define_item(&name, name_span)?;
        self.expect_punct("(")?;
        let mut params: Vec<String> = Vec::new();
        while !self.is_punct(")") {
            let (p, sp) = self.name()?;
            if params.contains(&p) {
                return Err(Diagnostic::new(
                    "duplicate-definition",
                    sp,
                    format!("parameter `{p}` is named twice"),
                ));
            }
            params.push(p);
            if !self.eat_punct(",") && !self.is_punct(")") {
                return Err(self.expected("`,` or `)`"));
            }
        }
        self.bump();
        let body = self.braced_tokens()?;
        let span = self.span_from(lo);
        let text = self.span_text(span);
        let order = self.steps_defs.len();
        self.steps_defs
            .insert(name.clone(), (order, params.clone(), body));
        self.module.steps_items.push(weft_ir::StepsItem {
            name,
            params,
            text,
            span,
        });
        Ok(())
    }

    /// The tokens between the next `{` and its `}` (consumed, braces included).
    fn braced_tokens(&mut self) -> PResult<Vec<Token>> {
        if !self.is_punct("{") {
            return Err(self.expected("`{`"));
        }
        let open = self.pos;
        // Braces only: a step with a bracket left open is the step parser's to report.
        let mut depth = 0usize;
        let close = (open..self.toks.len())
            .find(|&k| match &self.toks[k].tok {
                Tok::Punct("{") => {
                    depth += 1;
                    false
                }
                Tok::Punct("}") => {
                    depth -= 1;
                    depth == 0
                }
                _ => false,
            })
            .ok_or_else(|| Diagnostic::new("syntax", self.cur_span(), "`{` is never closed"))?;
        let body = self.toks[open + 1..close].to_vec();
        while self.pos <= close {
            self.bump();
        }
        Ok(body)
    }

    /// A schedule's body, from its `{` to its `}`: its steps with loops and `steps` calls
    /// expanded, and whether it had any (then the schedule is printed as written).
    pub(super) fn schedule_body(&mut self) -> PResult<(Vec<SchedStep>, bool)> {
        let body = self.braced_tokens()?;
        let structured = body.iter().enumerate().any(|(k, t)| match &t.tok {
            Tok::Ident(s) if s == "for" => true,
            Tok::Ident(s) => {
                self.steps_defs.contains_key(s)
                    && matches!(body.get(k + 1).map(|t| &t.tok), Some(Tok::Punct("(")))
            }
            _ => false,
        });
        let mut flat = Vec::new();
        let mut budget = Budget(0);
        let visible = self.steps_defs.len();
        self.expand(&body, &Env::new(), visible, 0, &mut budget, &mut flat)?;
        // Read the flat steps with the step parser, over the expanded tokens.
        let end = body.last().map_or(self.prev_hi, |t| t.hi);
        flat.push(Token {
            tok: Tok::Eof,
            lo: end,
            hi: end,
        });
        let saved = (
            std::mem::replace(&mut self.toks, flat),
            self.pos,
            self.prev_hi,
            self.expanded,
        );
        self.pos = 0;
        self.expanded = structured;
        let mut steps = Vec::new();
        let r = (|| -> PResult<()> {
            while *self.tok() != Tok::Eof {
                steps.push(self.step()?);
            }
            Ok(())
        })();
        (self.toks, self.pos, self.prev_hi, self.expanded) = saved;
        r.map(|()| (steps, structured))
    }

    /// Append the primitive steps of `body` to `out`, its loops unrolled and its `steps` calls
    /// replaced by their bodies, every name of `env` replaced by what it stands for.
    /// `visible`: how many `steps` items the body can call (those defined before it, in order).
    fn expand(
        &self,
        body: &[Token],
        env: &Env,
        visible: usize,
        nesting: usize,
        budget: &mut Budget,
        out: &mut Vec<Token>,
    ) -> PResult<()> {
        let span = |t: &Token| Span::new(self.file, t.lo, t.hi);
        if nesting > MAX_NESTING {
            let at = body.first().map_or(Span::DUMMY, span);
            return Err(Diagnostic::new(
                "schedule",
                at,
                format!("loops and `steps` calls nest more than {MAX_NESTING} deep"),
            ));
        }
        let mut i = 0;
        while i < body.len() {
            let t = &body[i];
            match &t.tok {
                Tok::Ident(s) if s == "for" => {
                    let (var, values, open) = self.loop_head(body, i)?;
                    let close = balanced_end(body, open).ok_or_else(|| {
                        Diagnostic::new("syntax", span(&body[open]), "`{` is never closed")
                    })?;
                    let env_size: usize = env.values().map(Vec::len).sum();
                    for v in values {
                        budget.spend(1 + env_size, span(t))?;
                        let mut inner = env.clone();
                        inner.insert(var.clone(), int_tokens(v, &body[i + 1]));
                        self.expand(
                            &body[open + 1..close],
                            &inner,
                            visible,
                            nesting + 1,
                            budget,
                            out,
                        )?;
                    }
                    i = close + 1;
                }
                // A call of an item defined before this body (a parameter of the same name is
                // the parameter).
                Tok::Ident(s)
                    if !env.contains_key(s)
                        && self.steps_defs.get(s).is_some_and(|d| d.0 < visible)
                        && matches!(body.get(i + 1).map(|t| &t.tok), Some(Tok::Punct("("))) =>
                {
                    let (order, params, callee_body) = &self.steps_defs[s];
                    let close = balanced_end(body, i + 1).ok_or_else(|| {
                        Diagnostic::new("syntax", span(&body[i + 1]), "`(` is never closed")
                    })?;
                    let mut args = split_args(&body[i + 2..close]);
                    // A trailing comma ends the list; an empty argument elsewhere is an error.
                    if args.len() > 1 && args.last().is_some_and(Vec::is_empty) {
                        args.pop();
                    }
                    if args.iter().any(Vec::is_empty) {
                        return Err(Diagnostic::new(
                            "syntax",
                            span(t),
                            format!("an argument of `{s}` is empty"),
                        ));
                    }
                    if args.len() != params.len() {
                        return Err(Diagnostic::new(
                            "schedule",
                            span(t),
                            format!(
                                "`{s}` takes {} arguments ({}), given {}",
                                params.len(),
                                params.join(", "),
                                args.len()
                            ),
                        ));
                    }
                    if !matches!(body.get(close + 1).map(|t| &t.tok), Some(Tok::Punct(";"))) {
                        let at = body.get(close + 1).unwrap_or(&body[close]);
                        return Err(Diagnostic::new(
                            "syntax",
                            span(at),
                            format!("expected `;` after the call of `{s}`"),
                        ));
                    }
                    let mut callee_env = Env::new();
                    for (param, arg) in params.iter().zip(&args) {
                        let value = argument(substitute(arg, env, budget, span(t))?);
                        budget.spend(value.len(), span(t))?;
                        callee_env.insert(param.clone(), value);
                    }
                    budget.spend(1, span(t))?;
                    self.expand(callee_body, &callee_env, *order, nesting + 1, budget, out)
                        .map_err(|d| d.with_label(span(t), format!("in this call of `{s}`")))?;
                    i = close + 2;
                }
                _ => {
                    // A primitive step: up to its `;` (outside brackets).
                    let mut depth = 0usize;
                    let mut end = i;
                    while end < body.len() {
                        match &body[end].tok {
                            Tok::Punct("(" | "[" | "{") => depth += 1,
                            Tok::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
                            Tok::Punct(";") if depth == 0 => break,
                            _ => {}
                        }
                        end += 1;
                    }
                    let stop = end.min(body.len() - 1);
                    let step = substitute(&body[i..=stop], env, budget, span(t))?;
                    budget.spend(step.len(), span(t))?;
                    out.extend(step);
                    i = end + 1;
                }
            }
        }
        Ok(())
    }

    /// `for NAME in [v, ...] {` or `for NAME in lo..hi {` at `body[i]`: the name, the values,
    /// and the index of the `{`.
    fn loop_head(&self, body: &[Token], i: usize) -> PResult<(String, Vec<i64>, usize)> {
        let span = |k: usize| {
            let t = body.get(k).or(body.last()).expect("a token");
            Span::new(self.file, t.lo, t.hi)
        };
        let tok = |k: usize| body.get(k).map(|t| &t.tok);
        let var = match tok(i + 1) {
            Some(Tok::Ident(v)) if !super::is_keyword(v) => v.clone(),
            _ => {
                return Err(Diagnostic::new(
                    "syntax",
                    span(i + 1),
                    "expected a loop name",
                ))
            }
        };
        if !matches!(tok(i + 2), Some(Tok::Ident(s)) if s == "in") {
            return Err(Diagnostic::new("syntax", span(i + 2), "expected `in`"));
        }
        // An integer, maybe negative: its value and the index after it.
        let int = |k: usize| -> PResult<(i64, usize)> {
            let (neg, at) = match tok(k) {
                Some(Tok::Punct("-")) => (true, k + 1),
                _ => (false, k),
            };
            match tok(at) {
                Some(Tok::Int(n)) => {
                    let v = i64::try_from(*n).map_err(|_| {
                        Diagnostic::new("syntax", span(at), "the integer is too large")
                    })?;
                    Ok((if neg { -v } else { v }, at + 1))
                }
                _ => Err(Diagnostic::new(
                    "syntax",
                    span(at),
                    "expected an integer (a loop of a schedule runs over integers)",
                )),
            }
        };
        let mut k = i + 3;
        let mut values = Vec::new();
        if matches!(tok(k), Some(Tok::Punct("["))) {
            k += 1;
            while !matches!(tok(k), Some(Tok::Punct("]"))) {
                let (v, next) = int(k)?;
                values.push(v);
                k = next;
                match tok(k) {
                    Some(Tok::Punct(",")) => k += 1,
                    Some(Tok::Punct("]")) => {}
                    _ => return Err(Diagnostic::new("syntax", span(k), "expected `,` or `]`")),
                }
            }
            k += 1;
        } else {
            let (lo, next) = int(k)?;
            if !matches!(tok(next), Some(Tok::Punct(".."))) {
                return Err(Diagnostic::new("syntax", span(next), "expected `..`"));
            }
            let (hi, next) = int(next + 1)?;
            if hi.saturating_sub(lo) > MAX_EXPANDED as i64 {
                return Err(Diagnostic::new(
                    "schedule",
                    span(i),
                    format!("the loop runs more than {MAX_EXPANDED} times"),
                ));
            }
            values.extend(lo..hi);
            k = next;
        }
        if !matches!(tok(k), Some(Tok::Punct("{"))) {
            return Err(Diagnostic::new("syntax", span(k), "expected `{`"));
        }
        Ok((var, values, k))
    }
}

/// The index of the bracket that closes the one at `open`.
fn balanced_end(toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match &t.tok {
            Tok::Punct("(" | "[" | "{") => depth += 1,
            Tok::Punct(")" | "]" | "}") => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            Tok::Eof => return None,
            _ => {}
        }
    }
    None
}

/// A call's arguments: the tokens between its commas outside brackets.
fn split_args(toks: &[Token]) -> Vec<Vec<Token>> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    for t in toks {
        match &t.tok {
            Tok::Punct("(" | "[" | "{") => depth += 1,
            Tok::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
            Tok::Punct(",") if depth == 0 => {
                args.push(Vec::new());
                continue;
            }
            _ => {}
        }
        args.last_mut().expect("an argument").push(t.clone());
    }
    if toks.is_empty() {
        args.clear();
    }
    args
}

/// The tokens of integer `v`, placed where `at` is.
fn int_tokens(v: i64, at: &Token) -> Vec<Token> {
    let t = |tok| Token {
        tok,
        lo: at.lo,
        hi: at.hi,
    };
    if v < 0 {
        vec![t(Tok::Punct("-")), t(Tok::Int(v.unsigned_abs()))]
    } else {
        vec![t(Tok::Int(v as u64))]
    }
}

/// `toks` with every name of `env` replaced by its tokens, and `{name}` inside strings by its
/// text (one pass over each string: what a replacement brings in is not replaced again).
fn substitute(toks: &[Token], env: &Env, budget: &mut Budget, at: Span) -> PResult<Vec<Token>> {
    let mut out = Vec::with_capacity(toks.len());
    for t in toks {
        match &t.tok {
            Tok::Ident(s) if env.contains_key(s) => out.extend(env[s].iter().cloned()),
            Tok::Str(s) if s.contains('{') => {
                let text = interpolate(s, env);
                budget.spend(text.len(), at)?;
                out.push(Token {
                    tok: Tok::Str(text),
                    ..t.clone()
                });
            }
            _ => out.push(t.clone()),
        }
    }
    Ok(out)
}

/// `s` with each `{name}` of a bound name replaced by its value's text; other braces kept.
fn interpolate(s: &str, env: &Env) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if env.contains_key(&after[..close]) => {
                out.push_str(&value_text(&env[&after[..close]]));
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A value's text inside a string: a quoted argument without its quotes, an integer expression
/// of literals as its value (so that `"for k #{n}"` with `n` = `6 - r` and `r` = 5 is the
/// pattern `for k #1`).
fn value_text(value: &[Token]) -> String {
    if let Some(v) = const_int(value) {
        return v.to_string();
    }
    match value {
        [Token {
            tok: Tok::Str(s), ..
        }] => s.clone(),
        [Token {
            tok: Tok::Punct("-"),
            ..
        }, Token {
            tok: Tok::Int(n), ..
        }] => format!("-{n}"),
        _ => tokens_text(value),
    }
}

/// The value of `toks` where they are an integer expression of literals (`+`, `-`, `*`, and
/// `/` and `%` of a non-negative value by a positive one, with parentheses) that fits in 64
/// bits, nested at most [`MAX_FOLDED_DEPTH`] deep; None otherwise.
fn const_int(toks: &[Token]) -> Option<i64> {
    /// Reads `toks` from `*at`: operands joined by the operators of `level` and tighter, inside
    /// `depth` parentheses and signs.
    fn expr(toks: &[Token], at: &mut usize, level: u8, depth: usize) -> Option<i64> {
        if depth > MAX_FOLDED_DEPTH {
            return None;
        }
        let mut v = if level == 0 {
            match &toks.get(*at)?.tok {
                Tok::Int(n) => {
                    *at += 1;
                    i64::try_from(*n).ok()?
                }
                Tok::Punct("-") => {
                    *at += 1;
                    expr(toks, at, 0, depth + 1)?.checked_neg()?
                }
                Tok::Punct("(") => {
                    *at += 1;
                    let v = expr(toks, at, 2, depth + 1)?;
                    match toks.get(*at)?.tok {
                        Tok::Punct(")") => *at += 1,
                        _ => return None,
                    }
                    v
                }
                _ => return None,
            }
        } else {
            expr(toks, at, level - 1, depth)?
        };
        while let Some(Tok::Punct(op)) = toks.get(*at).map(|t| &t.tok) {
            let op = *op;
            let ours = match level {
                1 => matches!(op, "*" | "/" | "%"),
                2 => matches!(op, "+" | "-"),
                _ => false,
            };
            if !ours {
                break;
            }
            *at += 1;
            let r = expr(toks, at, level - 1, depth)?;
            v = match op {
                "+" => v.checked_add(r)?,
                "-" => v.checked_sub(r)?,
                "*" => v.checked_mul(r)?,
                "/" if v >= 0 && r > 0 => v / r,
                "%" if v >= 0 && r > 0 => v % r,
                _ => return None,
            };
        }
        Some(v)
    }
    let mut at = 0;
    let v = expr(toks, &mut at, 2, 0)?;
    (at == toks.len()).then_some(v)
}

/// An argument as it stands for its parameter: an expression with an operator outside brackets
/// (beyond a leading minus) in parentheses, so that `2 * r` with `r` = `1 + 1` is `2 * (1 + 1)`.
fn argument(toks: Vec<Token>) -> Vec<Token> {
    let mut depth = 0usize;
    let operator = toks.iter().enumerate().any(|(k, t)| match &t.tok {
        Tok::Punct("(" | "[" | "{") => {
            depth += 1;
            false
        }
        Tok::Punct(")" | "]" | "}") => {
            depth = depth.saturating_sub(1);
            false
        }
        Tok::Punct("-") => depth == 0 && k > 0,
        Tok::Punct("+" | "*" | "/" | "%" | "<" | "<=" | ">" | ">=" | "==" | "!=") => depth == 0,
        Tok::Ident(s) => depth == 0 && (s == "and" || s == "or"),
        _ => false,
    });
    if !operator {
        return toks;
    }
    let (lo, hi) = (toks[0].lo, toks[toks.len() - 1].hi);
    let paren = |p| Token {
        tok: Tok::Punct(p),
        lo,
        hi,
    };
    std::iter::once(paren("("))
        .chain(toks)
        .chain(std::iter::once(paren(")")))
        .collect()
}

/// The text of tokens, spaced as the canonical printer spaces them (near enough for messages).
pub(super) fn tokens_text(toks: &[Token]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Tok> = None;
    for t in toks {
        let text = match &t.tok {
            Tok::Ident(s) => s.clone(),
            Tok::Int(n) => n.to_string(),
            Tok::Float(f) => format!("{f:?}"),
            Tok::Str(s) => weft_ir::print::escape_string(s),
            Tok::Punct(p) => p.to_string(),
            Tok::Eof => String::new(),
        };
        let tight_before = matches!(&t.tok, Tok::Punct(")" | "]" | "," | ":" | ".." | "."));
        let tight_after = matches!(prev, Some(Tok::Punct("(" | "[" | ":" | ".." | ".")) | None)
            || (matches!(&t.tok, Tok::Punct("(" | "[")) && matches!(prev, Some(Tok::Ident(_))));
        if !out.is_empty() && !tight_before && !tight_after {
            out.push(' ');
        }
        out.push_str(&text);
        prev = Some(&t.tok);
    }
    out
}
