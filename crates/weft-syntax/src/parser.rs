//! The recursive-descent parser: tokens to proc IR, with name resolution.
//!
//! Expressions are built with the typed constructors of `weft_ir::expr` in the same order as the
//! Rust builder (`weft_ir::build`) builds them, and literals are coerced by the same contexts, so a
//! parsed proc has exactly the types the builder would have given it. The parser checks syntax and
//! names only; typing is the checker's job.

mod schedule;
mod steps;

use crate::lexer::{lex, Tok, Token};
use crate::Scope;
use std::collections::HashMap;
use std::sync::Arc;
use weft_ir::proc::FieldType;
use weft_ir::{
    Arg, ArgKind, BinOp, Block, BufType, Config, ConfigField, CtrlType, DType, Diagnostic, Expr,
    Instr, MathFn, Memory, Module, Proc, Span, Stmt, StmtKind, Sym, Ty, UnOp, WinCoord,
};

/// What a memory declaration may contain, for the message when it contains something else.
const MEMORY_FIELDS: &str =
    "a memory field (`header`, `alloc`, `free`, `access`, `addressable`, `last_dim`, `max_bytes`, `isa`, `dtypes`) or `}`";

/// Nesting limit for expressions and blocks, so that deeply nested input is an error instead of
/// a stack overflow. Long flat operator chains, which the parser builds without recursion, are
/// limited by the height of the tree they make (`weft_ir::limits::MAX_EXPR_DEPTH`).
pub const MAX_DEPTH: usize = weft_ir::limits::MAX_NESTING;

/// Resolves an `import "..."` line: the imported module (its own items are made visible), or the
/// diagnostics explaining why it could not be loaded.
pub type Resolver<'r> = dyn FnMut(&str, Span) -> Result<Module, Vec<Diagnostic>> + Send + 'r;

/// Stack size of the thread a file is parsed on. The parser is recursive and its frames are large
/// in unoptimised builds (about 20 KiB per nesting level); a dedicated thread makes
/// [`MAX_DEPTH`] levels safe whatever the caller's stack is.
const PARSE_STACK: usize = 32 << 20;

type PResult<T> = Result<T, Diagnostic>;

/// What a variable name stands for inside a proc.
#[derive(Clone, Debug)]
enum VarKind {
    /// A control value of this expression type (`Ty::Int` or `Ty::Bool`).
    Ctrl(Ty),
    /// A buffer, tensor or window with this element type and rank.
    Buf { elem: DType, rank: usize },
}

#[derive(Clone, Debug)]
struct Binding {
    name: String,
    sym: Sym,
    kind: VarKind,
    span: Span,
}

struct Parser<'a, 'r> {
    file: u32,
    toks: Vec<Token>,
    pos: usize,
    /// End of the last consumed token, for node spans.
    prev_hi: u32,
    depth: usize,
    scope: &'a mut Scope,
    /// Items defined in this module (one namespace for all kinds), for duplicate detection.
    own: HashMap<String, Span>,
    /// Variables in scope, innermost last.
    vars: Vec<Binding>,
    resolver: &'a mut Resolver<'r>,
    diags: Vec<Diagnostic>,
    module: Module,
    /// The source text, for the verbatim text of schedule arguments.
    text: String,
    /// Unknown names become placeholders (in schedule step arguments, whose names `weft-sched`
    /// resolves where the step applies).
    placeholders: bool,
    /// The placeholder symbols of the argument being read, by name.
    placeholder_syms: std::cell::RefCell<HashMap<String, Sym>>,
    /// The `steps` items of this file so far: their order of definition, parameters and body
    /// tokens.
    steps_defs: HashMap<String, (usize, Vec<String>, Vec<Token>)>,
    /// Reading steps expanded from loops and `steps` calls: an argument's text is made from its
    /// tokens (they come from several places of the file).
    expanded: bool,
}

/// Parse the items of one file whose tokens carry file id `file`. `scope` holds the items visible
/// before the first line (the prelude) and, on return, everything visible at the end.
pub fn parse_items(
    file: u32,
    text: &str,
    scope: &mut Scope,
    resolver: &mut Resolver<'_>,
) -> Result<Module, Vec<Diagnostic>> {
    let outcome = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("weft-parse".into())
            .stack_size(PARSE_STACK)
            .spawn_scoped(s, || {
                parse_items_here(file, text, &mut *scope, &mut *resolver)
            })
            .ok()
            .map(|h| h.join())
    });
    match outcome {
        Some(Ok(r)) => r,
        // A panic is a parser bug: let it surface as one (tests and fuzzers rely on this).
        Some(Err(payload)) => std::panic::resume_unwind(payload),
        // No thread could be started: parse here, within the caller's stack.
        None => parse_items_here(file, text, scope, resolver),
    }
}

fn parse_items_here(
    file: u32,
    text: &str,
    scope: &mut Scope,
    resolver: &mut Resolver<'_>,
) -> Result<Module, Vec<Diagnostic>> {
    let toks = lex(file, text).map_err(|d| vec![d])?;
    let mut p = Parser::new(file, toks, scope, resolver, text);
    p.items();
    if p.diags.is_empty() {
        Ok(p.module)
    } else {
        Err(p.diags)
    }
}

/// Parse one schedule step (`split(i, 4, io, ii)`, without the `;`) with the items of `scope`
/// visible (its configs and memories), for building schedules from Rust.
pub fn parse_step(
    file: u32,
    text: &str,
    scope: &mut Scope,
) -> Result<weft_ir::SchedStep, Diagnostic> {
    let src = format!("{text};");
    let toks = lex(file, &src)?;
    let mut resolver = |_: &str, sp: Span| -> Result<Module, Vec<Diagnostic>> {
        Err(vec![Diagnostic::new("syntax", sp, "no imports in a step")])
    };
    let mut p = Parser::new(file, toks, scope, &mut resolver, &src);
    let step = p.step()?;
    if *p.tok() != Tok::Eof {
        return Err(p.expected("the end of the step"));
    }
    Ok(step)
}

