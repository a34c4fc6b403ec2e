//! Regression probes of issue 8 (hardening): schedules that weft accepted and that changed the
//! result, and programs that crashed. Each probe asserts the sound outcome: the primitive rejects
//! the step, or the scheduled proc behaves as the original on the interpreter (every buffer, and
//! every config field not recorded as polluted, at several sizes and initial config states).

mod common;

use common::*;
use weft_ir::{BinOp, Expr};

/// `config C { n: index }` with a proc `f(n, y)` whose loop `i` reads `C.n` in a bound and writes
/// it in its body.
fn bound_reads_written_config(bounds: &str, steps: &str) -> String {
    format!(
        "config C {{ n: index }}
proc f(n: size, y: f32[n], cnt: i32) {{
    C.n = n;
    for i in {bounds} {{
        if i >= 0 and i < n {{ y[i] = 1.0; }}
        cnt += 1;
        C.n = 1;
    }}
}}
schedule g = f {{ {steps} }}
"
    )
}

/// The step was refused by its primitive because of config field `C.n`.
fn refused_over_config<T>(r: Result<T, weft_sched::SchedError>, s: &weft_sched::Schedule) {
    let e = must_reject(r, s);
    assert!(
        e.message.contains("config C"),
        "refused for another reason: {e}"
    );
}

const SIZES: &[&[(&str, i64)]] = &[&[("n", 1)], &[("n", 2)], &[("n", 3)], &[("n", 6)]];

/// Item 1: a loop evaluates its bounds once; `split`, `cut`, `shift` and `fuse` evaluated them
/// again inside or after the body, where the body's config writes are visible.
#[test]
fn rewrites_do_not_evaluate_bounds_after_the_body_writes_their_config() {
    let cases = [
        ("0..C.n % 8", "split(i, 4, io, ii, guard);"),
        ("0..C.n % 8", "split(i, 4, io, ii, cut);"),
        ("0..C.n % 8", "split(i, 4, io, ii, cut_and_guard);"),
        ("C.n % 2..n", "split(i, 4, io, ii, guard);"),
        ("0..n + C.n % 2", "cut(i, 1);"),
        ("0..n + C.n % 2", "split(i, 4, io, ii, cut);"),
        ("C.n % 2..n", "shift(i, 0);"),
    ];
    for (bounds, steps) in cases {
        let src = bound_reads_written_config(bounds, steps);
        let (s, r) = scheduled(&src);
        let cfgs = cfg_states(&[("C", 0)], &[0, 1]);
        match &r {
            Err(e) => assert!(
                e.message.contains("config C"),
                "{bounds} / {steps}: rejected for another reason: {e}"
            ),
            Ok(()) => panic!("{bounds} / {steps}: accepted\n{}", text(&s)),
        }
        sound(r, &s, SIZES, &cfgs, &[("C", 0)]);
    }
}

/// Item 1, `cut` at a point that reads a config field the body writes (the point is evaluated
/// again as the second loop's lower bound).
#[test]
fn cut_refuses_a_point_that_reads_config_the_body_writes() {
    let src = bound_reads_written_config("0..n", "");
    let mut s = sched(&src);
    let c = config(&src, "C");
    let point = Expr::binary(BinOp::Mod, Expr::read_config(&c, 0), Expr::int(2));
    let at = s.find("for i").unwrap();
    let r = s.cut(&at, &point);
    refused_over_config(r, &s);
}

/// Item 1, `fuse`: the second loop's bounds were evaluated after the first loop, which writes the
/// config field they read; the equality proof read them before it.
#[test]
fn fuse_refuses_a_second_loop_whose_bounds_the_first_writes() {
    let src = "config C { n: index }
proc f(n: size, y: f32[n], cnt: i32) {
    C.n = n;
    for i in 0..C.n % 8 { cnt += 1; C.n = 1; }
    for j in 0..C.n % 8 { cnt += 2; }
}
schedule g = f { fuse(i); }
";
    let (s, r) = scheduled(src);
    refused_over_config(r, &s);
}

