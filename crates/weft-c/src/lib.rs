//! The C backend: readable, warning-free C99 from checked weft procs.
//!
//! [`emit_in`] turns a set of root procs into one translation unit ([`CUnit`]) in a namespace
//! `NS`: the roots' callees and memories become `static` functions, the configs a context struct
//! `struct NS_context` that the caller owns, and each root gets two exported entry points that
//! validate every argument (count, kinds, dtypes, ranks, control ranges, shapes, strides,
//! overlaps, preconditions) before running and return a status code (see [`status`]) instead of
//! misbehaving:
//!
//! - `int32_t NS_NAME(struct NS_context *ctxt, <params>)`: sizes as `int64_t`, bools as `bool`,
//!   buffers as `const weft_buffer *`;
//! - `int32_t NS_NAME_entry(void *ctxt, const weft_arg *args, int64_t nargs, char *err, int64_t
//!   err_len)`: the uniform form the JIT calls, which also writes a message into `err`.
//!
//! Nothing else is exported, so a proc named like a C library function (`write`) replaces
//! nothing. `ctxt` holds the configuration state: a call reads and writes the config fields in
//! it, so state persists across the calls given one context and two threads with two contexts
//! never share any; a null `ctxt` runs the call on a fresh zeroed context. A failed allocation
//! anywhere in the call tree frees what the call allocated and returns [`status::ALLOC`].
//!
//! The emitted code follows the thesis' chapter 5: exact-width types, no undefined behaviour
//! (wrapping integer arithmetic through unsigned types, Euclidean division with `x / 0 = 0`,
//! saturating float-to-int casts), operands of equal type, `restrict` pointers, window structs
//! with strides, and loops with `int64_t` counters. Every buffer access goes through the access
//! template of the buffer's memory; instructions are emitted from their C templates.

mod emit;
mod entry;
mod halved_reads;
pub mod helpers;
pub mod names;
mod narrow;
mod vector_loops;

use emit::{ProcCx, UnitCx};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_ir::proc::FieldType;
use weft_ir::visit::Deps;
use weft_ir::{ArgKind, Config, CtrlType, DType, Diagnostic, Expr, ExprKind, Proc, StmtKind, Sym};

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
    /// A written buffer overlaps another buffer argument, or its strides map two indices to
    /// one element (or are not proved not to).
    pub const ALIAS: i32 = 10;
    /// An allocation failed, or its size is not positive or overflows.
    pub const ALLOC: i32 = 11;
    /// A control argument or window stride outside `-(2^31-1) ..= 2^31-1`.
    pub const RANGE: i32 = 12;
}

/// The largest magnitude of a control value that enters a proc from outside (`size`, `index` and
/// `stride` arguments, the strides of window arguments, and config fields): `2^31 - 1`. The
/// checker proves every control expression fits 64 bits under this bound.
pub const CTRL_MAX: i64 = (1 << 31) - 1;

pub use names::DEFAULT_NAMESPACE;

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
    /// The prefix of every exported symbol.
    pub namespace: String,
    /// The configuration state the unit's entry points take.
    pub context: ContextInfo,
    /// The instruction-set extensions the unit's memories and instructions declare (`isa`),
    /// sorted: the C must be compiled for them and runs only on a CPU that has them.
    pub isa: Vec<String>,
}

/// The layout of a unit's context (`struct NS_context`): the configs it holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContextInfo {
    /// The configs by name, with their fields and types (`C{n:index,k:size}`, sorted by config
    /// name): two units with the same signature have the same context layout.
    pub signature: String,
    /// An upper bound of `sizeof(struct NS_context)` (the C checks it at compile time).
    pub bytes: usize,
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
    /// The C symbol of the typed entry point `int32_t NS_NAME(ctxt, ...)`.
    pub direct_symbol: String,
    /// The C symbol of the uniform entry point `NS_NAME_entry(ctxt, args, nargs, err, err_len)`.
    pub symbol: String,
    /// The arguments, in the proc's order.
    pub args: Vec<EntryArg>,
    /// The context the entry point takes.
    pub context: ContextInfo,
    /// The instruction-set extensions the unit needs (see [`CUnit::isa`]).
    pub isa: Vec<String>,
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

/// Emit one C translation unit exporting `procs` in [`DEFAULT_NAMESPACE`]; see [`emit_in`].
pub fn emit(procs: &[Arc<Proc>]) -> Result<CUnit, Diagnostic> {
    emit_in(procs, DEFAULT_NAMESPACE)
}