const ITEM_KEYWORDS: &[&str] = &[
    "import", "memory", "config", "proc", "instr", "schedule", "pipeline",
];

fn is_keyword(s: &str) -> bool {
    weft_ir::print::KEYWORDS.contains(&s)
}

impl<'a, 'r> Parser<'a, 'r> {
    fn new(
        file: u32,
        toks: Vec<Token>,
        scope: &'a mut Scope,
        resolver: &'a mut Resolver<'r>,
        text: &str,
    ) -> Self {
        Parser {
            file,
            toks,
            pos: 0,
            prev_hi: 0,
            depth: 0,
            scope,
            own: HashMap::new(),
            vars: Vec::new(),
            resolver,
            diags: Vec::new(),
            module: Module::default(),
            text: text.to_string(),
            placeholders: false,
            placeholder_syms: Default::default(),
            steps_defs: HashMap::new(),
            expanded: false,
        }
    }

    // ----- token helpers -----

    fn tok(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn tok_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }

    fn cur_span(&self) -> Span {
        let t = &self.toks[self.pos.min(self.toks.len() - 1)];
        Span::new(self.file, t.lo, t.hi)
    }

    fn lo(&self) -> u32 {
        self.toks[self.pos.min(self.toks.len() - 1)].lo
    }

    fn span_from(&self, lo: u32) -> Span {
        Span::new(self.file, lo, self.prev_hi.max(lo))
    }

    fn bump(&mut self) {
        if self.pos < self.toks.len() - 1 {
            self.prev_hi = self.toks[self.pos].hi;
            self.pos += 1;
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.tok(), Tok::Punct(q) if *q == p)
    }

    fn is_kw(&self, k: &str) -> bool {
        matches!(self.tok(), Tok::Ident(s) if s == k)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        Diagnostic::new(
            "syntax",
            self.cur_span(),
            format!("expected {what}, found {}", self.tok().describe()),
        )
    }

    fn expect_punct(&mut self, p: &str) -> PResult<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    fn expect_kw(&mut self, k: &str) -> PResult<()> {
        if self.is_kw(k) {
            self.bump();
            Ok(())
        } else {
            Err(self.expected(&format!("`{k}`")))
        }
    }

    /// A name being defined or referenced: an identifier that is not a keyword.
    fn name(&mut self) -> PResult<(String, Span)> {
        match self.tok().clone() {
            Tok::Ident(s) if !is_keyword(&s) => {
                let sp = self.cur_span();
                self.bump();
                Ok((s, sp))
            }
            Tok::Ident(s) => Err(Diagnostic::new(
                "syntax",
                self.cur_span(),
                format!("expected a name, found keyword `{s}` (keywords cannot be names)"),
            )),
            _ => Err(self.expected("a name")),
        }
    }

