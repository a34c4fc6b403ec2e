//! Regression tests of issue 8 for the generated C, run under AddressSanitizer and
//! UndefinedBehaviorSanitizer: entry points given hostile shapes, strides and control values
//! return an error without overflowing anything; failed allocations free what the call allocated;
//! configuration state lives in the caller's context; only namespaced symbols are exported.

mod common;

use common::*;
use std::collections::HashMap;
use std::process::Command;
use weft_c::{emit, emit_in, status, CUnit};

fn unit_of(src: &str, namespace: &str) -> CUnit {
    let mut sources = weft_syntax::SourceMap::new();
    let module = weft_syntax::parse_module(&mut sources, "t.weft", src)
        .unwrap_or_else(|d| panic!("{}", sources.render(&d[0])));
    emit_in(&module.procs, namespace).unwrap()
}

/// The `tag=status` lines a harness printed.
fn statuses(out: &str) -> HashMap<String, i32> {
    out.lines()
        .filter_map(|l| {
            let (tag, rest) = l.split_once('=')?;
            Some((tag.to_string(), rest.split(' ').next()?.parse().ok()?))
        })
        .collect()
}

const HOSTILE: &str = "
proc win2(n: size, m: size, w: [f32][n, m]) {
    for i in 0..n {
        for j in 0..m {
            w[i, j] = 1.0;
        }
    }
}
proc d3(n: size, m: size, k: size, a: f32[n, m, k]) {
    for i in 0..n {
        for j in 0..m {
            for l in 0..k {
                a[i, j, l] = 2.0;
            }
        }
    }
}
proc ix(n: size, k: index, s: stride, y: f32[n]) {
    for i in 0..n {
        if k + s + i > 0 {
            y[i] = 3.0;
        }
    }
}
";

