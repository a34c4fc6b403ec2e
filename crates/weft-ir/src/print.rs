//! The canonical text form of the IR. Its grammar is `docs/language.md`; `weft-syntax` parses it
//! back, and `parse(print(p))` is alpha-equivalent to `p` (a property test checks this).
//!
//! Symbols are printed by name. Where two different symbols of one proc share a name, or a name is
//! not a valid identifier, the later one is printed as `name_K` with the first free K, so the text
//! always resolves to the same variables.

use crate::expr::{BinOp, Const, Expr, ExprKind, UnOp, WinCoord};
use crate::proc::{ArgKind, BufType, Config, Memory, Module, Proc};
use crate::stmt::{Block, Stmt, StmtKind};
use crate::sym::Sym;
use crate::visit;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Words that cannot be variable names.
pub const KEYWORDS: &[&str] = &[
    "proc",
    "schedule",
    "instr",
    "memory",
    "config",
    "for",
    "in",
    "if",
    "else",
    "alloc",
    "free",
    "let",
    "assert",
    "pass",
    "and",
    "or",
    "not",
    "true",
    "false",
    "select",
    "min",
    "max",
    "stride",
    "size",
    "index",
    "bool",
    "i8",
    "u8",
    "i16",
    "u16",
    "i32",
    "u32",
    "i64",
    "f32",
    "f64",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "abs",
    "floor",
    "ceil",
    "pow",
    "fma",
    "header",
    "access",
    "addressable",
    "last_dim",
    "import",
];

pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `s` can be written as a name: an identifier that is not a keyword.
pub fn usable_name(s: &str) -> bool {
    is_identifier(s) && !KEYWORDS.contains(&s)
}

/// Printed names of the symbols of one proc.
#[derive(Default)]
pub struct Namer {
    names: HashMap<Sym, String>,
    used: HashSet<String>,
    reserved: HashSet<String>,
}

impl Namer {
    fn reserve_all(&mut self, p: &Proc) {
        let mut note = |s: &Sym| {
            self.reserved.insert(s.name().to_string());
        };
        for a in &p.args {
            note(&a.sym);
        }
        visit::walk_block(&p.body, &mut |s| match &s.kind {
            StmtKind::For { var, .. } => note(var),
            StmtKind::Alloc { buf, .. } => note(buf),
            StmtKind::Window { name, .. } => note(name),
            _ => {}
        });
    }

    /// `s` went out of scope: its name may be given to another symbol (sibling loops keep
    /// their names, as written).
    fn release(&mut self, s: &Sym) {
        if let Some(n) = self.names.get(s) {
            self.used.remove(n);
        }
    }

    /// The printed name of `s`, assigning one at first sight.
    pub fn name(&mut self, s: &Sym) -> String {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        let base = if is_identifier(s.name()) {
            s.name().to_string()
        } else {
            let cleaned: String = s
                .name()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            if cleaned.starts_with(|c: char| c.is_ascii_digit()) || cleaned.is_empty() {
                format!("v_{cleaned}")
            } else {
                cleaned
            }
        };
        let mut cand = base.clone();
        let mut k = 1;
        while !usable_name(&cand)
            || self.used.contains(&cand)
            || (cand != base && self.reserved.contains(&cand))
        {
            cand = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(cand.clone());
        self.names.insert(s.clone(), cand.clone());
        cand
    }
}

pub fn escape_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn prec(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary(op, _, _) => match op {
            BinOp::Or => 1,
            BinOp::And => 2,
            o if o.is_comparison() => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Mod => 6,
            _ => 8, // min/max print as calls
        },
        ExprKind::Unary(UnOp::Not, _) => 3,
        ExprKind::Unary(UnOp::Neg, _) => 7,
        ExprKind::Const(Const::Int(v)) if *v < 0 => 7,
        ExprKind::Const(Const::Float(v)) if v.is_sign_negative() => 7,
        _ => 8,
    }
}

fn fmt_float(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

pub struct Printer<'n> {
    pub namer: &'n mut Namer,
    pub out: String,
    indent: usize,
    /// The source's comments still to print (`weft fmt`), placed by the spans of the statements.
    comments: Option<&'n mut SourceLayout>,
    /// The length of `out` when a comment was last put at the end of its last line.
    trailing_at: Option<usize>,
}

