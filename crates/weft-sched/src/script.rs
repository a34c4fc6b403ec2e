//! Schedules written in text: `schedule NAME = BASE { step; ... }` in a `.weft` file.
//!
//! Each step is a primitive applied to the proc as it stands after the previous steps. Its
//! arguments are read per primitive:
//!
//! - a **statement**: a loop variable's name (`i`), or a quoted pattern (`"C +="`, `"for i #1"`,
//!   see [`crate::find`]);
//! - a **number**, a **new name**, a **tail strategy** (`guard`, `cut`, `cut_and_guard`,
//!   `perfect`);
//! - a **control expression** (`N - 1`, `4 * io`) over the proc's control arguments and the loop
//!   variables around the statement, with `+ - * / %`, comparisons, `and`, `or`, `not`.
//!
//! | step | effect |
//! |---|---|
//! | `split(loop, factor, outer, inner, tail)` | [`crate::prims::split`] |
//! | `reorder_loops(loop)` | [`crate::prims::reorder_loops`] |
//! | `reorder_stmts(stmt)` | [`crate::prims::reorder_stmts`] |
//! | `fission(stmt)` | [`crate::prims::fission`], after `stmt` |
//! | `fuse(loop)` | [`crate::prims::fuse`] with the next loop |
//! | `remove_loop(loop)` | [`crate::prims::remove_loop`] |
//! | `unroll(loop)` | [`crate::prims::unroll`] |
//! | `parallelize(loop)` | [`crate::prims::parallelize`] (proved race-free) |
//! | `add_loop(stmt, name, hi)` | [`crate::prims::add_loop`]: `for name in 0..hi { stmt }` |
//! | `eliminate_dead_code(stmt)` | [`crate::prims::eliminate_dead_code`]: a loop that never runs, an `if` always or never taken |
//! | `cut(loop, expr)` | [`crate::prims::cut`] |
//! | `shift(loop, expr)` | [`crate::prims::shift`] |
//! | `simplify()` | [`crate::prims::simplify`] |
//! | `add_guard(stmt, cond)` | [`crate::prims::add_guard`] |
//! | `specialize(stmt, cond)` | [`crate::prims::specialize`] |
//! | `lift_if(loop)` | [`crate::prims::lift_if`] |
//! | `delete_pass(stmt)` | [`crate::prims::delete_pass`] |
//! | `lift_alloc("alloc t")` | [`crate::prims::lift_alloc`] |
//! | `inline_call("call f")` | [`crate::prims::inline_call`] |
//! | `set_memory("alloc t", MEMORY)` | [`crate::prims::set_memory`] |
//! | `set_precision("alloc t", f64)` | [`crate::prims::set_precision`] (a precision choice, not an equivalence) |
//! | `expand_dim("alloc t", extent, index)` | [`crate::prims::expand_dim`] |
//! | `stage_mem(stmt, A[lo:hi, ...], T [, MEMORY])` | [`crate::prims::stage_mem`] (default memory: `DRAM_STACK` when the tile is proved to fit its 64 KiB, `DRAM` otherwise) |
//! | `extract_proc(stmt, NAME [, count])` | [`crate::prims::extract_proc`]: `count` statements (default 1) from `stmt` become the new proc `NAME`, added to the module |
//! | `partial_eval(N=64, K=8)` | [`crate::prims::partial_eval`] |
//! | `replace(stmt, f)` | [`crate::prims::replace`]: the block of as many statements as `f`'s body, starting at `stmt`, becomes a call of `f` (a proc or instruction of the module or its imports) |
//! | `call_eqv("call f", g)` | [`crate::prims::call_eqv`]: `g` a proc or schedule of the module, or a proc extracted earlier in this schedule |
//! | `inline_assign("t =")` | [`crate::prims::inline_assign`] |
//! | `sink_alloc("alloc t")` | [`crate::prims::sink_alloc`] into the loop or `if` after it |
//! | `divide_dim("alloc t", dim, c)` | [`crate::prims::divide_dim`]: dimension `dim` (from 0) divided by the constant `c` |
//! | `reuse_buffer("alloc t2", t1)` | [`crate::prims::reuse_buffer`]: `t2` uses the dead buffer `t1` |
//! | `bind_config(stmt, e, Cfg.field)` | [`crate::prims::bind_config`] (equivalent modulo `Cfg.field`); `e` a control expression, a literal, or a buffer read `x[i, ...]` / scalar `x` in scope |
//! | `write_config(stmt, Cfg.field, e)` | [`crate::prims::write_config`] after `stmt` (equivalent modulo `Cfg.field`); `e` a control expression or a literal |

