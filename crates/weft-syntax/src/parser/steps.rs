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

/// The most tokens a schedule's body may expand to: loops multiply, and a mistake such as
/// `for i in 0..1000000000` must end in an error, not in exhausted memory.
pub const MAX_EXPANDED: usize = 1 << 20;

/// How deeply loops and calls may nest in an expansion.
const MAX_NESTING: usize = 64;

/// What names stand for while a body is expanded.
type Env = HashMap<String, Vec<Token>>;

impl Parser<'_, '_> {
    /// `steps NAME(p, ...) { ... }`: kept as text for printing and as tokens for expansion.
    pub(super) fn steps_item(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, name_span) = self.name()?;
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
        self.steps_defs.insert(name.clone(), (params.clone(), body));
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
        self.expand(&body, &Env::new(), 0, &mut flat)?;
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
    fn expand(
        &self,
        body: &[Token],
        env: &Env,
        nesting: usize,
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
                    for v in values {
                        let mut inner = env.clone();
                        inner.insert(var.clone(), int_tokens(v, &body[i + 1]));
                        self.expand(&body[open + 1..close], &inner, nesting + 1, out)?;
                    }
                    i = close + 1;
                }
                Tok::Ident(s)
                    if self.steps_defs.contains_key(s)
                        && matches!(body.get(i + 1).map(|t| &t.tok), Some(Tok::Punct("("))) =>
                {
                    let (params, callee_body) = &self.steps_defs[s];
                    let close = balanced_end(body, i + 1).ok_or_else(|| {
                        Diagnostic::new("syntax", span(&body[i + 1]), "`(` is never closed")
                    })?;
                    let args = split_args(&body[i + 2..close]);
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
                    let callee_env: Env = params
                        .iter()
                        .cloned()
                        .zip(args.iter().map(|a| substitute(a, env)))
                        .collect();
                    self.expand(callee_body, &callee_env, nesting + 1, out)
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
                    out.extend(substitute(&body[i..=stop], env));
                    i = end + 1;
                }
            }
            if out.len() > MAX_EXPANDED {
                return Err(Diagnostic::new(
                    "schedule",
                    span(t),
                    format!("the schedule expands to more than {MAX_EXPANDED} tokens"),
                ));
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
/// text.
fn substitute(toks: &[Token], env: &Env) -> Vec<Token> {
    let mut out = Vec::with_capacity(toks.len());
    for t in toks {
        match &t.tok {
            Tok::Ident(s) if env.contains_key(s) => out.extend(env[s].iter().cloned()),
            Tok::Str(s) if s.contains('{') => {
                let mut text = s.clone();
                for (name, value) in env {
                    text = text.replace(&format!("{{{name}}}"), &tokens_text(value));
                }
                out.push(Token {
                    tok: Tok::Str(text),
                    ..t.clone()
                });
            }
            _ => out.push(t.clone()),
        }
    }
    out
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