/// A comment of the source text, to print back where it was.
#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    /// Byte offset of its `//` in the file.
    pub lo: u32,
    /// The comment from `//` to the end of its line.
    pub text: String,
    /// Code precedes it on its line (it stays at the end of the line printed before it).
    pub trailing: bool,
    /// Byte offset of the start of its line.
    pub line_start: u32,
}

/// What `weft fmt` keeps of a file's layout: its comments not printed yet (in source order), where
/// it had blank lines (one is kept where there was at least one, between statements, steps and
/// comments), and where its `import`s and `else`s are.
#[derive(Debug, Default)]
pub struct SourceLayout {
    list: Vec<Comment>,
    next: usize,
    /// Byte offsets of the blank lines, ascending.
    blanks: Vec<u32>,
    /// The source position printed last.
    last: u32,
    /// Where each `import` of the file starts, in order.
    pub imports: Vec<u32>,
    /// Where each `else` of the file is, in order.
    pub elses: Vec<u32>,
}

impl SourceLayout {
    pub fn new(list: Vec<Comment>, blanks: Vec<u32>) -> SourceLayout {
        SourceLayout {
            list,
            next: 0,
            blanks,
            last: 0,
            imports: Vec::new(),
            elses: Vec::new(),
        }
    }

    /// Whether the source has a blank line between what was printed last and `pos`, which is
    /// printed next.
    fn blank_before(&mut self, pos: u32) -> bool {
        let gap = self.blanks.iter().any(|&b| b > self.last && b < pos);
        self.last = self.last.max(pos);
        gap
    }

    /// The comments before `pos` not printed yet; they count as printed.
    fn take_before(&mut self, pos: u32) -> &[Comment] {
        let start = self.next;
        while self.list.get(self.next).is_some_and(|c| c.lo < pos) {
            self.next += 1;
        }
        &self.list[start..self.next]
    }
}