/// Items 11 and 18: every hostile argument is an error code, computed without signed overflow
/// (UBSan aborts on one) and before anything touches memory (ASan reports an overrun: the only
/// buffer is 64 floats).
#[test]
fn entry_checks_survive_hostile_shapes_strides_and_control_values() {
    let unit = unit_of(HOSTILE, "h");
    let main_c = format!(
        r#"
#include <stdio.h>
{header}
static float buf[64];
static char err[512];
static void show(const char *tag, int32_t rc) {{ printf("%s=%d %s\n", tag, (int) rc, rc ? err : ""); }}
static int32_t win(int64_t n, int64_t m, int64_t e0, int64_t e1, int64_t s0, int64_t s1, float *data) {{
    int64_t shape[2] = {{e0, e1}}, strides[2] = {{s0, s1}};
    weft_buffer w = {{data, 8, 2, shape, strides}};
    weft_arg a[3] = {{{{0, n, NULL}}, {{0, m, NULL}}, {{2, 0, &w}}}};
    err[0] = 0;
    return h_win2_entry(NULL, a, 3, err, sizeof err);
}}
static int32_t d3(int64_t n, int64_t e0, int64_t s0, int64_t s1, int32_t rank, int32_t dtype, int null_shape) {{
    int64_t shape[3] = {{e0, n, n}}, strides[3] = {{s0, s1, 1}};
    weft_buffer b = {{buf, dtype, rank, null_shape ? NULL : shape, strides}};
    weft_arg a[4] = {{{{0, e0, NULL}}, {{0, n, NULL}}, {{0, n, NULL}}, {{2, 0, &b}}}};
    err[0] = 0;
    return h_d3_entry(NULL, a, 4, err, sizeof err);
}}
static int32_t ix(int64_t k, int64_t s) {{
    int64_t shape[1] = {{4}}, strides[1] = {{1}};
    weft_buffer y = {{buf, 8, 1, shape, strides}};
    weft_arg a[4] = {{{{0, 4, NULL}}, {{0, k, NULL}}, {{0, s, NULL}}, {{2, 0, &y}}}};
    err[0] = 0;
    return h_ix_entry(NULL, a, 4, err, sizeof err);
}}
int main(void) {{
    const int64_t M = INT64_C(2147483647);
    show("win_ok", win(2, 3, 2, 3, 3, 1, buf));
    show("win_transposed", win(2, 3, 2, 3, 1, 2, buf));
    show("win_negative", win(2, 3, 2, 3, -3, -1, buf + 32));
    show("win_stride0", win(2, 3, 2, 3, 0, 1, buf));
    show("win_rows_overlap", win(3, 3, 3, 3, 1, 1, buf));
    show("win_interleaved", win(2, 3, 2, 3, 3, 2, buf));
    show("win_stride_min", win(2, 3, 2, 3, INT64_MIN, 1, buf));
    show("win_stride_max", win(2, 3, 2, 3, 3, INT64_MAX, buf));
    show("win_stride_2p31", win(2, 3, 2, 3, M + 1, 1, buf));
    show("win_span_bytes", win(M, M, M, M, 1, M, buf));
    show("win_span_elems", win(M, M, M, M, M, M, buf));
    show("win_shape_neg", win(2, 3, -1, 3, 3, 1, buf));
    show("win_shape_huge", win(2, 3, INT64_MAX, 3, 3, 1, buf));
    show("size_zero", win(0, 3, 0, 3, 3, 1, buf));
    show("size_neg", win(-1, 3, -1, 3, 3, 1, buf));
    show("size_min", win(INT64_MIN, 3, INT64_MIN, 3, 3, 1, buf));
    show("size_max", win(INT64_MAX, 3, INT64_MAX, 3, 3, 1, buf));
    show("size_2p31", win(M + 1, 3, M + 1, 3, 3, 1, buf));
    show("dense_ok", d3(2, 2, 4, 2, 3, 8, 0));
    show("dense_extent1_any_stride", d3(2, 1, INT64_MIN, 2, 3, 8, 0));
    show("dense_bad_stride", d3(2, 2, 4, 7, 3, 8, 0));
    show("dense_overflow", d3(M, M, M * M, M, 3, 8, 0));
    show("dense_rank_huge", d3(2, 2, 4, 2, INT32_MAX, 8, 0));
    show("dense_rank_negative", d3(2, 2, 4, 2, -1, 8, 0));
    show("dense_dtype", d3(2, 2, 4, 2, 3, 99, 0));
    show("dense_null_shape", d3(2, 2, 4, 2, 3, 8, 1));
    show("ix_bound", ix(M, -M));
    show("ix_bound_neg", ix(-M, M));
    show("ix_index_2p31", ix(M + 1, 0));
    show("ix_index_min", ix(INT64_MIN, 0));
    show("ix_stride_max", ix(0, INT64_MAX));
    show("count", h_ix_entry(NULL, NULL, 4, err, sizeof err));
    return 0;
}}
"#,
        header = unit.header
    );
    let out = run_with_main("hostile", &unit.source, &main_c);
    let got = statuses(&out);
    let want = [
        ("win_ok", status::OK),
        ("win_transposed", status::OK),
        ("win_negative", status::OK),
        ("win_stride0", status::ALIAS),
        ("win_rows_overlap", status::ALIAS),
        // Injective (offsets 0, 2, 4, 3, 5, 7), but not by the sorted-strides rule: refused.
        ("win_interleaved", status::ALIAS),
        ("win_stride_min", status::RANGE),
        ("win_stride_max", status::RANGE),
        ("win_stride_2p31", status::RANGE),
        ("win_span_bytes", status::SHAPE),
        ("win_span_elems", status::SHAPE),
        ("win_shape_neg", status::SHAPE),
        ("win_shape_huge", status::SHAPE),
        ("size_zero", status::SIZE),
        ("size_neg", status::SIZE),
        ("size_min", status::SIZE),
        ("size_max", status::SIZE),
        ("size_2p31", status::SIZE),
        ("dense_ok", status::OK),
        ("dense_extent1_any_stride", status::OK),
        ("dense_bad_stride", status::STRIDE),
        ("dense_overflow", status::SHAPE),
        ("dense_rank_huge", status::RANK),
        ("dense_rank_negative", status::RANK),
        ("dense_dtype", status::DTYPE),
        ("dense_null_shape", status::NULL),
        ("ix_bound", status::OK),
        ("ix_bound_neg", status::OK),
        ("ix_index_2p31", status::RANGE),
        ("ix_index_min", status::RANGE),
        ("ix_stride_max", status::RANGE),
        ("count", status::ARG_COUNT),
    ];
    for (tag, code) in want {
        assert_eq!(got.get(tag), Some(&code), "{tag}:\n{out}");
    }
    assert_eq!(got.len(), want.len(), "{out}");
    assert!(
        out.contains("win_stride0=10 argument 'w' of 'win2': it is written"),
        "{out}"
    );
}

