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
    WEFT_ERR_ALIAS = 10
};

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

/// Writes a formatted message into the caller's error buffer, if it gave one.
pub const FAIL_HELPER: &str = r#"static void weft_fail(char *err, int64_t err_len, const char *fmt, ...) {
    if (err != NULL && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, (size_t) err_len, fmt, ap);
        va_end(ap);
    }
}

"#;

/// The byte range a buffer argument may touch, for the overlap check of written buffers.
pub const SPAN_HELPER: &str = r#"static void weft_span(const weft_buffer *b, int64_t elem_size, uintptr_t *lo, uintptr_t *hi) {
    int64_t first = 0, last = 0;
    for (int32_t d = 0; d < b->rank; d++) {
        int64_t step = (b->shape[d] - 1) * b->strides[d];
        if (step < 0) first += step; else last += step;
    }
    *lo = (uintptr_t) b->data + (uintptr_t) (first * elem_size);
    *hi = (uintptr_t) b->data + (uintptr_t) ((last + 1) * elem_size);
}

"#;

/// The header: ABI types and the prototypes of the exported entry points.
pub fn header_text(protos: &str) -> String {
    format!(
        "{ABI}\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n{protos}#ifdef __cplusplus\n}}\n#endif\n"
    )
}

/// The check, run and entry functions of one root, and their prototypes.
pub fn entry_points(
    unit: &mut UnitCx,
    p: &Proc,
    info: &EntryInfo,
) -> Result<(String, String), Diagnostic> {
    let direct = &info.direct_symbol;
    let pname = c_string(&p.name);
    let mut cx = ProcCx::new(unit);
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
    let param_list = if params.is_empty() {
        "void".to_string()
    } else {
        params.join(", ")
    };
    let call_list = pnames.join(", ");

    // --- check function ---
    cx.line("(void) err;");
    cx.line("(void) err_len;");
    for n in &pnames {
        cx.line(&format!("(void) {n};"));
    }
    for (a, n) in p.args.iter().zip(&pnames) {
        if a.ctrl() == Some(CtrlType::Size) {
            let an = c_string(a.sym.name());
            cx.line(&format!(
                "if (!({n} > 0)) {{\n    weft_fail(err, err_len, \"argument '%s' of '%s': a size must be positive, got %lld\", {an}, {pname}, (long long) {n});\n    return WEFT_ERR_SIZE;\n}}"
            ));
        }
    }
    for (a, n) in p.args.iter().zip(&pnames) {
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
        let dense = dense_strides(&shape);
        // A dimension of extent 1 is never stepped along, so its stride does not matter.
        if !bt.window {
            for (d, st) in dense.iter().enumerate() {
                cx.line(&format!(
                    "if ({n}->shape[{d}] != 1 && {n}->strides[{d}] != {st}) {{\n{}\n}}",
                    fail(
                        &format!("dimension {d} has stride %lld, a dense tensor needs %lld"),
                        &format!(", (long long) {n}->strides[{d}], (long long) ({st})"),
                        "WEFT_ERR_STRIDE"
                    )
                ));
            }
        }
        cx.line(&format!(
            "if ({n}->data == NULL) {{\n{}\n}}",
            fail("null data pointer", "", "WEFT_ERR_NULL")
        ));
        let (strides, dense_shape) = if bt.window {
            (
                (0..rank).map(|d| format!("{n}->strides[{d}]")).collect(),
                None,
            )
        } else {
            (dense, Some(shape))
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
    let bufs: Vec<(usize, &str, bool, usize)> = p
        .args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            a.buf().map(|b| {
                (
                    i,
                    pnames[i].as_str(),
                    info.args[i].kind.is_written(),
                    b.elem.bytes(),
                )
            })
        })
        .collect();
    for (x, &(i, ni, wi, si)) in bufs.iter().enumerate() {
        for &(j, nj, wj, sj) in &bufs[x + 1..] {
            if !(wi || wj) {
                continue;
            }
            cx.unit.needs_span = true;
            let (ai, aj) = (
                c_string(p.args[i].sym.name()),
                c_string(p.args[j].sym.name()),
            );
            cx.line(&format!(
                "{{
    uintptr_t lo_a, hi_a, lo_b, hi_b;
    weft_span({ni}, {si}, &lo_a, &hi_a);
    weft_span({nj}, {sj}, &lo_b, &hi_b);
    if (lo_a < hi_b && lo_b < hi_a) {{
        weft_fail(err, err_len, \"arguments '%s' and '%s' of '%s' overlap, and one of them is written\", {ai}, {aj}, {pname});\n        return WEFT_ERR_ALIAS;
    }}
}}"
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
    let mut conv = Vec::new();
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

    // --- uniform entry: unpack weft_arg ---
    let nargs = p.args.len();
    let mut unpack = Vec::new();
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
    let sep = if unpack.is_empty() { "" } else { ", " };
    let check_name = format!("weft_check_{direct}");
    let run_name = format!("weft_run_{direct}");
    let entry = &info.symbol;
    let code = format!(
        "/* entry points of proc {comment} */\nstatic int32_t {check_name}({check_params}) {{\n{check_body}}}\n\n\
static void {run_name}({param_list}) {{\n    {fname}({conv});\n}}\n\n\
int32_t {direct}({param_list}) {{\n    int32_t rc = {check_name}({call_list}{sep2}NULL, 0);\n    if (rc != WEFT_OK) return rc;\n    {run_name}({call_list});\n    return WEFT_OK;\n}}\n\n\
int32_t {entry}(const weft_arg *args, int64_t nargs, char *err, int64_t err_len) {{\n    int32_t rc;\n    if (nargs != {nargs} || (nargs > 0 && args == NULL)) {{\n        weft_fail(err, err_len, \"'%s' takes {nargs} arguments, got %lld\", {pname}, (long long) nargs);\n        return WEFT_ERR_ARG_COUNT;\n    }}\n    (void) args;\n{kind_checks}    rc = {check_name}({unpack}{sep}err, err_len);\n    if (rc != WEFT_OK) return rc;\n    {run_name}({unpack});\n    return WEFT_OK;\n}}\n\n",
        comment = crate::names::comment_text(&p.name),
        check_params = if params.is_empty() {
            "char *err, int64_t err_len".to_string()
        } else {
            format!("{}, char *err, int64_t err_len", params.join(", "))
        },
        conv = conv.join(", "),
        sep2 = if call_list.is_empty() { "" } else { ", " },
    );
    let proto = format!(
        "int32_t {direct}({param_list});\nint32_t {entry}(const weft_arg *args, int64_t nargs, char *err, int64_t err_len);\n"
    );
    Ok((code, proto))
}