    fn string(&mut self) -> PResult<String> {
        match self.tok().clone() {
            Tok::Str(s) => {
                self.bump();
                Ok(s)
            }
            _ => Err(self.expected("a string")),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                "syntax",
                self.cur_span(),
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ----- items -----

    fn items(&mut self) {
        while *self.tok() != Tok::Eof {
            self.depth = 0;
            self.vars.clear();
            let r = match self.tok() {
                Tok::Ident(s) if s == "import" => self.import(),
                Tok::Ident(s) if s == "memory" => self.memory(),
                Tok::Ident(s) if s == "config" => self.config(),
                Tok::Ident(s) if s == "proc" => self.proc(false),
                Tok::Ident(s) if s == "instr" => self.proc(true),
                Tok::Ident(s) if s == "schedule" => self.schedule(),
                Tok::Ident(s) if s == "pipeline" => self.pipeline_item(),
                Tok::Ident(s) if s == "steps" => self.steps_item(),
                _ => Err(self.expected(
                    "an item (`import`, `memory`, `config`, `proc`, `instr`, `schedule`, `steps` or `pipeline`)",
                )),
            };
            if let Err(d) = r {
                self.diags.push(d);
                self.recover();
            }
        }
    }

    /// A `pipeline` item, kept as text for the pipeline layer: its name, then everything up to
    /// the brace that closes its first `{`.
    pub(super) fn pipeline_item(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, span) = self.name()?;
        self.define_item(&name, span)?;
        self.skip_braced()?;
        self.push_pipeline_item(name, None, lo);
        Ok(())
    }

    /// The source text under `span` (an item's, kept as written).
    pub(super) fn span_text(&self, span: Span) -> String {
        self.text
            .get(span.lo as usize..span.hi as usize)
            .unwrap_or_default()
            .to_string()
    }

    pub(super) fn push_pipeline_item(&mut self, name: String, base: Option<String>, lo: u32) {
        let span = self.span_from(lo);
        let text = self.span_text(span);
        self.module.pipelines.push(weft_ir::PipelineItem {
            name,
            base,
            text,
            span,
        });
    }

    /// Skip to the `}` that closes the next `{`, inclusive.
    pub(super) fn skip_braced(&mut self) -> PResult<()> {
        while !self.is_punct("{") {
            if *self.tok() == Tok::Eof {
                return Err(self.expected("`{`"));
            }
            self.bump();
        }
        let mut depth = 0usize;
        loop {
            match self.tok() {
                Tok::Eof => return Err(self.expected("`}`")),
                Tok::Punct("{") => depth += 1,
                Tok::Punct("}") => {
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skip to the next item keyword after an error, so later items are still checked.
    fn recover(&mut self) {
        self.bump();
        while *self.tok() != Tok::Eof {
            if matches!(self.tok(), Tok::Ident(s) if ITEM_KEYWORDS.contains(&s.as_str())) {
                return;
            }
            self.bump();
        }
    }

    /// Register an item name of this module; a second definition is an error.
    fn define_item(&mut self, name: &str, span: Span) -> PResult<()> {
        if let Some(prev) = self.own.get(name) {
            return Err(Diagnostic::new(
                "duplicate-definition",
                span,
                format!("duplicate definition of `{name}`"),
            )
            .with_label(*prev, format!("`{name}` is first defined here")));
        }
        self.own.insert(name.to_string(), span);
        Ok(())
    }

    fn import(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let name = self.string()?;
        self.expect_punct(";")?;
        let span = self.span_from(lo);
        self.module.imports.push(name.clone());
        let m = match (self.resolver)(&name, span) {
            Ok(m) => m,
            Err(ds) => {
                // Report the inner diagnostics; the import line itself is reported by the
                // resolver when the library or file is missing.
                let mut ds = ds.into_iter();
                let first = ds.next().unwrap_or_else(|| {
                    Diagnostic::new("import", span, format!("cannot import `{name}`"))
                });
                self.diags.extend(ds);
                return Err(first);
            }
        };
        let clash = |what: &str, n: &str| {
            Diagnostic::new(
                "import",
                span,
                format!("{what} `{n}` imported by `{name}` conflicts with another definition"),
            )
        };
        for x in &m.memories {
            if let Some(prev) = self.scope.memories.get(&x.name) {
                if !Arc::ptr_eq(prev, x) {
                    return Err(clash("memory", &x.name));
                }
            }
            self.scope.memories.insert(x.name.clone(), x.clone());
        }
        for x in &m.configs {
            if let Some(prev) = self.scope.configs.get(&x.name) {
                if !Arc::ptr_eq(prev, x) {
                    return Err(clash("config", &x.name));
                }
            }
            self.scope.configs.insert(x.name.clone(), x.clone());
        }
        for x in &m.procs {
            if let Some(prev) = self.scope.procs.get(&x.name) {
                if !Arc::ptr_eq(prev, x) {
                    return Err(clash("proc", &x.name));
                }
            }
            self.scope.procs.insert(x.name.clone(), x.clone());
        }
        Ok(())
    }

    /// The string of an `isa` field: instruction-set extension names separated by commas or
    /// spaces (`"avx512f, fma"`).
    fn isa_list(&mut self) -> PResult<Vec<String>> {
        let at = self.cur_span();
        let text = self.string()?;
        let isa: Vec<String> = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect();
        let well_formed = |x: &String| {
            x.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.')
        };
        if let Some(bad) = isa.iter().find(|x| !well_formed(x)) {
            return Err(Diagnostic::new(
                "syntax",
                at,
                format!("`{bad}` is not an instruction-set extension name (lowercase letters, digits and `.`, like `avx512f`)"),
            ));
        }
        Ok(isa)
    }

    fn memory(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, name_span) = self.name()?;
        self.define_item(&name, name_span)?;
        self.expect_punct("{")?;
        let mut fields: HashMap<&'static str, Span> = HashMap::new();
        let (mut header, mut alloc, mut free, mut access) = (None, None, None, None);
        let mut addressable = None;
        let mut last_dim = None;
        let mut max_bytes = None;
        let mut isa = Vec::new();
        let mut dtypes = Vec::new();
        while !self.is_punct("}") {
            let key: &'static str = match self.tok() {
                Tok::Ident(s) => match s.as_str() {
                    "header" => "header",
                    "alloc" => "alloc",
                    "free" => "free",
                    "access" => "access",
                    "addressable" => "addressable",
                    "last_dim" => "last_dim",
                    "max_bytes" => "max_bytes",
                    "isa" => "isa",
                    "dtypes" => "dtypes",
                    _ => return Err(self.expected(MEMORY_FIELDS)),
                },
                _ => return Err(self.expected(MEMORY_FIELDS)),
            };
            let key_span = self.cur_span();
            if let Some(prev) = fields.insert(key, key_span) {
                return Err(Diagnostic::new(
                    "duplicate-definition",
                    key_span,
                    format!("memory field `{key}` given twice"),
                )
                .with_label(prev, "first given here"));
            }
            self.bump();
            match key {
                "header" => header = Some(self.string()?),
                "alloc" => alloc = Some(self.string()?),
                "free" => free = Some(self.string()?),
                "access" => access = Some(self.string()?),
                "addressable" => {
                    addressable = Some(if self.is_kw("true") {
                        true
                    } else if self.is_kw("false") {
                        false
                    } else {
                        return Err(self.expected("`true` or `false`"));
                    });
                    self.bump();
                }
                "isa" => isa = self.isa_list()?,
                "dtypes" => {
                    let at = self.cur_span();
                    let text = self.string()?;
                    for name in text
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|x| !x.is_empty())
                    {
                        let t = DType::from_name(name).ok_or_else(|| {
                            Diagnostic::new("syntax", at, format!("`{name}` is not a data type"))
                        })?;
                        dtypes.push(t);
                    }
                }
                "last_dim" => last_dim = Some(self.int_literal()?),
                _ => {
                    let at = self.cur_span();
                    let b = self.int_literal()?;
                    if b <= 0 {
                        return Err(Diagnostic::new(
                            "syntax",
                            at,
                            format!("`max_bytes` must be positive, got {b}"),
                        ));
                    }
                    max_bytes = Some(b);
                }
            }
        }
        self.bump();
        let span = self.span_from(lo);
        let missing = |f: &str| {
            Diagnostic::new(
                "syntax",
                span,
                format!("memory `{name}` is missing its `{f}` field"),
            )
        };
        let mem = Memory {
            name: name.clone(),
            header: header.ok_or_else(|| missing("header"))?,
            alloc: alloc.ok_or_else(|| missing("alloc"))?,
            free: free.ok_or_else(|| missing("free"))?,
            access: access.ok_or_else(|| missing("access"))?,
            addressable: addressable.ok_or_else(|| missing("addressable"))?,
            last_dim,
            max_bytes,
            isa,
            dtypes,
            span,
        };
        let mem = Arc::new(mem);
        self.scope.memories.insert(name, mem.clone());
        self.module.memories.push(mem);
        Ok(())
    }

    /// An integer literal with an optional leading `-`.
    fn int_literal(&mut self) -> PResult<i64> {
        let neg = self.eat_punct("-");
        let sp = self.cur_span();
        match *self.tok() {
            Tok::Int(m) => {
                self.bump();
                int_value(m, neg).ok_or_else(|| {
                    Diagnostic::new("syntax", sp, "integer literal out of range for i64")
                })
            }
            _ => Err(self.expected("an integer")),
        }
    }

    fn config(&mut self) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, name_span) = self.name()?;
        self.define_item(&name, name_span)?;
        self.expect_punct("{")?;
        let mut fields: Vec<ConfigField> = Vec::new();
        let mut spans: HashMap<String, Span> = HashMap::new();
        while !self.is_punct("}") {
            // Field names are only ever used after `Cfg.`, so keywords are unambiguous here.
            let (fname, fspan) = match self.tok().clone() {
                Tok::Ident(s) => {
                    let sp = self.cur_span();
                    self.bump();
                    (s, sp)
                }
                _ => return Err(self.expected("a field name or `}`")),
            };
            if let Some(prev) = spans.get(&fname) {
                return Err(Diagnostic::new(
                    "duplicate-definition",
                    fspan,
                    format!("duplicate definition of config field `{fname}`"),
                )
                .with_label(*prev, format!("`{fname}` is first defined here")));
            }
            spans.insert(fname.clone(), fspan);
            self.expect_punct(":")?;
            let ty = match self.tok() {
                Tok::Ident(s) => match s.as_str() {
                    "size" => Some(FieldType::Ctrl(CtrlType::Size)),
                    "index" => Some(FieldType::Ctrl(CtrlType::Index)),
                    "stride" => Some(FieldType::Ctrl(CtrlType::Stride)),
                    // `bool` is printed the same for both; the control boolean is the one
                    // conditions use.
                    "bool" => Some(FieldType::Ctrl(CtrlType::Bool)),
                    s => DType::from_name(s).map(FieldType::Data),
                },
                _ => None,
            };
            let ty = ty.ok_or_else(|| {
                self.expected("a field type (`size`, `index`, `stride`, `bool` or a data type)")
            })?;
            self.bump();
            fields.push(ConfigField { name: fname, ty });
            if !self.eat_punct(",") && !self.is_punct("}") {
                return Err(self.expected("`,` or `}`"));
            }
        }
        self.bump();
        let cfg = Arc::new(Config {
            name: name.clone(),
            fields,
            span: self.span_from(lo),
        });
        self.scope.configs.insert(name, cfg.clone());
        self.module.configs.push(cfg);
        Ok(())
    }