/// The same rewrites stay available when the body does not write what the bounds read.
#[test]
fn bounds_reading_config_are_still_rewritten_when_the_body_leaves_it() {
    let src = "config C { n: index }
proc f(n: size, y: f32[n], cnt: i32) {
    C.n = n;
    for i in 0..C.n % 8 {
        if i >= 0 and i < n { y[i] = 1.0; }
        cnt += 1;
    }
}
schedule g = f { split(i, 4, io, ii, guard); }
";
    let (s, r) = scheduled(src);
    r.unwrap();
    sound(
        Ok::<(), weft_sched::SchedError>(()),
        &s,
        SIZES,
        &cfg_states(&[("C", 0)], &[0, 3]),
        &[("C", 0)],
    );
}

/// Item 1's class in `stage_mem`: the copy-out loop evaluates the region after the block, which
/// writes the config field the region reads.
#[test]
fn stage_mem_region_reading_config_the_block_writes() {
    let src = "config C { n: index }
proc f(n: size, y: f32[n + 2]) {
    C.n = 0;
    for i in 0..2 {
        y[i] += 1.0;
    }
    C.n = 1;
}
";
    let mut s = sched(src);
    let c = config(src, "C");
    let at = s.find("for i").unwrap();
    // Stage `y[C.n:C.n + 2]` around the loop and the write `C.n = 1` (2 statements).
    let lo = Expr::read_config(&c, 0);
    let hi = Expr::binary(BinOp::Add, Expr::read_config(&c, 0), Expr::int(2));
    let r = s.stage_mem(&at, 2, "y", &[(lo, hi)], "t", stack());
    refused_over_config(r, &s);
}

/// Item 2: `stride(w, 0)` of `let w = A[1, 0:4]` is `A`'s stride along dimension 1 (the point
/// coordinate drops dimension 0), so `stride(w, 0) == 1` and `stride(A, 0) == 4` can both hold.
const STRIDE_OF_WINDOW: &str = "proc f(A: [f32][4, 4], y: f32[1]) {
    let w = A[1, 0:4];
    if stride(w, 0) == 1 { y[0] = 1.0; }
    if stride(A, 0) == 4 { y[0] = 2.0; }
}
";

#[test]
fn stride_of_a_window_with_a_point_dimension_is_the_roots_next_free_stride() {
    let mut s = sched(STRIDE_OF_WINDOW);
    let at = s.find("if").unwrap();
    let r = s.reorder_stmts(&at);
    let e = must_reject(r, &s);
    assert!(e.message.contains("do not commute"), "{e}");
}

#[test]
fn dead_code_under_stride_conditions_of_windows_is_not_dead() {
    let src = "proc f(A: [f32][4, 4], y: f32[1]) {
    let w = A[1, 0:4];
    if stride(A, 0) == 4 {
        if stride(w, 0) == 1 { y[0] = 1.0; }
    }
}
";
    let mut s = sched(src);
    let at = s.find("if #1").unwrap();
    let r = s.eliminate_dead_code(&at);
    must_reject(r, &s);
}

#[test]
fn parallel_iterations_under_stride_conditions_of_windows_race() {
    let src = "proc f(A: [f32][4, 4], y: f32[1]) {
    let w = A[1, 0:4];
    for i in 0..2 {
        if i == 0 and stride(w, 0) == 1 { y[0] = 1.0; }
        if i == 1 and stride(A, 0) == 4 { y[0] = 2.0; }
    }
}
";
    let mut s = sched(src);
    let at = s.find("for i").unwrap();
    let r = s.parallelize(&at);
    must_reject(r, &s);
}

/// Item 6: a use through a window may not move past the `free` of its buffer.
#[test]
fn reorder_stmts_keeps_uses_through_windows_before_the_free() {
    let src = "proc f(y: f32[1]) {
    alloc t: f32[4];
    t[0] = 1.0;
    let w = t[0:2];
    y[0] = w[0];
    free t;
}
";
    let mut s = sched(src);
    let at = s.find("y =").unwrap();
    let e = must_reject(s.reorder_stmts(&at), &s);
    assert!(e.message.contains("freed"), "{e}");
}