const ALLOCS: &str = "
proc inner(n: size, y: u8[2]) {
    alloc t: u8[n, n] @ DRAM;
    alloc s: u8[2] @ DRAM_STACK;
    s[0] = y[1];
    for i in 0..n {
        t[i, 0] = s[0];
    }
    y[0] = t[n - 1, 0];
    free t;
}
proc outer(n: size, k: size, y: u8[4, 2]) {
    alloc keep: u8[8] @ DRAM;
    keep[0] = 1;
    for i in par(0..4) {
        alloc mine: u8[k, k] @ DRAM;
        mine[0, 0] = 2;
        if i == 2 {
            inner(n, y[i, 0:2]);
        }
        y[i, 1] = mine[0, 0];
    }
    for i in 0..4 {
        alloc seq: u8[3] @ DRAM;
        seq[0] = keep[0];
        inner(k, y[i, 0:2]);
        y[i, 1] = seq[0];
    }
}
";

/// Item 8: a failed allocation deep in the call tree (here in a callee inside a parallel loop)
/// makes the entry return WEFT_ERR_ALLOC with a message naming the buffer, and everything the
/// call allocated is freed on the way out (LeakSanitizer checks; `allocator_may_return_null`
/// lets ASan's malloc fail the way the C library's does).
#[test]
fn failed_allocations_free_what_the_call_allocated() {
    let unit = unit_of(ALLOCS, "al");
    let main_c = format!(
        r#"
#include <stdio.h>
{header}
static unsigned char y[8];
static char err[512];
static int32_t outer(int64_t n, int64_t k) {{
    int64_t shape[2] = {{4, 2}}, strides[2] = {{2, 1}};
    weft_buffer b = {{y, 2, 2, shape, strides}};
    weft_arg a[3] = {{{{0, n, NULL}}, {{0, k, NULL}}, {{2, 0, &b}}}};
    err[0] = 0;
    return al_outer_entry(NULL, a, 3, err, sizeof err);
}}
int main(void) {{
    const int64_t M = INT64_C(2147483647);
    int32_t rc = outer(M, 3);
    printf("inner=%d %s\n", (int) rc, err);
    rc = outer(3, M);
    printf("iteration=%d %s\n", (int) rc, err);
    rc = outer(3, 3);
    printf("ok=%d %d %d\n", (int) rc, (int) y[0], (int) y[7]);
    return 0;
}}
"#,
        header = unit.header
    );
    for openmp in [false, true] {
        // Without OpenMP the parallel loop runs in sequence (its pragmas are ignored).
        let flags: &[&str] = if openmp {
            &["-fopenmp"]
        } else {
            &["-Wno-unknown-pragmas"]
        };
        let out = run_with_main_env(
            "allocs",
            &unit.source,
            &main_c,
            flags,
            &[("ASAN_OPTIONS", "allocator_may_return_null=1:detect_leaks=1")],
        );
        let got = statuses(&out);
        assert_eq!(got["inner"], status::ALLOC, "{out}");
        assert!(
            out.contains("'outer': allocation of 't' in proc 'inner' failed: 4611686014132420609 elements of 1 bytes"),
            "{out}"
        );
        assert_eq!(got["iteration"], status::ALLOC, "{out}");
        assert!(
            out.contains("allocation of 'mine' in proc 'outer'"),
            "{out}"
        );
        assert!(out.contains("ok=0 2 1"), "{out}");
    }
}