use crate::error::SchedError;
use crate::path::{self, Path};
use crate::schedule::{Cursor, Schedule};
use crate::Tail;
use std::sync::Arc;
use weft_ir::{
    ArgKind, BinOp, Config, Const, CtrlType, DType, Diagnostic, Expr, Memory, Proc, SchedArg,
    SchedStep, ScheduleDecl, StmtKind, Sym, Ty, UnOp,
};

/// Apply a schedule declaration to its base proc. `on_step` sees each accepted step and the proc
/// after it (for `--trace`). Returns the scheduled proc, named after the declaration, and the
/// schedule (its versions and solver statistics). Steps that name other procs (`call_eqv`) find
/// none: see [`apply_in`].
pub fn apply(
    decl: &ScheduleDecl,
    base: Arc<Proc>,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
    on_step: impl FnMut(&SchedStep, &Proc),
) -> Result<(Arc<Proc>, Schedule), Diagnostic> {
    apply_in(decl, base, memories, &|_| None, &|_| None, on_step)
}

/// [`apply`], with `procs` resolving the names of the module's procs and earlier schedules (for
/// `call_eqv`, and so that `extract_proc` does not reuse a name). The scheduled proc records the
/// last version as its origin (naming it is an equivalence); the procs created by `extract_proc`
/// are in the schedule's [`Schedule::extracted`], for the caller to add to the module. `configs`
/// resolves config names (for `bind_config` and `write_config`; the configs the proc and its
/// callees use are found without it).
pub fn apply_in(
    decl: &ScheduleDecl,
    base: Arc<Proc>,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
    procs: &dyn Fn(&str) -> Option<Arc<Proc>>,
    configs: &dyn Fn(&str) -> Option<Arc<Config>>,
    mut on_step: impl FnMut(&SchedStep, &Proc),
) -> Result<(Arc<Proc>, Schedule), Diagnostic> {
    let mut s = Schedule::new(base);
    for step in &decl.steps {
        apply_step_in(&mut s, step, memories, procs, configs)
            .map_err(|e| step_diagnostic(step, &e))?;
        on_step(step, s.proc());
    }
    let named = Arc::new(Proc {
        name: decl.name.clone(),
        origin: Some(weft_ir::Origin {
            parent: s.proc().clone(),
            polluted: Vec::new(),
        }),
        ..(**s.proc()).clone()
    });
    Ok((named, s))
}

/// A step's error as a diagnostic: at the step in the schedule, with the statements involved as
/// labels and the counterexample as a note.
fn step_diagnostic(step: &SchedStep, e: &SchedError) -> Diagnostic {
    let mut d = e.to_diagnostic();
    d.span = step.span;
    d
}

fn arg_error(step: &SchedStep, arg: Option<&SchedArg>, message: String) -> SchedError {
    let mut e = SchedError::new("schedule", message);
    e.stmts
        .push((arg.map_or(step.span, |a| a.span), step.to_string()));
    e
}

fn nth<'a>(step: &'a SchedStep, k: usize, what: &str) -> Result<&'a SchedArg, SchedError> {
    step.args.get(k).ok_or_else(|| {
        arg_error(
            step,
            None,
            format!("`{}` needs {what} as argument {}", step.primitive, k + 1),
        )
    })
}

fn arity(step: &SchedStep, n: usize) -> Result<(), SchedError> {
    if step.args.len() != n {
        return Err(arg_error(
            step,
            None,
            format!(
                "`{}` takes {n} argument{}, got {}",
                step.primitive,
                if n == 1 { "" } else { "s" },
                step.args.len()
            ),
        ));
    }
    Ok(())
}

/// A statement argument: a quoted pattern or a loop variable's name.
fn stmt_arg(s: &Schedule, step: &SchedStep, k: usize) -> Result<Cursor, SchedError> {
    let a = nth(step, k, "a statement")?;
    let pattern = match a.text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(p) => p.to_string(),
        None => format!("for {}", a.text),
    };
    s.find(&pattern)
        .map_err(|e| arg_error(step, Some(a), e.message))
}