impl<'n> Printer<'n> {
    pub fn new(namer: &'n mut Namer) -> Printer<'n> {
        Printer {
            namer,
            out: String::new(),
            indent: 0,
            comments: None,
            trailing_at: None,
        }
    }

    /// The source position of the `else` between an `if`'s branches, when the layout knows it.
    fn else_keyword(&self, cond: &Expr, then_body: &Block, else_body: &Block) -> Option<u32> {
        let cs = self.comments.as_deref()?;
        let first = else_body.first().filter(|e| !e.span.is_dummy())?;
        let after = match then_body.last() {
            Some(t) if !t.span.is_dummy() => t.span.hi,
            Some(_) => return None,
            None if !cond.span.is_dummy() => cond.span.hi,
            None => return None,
        };
        cs.elses
            .iter()
            .rev()
            .find(|&&e| e > after && e < first.span.lo)
            .copied()
    }

    /// [`Printer::comments_ending_line_of`] the end of `e`, the last thing on a header line.
    fn comments_ending_line_of_expr(&mut self, e: &Expr) {
        if !e.span.is_dummy() {
            self.comments_ending_line_of(e.span.hi);
        }
    }

    /// Print the source comments that end the line on which source position `hi` is.
    fn comments_ending_line_of(&mut self, hi: u32) {
        let Some(cs) = self.comments.as_deref_mut() else {
            return;
        };
        let mut end = cs.next;
        while cs
            .list
            .get(end)
            .is_some_and(|c| c.trailing && c.line_start <= hi)
        {
            end += 1;
        }
        if end > cs.next {
            let pos = cs.list[end - 1].lo + 1;
            self.comments_before(pos);
        }
    }

    /// Print the source comments before `pos` (a trailing one at the end of the last line, the
    /// others on lines of their own at the current indentation). Nothing for a dummy position.
    fn comments_before(&mut self, pos: u32) {
        let Some(cs) = self.comments.as_deref_mut() else {
            return;
        };
        let due: Vec<Comment> = cs.take_before(pos).to_vec();
        for c in due {
            // One comment ends a line: a second one for the same line (from a part of the
            // source printed on one line, such as a wrapped signature) gets a line of its own.
            let line_free = self.trailing_at != Some(self.out.len());
            if c.trailing && line_free && self.out.ends_with('\n') {
                self.out.pop();
                self.out.push(' ');
                self.out.push_str(&c.text);
                self.out.push('\n');
                self.trailing_at = Some(self.out.len());
                self.gap_before(c.lo, false);
            } else {
                self.gap_before(c.lo, true);
                let text = c.text;
                self.line(&text);
                // A comment line is not code: a trailing comment after it stays on its own line.
                self.trailing_at = Some(self.out.len());
            }
        }
    }

    /// An empty line before what is printed next (at source position `pos`), where the source
    /// had one and it does not open a block (`emit`: else only note the position).
    fn gap_before(&mut self, pos: u32, emit: bool) {
        let Some(cs) = self.comments.as_deref_mut() else {
            return;
        };
        if cs.blank_before(pos) && emit && !self.out.is_empty() && !self.out.ends_with("{\n") {
            self.out.push('\n');
        }
    }

    /// The source comments before the construct at `span`, then its blank line, if any.
    fn layout_before(&mut self, span: crate::Span) {
        if !span.is_dummy() {
            self.comments_before(span.lo);
            self.gap_before(span.lo, true);
        }
    }

    pub fn expr(&mut self, e: &Expr) -> String {
        // The checker rejects deeper trees; printing one (say, in a message) must not crash.
        if e.height() > crate::limits::MAX_EXPR_DEPTH {
            return format!("<an expression {} levels deep>", e.height());
        }
        match &e.kind {
            ExprKind::Const(Const::Int(v)) => v.to_string(),
            ExprKind::Const(Const::Float(v)) => fmt_float(*v),
            ExprKind::Const(Const::Bool(b)) => b.to_string(),
            ExprKind::Var(s) => self.namer.name(s),
            ExprKind::Read { buf, idx } => {
                let b = self.namer.name(buf);
                if idx.is_empty() {
                    b
                } else {
                    let parts: Vec<String> = idx.iter().map(|i| self.expr(i)).collect();
                    format!("{b}[{}]", parts.join(", "))
                }
            }
            ExprKind::Unary(UnOp::Neg, a) => {
                // `-(3)` keeps a negated literal apart from the literal `-3`.
                if matches!(a.kind, ExprKind::Const(_)) || prec(a) < 8 {
                    format!("-({})", self.expr(a))
                } else {
                    format!("-{}", self.expr(a))
                }
            }
            ExprKind::Unary(UnOp::Not, a) => {
                let s = self.expr(a);
                if prec(a) < 3 {
                    format!("not ({s})")
                } else {
                    format!("not {s}")
                }
            }
            ExprKind::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                format!("{}({}, {})", op.symbol(), self.expr(a), self.expr(b))
            }
            ExprKind::Binary(op, a, b) => {
                let p = prec(e);
                let sa = self.expr(a);
                let sb = self.expr(b);
                // Left-associative; comparisons do not associate at all.
                let pa = prec(a) < p || (p == 4 && prec(a) == 4);
                let pb = prec(b) <= p;
                let sa = if pa { format!("({sa})") } else { sa };
                let sb = if pb { format!("({sb})") } else { sb };
                format!("{sa} {} {sb}", op.symbol())
            }
            ExprKind::Select(c, a, b) => format!(
                "select({}, {}, {})",
                self.expr(c),
                self.expr(a),
                self.expr(b)
            ),
            ExprKind::DataIndex { value, lo, hi } => format!(
                "clamp_index({}, {}, {})",
                self.expr(value),
                self.expr(lo),
                self.expr(hi)
            ),
            ExprKind::Cast(t, a) => format!("{}({})", t.name(), self.expr(a)),
            ExprKind::Math(f, args) => {
                let parts: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("{}({})", f.name(), parts.join(", "))
            }
            ExprKind::Window { buf, coords } => {
                let b = self.namer.name(buf);
                if coords.is_empty() {
                    return b;
                }
                let parts: Vec<String> = coords
                    .iter()
                    .map(|c| match c {
                        WinCoord::Point(p) => self.expr(p),
                        WinCoord::Interval(lo, hi) => {
                            format!("{}:{}", self.expr(lo), self.expr(hi))
                        }
                    })
                    .collect();
                format!("{b}[{}]", parts.join(", "))
            }
            ExprKind::Stride { buf, dim } => format!("stride({}, {dim})", self.namer.name(buf)),
            ExprKind::ReadConfig { config, field } => format!(
                "{}.{}",
                config.name,
                config
                    .fields
                    .get(*field)
                    .map(|f| f.name.as_str())
                    .unwrap_or("?")
            ),
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    pub fn buf_type(&mut self, t: &BufType) -> String {
        let shape: Vec<String> = t.shape.iter().map(|e| self.expr(e)).collect();
        let elem = if t.window {
            format!("[{}]", t.elem)
        } else {
            t.elem.to_string()
        };
        if shape.is_empty() {
            format!("{elem} @ {}", t.mem.name)
        } else {
            format!("{elem}[{}] @ {}", shape.join(", "), t.mem.name)
        }
    }

    fn lhs(&mut self, buf: &Sym, idx: &[Expr]) -> String {
        let b = self.namer.name(buf);
        if idx.is_empty() {
            b
        } else {
            let parts: Vec<String> = idx.iter().map(|i| self.expr(i)).collect();
            format!("{b}[{}]", parts.join(", "))
        }
    }

    pub fn stmt(&mut self, s: &Stmt) {
        self.layout_before(s.span);
        match &s.kind {
            StmtKind::Pass => self.line("pass;"),
            StmtKind::Assign { buf, idx, rhs } => {
                let l = format!("{} = {};", self.lhs(buf, idx), self.expr(rhs));
                self.line(&l)
            }
            StmtKind::Reduce { buf, idx, rhs } => {
                let l = format!("{} += {};", self.lhs(buf, idx), self.expr(rhs));
                self.line(&l)
            }
            StmtKind::WriteConfig { config, field, rhs } => {
                let fname = config
                    .fields
                    .get(*field)
                    .map(|f| f.name.clone())
                    .unwrap_or_default();
                let l = format!("{}.{} = {};", config.name, fname, self.expr(rhs));
                self.line(&l)
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let l = format!("if {} {{", self.expr(cond));
                self.line(&l);
                self.comments_ending_line_of_expr(cond);
                // The `then` block ends at the `else` keyword; without its position (a rewrite's
                // statement), a comment between the branches goes to the top of the `else` block
                // unless it ends the last line of the `then` block.
                let else_kw = self.else_keyword(cond, then_body, else_body);
                let then_end = match else_body.first() {
                    Some(_) => else_kw,
                    None => source_pos(s.span, s.span.hi),
                };
                self.block_until(then_body, then_end);
                if let Some(last) = then_body.last().filter(|t| !t.span.is_dummy()) {
                    self.indent += 1;
                    self.comments_ending_line_of(last.span.hi);
                    self.indent -= 1;
                }
                if else_body.is_empty() {
                    self.line("}");
                } else {
                    self.line("} else {");
                    self.block_until(else_body, source_pos(s.span, s.span.hi));
                    self.line("}");
                }
            }
            StmtKind::For {
                var,
                lo,
                hi,
                body,
                parallel,
            } => {
                let range = format!("{}..{}", self.expr(lo), self.expr(hi));
                let l = if *parallel {
                    format!("for {} in par({range}) {{", self.namer.name(var))
                } else {
                    format!("for {} in {range} {{", self.namer.name(var))
                };
                self.line(&l);
                self.comments_ending_line_of_expr(hi);
                self.block_until(body, source_pos(s.span, s.span.hi));
                self.line("}");
                self.namer.release(var);
            }
            StmtKind::Alloc { buf, ty } => {
                let l = format!("alloc {}: {};", self.namer.name(buf), self.buf_type(ty));
                self.line(&l)
            }
            StmtKind::Free { buf } => {
                let l = format!("free {};", self.namer.name(buf));
                self.line(&l)
            }
            StmtKind::Window { name, rhs } => {
                let l = format!("let {} = {};", self.namer.name(name), self.expr(rhs));
                self.line(&l)
            }
            StmtKind::Call { proc, args } => {
                let parts: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                let l = format!("{}({});", proc.name, parts.join(", "));
                self.line(&l)
            }
        }
    }

    pub fn block(&mut self, b: &Block) {
        self.block_until(b, None);
    }

    /// A block, then (inside it) the source comments before `end`: the end of the enclosing
    /// statement, or the start of the statement after the block.
    fn block_until(&mut self, b: &Block, end: Option<u32>) {
        if self.indent > crate::limits::MAX_NESTING {
            return self.line("<statements nested too deep>");
        }
        self.indent += 1;
        let mut k = 0;
        while k < b.len() {
            match scalar_let(b, k) {
                Some(text) => {
                    self.layout_before(b[k].span);
                    let l = self.scalar_let_line(text);
                    self.line(&l);
                    k += 2;
                }
                None => {
                    self.stmt(&b[k]);
                    k += 1;
                }
            }
        }
        if let Some(pos) = end {
            self.comments_before(pos);
            self.gap_before(pos, false);
        }
        self.indent -= 1;
        for s in b {
            match &s.kind {
                StmtKind::Alloc { buf: x, .. } | StmtKind::Window { name: x, .. } => {
                    self.namer.release(x)
                }
                _ => {}
            }
        }
    }

    fn scalar_let_line(&mut self, (buf, ty, rhs): (&Sym, &BufType, &Expr)) -> String {
        format!(
            "let {}: {} = {};",
            self.namer.name(buf),
            self.buf_type(ty),
            self.expr(rhs)
        )
    }
}

/// Whether `e` reads `buf`.
fn reads_buffer(e: &Expr, buf: &Sym) -> bool {
    let mut found = false;
    visit::walk_expr(e, &mut |x| {
        found |= matches!(&x.kind, ExprKind::Read { buf: b, .. } if b == buf);
    });
    found
}

/// Lines are wrapped before this width where they can be.
const WIDTH: usize = 100;

/// `open` args `close` on one line, or when that is wider than [`WIDTH`], the arguments filled
/// into lines aligned after `open`.
fn signature_lines(open: &str, args: &[String], close: &str) -> String {
    let one = format!("{open}{}{close}", args.join(", "));
    if one.len() <= WIDTH || args.len() < 2 {
        return one;
    }
    let indent = " ".repeat(open.len());
    let mut out = open.to_string();
    let mut line_len = open.len();
    for (k, a) in args.iter().enumerate() {
        let piece = if k + 1 == args.len() {
            a.clone()
        } else {
            format!("{a},")
        };
        if k > 0 {
            if line_len + 1 + piece.len() > WIDTH {
                out.push('\n');
                out.push_str(&indent);
                line_len = indent.len();
            } else {
                out.push(' ');
                line_len += 1;
            }
        }
        out.push_str(&piece);
        line_len += piece.len();
    }
    out.push_str(close);
    out
}

/// `pos` when `span` is a source position (statements made by rewrites have none).
fn source_pos(span: crate::Span, pos: u32) -> Option<u32> {
    (!span.is_dummy()).then_some(pos)
}

/// The scalar `let t: T = e;` at `b[k]`: an allocation of a scalar followed by its assignment,
/// both from one place (a `let` in the source, or one step such as `bind_expr`), where `e` does
/// not read `t` (a `let` cannot).
fn scalar_let(b: &[Stmt], k: usize) -> Option<(&Sym, &BufType, &Expr)> {
    let (a, s) = (b.get(k)?, b.get(k + 1)?);
    match (&a.kind, &s.kind) {
        (
            StmtKind::Alloc { buf, ty },
            StmtKind::Assign {
                buf: target,
                idx,
                rhs,
            },
        ) if target == buf
            && idx.is_empty()
            && ty.shape.is_empty()
            && !ty.window
            && a.span == s.span
            && !a.span.is_dummy()
            && !reads_buffer(rhs, buf) =>
        {
            Some((buf, ty, rhs))
        }
        _ => None,
    }
}

/// The text of one proc (or instruction).
pub fn proc_to_string(p: &Proc) -> String {
    print_proc(p, None)
}

/// A proc, with the source comments inside it (`weft fmt`).
fn print_proc(p: &Proc, comments: Option<&mut SourceLayout>) -> String {
    print_proc_naming(p, comments, &mut Namer::default())
}

/// The name the printer gives each symbol of `p` (what `weft sched` shows; names of symbols in
/// sibling scopes may repeat, names of symbols in scope together never do).
pub fn printed_names(p: &Proc) -> HashMap<Sym, String> {
    let mut namer = Namer::default();
    name_proc(p, &mut namer);
    namer.names
}

/// Name every symbol of `p` in the order the printer meets them, without printing: scheduling
/// resolves the names a step's arguments use after every step, and printing the whole proc for
/// that took a tenth of a long schedule's time. The printer then uses these names.
fn name_proc(p: &Proc, namer: &mut Namer) {
    fn exprs(e: &Expr, namer: &mut Namer) {
        visit::walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Var(s)
            | ExprKind::Read { buf: s, .. }
            | ExprKind::Window { buf: s, .. }
            | ExprKind::Stride { buf: s, .. } => {
                namer.name(s);
            }
            _ => {}
        });
    }
    fn shape(t: &BufType, namer: &mut Namer) {
        t.shape.iter().for_each(|e| exprs(e, namer));
    }
    /// `level`: the block's nesting (the body's is 0); deeper than the printer prints, nothing
    /// is named (and the recursion stops, whatever the input's depth).
    fn block(b: &Block, level: usize, namer: &mut Namer) {
        if level > crate::limits::MAX_NESTING {
            return;
        }
        for s in b {
            match &s.kind {
                StmtKind::Pass => {}
                StmtKind::Assign { buf, idx, rhs } | StmtKind::Reduce { buf, idx, rhs } => {
                    namer.name(buf);
                    idx.iter().for_each(|e| exprs(e, namer));
                    exprs(rhs, namer);
                }
                StmtKind::WriteConfig { rhs, .. } => exprs(rhs, namer),
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    exprs(cond, namer);
                    block(then_body, level + 1, namer);
                    block(else_body, level + 1, namer);
                }
                StmtKind::For {
                    var, lo, hi, body, ..
                } => {
                    exprs(lo, namer);
                    exprs(hi, namer);
                    namer.name(var);
                    block(body, level + 1, namer);
                    namer.release(var);
                }
                StmtKind::Alloc { buf, ty } => {
                    namer.name(buf);
                    shape(ty, namer);
                }
                StmtKind::Free { buf } => {
                    namer.name(buf);
                }
                StmtKind::Window { name, rhs } => {
                    namer.name(name);
                    exprs(rhs, namer);
                }
                StmtKind::Call { args, .. } => args.iter().for_each(|e| exprs(e, namer)),
            }
        }
        for s in b {
            if let StmtKind::Alloc { buf: x, .. } | StmtKind::Window { name: x, .. } = &s.kind {
                namer.release(x)
            }
        }
    }
    namer.reserve_all(p);
    for a in &p.args {
        namer.name(&a.sym);
        if let ArgKind::Buf(b) = &a.kind {
            shape(b, namer);
        }
    }
    p.preds.iter().for_each(|e| exprs(e, namer));
    block(&p.body, 0, namer);
}

