//! The rules of memories with a capacity (`max_bytes`) or a fixed innermost extent (`last_dim`):
//! a proc's allocations in a memory fit its capacity together, since C keeps them in one stack
//! frame; a window of a `last_dim` memory's buffer keeps its innermost dimension whole, since the
//! memory addresses whole vectors; and the templates of instructions. Programs are written as text.

mod common;

use common::{check, note};
use weft_ir::Diagnostic;

/// The diagnostics of a rejected program, all of rule `memory`; the first one.
fn rejected(text: &str) -> Diagnostic {
    let d = check(text).expect_err("the checker accepted it");
    assert!(d.iter().all(|d| d.rule == "memory"), "{d:?}");
    d[0].clone()
}

fn accepted(text: &str) {
    check(text).unwrap_or_else(|d| panic!("rejected:\n{text}\n{d:?}"));
}

/// Two 64 KiB stack buffers each fit DRAM_STACK's 64 KiB, and overflowed the frame together
/// (review: 200 of them crashed at run time).
#[test]
fn a_procs_stack_buffers_fit_the_capacity_together() {
    let two = |n: usize| {
        format!(
            "proc f(y: f32[1]) {{
                alloc a: f32[{n}] @ DRAM_STACK;
                alloc b: f32[{n}] @ DRAM_STACK;
                a[0] = 1.0; b[0] = 2.0; y[0] = a[0] + b[0];
            }}"
        )
    };
    let d = rejected(&two(16384));
    assert!(
        d.message.contains("DRAM_STACK")
            && d.message.contains("`a`, `b`")
            && d.message.contains("65536"),
        "{d:?}"
    );
    assert!(note(&d).contains("bytes = 131072"), "{d:?}");
    accepted(&two(8192));
    // Every allocation counts, whatever its scope and whether it was freed.
    rejected(
        "proc f(c: bool, y: f32[1]) {
            if c { alloc a: f32[16384] @ DRAM_STACK; a[0] = 1.0; y[0] = a[0]; free a; }
            else { alloc b: f32[16384] @ DRAM_STACK; b[0] = 1.0; y[0] = b[0]; free b; }
        }",
    );
    // An allocation in a loop body is one slot of the frame, not one per iteration.
    accepted(
        "proc f(n: size, y: f32[n]) {
            for i in 0..n { alloc t: f32[8192] @ DRAM_STACK; t[0] = 1.0; y[i] = t[0]; free t; }
            alloc u: f32[8192] @ DRAM_STACK; u[0] = 1.0; y[0] = u[0];
        }",
    );
}

/// Symbolic sizes are proved for every size the preconditions allow, each allocation at its
/// largest over its places (loop ranges, and the branch it is allocated in when its size is not
/// a constant), with a counterexample.
#[test]
fn symbolic_sizes_are_bounded_where_they_are_allocated() {
    let pair = |bound: i64| {
        format!(
            "proc f(n: size, y: f32[1]) {{
                assert n <= {bound};
                alloc a: f32[n] @ DRAM_STACK;
                alloc b: f32[n] @ DRAM_STACK;
                a[0] = 1.0; b[0] = 2.0; y[0] = a[0] + b[0];
            }}"
        )
    };
    accepted(&pair(8192));
    let d = rejected(&pair(8193));
    assert!(note(&d).contains("n = 8193"), "{d:?}");
    // A loop variable's range bounds a size in the loop: at most 8 elements here.
    let in_loop = |rest: i64| {
        format!(
            "proc f(y: f32[1]) {{
                for i in 0..8 {{ alloc a: f32[i + 1] @ DRAM_STACK; a[0] = 1.0; y[0] = a[0]; free a; }}
                alloc b: f32[{rest}] @ DRAM_STACK; b[0] = 1.0; y[0] = b[0];
            }}"
        )
    };
    accepted(&in_loop(16376));
    rejected(&in_loop(16377));
    // A variable-length buffer takes its space only in the branch that allocates it.
    accepted(
        "proc f(n: size, y: f32[1]) {
            if n <= 8192 { alloc a: f32[n] @ DRAM_STACK; a[0] = 1.0; y[0] = a[0]; }
            alloc b: f32[8192] @ DRAM_STACK; b[0] = 1.0; y[0] = b[0];
        }",
    );
}

/// AVX512 buffers are stack arrays of `__m512`: the library declares a capacity (review: a
/// buffer of n vectors was accepted for any n).
#[test]
fn avx512_buffers_have_a_capacity() {
    let d = rejected(
        "import \"avx512\";
        proc f(n: size, x: f32[n, 16]) {
            alloc v: f32[n, 16] @ AVX512;
            for i in 0..n { mm512_loadu_ps(v[i, 0:16], x[i, 0:16]); }
            for i in 0..n { mm512_storeu_ps(x[i, 0:16], v[i, 0:16]); }
        }",
    );
    assert!(
        d.message.contains("AVX512") && note(&d).contains("n = 1025"),
        "{d:?}"
    );
}

/// A memory that lays out vectors of one type holds only that type (review: `i8[4096, 16]` in
/// AVX512 was counted 64 KiB, and its C declared 4096 `__m512`, 256 KiB).
#[test]
fn vector_memories_hold_only_their_element_type() {
    for (ty, extra) in [("i8", ""), ("u16", ""), ("bool", ""), ("f64", "")] {
        let d = rejected(&format!(
            "import \"avx512\";
            proc f(x: f32[16]) {{
                alloc t: {ty}[4, 16] @ AVX512;{extra}
                x[0] = 1.0;
            }}"
        ));
        assert!(
            d.message.contains(&format!(
                "memory AVX512 holds only f32, and `t` has elements of type {ty}"
            )),
            "{d:?}"
        );
    }
    // Arguments too (an instruction's parameter in the memory).
    let d = rejected(
        "import \"avx512\";
        instr g(v: [i32][16] @ AVX512) \"\" { pass; }",
    );
    assert!(d.message.contains("holds only f32"), "{d:?}");
    accepted(
        "import \"avx512\";
        proc f(x: f32[16]) {
            alloc t: f32[4, 16] @ AVX512;
            x[0] = 1.0;
        }",
    );
}

