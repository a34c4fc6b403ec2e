//! The weft text front end: reads `.weft` files into proc IR (`weft_ir::Module`) and renders
//! diagnostics against the source.
//!
//! The grammar is the canonical text form written by `weft_ir::print` (plus a little sugar:
//! `else if`, `@ MEM` defaulting to `DRAM`, comments, trailing commas); `docs/language.md`
//! describes it. For every proc `p`, `parse(print(p))` is alpha-equivalent to `p`.
//!
//! ```
//! use weft_syntax::{parse_module, SourceMap};
//! let mut sources = SourceMap::new();
//! let m = parse_module(
//!     &mut sources,
//!     "axpy.weft",
//!     "proc axpy(n: size, a: f32, x: f32[n], y: f32[n]) {\n\
//!          for i in 0..n { y[i] += a * x[i]; }\n\
//!      }",
//! )
//! .unwrap();
//! assert_eq!(m.procs[0].name, "axpy");
//! ```
//!
//! Name resolution: items (memories, configs, procs) must be defined before use; the built-in
//! library `std` (lib/std.weft: `DRAM`, `DRAM_STACK`) is always in scope. `import "lib";` brings
//! another built-in library into scope, `import "dir/file.weft";` a file relative to the importing
//! file (with [`load_file`]). Imported items are visible but not added to the importing
//! [`Module`], whose `imports` list keeps the import lines.
//!
//! Robustness: no input makes the parser panic or loop; nesting deeper than [`MAX_DEPTH`] is an
//! error, and each file is parsed on a short-lived thread with a 32 MiB stack so that the allowed
//! depth is safe whatever the caller's stack size and optimisation level.

mod lexer;
pub use lexer::{comments, layout, lex, Tok, Token};
mod parser;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use weft_ir::{Config, Diagnostic, Memory, Module, Proc, Span};

pub use parser::{parse_step, MAX_DEPTH};

/// The built-in libraries, importable by name. Each is parsed once per process. Every
/// [`SourceMap`] registers them first, in this order, so their spans (file id = position in this
/// table) render in any source map.
///
/// To add a library, append `("name", include_str!("../../../lib/name.weft"))`. `std` must stay
/// first: it is the prelude, implicitly in scope everywhere.
const BUILTIN_LIBS: &[(&str, &str)] = &[
    ("std", include_str!("../../../lib/std.weft")),
    ("avx512", include_str!("../../../lib/avx512.weft")),
    ("avx2", include_str!("../../../lib/avx2.weft")),
    ("cache", include_str!("../../../lib/cache.weft")),
];

/// Index of the prelude in [`BUILTIN_LIBS`].
const STD: usize = 0;

/// The source files of a compilation: names and texts, indexed by the file id that
/// [`weft_ir::Span::file`] holds.
#[derive(Clone, Debug)]
pub struct SourceMap {
    files: Vec<(String, String)>,
}

impl Default for SourceMap {
    fn default() -> SourceMap {
        SourceMap::new()
    }
}

impl SourceMap {
    /// A source map holding only the built-in libraries (file ids `0..n`, so that spans of the
    /// prelude's items render here too).
    pub fn new() -> SourceMap {
        SourceMap {
            files: BUILTIN_LIBS
                .iter()
                .map(|(name, text)| (format!("<{name}>"), text.to_string()))
                .collect(),
        }
    }

    /// Add a file; returns its id (for `Span::file`).
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> u32 {
        self.files.push((name.into(), text.into()));
        (self.files.len() - 1) as u32
    }

    /// The name of file `id`.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.files.get(id as usize).map(|f| f.0.as_str())
    }

    /// The text of file `id`.
    pub fn text(&self, id: u32) -> Option<&str> {
        self.files.get(id as usize).map(|f| f.1.as_str())
    }

    /// `file:line:column` (1-based) of the start of a span, if it is in this map.
    pub fn location(&self, span: Span) -> Option<String> {
        let (name, text) = self.files.get(span.file as usize)?;
        let lo = clamp_to_char(text, span.lo as usize);
        let before = &text[..lo];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Some(format!("{name}:{line}:{col}"))
    }

    /// A diagnostic as plain text (no colours): `error[rule]: message`, then the file, line and
    /// column, the source line with the span underlined by carets, every label, and the notes.
    /// A diagnostic without a source position gets just the message and notes.
    pub fn render(&self, d: &Diagnostic) -> String {
        use ariadne::{CharSet, Config as AConfig, IndexType, Label, Report, ReportKind};
        let Some(primary) = self.range(d.span) else {
            return d.to_string() + "\n";
        };
        let config = AConfig::default()
            .with_color(false)
            .with_char_set(CharSet::Ascii)
            .with_index_type(IndexType::Byte);
        let mut report = Report::build(ReportKind::Error, primary.clone())
            .with_config(config)
            .with_code(d.rule)
            .with_message(&d.message)
            .with_label(Label::new(primary).with_message("here"));
        for l in &d.labels {
            if let Some(r) = self.range(l.span) {
                report = report.with_label(Label::new(r).with_message(&l.message));
            } else {
                report = report.with_note(&l.message);
            }
        }
        for n in &d.notes {
            report = report.with_note(n);
        }
        let cache = ariadne::sources(
            self.files
                .iter()
                .map(|(n, t)| (n.clone(), t.clone()))
                .collect::<Vec<_>>(),
        );
        let mut out = Vec::new();
        let loc = self.location(d.span).unwrap_or_default();
        match report.finish().write(cache, &mut out) {
            Ok(()) => {
                let text = String::from_utf8_lossy(&out).into_owned();
                // ariadne names the place as `file:line:col` inside its frame; put it on the first
                // line as well so the position is grep-able.
                format!("{loc}: {text}")
            }
            Err(_) => format!("{loc}: {d}\n"),
        }
    }

    /// A span as an ariadne span (file name, byte range), clamped to the text; `None` for dummy
    /// spans and unknown files.
    fn range(&self, span: Span) -> Option<(String, std::ops::Range<usize>)> {
        if span.is_dummy() {
            return None;
        }
        let (name, text) = self.files.get(span.file as usize)?;
        let lo = clamp_to_char(text, span.lo as usize);
        let hi = clamp_to_char(text, (span.hi as usize).max(lo));
        Some((name.clone(), lo..hi))
    }
}

