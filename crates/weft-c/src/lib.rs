//! The C backend: readable, warning-free C99 from checked weft procs.
//!
//! [`emit`] turns a set of root procs into one translation unit ([`CUnit`]): the roots' callees,
//! memories and configs become `static` helpers, and each root gets two exported entry points
//! that validate every argument (count, kinds, dtypes, ranks, shapes, strides, preconditions)
//! before running and return a status code (see [`status`]) instead of misbehaving:
//!
//! - `int32_t NAME(<params>)`: sizes as `int64_t`, bools as `bool`, buffers as
//!   `const weft_buffer *`;
//! - `int32_t NAME__entry(const weft_arg *args, int64_t nargs, char *err, int64_t err_len)`: the
//!   uniform form the JIT calls, which also writes a message into `err`.
//!
//! The emitted code follows the thesis' chapter 5: exact-width types, no undefined behaviour
//! (wrapping integer arithmetic through unsigned types, Euclidean division with `x / 0 = 0`,
//! saturating float-to-int casts), operands of equal type, `restrict` pointers, window structs
//! with strides, and loops with `int64_t` counters. Every buffer access goes through the access
//! template of the buffer's memory; instructions are emitted from their C templates.

mod emit;
mod entry;
pub mod helpers;
pub mod names;

use emit::{ProcCx, UnitCx};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_ir::visit::Deps;
use weft_ir::{ArgKind, CtrlType, DType, Diagnostic, Expr, ExprKind, Proc, StmtKind, Sym};

pub use emit::interpolate;

/// Status codes returned by the generated entry points (the `WEFT_*` enum of the header).
pub mod status {
    /// Success.
    pub const OK: i32 = 0;
    /// Wrong number of arguments.
    pub const ARG_COUNT: i32 = 1;
    /// An argument of the wrong kind (int, bool, buffer).
    pub const ARG_KIND: i32 = 2;
    /// A buffer of the wrong element type.
    pub const DTYPE: i32 = 3;
    /// A buffer of the wrong rank.
    pub const RANK: i32 = 4;
    /// A buffer whose extents differ from the declared shape.
    pub const SHAPE: i32 = 5;
    /// A dense-tensor buffer with non-dense strides.
    pub const STRIDE: i32 = 6;
    /// A size argument that is not positive.
    pub const SIZE: i32 = 7;
    /// A precondition of the proc does not hold.
    pub const PRECONDITION: i32 = 8;
    /// A null buffer, shape, strides or data pointer.
    pub const NULL: i32 = 9;
    /// A written buffer overlaps another buffer argument.
    pub const ALIAS: i32 = 10;
}

/// The `kind` values of a `weft_arg`.
pub mod arg_kind {
    /// A control integer.
    pub const INT: i32 = 0;
    /// A control boolean.
    pub const BOOL: i32 = 1;
    /// A buffer.
    pub const BUFFER: i32 = 2;
}

/// The dtype code of the C ABI: the index of `d` in [`DType::ALL`].
pub fn dtype_code(d: DType) -> i32 {
    DType::ALL.iter().position(|x| *x == d).unwrap_or(0) as i32
}

/// One generated translation unit.
#[derive(Clone, Debug)]
pub struct CUnit {
    /// The complete C source (it contains the header text, so it compiles on its own).
    pub source: String,
    /// Declarations of the ABI types and of the exported entry points.
    pub header: String,
    /// One entry per exported proc, in the order given to [`emit`].
    pub entries: Vec<EntryInfo>,
    /// Whether the unit has parallel loops: compile it with `-fopenmp` to run them on threads.
    pub parallel: bool,
}

/// The kind of one argument of an entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryArgKind {
    /// A control integer (`size`, `index` or `stride`); sizes must be positive.
    Int(CtrlType),
    /// A control boolean.
    Bool,
    /// A buffer: element type, rank, whether it is a window (any strides) or dense, and whether
    /// the proc writes it (directly or through callees).
    Buffer {
        elem: DType,
        rank: usize,
        window: bool,
        written: bool,
    },
}

impl EntryArgKind {
    /// Whether this is a buffer the proc writes.
    pub fn is_written(&self) -> bool {
        matches!(self, EntryArgKind::Buffer { written: true, .. })
    }
}

/// One argument of an entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryArg {
    /// The argument's name in the weft source.
    pub name: String,
    /// What is passed for it.
    pub kind: EntryArgKind,
}