/// Item 12: configs live in the caller's `struct NS_context`; a null context is a fresh zeroed
/// one, so nothing is shared between calls that do not share a context.
#[test]
fn config_state_lives_in_the_callers_context() {
    let unit = unit_of(
        "config C { k: index, s: f64 }\nproc set(v: index) {\n C.k = v;\n C.s = 1.5;\n}\nproc get(y: f64[2]) {\n if C.k == 7 {\n y[0] = C.s;\n }\n y[1] = C.s;\n}\n",
        "cfg",
    );
    assert_eq!(unit.context.signature, "C{k:index,s:f64}");
    assert!(!unit.source.contains("static struct"), "no config globals");
    let main_c = format!(
        r#"
#include <stdio.h>
#include <string.h>
{header}
int main(void) {{
    struct cfg_context ctx;
    double y[2] = {{0, 0}};
    int64_t shape[1] = {{2}}, strides[1] = {{1}};
    weft_buffer b = {{y, 9, 1, shape, strides}};
    memset(&ctx, 0, sizeof ctx);
    cfg_set(NULL, 7);
    cfg_get(NULL, &b);
    printf("fresh %g %g\n", y[0], y[1]);
    cfg_set(&ctx, 7);
    cfg_get(&ctx, &b);
    printf("kept %g %g %lld\n", y[0], y[1], (long long) ctx.cfg_C.f_k);
    return 0;
}}
"#,
        header = unit.header
    );
    let out = run_with_main("ctx", &unit.source, &main_c);
    assert_eq!(out, "fresh 0 0\nkept 1.5 1.5 7\n");
}

/// Item 10: procs named like C library functions export only namespaced symbols, so a program
/// linking them still has the C library's `write`, `strlen` and `puts`; every other symbol is
/// `static`.
#[test]
fn only_namespaced_symbols_are_exported() {
    let src = "
proc write(n: size, x: u8[n]) {
    for i in 0..n {
        x[i] = 0;
    }
}
proc strlen(x: u8[4]) {
    write(4, x);
}
proc puts(x: u8[4]) {
    alloc t: u8[4];
    t[0] = 1;
    x[0] = t[0];
    free t;
}
";
    let unit = unit_of(src, "libc");
    let d = compile_object("nm", &unit.source, &["-fopenmp"]);
    let nm = Command::new("nm")
        .args(["-g", "--defined-only", "k.o"])
        .current_dir(&d)
        .output()
        .unwrap();
    let syms: Vec<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let mut want = vec![
        "libc_puts",
        "libc_puts_entry",
        "libc_strlen",
        "libc_strlen_entry",
        "libc_write",
        "libc_write_entry",
    ];
    want.sort();
    let mut syms_sorted = syms.clone();
    syms_sorted.sort();
    assert_eq!(syms_sorted, want, "{syms:?}");
    let main_c = format!(
        r#"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
{header}
int main(void) {{
    unsigned char x[4] = {{9, 9, 9, 9}};
    int64_t shape[1] = {{4}}, strides[1] = {{1}};
    weft_buffer b = {{x, 2, 1, shape, strides}};
    int32_t rc = libc_strlen(NULL, &b);
    printf("rc=%d len=%d\n", (int) rc, (int) strlen("four"));
    fflush(stdout);
    if (write(1, "written\n", 8) != 8) return 1;
    puts(x[3] == 0 ? "zeroed" : "untouched");
    return 0;
}}
"#,
        header = unit.header
    );
    let out = run_with_main_flags(
        "libc",
        &unit.source,
        &main_c,
        &["-D_POSIX_C_SOURCE=200112L"],
    );
    assert_eq!(out, "rc=0 len=4\nwritten\nzeroed\n");
    // The default namespace, and a namespace that could clash, are checked.
    assert!(emit(&[]).unwrap().header.contains("struct kernel_context"));
    let mut sources = weft_syntax::SourceMap::new();
    let m = weft_syntax::parse_module(&mut sources, "t.weft", src).unwrap();
    for bad in ["weft", "lib_c", "Libc", "9"] {
        assert!(emit_in(&m.procs, bad).is_err(), "{bad}");
    }
}