fn int_arg(step: &SchedStep, k: usize) -> Result<i64, SchedError> {
    let a = nth(step, k, "a number")?;
    a.text.parse().map_err(|_| {
        arg_error(
            step,
            Some(a),
            format!("expected a number, found `{}`", a.text),
        )
    })
}

fn name_arg(step: &SchedStep, k: usize) -> Result<String, SchedError> {
    let a = nth(step, k, "a name")?;
    let ok = a
        .text
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && a.text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(a.text.clone())
    } else {
        Err(arg_error(
            step,
            Some(a),
            format!("expected a name, found `{}`", a.text),
        ))
    }
}

/// A control expression argument, read in the scope of the statement at `at`.
fn expr_arg(s: &Schedule, at: &Cursor, step: &SchedStep, k: usize) -> Result<Expr, SchedError> {
    let a = nth(step, k, "an expression")?;
    let path = s
        .resolve(at)
        .ok_or_else(|| arg_error(step, Some(a), "the statement no longer exists".into()))?;
    let scope = names_in_scope(s.proc(), &path);
    parse_ctrl_expr(&a.text, &scope).map_err(|m| arg_error(step, Some(a), m))
}

/// A region `A[l0:h0, l1:h1]` (quoted or not), its bounds read in the scope of the statement.
fn region_arg_of(
    s: &Schedule,
    at: &Cursor,
    step: &SchedStep,
    a: &SchedArg,
) -> Result<(String, Vec<(Expr, Expr)>), SchedError> {
    let text = a.text.trim_matches('"');
    let bad = |m: &str| {
        arg_error(
            step,
            Some(a),
            format!("{m} in region `{text}` (expected `A[lo:hi, ...]`)"),
        )
    };
    let (name, rest) = text.split_once('[').ok_or_else(|| bad("no `[`"))?;
    let inner = rest
        .trim_end()
        .strip_suffix(']')
        .ok_or_else(|| bad("no closing `]`"))?;
    let path = s
        .resolve(at)
        .ok_or_else(|| arg_error(step, Some(a), "the statement no longer exists".into()))?;
    let scope = names_in_scope(s.proc(), &path);
    let mut out = Vec::new();
    for dim in split_top(inner, ',') {
        let parts = split_top(&dim, ':');
        let [lo, hi] = parts.as_slice() else {
            return Err(bad("each dimension needs `lo:hi`"));
        };
        let lo = parse_ctrl_expr(lo, &scope).map_err(|m| arg_error(step, Some(a), m))?;
        let hi = parse_ctrl_expr(hi, &scope).map_err(|m| arg_error(step, Some(a), m))?;
        out.push((lo, hi));
    }
    Ok((name.trim().to_string(), out))
}

/// Split at `sep` outside parentheses.
fn split_top(text: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if c == sep && depth == 0 {
            out.push(String::new());
        } else {
            out.last_mut().expect("non-empty").push(c);
        }
    }
    out
}

/// Control names visible at a statement: the proc's control arguments and the enclosing loops'
/// variables (inner ones shadow outer ones of the same name).
fn names_in_scope(p: &Proc, at: &Path) -> Vec<(String, Sym, Ty)> {
    let mut out: Vec<(String, Sym, Ty)> = p
        .args
        .iter()
        .filter_map(|a| match &a.kind {
            ArgKind::Ctrl(c) => Some((
                a.sym.name().to_string(),
                a.sym.clone(),
                if *c == CtrlType::Bool {
                    Ty::Bool
                } else {
                    Ty::Int
                },
            )),
            ArgKind::Buf(_) => None,
        })
        .collect();
    let mut chain = path::ancestors(p, at);
    if let Some(s) = path::get(p, at) {
        chain.push((at.clone(), s));
    }
    for (_, s) in chain {
        if let StmtKind::For { var, .. } = &s.kind {
            out.push((var.name().to_string(), var.clone(), Ty::Int));
        }
    }
    out
}

/// Apply one step. `memories` resolves memory names (for primitives that allocate). Steps that
/// name other procs find none: see [`apply_step_in`].
pub fn apply_step(
    s: &mut Schedule,
    step: &SchedStep,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
) -> Result<(), SchedError> {
    apply_step_in(s, step, memories, &|_| None, &|_| None)
}

