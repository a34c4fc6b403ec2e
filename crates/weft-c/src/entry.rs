//! The exported entry points of a root proc, and the ABI header.

use crate::emit::{dense_strides, is_struct_window, unsupported, Binding, BufView, ProcCx, UnitCx};
use crate::helpers::c_type;
use crate::names::c_string;
use crate::{dtype_code, EntryInfo};
use weft_ir::{ArgKind, CtrlType, Diagnostic, Proc};

/// The shared ABI declarations, guarded so several generated headers can be included together.
const ABI: &str = r#"#ifndef WEFT_ABI_H
#define WEFT_ABI_H
#include <stdint.h>
#include <stdbool.h>

/* A buffer argument: `strides` are in elements; `shape` and `strides` have `rank` entries. */
typedef struct weft_buffer {
    void *data;
    int32_t dtype; /* index in bool, i8, u8, i16, u16, i32, u32, i64, f32, f64 */
    int32_t rank;
    const int64_t *shape;
    const int64_t *strides;
} weft_buffer;

/* One argument of a uniform entry point. */
typedef struct weft_arg {
    int32_t kind; /* 0 int, 1 bool, 2 buffer */
    int64_t i;
    const weft_buffer *buf;
} weft_arg;

enum weft_status {
    WEFT_OK = 0,
    WEFT_ERR_ARG_COUNT = 1,
    WEFT_ERR_ARG_KIND = 2,
    WEFT_ERR_DTYPE = 3,
    WEFT_ERR_RANK = 4,
    WEFT_ERR_SHAPE = 5,
    WEFT_ERR_STRIDE = 6,
    WEFT_ERR_SIZE = 7,
    WEFT_ERR_PRECONDITION = 8,
    WEFT_ERR_NULL = 9,
    WEFT_ERR_ALIAS = 10,
    WEFT_ERR_ALLOC = 11,
    WEFT_ERR_RANGE = 12
};

/* The largest magnitude of a control value entering a proc: size, index and stride arguments
   (sizes are at least 1) and the strides of window arguments. */
#define WEFT_CTRL_MAX INT64_C(2147483647)

enum weft_dtype {
    WEFT_DTYPE_BOOL = 0,
    WEFT_DTYPE_I8 = 1,
    WEFT_DTYPE_U8 = 2,
    WEFT_DTYPE_I16 = 3,
    WEFT_DTYPE_U16 = 4,
    WEFT_DTYPE_I32 = 5,
    WEFT_DTYPE_U32 = 6,
    WEFT_DTYPE_I64 = 7,
    WEFT_DTYPE_F32 = 8,
    WEFT_DTYPE_F64 = 9
};
#endif /* WEFT_ABI_H */
"#;

/// The static helpers of every unit: error messages, the fault record of a failed allocation,
/// and the overflow-checked arithmetic of allocation sizes and argument validation (C99, so they
/// avoid the `__builtin_*_overflow` extensions). All `static inline` (those of validation `unused`
/// and never inlined), so unused ones cost nothing and draw no warning.
pub const RUNTIME: &str = r#"/* Argument validation runs once per call, and is most of a small kernel's C: compiled for
   size, once (never inlined), it costs the C compiler a fraction of what -O3 takes for it. */
#if defined(__GNUC__) && !defined(__clang__)
#define WEFT_VALIDATION __attribute__((noinline, unused, optimize("O1")))
#define WEFT_VALIDATION_HELPER WEFT_VALIDATION static
#elif defined(__GNUC__)
#define WEFT_VALIDATION __attribute__((noinline, unused))
#define WEFT_VALIDATION_HELPER WEFT_VALIDATION static
#else
#define WEFT_VALIDATION
#define WEFT_VALIDATION_HELPER static inline
#endif
/* The small helpers every buffer argument's validation calls several times: inlined into it
   (a tiny kernel's call is mostly validation; calling them cost a third of it). */
#if defined(__GNUC__)
#define WEFT_VALIDATION_INLINE static inline __attribute__((always_inline, unused))
#else
#define WEFT_VALIDATION_INLINE static inline
#endif