fn print_proc_naming(p: &Proc, comments: Option<&mut SourceLayout>, namer: &mut Namer) -> String {
    // Every symbol is named before printing, as `printed_names` names them.
    name_proc(p, namer);
    let mut pr = Printer::new(namer);
    pr.comments = comments;
    let mut args = Vec::new();
    for a in &p.args {
        let n = pr.namer.name(&a.sym);
        let t = match &a.kind {
            ArgKind::Ctrl(c) => c.name().to_string(),
            ArgKind::Buf(b) => pr.buf_type(b),
        };
        args.push(format!("{n}: {t}"));
    }
    let (open, close) = match &p.instr {
        Some(i) => (
            format!("instr {}(", p.name),
            format!(
                ") {}{}{}{} {{",
                escape_string(&i.template),
                if i.isa.is_empty() {
                    String::new()
                } else {
                    format!(" isa {}", escape_string(&i.isa.join(", ")))
                },
                if i.header.is_empty() {
                    String::new()
                } else {
                    format!(" header {}", escape_string(&i.header))
                },
                if i.finish.is_empty() {
                    String::new()
                } else {
                    format!(" finish {}", escape_string(&i.finish))
                }
            ),
        ),
        None => (format!("proc {}(", p.name), ") {".to_string()),
    };
    let head = signature_lines(&open, &args, &close);
    pr.out.push_str(&head);
    pr.out.push('\n');
    pr.indent = 1;
    for e in &p.preds {
        pr.layout_before(e.span);
        let l = format!("assert {};", pr.expr(e));
        pr.line(&l);
    }
    pr.indent = 0;
    pr.block_until(&p.body, source_pos(p.span, p.span.hi));
    pr.out.push_str("}\n");
    pr.out
}