/// The largest char boundary of `text` at or before `i`.
fn clamp_to_char(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The items visible in a module: its own and those of its imports (and the prelude).
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub memories: BTreeMap<String, Arc<Memory>>,
    pub configs: BTreeMap<String, Arc<Config>>,
    pub procs: BTreeMap<String, Arc<Proc>>,
}

impl Scope {
    /// The scope every module starts with: the prelude (`std`).
    pub fn prelude() -> Scope {
        let mut s = Scope::default();
        s.add_module(prelude());
        s
    }

    /// Make the items of `m` visible (later definitions of a name replace earlier ones).
    pub fn add_module(&mut self, m: &Module) {
        for x in &m.memories {
            self.memories.insert(x.name.clone(), x.clone());
        }
        for x in &m.configs {
            self.configs.insert(x.name.clone(), x.clone());
        }
        for x in &m.procs {
            self.procs.insert(x.name.clone(), x.clone());
        }
    }

    /// A visible memory.
    pub fn memory(&self, name: &str) -> Option<&Arc<Memory>> {
        self.memories.get(name)
    }

    /// A visible config.
    pub fn config(&self, name: &str) -> Option<&Arc<Config>> {
        self.configs.get(name)
    }

    /// A visible proc or instruction.
    pub fn proc(&self, name: &str) -> Option<&Arc<Proc>> {
        self.procs.get(name)
    }
}

/// A file loaded with its imports.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The file's own items.
    pub module: Module,
    /// Every file read (the file itself and all imported files, transitively), for depfiles.
    pub deps: Vec<PathBuf>,
    /// Everything visible at the end of the file: its own items, its imports and the prelude.
    pub scope: Scope,
}

type BuiltinResult = Result<Module, Vec<Diagnostic>>;

static BUILTIN_CELLS: [OnceLock<BuiltinResult>; BUILTIN_LIBS.len()] =
    [const { OnceLock::new() }; BUILTIN_LIBS.len()];

/// The names of the built-in libraries.
pub fn builtin_libraries() -> Vec<&'static str> {
    BUILTIN_LIBS.iter().map(|(n, _)| *n).collect()
}

/// A built-in library, parsed once per process. `loading` lists the built-in libraries whose
/// parsing led here, so that an import cycle among them is an error instead of a deadlock on
/// their `OnceLock`.
fn builtin(index: usize, at: Span, loading: &[usize]) -> Result<&'static Module, Vec<Diagnostic>> {
    let cell = &BUILTIN_CELLS[index];
    if let Some(r) = cell.get() {
        return r.as_ref().map_err(|e| e.clone());
    }
    let name = BUILTIN_LIBS[index].0;
    if loading.contains(&index) {
        return Err(vec![Diagnostic::new(
            "import",
            at,
            format!("import cycle through built-in library `{name}`"),
        )]);
    }
    let mut stack = loading.to_vec();
    stack.push(index);
    let r = cell.get_or_init(|| {
        let mut scope = if index == STD {
            Scope::default()
        } else {
            Scope::prelude()
        };
        let mut resolve = |lib: &str, span: Span| resolve_builtin(lib, span, &stack);
        parser::parse_items(
            index as u32,
            BUILTIN_LIBS[index].1,
            &mut scope,
            &mut resolve,
        )
    });
    r.as_ref().map_err(|e| e.clone())
}