/* A proc with a loop is a function of its own, never inlined into its callers: GCC allocates
   registers over a whole function, and a callee's loops inlined beside a caller's hot loop can
   raise the pressure enough to spill that loop's invariants (sgemm_avx2's 6 x 16 tile reloaded
   five row offsets from the stack in every iteration once a blocked path was inlined beside it,
   and ran at 0.76-0.86 of its speed). Its clones for constant arguments are still made. */
#if defined(__GNUC__)
#define WEFT_OWN_FUNCTION __attribute__((noinline))
#else
#define WEFT_OWN_FUNCTION
#endif

/* Writes a formatted message into the caller's error buffer, if it gave one. */
WEFT_VALIDATION_HELPER void weft_fail(char *err, int64_t err_len, const char *fmt, ...) {
    if (err != NULL && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, (size_t) err_len, fmt, ap);
        va_end(ap);
    }
}

/* A failed allocation, for the entry point's message: buffer `buf` of proc `proc`, `elems`
   elements of `elem_bytes` bytes (`elems` < 0: an extent is not positive or the size overflows). */
struct weft_fault {
    const char *buf;
    const char *proc;
    int64_t elems;
    int64_t elem_bytes;
};

static inline void weft_fault_set(struct weft_fault *f, const char *buf, const char *proc, int64_t elems, int64_t elem_bytes) {
    f->buf = buf;
    f->proc = proc;
    f->elems = elems;
    f->elem_bytes = elem_bytes;
}

WEFT_VALIDATION_HELPER void weft_fault_report(const struct weft_fault *f, const char *entry, char *err, int64_t err_len) {
    if (f->elems < 0) {
        weft_fail(err, err_len, "'%s': allocation of '%s' in proc '%s' failed: an extent is not positive or the size overflows", entry, f->buf, f->proc);
    } else {
        weft_fail(err, err_len, "'%s': allocation of '%s' in proc '%s' failed: %lld elements of %lld bytes", entry, f->buf, f->proc, (long long) f->elems, (long long) f->elem_bytes);
    }
}

/* *out = a * b for a, b >= 0; false when that exceeds INT64_MAX. The compilers' overflow builtin
   where there is one (a division costs more than the rest of a call's checks), else C99. */
static inline bool weft_mul_nonneg(int64_t a, int64_t b, int64_t *out) {
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5)
    return !__builtin_mul_overflow(a, b, out);
#else
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
#endif
}

/* *acc *= extent for an allocation of `elem_bytes`-byte elements; false when the extent is not
   positive or the size in bytes would exceed PTRDIFF_MAX. */
static inline bool weft_size_mul(int64_t *acc, int64_t extent, size_t elem_bytes) {
    int64_t next;
    if (extent < 1 || !weft_mul_nonneg(*acc, extent, &next)) return false;
    if (next > (int64_t) (PTRDIFF_MAX / elem_bytes)) return false;
    *acc = next;
    return true;
}

/* The element offsets a buffer reaches from its data pointer, *lo <= 0 <= *hi; false when they
   overflow. Only dimensions of extent above 1 are stepped along; their strides must lie within
   +-WEFT_CTRL_MAX (checked before). */
WEFT_VALIDATION_INLINE bool weft_reach(const weft_buffer *b, int64_t *lo, int64_t *hi) {
    *lo = 0;
    *hi = 0;
    for (int32_t d = 0; d < b->rank; d++) {
        int64_t s = b->strides[d], step;
        if (b->shape[d] <= 1) continue;
        if (!weft_mul_nonneg(b->shape[d] - 1, s < 0 ? -s : s, &step)) return false;
        if (s < 0) {
            if (*lo < -INT64_MAX + step) return false;
            *lo -= step;
        } else {
            if (*hi > INT64_MAX - step) return false;
            *hi += step;
        }
    }
    return true;
}

/* The byte range [*lo, *hi) a buffer argument may touch; false when it overflows. */
WEFT_VALIDATION_INLINE bool weft_span(const weft_buffer *b, int64_t elem_size, uintptr_t *lo, uintptr_t *hi) {
    int64_t first, last, lo_bytes, hi_bytes;
    if (!weft_reach(b, &first, &last) || last == INT64_MAX) return false;
    if (!weft_mul_nonneg(-first, elem_size, &lo_bytes) || !weft_mul_nonneg(last + 1, elem_size, &hi_bytes)) return false;
    *lo = (uintptr_t) b->data - (uintptr_t) lo_bytes;
    *hi = (uintptr_t) b->data + (uintptr_t) hi_bytes;
    return true;
}