pub fn memory_to_string(m: &Memory) -> String {
    let mut s = format!("memory {} {{\n", m.name);
    let _ = writeln!(s, "    header {}", escape_string(&m.header));
    let _ = writeln!(s, "    alloc {}", escape_string(&m.alloc));
    let _ = writeln!(s, "    free {}", escape_string(&m.free));
    let _ = writeln!(s, "    access {}", escape_string(&m.access));
    let _ = writeln!(s, "    addressable {}", m.addressable);
    if let Some(d) = m.last_dim {
        let _ = writeln!(s, "    last_dim {d}");
    }
    if let Some(b) = m.max_bytes {
        let _ = writeln!(s, "    max_bytes {b}");
    }
    if !m.isa.is_empty() {
        let _ = writeln!(s, "    isa {}", escape_string(&m.isa.join(", ")));
    }
    if !m.dtypes.is_empty() {
        let names: Vec<&str> = m.dtypes.iter().map(|t| t.name()).collect();
        let _ = writeln!(s, "    dtypes {}", escape_string(&names.join(", ")));
    }
    s.push_str("}\n");
    s
}

pub fn config_to_string(c: &Config) -> String {
    let mut s = format!("config {} {{\n", c.name);
    for f in &c.fields {
        let _ = writeln!(s, "    {}: {},", f.name, f.ty.name());
    }
    s.push_str("}\n");
    s
}