    fn proc(&mut self, is_instr: bool) -> PResult<()> {
        let lo = self.lo();
        self.bump();
        let (name, name_span) = self.name()?;
        self.define_item(&name, name_span)?;
        self.expect_punct("(")?;
        let mut args = Vec::new();
        while !self.is_punct(")") {
            args.push(self.arg()?);
            if !self.eat_punct(",") && !self.is_punct(")") {
                return Err(self.expected("`,` or `)`"));
            }
        }
        self.bump();
        let instr = if is_instr {
            let template = self.string()?;
            // Optional clauses, as a memory's fields: what the template's C needs.
            let (mut isa, mut header, mut finish) = (None, None, None);
            loop {
                let clause = match self.tok() {
                    Tok::Ident(k) if ["isa", "header", "finish"].contains(&k.as_str()) => k.clone(),
                    _ => break,
                };
                let at = self.cur_span();
                self.bump();
                let given = match clause.as_str() {
                    "isa" => isa.replace(self.isa_list()?).is_some(),
                    "header" => header.replace(self.string()?).is_some(),
                    _ => finish.replace(self.string()?).is_some(),
                };
                if given {
                    return Err(Diagnostic::new(
                        "syntax",
                        at,
                        format!("instruction clause `{clause}` given twice"),
                    ));
                }
            }
            let (isa, header, finish) = (
                isa.unwrap_or_default(),
                header.unwrap_or_default(),
                finish.unwrap_or_default(),
            );
            Some(Instr {
                template,
                header,
                isa,
                finish,
            })
        } else {
            None
        };
        self.expect_punct("{")?;
        let mut preds = Vec::new();
        while self.is_kw("assert") {
            self.bump();
            preds.push(self.expr()?.coerce(Ty::Bool));
            self.expect_punct(";")?;
        }
        let body = self.stmts_until_close()?;
        self.expect_punct("}")?;
        let proc = Arc::new(Proc {
            name: name.clone(),
            args,
            preds,
            body,
            instr,
            span: self.span_from(lo),
            origin: None,
        });
        self.scope.procs.insert(name, proc.clone());
        self.module.procs.push(proc);
        Ok(())
    }

    fn arg(&mut self) -> PResult<Arg> {
        let (name, name_span) = self.name()?;
        self.expect_punct(":")?;
        let ctrl = match self.tok() {
            Tok::Ident(s) => match s.as_str() {
                "size" => Some(CtrlType::Size),
                "index" => Some(CtrlType::Index),
                "stride" => Some(CtrlType::Stride),
                // `bool` alone is a control boolean; a rank-0 bool buffer needs `@ MEM`.
                "bool" if !matches!(self.tok_at(1), Tok::Punct("[" | "@")) => Some(CtrlType::Bool),
                _ => None,
            },
            _ => None,
        };
        let kind = match ctrl {
            Some(c) => {
                self.bump();
                ArgKind::Ctrl(c)
            }
            None => ArgKind::Buf(self.buf_type()?),
        };
        let span = self.span_from(name_span.lo);
        let sym = Sym::new(&name);
        let vk = match &kind {
            ArgKind::Ctrl(c) => VarKind::Ctrl(c.ty()),
            ArgKind::Buf(b) => VarKind::Buf {
                elem: b.elem,
                rank: b.rank(),
            },
        };
        self.declare(&name, name_span, &sym, vk)?;
        Ok(Arg { sym, kind, span })
    }