/// Apply one step. `memories` resolves memory names (for primitives that allocate), `procs` the
/// names of the module's procs (for `call_eqv`; the procs extracted earlier in this schedule are
/// found too), `configs` config names (the configs the proc and its callees use are found without
/// it).
pub fn apply_step_in(
    s: &mut Schedule,
    step: &SchedStep,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
    procs: &dyn Fn(&str) -> Option<Arc<Proc>>,
    configs: &dyn Fn(&str) -> Option<Arc<Config>>,
) -> Result<(), SchedError> {
    match step.primitive.as_str() {
        "stage_mem" => {
            if !(3..=4).contains(&step.args.len()) {
                arity(step, 4)?;
            }
            let c = stmt_arg(s, step, 0)?;
            let region_arg = nth(step, 1, "a region")?;
            let (buf, region) = region_arg_of(s, &c, step, region_arg)?;
            let name = name_arg(step, 2)?;
            let memory = |mem_name: &str| {
                memories(mem_name).ok_or_else(|| {
                    arg_error(
                        step,
                        step.args.get(3),
                        format!("unknown memory `{mem_name}`"),
                    )
                })
            };
            let mem = match step.args.get(3) {
                Some(_) => memory(&name_arg(step, 3)?)?,
                // A tile proved to fit the stack goes there, any other to the heap.
                None => s.stage_mem_default_memory(
                    &c,
                    &buf,
                    &region,
                    memory("DRAM_STACK")?,
                    memory("DRAM")?,
                )?,
            };
            s.stage_mem(&c, 1, &buf, &region, &name, mem)?;
        }
        "split" => {
            if step.args.len() != 4 && step.args.len() != 5 {
                arity(step, 5)?;
            }
            let c = stmt_arg(s, step, 0)?;
            let factor = int_arg(step, 1)?;
            let (outer, inner) = (name_arg(step, 2)?, name_arg(step, 3)?);
            let tail = match step.args.get(4) {
                None => Tail::Guard,
                Some(a) => Tail::from_name(&a.text).ok_or_else(|| {
                    arg_error(
                        step,
                        Some(a),
                        format!(
                            "unknown tail strategy `{}` (guard, cut, cut_and_guard or perfect)",
                            a.text
                        ),
                    )
                })?,
            };
            s.split(&c, factor, &outer, &inner, tail)?;
        }
        "cut" | "shift" => {
            arity(step, 2)?;
            let c = stmt_arg(s, step, 0)?;
            let e = expr_arg(s, &c, step, 1)?;
            if step.primitive == "cut" {
                s.cut(&c, &e)?;
            } else {
                s.shift(&c, &e)?;
            }
        }
        "add_guard" | "specialize" => {
            arity(step, 2)?;
            let c = stmt_arg(s, step, 0)?;
            let e = expr_arg(s, &c, step, 1)?;
            if step.primitive == "add_guard" {
                s.add_guard(&c, &e)?;
            } else {
                s.specialize(&c, &e)?;
            }
        }
        "lift_if" | "delete_pass" | "lift_alloc" | "inline_call" => {
            arity(step, 1)?;
            let c = stmt_arg(s, step, 0)?;
            match step.primitive.as_str() {
                "lift_if" => s.lift_if(&c)?,
                "delete_pass" => s.delete_pass(&c)?,
                "lift_alloc" => s.lift_alloc(&c)?,
                _ => s.inline_call(&c)?,
            };
        }
        "set_memory" => {
            arity(step, 2)?;
            let c = stmt_arg(s, step, 0)?;
            let name = name_arg(step, 1)?;
            let mem = memories(&name).ok_or_else(|| {
                arg_error(step, step.args.get(1), format!("unknown memory `{name}`"))
            })?;
            s.set_memory(&c, mem)?;
        }
        "set_precision" => {
            arity(step, 2)?;
            let c = stmt_arg(s, step, 0)?;
            let a = nth(step, 1, "a data type")?;
            let t = weft_ir::DType::from_name(&a.text).ok_or_else(|| {
                arg_error(step, Some(a), format!("unknown data type `{}`", a.text))
            })?;
            s.set_precision(&c, t)?;
        }
        "expand_dim" => {
            arity(step, 3)?;
            let c = stmt_arg(s, step, 0)?;
            let extent = expr_arg(s, &c, step, 1)?;
            let index = expr_arg(s, &c, step, 2)?;
            s.expand_dim(&c, &extent, &index)?;
        }
        "simplify" => {
            arity(step, 0)?;
            s.simplify()?;
        }
        "add_loop" => {
            arity(step, 3)?;
            let c = stmt_arg(s, step, 0)?;
            let name = name_arg(step, 1)?;
            let hi = expr_arg(s, &c, step, 2)?;
            s.add_loop(&c, &name, &hi)?;
        }
        "reorder_loops"
        | "reorder_stmts"
        | "fission"
        | "fuse"
        | "remove_loop"
        | "unroll"
        | "parallelize"
        | "eliminate_dead_code" => {
            arity(step, 1)?;
            let c = stmt_arg(s, step, 0)?;
            match step.primitive.as_str() {
                "parallelize" => s.parallelize(&c)?,
                "eliminate_dead_code" => s.eliminate_dead_code(&c)?,
                "reorder_loops" => s.reorder_loops(&c)?,
                "reorder_stmts" => s.reorder_stmts(&c)?,
                "fission" => s.fission(&c)?,
                "fuse" => s.fuse(&c)?,
                "remove_loop" => s.remove_loop(&c)?,
                _ => s.unroll(&c)?,
            };
        }
        "extract_proc" => {
            if step.args.len() != 2 {
                arity(step, 3)?;
            }
            let c = stmt_arg(s, step, 0)?;
            let name = name_arg(step, 1)?;
            let count = match step.args.get(2) {
                Some(_) => usize::try_from(int_arg(step, 2)?).unwrap_or(0),
                None => 1,
            };
            let taken = procs(&name).is_some() || s.extracted().iter().any(|q| q.name == name);
            if taken {
                return Err(arg_error(
                    step,
                    step.args.get(1),
                    format!("a proc named `{name}` already exists"),
                ));
            }
            s.extract_proc(&c, count, &name)?;
        }
        "partial_eval" => {
            if step.args.is_empty() {
                arity(step, 1)?;
            }
            let mut values = Vec::new();
            for a in &step.args {
                let bad = || {
                    arg_error(
                        step,
                        Some(a),
                        format!("expected `NAME=value`, found `{}`", a.text),
                    )
                };
                let (n, v) = a.text.split_once('=').ok_or_else(bad)?;
                let v: i64 = v.trim().parse().map_err(|_| bad())?;
                values.push((n.trim().to_string(), v));
            }
            let values: Vec<(&str, i64)> = values.iter().map(|(n, v)| (n.as_str(), *v)).collect();
            s.partial_eval(&values)?;
        }
        "call_eqv" | "replace" => {
            arity(step, 2)?;
            let c = stmt_arg(s, step, 0)?;
            let name = name_arg(step, 1)?;
            let g = s
                .extracted()
                .iter()
                .find(|q| q.name == name)
                .cloned()
                .or_else(|| procs(&name))
                .ok_or_else(|| {
                    arg_error(step, step.args.get(1), format!("unknown proc `{name}`"))
                })?;
            if step.primitive == "replace" {
                s.replace(&c, &g)?;
            } else {
                s.call_eqv(&c, &g)?;
            }
        }
        "inline_assign" | "sink_alloc" => {
            arity(step, 1)?;
            let c = stmt_arg(s, step, 0)?;
            if step.primitive == "inline_assign" {
                s.inline_assign(&c)?;
            } else {
                s.sink_alloc(&c)?;
            }
        }
        "divide_dim" => {
            arity(step, 3)?;
            let c = stmt_arg(s, step, 0)?;
            let dim = int_arg(step, 1)?;
            let dim = usize::try_from(dim).map_err(|_| {
                arg_error(
                    step,
                    step.args.get(1),
                    format!("expected a dimension, found `{dim}`"),
                )
            })?;
            let factor = int_arg(step, 2)?;
            s.divide_dim(&c, dim, factor)?;
        }
        "reuse_buffer" => {
            arity(step, 2)?;
            let c = stmt_arg(s, step, 0)?;
            let t1 = name_arg(step, 1)?;
            s.reuse_buffer(&c, &t1)?;
        }
        "bind_config" => {
            arity(step, 3)?;
            let c = stmt_arg(s, step, 0)?;
            let (cfg, field) = config_field_arg(s, step, 2, configs)?;
            let e = value_arg(s, &c, step, 1, cfg.fields[field].ty.ty(), true)?;
            s.bind_config(&c, &e, &cfg, field)?;
        }
        "write_config" => {
            arity(step, 3)?;
            let c = stmt_arg(s, step, 0)?;
            let (cfg, field) = config_field_arg(s, step, 1, configs)?;
            let e = value_arg(s, &c, step, 2, cfg.fields[field].ty.ty(), false)?;
            s.write_config(&c, &cfg, field, &e)?;
        }
        other => {
            return Err(arg_error(
                step,
                None,
                format!("unknown scheduling primitive `{other}`"),
            ))
        }
    }
    Ok(())
}