/// Emit one C translation unit exporting `procs` (see the crate docs), every exported symbol
/// prefixed by `namespace` (see [`names::namespace_error`]). Instructions among `procs` are not
/// exported (their calls are their templates). The input is assumed to have passed the checker;
/// anything the backend cannot express is a `codegen` diagnostic.
pub fn emit_in(procs: &[Arc<Proc>], namespace: &str) -> Result<CUnit, Diagnostic> {
    if let Some(m) = names::namespace_error(namespace) {
        return Err(emit::unsupported(weft_ir::Span::DUMMY, m));
    }
    let deps = Deps::of_all(procs);
    // Emission recurses over expressions and blocks: unchecked input may be too deep for it.
    for p in &deps.procs {
        weft_ir::limits::check_depth(p)?;
    }
    let mut unit = UnitCx {
        ctx_type: format!("struct {namespace}_context"),
        ..UnitCx::default()
    };
    let mut names = names::UniqueNames::default();
    let instrs = || deps.procs.iter().filter_map(|p| p.instr.as_ref());
    let mut isa: Vec<String> = deps
        .memories
        .iter()
        .flat_map(|m| m.isa.iter().cloned())
        .chain(instrs().flat_map(|i| i.isa.iter().cloned()))
        .collect();
    isa.sort();
    isa.dedup();
    let (context_def, context) = context_struct(&deps.configs, namespace, &mut unit);

    // Exported symbols first, so internal names never take them.
    let mut seen_roots = HashSet::new();
    let roots: Vec<&Arc<Proc>> = procs
        .iter()
        .filter(|p| !p.is_instr() && seen_roots.insert(p.name.clone()))
        .collect();
    let directs: Vec<String> = roots
        .iter()
        .map(|p| names.fresh(&format!("{namespace}_"), &p.name))
        .collect();
    let mut entries = Vec::new();
    for (p, direct) in roots.iter().zip(directs) {
        let symbol = names.fresh("", &format!("{direct}_entry"));
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
            context: context.clone(),
            isa: isa.clone(),
        });
    }

    for p in &deps.procs {
        unit.procs.insert(p.name.clone(), p.clone());
        if !p.is_instr() {
            let n = names.fresh("weft_p_", &p.name);
            unit.proc_names.insert(p.name.clone(), n);
        }
    }

    // Proc bodies, callees first, so each call knows what its callee takes and returns.
    let mut bodies = String::new();
    for p in &deps.procs {
        if p.is_instr() {
            continue;
        }
        let fname = unit.proc_names[&p.name].clone();
        let mut cx = ProcCx::new(&mut unit, &p.name);
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
        let abi = cx.abi;
        if abi.can_fail {
            cx.line("return WEFT_OK;");
        }
        let body = std::mem::take(&mut cx.out);
        let params = emit::hidden_params(&unit.ctx_type, abi)
            .into_iter()
            .chain(params)
            .collect::<Vec<_>>();
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        let ret = if abi.can_fail { "int32_t" } else { "void" };
        // See `WEFT_OWN_FUNCTION` in the runtime: a proc with a loop is never inlined.
        let mut has_loop = false;
        weft_ir::visit::walk_block(&p.body, &mut |s| {
            has_loop |= matches!(s.kind, StmtKind::For { .. });
        });
        let own = if has_loop { "WEFT_OWN_FUNCTION " } else { "" };
        bodies.push_str(&format!(
            "/* proc {} */\n{own}static {ret} {fname}({params}) {{\n{body}}}\n\n",
            names::comment_text(&p.name)
        ));
        unit.abi.insert(p.name.clone(), abi);
    }

    let mut entry_code = String::new();
    let mut protos = String::new();
    for (p, info) in roots.iter().zip(&entries) {
        let (code, proto) = entry::entry_points(&mut unit, p, info)?;
        entry_code.push_str(&code);
        protos.push_str(&proto);
    }

    let header = entry::header_text(namespace, &context_def, &protos);
    let mut source = String::new();
    source.push_str("/* Generated by weft. Do not edit. */\n");
    if unit.parallel {
        source.push_str(
            "/* Has parallel loops (OpenMP): compile with -fopenmp to run them on threads; \
             without it they run in sequence, with the same results. */\n",
        );
    }
    if !isa.is_empty() {
        source.push_str(&format!(
            "/* Needs the instruction-set extensions {}: compile for them (-m{}) and run only on a \
             CPU that has them. */\n",
            isa.join(", "),
            isa.join(" -m")
        ));
    }
    source.push_str(&header);
    // Each header costs the C compiler's every run (math.h alone a tenth of a small kernel's
    // compile): `<math.h>` only where a math function is called or there are floats (their
    // special constants are its macros), and of `<stdio.h>` only the declaration of
    // `vsnprintf` (compatible with the header's), unless the unit has instructions: their
    // templates are any C, and get both headers. A memory's header includes what its templates
    // use (docs/language.md).
    let helpers = unit.helpers.render();
    let floats = |s: &str| s.contains("float") || s.contains("double");
    let has_instr = deps.procs.iter().any(|p| p.is_instr());
    let needs_libm = unit.libm
        || has_instr
        || [&header, &helpers, &bodies, &entry_code]
            .iter()
            .any(|s| floats(s))
        || unit.win_structs.values().any(|s| floats(s));
    source.push_str("\n#include <stddef.h>\n#include <stdarg.h>\n#include <string.h>\n");
    if has_instr {
        source.push_str("#include <stdio.h>\n");
    } else {
        source.push_str("int vsnprintf(char *s, size_t n, const char *format, va_list ap);\n");
    }
    if needs_libm {
        source.push_str("#include <math.h>\n");
    }
    source.push('\n');
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
    for p in &deps.procs {
        if let Some(i) = p.instr.as_ref().filter(|i| !i.header.trim().is_empty()) {
            if seen_headers.insert(i.header.clone()) {
                source.push_str(&format!(
                    "/* instruction {} */\n{}\n",
                    names::comment_text(&p.name),
                    i.header
                ));
            }
        }
    }
    source.push_str(
        "\n#if defined(__GNUC__)\n#define WEFT_ASSUME(c) do { if (!(c)) __builtin_unreachable(); } while (0)\n#else\n#define WEFT_ASSUME(c) ((void) 0)\n#endif\n\n",
    );
    // Callers size contexts by `ContextInfo::bytes`: a C compiler that lays the struct out larger
    // rejects the unit here instead of letting a kernel write past the caller's context.
    source.push_str(&format!(
        "typedef char weft_context_fits[sizeof({}) <= {} ? 1 : -1];\n\n",
        unit.ctx_type, context.bytes
    ));
    for s in unit.win_structs.values() {
        source.push_str(s);
        source.push('\n');
    }
    source.push_str(&helpers);
    source.push_str(entry::RUNTIME);
    source.push_str(&bodies);
    source.push_str(&entry_code);
    Ok(CUnit {
        source,
        header,
        entries,
        parallel: unit.parallel,
        namespace: namespace.to_string(),
        context,
        isa,
    })
}

