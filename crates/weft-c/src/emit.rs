//! Emitting the C function of one proc: expressions, statements, buffer accesses.

use crate::helpers::{c_type, c_type_size, same_width_unsigned, wide_unsigned, Helpers};
use crate::names::{c_string, clean, comment_text};
use crate::narrow::power_of_two;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use weft_ir::{
    ArgKind, BinOp, BufType, Const, CtrlType, DType, Diagnostic, Expr, ExprKind, MathFn, Memory,
    Proc, Span, Stmt, StmtKind, Sym, Ty, UnOp, WinCoord,
};

/// A diagnostic of the `codegen` rule.
pub fn unsupported(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new("codegen", span, msg)
}

/// How a buffer is reached from C: the `{name}` of its memory's access template, the linear
/// offset of its first element and the stride of each dimension (all C `int64_t` expressions).
#[derive(Clone, Debug)]
pub struct BufView {
    pub elem: DType,
    pub mem: Arc<Memory>,
    pub base: String,
    pub offset: String,
    pub strides: Vec<String>,
    /// The extents, when the view is a whole dense row-major buffer. Its offsets are then written
    /// in Horner form, `((i0 * n1 + i1) * n2 + i2)`, the way C programmers write them: GCC keeps
    /// the running address of a deep nest in fewer registers that way than with the sum of
    /// stride products (measured 1.2x on the conv2d example).
    pub dense_shape: Option<Vec<String>>,
}

impl BufView {
    /// The view of a whole dense row-major buffer with the given extents.
    pub fn dense(elem: DType, mem: Arc<Memory>, base: String, shape: Vec<String>) -> BufView {
        BufView {
            elem,
            mem,
            base,
            offset: "0".into(),
            strides: dense_strides(&shape),
            dense_shape: Some(shape),
        }
    }
}

/// What a symbol stands for in C.
#[derive(Clone, Debug)]
pub enum Binding {
    Ctrl(String),
    Buf(BufView),
}

/// State shared by all procs of a translation unit.
#[derive(Default)]
pub struct UnitCx {
    pub helpers: Helpers,
    /// Window struct definitions keyed by struct name.
    pub win_structs: BTreeMap<String, String>,
    /// C function name of each (non-instruction) proc, keyed by proc name.
    pub proc_names: HashMap<String, String>,
    /// Member names of each config in the context struct (the config's, then its fields'),
    /// keyed by config name.
    pub configs: HashMap<String, (String, Vec<String>)>,
    /// Every proc of the unit by name, to catch two different procs sharing a name.
    pub procs: HashMap<String, Arc<Proc>>,
    /// What each emitted proc takes besides its arguments, keyed by proc name.
    pub abi: HashMap<String, ProcAbi>,
    /// The C type of the unit's context, `struct NS_context`.
    pub ctx_type: String,
    /// Whether some loop is parallel (the unit then needs OpenMP to run in parallel).
    pub parallel: bool,
    /// Whether the unit calls a function of `<math.h>`.
    pub libm: bool,
}

/// The hidden parameters of an emitted proc. Only procs that need them get them, so kernels
/// without configs or allocations compile to exactly the loops they were.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcAbi {
    /// Takes the context (`ctxt`): it or a callee reads or writes a config field.
    pub uses_ctx: bool,
    /// Returns a status and takes the fault record (`fault`): it or a callee allocates memory
    /// that can fail.
    pub can_fail: bool,
}

/// The parameters an emitted proc takes before its arguments.
pub fn hidden_params(ctx_type: &str, abi: ProcAbi) -> Vec<String> {
    let mut out = Vec::new();
    if abi.uses_ctx {
        out.push(format!("{ctx_type} *restrict ctxt"));
    }
    if abi.can_fail {
        out.push("struct weft_fault *fault".to_string());
    }
    out
}

/// The arguments that pass the hidden parameters on, in the order of [`hidden_params`].
pub fn hidden_args(abi: ProcAbi) -> Vec<String> {
    let mut out = Vec::new();
    if abi.uses_ctx {
        out.push("ctxt".to_string());
    }
    if abi.can_fail {
        out.push("fault".to_string());
    }
    out
}

/// A parallel loop being emitted: a failure inside one of its iterations cannot leave the
/// function (OpenMP forbids it), so it frees the iteration's allocations, records its status in
/// `flag` and jumps to `label` at the end of the iteration; the loop's caller checks `flag`.
struct ParExit {
    /// The first allocation frame that belongs to the iteration.
    base: usize,
    flag: String,
    label: String,
    used: bool,
}

impl UnitCx {
    /// The name of the window struct for (element type, rank), defining it on first use.
    pub fn win_struct(&mut self, elem: DType, rank: usize) -> String {
        let name = format!("weft_win_{}_{rank}", elem.name());
        self.win_structs.entry(name.clone()).or_insert_with(|| {
            format!(
                "struct {name} {{\n    {} *data;\n    int64_t strides[{rank}];\n}};\n",
                c_type(elem)
            )
        });
        format!("struct {name}")
    }
}

/// Whether a buffer type is passed as a window struct (rank-0 windows are plain pointers).
pub fn is_struct_window(t: &BufType) -> bool {
    t.window && t.rank() > 0
}

