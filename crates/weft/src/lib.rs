//! weft: a user-schedulable language toolkit.
//!
//! This crate is the front door: it re-exports the parts (IR, text front end, checker,
//! interpreter, C backend, JIT) and adds what ties them together: loading and checking a `.weft`
//! file in one step ([`load`]), ahead-of-time output for build systems ([`aot`]), the differential
//! runner behind `weft run` ([`run`]), and the `weft` command-line tool (`src/bin/weft.rs`).

/// The JIT example of the README (`examples/jit.rs`), run as a doc test so it cannot rot; a test
/// checks that the README shows exactly this file.
#[doc = concat!("```\n", include_str!("../examples/jit.rs"), "```")]
#[doc(hidden)]
pub mod readme_jit_example {}

pub mod aot;
pub mod build;
pub mod format;
pub mod hostbuf;
pub mod link;
pub mod pipeline;
pub mod run;

/// ndarray, whose views the JIT's call API takes ([`jit::BufArg`] converts them).
pub use ndarray;
pub use weft_c as c;
pub use weft_check as check;
pub use weft_interp as interp;
pub use weft_ir as ir;
pub use weft_jit as jit;
pub use weft_pipe as pipe;
pub use weft_sched as sched;
pub use weft_syntax as syntax;

use std::fmt;
use std::path::{Path, PathBuf};
use weft_ir::{Diagnostic, Module};
use weft_syntax::SourceMap;

/// A loaded `.weft` file: its module, the sources (for rendering diagnostics) and every file read.
pub struct Program {
    pub module: Module,
    pub sources: SourceMap,
    /// Every file read (the file and its imports), for dependency files.
    pub deps: Vec<PathBuf>,
    /// What the file sees: its items, its imports' and the prelude's (schedules name them).
    pub scope: weft_syntax::Scope,
}

/// An error with its diagnostics already rendered against the sources.
pub struct Error {
    pub diagnostics: Vec<Diagnostic>,
    pub rendered: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

/// The rendered diagnostics, as for `Display`: `fn main() -> Result<(), weft::Error>` then prints
/// what `weft check` prints rather than a dump of the structure.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

impl Error {
    pub fn new(sources: &SourceMap, diagnostics: Vec<Diagnostic>) -> Error {
        let rendered = diagnostics
            .iter()
            .map(|d| sources.render(d))
            .collect::<Vec<_>>()
            .join("\n");
        Error {
            diagnostics,
            rendered,
        }
    }