// ----- control expressions in schedule arguments -----

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Name(String),
    Op(&'static str),
}

fn tokens(text: &str) -> Result<Vec<Tok>, String> {
    const OPS: &[&str] = &[
        "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "(", ")", "<", ">",
    ];
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    'outer: while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let v = text[start..i]
                .parse()
                .map_err(|_| format!("number `{}` is too large", &text[start..i]))?;
            out.push(Tok::Int(v));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(text[start..i].to_string()));
            continue;
        }
        for op in OPS {
            if text[i..].starts_with(op) {
                out.push(Tok::Op(op));
                i += op.len();
                continue 'outer;
            }
        }
        return Err(format!("unexpected `{c}` in expression `{text}`"));
    }
    Ok(out)
}

struct ExprParser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    scope: &'a [(String, Sym, Ty)],
    text: &'a str,
}

impl ExprParser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} in expression `{}`", self.text))
    }

    /// Precedence climbing: or < and < comparison < additive < multiplicative < unary.
    fn binary(&mut self, level: u8) -> Result<Expr, String> {
        if level == 5 {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match (level, self.peek()) {
                (0, Some(Tok::Name(n))) if n == "or" => BinOp::Or,
                (1, Some(Tok::Name(n))) if n == "and" => BinOp::And,
                (2, Some(Tok::Op(o))) => match *o {
                    "<" => BinOp::Lt,
                    "<=" => BinOp::Le,
                    ">" => BinOp::Gt,
                    ">=" => BinOp::Ge,
                    "==" => BinOp::Eq,
                    "!=" => BinOp::Ne,
                    _ => break,
                },
                (3, Some(Tok::Op("+"))) => BinOp::Add,
                (3, Some(Tok::Op("-"))) => BinOp::Sub,
                (4, Some(Tok::Op("*"))) => BinOp::Mul,
                (4, Some(Tok::Op("/"))) => BinOp::Div,
                (4, Some(Tok::Op("%"))) => BinOp::Mod,
                _ => break,
            };
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::binary(op, lhs, rhs);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek().cloned() {
            Some(Tok::Op("-")) => {
                self.pos += 1;
                Ok(Expr::unary(UnOp::Neg, self.unary()?))
            }
            Some(Tok::Name(n)) if n == "not" => {
                self.pos += 1;
                Ok(Expr::unary(UnOp::Not, self.unary()?))
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let e = self.binary(0)?;
                if self.peek() != Some(&Tok::Op(")")) {
                    return self.err("expected `)`");
                }
                self.pos += 1;
                Ok(e)
            }
            Some(Tok::Int(v)) => {
                self.pos += 1;
                Ok(Expr::int(v))
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                match n.as_str() {
                    "true" => return Ok(Expr::bool(true)),
                    "false" => return Ok(Expr::bool(false)),
                    _ => {}
                }
                match self.scope.iter().rev().find(|(name, _, _)| *name == n) {
                    Some((_, sym, ty)) => Ok(Expr::var(sym, *ty)),
                    None => self.err(&format!(
                        "`{n}` is not a control argument or an enclosing loop variable"
                    )),
                }
            }
            _ => self.err("expected a number, a name or `(`"),
        }
    }
}