/// Substitute `{key}` placeholders in one pass; unknown `{...}` text is kept verbatim (it may be
/// a C block in an instruction template).
pub fn interpolate(tpl: &str, vars: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = tpl;
    while let Some(pos) = rest.find('{') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let key_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let key = &after[..key_len];
        let closes = after[key_len..].starts_with('}');
        match vars.iter().find(|(k, _)| k == key) {
            Some((_, v)) if closes && !key.is_empty() => {
                out.push_str(v);
                rest = &after[key_len + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether a C expression is a plain name or number (safe to repeat, no parentheses needed).
/// A C identifier or number: cheap to repeat and unaffected by the code around it. (Config
/// fields, `cfg.field`, are not: a loop bound reading one is evaluated once, before the loop, as
/// the IR means.)
fn is_atom(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `a * b` over C int64 expressions, folding constants.
pub fn mul_c(a: &str, b: &str) -> String {
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(x), Ok(y)) => match x.checked_mul(y) {
            Some(v) if v >= 0 => return v.to_string(),
            _ => {}
        },
        (Ok(1), _) => return b.to_string(),
        (_, Ok(1)) => return a.to_string(),
        _ => {}
    }
    format!("({a} * {b})")
}

/// Row-major strides of a dense buffer from its extents.
pub fn dense_strides(shape: &[String]) -> Vec<String> {
    let mut strides = vec!["1".to_string(); shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = mul_c(&shape[k + 1], &strides[k + 1]);
    }
    strides
}

/// A C literal of an integer of control type.
fn ctrl_int(v: i64) -> String {
    if v == i64::MIN {
        "INT64_MIN".to_string()
    } else if v.unsigned_abs() < (1 << 31) {
        if v < 0 {
            format!("({v})")
        } else {
            v.to_string()
        }
    } else {
        format!("INT64_C({v})")
    }
}

/// An exact C literal of a float of type `d`.
pub fn float_lit(v: f64, d: DType) -> String {
    if d == DType::F32 {
        let x = v as f32;
        if x.is_nan() {
            "((float) NAN)".to_string()
        } else if x.is_infinite() {
            if x > 0.0 {
                "((float) INFINITY)".to_string()
            } else {
                "(-(float) INFINITY)".to_string()
            }
        } else {
            let s = format!("{x:e}f");
            if s.starts_with('-') {
                format!("({s})")
            } else {
                s
            }
        }
    } else if v.is_nan() {
        "((double) NAN)".to_string()
    } else if v.is_infinite() {
        if v > 0.0 {
            "((double) INFINITY)".to_string()
        } else {
            "(-(double) INFINITY)".to_string()
        }
    } else {
        let s = format!("{v:e}");
        if s.starts_with('-') {
            format!("({s})")
        } else {
            s
        }
    }
}

/// A C literal of an integer data value, wrapped into its type.
fn data_int(v: i64, d: DType) -> String {
    let t = c_type(d);
    match d {
        DType::I8 => format!("(({t}) {})", v as i8),
        DType::U8 => format!("(({t}) {})", v as u8),
        DType::I16 => format!("(({t}) {})", v as i16),
        DType::U16 => format!("(({t}) {})", v as u16),
        DType::I32 => {
            let x = v as i32;
            if x == i32::MIN {
                "INT32_MIN".to_string()
            } else if x < 0 {
                format!("({x})")
            } else {
                x.to_string()
            }
        }
        DType::U32 => format!("{}u", v as u32),
        _ => ctrl_int(v),
    }
}

/// Statically known strides of window arguments, from preconditions `stride(w, d) == c`.
fn const_strides(p: &Proc) -> HashMap<(Sym, usize), i64> {
    let mut out = HashMap::new();
    let mut stack: Vec<&Expr> = p.preds.iter().collect();
    while let Some(e) = stack.pop() {
        if let ExprKind::Binary(op, a, b) = &e.kind {
            match op {
                BinOp::And => {
                    stack.push(a);
                    stack.push(b);
                }
                BinOp::Eq => {
                    for (s, c) in [(a, b), (b, a)] {
                        if let (ExprKind::Stride { buf, dim }, Some(v)) =
                            (&s.kind, c.as_int_const())
                        {
                            out.insert((buf.clone(), *dim), v);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Emits the body of one proc.
pub struct ProcCx<'u> {
    pub unit: &'u mut UnitCx,
    pub env: HashMap<Sym, Binding>,
    pub out: String,
    pub(crate) indent: usize,
    counter: usize,
    /// Allocations of each open block not yet freed: (symbol, free statement).
    pending_frees: Vec<Vec<(Sym, String)>>,
    /// The proc being emitted (named in fault records).
    pub proc_name: String,
    /// What the emitted code turned out to need (see [`ProcAbi`]).
    pub abi: ProcAbi,
    par_exits: Vec<ParExit>,
    /// Offsets of the accesses of the innermost loop being emitted, hoisted out of it (keyed by
    /// the address of the access's index list): see [`ProcCx::hoist_offsets`].
    hoisted: HashMap<usize, String>,
    /// Inside the version of a short vector loop whose gathered buffers all have fewer than
    /// 2^31 elements: the offsets of its gathers are computed in 32 bits (see [`crate::narrow`]).
    pub(crate) narrow: Option<crate::narrow::Narrowing>,
    /// Inside the body of a short vector loop: the locals holding its repeated reads, by the
    /// C text of the element read (see [`ProcCx::load_repeated_reads`]).
    pub(crate) read_locals: HashMap<String, String>,
    /// In a statement whose store scatters (its index reads data), which GCC vectorizes only
    /// where it can prove the stores distinct (a histogram's update: never): its float-to-int
    /// conversions take their scalar form (see [`crate::helpers::Helpers::float_to_int`]).
    in_scatter: bool,
}

impl<'u> ProcCx<'u> {
    pub fn new(unit: &'u mut UnitCx, proc_name: &str) -> ProcCx<'u> {
        ProcCx {
            unit,
            env: HashMap::new(),
            out: String::new(),
            indent: 1,
            counter: 0,
            pending_frees: Vec::new(),
            proc_name: proc_name.to_string(),
            abi: ProcAbi::default(),
            par_exits: Vec::new(),
            hoisted: HashMap::new(),
            narrow: None,
            read_locals: HashMap::new(),
            in_scatter: false,
        }
    }

    /// A statement that leaves after a failure with status `rc` (a C expression), first running
    /// `record` (which fills the fault record) when given. It frees every allocation live at this
    /// point and returns; inside a parallel loop it frees the iteration's allocations, flags the
    /// failure and skips the rest of the iteration instead.
    fn failure_exit(&mut self, rc: &str, record: Option<String>) -> String {
        self.abi.can_fail = true;
        let base = self.par_exits.last().map_or(0, |p| p.base);
        let mut frees = String::new();
        for frame in self.pending_frees[base..].iter().rev() {
            for (_, f) in frame.iter().rev() {
                if !f.trim().is_empty() {
                    frees.push_str(&format!("    {f}\n"));
                }
            }
        }
        let record = |pad: &str| {
            record
                .as_ref()
                .map(|r| format!("{pad}{r}\n"))
                .unwrap_or_default()
        };
        match self.par_exits.last_mut() {
            None => format!("{{\n{}{frees}    return {rc};\n}}", record("    ")),
            Some(p) => {
                p.used = true;
                format!(
                    "{{\n#pragma omp critical (weft_fault)\n    {{\n{}        {flag} = {rc};\n    }}\n{frees}    goto {label};\n}}",
                    record("        "),
                    flag = p.flag,
                    label = p.label
                )
            }
        }
    }

    /// A fresh C variable name for a user symbol: `v_<name>_<n>`.
    pub fn var_name(&mut self, s: &Sym) -> String {
        self.counter += 1;
        format!("v_{}_{}", clean(s.name()), self.counter)
    }

    /// A fresh temporary: `t_<what>_<n>`.
    pub(crate) fn tmp(&mut self, what: &str) -> String {
        self.counter += 1;
        format!("t_{what}_{}", self.counter)
    }

    pub fn line(&mut self, s: &str) {
        for l in s.lines() {
            for _ in 0..self.indent {
                self.out.push_str("    ");
            }
            self.out.push_str(l);
            self.out.push('\n');
        }
    }

    /// The C parameter list of a proc, binding its arguments in `self.env`. `restrict` goes on
    /// every pointer parameter: the checker forbids overlapping written buffer arguments.
    pub fn bind_params(&mut self, p: &Proc) -> Result<Vec<String>, Diagnostic> {
        let mut params = vec![String::new(); p.args.len()];
        let consts = const_strides(p);
        // Control arguments first: buffer shapes refer to them.
        for (i, a) in p.args.iter().enumerate() {
            if let ArgKind::Ctrl(c) = &a.kind {
                let n = self.var_name(&a.sym);
                let t = if *c == CtrlType::Bool {
                    "bool"
                } else {
                    "int64_t"
                };
                params[i] = format!("{t} {n}");
                self.env.insert(a.sym.clone(), Binding::Ctrl(n));
            }
        }
        for (i, a) in p.args.iter().enumerate() {
            if let ArgKind::Buf(bt) = &a.kind {
                if !bt.mem.addressable {
                    return Err(unsupported(
                        a.span,
                        format!(
                            "argument '{}' of proc '{}' lives in non-addressable memory {}; only instructions may take such buffers",
                            a.sym.name(),
                            p.name,
                            bt.mem.name
                        ),
                    ));
                }
                let n = self.var_name(&a.sym);
                let t = c_type(bt.elem);
                let view = if is_struct_window(bt) {
                    let st = self.unit.win_struct(bt.elem, bt.rank());
                    params[i] = format!("{st} {n}");
                    let strides = (0..bt.rank())
                        .map(|d| match consts.get(&(a.sym.clone(), d)) {
                            Some(v) => ctrl_int(*v),
                            None => format!("{n}.strides[{d}]"),
                        })
                        .collect();
                    BufView {
                        elem: bt.elem,
                        mem: bt.mem.clone(),
                        base: format!("{n}.data"),
                        offset: "0".into(),
                        strides,
                        dense_shape: None,
                    }
                } else {
                    params[i] = format!("{t} *restrict {n}");
                    let shape = self.shape(bt)?;
                    BufView::dense(bt.elem, bt.mem.clone(), n.clone(), shape)
                };
                self.env.insert(a.sym.clone(), Binding::Buf(view));
            }
        }
        Ok(params)
    }

    /// C expressions of the extents of a buffer type.
    pub fn shape(&mut self, bt: &BufType) -> Result<Vec<String>, Diagnostic> {
        bt.shape.iter().map(|e| self.ctrl_expr(e)).collect()
    }

    pub(crate) fn ctrl_expr(&mut self, e: &Expr) -> Result<String, Diagnostic> {
        if e.ty != Ty::Int {
            return Err(unsupported(
                e.span,
                format!("expected a control integer, found {e}"),
            ));
        }
        self.expr(e)
    }

    pub fn view(&self, buf: &Sym, span: Span) -> Result<BufView, Diagnostic> {
        match self.env.get(buf) {
            Some(Binding::Buf(v)) => Ok(v.clone()),
            _ => Err(unsupported(
                span,
                format!("'{}' is not a buffer in scope", buf.name()),
            )),
        }
    }

    /// Whether the offset of the access with these indices was hoisted out of its loop.
    pub(crate) fn is_hoisted(&self, idx: &[Expr]) -> bool {
        self.hoisted.contains_key(&(idx.as_ptr() as usize))
    }

    /// The linear offset of `idx` in a view.
    fn offset(&mut self, v: &BufView, idx: &[Expr], span: Span) -> Result<String, Diagnostic> {
        if let Some(h) = self.hoisted.get(&(idx.as_ptr() as usize)) {
            return Ok(h.clone());
        }
        if idx.len() != v.strides.len() {
            return Err(unsupported(
                span,
                format!(
                    "access with {} indices to a buffer of rank {}",
                    idx.len(),
                    v.strides.len()
                ),
            ));
        }
        let narrow = v.mem.addressable
            && !idx.is_empty()
            && (self.narrowing_var()).is_some_and(|var| crate::narrow::gathered(idx, var));
        if let (true, Some(shape)) = (narrow, &v.dense_shape) {
            let mut acc = String::new();
            for (k, i) in idx.iter().enumerate() {
                let r = self.low32(i)?;
                acc = if k == 0 {
                    r
                } else {
                    format!("(uint32_t) ({acc} * (uint32_t) ({}) + {r})", shape[k])
                };
            }
            return Ok(format!("(int64_t) (int32_t) {acc}"));
        }
        if let Some(shape) = &v.dense_shape {
            // Each index's sum is spliced into the chain (`(acc * n + y + r)`, not
            // `(acc * n + (y + r))`): GCC analyses the address of a deep nest better that way.
            let mut acc = "0".to_string();
            for (k, i) in idx.iter().enumerate() {
                let mut text = if acc == "0" {
                    String::new()
                } else {
                    mul_c(&acc, &shape[k])
                };
                let mut terms = Vec::new();
                self.sum_terms(i, false, &mut terms)?;
                for (negative, t) in terms {
                    if t == "0" {
                        continue;
                    }
                    text = match (text.is_empty(), negative) {
                        (true, false) => t,
                        (true, true) => format!("-{t}"),
                        (false, false) => format!("{text} + {t}"),
                        (false, true) => format!("{text} - {t}"),
                    };
                }
                acc = if text.is_empty() {
                    "0".to_string()
                } else if is_atom(&text) {
                    text
                } else {
                    format!("({text})")
                };
            }
            return Ok(acc);
        }
        let mut terms = Vec::new();
        if v.offset != "0" {
            terms.push(v.offset.clone());
        }
        for (i, s) in idx.iter().zip(&v.strides) {
            let ie = self.ctrl_expr(i)?;
            if ie == "0" || s == "0" {
                continue;
            }
            terms.push(if s == "1" {
                ie
            } else if ie == "1" {
                s.clone()
            } else {
                format!("{ie} * {s}")
            });
        }
        Ok(if terms.is_empty() {
            "0".to_string()
        } else {
            terms.join(" + ")
        })
    }

    /// Hoist the loop-invariant part of the offsets of an innermost loop's accesses: before
    /// `for (v = lo; v < hi; v++)` whose body only assigns (under `if`s), each access of a dense
    /// buffer whose last index is `v + rest`, or `k v + rest` (a literal `k > 0`) where every
    /// iteration makes the access (and whose other indices do not mention `v`) gets
    /// `const int64_t t = lo < hi ? offset(v = lo) : 0;` and is written `t + k (v - lo)`. The C
    /// compiler then sees strided accesses from an invariant base, which it vectorizes; with
    /// the offset inline, a `min` in it (a shifted tile) defeats its address analysis. The base
    /// is computed only when the loop runs, at its first iteration, with the offset's terms in
    /// their order, where the checker proved the offset's arithmetic fits. Returns the
    /// declarations to emit before the loop.
    fn hoist_offsets(
        &mut self,
        body: &[Stmt],
        var: &str,
        lo: &str,
        hi: &str,
    ) -> Result<Vec<String>, Diagnostic> {
        fn simple(b: &[Stmt]) -> bool {
            b.iter().all(|s| match &s.kind {
                StmtKind::Assign { .. } | StmtKind::Reduce { .. } | StmtKind::Pass => true,
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => simple(then_body) && simple(else_body),
                _ => false,
            })
        }
        if !simple(body) {
            return Ok(Vec::new());
        }
        let mentions = |text: &str| {
            text.match_indices(var).any(|(at, _)| {
                let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
                let before = text[..at].chars().next_back().is_some_and(ident);
                let after = text[at + var.len()..].chars().next().is_some_and(ident);
                !before && !after
            })
        };
        let mut decls = Vec::new();
        let mut bases: HashMap<String, String> = HashMap::new();
        // Bases of unconditional accesses by their terms without literals, with the literals'
        // sum.
        let mut shared_bases: HashMap<String, (String, i64)> = HashMap::new();
        let unconditional = unconditional_accesses(body);
        for (buf, idx, span) in accesses(body) {
            let key = idx.as_ptr() as usize;
            // An index computed from data is not invariant: the loop may write what it reads
            // (found by the proc generator: a clamped index read from the buffer the loop
            // writes was hoisted, and read before the writes that change it).
            if self.hoisted.contains_key(&key) || data_indexed(idx) {
                continue;
            }
            let every_iteration = unconditional.contains(&key);
            let Ok(v) = self.view(&buf, span) else {
                continue;
            };
            let (Some(shape), Some((last, init))) = (&v.dense_shape, idx.split_last()) else {
                continue;
            };
            if !v.mem.addressable {
                continue;
            }
            let mut acc = "0".to_string();
            let mut ok = true;
            for (k, i) in init.iter().enumerate() {
                let t = self.ctrl_expr(i)?;
                if mentions(&t) {
                    ok = false;
                    break;
                }
                acc = if acc == "0" {
                    format!("({t})")
                } else {
                    format!("({} + ({t}))", mul_c(&acc, &shape[k]))
                };
            }
            let mut terms = Vec::new();
            self.sum_terms(last, false, &mut terms)?;
            let at: Vec<usize> = (0..terms.len())
                .filter(|&k| mentions(&terms[k].1))
                .collect();
            let [at] = at[..] else {
                continue;
            };
            // The variable's term: `var` or `(step * var)` (an unrolled split's stride, hoisted
            // only for accesses every iteration makes: see below).
            let step = match &terms[at] {
                (false, t) if t == var => Some(1),
                (false, t) if every_iteration => t
                    .strip_prefix('(')
                    .and_then(|t| t.strip_suffix(&format!(" * {var})")))
                    .and_then(|k| k.parse::<i64>().ok())
                    .filter(|&k| k > 0),
                _ => None,
            };
            let Some(step) = step.filter(|_| ok) else {
                continue;
            };
            // The base: the offset at `v = lo`, its terms in their order (each partial sum is
            // one the checker proved fits, where the access is made at `v = lo`), the
            // variable's term in 64 bits (`lo` may be a literal).
            let at_lo = match (step, lo) {
                (_, "0") => "0".to_string(),
                (1, _) => lo.to_string(),
                _ => format!("(INT64_C({step}) * {lo})"),
            };
            let mut text = if acc == "0" {
                String::new()
            } else {
                mul_c(&acc, &shape[init.len()])
            };
            // The same terms without their literals, and the literals' sum: accesses that
            // differ only in a literal (the lanes of an unrolled split, `2 v` and `2 v + 1`)
            // share a base, so that GCC sees them as one interleaved group.
            let mut shape_key = text.clone();
            let mut constant = Some(0i64);
            for (k, (negative, t)) in terms.iter().enumerate() {
                let t = if k == at { at_lo.clone() } else { t.clone() };
                if t == "0" {
                    continue;
                }
                let join = |text: &str, t: &str| match (text.is_empty(), negative) {
                    (true, false) => t.to_string(),
                    (true, true) => format!("-{t}"),
                    (false, false) => format!("{text} + {t}"),
                    (false, true) => format!("{text} - {t}"),
                };
                text = join(&text, &t);
                match t.parse::<i64>() {
                    Ok(c) if k != at => {
                        constant = constant.and_then(|s| {
                            if *negative {
                                s.checked_sub(c)
                            } else {
                                s.checked_add(c)
                            }
                        })
                    }
                    _ => shape_key = join(&shape_key, &t),
                }
            }
            if text.is_empty() {
                text = "0".to_string();
            }
            // Accesses at one offset (of one buffer or of several) share one base: GCC does
            // not always see that two bases are equal, and then loads one value twice. One a
            // literal `d` apart from an unconditional access's base is written `base + ... + d`:
            // both offsets are indices of accesses every iteration makes, so that sum, like
            // theirs, fits.
            let shared = match (every_iteration, constant) {
                (true, Some(c)) => shared_bases
                    .get(&shape_key)
                    .map(|(b, c0)| (b.clone(), c - c0)),
                _ => None,
            };
            let (base, delta) = match (bases.get(&text), shared) {
                (Some(b), _) => (b.clone(), 0),
                (None, Some((b, d))) => (b, d),
                (None, None) => {
                    let base = self.tmp("base");
                    decls.push(format!(
                        "const int64_t {base} = {lo} < {hi} ? ({text}) : 0;"
                    ));
                    bases.insert(text, base.clone());
                    if let (true, Some(c)) = (every_iteration, constant) {
                        shared_bases.insert(shape_key, (base.clone(), c));
                    }
                    (base, 0)
                }
            };
            let moved = if lo == "0" {
                mul_c(&step.to_string(), var)
            } else {
                mul_c(&step.to_string(), &format!("({var} - {lo})"))
            };
            let offset = match delta {
                0 => format!("{base} + {moved}"),
                d if d < 0 => format!("{base} + {moved} - {}", d.unsigned_abs()),
                d => format!("{base} + {moved} + {d}"),
            };
            self.hoisted.insert(key, offset);
        }
        Ok(decls)
    }

    /// A short vector loop (plain stores: no exits, no allocations), kept a loop (GCC would
    /// unroll it completely first and then often not vectorize it) and marked `ivdep` where its
    /// iterations are independent (GCC cannot always see it: a read at an index computed from
    /// data, inside an OpenMP region where the pointers lost `restrict`).
    fn vector_loop(
        &mut self,
        var: &Sym,
        v: &str,
        lo: &str,
        bound: &str,
        body: &[Stmt],
    ) -> Result<(), Diagnostic> {
        self.stage_halved_reads(var, v, lo, bound, body)?;
        self.line("#pragma GCC unroll 1");
        if self.independent_iterations(var, body) {
            self.line("#pragma GCC ivdep");
        }
        self.line(&format!(
            "for (int64_t {v} = {lo}; {v} < {bound}; {v}++) {{"
        ));
        self.indent += 1;
        self.load_repeated_reads(body)?;
        let emitted = self.block(body);
        self.read_locals.clear();
        emitted?;
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// In the body of a short vector loop of several assignments: each read that occurs more
    /// than once, of a buffer the body does not write, loaded once into a local before the
    /// stores. GCC does not merge such loads across the stores (as far as it knows a store may
    /// change what they read), and an interleaved group with repeated members halves the
    /// width it vectorizes at (interpolate's normalize, an unrolled split by 2 of three
    /// channels: 4 lanes, 8 with the loads merged). Sound: every read of a statement's value
    /// happens whatever its data (`select` evaluates both sides), only stores come between
    /// them, and no store of the body is to the buffer (same C base) a local was read from.
    fn load_repeated_reads(&mut self, body: &[Stmt]) -> Result<(), Diagnostic> {
        let values: Option<Vec<&Expr>> = body
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Assign { rhs, .. } => Some(rhs),
                _ => None,
            })
            .collect();
        let Some(values) = values.filter(|v| v.len() >= 2) else {
            return Ok(());
        };
        let mut written = Vec::new();
        for s in body {
            if let StmtKind::Assign { buf, .. } = &s.kind {
                written.push(self.view(buf, s.span)?.base);
            }
        }
        let mut reads: Vec<(String, DType)> = Vec::new();
        let mut count: HashMap<String, usize> = HashMap::new();
        for value in values {
            let mut found = Vec::new();
            weft_ir::visit::walk_expr(value, &mut |x| {
                if let ExprKind::Read { buf, idx } = &x.kind {
                    if !idx.is_empty() && !data_indexed(idx) {
                        found.push((buf.clone(), idx.as_slice(), x.span));
                    }
                }
            });
            for (buf, idx, span) in found {
                let v = self.view(&buf, span)?;
                if written.contains(&v.base) || !v.mem.addressable {
                    continue;
                }
                let text = self.element(&buf, idx, span)?;
                // Already staged before the loop (a halved read): read from there.
                if self.read_locals.contains_key(&text) {
                    continue;
                }
                let n = count.entry(text.clone()).or_default();
                *n += 1;
                if *n == 2 {
                    reads.push((text, v.elem));
                }
            }
        }
        for (text, elem) in reads {
            let local = self.tmp("read");
            self.line(&format!("const {} {local} = {text};", c_type(elem)));
            self.read_locals.insert(text, local);
        }
        Ok(())
    }

    /// The addends of a control expression, each with its sign, flattening `+` and `-`.
    fn sum_terms(
        &mut self,
        e: &Expr,
        negative: bool,
        out: &mut Vec<(bool, String)>,
    ) -> Result<(), Diagnostic> {
        match &e.kind {
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if e.ty == Ty::Int => {
                self.sum_terms(a, negative, out)?;
                self.sum_terms(b, negative ^ (*op == BinOp::Sub), out)
            }
            _ => {
                out.push((negative, self.ctrl_expr(e)?));
                Ok(())
            }
        }
    }

    /// The memory's access template at `offset` of a view.
    fn access(v: &BufView, offset: &str) -> String {
        interpolate(
            &v.mem.access,
            &[
                ("name".into(), v.base.clone()),
                ("offset".into(), offset.to_string()),
                ("type".into(), c_type(v.elem).to_string()),
            ],
        )
    }

    /// An lvalue of an element for a direct (non-instruction) access.
    pub(crate) fn element(
        &mut self,
        buf: &Sym,
        idx: &[Expr],
        span: Span,
    ) -> Result<String, Diagnostic> {
        let v = self.view(buf, span)?;
        if !v.mem.addressable {
            return Err(unsupported(
                span,
                format!(
                    "'{}' lives in memory {}, which only instructions may read or write",
                    buf.name(),
                    v.mem.name
                ),
            ));
        }
        let off = self.offset(&v, idx, span)?;
        Ok(format!("({})", Self::access(&v, &off)))
    }

    /// The view selected by a window expression.
    fn window_view(
        &mut self,
        buf: &Sym,
        coords: &[WinCoord],
        span: Span,
    ) -> Result<BufView, Diagnostic> {
        let v = self.view(buf, span)?;
        if coords.is_empty() {
            return Ok(v);
        }
        if coords.len() != v.strides.len() {
            return Err(unsupported(span, "window rank does not match its buffer"));
        }
        let mut starts = Vec::new();
        let mut strides = Vec::new();
        for (c, s) in coords.iter().zip(&v.strides) {
            match c {
                WinCoord::Point(p) => starts.push(p.clone()),
                WinCoord::Interval(lo, _) => {
                    starts.push(lo.clone());
                    strides.push(s.clone());
                }
            }
        }
        let offset = self.offset(&v, &starts, span)?;
        Ok(BufView {
            elem: v.elem,
            mem: v.mem,
            base: v.base,
            offset: if is_atom(&offset) {
                offset
            } else {
                format!("({offset})")
            },
            strides,
            dense_shape: None,
        })
    }

    fn data_type(&self, e: &Expr) -> Result<DType, Diagnostic> {
        match e.ty {
            Ty::Data(d) => Ok(d),
            Ty::Int => Ok(DType::I64),
            Ty::Bool => Ok(DType::Bool),
            Ty::Buffer(_) => Err(unsupported(e.span, "a buffer used as a value")),
        }
    }

    /// A C expression for `e`.
    pub fn expr(&mut self, e: &Expr) -> Result<String, Diagnostic> {
        match &e.kind {
            ExprKind::Const(c) => self.literal(c, e),
            ExprKind::Var(s) => match self.env.get(s) {
                Some(Binding::Ctrl(n)) => Ok(n.clone()),
                _ => Err(unsupported(
                    e.span,
                    format!("'{}' is not a control value in scope", s.name()),
                )),
            },
            ExprKind::Read { buf, idx } => {
                let text = self.element(buf, idx, e.span)?;
                Ok(self.read_locals.get(&text).cloned().unwrap_or(text))
            }
            ExprKind::Unary(UnOp::Not, a) => Ok(format!("(!{})", self.expr(a)?)),
            ExprKind::Unary(UnOp::Neg, a) => {
                let s = self.expr(a)?;
                match a.ty {
                    Ty::Int => Ok(format!("(-{s})")),
                    Ty::Data(d) if d.is_float() => Ok(format!("(-{s})")),
                    Ty::Data(d) if d.is_int() => Ok(format!(
                        "(({}) (0u - ({}) {s}))",
                        c_type(d),
                        wide_unsigned(d)
                    )),
                    _ => Err(unsupported(e.span, format!("cannot negate {}", a.ty))),
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(e, *op, a, b),
            ExprKind::Select(c, a, b) => {
                let (c, a, b) = (self.expr(c)?, self.expr(a)?, self.expr(b)?);
                Ok(format!("({c} ? {a} : {b})"))
            }
            ExprKind::Cast(to, a) => self.cast(*to, a),
            ExprKind::Math(f, args) => self.math(e, *f, args),
            ExprKind::Window { .. } => Err(unsupported(
                e.span,
                "a window can only be a call argument or bound by `let`",
            )),
            ExprKind::Stride { buf, dim } => {
                let v = self.view(buf, e.span)?;
                v.strides.get(*dim).cloned().ok_or_else(|| {
                    unsupported(
                        e.span,
                        format!("stride of dimension {dim} of a lower-rank buffer"),
                    )
                })
            }
            ExprKind::ReadConfig { config, field } => self.config_member(config, *field, e.span),
            ExprKind::DataIndex { value, lo, hi } => {
                if !matches!(value.ty, Ty::Data(d) if d.is_int()) {
                    return Err(unsupported(e.span, "clamp_index of a non-integer value"));
                }
                // Every integer type but u64 (which weft lacks) converts to int64_t exactly.
                let v = format!("((int64_t) {})", self.expr(value)?);
                let (lo, hi) = (self.expr(lo)?, self.expr(hi)?);
                let h = &mut self.unit.helpers;
                let min = h.min_max(DType::I64, true);
                let max = h.min_max(DType::I64, false);
                Ok(format!("{max}({min}({v}, {hi}), {lo})"))
            }
        }
    }

    fn config_member(
        &mut self,
        config: &weft_ir::Config,
        field: usize,
        span: Span,
    ) -> Result<String, Diagnostic> {
        let (var, fields) = self.unit.configs.get(&config.name).ok_or_else(|| {
            unsupported(span, format!("config '{}' is not declared", config.name))
        })?;
        let f = fields.get(field).ok_or_else(|| {
            unsupported(
                span,
                format!("config '{}' has no field {field}", config.name),
            )
        })?;
        self.abi.uses_ctx = true;
        Ok(format!("ctxt->{var}.{f}"))
    }

    fn literal(&mut self, c: &Const, e: &Expr) -> Result<String, Diagnostic> {
        Ok(match (c, e.ty) {
            (Const::Int(v), Ty::Int) => ctrl_int(*v),
            (Const::Bool(b), Ty::Bool | Ty::Data(DType::Bool)) => b.to_string(),
            (Const::Int(v), Ty::Data(DType::Bool)) => (*v != 0).to_string(),
            (Const::Int(v), Ty::Data(d)) if d.is_float() => float_lit(*v as f64, d),
            (Const::Int(v), Ty::Data(d)) => data_int(*v, d),
            (Const::Float(v), Ty::Data(d)) if d.is_float() => float_lit(*v, d),
            _ => {
                return Err(unsupported(
                    e.span,
                    format!("literal {e} cannot have type {}", e.ty),
                ))
            }
        })
    }

    fn binary(&mut self, e: &Expr, op: BinOp, a: &Expr, b: &Expr) -> Result<String, Diagnostic> {
        if a.ty != b.ty {
            return Err(unsupported(
                e.span,
                format!(
                    "operands of {} have different types ({} and {})",
                    op.symbol(),
                    a.ty,
                    b.ty
                ),
            ));
        }
        let (sa, sb) = (self.expr(a)?, self.expr(b)?);
        if op.is_logic() {
            let o = if op == BinOp::And { "&&" } else { "||" };
            return Ok(format!("({sa} {o} {sb})"));
        }
        if op.is_comparison() {
            let o = match op {
                BinOp::Lt => "<",
                BinOp::Le => "<=",
                BinOp::Gt => ">",
                BinOp::Ge => ">=",
                BinOp::Eq => "==",
                _ => "!=",
            };
            return Ok(format!("({sa} {o} {sb})"));
        }
        let bad = || {
            unsupported(
                e.span,
                format!("operator {} is not defined on {}", op.symbol(), a.ty),
            )
        };
        let d = match a.ty {
            Ty::Int => DType::I64,
            Ty::Data(d) if d != DType::Bool => d,
            _ => return Err(bad()),
        };
        let h = &mut self.unit.helpers;
        match op {
            BinOp::Min | BinOp::Max => {
                let f = h.min_max(d, op == BinOp::Min);
                Ok(format!("{f}({sa}, {sb})"))
            }
            // A positive constant divisor needs no zero test, and for unsigned types C's
            // division is already the floor: plain `/` lets the C compiler vectorize it.
            BinOp::Div
                if d.is_int() && !d.is_signed() && b.as_int_const().is_some_and(|k| k > 0) =>
            {
                Ok(format!("(({}) ({sa} / {sb}))", c_type(d)))
            }
            // Floor division and modulo by a power of two 2^k are an arithmetic shift and a
            // mask in two's complement (GCC shifts signed values arithmetically): no branches,
            // so upsampling's `(x + 1) / 2` and `x % 2` vectorize.
            BinOp::Div if d.is_int() && power_of_two(b, d).is_some() => {
                let k = power_of_two(b, d).unwrap_or(0);
                Ok(format!("(({}) ({sa} >> {k}))", c_type(d)))
            }
            BinOp::Mod if d.is_int() && power_of_two(b, d).is_some() => {
                let m = (1u64 << power_of_two(b, d).unwrap_or(0)) - 1;
                Ok(format!("(({}) ({sa} & {m}))", c_type(d)))
            }
            BinOp::Div if d.is_int() => Ok(format!("{}({sa}, {sb})", h.div(d))),
            BinOp::Mod if d.is_int() => Ok(format!("{}({sa}, {sb})", h.rem(d))),
            BinOp::Mod => Err(bad()),
            _ => {
                let o = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    _ => "/",
                };
                // Control arithmetic is proven to fit int64_t by the checker; data integer
                // arithmetic wraps, so it goes through an unsigned type of at least 32 bits.
                if a.ty == Ty::Int || d.is_float() {
                    Ok(format!("({sa} {o} {sb})"))
                } else {
                    let w = wide_unsigned(d);
                    Ok(format!("(({}) (({w}) {sa} {o} ({w}) {sb}))", c_type(d)))
                }
            }
        }
    }

    fn cast(&mut self, to: DType, a: &Expr) -> Result<String, Diagnostic> {
        let from = self.data_type(a)?;
        let s = self.expr(a)?;
        let t = c_type(to);
        Ok(if from == to {
            s
        } else if to == DType::Bool {
            format!("({s} != 0)")
        } else if from == DType::Bool {
            format!("(({t}) ({s} ? 1 : 0))")
        } else if from.is_float() && to.is_float() {
            format!("(({t}) {s})")
        } else if from.is_float() {
            let helper = self.unit.helpers.float_to_int(from, to, !self.in_scatter);
            format!("{helper}({s})")
        } else if to.is_float() {
            format!("(({t}) {s})")
        } else {
            format!("(({t}) ({}) {s})", same_width_unsigned(to))
        })
    }

    fn math(&mut self, e: &Expr, f: MathFn, args: &[Expr]) -> Result<String, Diagnostic> {
        if args.len() != f.arity() {
            return Err(unsupported(
                e.span,
                format!("{} takes {} arguments", f.name(), f.arity()),
            ));
        }
        let d = self.data_type(&args[0])?;
        for a in args {
            if a.ty != args[0].ty {
                return Err(unsupported(
                    e.span,
                    format!("arguments of {} differ in type", f.name()),
                ));
            }
        }
        let parts = args
            .iter()
            .map(|a| self.expr(a))
            .collect::<Result<Vec<_>, _>>()?
            .join(", ");
        if f == MathFn::Abs && d.is_int() {
            return Ok(format!("{}({parts})", self.unit.helpers.abs_int(d)));
        }
        if !d.is_float() {
            return Err(unsupported(
                e.span,
                format!("{} is defined on floats only", f.name()),
            ));
        }
        let base = match f {
            MathFn::Abs => "fabs",
            // Ties to even, as Halide's `round` (the default rounding mode).
            MathFn::Round => "nearbyint",
            other => other.name(),
        };
        let suffix = if d == DType::F32 { "f" } else { "" };
        self.unit.libm = true;
        Ok(format!("{base}{suffix}({parts})"))
    }

    /// Emit a block, freeing at its end what it allocated and did not free.
    pub fn block(&mut self, b: &[Stmt]) -> Result<(), Diagnostic> {
        self.pending_frees.push(Vec::new());
        for s in b {
            self.stmt(s)?;
        }
        let frees = self.pending_frees.pop().unwrap_or_default();
        for (_, f) in frees.into_iter().rev() {
            if !f.trim().is_empty() {
                self.line(&f);
            }
        }
        Ok(())
    }

    /// The C line of an assignment or reduction `s` of `rhs` into `buf[idx]`.
    fn store(
        &mut self,
        s: &Stmt,
        buf: &Sym,
        idx: &[Expr],
        rhs: &Expr,
    ) -> Result<String, Diagnostic> {
        let lhs = self.element(buf, idx, s.span)?;
        let elem = self.view(buf, s.span)?.elem;
        if rhs.ty != Ty::Data(elem) {
            return Err(unsupported(
                s.span,
                format!("value of type {} stored into a buffer of {elem}", rhs.ty),
            ));
        }
        let r = self.expr(rhs)?;
        Ok(if matches!(s.kind, StmtKind::Assign { .. }) {
            format!("{lhs} = {r};")
        } else if elem.is_float() {
            format!("{lhs} += {r};")
        } else if elem.is_int() {
            let w = wide_unsigned(elem);
            format!("{lhs} = ({}) (({w}) {lhs} + ({w}) {r});", c_type(elem))
        } else {
            return Err(unsupported(s.span, "`+=` on a bool buffer"));
        })
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Diagnostic> {
        match &s.kind {
            StmtKind::Pass => self.line(";"),
            StmtKind::Assign { buf, idx, rhs } | StmtKind::Reduce { buf, idx, rhs } => {
                self.in_scatter = data_indexed(idx);
                let line = self.store(s, buf, idx, rhs);
                self.in_scatter = false;
                self.line(&line?);
            }
            StmtKind::WriteConfig { config, field, rhs } => {
                let m = self.config_member(config, *field, s.span)?;
                let r = self.expr(rhs)?;
                self.line(&format!("{m} = {r};"));
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.expr(cond)?;
                self.line(&format!("if ({c}) {{"));
                self.indent += 1;
                self.block(then_body)?;
                self.indent -= 1;
                if else_body.is_empty() {
                    self.line("}");
                } else {
                    self.line("} else {");
                    self.indent += 1;
                    self.block(else_body)?;
                    self.indent -= 1;
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
                let (lo_e, hi_e) = (lo, hi);
                let lo = self.ctrl_expr(lo)?;
                let hi = self.ctrl_expr(hi)?;
                let v = self.var_name(var);
                let hoist = !is_atom(&hi);
                // A parallel loop is an OpenMP worksharing loop: its iterations were proved
                // race-free, so any split among threads computes the sequential result. Without
                // `-fopenmp` the pragma is ignored and the loop runs sequentially.
                let pragma = "#pragma omp parallel for schedule(static)";
                if *parallel {
                    self.unit.parallel = true;
                }
                let bound = if hoist {
                    let t = self.tmp("hi");
                    self.line("{");
                    self.indent += 1;
                    self.line(&format!("const int64_t {t} = {hi};"));
                    t
                } else {
                    hi
                };
                // Where the failure flag of a parallel loop goes, should its body be able to fail.
                let flag_at = self.out.len();
                if *parallel {
                    self.line(pragma);
                    let (flag, label) = (self.tmp("failed"), self.tmp("next"));
                    self.par_exits.push(ParExit {
                        base: self.pending_frees.len(),
                        flag,
                        label,
                        used: false,
                    });
                }
                // The loop variable is bound while hoisting so that its accesses name it.
                self.env.insert(var.clone(), Binding::Ctrl(v.clone()));
                let decls = if *parallel {
                    Vec::new()
                } else {
                    self.hoist_offsets(body, &v, &lo, &bound)?
                };
                if !decls.is_empty() {
                    self.line("{");
                    self.indent += 1;
                    for d in &decls {
                        self.line(d);
                    }
                }
                // A short constant loop of plain stores (a vectorized loop of a pipeline) stays
                // a loop: GCC would unroll it completely first and then often not vectorize it.
                let vector = !*parallel && crate::vector_loops::vector_shaped(lo_e, hi_e, body);
                let lane = (lo_e.as_int_const(), hi_e.as_int_const());
                let narrowed = match (vector, lane) {
                    // Two versions: gathers indexed in 32 bits (8 lanes per AVX2 gather, not 4)
                    // where every buffer they read is small enough, the general one otherwise.
                    (true, (Some(l), Some(h))) => {
                        let (lo, bound) = (lo.clone(), bound.clone());
                        self.narrow_versions(var, (l, h), body, &mut |cx| {
                            cx.vector_loop(var, &v, &lo, &bound, body)
                        })?
                    }
                    _ => false,
                };
                let exit = if narrowed {
                    None
                } else if vector {
                    self.vector_loop(var, &v, &lo, &bound, body)?;
                    None
                } else {
                    self.line(&format!(
                        "for (int64_t {v} = {lo}; {v} < {bound}; {v}++) {{"
                    ));
                    self.indent += 1;
                    let exit = if *parallel {
                        // The body in a block of its own, so that the label at the end of the
                        // iteration is outside the scope of any variable-length array in it.
                        self.line("{");
                        self.indent += 1;
                        self.block(body)?;
                        self.indent -= 1;
                        self.line("}");
                        self.par_exits.pop().filter(|p| p.used)
                    } else {
                        self.block(body)?;
                        None
                    };
                    if let Some(p) = &exit {
                        self.line(&format!("{}: ;", p.label));
                    }
                    self.indent -= 1;
                    self.line("}");
                    exit
                };
                self.env.remove(var);
                if !decls.is_empty() {
                    self.hoisted.clear();
                    self.indent -= 1;
                    self.line("}");
                }
                if let Some(p) = exit {
                    let pad = "    ".repeat(self.indent);
                    self.out
                        .insert_str(flag_at, &format!("{pad}int32_t {} = WEFT_OK;\n", p.flag));
                    let leave = self.failure_exit(&p.flag, None);
                    self.line(&format!("if ({} != WEFT_OK) {leave}", p.flag));
                }
                if hoist {
                    self.indent -= 1;
                    self.line("}");
                }
            }
            StmtKind::Alloc { buf, ty } => {
                if ty.window {
                    return Err(unsupported(s.span, "an allocation cannot be a window"));
                }
                let shape = self.shape(ty)?;
                let n = self.var_name(buf);
                let t = c_type(ty.elem);
                self.line(&format!(
                    "/* alloc {} @ {} */",
                    comment_text(buf.name()),
                    comment_text(&ty.mem.name)
                ));
                let size = self.alloc_size(buf, &shape, ty.elem);
                let mut vars = vec![
                    ("name".to_string(), n.clone()),
                    ("type".to_string(), t.to_string()),
                    ("size".to_string(), size.clone()),
                ];
                // A memory whose allocation can fail says where to go then with `{fail}`.
                if ty.mem.alloc.contains("{fail}") {
                    let record = self.fault_record(buf, &size, ty.elem);
                    let fail = self.failure_exit("WEFT_ERR_ALLOC", Some(record));
                    vars.push(("fail".to_string(), fail));
                }
                let alloc = interpolate(&ty.mem.alloc, &vars);
                self.line(&alloc);
                self.line(&format!("(void) {n};"));
                let free = interpolate(&ty.mem.free, &vars);
                if let Some(top) = self.pending_frees.last_mut() {
                    top.push((buf.clone(), free));
                }
                self.env.insert(
                    buf.clone(),
                    Binding::Buf(BufView::dense(ty.elem, ty.mem.clone(), n, shape)),
                );
            }
            StmtKind::Free { buf } => {
                let mut found = None;
                for frame in self.pending_frees.iter_mut().rev() {
                    if let Some(pos) = frame.iter().position(|(b, _)| b == buf) {
                        found = Some(frame.remove(pos).1);
                        break;
                    }
                }
                match found {
                    Some(f) => {
                        if !f.trim().is_empty() {
                            self.line(&f);
                        }
                        self.env.remove(buf);
                    }
                    None => {
                        return Err(unsupported(
                            s.span,
                            format!("free of '{}', which is not allocated here", buf.name()),
                        ))
                    }
                }
            }
            StmtKind::Window { name, rhs } => {
                let ExprKind::Window { buf, coords } = &rhs.kind else {
                    return Err(unsupported(s.span, "`let` binds only windows"));
                };
                let mut v = self.window_view(buf, coords, s.span)?;
                if !is_atom(&v.offset) {
                    // Fix the offset now: config fields in it may change later.
                    let t = self.tmp(&format!("{}_off", clean(name.name())));
                    self.line(&format!("const int64_t {t} = {};", v.offset));
                    self.line(&format!("(void) {t};"));
                    v.offset = t;
                }
                self.env.insert(name.clone(), Binding::Buf(v));
            }
            StmtKind::Call { proc, args } => self.call(s, proc, args)?,
        }
        Ok(())
    }

    /// The number of elements of an allocation of `shape`, as a C expression for the memory's
    /// `{size}`: a literal when the extents are constants whose product fits, else a variable
    /// computed with overflow checks that leaves through [`Self::failure_exit`] when an extent is
    /// not positive or the size in bytes exceeds `PTRDIFF_MAX`.
    fn alloc_size(&mut self, buf: &Sym, shape: &[String], elem: DType) -> String {
        let bytes = c_type_size(elem);
        let constant = shape.iter().try_fold(1i64, |acc, d| {
            let d = d.parse::<i64>().ok().filter(|d| *d >= 1)?;
            acc.checked_mul(d).filter(|n| {
                n.checked_mul(bytes)
                    .is_some_and(|b| b <= i64::from(i32::MAX))
            })
        });
        if let Some(n) = constant {
            return n.to_string();
        }
        let t = self.tmp("n");
        let t_c = c_type(elem);
        let steps: Vec<String> = shape
            .iter()
            .map(|d| format!("!weft_size_mul(&{t}, {d}, sizeof({t_c}))"))
            .collect();
        self.line(&format!("int64_t {t} = 1;"));
        let record = self.fault_record(buf, "-1", elem);
        let exit = self.failure_exit("WEFT_ERR_ALLOC", Some(record));
        self.line(&format!("if ({}) {exit}", steps.join(" || ")));
        t
    }

    /// The call that records a failed allocation of `buf` (`elems` elements, -1 when the size
    /// itself is invalid) for the entry point's message.
    fn fault_record(&self, buf: &Sym, elems: &str, elem: DType) -> String {
        format!(
            "weft_fault_set(fault, {}, {}, {elems}, (int64_t) sizeof({}));",
            c_string(buf.name()),
            c_string(&self.proc_name),
            c_type(elem)
        )
    }

    fn call(&mut self, s: &Stmt, callee: &Arc<Proc>, args: &[Expr]) -> Result<(), Diagnostic> {
        if args.len() != callee.args.len() {
            return Err(unsupported(
                s.span,
                format!(
                    "'{}' takes {} arguments, given {}",
                    callee.name,
                    callee.args.len(),
                    args.len()
                ),
            ));
        }
        if let Some(known) = self.unit.procs.get(&callee.name) {
            if !Arc::ptr_eq(known, callee) && **known != **callee {
                return Err(unsupported(
                    s.span,
                    format!("two different procs are named '{}'", callee.name),
                ));
            }
        }
        if let Some(instr) = &callee.instr {
            let mut vars = Vec::new();
            for (param, a) in callee.args.iter().zip(args) {
                let pname = param.sym.name().to_string();
                match &param.kind {
                    ArgKind::Ctrl(_) => {
                        let v = self.expr(a)?;
                        vars.push((pname, format!("({v})")));
                    }
                    ArgKind::Buf(_) => {
                        let v = self.arg_view(a, s.span)?;
                        vars.push((format!("{pname}_data"), Self::access(&v, &v.offset)));
                        for (k, st) in v.strides.iter().enumerate() {
                            vars.push((format!("{pname}_stride_{k}"), st.clone()));
                        }
                    }
                }
            }
            let text = interpolate(&instr.template, &vars);
            self.line(&text);
            return Ok(());
        }
        let fname = self
            .unit
            .proc_names
            .get(&callee.name)
            .cloned()
            .ok_or_else(|| unsupported(s.span, format!("proc '{}' is not emitted", callee.name)))?;
        let mut parts = Vec::new();
        for (param, a) in callee.args.iter().zip(args) {
            match &param.kind {
                ArgKind::Ctrl(_) => parts.push(self.expr(a)?),
                ArgKind::Buf(bt) => {
                    let v = self.arg_view(a, s.span)?;
                    if !v.mem.addressable {
                        return Err(unsupported(
                            a.span,
                            format!(
                                "a buffer in memory {} can only be passed to instructions",
                                v.mem.name
                            ),
                        ));
                    }
                    let ptr = format!("&{}", Self::access(&v, &v.offset));
                    if is_struct_window(bt) {
                        if v.strides.len() != bt.rank() {
                            return Err(unsupported(a.span, "window argument of the wrong rank"));
                        }
                        let st = self.unit.win_struct(bt.elem, bt.rank());
                        parts.push(format!("({st}){{ {ptr}, {{ {} }} }}", v.strides.join(", ")));
                    } else {
                        parts.push(ptr);
                    }
                }
            }
        }
        let abi = self.unit.abi.get(&callee.name).copied().unwrap_or_default();
        self.abi.uses_ctx |= abi.uses_ctx;
        let mut hidden = hidden_args(abi);
        hidden.extend(parts);
        let call = format!("{fname}({})", hidden.join(", "));
        if abi.can_fail {
            let rc = self.tmp("rc");
            self.line(&format!("int32_t {rc} = {call};"));
            let exit = self.failure_exit(&rc, None);
            self.line(&format!("if ({rc} != WEFT_OK) {exit}"));
        } else {
            self.line(&format!("{call};"));
        }
        Ok(())
    }

    fn arg_view(&mut self, a: &Expr, span: Span) -> Result<BufView, Diagnostic> {
        match &a.kind {
            ExprKind::Window { buf, coords } => self.window_view(buf, coords, span),
            ExprKind::Read { buf, idx } if idx.is_empty() => self.view(buf, span),
            _ => Err(unsupported(
                span,
                format!("buffer argument expected, found {a}"),
            )),
        }
    }

    /// `WEFT_ASSUME` hints for the preconditions of a proc.
    pub fn assumptions(&mut self, p: &Proc) -> Result<(), Diagnostic> {
        for e in &p.preds {
            let c = self.expr(e)?;
            self.line(&format!("WEFT_ASSUME({c});"));
        }
        Ok(())
    }
}

/// Whether an access's indices are computed from data (a gather, or a scatter when stored).
pub(crate) fn data_indexed(idx: &[Expr]) -> bool {
    idx.iter().any(reads_data)
}

/// Whether an expression reads a buffer.
fn reads_data(e: &Expr) -> bool {
    let mut found = false;
    weft_ir::visit::walk_expr(e, &mut |x| found |= matches!(x.kind, ExprKind::Read { .. }));
    found
}

/// The accesses (keyed by the address of their index list) that every run of the block makes:
/// the stores and reads of its statements outside any `if` (a `select` evaluates both sides).
pub(crate) fn unconditional_accesses(body: &[Stmt]) -> std::collections::HashSet<usize> {
    let mut keys = std::collections::HashSet::new();
    for s in body {
        if let StmtKind::Assign { idx, rhs, .. } | StmtKind::Reduce { idx, rhs, .. } = &s.kind {
            keys.insert(idx.as_ptr() as usize);
            for e in idx.iter().chain([rhs]) {
                weft_ir::visit::walk_expr(e, &mut |x| {
                    if let ExprKind::Read { idx, .. } = &x.kind {
                        keys.insert(idx.as_ptr() as usize);
                    }
                });
            }
        }
    }
    keys
}

/// The buffer accesses of a block of plain stores (under `if`s): each store's and each read's
/// buffer, indices and place.
pub(crate) fn accesses(body: &[Stmt]) -> Vec<(Sym, &[Expr], Span)> {
    let mut accesses: Vec<(Sym, &[Expr], Span)> = Vec::new();
    fn reads<'e>(e: &'e Expr, out: &mut Vec<(Sym, &'e [Expr], Span)>) {
        if let ExprKind::Read { buf, idx } = &e.kind {
            out.push((buf.clone(), idx.as_slice(), e.span));
        }
        weft_ir::visit::for_each_child(&e.kind, |c| reads(c, out));
    }
    fn walk<'e>(b: &'e [Stmt], out: &mut Vec<(Sym, &'e [Expr], Span)>) {
        for s in b {
            match &s.kind {
                StmtKind::Assign { buf, idx, rhs } | StmtKind::Reduce { buf, idx, rhs } => {
                    out.push((buf.clone(), idx.as_slice(), s.span));
                    idx.iter().for_each(|i| reads(i, out));
                    reads(rhs, out);
                }
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    reads(cond, out);
                    walk(then_body, out);
                    walk(else_body, out);
                }
                _ => {}
            }
        }
    }
    walk(body, &mut accesses);
    accesses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn interpolation_is_single_pass_and_keeps_c_braces() {
        let v = vars(&[("name", "{offset}"), ("offset", "i + 1")]);
        assert_eq!(interpolate("{name}[{offset}]", &v), "{offset}[i + 1]");
        assert_eq!(
            interpolate("do { x = {offset}; } while (0); {unknown} {", &v),
            "do { x = i + 1; } while (0); {unknown} {"
        );
    }

    #[test]
    fn float_literals_round_trip() {
        assert_eq!(float_lit(0.1, DType::F32), "1e-1f");
        assert_eq!(float_lit(0.1, DType::F64), "1e-1");
        assert_eq!(float_lit(-0.0, DType::F64), "(-0e0)");
        assert_eq!(float_lit(f64::INFINITY, DType::F32), "((float) INFINITY)");
        let x = 1.0f64 / 3.0;
        let s = float_lit(x, DType::F64);
        assert_eq!(s.parse::<f64>().unwrap(), x);
    }

    #[test]
    fn strides_fold_constants() {
        let s = dense_strides(&["v_n_1".into(), "4".into(), "16".into()]);
        assert_eq!(s, vec!["64", "16", "1"]);
        let s = dense_strides(&["4".into(), "v_n_1".into(), "v_k_2".into()]);
        assert_eq!(s, vec!["(v_n_1 * v_k_2)", "v_k_2", "1"]);
    }
}
