//! Text schedules of pipelines: `schedule NAME = PIPELINE { ... }` in a `.weft` file.
//!
//! ```text
//! schedule blur_fast = blur {
//!     blur_y.split(y, y, yi, 8).parallel(y).vectorize(x, 32);
//!     blur_x.store_at(blur_y, y).compute_at(blur_y, yi).vectorize(x, 32);
//!     set_memory(blur_x, DRAM);            // a proc-level step, on the lowered proc
//! }
//! ```
//!
//! A statement that starts with a func and a `.` is a chain of directives on that func (read by
//! the signatures of [`weft_ir::primitives::DIRECTIVES`], applied and checked one by one by
//! [`crate::schedule`]); any other statement is a proc-level scheduling step, applied to the
//! lowered proc after all directives (the multi-level scheduling of the issue), and returned as
//! text for the facade to read in the module's scope.

use crate::ast::Pipeline;
use crate::parse::Parser;
use crate::schedule::{DirectiveError, FuncHandle, Schedule, Tail};
use weft_ir::primitives::{directive, ParamKind, Primitive};
use weft_ir::{Diagnostic, Span};
use weft_syntax::Tok;

/// A parsed pipeline schedule.
pub struct PipelineSchedule {
    /// The pipeline's schedule after the directives.
    pub schedule: Schedule,
    /// The proc-level steps, in order: each one's text (without its `;`) and where it is.
    pub proc_steps: Vec<(String, Span)>,
}

/// One argument of a directive.
#[derive(Clone, Debug)]
enum Arg {
    Name(String),
    Int(i64),
    Cond(crate::ast::Expr),
}

type PResult<T> = Result<T, Diagnostic>;

/// Parse the text of `schedule NAME = BASE { ... }` for pipeline `p`, starting from `base` (the
/// pipeline's default schedule, or the schedule the base names).
pub fn parse_schedule(
    file: u32,
    text: &str,
    offset: u32,
    p: &Pipeline,
    base: Schedule,
) -> PResult<PipelineSchedule> {
    let mut ps = Parser::new(file, text, offset)?;
    ps.expect("schedule")?;
    ps.name()?;
    ps.expect("=")?;
    ps.name()?;
    ps.expect("{")?;
    let mut out = PipelineSchedule {
        schedule: base,
        proc_steps: Vec::new(),
    };
    while !ps.is("}") {
        if *ps.tok() == Tok::Eof {
            return Err(ps.err("expected `}`".into()));
        }
        let func = match (ps.tok(), ps.peek()) {
            (Tok::Ident(f), Tok::Punct(".")) if p.funcs.iter().any(|x| &x.name == f) => {
                Some(f.clone())
            }
            _ => None,
        };
        match func {
            Some(f) => chain(&mut ps, p, &mut out.schedule, &f)?,
            None => {
                let (lo, hi) = ps.until_semicolon()?;
                // Without its `;`, as `weft_syntax::parse_step` reads a step.
                let step = text
                    .get((lo - offset) as usize..(hi - offset) as usize)
                    .unwrap_or_default()
                    .trim_end_matches(';')
                    .trim_end()
                    .to_string();
                out.proc_steps.push((step, Span::new(file, lo, hi)));
            }
        }
    }
    Ok(out)
}

/// `f.d1(...).d2(...);`
fn chain(ps: &mut Parser, p: &Pipeline, s: &mut Schedule, f: &str) -> PResult<()> {
    let fspan = ps.span();
    ps.bump();
    let mut h = s.func(p, f).map_err(|e| diagnostic(e, fspan))?;
    while ps.eat(".") {
        let (name, span) = ps.name()?;
        let prim = directive(&name).ok_or_else(|| {
            let all: Vec<&str> = weft_ir::primitives::DIRECTIVES
                .iter()
                .map(|d| d.name)
                .collect();
            Diagnostic::new(
                "schedule",
                span,
                format!(
                    "unknown directive `{name}` (the directives: {})",
                    all.join(", ")
                ),
            )
        })?;
        let args = directive_args(ps, p, prim, span)?;
        h = apply(h, prim, &args).map_err(|e| diagnostic(e, span))?;
    }
    ps.expect(";")
}