/// Parse a control expression over the given names.
fn parse_ctrl_expr(text: &str, scope: &[(String, Sym, Ty)]) -> Result<Expr, String> {
    let mut p = ExprParser {
        toks: tokens(text)?,
        pos: 0,
        scope,
        text,
    };
    let e = p.binary(0)?;
    if p.pos != p.toks.len() {
        return p.err("unexpected text after the expression");
    }
    Ok(e)
}

// ----- config fields and values in schedule arguments -----

/// A config field argument `Cfg.field`: the config resolved by `configs`, or among those the
/// proc and its callees use.
fn config_field_arg(
    s: &Schedule,
    step: &SchedStep,
    k: usize,
    configs: &dyn Fn(&str) -> Option<Arc<Config>>,
) -> Result<(Arc<Config>, usize), SchedError> {
    let a = nth(step, k, "a config field `Cfg.field`")?;
    let text = a.text.trim_matches('"');
    let Some((cname, fname)) = text.split_once('.') else {
        return Err(arg_error(
            step,
            Some(a),
            format!("expected a config field `Cfg.field`, found `{text}`"),
        ));
    };
    let (cname, fname) = (cname.trim(), fname.trim());
    let cfg = configs(cname)
        .or_else(|| {
            weft_ir::visit::Deps::of(s.proc())
                .configs
                .into_iter()
                .find(|c| c.name == cname)
        })
        .ok_or_else(|| arg_error(step, Some(a), format!("unknown config `{cname}`")))?;
    let field = cfg.field_index(fname).ok_or_else(|| {
        arg_error(
            step,
            Some(a),
            format!("config `{cname}` has no field `{fname}`"),
        )
    })?;
    Ok((cfg, field))
}