    fn dtype(&mut self) -> PResult<DType> {
        match self.tok() {
            Tok::Ident(s) => match DType::from_name(s) {
                Some(d) => {
                    self.bump();
                    Ok(d)
                }
                None => Err(self.expected("a data type")),
            },
            _ => Err(self.expected("a data type")),
        }
    }

    /// `f32[n, m] @ MEM`, `[f32][n] @ MEM` (a window), `f32 @ MEM` (rank 0); `@ MEM` defaults to
    /// `DRAM`.
    fn buf_type(&mut self) -> PResult<BufType> {
        let window = self.eat_punct("[");
        let elem = self.dtype()?;
        if window {
            self.expect_punct("]")?;
        }
        let mut shape = Vec::new();
        if self.eat_punct("[") {
            loop {
                shape.push(self.expr()?.coerce(Ty::Int));
                if self.eat_punct("]") {
                    break;
                }
                self.expect_punct(",")
                    .map_err(|_| self.expected("`,` or `]`"))?;
            }
        }
        let mem = if self.eat_punct("@") {
            let (m, sp) = self.name()?;
            self.lookup_memory(&m, sp)?
        } else {
            let sp = self.span_from(self.prev_hi);
            self.lookup_memory("DRAM", sp)?
        };
        Ok(BufType {
            elem,
            shape,
            window,
            mem,
        })
    }

    fn lookup_memory(&self, name: &str, span: Span) -> PResult<Arc<Memory>> {
        self.scope.memories.get(name).cloned().ok_or_else(|| {
            Diagnostic::new("unknown-name", span, format!("unknown memory `{name}`"))
        })
    }

    // ----- variables -----

    fn declare(&mut self, name: &str, span: Span, sym: &Sym, kind: VarKind) -> PResult<()> {
        if let Some(prev) = self.vars.iter().rev().find(|b| b.name == name) {
            return Err(Diagnostic::new(
                "duplicate-definition",
                span,
                format!("duplicate definition of `{name}` (it is already in scope)"),
            )
            .with_label(prev.span, format!("`{name}` is first defined here")));
        }
        self.vars.push(Binding {
            name: name.to_string(),
            sym: sym.clone(),
            kind,
            span,
        });
        Ok(())
    }

    fn lookup(&self, name: &str, span: Span) -> PResult<Binding> {
        let found = self.vars.iter().rev().find(|b| b.name == name).cloned();
        match found {
            Some(b) => Ok(b),
            // A name followed by `[` reads a buffer; anything else is a control value or a scalar.
            None if self.placeholders => Ok(self.placeholder(name, span, self.is_punct("["))),
            None => Err(Diagnostic::new(
                "unknown-name",
                span,
                format!("unknown name `{name}`"),
            )),
        }
    }