/// Item 5: an instruction's C template implements its body as written. Steps that change the
/// meaning (config pollution, precision) must not apply to it; exact equivalences still do.
const INSTR: &str = "config C { k: index, v: f32 }
instr inc(x: [f32][4]) \"/* {x_data} */\" {
    alloc t: f32;
    for i in 0..4 {
        t = x[i];
        x[i] = t + 1.0;
    }
}
";

#[test]
fn instructions_accept_only_exact_equivalences() {
    let m = module_of(INSTR);
    let inc = m.proc("inc").unwrap().clone();
    let c = m.config("C").unwrap().clone();
    let mut s = weft_sched::Schedule::new(inc.clone());
    let at = s.find("for i").unwrap();
    let e = must_reject(s.write_config(&at, &c, 0, &Expr::int(5)), &s);
    assert!(e.message.contains("instruction"), "{e}");
    let add = s.find("x =").unwrap();
    let e = must_reject(s.bind_config(&add, &f32_lit(1.0), &c, 1), &s);
    assert!(e.message.contains("instruction"), "{e}");
    let alloc = s.find("alloc t").unwrap();
    let e = must_reject(s.set_precision(&alloc, weft_ir::DType::F64), &s);
    assert!(e.message.contains("instruction"), "{e}");
    // An exact rewrite keeps the template valid.
    s.split(&at, 2, "io", "ii", weft_sched::Tail::Perfect)
        .unwrap();
    assert!(s.proc().is_instr());
}

/// Item 17: a statement of a loop that `unroll` removed (zero trips) no longer exists; a cursor
/// on it must not forward to the next statement.
#[test]
fn cursors_on_statements_of_a_loop_unrolled_zero_times_forward_to_nothing() {
    let src = "proc f(x: f32[2]) {
    for j in 0..0 {
        x[0] = 1.0;
    }
    x[1] = 2.0;
}
";
    let mut s = sched(src);
    let inner = s.find("x =").unwrap();
    let j = s.find("for j").unwrap();
    s.unroll(&j).unwrap();
    assert!(s.stmt(&inner).is_none(), "forwards to {:?}", s.stmt(&inner));
    assert!(s.stmt(&j).is_none());
    let e = s.delete_pass(&inner).unwrap_err();
    assert!(e.message.contains("no longer exists"), "{e}");
}

/// Item 9: a stack buffer of any size crashed the program. DRAM_STACK declares a capacity
/// (`max_bytes`) that the checker proves for every allocation, with a counterexample.
#[test]
fn the_checker_proves_that_stack_buffers_fit() {
    let src = |pre: &str| {
        format!(
            "proc f(n: size, x: f32[n]) {{
    {pre}
    alloc t: f32[n] @ DRAM_STACK;
    for i in 0..n {{ t[i] = x[i]; x[i] = t[i] * 2.0; }}
    free t;
}}
"
        )
    };
    let m =
        weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "t.weft", &src("")).unwrap();
    let ds = weft_check::check_module(&m).unwrap_err();
    let d = ds
        .iter()
        .find(|d| d.rule == "memory")
        .expect("a memory diagnostic");
    assert!(d.message.contains("at most 65536 bytes"), "{d:?}");
    assert!(d.notes.iter().any(|n| n.contains("n = ")), "{d:?}");
    module_of(&src("assert n <= 16384;"));
}

/// Item 9: `stage_mem` without a memory puts a tile on the stack only when it is proved to fit.
#[test]
fn stage_mem_puts_only_tiles_that_fit_on_the_stack() {
    let src = "proc f(n: size, x: f32[n]) {
    for i in 0..n { x[i] = x[i] * 2.0; }
}
schedule g = f { stage_mem(i, x[0:n], t); }
";
    let (s, r) = scheduled(src);
    r.unwrap();
    shows(&s, &["alloc t: f32[n] @ DRAM;"]);
    let (s, r) = scheduled(&src.replace(
        "proc f(n: size, x: f32[n]) {\n",
        "proc f(n: size, x: f32[n]) {\n    assert n <= 64;\n",
    ));
    r.unwrap();
    shows(&s, &["alloc t: f32[n] @ DRAM_STACK;"]);
    let (s, r) = scheduled(&src.replace("t); }", "t, DRAM_STACK); }"));
    let e = must_reject(r, &s);
    assert!(e.message.contains("may not fit memory DRAM_STACK"), "{e}");
}