/// The buffers visible at a statement: the proc's buffer arguments, then the allocations and
/// windows of the enclosing blocks before it (later ones shadow earlier ones).
fn buffers_in_scope(p: &Proc, at: &Path) -> Vec<(String, Sym, DType)> {
    let mut out: Vec<(String, Sym, DType)> = p
        .args
        .iter()
        .filter_map(|a| match &a.kind {
            ArgKind::Buf(b) => Some((a.sym.name().to_string(), a.sym.clone(), b.elem)),
            ArgKind::Ctrl(_) => None,
        })
        .collect();
    let mut levels = Vec::new();
    let mut q = Some(at.clone());
    while let Some(x) = q {
        q = x.parent();
        levels.push(x);
    }
    for x in levels.iter().rev() {
        let Some(block) = path::block_of(p, x) else {
            continue;
        };
        for st in block.iter().take(x.last().index) {
            match &st.kind {
                StmtKind::Alloc { buf, ty } => {
                    out.push((buf.name().to_string(), buf.clone(), ty.elem))
                }
                StmtKind::Window { name, rhs } => {
                    if let Ty::Buffer(d) = rhs.ty {
                        out.push((name.name().to_string(), name.clone(), d));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// A value of type `ty` read in the scope of the statement: a control expression for a control
/// type; for a data type a literal, or (`reads`) a buffer read `x[i, ...]` or a scalar `x`.
fn value_arg(
    s: &Schedule,
    at: &Cursor,
    step: &SchedStep,
    k: usize,
    ty: Ty,
    reads: bool,
) -> Result<Expr, SchedError> {
    let Ty::Data(dtype) = ty else {
        return expr_arg(s, at, step, k);
    };
    let a = nth(step, k, "a value")?;
    let text = a.text.trim_matches('"').trim();
    if dtype.is_float() {
        if let Ok(v) = text.parse::<f64>() {
            return Ok(Expr::typed_const(Const::Float(v), ty));
        }
    } else if let Ok(v) = text.parse::<i64>() {
        return Ok(Expr::typed_const(Const::Int(v), ty));
    }
    let bad = |m: String| arg_error(step, Some(a), m);
    if !reads {
        return Err(bad(format!("expected a {dtype} literal, found `{text}`")));
    }
    let path = s
        .resolve(at)
        .ok_or_else(|| bad("the statement no longer exists".into()))?;
    let (name, idx_text) = match text.split_once('[') {
        Some((n, rest)) => (
            n.trim(),
            Some(
                rest.trim_end()
                    .strip_suffix(']')
                    .ok_or_else(|| bad(format!("no closing `]` in `{text}`")))?,
            ),
        ),
        None => (text, None),
    };
    let (_, sym, elem) = buffers_in_scope(s.proc(), &path)
        .into_iter()
        .rev()
        .find(|(n, _, _)| n == name)
        .ok_or_else(|| {
            bad(format!(
                "`{text}` is not a {dtype} literal or a read of a buffer in scope"
            ))
        })?;
    let scope = names_in_scope(s.proc(), &path);
    let mut idx = Vec::new();
    if let Some(t) = idx_text {
        for part in split_top(t, ',') {
            idx.push(parse_ctrl_expr(&part, &scope).map_err(bad)?);
        }
    }
    Ok(Expr::read(&sym, elem, idx))
}