/// The AVX512 access template names the vector at a window's first cell: only windows that keep
/// the innermost dimension whole mean in C what they mean in the interpreter (review: a column
/// window `v[0:16, 3]` loaded row 0 in C).
#[test]
fn windows_of_vector_memories_keep_the_innermost_dimension_whole() {
    let with = |load: &str| {
        format!(
            "import \"avx512\";
            proc f(a: f32[16], y: f32[16, 16]) {{
                alloc v: f32[16, 16] @ AVX512;
                for r in 0..16 {{ mm512_loadu_ps(v[r, 0:16], a[0:16]); }}
                {load}
                for r in 0..16 {{ mm512_storeu_ps(y[r, 0:16], v[r, 0:16]); }}
            }}"
        )
    };
    let d = rejected(&with("mm512_loadu_ps(v[0:16, 3], a[0:16]);"));
    assert!(
        d.message.contains("`v[0:16, 3]`")
            && d.message.contains("innermost dimension whole")
            && d.message.contains("AVX512"),
        "{d:?}"
    );
    // Part of a vector, shifted by a variable.
    let d = rejected(&with("for k in 0..2 { let w = v[k, 0:8]; }"));
    assert!(d.message.contains("`v[k, 0:8]`"), "{d:?}");
    let d = rejected(&with("for k in 0..8 { let w = v[0:2, k:k + 8]; }"));
    assert!(note(&d).contains("k = "), "{d:?}");
    // Whole rows, through a window of a window too.
    accepted(&with(
        "let w = v[2:6, 0:16];
         for r in 0..4 { mm512_loadu_ps(w[r, 0:16], a[0:16]); }",
    ));
}

/// A variable-length buffer sized by a config field: the conditions around the allocation (on
/// boolean and integer fields) bound it in the frame's sum.
#[test]
fn config_fields_around_an_allocation_are_its_own() {
    let sized_by_config = |bound: i64| {
        format!(
            "config C {{ on: bool, k: index }}
            proc f(y: f32[1]) {{
                if C.on and C.k >= 1 and C.k <= {bound} {{
                    alloc a: f32[C.k] @ DRAM_STACK; a[0] = 1.0; y[0] = a[0];
                }}
                alloc b: f32[8192] @ DRAM_STACK; b[0] = 1.0; y[0] = b[0];
            }}"
        )
    };
    accepted(&sized_by_config(8192));
    let d = rejected(&sized_by_config(8193));
    assert!(note(&d).contains("C.k (a) = 8193"), "{d:?}");
}

/// An instruction's template and `finish` code are pasted into C blocks: placeholders must name
/// arguments, and no brace may stand outside a placeholder (one could close the entry point's
/// function early, which the C compiler might accept: review of the `finish` clause).
#[test]
fn instruction_templates_keep_their_braces_to_placeholders() {
    let instr = |template: &str, clauses: &str| {
        format!(
            "instr put(dst: [f32][16] @ DRAM, src: [f32][16] @ DRAM) {template:?} {clauses} {{
                for i in 0..16 {{ dst[i] = src[i]; }}
            }}"
        )
    };
    accepted(&instr(
        "for (int k = 0; k < 16; k++) (&{dst_data})[k] = (&{src_data})[k];",
        "finish \"(void) 0;\"",
    ));
    for (template, clauses, says) in [
        ("{dst_data} = {y_data};", "", "`{y_data}` names no argument"),
        ("{dst_data = 0;", "", "unclosed `{`"),
        ("(void) 0; }", "", "`}` outside a placeholder"),
        ("} {dst_data} = 0;", "", "`}` outside a placeholder"),
        (
            "{dst_data} = {src_data};",
            "finish \"} static int q(void) { return 0;\"",
            "`finish` code may not contain",
        ),
    ] {
        let d = check(&instr(template, clauses)).expect_err(template);
        assert!(
            d.iter()
                .any(|d| d.rule == "template" && d.message.contains(says)),
            "{template} {clauses}: {d:?}"
        );
    }
}

/// `mm512_stream_ps` loads its source tile as 16 consecutive floats: a strided window of a tile
/// is refused at the call (review: it was accepted, and the native code stored other values
/// than the interpreter).
#[test]
fn streaming_store_needs_consecutive_source_and_destination() {
    let src_only = "import \"avx512\";
        proc s(y: f32[16] @ DRAM) {
            alloc t: f32[16, 2] @ DRAM_STACK;
            for k in 0..16 { t[k, 0] = 1.0; t[k, 1] = 2.0; }
            mm512_stream_ps(y, t[0:16, 0]);
        }";
    let d = check(src_only).expect_err("a strided source");
    assert!(
        d.iter().any(|d| d.message.contains("stride(src, 0) == 1")),
        "{d:?}"
    );
    accepted(
        "import \"avx512\";
        proc s(y: f32[16] @ DRAM) {
            alloc t: f32[2, 16] @ DRAM_STACK;
            for k in 0..16 { t[0, k] = 1.0; t[1, k] = 2.0; }
            mm512_stream_ps(y, t[1, 0:16]);
        }",
    );
}
