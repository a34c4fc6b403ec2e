//! Procedures, their arguments, and the hardware-library items (memories, configs, instructions).

use crate::diag::Span;
use crate::expr::{Expr, WinCoord};
use crate::stmt::Block;
use crate::sym::Sym;
use crate::types::{CtrlType, DType, Ty};
use std::sync::Arc;

/// A memory, declared in weft source. The C backend emits all code touching a buffer through
/// these templates; nothing about any memory (DRAM included) is built into the compiler.
///
/// Template placeholders: `{name}` (the C name of the buffer), `{type}` (its C element type),
/// `{size}` (a C expression for the number of elements), `{offset}` (a C expression for the
/// linear element offset of an access).
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    pub name: String,
    /// C code emitted once at the top of every file that uses this memory.
    pub header: String,
    /// Declares and allocates `{name}`.
    pub alloc: String,
    /// Releases `{name}`.
    pub free: String,
    /// An lvalue naming the element (or vector) at `{offset}` of `{name}`.
    pub access: String,
    /// Whether ordinary reads and writes may touch this memory. When false, only instructions can.
    pub addressable: bool,
    /// When set, the innermost dimension of every buffer in this memory must be this constant.
    pub last_dim: Option<i64>,
    /// When set, no single buffer in this memory may be larger than this many bytes (a stack
    /// frame, a scratchpad): the checker proves it for every allocation, for all sizes.
    pub max_bytes: Option<i64>,
    /// The instruction-set extensions its C needs (`isa "avx512f"`): code using the memory is
    /// compiled for them, and runs only on a CPU that has them. An instruction that needs an
    /// extension takes a buffer of such a memory.
    pub isa: Vec<String>,
    /// The element types its buffers may have (empty: any). A memory whose template lays out
    /// vectors of one type (`__m512` holds f32) names it, so the checker counts its bytes right
    /// and refuses buffers of other types.
    pub dtypes: Vec<DType>,
    pub span: Span,
}

/// The type of a config field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    Ctrl(CtrlType),
    Data(DType),
}

impl FieldType {
    pub fn ty(self) -> Ty {
        match self {
            FieldType::Ctrl(c) => c.ty(),
            FieldType::Data(d) => Ty::Data(d),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FieldType::Ctrl(c) => c.name(),
            FieldType::Data(d) => d.name(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConfigField {
    pub name: String,
    pub ty: FieldType,
}

/// Global configuration state (for example an accelerator's configured load stride), emitted in C
/// as a struct.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub name: String,
    pub fields: Vec<ConfigField>,
    pub span: Span,
}

impl Config {
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// The type of a buffer: element type, shape, memory, and whether it is a window (a view with
/// arbitrary strides) or a dense row-major tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct BufType {
    pub elem: DType,
    pub shape: Vec<Expr>,
    pub window: bool,
    pub mem: Arc<Memory>,
}

impl BufType {
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ArgKind {
    Ctrl(CtrlType),
    Buf(BufType),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub sym: Sym,
    pub kind: ArgKind,
    pub span: Span,
}

impl Arg {
    pub fn buf(&self) -> Option<&BufType> {
        match &self.kind {
            ArgKind::Buf(b) => Some(b),
            ArgKind::Ctrl(_) => None,
        }
    }

    pub fn ctrl(&self) -> Option<CtrlType> {
        match &self.kind {
            ArgKind::Ctrl(c) => Some(*c),
            ArgKind::Buf(_) => None,
        }
    }
}

/// An instruction: a proc whose body states its meaning and whose C template is what is emitted.
/// weft trusts, as Exo does, that the template implements the body.
///
/// Template placeholders: `{arg}` for a control argument; for a buffer argument `{arg_data}` (an
/// lvalue of its first element, from its memory's `access` template) and `{arg_stride_K}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instr {
    pub template: String,
    /// C the template needs before the unit's code (`header "#include <immintrin.h>"`), as a
    /// memory's header; empty if none.
    pub header: String,
    /// The instruction-set extensions the template's C needs (`isa "avx512f"`), as a memory's.
    pub isa: Vec<String>,
    /// C that an entry point whose proc reaches the instruction runs once before it returns
    /// (`finish "_mm_sfence();"`: a fence that orders non-temporal stores before whatever the
    /// caller does next); empty if none.
    pub finish: String,
}

#[derive(Clone, Debug)]
pub struct Proc {
    pub name: String,
    pub args: Vec<Arg>,
    /// Preconditions: the body may assume them, callers must prove them.
    pub preds: Vec<Expr>,
    pub body: Block,
    pub instr: Option<Instr>,
    pub span: Span,
    /// The proc a schedule derived this one from (its provenance), `None` for a proc written by
    /// hand, built, or whose signature a schedule changed. Not part of the proc's meaning: `==`
    /// and alpha-equivalence ignore it.
    pub origin: Option<Origin>,
}

/// Equality of everything but the provenance ([`Proc::origin`]), which records how a proc was
/// obtained, not what it is.
impl PartialEq for Proc {
    fn eq(&self, other: &Proc) -> bool {
        self.name == other.name
            && self.args == other.args
            && self.preds == other.preds
            && self.body == other.body
            && self.instr == other.instr
            && self.span == other.span
    }
}

/// Reflexive (float literals compare by their bits): `==` on a shared callee (`Arc<Proc>` of a
/// call) then answers from the pointer instead of comparing both bodies.
impl Eq for Proc {}

/// The equivalence record of a scheduled proc (Exo's provenance lattice): the proc it was
/// rewritten from, which has the same signature, and the config fields on which the two may
/// disagree. The proc is equivalent to `parent` modulo `polluted` (Exo's `≅_L`): run on the same
/// valid inputs, both leave every buffer and every config field outside `polluted` with the same
/// values.
#[derive(Clone)]
pub struct Origin {
    pub parent: Arc<Proc>,
    /// Config fields (the config, the field's index) the rewrite may leave with other values.
    pub polluted: Vec<(Arc<Config>, usize)>,
}

impl Origin {
    /// `Config.field` for each polluted field.
    pub fn polluted_names(&self) -> Vec<String> {
        self.polluted
            .iter()
            .map(|(c, f)| {
                let field = c.fields.get(*f).map_or("?", |x| x.name.as_str());
                format!("{}.{field}", c.name)
            })
            .collect()
    }
}

/// Only the parent's name: a provenance chain holds every version of a schedule.
impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Origin({} modulo {:?})",
            self.parent.name,
            self.polluted_names()
        )
    }
}