    /// A binding standing for `name` until `weft-sched` resolves it (see `placeholders`); one
    /// symbol per name within an argument, so the argument prints back as written.
    fn placeholder(&self, name: &str, span: Span, buffer: bool) -> Binding {
        let sym = self
            .placeholder_syms
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| Sym::new(name))
            .clone();
        Binding {
            name: name.to_string(),
            sym,
            kind: if buffer {
                VarKind::Buf {
                    elem: DType::F32,
                    rank: 0,
                }
            } else {
                VarKind::Ctrl(Ty::Int)
            },
            span,
        }
    }

    /// A buffer variable: its symbol, element type and rank.
    fn lookup_buf(&self, name: &str, span: Span) -> PResult<(Sym, DType, usize)> {
        let b = match self.vars.iter().rev().find(|b| b.name == name) {
            None if self.placeholders => self.placeholder(name, span, true),
            _ => self.lookup(name, span)?,
        };
        match b.kind {
            VarKind::Buf { elem, rank } => Ok((b.sym, elem, rank)),
            VarKind::Ctrl(_) => Err(Diagnostic::new(
                "name-kind",
                span,
                format!("`{name}` is a control value, not a buffer"),
            )
            .with_label(b.span, format!("`{name}` is defined here"))),
        }
    }

    // ----- statements -----

    /// Statements up to (not including) the closing `}` of the current block. Bindings made in
    /// the block go out of scope at its end.
    fn stmts_until_close(&mut self) -> PResult<Block> {
        let mark = self.vars.len();
        let mut out = Vec::new();
        while !self.is_punct("}") {
            if *self.tok() == Tok::Eof {
                return Err(self.expected("a statement or `}`"));
            }
            if self.is_kw("let") && self.tok_at(2) == &Tok::Punct(":") {
                out.extend(self.scalar_let()?);
            } else {
                out.push(self.stmt()?);
            }
        }
        self.vars.truncate(mark);
        Ok(out)
    }

    fn block(&mut self) -> PResult<Block> {
        self.enter()?;
        self.expect_punct("{")?;
        let b = self.stmts_until_close()?;
        self.expect_punct("}")?;
        self.leave();
        Ok(b)
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let lo = self.lo();
        let kind = match self.tok().clone() {
            Tok::Ident(k) if k == "pass" => {
                self.bump();
                self.expect_punct(";")?;
                StmtKind::Pass
            }
            Tok::Ident(k) if k == "if" => return self.if_stmt(),
            Tok::Ident(k) if k == "for" => {
                self.bump();
                let (name, sp) = self.name()?;
                self.expect_kw("in")?;
                // `par(lo..hi)` marks a parallel loop.
                let parallel =
                    self.is_kw("par") && matches!(self.tok_at(1), Tok::Punct(p) if *p == "(");
                if parallel {
                    self.bump();
                    self.expect_punct("(")?;
                }
                let lo_e = self.expr()?.coerce(Ty::Int);
                self.expect_punct("..")?;
                let hi_e = self.expr()?.coerce(Ty::Int);
                if parallel {
                    self.expect_punct(")")?;
                }
                let var = Sym::new(&name);
                let mark = self.vars.len();
                self.declare(&name, sp, &var, VarKind::Ctrl(Ty::Int))?;
                let body = self.block()?;
                self.vars.truncate(mark);
                StmtKind::For {
                    var,
                    lo: lo_e,
                    hi: hi_e,
                    body,
                    parallel,
                }
            }
            Tok::Ident(k) if k == "alloc" => {
                self.bump();
                let (name, sp) = self.name()?;
                self.expect_punct(":")?;
                let ty = self.buf_type()?;
                self.expect_punct(";")?;
                let buf = Sym::new(&name);
                let vk = VarKind::Buf {
                    elem: ty.elem,
                    rank: ty.rank(),
                };
                self.declare(&name, sp, &buf, vk)?;
                StmtKind::Alloc { buf, ty }
            }
            Tok::Ident(k) if k == "free" => {
                self.bump();
                let (name, sp) = self.name()?;
                let (buf, _, _) = self.lookup_buf(&name, sp)?;
                self.expect_punct(";")?;
                StmtKind::Free { buf }
            }
            Tok::Ident(k) if k == "let" => {
                self.bump();
                let (name, sp) = self.name()?;
                self.expect_punct("=")?;
                let (rhs, elem, rank) = self.window()?;
                self.expect_punct(";")?;
                let sym = Sym::new(&name);
                self.declare(&name, sp, &sym, VarKind::Buf { elem, rank })?;
                StmtKind::Window { name: sym, rhs }
            }
            Tok::Ident(k) if k == "assert" => {
                return Err(Diagnostic::new(
                    "syntax",
                    self.cur_span(),
                    "`assert` is only allowed at the start of a proc body (a precondition)",
                ))
            }
            Tok::Ident(k) if !is_keyword(&k) => match self.tok_at(1) {
                Tok::Punct("(") => self.call()?,
                Tok::Punct(".") => {
                    let (config, field) = self.config_field()?;
                    self.expect_punct("=")?;
                    let ty = config.fields[field].ty.ty();
                    let rhs = self.expr()?.coerce(ty);
                    self.expect_punct(";")?;
                    StmtKind::WriteConfig { config, field, rhs }
                }
                _ => {
                    let (name, sp) = self.name()?;
                    let (buf, elem, _) = self.lookup_buf(&name, sp)?;
                    let idx = if self.is_punct("[") {
                        self.index_list()?
                    } else {
                        Vec::new()
                    };
                    let reduce = if self.eat_punct("+=") {
                        true
                    } else if self.eat_punct("=") {
                        false
                    } else {
                        return Err(self.expected("`=` or `+=`"));
                    };
                    let rhs = self.expr()?.coerce(Ty::Data(elem));
                    self.expect_punct(";")?;
                    if reduce {
                        StmtKind::Reduce { buf, idx, rhs }
                    } else {
                        StmtKind::Assign { buf, idx, rhs }
                    }
                }
            },
            _ => return Err(self.expected("a statement")),
        };
        Ok(Stmt::new(kind, self.span_from(lo)))
    }

    /// `let t: T [@ MEM] = e;`, a scalar temporary: `alloc t: T @ MEM; t = e;`. Both statements
    /// carry the span of the `let`, which is how the printer recognises the pair and writes it
    /// back as a `let`.
    fn scalar_let(&mut self) -> PResult<[Stmt; 2]> {
        let lo = self.lo();
        self.bump();
        let (name, sp) = self.name()?;
        self.expect_punct(":")?;
        let ty_lo = self.lo();
        let ty = self.buf_type()?;
        if ty.window || !ty.shape.is_empty() {
            return Err(Diagnostic::new(
                "syntax",
                self.span_from(ty_lo),
                "a `let` with a type binds one value of a data type (`let t: f32 = e;`); allocate arrays with `alloc`",
            ));
        }
        self.expect_punct("=")?;
        // The value is read before `t` is in scope, as in `alloc t; t = e;` it could not be read.
        let rhs = self.expr()?.coerce(Ty::Data(ty.elem));
        self.expect_punct(";")?;
        let buf = Sym::new(&name);
        self.declare(
            &name,
            sp,
            &buf,
            VarKind::Buf {
                elem: ty.elem,
                rank: 0,
            },
        )?;
        let span = self.span_from(lo);
        Ok([
            Stmt::new(
                StmtKind::Alloc {
                    buf: buf.clone(),
                    ty,
                },
                span,
            ),
            Stmt::new(
                StmtKind::Assign {
                    buf,
                    idx: Vec::new(),
                    rhs,
                },
                span,
            ),
        ])
    }

    /// `if c { } [else { } | else if ...]`; `else if` is a nested `if` in the else block.
    fn if_stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let lo = self.lo();
        self.bump();
        let cond = self.expr()?.coerce(Ty::Bool);
        let then_body = self.block()?;
        let else_body = if self.is_kw("else") {
            self.bump();
            if self.is_kw("if") {
                vec![self.if_stmt()?]
            } else {
                self.block()?
            }
        } else {
            Vec::new()
        };
        self.leave();
        Ok(Stmt::new(
            StmtKind::If {
                cond,
                then_body,
                else_body,
            },
            self.span_from(lo),
        ))
    }

    /// `[e, e, ...]`, each coerced to a control int.
    fn index_list(&mut self) -> PResult<Vec<Expr>> {
        self.expect_punct("[")?;
        let mut idx = Vec::new();
        loop {
            idx.push(self.expr()?.coerce(Ty::Int));
            if self.eat_punct("]") {
                return Ok(idx);
            }
            if !self.eat_punct(",") {
                return Err(self.expected("`,` or `]`"));
            }
        }
    }

    /// `Cfg.field`: the config and the field's index.
    fn config_field(&mut self) -> PResult<(Arc<Config>, usize)> {
        let (cname, csp) = self.name()?;
        let config = self.scope.configs.get(&cname).cloned().ok_or_else(|| {
            Diagnostic::new("unknown-name", csp, format!("unknown config `{cname}`"))
        })?;
        self.expect_punct(".")?;
        let (fname, fsp) = match self.tok().clone() {
            Tok::Ident(s) => {
                let sp = self.cur_span();
                self.bump();
                (s, sp)
            }
            _ => return Err(self.expected("a config field name")),
        };
        let field = config.field_index(&fname).ok_or_else(|| {
            Diagnostic::new(
                "unknown-name",
                fsp,
                format!("config `{cname}` has no field `{fname}`"),
            )
            .with_label(config.span, format!("`{cname}` is defined here"))
        })?;
        Ok((config, field))
    }

    /// A call statement's kind: buffer parameters take windows, control parameters expressions.
    fn call(&mut self) -> PResult<StmtKind> {
        let (name, sp) = self.name()?;
        let proc =
            self.scope.procs.get(&name).cloned().ok_or_else(|| {
                Diagnostic::new("unknown-name", sp, format!("unknown proc `{name}`"))
            })?;
        self.expect_punct("(")?;
        let mut args = Vec::new();
        while !self.is_punct(")") {
            let arg = match proc.args.get(args.len()).map(|a| &a.kind) {
                Some(ArgKind::Buf(_)) => self.window()?.0,
                Some(ArgKind::Ctrl(c)) => self.expr()?.coerce(c.ty()),
                None => self.expr()?,
            };
            args.push(arg);
            if !self.eat_punct(",") && !self.is_punct(")") {
                return Err(self.expected("`,` or `)`"));
            }
        }
        self.bump();
        self.expect_punct(";")?;
        Ok(StmtKind::Call { proc, args })
    }

    /// A window: `A` (the whole buffer) or `A[i, lo:hi, ...]`. Returns it with the element type and
    /// the rank of the view.
    fn window(&mut self) -> PResult<(Expr, DType, usize)> {
        let lo = self.lo();
        let (name, sp) = self.name()?;
        let (buf, elem, src_rank) = self.lookup_buf(&name, sp)?;
        let mut coords = Vec::new();
        if self.eat_punct("[") {
            loop {
                let a = self.expr()?;
                if self.eat_punct(":") {
                    let b = self.expr()?;
                    coords.push(WinCoord::Interval(a, b));
                } else {
                    coords.push(WinCoord::Point(a));
                }
                if self.eat_punct("]") {
                    break;
                }
                if !self.eat_punct(",") {
                    return Err(self.expected("`,`, `:` or `]`"));
                }
            }
        }
        let rank = if coords.is_empty() {
            src_rank
        } else {
            coords
                .iter()
                .filter(|c| matches!(c, WinCoord::Interval(..)))
                .count()
        };
        let e = Expr::window(&buf, elem, coords).with_span(self.span_from(lo));
        Ok((e, elem, rank))
    }

    // ----- expressions -----

    /// A full expression.
    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let e = self.binary(1)?;
        self.leave();
        Self::shallow(e)
    }

    /// `e`, unless its tree is higher than the later passes accept.
    fn shallow(e: Expr) -> PResult<Expr> {
        match weft_ir::limits::expr_too_deep(&e, "syntax", e.span) {
            Some(d) => Err(d),
            None => Ok(e),
        }
    }

    /// Precedence climbing over the binary operators binding at least as tightly as `min`:
    /// `or` 1, `and` 2, comparisons 4 (non-associative), `+ -` 5, `* / %` 6.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut lhs = self.prefix(min)?;
        let mut chained_cmp = false;
        loop {
            let (op, p) = match self.tok() {
                Tok::Ident(s) if s == "or" => (BinOp::Or, 1),
                Tok::Ident(s) if s == "and" => (BinOp::And, 2),
                Tok::Punct(q) => match *q {
                    "==" => (BinOp::Eq, 4),
                    "!=" => (BinOp::Ne, 4),
                    "<" => (BinOp::Lt, 4),
                    "<=" => (BinOp::Le, 4),
                    ">" => (BinOp::Gt, 4),
                    ">=" => (BinOp::Ge, 4),
                    "+" => (BinOp::Add, 5),
                    "-" => (BinOp::Sub, 5),
                    "*" => (BinOp::Mul, 6),
                    "/" => (BinOp::Div, 6),
                    "%" => (BinOp::Mod, 6),
                    _ => break,
                },
                _ => break,
            };
            if p < min {
                break;
            }
            if p == 4 && chained_cmp {
                return Err(Diagnostic::new(
                    "syntax",
                    self.cur_span(),
                    "comparisons do not chain; add parentheses",
                ));
            }
            chained_cmp = p == 4;
            self.bump();
            let rhs = self.binary(p + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Self::shallow(Expr::binary(op, lhs, rhs).with_span(span))?;
        }
        Ok(lhs)
    }

    /// Prefix operators: `not` (binds looser than comparisons) and unary `-`; `-` directly in
    /// front of a number is a negative literal.
    fn prefix(&mut self, min: u8) -> PResult<Expr> {
        let lo = self.lo();
        if self.is_kw("not") {
            if min > 3 {
                return Err(Diagnostic::new(
                    "syntax",
                    self.cur_span(),
                    "`not` cannot be the operand of an arithmetic or comparison operator without parentheses",
                ));
            }
            self.bump();
            self.enter()?;
            // `not not x` is how the printer writes a double negation.
            let a = if self.is_kw("not") {
                self.prefix(3)?
            } else {
                self.binary(4)?
            };
            self.leave();
            return Ok(Expr::unary(UnOp::Not, a).with_span(self.span_from(lo)));
        }
        if self.is_punct("-") {
            self.bump();
            let lit_span = self.cur_span();
            match *self.tok() {
                Tok::Int(m) => {
                    self.bump();
                    let v = int_value(m, true).ok_or_else(|| {
                        Diagnostic::new("syntax", lit_span, "integer literal out of range for i64")
                    })?;
                    return Ok(Expr::int(v).with_span(self.span_from(lo)));
                }
                Tok::Float(f) => {
                    self.bump();
                    return Ok(Expr::float(-f).with_span(self.span_from(lo)));
                }
                _ => {}
            }
            self.enter()?;
            let a = self.prefix(7)?;
            self.leave();
            return Ok(Expr::unary(UnOp::Neg, a).with_span(self.span_from(lo)));
        }
        self.atom()
    }

    fn call_args(&mut self, what: &str, n: usize) -> PResult<Vec<Expr>> {
        let lo = self.lo();
        self.expect_punct("(")?;
        let mut args = Vec::new();
        while !self.is_punct(")") {
            args.push(self.expr()?);
            if !self.eat_punct(",") && !self.is_punct(")") {
                return Err(self.expected("`,` or `)`"));
            }
        }
        self.bump();
        if args.len() != n {
            return Err(Diagnostic::new(
                "syntax",
                self.span_from(lo),
                format!(
                    "`{what}` takes {n} argument{}, found {}",
                    if n == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        Ok(args)
    }

    fn atom(&mut self) -> PResult<Expr> {
        let lo = self.lo();
        let e = match self.tok().clone() {
            Tok::Int(m) => {
                let sp = self.cur_span();
                self.bump();
                let v = int_value(m, false).ok_or_else(|| {
                    Diagnostic::new("syntax", sp, "integer literal out of range for i64")
                })?;
                Expr::int(v)
            }
            Tok::Float(f) => {
                self.bump();
                Expr::float(f)
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect_punct(")")?;
                return Ok(e);
            }
            Tok::Ident(s) => match s.as_str() {
                "true" | "false" => {
                    self.bump();
                    Expr::bool(s == "true")
                }
                "select" => {
                    self.bump();
                    let mut a = self.call_args("select", 3)?.into_iter();
                    let (c, x, y) = match (a.next(), a.next(), a.next()) {
                        (Some(c), Some(x), Some(y)) => (c, x, y),
                        _ => return Err(self.expected("three arguments")),
                    };
                    Expr::select(c, x, y)
                }
                "clamp_index" => {
                    self.bump();
                    let mut a = self.call_args("clamp_index", 3)?.into_iter();
                    let (v, lo, hi) = match (a.next(), a.next(), a.next()) {
                        (Some(v), Some(lo), Some(hi)) => (v, lo, hi),
                        _ => return Err(self.expected("three arguments")),
                    };
                    Expr::data_index(v, lo, hi)
                }
                "min" | "max" => {
                    self.bump();
                    let mut a = self.call_args(&s, 2)?.into_iter();
                    let (x, y) = match (a.next(), a.next()) {
                        (Some(x), Some(y)) => (x, y),
                        _ => return Err(self.expected("two arguments")),
                    };
                    if s == "min" {
                        Expr::min(x, y)
                    } else {
                        Expr::max(x, y)
                    }
                }
                "stride" => {
                    self.bump();
                    self.expect_punct("(")?;
                    let (name, sp) = self.name()?;
                    let (buf, _, _) = self.lookup_buf(&name, sp)?;
                    self.expect_punct(",")?;
                    let dsp = self.cur_span();
                    let dim = match *self.tok() {
                        Tok::Int(d) => usize::try_from(d).map_err(|_| {
                            Diagnostic::new("syntax", dsp, "dimension out of range")
                        })?,
                        _ => return Err(self.expected("a dimension number")),
                    };
                    self.bump();
                    self.expect_punct(")")?;
                    Expr::stride(&buf, dim)
                }
                _ if DType::from_name(&s).is_some() && self.tok_at(1) == &Tok::Punct("(") => {
                    let to = DType::from_name(&s).unwrap_or(DType::F64);
                    self.bump();
                    let mut a = self.call_args(&s, 1)?.into_iter();
                    match a.next() {
                        Some(x) => Expr::cast(to, x),
                        None => return Err(self.expected("one argument")),
                    }
                }
                _ if MathFn::from_name(&s).is_some() => {
                    let f = MathFn::from_name(&s).unwrap_or(MathFn::Sqrt);
                    self.bump();
                    let args = self.call_args(&s, f.arity())?;
                    Expr::math(f, args)
                }
                _ if is_keyword(&s) => return Err(self.expected("an expression")),
                _ if self.tok_at(1) == &Tok::Punct(".") => {
                    let (config, field) = self.config_field()?;
                    Expr::read_config(&config, field)
                }
                _ => {
                    let sp = self.cur_span();
                    self.bump();
                    let b = self.lookup(&s, sp)?;
                    match b.kind {
                        VarKind::Ctrl(ty) => {
                            if self.is_punct("[") {
                                return Err(Diagnostic::new(
                                    "name-kind",
                                    sp,
                                    format!("`{s}` is a control value and cannot be indexed"),
                                )
                                .with_label(b.span, format!("`{s}` is defined here")));
                            }
                            Expr::var(&b.sym, ty)
                        }
                        VarKind::Buf { elem, .. } => {
                            let idx = if self.is_punct("[") {
                                self.index_list()?
                            } else {
                                Vec::new()
                            };
                            Expr::read(&b.sym, elem, idx)
                        }
                    }
                }
            },
            _ => return Err(self.expected("an expression")),
        };
        Ok(e.with_span(self.span_from(lo)))
    }
}

/// The value of an integer literal of magnitude `m`, negated when `neg`; `None` when it does not
/// fit an i64.
fn int_value(m: u64, neg: bool) -> Option<i64> {
    let v = if neg { -(m as i128) } else { m as i128 };
    i64::try_from(v).ok()
}
