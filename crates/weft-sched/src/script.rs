//! Schedules written in text: `schedule NAME = BASE { step; ... }` in a `.weft` file.
//!
//! Each step is a primitive applied to the proc as it stands after the previous steps. The
//! primitives, their parameters and how each argument is written are declared once, in
//! [`weft_ir::primitives`] (rendered as `docs/schedules.md`); the parser has read each argument by
//! its kind, and [`args`] finds the statements and resolves the names of expressions and regions
//! where the step applies. This module dispatches a step to the [`Schedule`] API.

mod args;

use crate::error::SchedError;
use crate::schedule::Schedule;
use crate::Tail;
use args::{arg_error, Args};
use std::sync::Arc;
use weft_ir::{Diagnostic, Memory, Proc, SchedStep, ScheduleDecl};

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
    apply_in(decl, base, memories, &|_| None, on_step)
}

/// [`apply`], with `procs` resolving the names of the module's procs and earlier schedules (for
/// `call_eqv`, and so that `extract_proc` does not reuse a name). The scheduled proc records the
/// last version as its origin (naming it is an equivalence); the procs created by `extract_proc`
/// and the versions named by `rename` are in the schedule's [`Schedule::extracted`], for the
/// caller to add to the module.
pub fn apply_in(
    decl: &ScheduleDecl,
    base: Arc<Proc>,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
    procs: &dyn Fn(&str) -> Option<Arc<Proc>>,
    mut on_step: impl FnMut(&SchedStep, &Proc),
) -> Result<(Arc<Proc>, Schedule), Diagnostic> {
    let mut s = Schedule::new(base);
    for step in &decl.steps {
        apply_step_in(&mut s, step, memories, procs).map_err(|e| step_diagnostic(step, &e))?;
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

/// Apply one step. `memories` resolves memory names (for primitives that allocate). Steps that
/// name other procs find none: see [`apply_step_in`].
pub fn apply_step(
    s: &mut Schedule,
    step: &SchedStep,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
) -> Result<(), SchedError> {
    apply_step_in(s, step, memories, &|_| None)
}

/// Apply one step. `memories` resolves memory names (for primitives that allocate), `procs` the
/// names of the module's procs (for `call_eqv` and `replace`; the procs this schedule created
/// are found too, and new proc names must be unused by both).
pub fn apply_step_in(
    s: &mut Schedule,
    step: &SchedStep,
    memories: &dyn Fn(&str) -> Option<Arc<Memory>>,
    procs: &dyn Fn(&str) -> Option<Arc<Proc>>,
) -> Result<(), SchedError> {
    let prim = weft_ir::primitives::primitive(&step.primitive).ok_or_else(|| {
        arg_error(
            step,
            None,
            weft_ir::primitives::unknown_message(&step.primitive),
        )
    })?;
    let a = Args::new(step, prim)?;
    let memory = |k: usize| -> Result<Arc<Memory>, SchedError> {
        let name = a.name(k)?;
        memories(name).ok_or_else(|| a.error(k, format!("unknown memory `{name}`")))
    };
    let proc_named = |s: &Schedule, k: usize| -> Result<Arc<Proc>, SchedError> {
        let name = a.name(k)?;
        s.extracted()
            .iter()
            .find(|q| q.name == name)
            .cloned()
            .or_else(|| procs(name))
            .ok_or_else(|| a.error(k, format!("unknown proc `{name}`")))
    };
    let new_proc_name = |s: &Schedule, k: usize| -> Result<&str, SchedError> {
        let name = a.name(k)?;
        if procs(name).is_some() || s.extracted().iter().any(|q| q.name == name) {
            return Err(a.error(k, format!("a proc named `{name}` already exists")));
        }
        Ok(name)
    };
    match prim.name {
        "split" => {
            let c = a.stmt(s, 0)?;
            let tail = match a.has(4) {
                true => Tail::from_name(a.name(4)?)
                    .ok_or_else(|| a.error(4, "unknown tail strategy".into()))?,
                false => Tail::Guard,
            };
            s.split(&c, a.int(1)?, a.name(2)?, a.name(3)?, tail)?;
        }
        "reorder_loops"
        | "fuse"
        | "remove_loop"
        | "unroll"
        | "parallelize"
        | "lift_if"
        | "reorder_stmts"
        | "eliminate_dead_code"
        | "delete_pass"
        | "inline_window"
        | "insert_pass"
        | "inline_assign"
        | "lift_alloc"
        | "sink_alloc"
        | "inline_call"
        | "fold_into_reduce"
        | "merge_writes"
        | "split_write"
        | "lift_reduce_constant" => {
            let c = a.stmt(s, 0)?;
            match prim.name {
                "reorder_loops" => s.reorder_loops(&c)?,
                "fuse" => s.fuse(&c)?,
                "remove_loop" => s.remove_loop(&c)?,
                "unroll" => s.unroll(&c)?,
                "parallelize" => s.parallelize(&c)?,
                "lift_if" => s.lift_if(&c)?,
                "reorder_stmts" => s.reorder_stmts(&c)?,
                "eliminate_dead_code" => s.eliminate_dead_code(&c)?,
                "delete_pass" => s.delete_pass(&c)?,
                "inline_window" => s.inline_window(&c)?,
                "insert_pass" => s.insert_pass(&c)?,
                "inline_assign" => s.inline_assign(&c)?,
                "lift_alloc" => match a.has(1) {
                    true => s.lift_alloc_levels(
                        &c,
                        usize::try_from(a.int(1)?)
                            .ok()
                            .filter(|&n| n >= 1)
                            .ok_or_else(|| a.error(1, "a level count is 1 or more".into()))?,
                    )?,
                    false => s.lift_alloc(&c)?,
                },
                "sink_alloc" => s.sink_alloc(&c)?,
                "fold_into_reduce" => s.fold_into_reduce(&c)?,
                "merge_writes" => s.merge_writes(&c)?,
                "split_write" => s.split_write(&c)?,
                "lift_reduce_constant" => s.lift_reduce_constant(&c)?,
                _ => s.inline_call(&c)?,
            };
        }
        "fission" => {
            let c = a.stmt(s, 0)?;
            let lifts = match a.has(1) {
                true => usize::try_from(a.int(1)?)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| a.error(1, "a lift count is 1 or more".into()))?,
                false => 1,
            };
            s.fission_lifts(&c, lifts)?;
        }
        "add_loop" => {
            let c = a.stmt(s, 0)?;
            let hi = a.expr(s, &c, 2, None)?;
            s.add_loop(&c, a.name(1)?, &hi)?;
        }
        "cut" | "shift" | "add_guard" | "specialize" => {
            let c = a.stmt(s, 0)?;
            let e = a.expr(s, &c, 1, None)?;
            match prim.name {
                "cut" => s.cut(&c, &e)?,
                "shift" => s.shift(&c, &e)?,
                "add_guard" => s.add_guard(&c, &e)?,
                _ => s.specialize(&c, &e)?,
            };
        }
        "commute_expr" | "left_reassociate_expr" => {
            let c = a.stmt(s, 0)?;
            let e = a.expr(s, &c, 1, None)?;
            if prim.name == "commute_expr" {
                s.commute_expr(&c, &e)?;
            } else {
                s.left_reassociate_expr(&c, &e)?;
            }
        }
        "rewrite_expr" => {
            let c = a.stmt(s, 0)?;
            let e = a.expr(s, &c, 1, None)?;
            let new = a.expr(s, &c, 2, None)?;
            s.rewrite_expr(&c, &e, &new)?;
        }
        "simplify" => s.simplify()?,
        "bind_expr" => {
            let c = a.stmt(s, 0)?;
            let e = a.expr(s, &c, 1, None)?;
            let mem = match a.has(3) {
                true => memory(3)?,
                false => memories("DRAM_STACK")
                    .ok_or_else(|| a.error(1, "unknown memory `DRAM_STACK`".into()))?,
            };
            let count = match a.has(4) {
                true => usize::try_from(a.int(4)?)
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| a.error(4, "a count is 1 or more".into()))?,
                false => 1,
            };
            s.bind_expr_over(&c, count, &e, a.name(2)?, mem)?;
        }
        "stage_mem" => {
            let c = a.stmt(s, 0)?;
            let (buf, region) = a.region(s, &c, 1)?;
            let mem = match a.has(3) {
                true => memory(3)?,
                // A tile proved to fit the stack goes there, any other to the heap.
                false => {
                    let named = |n: &str| {
                        memories(n).ok_or_else(|| a.error(1, format!("unknown memory `{n}`")))
                    };
                    s.stage_mem_default_memory(
                        &c,
                        buf,
                        &region,
                        named("DRAM_STACK")?,
                        named("DRAM")?,
                    )?
                }
            };
            match a.has(4) && a.name(4)? == "accumulate" {
                true => s.stage_mem_accumulate(&c, 1, buf, &region, a.name(2)?, mem)?,
                false => s.stage_mem(&c, 1, buf, &region, a.name(2)?, mem)?,
            };
        }
        "set_memory" => {
            let c = a.stmt(s, 0)?;
            s.set_memory(&c, memory(1)?)?;
        }
        "set_precision" => {
            let c = a.stmt(s, 0)?;
            let t = weft_ir::DType::from_name(a.name(1)?)
                .ok_or_else(|| a.error(1, "unknown data type".into()))?;
            s.set_precision(&c, t)?;
        }
        "expand_dim" => {
            let c = a.stmt(s, 0)?;
            let extent = a.expr(s, &c, 1, None)?;
            let index = a.expr(s, &c, 2, None)?;
            s.expand_dim(&c, &extent, &index)?;
        }
        "divide_dim" => {
            let c = a.stmt(s, 0)?;
            let dim = usize::try_from(a.int(1)?)
                .map_err(|_| a.error(1, "a dimension is 0 or more".into()))?;
            s.divide_dim(&c, dim, a.int(2)?)?;
        }
        "reuse_buffer" => {
            let c = a.stmt(s, 0)?;
            s.reuse_buffer(&c, a.name(1)?)?;
        }
        "extract_proc" => {
            let c = a.stmt(s, 0)?;
            let name = new_proc_name(s, 1)?;
            let count = match a.has(2) {
                true => usize::try_from(a.int(2)?)
                    .map_err(|_| a.error(2, "a count is 1 or more".into()))?,
                false => 1,
            };
            s.extract_proc(&c, count, name)?;
        }
        "replace" | "call_eqv" => {
            let c = a.stmt(s, 0)?;
            let g = proc_named(s, 1)?;
            if prim.name == "replace" {
                s.replace(&c, &g)?;
            } else {
                s.call_eqv(&c, &g)?;
            }
        }
        "replace_all" => {
            let g = proc_named(s, 0)?;
            s.replace_all(&g)?;
        }
        "insert_call" => {
            let c = a.stmt(s, 0)?;
            let g = proc_named(s, 1)?;
            let w = a.window(s, &c, 2)?;
            s.insert_call(&c, &g, &w)?;
        }
        "set_window" => s.set_window(a.name(0)?)?,
        "rename" => {
            let name = new_proc_name(s, 0)?;
            s.rename(name)?;
            s.keep_current();
        }
        "partial_eval" => s.partial_eval(&a.bindings()?)?,
        "bind_config" => {
            let c = a.stmt(s, 0)?;
            let (cfg, field, ty) = a.config_field(2)?;
            let e = a.expr(s, &c, 1, Some(ty))?;
            s.bind_config(&c, &e, &cfg, field)?;
        }
        "write_config" => {
            let c = a.stmt(s, 0)?;
            let (cfg, field, ty) = a.config_field(1)?;
            let e = a.expr(s, &c, 2, Some(ty))?;
            s.write_config(&c, &cfg, field, &e)?;
        }
        // Buffer layouts and loop shapes.
        "rearrange_dim" => {
            let c = a.stmt(s, 0)?;
            let mut perm = Vec::new();
            let mut k = 1;
            while a.has(k) {
                perm.push(
                    usize::try_from(a.int(k)?)
                        .map_err(|_| a.error(k, "a dimension is 0 or more".into()))?,
                );
                k += 1;
            }
            s.rearrange_dim(&c, &perm)?;
        }
        "resize_dim" => {
            let c = a.stmt(s, 0)?;
            let dim = usize::try_from(a.int(1)?)
                .map_err(|_| a.error(1, "a dimension is 0 or more".into()))?;
            let size = a.expr(s, &c, 2, None)?;
            let offset = a.expr(s, &c, 3, None)?;
            s.resize_dim(&c, dim, &size, &offset)?;
        }
        "unroll_buffer" => {
            let c = a.stmt(s, 0)?;
            let dim = usize::try_from(a.int(1)?)
                .map_err(|_| a.error(1, "a dimension is 0 or more".into()))?;
            s.unroll_buffer(&c, dim)?;
        }
        "join_loops" | "lift_scope" | "delete_config" => {
            let c = a.stmt(s, 0)?;
            match prim.name {
                "join_loops" => s.join_loops(&c)?,
                "lift_scope" => s.lift_scope(&c)?,
                _ => s.delete_config(&c)?,
            };
        }
        "mult_loops" => {
            let c = a.stmt(s, 0)?;
            s.mult_loops(&c, a.name(1)?)?;
        }
        "divide_with_recompute" => {
            let c = a.stmt(s, 0)?;
            let outer_hi = a.expr(s, &c, 1, None)?;
            s.divide_with_recompute(&c, &outer_hi, a.int(2)?, a.name(3)?, a.name(4)?)?;
        }
        "autolift_alloc" => {
            let c = a.stmt(s, 0)?;
            let levels = match a.has(1) {
                true => usize::try_from(a.int(1)?)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| a.error(1, "a level count is 1 or more".into()))?,
                false => 1,
            };
            s.autolift_alloc(&c, levels)?;
        }
        "autosink_alloc" => {
            let c = a.stmt(s, 0)?;
            s.autosink_alloc(&c)?;
        }
        other => {
            // Every primitive of the table is dispatched above (a test walks the table).
            return Err(arg_error(
                step,
                None,
                format!("the scheduler does not implement `{other}`"),
            ));
        }
    }
    Ok(())
}
