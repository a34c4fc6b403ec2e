//! `insert_call`: a call of a proc that does nothing (a prefetch) goes before a statement when
//! the call checks where it stands; a window that may leave its buffer, a callee that writes, or
//! a callee of another shape is rejected.

mod common;

use common::{rejected, same_for_n, scheduled, text};

const ROWS: &str = "
instr touch(src: [f32][4] @ DRAM) \"__builtin_prefetch(&{src_data}, 0, 3);\" {
    pass;
}
instr touch_store(src: [f32][4] @ DRAM) \"{src_data} = 0.0f;\" {
    src[0] = 0.0;
}
instr touch_two(a: [f32][4] @ DRAM, b: [f32][4] @ DRAM) \"\" {
    pass;
}
instr touch_unit(src: [f32][4] @ DRAM) \"__builtin_prefetch(&{src_data}, 0, 3);\" {
    assert stride(src, 0) == 1;
    pass;
}
instr touch_f64(src: [f64][4] @ DRAM) \"__builtin_prefetch(&{src_data}, 0, 3);\" {
    pass;
}
proc rows(n: size, x: f32[n, 8] @ DRAM, y: f32[n, 8] @ DRAM) {
    for r in 0..n {
        for c in 0..2 {
            for l in 0..4 {
                y[r, 4 * c + l] = x[r, 4 * c + l] * 2.0;
            }
        }
    }
}";

fn with_schedule(steps: &str) -> String {
    format!("{ROWS}\nschedule s = rows {{\n{steps}\n}}\n")
}

#[test]
fn a_prefetch_of_the_next_row_clamped_to_the_last_is_inserted() {
    let (s, r) = scheduled(&with_schedule(
        "insert_call(l, touch, x[min(r + 1, n - 1), 4 * c:4 * c + 4]);",
    ));
    r.unwrap();
    let t = text(&s);
    assert!(
        t.contains("touch(x[min(r + 1, n - 1), 4 * c:4 * c + 4]);\n            for l in 0..4"),
        "{t}"
    );
    same_for_n(&s, &[1, 2, 5]);
}

#[test]
fn a_prefetch_past_the_last_row_is_rejected_with_a_counterexample() {
    let (_, r) = scheduled(&with_schedule(
        "insert_call(l, touch, x[r + 1, 4 * c:4 * c + 4]);",
    ));
    let e = rejected(
        r,
        "insert_call",
        "the index r + 1 of dimension 0 of 'x' must lie in 0..n",
    );
    // The last row: r = n - 1.
    assert_eq!(common::cex(&e, "r"), common::cex(&e, "n") - 1, "{e}");
}

#[test]
fn a_window_wider_than_the_parameter_is_rejected() {
    let (_, r) = scheduled(&with_schedule("insert_call(l, touch, x[r, 0:8]);"));
    rejected(
        r,
        "insert_call",
        "the interval 0..8 of dimension 1 of 'x' must lie in 0..8 and hold 4 elements",
    );
}

#[test]
fn a_callee_that_writes_is_rejected() {
    let (_, r) = scheduled(&with_schedule(
        "insert_call(l, touch_store, x[r, 4 * c:4 * c + 4]);",
    ));
    rejected(r, "insert_call", "does something (`src[0] = 0.0;`)");
}

#[test]
fn a_callee_of_two_arguments_is_rejected() {
    let (_, r) = scheduled(&with_schedule(
        "insert_call(l, touch_two, x[r, 4 * c:4 * c + 4]);",
    ));
    rejected(r, "insert_call", "exactly one argument");
}

#[test]
fn a_window_of_no_buffer_in_scope_is_rejected() {
    let (_, r) = scheduled(&with_schedule(
        "insert_call(l, touch, z[r, 4 * c:4 * c + 4]);",
    ));
    rejected(r, "schedule", "no buffer named `z` is in scope here");
}

#[test]
fn a_window_of_another_element_type_is_rejected() {
    let (_, r) = scheduled(&with_schedule(
        "insert_call(l, touch_f64, x[r, 4 * c:4 * c + 4]);",
    ));
    rejected(
        r,
        "insert_call",
        "'x' holds f32 in DRAM, the parameter f64 in DRAM",
    );
}