fn directive_args(
    ps: &mut Parser,
    p: &Pipeline,
    prim: &Primitive,
    span: Span,
) -> PResult<Vec<Arg>> {
    ps.expect("(")?;
    let mut args = Vec::new();
    while !ps.is(")") {
        let Some(param) = prim.param(args.len()) else {
            return Err(
                Diagnostic::new("schedule", span, prim.arity_message(args.len() + 1))
                    .with_note(format!("usage: {}", prim.usage())),
            );
        };
        let arg = match param.kind {
            ParamKind::Int => Arg::Int(ps.int()?),
            ParamKind::Cond => Arg::Cond(ps.startup_condition(p)?),
            ParamKind::Word(words) => {
                let (w, wsp) = ps.name()?;
                if !words.contains(&w.as_str()) {
                    return Err(Diagnostic::new(
                        "schedule",
                        wsp,
                        format!("`{w}` is not {}", param.kind.form()),
                    ));
                }
                Arg::Name(w)
            }
            _ => Arg::Name(ps.name()?.0),
        };
        args.push(arg);
        if !ps.eat(",") {
            break;
        }
    }
    ps.expect(")")?;
    if !prim.accepts(args.len()) {
        return Err(
            Diagnostic::new("schedule", span, prim.arity_message(args.len()))
                .with_note(format!("usage: {}", prim.usage())),
        );
    }
    Ok(args)
}

fn diagnostic(e: DirectiveError, span: Span) -> Diagnostic {
    let mut d = Diagnostic::new(
        "schedule",
        span,
        format!("{}: {} (rule `{}`)", e.directive, e.message, e.rule),
    );
    if !e.alternatives.is_empty() {
        d = d.with_note(format!("legal instead: {}", e.alternatives.join(", ")));
    }
    d
}

fn tail(w: &str) -> Tail {
    match w {
        "GuardWithIf" => Tail::GuardWithIf,
        "RoundUp" => Tail::RoundUp,
        _ => Tail::ShiftInwards,
    }
}

/// Apply one directive (its arguments already match its signature).
fn apply<'a>(
    mut h: FuncHandle<'a>,
    prim: &Primitive,
    args: &[Arg],
) -> Result<FuncHandle<'a>, DirectiveError> {
    let name = |k: usize| match args.get(k) {
        Some(Arg::Name(n)) => n.as_str(),
        _ => "",
    };
    let int = |k: usize| match args.get(k) {
        Some(Arg::Int(v)) => Some(*v),
        _ => None,
    };
    let lit = |v: i64| crate::ast::Expr::int(v as i32);
    match prim.name {
        "update" => return h.update(int(0).unwrap_or(0).max(0) as usize),
        "specialize" => {
            return match args.first() {
                Some(Arg::Cond(c)) => h.specialize(c.clone()),
                _ => unreachable!("`specialize` takes a condition"),
            }
        }
        "split" => {
            let t = args.get(4).map_or(h.auto_tail(), |_| tail(name(4)));
            h.split(name(0), name(1), name(2), int(3).unwrap_or(0), t)?;
        }
        "fuse" => {
            h.fuse(name(0), name(1), name(2))?;
        }
        "reorder" => {
            let vars: Vec<&str> = (0..args.len()).map(name).collect();
            h.reorder(&vars)?;
        }
        "tile" => {
            let t = args.get(8).map_or(h.auto_tail(), |_| tail(name(8)));
            let (fx, fy) = (int(6).unwrap_or(0), int(7).unwrap_or(0));
            h.tile(
                name(0),
                name(1),
                name(2),
                name(3),
                name(4),
                name(5),
                fx,
                fy,
                t,
            )?;
        }
        "parallel" => {
            h.parallel(name(0))?;
        }
        "vectorize" => match int(1) {
            Some(w) => {
                h.vectorize_by(name(0), w)?;
            }
            None => {
                h.vectorize(name(0))?;
            }
        },
        "unroll" => match int(1) {
            Some(w) => {
                h.unroll_by(name(0), w)?;
            }
            None => {
                h.unroll(name(0))?;
            }
        },
        "compute_root" => {
            h.compute_root()?;
        }
        "compute_at" => {
            h.compute_at(name(0), name(1))?;
        }
        "compute_inline" => {
            h.compute_inline()?;
        }
        "store_root" => {
            h.store_root()?;
        }
        "clone_in" => {
            h.clone_in(name(0))?;
        }
        "reorder_storage" => {
            let vars: Vec<&str> = (0..args.len()).map(name).collect();
            h.reorder_storage(&vars)?;
        }
        "store_at" => {
            h.store_at(name(0), name(1))?;
        }
        "bound" => {
            h.bound(name(0), lit(int(1).unwrap_or(0)), lit(int(2).unwrap_or(0)))?;
        }
        "bound_extent" => {
            h.bound_extent(name(0), lit(int(1).unwrap_or(0)))?;
        }
        "align_bounds" => {
            h.align_bounds(name(0), int(1).unwrap_or(0), int(2).unwrap_or(0))?;
        }
        other => unreachable!("directive `{other}` has no implementation"),
    }
    Ok(h)
}