impl Proc {
    pub fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|a| a.sym.name() == name)
    }

    pub fn is_instr(&self) -> bool {
        self.instr.is_some()
    }

    /// The proc this one was derived from, if a schedule produced it.
    pub fn parent(&self) -> Option<&Arc<Proc>> {
        self.origin.as_ref().map(|o| &o.parent)
    }

    /// The root of the provenance chain reached without crossing a polluting step: the simplest
    /// version of this proc that is fully equivalent to it (config fields included). Analyses of
    /// a call may use its body instead of this one's (Exo §4: it keeps solver queries small).
    pub fn simplest_equivalent(&self) -> &Proc {
        let mut p = self;
        while let Some(o) = &p.origin {
            if !o.polluted.is_empty() {
                break;
            }
            p = &o.parent;
        }
        p
    }
}

/// A compilation unit: the items of one `.weft` file, in source order within each kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// `import "..."` lines of the source, in order (library names or relative paths).
    pub imports: Vec<String>,
    pub memories: Vec<Arc<Memory>>,
    pub configs: Vec<Arc<Config>>,
    pub procs: Vec<Arc<Proc>>,
    /// `schedule` declarations, in source order. They are data here; `weft-sched` applies them.
    pub schedules: Vec<ScheduleDecl>,
    /// `pipeline` items and the schedules of pipelines, in source order, as text: the pipeline
    /// layer (`weft-pipe`) parses them; nothing below it learns about funcs.
    pub pipelines: Vec<PipelineItem>,
    /// `steps` items (named, parameterised lists of schedule steps), as text: the parser expands
    /// their calls in the schedules of the same file, so nothing after it needs them.
    pub steps_items: Vec<StepsItem>,
}

/// `steps NAME(p, ...) { ... }`: a list of schedule steps (and loops and calls of other `steps`
/// items) with parameters, called from schedules as `NAME(arg, ...);`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepsItem {
    pub name: String,
    pub params: Vec<String>,
    /// The item's whole text, from its keyword to its closing brace.
    pub text: String,
    pub span: Span,
}

/// The text of a `pipeline NAME ... { ... }` item or of a `schedule NAME = PIPELINE { ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineItem {
    pub name: String,
    /// `None` for a pipeline; for a schedule, the pipeline (or earlier pipeline schedule) it
    /// schedules.
    pub base: Option<String>,
    /// The item's whole text, from its keyword to its closing brace.
    pub text: String,
    /// Where the text is in its file.
    pub span: Span,
}