#[test]
fn a_window_that_keeps_two_dimensions_is_rejected() {
    let (_, r) = scheduled(&with_schedule("insert_call(l, touch, x[0:1, 0:4]);"));
    rejected(r, "insert_call", "keeps 2; the parameter has 1");
}

/// A callee with preconditions is checked by weft-check at the call: a unit stride holds for
/// a row, not for a column.
#[test]
fn a_callee_precondition_is_proved_at_the_call() {
    let (s, r) = scheduled(&with_schedule(
        "insert_call(l, touch_unit, x[r, 4 * c:4 * c + 4]);",
    ));
    r.unwrap();
    assert!(text(&s).contains("touch_unit(x[r, 4 * c:4 * c + 4]);"));
    let (_, r) = scheduled(&with_schedule("insert_call(l, touch_unit, x[0:4, c]);"));
    rejected(r, "insert_call", "the call of 'touch_unit' does not check");
}

const VIEWS: &str = "
instr touch(src: [f32][4] @ DRAM) \"__builtin_prefetch(&{src_data}, 0, 3);\" {
    pass;
}
proc views(n: size, x: f32[n, 8] @ DRAM, y: f32[n, 8] @ DRAM) {
    for r in 0..n {
        let w = x[r, 2:8];
        for l in 0..4 {
            y[r, l] = w[l] * 2.0;
        }
    }
}";

/// A window of a view is checked by weft-check: inside the view, accepted; past its end,
/// rejected.
#[test]
fn a_window_of_a_view_is_checked_by_the_checker() {
    let (s, r) = scheduled(&format!(
        "{VIEWS}\nschedule s = views {{ insert_call(l, touch, w[2:6]); }}\n"
    ));
    r.unwrap();
    same_for_n(&s, &[1, 3]);
    let (_, r) = scheduled(&format!(
        "{VIEWS}\nschedule s = views {{ insert_call(l, touch, w[3:7]); }}\n"
    ));
    rejected(r, "insert_call", "the call of 'touch' does not check");
}

/// Review: the solver's path once skipped the checker's rules for a dense parameter, a freed
/// buffer and a memory whose innermost dimension must stay whole; each is now rejected by the
/// step.
#[test]
fn dense_parameters_freed_buffers_and_layout_rules_are_checked() {
    let src = |steps: &str| {
        format!(
            "import \"avx512\";
instr dense4(src: f32[4] @ DRAM) \"\" {{
    pass;
}}
instr touch1(src: [f32][1] @ DRAM) \"\" {{
    pass;
}}
instr pfv(src: [f32][16] @ AVX512) \"\" {{
    pass;
}}
proc p(n: size, x: f32[16, 16] @ DRAM, y: f32[16, 16] @ DRAM) {{
    alloc u: f32[4] @ DRAM;
    u[0] = 1.0;
    free u;
    alloc t: f32[16, 16] @ AVX512;
    for r in 0..16 {{
        mm512_loadu_ps(t[r, 0:16], x[r, 0:16]);
    }}
    for r in 0..16 {{
        mm512_storeu_ps(y[r, 0:16], t[r, 0:16]);
    }}
}}
schedule s = p {{ {steps} }}
"
        )
    };
    let (_, r) = scheduled(&src("insert_call(\"for r #1\", dense4, x[0:4, 2]);"));
    rejected(r, "insert_call", "the call of 'dense4' does not check");
    let (_, r) = scheduled(&src("insert_call(\"for r #1\", touch1, u[0:1]);"));
    rejected(r, "insert_call", "the call of 'touch1' does not check");
    let (_, r) = scheduled(&src("insert_call(\"for r #1\", pfv, t[0:16, 3]);"));
    rejected(r, "insert_call", "the call of 'pfv' does not check");
    // The same calls on what they may take are accepted.
    let (_, r) = scheduled(&src("insert_call(\"for r #1\", pfv, t[3, 0:16]);"));
    r.unwrap();
}