/// New-user item: names a step introduces were silently renamed on a clash.
#[test]
fn names_a_step_introduces_must_be_new() {
    let src = "proc f(n: size, x: f32[n, n]) {
    for j in 0..n {
        for i in 0..n { x[i, j] = 1.0; }
    }
}
";
    for (steps, message) in [
        ("split(i, 8, j, ii);", "'j' is already a name here"),
        ("split(i, 4, io, io);", "two new things the name 'io'"),
        ("split(i, 4, n, ii);", "'n' is already a name here"),
        (
            "stage_mem(i, x[0:n, j:j + 1], x);",
            "'x' is already a name here",
        ),
    ] {
        let (s, r) = scheduled(&format!("{src}schedule g = f {{ {steps} }}\n"));
        let e = must_reject(r, &s);
        assert!(e.message.contains(message), "{steps}: {e}");
    }
    // A keyword is refused by the parser (`argument_errors_name_the_argument` in tests/script.rs).
    // Sibling blocks may reuse a name, as in the language.
    let (_, r) = scheduled(&format!(
        "{src}schedule g = f {{ split(i, 4, io, ii, cut); split(\"for ii #1\", 2, io2, io, guard); }}\n"
    ));
    r.unwrap();
}

/// Found by the hazard fuzzer: a cut tail of a loop whose bound reads a config field reads the
/// field twice (the tail's start and trip count). The checker knows the field's value between
/// writes, so the result checks, and it behaves as the original.
#[test]
fn cut_tails_of_loops_bounded_by_a_config_field_check() {
    let src = "config C { n: index, k: index }
proc f(n: size, x: f32[n + 8], y: f32[n + 8, 4]) {
    C.k = 2;
    for a in 0..C.k % 3 + 1 {
        y[2, a] += x[a];
    }
}
schedule g = f { split(a, 3, o, t, cut_and_guard); }
";
    let (s, r) = scheduled(src);
    sound(
        r,
        &s,
        N,
        &cfg_states(&[("C", 1)], &[0, 2]),
        &[("C", 0), ("C", 1)],
    );
    assert_eq!(s.steps().len(), 1, "the split must be accepted");
}

/// Review: steps that make a proc do what no call of the original could: an `expand_dim` extent
/// of 2^62 (every call then fails to allocate), an `add_loop` of 2^63 - 1 iterations, a
/// `partial_eval` value outside the entry range. Each is refused with the bound it breaks.
#[test]
fn steps_keep_sizes_counts_and_fixed_values_in_the_entry_range() {
    let src = "proc f(n: size, m: index, x: f32[n], y: f32[1]) {
    alloc t: f32[n] @ DRAM;
    for i in 0..n {
        t[i] = x[i];
    }
    y[0] = t[0];
}
";
    for (step, message) in [
        (
            "expand_dim(\"alloc t\", 4611686018427387904, 0);",
            "may exceed 2147483647, the largest size",
        ),
        (
            "add_loop(\"y =\", j, 9223372036854775807);",
            "the loop may run more than 2147483647 times",
        ),
        (
            "partial_eval(m = 4611686018427387904);",
            "outside the range of a control argument",
        ),
        (
            "partial_eval(n = 2147483648);",
            "outside the range of a control argument",
        ),
    ] {
        let (s, r) = scheduled(&format!("{src}schedule g = f {{ {step} }}\n"));
        let e = must_reject(r, &s);
        assert!(e.message.contains(message), "{step}: {e}");
    }
    // At the bound itself, accepted.
    let (_, r) = scheduled(&format!(
        "{src}schedule g = f {{ expand_dim(\"alloc t\", 2, 1); add_loop(\"y =\", j, 3); partial_eval(m = 2147483647); }}\n"
    ));
    r.unwrap();
}