/// `schedule NAME = BASE { step; ... }`: the proc NAME is BASE rewritten by the steps, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleDecl {
    pub name: String,
    /// The proc (or earlier schedule) being scheduled.
    pub base: String,
    /// The steps in the order they apply: the loops and `steps` calls of the text expanded.
    pub steps: Vec<SchedStep>,
    /// The schedule's text as written, when it has loops or calls of `steps` items (printed
    /// as it is; a flat list of steps is printed from `steps`).
    pub text: Option<String>,
    pub span: Span,
}

/// One primitive application: `split(i, 8, io, ii, cut)`. The parser reads the arguments by the
/// kinds of the primitive's signature ([`crate::primitives`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SchedStep {
    pub primitive: String,
    pub args: Vec<SchedArg>,
    pub span: Span,
}

/// One argument of a step: as written (for messages and printing) and as parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedArg {
    pub text: String,
    pub value: SchedValue,
    pub span: Span,
}

/// A parsed step argument. Names inside expressions and regions refer to the proc as it stands
/// when the step applies, which the parser cannot know: it gives each variable, buffer read,
/// `stride` and region a placeholder symbol carrying the name, and the scheduler resolves the
/// names in the scope of the step's statement (`weft-sched`'s `script`).
#[derive(Clone, Debug, PartialEq)]
pub enum SchedValue {
    /// A statement pattern: `for i` for a bare loop name `i`, else the quoted pattern.
    Stmt(String),
    Int(i64),
    /// A name: a new one, a memory, a data type, a proc, a buffer, a tail strategy.
    Name(String),
    /// An expression with placeholder names.
    Expr(Expr),
    /// `A[lo:hi, ...]`: the buffer's name and each dimension's bounds (placeholder names).
    Region {
        buf: String,
        dims: Vec<(Expr, Expr)>,
    },
    /// `A[i, lo:hi, ...]`: the buffer's name and each coordinate, a point or an interval
    /// (placeholder names).
    Window {
        buf: String,
        coords: Vec<WinCoord>,
    },
    ConfigField {
        config: Arc<Config>,
        field: usize,
    },
    /// `NAME = value`.
    Binding {
        name: String,
        value: i64,
    },
}

/// A step in canonical form: each argument printed from its parsed value (so a comment or a line
/// break inside an argument is not part of it).
impl std::fmt::Display for SchedStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let args: Vec<String> = self.args.iter().map(|a| a.value.to_string()).collect();
        write!(f, "{}({})", self.primitive, args.join(", "))
    }
}

impl std::fmt::Display for SchedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::print::{escape_string, expr_to_string};
        match self {
            SchedValue::Stmt(p) => match p.strip_prefix("for ") {
                Some(v) if crate::print::usable_name(v) => f.write_str(v),
                _ => f.write_str(&escape_string(p)),
            },
            SchedValue::Int(v) => write!(f, "{v}"),
            SchedValue::Name(n) => f.write_str(n),
            SchedValue::Expr(e) => f.write_str(&expr_to_string(e)),
            SchedValue::Region { buf, dims } => {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|(lo, hi)| format!("{}:{}", expr_to_string(lo), expr_to_string(hi)))
                    .collect();
                write!(f, "{buf}[{}]", dims.join(", "))
            }
            SchedValue::Window { buf, coords } => {
                let coords: Vec<String> = coords
                    .iter()
                    .map(|c| match c {
                        WinCoord::Point(e) => expr_to_string(e),
                        WinCoord::Interval(lo, hi) => {
                            format!("{}:{}", expr_to_string(lo), expr_to_string(hi))
                        }
                    })
                    .collect();
                write!(f, "{buf}[{}]", coords.join(", "))
            }
            SchedValue::ConfigField { config, field } => {
                let name = config.fields.get(*field).map_or("?", |x| x.name.as_str());
                write!(f, "{}.{name}", config.name)
            }
            SchedValue::Binding { name, value } => write!(f, "{name} = {value}"),
        }
    }
}

impl Module {
    pub fn proc(&self, name: &str) -> Option<&Arc<Proc>> {
        self.procs.iter().find(|p| p.name == name)
    }

    pub fn memory(&self, name: &str) -> Option<&Arc<Memory>> {
        self.memories.iter().find(|m| m.name == name)
    }

    pub fn config(&self, name: &str) -> Option<&Arc<Config>> {
        self.configs.iter().find(|c| c.name == name)
    }
}