/* The first dimension whose stride is not that of a dense row-major tensor of b's shape (its
   stride should be *want), -1 when there is none, or b->rank when the dense strides overflow.
   Dimensions of extent 1 are never stepped along, so their strides do not matter. */
WEFT_VALIDATION_INLINE int32_t weft_dense_mismatch(const weft_buffer *b, int64_t *want) {
    int64_t st = 1;
    for (int32_t d = b->rank - 1; d >= 0; d--) {
        if (b->shape[d] != 1 && b->strides[d] != st) {
            *want = st;
            return d;
        }
        if (!weft_mul_nonneg(st, b->shape[d], &st)) return b->rank;
    }
    return -1;
}

/* Whether distinct indices of a window reach distinct elements, by a sufficient condition: taken
   in order of |stride|, each dimension's stride must step past everything the dimensions before
   it reach. Layouts it cannot prove (interleaved dimensions) are refused. Strides must lie
   within +-WEFT_CTRL_MAX (checked before). */
WEFT_VALIDATION_HELPER bool weft_injective(const weft_buffer *b) {
    int64_t span = 0, prev_s = -1, step;
    int32_t prev_d = -1;
    for (int32_t k = 0; k < b->rank; k++) {
        int32_t best = -1;
        int64_t best_s = 0;
        for (int32_t d = 0; d < b->rank; d++) {
            int64_t s = b->strides[d] < 0 ? -b->strides[d] : b->strides[d];
            bool after = s > prev_s || (s == prev_s && d > prev_d);
            bool first = best < 0 || s < best_s || (s == best_s && d < best);
            if (b->shape[d] > 1 && after && first) {
                best = d;
                best_s = s;
            }
        }
        if (best < 0) break;
        if (best_s <= span) return false;
        if (!weft_mul_nonneg(b->shape[best] - 1, best_s, &step) || span > INT64_MAX - step) return false;
        span += step;
        prev_s = best_s;
        prev_d = best;
    }
    return true;
}

"#;

/// The header: ABI types, the unit's context struct and the prototypes of its entry points.
pub fn header_text(namespace: &str, context_def: &str, protos: &str) -> String {
    let guard = format!("WEFT_UNIT_{}_H", namespace.to_ascii_uppercase());
    format!(
        "{ABI}\n#ifndef {guard}\n#define {guard}\n\n{context_def}\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n{protos}#ifdef __cplusplus\n}}\n#endif\n#endif /* {guard} */\n"
    )
}