/// Resolve a library name (no `.weft` suffix) to a built-in library.
fn resolve_builtin(name: &str, span: Span, loading: &[usize]) -> Result<Module, Vec<Diagnostic>> {
    match BUILTIN_LIBS.iter().position(|(n, _)| *n == name) {
        Some(i) => builtin(i, span, loading).cloned(),
        None => Err(vec![Diagnostic::new(
            "import",
            span,
            format!("unknown library `{name}`"),
        )
        .with_note(format!(
            "built-in libraries: {}; a file import ends in `.weft`",
            builtin_libraries().join(", ")
        ))]),
    }
}

/// The prelude (`lib/std.weft`), parsed once. Always in scope in every module.
pub fn prelude() -> &'static Module {
    static EMPTY: Module = Module {
        imports: Vec::new(),
        memories: Vec::new(),
        configs: Vec::new(),
        procs: Vec::new(),
        schedules: Vec::new(),
        pipelines: Vec::new(),
        steps_items: Vec::new(),
    };
    // The prelude is part of this crate and covered by tests; should it ever fail to parse, the
    // empty module makes every memory lookup fail with a clear `unknown memory` error.
    builtin(STD, Span::DUMMY, &[]).unwrap_or(&EMPTY)
}

/// A memory of the prelude, e.g. `std_memory("DRAM")`.
pub fn std_memory(name: &str) -> Option<Arc<Memory>> {
    prelude().memory(name).cloned()
}

/// Parse a whole file given as text. Built-in library imports are resolved; file imports
/// (`"x.weft"`) need a directory and are reported as errors here; use [`load_file`] for them.
pub fn parse_module(
    sources: &mut SourceMap,
    file_name: &str,
    text: &str,
) -> Result<Module, Vec<Diagnostic>> {
    parse_module_in(sources, file_name, text, &Scope::prelude()).map(|(m, _)| m)
}

/// Parse a whole file with `scope` visible from the start (for front ends and tests that parse
/// against items defined elsewhere). Returns the module and everything visible at its end.
pub fn parse_module_in(
    sources: &mut SourceMap,
    file_name: &str,
    text: &str,
    scope: &Scope,
) -> Result<(Module, Scope), Vec<Diagnostic>> {
    let file = sources.add(file_name, text);
    let mut scope = scope.clone();
    let mut resolve = |name: &str, span: Span| {
        if name.ends_with(".weft") {
            Err(vec![Diagnostic::new(
                "import",
                span,
                format!("cannot import file `{name}` here: the source has no directory"),
            )
            .with_note(
                "load the file with `weft_syntax::load_file` to resolve file imports",
            )])
        } else {
            resolve_builtin(name, span, &[])
        }
    };
    let m = parser::parse_items(file, text, &mut scope, &mut resolve)?;
    Ok((m, scope))
}

/// Read and parse a `.weft` file, resolving its imports (built-in libraries and files relative
/// to the importing file's directory, transitively). A cycle of imports is an error.
pub fn load_file(sources: &mut SourceMap, path: &Path) -> Result<Loaded, Vec<Diagnostic>> {
    let mut loader = Loader::default();
    let (module, scope) = loader.load(sources, path, Span::DUMMY)?;
    Ok(Loaded {
        module,
        deps: loader.deps,
        scope,
    })
}

#[derive(Default)]
struct Loader {
    /// Files already parsed (by canonical path), so a file imported twice is parsed once and its
    /// items keep their identity.
    done: HashMap<PathBuf, Module>,
    /// Files being parsed, outermost first, for cycle detection.
    stack: Vec<PathBuf>,
    deps: Vec<PathBuf>,
}

impl Loader {
    fn load(
        &mut self,
        sources: &mut SourceMap,
        path: &Path,
        at: Span,
    ) -> Result<(Module, Scope), Vec<Diagnostic>> {
        let read_err = |e: std::io::Error| {
            vec![Diagnostic::new(
                "import",
                at,
                format!("cannot read `{}`: {e}", path.display()),
            )]
        };
        let canon = path.canonicalize().map_err(read_err)?;
        if let Some(pos) = self.stack.iter().position(|p| *p == canon) {
            let chain: Vec<String> = self.stack[pos..]
                .iter()
                .chain(std::iter::once(&canon))
                .map(|p| p.display().to_string())
                .collect();
            return Err(vec![Diagnostic::new(
                "import",
                at,
                format!("import cycle: {}", chain.join(" -> ")),
            )]);
        }
        if let Some(m) = self.done.get(&canon) {
            return Ok((m.clone(), Scope::default()));
        }
        let text = std::fs::read_to_string(path).map_err(read_err)?;
        self.deps.push(path.to_path_buf());
        let file = sources.add(path.display().to_string(), text.clone());
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.stack.push(canon.clone());
        let mut scope = Scope::prelude();
        let result = {
            let mut resolve = |name: &str, span: Span| {
                if name.ends_with(".weft") {
                    self.load(sources, &dir.join(name), span).map(|(m, _)| m)
                } else {
                    resolve_builtin(name, span, &[])
                }
            };
            parser::parse_items(file, &text, &mut scope, &mut resolve)
        };
        self.stack.pop();
        let m = result?;
        self.done.insert(canon, m.clone());
        Ok((m, scope))
    }
}