/// The text of a module: its items in the order of its source file (a proc may call a schedule
/// declared before it); items without a source position as memories, configs, procs, schedules.
pub fn module_to_string(m: &Module) -> String {
    module_with_comments(m, &mut SourceLayout::default())
}

/// [`module_to_string`] with the comments of the module's source file put back: each before the
/// item, statement or step it preceded, or at the end of the line it ended (`weft fmt`).
pub fn module_with_comments(m: &Module, comments: &mut SourceLayout) -> String {
    enum Item<'a> {
        Import(&'a str),
        Memory(&'a Memory),
        Config(&'a Config),
        Proc(&'a Proc),
        Schedule(&'a crate::ScheduleDecl),
        Pipeline(&'a crate::PipelineItem),
        Steps(&'a crate::StepsItem),
    }
    let mut items: Vec<(crate::Span, Item)> = Vec::new();
    // Imports have a source position when the layout found one for each.
    let import_pos = |k: usize| match comments.imports.get(k) {
        Some(&lo) if comments.imports.len() == m.imports.len() => crate::Span::new(0, lo, lo),
        _ => crate::Span::DUMMY,
    };
    items.extend(
        m.imports
            .iter()
            .enumerate()
            .map(|(k, i)| (import_pos(k), Item::Import(i))),
    );
    items.extend(m.memories.iter().map(|x| (x.span, Item::Memory(x))));
    items.extend(m.configs.iter().map(|x| (x.span, Item::Config(x))));
    items.extend(m.procs.iter().map(|x| (x.span, Item::Proc(x))));
    items.extend(m.schedules.iter().map(|x| (x.span, Item::Schedule(x))));
    items.extend(m.pipelines.iter().map(|x| (x.span, Item::Pipeline(x))));
    items.extend(m.steps_items.iter().map(|x| (x.span, Item::Steps(x))));
    // Stable: items without a source position keep the order of their kinds.
    items.sort_by_key(|(span, _)| if span.is_dummy() { 0 } else { span.lo });
    let mut parts: Vec<String> = Vec::new();
    let mut after_import = false;
    for (span, item) in items {
        let mut before = String::new();
        if !span.is_dummy() {
            before = top_level_comments(comments, span.lo, &mut parts);
            // Items are one blank line apart; a blank line between its comments and the item stays.
            if comments.blank_before(span.lo) && !before.is_empty() {
                before.push('\n');
            }
        }
        let text = match item {
            Item::Import(i) => {
                let line = format!("import {};\n", escape_string(i));
                // Consecutive imports are one block of lines.
                match parts.last_mut() {
                    Some(last) if after_import && before.is_empty() => last.push_str(&line),
                    _ => parts.push(before + &line),
                }
                after_import = true;
                continue;
            }
            Item::Proc(p) => print_proc(p, Some(&mut *comments)),
            Item::Memory(x) => with_inner_comments(memory_to_string(x), span, comments),
            Item::Config(x) => with_inner_comments(config_to_string(x), span, comments),
            // A schedule with loops or `steps` calls, and a `steps` item, as written (their
            // comments with them), as the pipeline layer's text.
            Item::Schedule(crate::ScheduleDecl {
                text: Some(text), ..
            })
            | Item::Steps(crate::StepsItem { text, .. })
            | Item::Pipeline(crate::PipelineItem { text, .. }) => {
                if !span.is_dummy() {
                    comments.take_before(span.hi);
                }
                format!("{}\n", text.trim_end())
            }
            Item::Schedule(d) => schedule_with_comments(d, comments),
        };
        parts.push(before + &text);
        after_import = false;
    }
    let rest = top_level_comments(comments, u32::MAX, &mut parts);
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join("\n")
}

/// The comments before `pos` between items: a trailing one ends the last line of the item before
/// it, the others are returned as lines to go before the next item.
fn top_level_comments(comments: &mut SourceLayout, pos: u32, parts: &mut [String]) -> String {
    let mut lines = String::new();
    let mut line_free = true;
    for c in comments.take_before(pos).to_vec() {
        if comments.blank_before(c.lo) && !lines.is_empty() {
            lines.push('\n');
        }
        match parts.last_mut() {
            Some(last) if c.trailing && line_free && lines.is_empty() && last.ends_with('\n') => {
                line_free = false;
                last.pop();
                last.push(' ');
                last.push_str(&c.text);
                last.push('\n');
            }
            _ => {
                lines.push_str(&c.text);
                lines.push('\n');
            }
        }
    }
    lines
}

/// An item printed as `... }\n` with the source comments inside its span put before the `}`.
fn with_inner_comments(text: String, span: crate::Span, comments: &mut SourceLayout) -> String {
    if span.is_dummy() {
        return text;
    }
    let inner = comments.take_before(span.hi).to_vec();
    comments.blank_before(span.hi);
    if inner.is_empty() {
        return text;
    }
    let mut out = text.strip_suffix("}\n").unwrap_or(&text).to_string();
    for c in inner {
        out.push_str(&format!("    {}\n", c.text));
    }
    out.push_str("}\n");
    out
}

pub fn schedule_to_string(d: &crate::ScheduleDecl) -> String {
    match &d.text {
        Some(text) => format!("{}\n", text.trim_end()),
        None => schedule_with_comments(d, &mut SourceLayout::default()),
    }
}

fn schedule_with_comments(d: &crate::ScheduleDecl, comments: &mut SourceLayout) -> String {
    let mut namer = Namer::default();
    let mut pr = Printer::new(&mut namer);
    pr.comments = Some(comments);
    pr.out = format!("schedule {} = {} {{\n", d.name, d.base);
    pr.indent = 1;
    for s in &d.steps {
        pr.layout_before(s.span);
        pr.line(&format!("{s};"));
    }
    if !d.span.is_dummy() {
        pr.comments_before(d.span.hi);
        pr.gap_before(d.span.hi, false);
    }
    pr.out.push_str("}\n");
    pr.out
}

pub fn expr_to_string(e: &Expr) -> String {
    let mut namer = Namer::default();
    Printer::new(&mut namer).expr(e)
}

pub fn stmt_to_string(s: &Stmt) -> String {
    let mut namer = Namer::default();
    let mut p = Printer::new(&mut namer);
    p.stmt(s);
    p.out
}

impl std::fmt::Display for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&proc_to_string(self))
    }
}

impl std::fmt::Display for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&module_to_string(self))
    }
}