/// The check, run and entry functions of one root, and their prototypes.
pub fn entry_points(
    unit: &mut UnitCx,
    p: &std::sync::Arc<Proc>,
    info: &EntryInfo,
) -> Result<(String, String), Diagnostic> {
    let direct = &info.direct_symbol;
    let pname = c_string(&p.name);
    let ctx = unit.ctx_type.clone();
    let mut cx = ProcCx::new(unit, &p.name);
    // Parameters of the direct entry: control values and `const weft_buffer *`.
    let mut params = Vec::new();
    let mut pnames = Vec::new();
    for a in &p.args {
        let n = cx.var_name(&a.sym);
        match &a.kind {
            ArgKind::Ctrl(CtrlType::Bool) => params.push(format!("bool {n}")),
            ArgKind::Ctrl(_) => params.push(format!("int64_t {n}")),
            ArgKind::Buf(_) => params.push(format!("const weft_buffer *{n}")),
        }
        if let ArgKind::Ctrl(_) = a.kind {
            cx.env.insert(a.sym.clone(), Binding::Ctrl(n.clone()));
        }
        pnames.push(n);
    }
    let with_ctx = |rest: &[String]| {
        std::iter::once(format!("{ctx} *ctxt"))
            .chain(rest.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let param_list = with_ctx(&params);
    let call_list = std::iter::once("ctxt".to_string())
        .chain(pnames.iter().cloned())
        .collect::<Vec<_>>()
        .join(", ");

    // --- check function ---
    cx.line("(void) ctxt;");
    cx.line("(void) err;");
    cx.line("(void) err_len;");
    for n in &pnames {
        cx.line(&format!("(void) {n};"));
    }
    // Control values first: shapes and preconditions are evaluated from them, and the checker
    // proved those fit 64 bits only for arguments within the bound.
    for (a, n) in p.args.iter().zip(&pnames) {
        let an = c_string(a.sym.name());
        let (lo, what, status) = match a.ctrl() {
            Some(CtrlType::Size) => ("1", "a size", "WEFT_ERR_SIZE"),
            Some(CtrlType::Index) => ("-WEFT_CTRL_MAX", "an index", "WEFT_ERR_RANGE"),
            Some(CtrlType::Stride) => ("-WEFT_CTRL_MAX", "a stride", "WEFT_ERR_RANGE"),
            _ => continue,
        };
        let range = if lo == "1" {
            "1..=2147483647"
        } else {
            "-2147483647..=2147483647"
        };
        cx.line(&format!(
            "if (!({n} >= {lo} && {n} <= WEFT_CTRL_MAX)) {{\n    weft_fail(err, err_len, \"argument '%s' of '%s': {what} must lie in {range}, got %lld\", {an}, {pname}, (long long) {n});\n    return {status};\n}}"
        ));
    }
    let mut spans = Vec::new();
    for ((a, n), arg) in p.args.iter().zip(&pnames).zip(&info.args) {
        let ArgKind::Buf(bt) = &a.kind else { continue };
        let an = c_string(a.sym.name());
        let rank = bt.rank();
        let code = dtype_code(bt.elem);
        let fail = |what: &str, args: &str, status: &str| {
            format!("    weft_fail(err, err_len, \"argument '%s' of '%s': {what}\", {an}, {pname}{args});\n    return {status};")
        };
        cx.line(&format!(
            "if ({n} == NULL || ({n}->rank > 0 && ({n}->shape == NULL || {n}->strides == NULL))) {{\n{}\n}}",
            fail("null buffer, shape or strides", "", "WEFT_ERR_NULL")
        ));
        cx.line(&format!(
            "if ({n}->dtype != {code}) {{\n{}\n}}",
            fail(
                &format!("expected dtype {} (code {code}), got code %d", bt.elem),
                &format!(", (int) {n}->dtype"),
                "WEFT_ERR_DTYPE"
            )
        ));
        cx.line(&format!(
            "if ({n}->rank != {rank}) {{\n{}\n}}",
            fail(
                &format!("expected rank {rank}, got %d"),
                &format!(", (int) {n}->rank"),
                "WEFT_ERR_RANK"
            )
        ));
        if bt.window {
            // The program may read these strides (`stride(w, d)`) as control values.
            for d in 0..rank {
                cx.line(&format!(
                    "if (!({n}->strides[{d}] >= -WEFT_CTRL_MAX && {n}->strides[{d}] <= WEFT_CTRL_MAX)) {{\n{}\n}}",
                    fail(
                        &format!("dimension {d} has stride %lld, outside -2147483647..=2147483647"),
                        &format!(", (long long) {n}->strides[{d}]"),
                        "WEFT_ERR_RANGE"
                    )
                ));
            }
        }
        let shape = cx.shape(bt)?;
        for (d, ext) in shape.iter().enumerate() {
            cx.line(&format!(
                "if ({n}->shape[{d}] != {ext}) {{\n{}\n}}",
                fail(
                    &format!("dimension {d} has extent %lld, expected %lld"),
                    &format!(", (long long) {n}->shape[{d}], (long long) ({ext})"),
                    "WEFT_ERR_SHAPE"
                )
            ));
        }
        if !bt.window && rank > 0 {
            let d = format!("{n}_dim");
            let want = format!("{n}_want");
            cx.line(&format!(
                "{{\n    int64_t {want} = 0;\n    int32_t {d} = weft_dense_mismatch({n}, &{want});\n    if ({d} == {rank}) {{\n    {}\n    }}\n    if ({d} >= 0) {{\n    {}\n    }}\n}}",
                fail("its extents are too large for any buffer", "", "WEFT_ERR_SHAPE")
                    .replace('\n', "\n    "),
                fail(
                    "dimension %d has stride %lld, a dense tensor needs %lld",
                    &format!(", (int) {d}, (long long) {n}->strides[{d}], (long long) {want}"),
                    "WEFT_ERR_STRIDE"
                )
                .replace('\n', "\n    ")
            ));
        }
        cx.line(&format!(
            "if ({n}->data == NULL) {{\n{}\n}}",
            fail("null data pointer", "", "WEFT_ERR_NULL")
        ));
        let (lo, hi) = (format!("{n}_lo"), format!("{n}_hi"));
        cx.line(&format!(
            "uintptr_t {lo}, {hi};\nif (!weft_span({n}, (int64_t) sizeof({}), &{lo}, &{hi})) {{\n{}\n}}\n(void) {lo};\n(void) {hi};",
            c_type(bt.elem),
            fail(
                "its shape and strides reach beyond the address space",
                "",
                "WEFT_ERR_SHAPE"
            )
        ));
        if bt.window && arg.kind.is_written() {
            cx.line(&format!(
                "if (!weft_injective({n})) {{\n{}\n}}",
                fail(
                    "it is written, and its strides may map two indices to one element (each stride, by size, must step past what the smaller ones reach)",
                    "",
                    "WEFT_ERR_ALIAS"
                )
            ));
        }
        spans.push((a.sym.name(), lo, hi, arg.kind.is_written()));
        let (strides, dense_shape) = if bt.window {
            (
                (0..rank).map(|d| format!("{n}->strides[{d}]")).collect(),
                None,
            )
        } else {
            (dense_strides(&shape), Some(shape))
        };
        cx.env.insert(
            a.sym.clone(),
            Binding::Buf(BufView {
                elem: bt.elem,
                mem: bt.mem.clone(),
                base: format!("(({} *) {n}->data)", c_type(bt.elem)),
                offset: "0".into(),
                strides,
                dense_shape,
            }),
        );
    }
    // Buffers the proc writes must not overlap any other buffer argument (they are `restrict`).
    for (x, (ai, lo_a, hi_a, wi)) in spans.iter().enumerate() {
        for (aj, lo_b, hi_b, wj) in &spans[x + 1..] {
            if !(*wi || *wj) {
                continue;
            }
            let (ai, aj) = (c_string(ai), c_string(aj));
            cx.line(&format!(
                "if ({lo_a} < {hi_b} && {lo_b} < {hi_a}) {{\n    weft_fail(err, err_len, \"arguments '%s' and '%s' of '%s' overlap, and one of them is written\", {ai}, {aj}, {pname});\n    return WEFT_ERR_ALIAS;\n}}"
            ));
        }
    }
    for e in &p.preds {
        let c = cx.expr(e)?;
        let text = c_string(&e.to_string());
        cx.line(&format!(
            "if (!{c}) {{\n    weft_fail(err, err_len, \"precondition '%s' of '%s' does not hold\", {text}, {pname});\n    return WEFT_ERR_PRECONDITION;\n}}"
        ));
    }
    cx.line("return WEFT_OK;");
    let check_body = std::mem::take(&mut cx.out);

    // --- run function: convert buffers to the proc's parameter types ---
    let abi = cx.unit.abi.get(&p.name).copied().unwrap_or_default();
    let mut conv = crate::emit::hidden_args(abi);
    for (a, n) in p.args.iter().zip(&pnames) {
        match &a.kind {
            ArgKind::Ctrl(_) => conv.push(n.clone()),
            ArgKind::Buf(bt) => {
                let data = format!("({} *) {n}->data", c_type(bt.elem));
                if is_struct_window(bt) {
                    let st = cx.unit.win_struct(bt.elem, bt.rank());
                    let strides: Vec<String> = (0..bt.rank())
                        .map(|d| format!("{n}->strides[{d}]"))
                        .collect();
                    conv.push(format!("({st}){{ {data}, {{ {} }} }}", strides.join(", ")));
                } else {
                    conv.push(data);
                }
            }
        }
    }
    let fname = cx
        .unit
        .proc_names
        .get(&p.name)
        .cloned()
        .ok_or_else(|| unsupported(p.span, "exported proc was not emitted"))?;
    let run_call = format!("{fname}({})", conv.join(", "));
    // What the instructions the proc reaches ask to run before it returns (`finish`: a fence
    // after non-temporal stores), once each.
    let mut finish: Vec<String> = Vec::new();
    for q in &weft_ir::visit::Deps::of(p).procs {
        if let Some(f) = q.instr.as_ref().map(|i| i.finish.trim()) {
            if !f.is_empty() && !finish.iter().any(|x| x == f) {
                finish.push(f.to_string());
            }
        }
    }
    let finish: String = finish.iter().map(|f| format!("\n    {f}")).collect();
    let run_body = match (abi.can_fail, finish.is_empty()) {
        (true, true) => format!("return {run_call};"),
        (true, false) => format!("int32_t rc = {run_call};{finish}\n    return rc;"),
        (false, _) => format!("{run_call};{finish}\n    return WEFT_OK;"),
    };

    // --- uniform entry: unpack weft_arg ---
    let nargs = p.args.len();
    let mut unpack = vec!["ctxt".to_string()];
    let mut kind_checks = String::new();
    for (i, a) in p.args.iter().enumerate() {
        let an = c_string(a.sym.name());
        let (kind, kind_name, value) = match &a.kind {
            ArgKind::Ctrl(CtrlType::Bool) => (1, "a bool", format!("(args[{i}].i != 0)")),
            ArgKind::Ctrl(_) => (0, "an integer", format!("args[{i}].i")),
            ArgKind::Buf(_) => (2, "a buffer", format!("args[{i}].buf")),
        };
        kind_checks.push_str(&format!(
            "    if (args[{i}].kind != {kind}) {{\n        weft_fail(err, err_len, \"argument %d ('%s') of '%s' must be {kind_name}\", {i}, {an}, {pname});\n        return WEFT_ERR_ARG_KIND;\n    }}\n"
        ));
        unpack.push(value);
    }
    let unpack = unpack.join(", ");
    let check_name = format!("weft_check_{direct}");
    let run_name = format!("weft_run_{direct}");
    let entry = &info.symbol;
    let fresh = "    if (ctxt == NULL) {\n        memset(&fresh, 0, sizeof fresh);\n        ctxt = &fresh;\n    }\n";
    let check_params = format!("{}, char *err, int64_t err_len", with_ctx(&params));
    let code = format!(
        "/* entry points of proc {comment} */\nWEFT_VALIDATION static int32_t {check_name}({check_params}) {{\n{check_body}}}\n\n\
static int32_t {run_name}({run_params}) {{\n    (void) ctxt;\n    (void) fault;\n    {run_body}\n}}\n\n\
int32_t {direct}({param_list}) {{\n    {ctx} fresh;\n    struct weft_fault fault;\n    int32_t rc;\n{fresh}    rc = {check_name}({call_list}, NULL, 0);\n    if (rc != WEFT_OK) return rc;\n    memset(&fault, 0, sizeof fault);\n    return {run_name}({run_args});\n}}\n\n\
WEFT_VALIDATION int32_t {entry}(void *context, const weft_arg *args, int64_t nargs, char *err, int64_t err_len) {{\n    {ctx} fresh;\n    {ctx} *ctxt = ({ctx} *) context;\n    struct weft_fault fault;\n    int32_t rc;\n    if (nargs != {nargs} || (nargs > 0 && args == NULL)) {{\n        weft_fail(err, err_len, \"'%s' takes {nargs} arguments, got %lld\", {pname}, (long long) nargs);\n        return WEFT_ERR_ARG_COUNT;\n    }}\n    (void) args;\n{kind_checks}{fresh}    rc = {check_name}({unpack}, err, err_len);\n    if (rc != WEFT_OK) return rc;\n    memset(&fault, 0, sizeof fault);\n    rc = {run_name}({run_unpack});\n    if (rc == WEFT_ERR_ALLOC) weft_fault_report(&fault, {pname}, err, err_len);\n    return rc;\n}}\n\n",
        comment = crate::names::comment_text(&p.name),
        run_params = with_ctx(
            &std::iter::once("struct weft_fault *fault".to_string())
                .chain(params.iter().cloned())
                .collect::<Vec<_>>()
        ),
        run_args = std::iter::once("ctxt, &fault".to_string())
            .chain(pnames.iter().cloned())
            .collect::<Vec<_>>()
            .join(", "),
        run_unpack = unpack.replacen("ctxt", "ctxt, &fault", 1),
    );
    let proto = format!(
        "int32_t {direct}({param_list});\nint32_t {entry}(void *context, const weft_arg *args, int64_t nargs, char *err, int64_t err_len);\n"
    );
    Ok((code, proto))
}