/// The definition of `struct NS_context` (one member struct per config, sorted by name), its
/// layout description, and the member names of each config (recorded in `unit`).
fn context_struct(
    configs: &[Arc<Config>],
    namespace: &str,
    unit: &mut UnitCx,
) -> (String, ContextInfo) {
    let mut configs: Vec<&Arc<Config>> = configs.iter().collect();
    configs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut members = String::new();
    let mut signature = String::new();
    let mut bytes = 0;
    let mut config_names = names::UniqueNames::default();
    for c in configs {
        let var = config_names.fresh("cfg_", &c.name);
        let mut field_names = names::UniqueNames::default();
        let mut fields = Vec::new();
        let mut body = String::new();
        let mut sig = Vec::new();
        for f in &c.fields {
            let m = field_names.fresh("f_", &f.name);
            let t = match f.ty {
                FieldType::Ctrl(CtrlType::Bool) => "bool",
                FieldType::Ctrl(_) => "int64_t",
                FieldType::Data(d) => helpers::c_type(d),
            };
            body.push_str(&format!("        {t} {m};\n"));
            sig.push(format!("{}:{}", f.name, f.ty.name()));
            fields.push(m);
        }
        if fields.is_empty() {
            body.push_str("        char unused;\n");
        }
        // Every member is at most 8 bytes wide and aligned, so 8 per member bounds the size.
        bytes += 8 * fields.len().max(1);
        signature.push_str(&format!("{}{{{}}}", c.name, sig.join(",")));
        members.push_str(&format!(
            "    /* config {} */\n    struct {{\n{body}    }} {var};\n",
            names::comment_text(&c.name)
        ));
        unit.configs.insert(c.name.clone(), (var, fields));
    }
    if members.is_empty() {
        members.push_str("    char unused;\n");
    }
    let def = format!(
        "/* The configuration state of the procs of this unit. A call reads and writes the context it\n   is given: zero one before its first call and pass it to every call that should see the\n   state; a null context runs the call on a fresh zeroed one. */\nstruct {namespace}_context {{\n{members}}};\n"
    );
    (
        def,
        ContextInfo {
            signature,
            bytes: bytes.max(8),
        },
    )
}