    /// An error that is not about a place in a program (I/O, a failing compiler).
    pub fn message(msg: impl Into<String>) -> Error {
        let msg = msg.into();
        Error {
            diagnostics: Vec::new(),
            rendered: msg,
        }
    }
}

/// Parse a `.weft` file and its imports.
pub fn parse(path: &Path) -> Result<Program, Error> {
    let mut sources = SourceMap::new();
    match weft_syntax::load_file(&mut sources, path) {
        Ok(loaded) => Ok(Program {
            module: loaded.module,
            sources,
            deps: loaded.deps,
            scope: loaded.scope,
        }),
        Err(d) => Err(Error::new(&sources, d)),
    }
}

/// Parse and check a `.weft` file and apply its schedules: the result is well typed and
/// statically safe, and each `schedule` declaration has become a proc of the module.
pub fn load(path: &Path) -> Result<Program, Error> {
    load_traced(path, None, |_, _, _| {})
}

/// [`load`] for source text (`name` names it in diagnostics). Built-in libraries can be imported
/// (`import "avx512";`), files cannot: the text has no directory.
pub fn load_str(name: &str, text: &str) -> Result<Program, Error> {
    let mut sources = SourceMap::new();
    let scope = weft_syntax::Scope::prelude();
    match weft_syntax::parse_module_in(&mut sources, name, text, &scope) {
        Ok((module, scope)) => check_and_schedule(
            Program {
                module,
                sources,
                deps: Vec::new(),
                scope,
            },
            None,
            |_, _, _| {},
        ),
        Err(d) => Err(Error::new(&sources, d)),
    }
}

/// [`load`], calling `on_step` with each schedule, each of its accepted steps, and the proc after
/// that step. With `only`, just that schedule and the schedules it builds on are applied.
pub fn load_traced(
    path: &Path,
    only: Option<&str>,
    on_step: impl FnMut(&weft_ir::ScheduleDecl, &weft_ir::SchedStep, &weft_ir::Proc),
) -> Result<Program, Error> {
    check_and_schedule(parse(path)?, only, on_step)
}

/// Check a parsed program, prove its parallel loops and apply its schedules (see [`load_traced`]).
fn check_and_schedule(
    mut p: Program,
    only: Option<&str>,
    on_step: impl FnMut(&weft_ir::ScheduleDecl, &weft_ir::SchedStep, &weft_ir::Proc),
) -> Result<Program, Error> {
    if let Err(d) = weft_check::check_module(&p.module) {
        return Err(Error::new(&p.sources, d));
    }
    check_parallel_loops(&p)?;
    apply_schedules(&mut p, only, on_step)?;
    Ok(p)
}

/// Prove the `par(...)` loops written in the source race-free (the checker proves bounds and
/// types; races need the scheduler's effect analysis). Scheduled procs are proved as they are made.
pub fn check_parallel_loops(p: &Program) -> Result<(), Error> {
    let mut analysis = weft_sched::effects::Analysis::new();
    // Each proc with the procs it calls (imported ones included); procs without parallel loops
    // cost no solver query.
    for proc in &p.module.procs {
        weft_sched::prims::parallelize::check_parallel_loops(&mut analysis, proc, "parallel")
            .map_err(|e| {
                let mut d = e.to_diagnostic();
                d.rule = "race";
                Error::new(&p.sources, vec![d])
            })?;
    }
    Ok(())
}

/// Apply the schedules of a parsed and checked program (with `only`, just that schedule and the
/// ones it builds on), adding each scheduled proc to the module; see [`load_traced`].
pub fn apply_schedules(
    p: &mut Program,
    only: Option<&str>,
    mut on_step: impl FnMut(&weft_ir::ScheduleDecl, &weft_ir::SchedStep, &weft_ir::Proc),
) -> Result<(), Error> {
    let mut wanted: Option<Vec<String>> = only.map(|n| vec![n.to_string()]);
    if let Some(w) = &mut wanted {
        // The schedules it builds on: its base, and the schedules its steps name (the procs a
        // `call_eqv` switches to), transitively.
        let mut k = 0;
        while let Some(name) = w.get(k).cloned() {
            k += 1;
            let Some(d) = p.module.schedules.iter().find(|d| d.name == name) else {
                continue;
            };
            let named = d
                .steps
                .iter()
                .flat_map(|s| &s.args)
                .filter_map(|a| match &a.value {
                    weft_ir::SchedValue::Name(n) => Some(n),
                    _ => None,
                });
            for n in std::iter::once(&d.base).chain(named) {
                if !w.contains(n) && p.module.schedules.iter().any(|d| &d.name == n) {
                    w.push(n.clone());
                }
            }
        }
    }
    for decl in p.module.schedules.clone() {
        if wanted.as_ref().is_some_and(|w| !w.contains(&decl.name)) {
            continue;
        }
        let Some(base) = p.module.proc(&decl.base).cloned() else {
            let d = Diagnostic::new(
                "unknown-name",
                decl.span,
                format!("unknown proc `{}`", decl.base),
            );
            return Err(Error::new(&p.sources, vec![d]));
        };
        let (module, scope) = (&p.module, &p.scope);
        // Memories and procs (instructions included) of the module (earlier schedules
        // included), its imports and the prelude, for the steps that name them.
        let memories = |name: &str| {
            module
                .memory(name)
                .or_else(|| scope.memories.get(name))
                .cloned()
                .or_else(|| weft_syntax::std_memory(name))
        };
        let procs = |name: &str| module.proc(name).or_else(|| scope.procs.get(name)).cloned();
        let (proc, sched) =
            weft_sched::script::apply_in(&decl, base, &memories, &procs, |step, proc| {
                on_step(&decl, step, proc)
            })
            .map_err(|d| Error::new(&p.sources, vec![d]))?;
        // A proc a step added (`extract_proc`, `rename`) must not take the name of a schedule
        // declared later, which the steps could not see, nor of a memory or config (items share
        // one namespace).
        let taken = |name: &str| {
            p.module.schedules.iter().any(|d| d.name == name)
                || memories(name).is_some()
                || module.config(name).is_some()
                || scope.configs.contains_key(name)
        };
        if let Some(q) = sched.extracted().iter().find(|q| taken(&q.name)) {
            let d = Diagnostic::new(
                "schedule",
                decl.span,
                format!(
                    "schedule `{}` adds a proc named `{}`, which names another item",
                    decl.name, q.name
                ),
            );
            return Err(Error::new(&p.sources, vec![d]));
        }
        // Every step was proved; checking the result again costs little and guards the
        // primitives themselves. Procs made by `extract_proc` join the module before the proc
        // that calls them. The module's procs it calls (earlier schedules' results among them)
        // were checked already, by the caller (`check_module`) or by this loop.
        let mut made: Vec<std::sync::Arc<weft_ir::Proc>> = sched.extracted().to_vec();
        made.push(proc);
        let checked = |q: &std::sync::Arc<weft_ir::Proc>| {
            p.module.procs.iter().any(|m| std::sync::Arc::ptr_eq(m, q))
        };
        if let Err(d) = weft_check::check_procs_trusting(&made, checked) {
            return Err(Error::new(&p.sources, d));
        }
        p.module.procs.extend(made);
    }
    // Procs that call a schedule now call the scheduled proc instead of its stand-in.
    let scheduled: std::collections::HashMap<String, std::sync::Arc<weft_ir::Proc>> = p
        .module
        .schedules
        .iter()
        .filter_map(|d| Some((d.name.clone(), p.module.proc(&d.name)?.clone())))
        .collect();
    link::link(&mut p.module.procs, &scheduled).map_err(|d| Error::new(&p.sources, d))
}