/// An exported entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// The proc's name in weft.
    pub name: String,
    /// The C symbol of the typed entry point `int32_t NAME(...)`.
    pub direct_symbol: String,
    /// The C symbol of the uniform entry point `NAME__entry(args, nargs, err, err_len)`.
    pub symbol: String,
    /// The arguments, in the proc's order.
    pub args: Vec<EntryArg>,
}

/// For each buffer argument of `p` (by position), whether `p` writes it, directly, through a
/// window, or by passing it to a callee that writes it. Control arguments map to `false`.
pub fn written_args(p: &Proc) -> Vec<bool> {
    let mut memo = HashMap::new();
    written_memo(p, &mut memo, &mut HashSet::new())
}

fn written_memo(
    p: &Proc,
    memo: &mut HashMap<String, Vec<bool>>,
    active: &mut HashSet<String>,
) -> Vec<bool> {
    if let Some(w) = memo.get(&p.name) {
        return w.clone();
    }
    if !active.insert(p.name.clone()) {
        // Recursion is rejected by the checker; assume the worst.
        return vec![true; p.args.len()];
    }
    // Every buffer name (argument, window alias) maps to the argument it views, if any.
    let mut root: HashMap<Sym, usize> = HashMap::new();
    for (i, a) in p.args.iter().enumerate() {
        if matches!(a.kind, ArgKind::Buf(_)) {
            root.insert(a.sym.clone(), i);
        }
    }
    let mut written = vec![false; p.args.len()];
    fn arg_buf(e: &Expr) -> Option<&Sym> {
        match &e.kind {
            ExprKind::Window { buf, .. } => Some(buf),
            ExprKind::Read { buf, idx } if idx.is_empty() => Some(buf),
            _ => None,
        }
    }
    let mut stmts = Vec::new();
    weft_ir::visit::walk_block(&p.body, &mut |s| stmts.push(s.clone()));
    for s in &stmts {
        match &s.kind {
            StmtKind::Window { name, rhs } => {
                if let Some(r) = arg_buf(rhs).and_then(|b| root.get(b)).copied() {
                    root.insert(name.clone(), r);
                }
            }
            StmtKind::Assign { buf, .. } | StmtKind::Reduce { buf, .. } => {
                if let Some(r) = root.get(buf) {
                    written[*r] = true;
                }
            }
            StmtKind::Call { proc, args } => {
                let cw = written_memo(proc, memo, active);
                for (k, a) in args.iter().enumerate() {
                    if cw.get(k).copied().unwrap_or(false) {
                        if let Some(r) = arg_buf(a).and_then(|b| root.get(b)) {
                            written[*r] = true;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    active.remove(&p.name);
    memo.insert(p.name.clone(), written.clone());
    written
}

/// Emit one C translation unit exporting `procs` (see the crate docs). The input is assumed to
/// have passed the checker; anything the backend cannot express is a `codegen` diagnostic.
pub fn emit(procs: &[Arc<Proc>]) -> Result<CUnit, Diagnostic> {
    let deps = Deps::of_all(procs);
    // Emission recurses over expressions and blocks: unchecked input may be too deep for it.
    for p in &deps.procs {
        weft_ir::limits::check_depth(p)?;
    }
    let mut unit = UnitCx::default();
    let mut names = names::UniqueNames::default();

    // Exported symbols first, so internal names never take them.
    let mut entries = Vec::new();
    let mut seen_roots = HashSet::new();
    for p in procs {
        if p.is_instr() {
            return Err(emit::unsupported(
                p.span,
                format!(
                    "instruction '{}' cannot be exported; wrap it in a proc",
                    p.name
                ),
            ));
        }
        if !seen_roots.insert(p.name.clone()) {
            continue;
        }
        let direct = names::entry_symbol(&p.name);
        let symbol = format!("{direct}__entry");
        if !names.take(&direct) || !names.take(&symbol) {
            return Err(emit::unsupported(
                p.span,
                format!("two exported procs map to the C symbol '{direct}'"),
            ));
        }
        let written = written_args(p);
        let args = p
            .args
            .iter()
            .zip(&written)
            .map(|(a, w)| EntryArg {
                name: a.sym.name().to_string(),
                kind: match &a.kind {
                    ArgKind::Ctrl(CtrlType::Bool) => EntryArgKind::Bool,
                    ArgKind::Ctrl(c) => EntryArgKind::Int(*c),
                    ArgKind::Buf(b) => EntryArgKind::Buffer {
                        elem: b.elem,
                        rank: b.rank(),
                        window: b.window,
                        written: *w,
                    },
                },
            })
            .collect();
        entries.push(EntryInfo {
            name: p.name.clone(),
            direct_symbol: direct,
            symbol,
            args,
        });
    }

    for p in &deps.procs {
        unit.procs.insert(p.name.clone(), p.clone());
        if !p.is_instr() {
            let n = names.fresh("weft_p_", &p.name);
            unit.proc_names.insert(p.name.clone(), n);
        }
    }
    let mut config_defs = String::new();
    for c in &deps.configs {
        let var = names.fresh("weft_cfg_", &c.name);
        let mut fields = Vec::new();
        let mut members = String::new();
        for (i, f) in c.fields.iter().enumerate() {
            let m = format!("f_{}_{i}", names::clean(&f.name));
            let t = match f.ty {
                weft_ir::proc::FieldType::Ctrl(CtrlType::Bool) => "bool",
                weft_ir::proc::FieldType::Ctrl(_) => "int64_t",
                weft_ir::proc::FieldType::Data(d) => helpers::c_type(d),
            };
            members.push_str(&format!("    {t} {m};\n"));
            fields.push(m);
        }
        if fields.is_empty() {
            members.push_str("    int32_t unused;\n");
        }
        config_defs.push_str(&format!(
            "/* config {} */\nstatic struct {var} {{\n{members}}} {var};\n\n",
            names::comment_text(&c.name)
        ));
        unit.configs.insert(c.name.clone(), (var, fields));
    }

    // Proc bodies, callees first.
    let mut bodies = String::new();
    for p in &deps.procs {
        if p.is_instr() {
            continue;
        }
        let fname = unit.proc_names[&p.name].clone();
        let mut cx = ProcCx::new(&mut unit);
        let params = cx.bind_params(p)?;
        for a in &p.args {
            if let Some(emit::Binding::Ctrl(n)) = cx.env.get(&a.sym) {
                let l = format!("(void) {n};");
                cx.line(&l);
            }
        }
        for a in &p.args {
            if a.buf().is_some() {
                // Parameter names are the view bases up to `.data`.
                if let Some(emit::Binding::Buf(v)) = cx.env.get(&a.sym) {
                    let n = v.base.trim_end_matches(".data").to_string();
                    cx.line(&format!("(void) {n};"));
                }
            }
        }
        cx.assumptions(p)?;
        cx.block(&p.body)?;
        let body = std::mem::take(&mut cx.out);
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        bodies.push_str(&format!(
            "/* proc {} */\nstatic void {fname}({params}) {{\n{body}}}\n\n",
            names::comment_text(&p.name)
        ));
    }

    let mut entry_code = String::new();
    let mut protos = String::new();
    for (p, info) in procs
        .iter()
        .filter(|p| !p.is_instr())
        .scan(HashSet::new(), |seen, p| {
            Some((p, seen.insert(p.name.clone())))
        })
        .filter(|(_, first)| *first)
        .map(|(p, _)| p)
        .zip(&entries)
    {
        let (code, proto) = entry::entry_points(&mut unit, p, info)?;
        entry_code.push_str(&code);
        protos.push_str(&proto);
    }

    let header = entry::header_text(&protos);
    let mut source = String::new();
    source.push_str("/* Generated by weft. Do not edit. */\n");
    if unit.parallel {
        source.push_str(
            "/* Has parallel loops (OpenMP): compile with -fopenmp to run them on threads; \
             without it they run in sequence, with the same results. */\n",
        );
    }
    source.push_str(&header);
    source.push_str(
        "\n#include <stddef.h>\n#include <stdarg.h>\n#include <stdio.h>\n#include <math.h>\n\n",
    );
    let mut seen_headers = HashSet::new();
    for m in &deps.memories {
        if !m.header.trim().is_empty() && seen_headers.insert(m.header.clone()) {
            source.push_str(&format!(
                "/* memory {} */\n{}\n",
                names::comment_text(&m.name),
                m.header
            ));
        }
    }
    source.push_str(
        "\n#if defined(__GNUC__)\n#define WEFT_ASSUME(c) do { if (!(c)) __builtin_unreachable(); } while (0)\n#else\n#define WEFT_ASSUME(c) ((void) 0)\n#endif\n\n",
    );
    for s in unit.win_structs.values() {
        source.push_str(s);
        source.push('\n');
    }
    source.push_str(&config_defs);
    source.push_str(&unit.helpers.render());
    if !entries.is_empty() {
        source.push_str(entry::FAIL_HELPER);
    }
    if unit.needs_span {
        source.push_str(entry::SPAN_HELPER);
    }
    source.push_str(&bodies);
    source.push_str(&entry_code);
    Ok(CUnit {
        source,
        header,
        entries,
        parallel: unit.parallel,
    })
}
