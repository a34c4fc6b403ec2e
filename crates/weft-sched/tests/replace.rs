//! `replace`: a block becomes a call when it unifies with the callee's body modulo linear
//! equalities (window arguments inferred), and is rejected on a mismatched operation, a
//! mismatched loop structure, or a violated callee precondition.

mod common;

use common::{cex, module_of, rejected, same_for_n, same_results, text};
use std::sync::Arc;
use weft_ir::Proc;
use weft_sched::Schedule;

/// The schedule of proc `name` of `src`, and the module's proc `callee`.
fn setup(src: &str, name: &str, callee: &str) -> (Schedule, Arc<Proc>) {
    let m = module_of(src);
    let mut s = Schedule::new(m.proc(name).unwrap().clone());
    s.recheck = true;
    (s, m.proc(callee).unwrap().clone())
}

const COPY: &str = "
proc copy16(dst: [f32][16] @ DRAM, src: [f32][16] @ DRAM) {
    for i in 0..16 {
        dst[i] = src[i];
    }
}
proc rows(n: size, x: f32[n, 16] @ DRAM, y: f32[n, 16] @ DRAM) {
    for r in 0..n {
        for c in 0..16 {
            y[r, c] = x[r, c];
        }
    }
}";

#[test]
fn replace_infers_row_windows() {
    let (mut s, copy) = setup(COPY, "rows", "copy16");
    let c = s.find("for c").unwrap();
    s.replace(&c, &copy).unwrap();
    let t = text(&s);
    assert!(t.contains("copy16(y[r, 0:16], x[r, 0:16]);"), "{t}");
    same_for_n(&s, &[1, 3]);
}

const SCALE: &str = "
proc scale(m: size, dst: [f32][m] @ DRAM, src: [f32][m] @ DRAM) {
    for i in 0..m {
        dst[i] = src[i] * 2.0;
    }
}
proc scale4(m: size, dst: [f32][m] @ DRAM, src: [f32][m] @ DRAM) {
    assert m % 4 == 0;
    for i in 0..m {
        dst[i] = src[i] * 2.0;
    }
}
proc p(n: size, x: f32[n + 10] @ DRAM, y: f32[n + 12] @ DRAM) {
    for j in 0..n {
        y[j + 4] = x[2 + j] * 2.0;
    }
    for j in 0..6 {
        y[j] = x[j] + 2.0;
    }
}";

#[test]
fn replace_infers_sizes_and_offsets_from_linear_equations() {
    let (mut s, scale) = setup(SCALE, "p", "scale");
    let j = s.find("for j").unwrap();
    s.replace(&j, &scale).unwrap();
    let t = text(&s);
    assert!(t.contains("scale(n, y[4:n + 4], x[2:n + 2]);"), "{t}");
    same_for_n(&s, &[1, 5, 8]);
}

#[test]
fn replace_rejects_a_mismatched_operation() {
    let (mut s, scale) = setup(SCALE, "p", "scale");
    let j = s.find("for j #1").unwrap();
    let e = rejected(s.replace(&j, &scale), "replace", "does not match");
    assert!(e.message.contains("x[j] + 2.0"), "{e}");
}

#[test]
fn replace_rejects_a_violated_precondition_with_a_counterexample() {
    let (mut s, scale4) = setup(SCALE, "p", "scale4");
    let j = s.find("for j").unwrap();
    let e = rejected(s.replace(&j, &scale4), "replace", "precondition");
    assert_ne!(cex(&e, "n") % 4, 0, "{e}");
}

const TRANSPOSE: &str = "
proc copy16(dst: [f32][16] @ DRAM, src: [f32][16] @ DRAM) {
    for i in 0..16 {
        dst[i] = src[i];
    }
}
proc t(x: f32[16, 16] @ DRAM, y: f32[16, 16] @ DRAM) {
    for r in 0..16 {
        for c in 0..16 {
            y[r, c] = x[c, r];
        }
    }
    for r in 0..16 {
        for c in 0..16 {
            y[r, c] = x[r, 15 - c];
        }
    }
}";

#[test]
fn replace_picks_the_window_dimension_that_carries_the_loop_variable() {
    // The paper's disjunction: a 1-D window of a 2-D buffer is a row or a column.
    let (mut s, copy) = setup(TRANSPOSE, "t", "copy16");
    let c = s.find("for c").unwrap();
    s.replace(&c, &copy).unwrap();
    let t = text(&s);
    assert!(t.contains("copy16(y[r, 0:16], x[0:16, r]);"), "{t}");
    same_results(&s, &[]);
}

#[test]
fn replace_rejects_a_loop_variable_used_differently() {
    // A reversed access: the loop variable runs the other way.
    let (mut s, copy) = setup(TRANSPOSE, "t", "copy16");
    let c = s.find("for c #1").unwrap();
    let e = rejected(s.replace(&c, &copy), "replace", "no window");
    assert!(e.message.contains("copy16"), "{e}");
}

#[test]
fn replace_with_avx512_instructions_then_set_memory() {
    // The vector-FMA kernel written with plain loops on a stack buffer, turned into AVX-512
    // instructions by replace, then the buffer moved into registers.
    let src = r#"
import "avx512";
proc instrs(x: f32[16] @ DRAM) {
    alloc u: f32[16] @ AVX512;
    alloc v: f32[16] @ AVX512;
    alloc w: f32[16] @ AVX512;
    mm512_loadu_ps(u, x);
    mm512_loadu_ps(v, x);
    mm512_loadu_ps(w, x);
    mm512_fmadd_ps(u, v, w);
    mm512_storeu_ps(x, v);
}
proc axpy(n: size, a: f32[n, 16] @ DRAM, b: f32[n, 16] @ DRAM, c: f32[16] @ DRAM) {
    alloc acc: f32[16] @ DRAM_STACK;
    alloc va: f32[16] @ DRAM_STACK;
    alloc vb: f32[16] @ DRAM_STACK;
    for i in 0..16 {
        acc[i] = c[i];
    }
    for r in 0..n {
        for i in 0..16 {
            va[i] = a[r, i];
        }
        for i in 0..16 {
            vb[i] = b[r, i];
        }
        for i in 0..16 {
            acc[i] = fma(va[i], vb[i], acc[i]);
        }
    }
    for i in 0..16 {
        c[i] = acc[i];
    }
}"#;
    let m = module_of(src);
    let instr = |name: &str| -> Arc<Proc> {
        m.proc("instrs")
            .unwrap()
            .body
            .iter()
            .find_map(|s| match &s.kind {
                weft_ir::StmtKind::Call { proc, .. } if proc.name == name => Some(proc.clone()),
                _ => None,
            })
            .unwrap()
    };
    let mut s = Schedule::new(m.proc("axpy").unwrap().clone());
    let (load, fmadd, store) = (
        instr("mm512_loadu_ps"),
        instr("mm512_fmadd_ps"),
        instr("mm512_storeu_ps"),
    );
    // A store has the same body as a load (a copy), but reads a register: `c` is an argument in
    // DRAM and cannot move.
    let first = s.find("for i").unwrap();
    rejected(
        s.replace(&first, &store),
        "replace",
        "expects memory AVX512",
    );
    s.replace(&first, &load).unwrap();
    for k in 0..2 {
        let l = s.find("for i").unwrap();
        s.replace(&l, &load)
            .unwrap_or_else(|e| panic!("load {k}: {e}"));
    }
    let f = s.find("for i").unwrap();
    s.replace(&f, &fmadd).unwrap();
    let st = s.find("for i").unwrap();
    s.replace(&st, &store).unwrap();
    let avx512 = match &m.proc("instrs").unwrap().body[0].kind {
        weft_ir::StmtKind::Alloc { ty, .. } => ty.mem.clone(),
        _ => unreachable!(),
    };
    for buf in ["acc", "va", "vb"] {
        let a = s.find(&format!("alloc {buf}")).unwrap();
        s.set_memory(&a, avx512.clone()).unwrap();
    }
    let t = text(&s);
    assert!(t.contains("mm512_loadu_ps(va, a[r, 0:16]);"), "{t}");
    assert!(t.contains("mm512_fmadd_ps(acc, va, vb);"), "{t}");
    assert!(t.contains("mm512_storeu_ps(c, acc);"), "{t}");
    weft_check::check_proc(s.proc()).unwrap();
    same_for_n(&s, &[1, 4]);
}

/// An edge tile with AVX-512 masks, as the SGEMM schedule makes them: the guard a split leaves
/// (`16 * jv + jl < n`) matches a masked instruction's `i < N` (with `N = n - 16 * jv`), the tile
/// staged with guarded copies matches the zero-masking load (whose `else dst[i] = 0` the copy's
/// zeros match, `0` in the body and `0.0` in the copy being the same value), and the results are
/// the original's at every length.
#[test]
fn masked_instructions_match_guarded_edge_tiles() {
    let src = "import \"avx512\";
proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    for j in 0..n {
        x[j] = fma(y[j], y[j], x[j]);
    }
}
schedule q = p {
    split(j, 16, jv, jl, guard);
    cut(jv, n / 16);
    eliminate_dead_code(\"if #0\");
    stage_mem(\"for jl #1\", x[16 * jv:16 * jv + 16], xt);
    stage_mem(\"for jl #1\", y[16 * jv:16 * jv + 16], yt);
    replace(xt_0, mm512_maskz_loadu_ps);
    replace(yt_0, mm512_maskz_loadu_ps);
    replace(\"for jl #1\", mm512_mask_fmadd_ps);
    replace(xt_0, mm512_mask_storeu_ps);
    set_memory(\"alloc xt\", AVX512);
    set_memory(\"alloc yt\", AVX512);
}
";
    let (s, r) = common::scheduled_with(src, false);
    r.unwrap();
    weft_check::check_procs(std::slice::from_ref(s.proc())).unwrap();
    let t = common::text(&s);
    for call in [
        "mm512_maskz_loadu_ps(n - 16 * jv, xt, x[16 * jv:n]);",
        "mm512_mask_fmadd_ps(n - 16 * jv, xt, yt, yt);",
        "mm512_mask_storeu_ps(n - 16 * jv, x[16 * jv:n], xt);",
    ] {
        assert!(t.contains(call), "{t}");
    }
    for n in [1, 15, 16, 17, 40] {
        common::same_results(&s, &[("n", n)]);
    }
}

/// Literals unify by the value they have in their type: an integer literal rounds once to f32, a
/// float literal from its f64, so `1152921573326323713` (2^60 + 2^36 + 1) and
/// `1152921573326323712.0` (2^60 + 2^36) are different f32 values and do not unify.
#[test]
fn float_literals_unify_by_their_value_in_the_context_type() {
    let src = "proc setc(dst: [f32][4] @ DRAM) {
    for i in 0..4 {
        dst[i] = 1152921573326323712.0;
    }
}
proc p(x: f32[4] @ DRAM) {
    for i in 0..4 {
        x[i] = 1152921573326323713;
    }
}
schedule q = p {
    replace(i, setc);
}
";
    let (_, r) = common::scheduled(src);
    let e = r.unwrap_err();
    assert_eq!(e.primitive, "replace");
    // The same value written both ways unifies.
    let same = src.replace("1152921573326323713;", "1152921573326323712;");
    let (s, r) = common::scheduled(&same);
    r.unwrap();
    common::same_results(&s, &[]);
}

/// `replace_all` selects an instruction at every block that unifies with its body, in program
/// order (here the four vector loads of two staged tiles, of both the whole vectors and the tail
/// split off by `cut`), leaves the blocks it does not match (the FMA loops, the stores), and
/// refuses a callee that matches nowhere.
#[test]
fn replace_all_selects_an_instruction_everywhere_it_matches() {
    let src = "import \"avx512\";
proc p(n: size, x: f32[n, 16] @ DRAM, y: f32[n, 16] @ DRAM) {
    for i in 0..n {
        for j in 0..16 {
            x[i, j] = fma(y[i, j], y[i, j], x[i, j]);
        }
    }
}
schedule q = p {
    cut(i, n - n % 2);
    stage_mem(\"for j #0\", x[i:i + 1, 0:16], xt);
    stage_mem(\"for j #0\", y[i:i + 1, 0:16], yt);
    stage_mem(\"for j #1\", x[i:i + 1, 0:16], xu);
    stage_mem(\"for j #1\", y[i:i + 1, 0:16], yu);
    unroll(xt_0);
    unroll(xt_0);
    unroll(yt_0);
    unroll(xu_0);
    unroll(xu_0);
    unroll(yu_0);
    simplify();
    replace_all(mm512_loadu_ps);
    replace_all(mm512_fmadd_ps);
    replace_all(mm512_storeu_ps);
    set_memory(\"alloc xt\", AVX512);
    set_memory(\"alloc yt\", AVX512);
    set_memory(\"alloc xu\", AVX512);
    set_memory(\"alloc yu\", AVX512);
}
";
    let (s, r) = common::scheduled_with(src, false);
    r.unwrap();
    weft_check::check_procs(std::slice::from_ref(s.proc())).unwrap();
    let t = common::text(&s);
    assert_eq!(t.matches("mm512_loadu_ps(").count(), 4, "{t}");
    assert_eq!(t.matches("mm512_fmadd_ps(").count(), 2, "{t}");
    assert_eq!(t.matches("mm512_storeu_ps(").count(), 2, "{t}");
    assert!(!t.contains("for j"), "{t}");
    for n in [1, 2, 3, 6] {
        common::same_results(&s, &[("n", n)]);
    }
    // A callee whose body matches no block.
    let none = src.replace(
        "    replace_all(mm512_loadu_ps);\n",
        "    replace_all(mm512_max_ps);\n",
    );
    let (_, r) = common::scheduled_with(&none, false);
    let e = r.expect_err("mm512_max_ps matches nothing");
    assert!(
        e.to_string().contains("replace_all") && e.to_string().contains("no block"),
        "{e}"
    );
}

/// `replace` matches a callee whose body calls procs and binds windows: a call matches a call of
/// the same proc whose control arguments unify and whose window arguments unify as accesses
/// (starts) with equal extents; a window statement matches one whose window unifies, and its
/// name then stands for the other's. A block whose windows start at different places where the
/// callee's are one, a call of another proc, or an extent that differs is refused.
#[test]
fn replace_matches_callees_that_call_procs_and_bind_windows() {
    let src = "proc inc(n: size, x: [f32][n] @ DRAM) {
    for i in 0..n {
        x[i] = x[i] + 1.0;
    }
}
proc dec(n: size, x: [f32][n] @ DRAM) {
    for i in 0..n {
        x[i] = x[i] - 1.0;
    }
}
proc twice(n: size, x: [f32][n] @ DRAM) {
    inc(n, x[0:n]);
    inc(n, x[0:n]);
}
proc via_window(n: size, x: [f32][n] @ DRAM) {
    assert n >= 2;
    let w = x[1:n];
    inc(n - 1, w[0:n - 1]);
}
proc p(m: size, y: f32[m, 8] @ DRAM) {
    for j in 0..m {
        inc(8, y[j, 0:8]);
        inc(8, y[j, 0:8]);
        let v = y[j, 3:8];
        inc(5, v[0:5]);
    }
}
schedule q = p {
    replace(\"call inc #0\", twice);
    replace(\"window v\", via_window);
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    common::shows(&s, &["twice(8, y[j, 0:8]);", "via_window(6, y[j, 2:8]);"]);
    for m in [1, 3] {
        common::same_results(&s, &[("m", m)]);
    }
    for (from, to, why) in [
        // The second call views another part of the row than the first.
        (
            "        inc(8, y[j, 0:8]);\n        inc(8, y[j, 0:8]);\n",
            "        inc(4, y[j, 0:4]);\n        inc(4, y[j, 4:8]);\n",
            "twice",
        ),
        // Another proc.
        (
            "        inc(8, y[j, 0:8]);\n        inc(8, y[j, 0:8]);\n",
            "        inc(8, y[j, 0:8]);\n        dec(8, y[j, 0:8]);\n",
            "twice",
        ),
    ] {
        let bad = src
            .replace(from, to)
            .replace("    replace(\"window v\", via_window);\n", "");
        let (_, r) = common::scheduled(&bad);
        let e = r.expect_err(why);
        assert!(e.to_string().contains("replace"), "{e}");
    }
    // The window's extent is not the call's: `inc(4, v[0:4])` with `v` five wide.
    let bad = src
        .replace("        inc(5, v[0:5]);\n", "        inc(4, v[0:4]);\n")
        .replace("    replace(\"call inc #0\", twice);\n", "");
    let (_, r) = common::scheduled(&bad);
    assert!(r.is_err(), "a window of another extent matched");
}

/// Review holes of `replace` for calling callees: an inner call matched a call of another proc
/// of the same name (an imported one), and a config field written by a call in the block was
/// not seen as written (its read became an argument, evaluated before the write). Calls now
/// match only the same proc, and the block's writes include its callees'.
#[test]
fn replace_matches_the_same_called_proc_and_sees_config_writes_in_calls() {
    // Two modules, each with its own `inc`: `twice` of the second calls the other `inc`.
    let here = module_of(
        "proc inc(n: size, x: [f32][n] @ DRAM) { for i in 0..n { x[i] = x[i] + 1.0; } }
         proc p(y: f32[8] @ DRAM) { inc(8, y[0:8]); inc(8, y[0:8]); }",
    );
    let there = module_of(
        "proc inc(n: size, x: [f32][n] @ DRAM) { for i in 0..n { x[i] = x[i] - 1.0; } }
         proc twice(n: size, x: [f32][n] @ DRAM) { inc(n, x[0:n]); inc(n, x[0:n]); }",
    );
    let mut s = Schedule::new(here.proc("p").unwrap().clone());
    let c = s.find("call inc").unwrap();
    rejected(
        s.replace(&c, there.proc("twice").unwrap()),
        "replace",
        "does not match",
    );
    // With its own module's `twice`, the same block matches.
    let same = module_of(
        "proc inc(n: size, x: [f32][n] @ DRAM) { for i in 0..n { x[i] = x[i] + 1.0; } }
         proc twice(n: size, x: [f32][n] @ DRAM) { inc(n, x[0:n]); inc(n, x[0:n]); }
         proc p(y: f32[8] @ DRAM) { inc(8, y[0:8]); inc(8, y[0:8]); }",
    );
    let mut s = Schedule::new(same.proc("p").unwrap().clone());
    let c = s.find("call inc").unwrap();
    s.replace(&c, same.proc("twice").unwrap()).unwrap();
    same_results(&s, &[]);

    let config = "config C { a: index }
proc setc(k: index) {
    C.a = k;
}
proc f(k: index, x: [f32][8] @ DRAM) {
    setc(3);
    for i in 0..8 {
        if i < k {
            x[i] = 1.0;
        }
    }
}
proc p(y: f32[8] @ DRAM) {
    setc(3);
    for i in 0..8 {
        if i < C.a {
            y[i] = 1.0;
        }
    }
}
schedule q = p {
    replace(\"call setc\", f);
}
";
    let (_, r) = common::scheduled(config);
    rejected(r, "replace", "which the block writes");
}

/// After `extract_proc` inside a loop, the callee takes the loop variable and the whole buffer
/// (a dense parameter): `replace` of a like loop elsewhere fixes the buffer's offsets at 0 (a
/// dense parameter takes a whole buffer), which determines the index argument, and takes the
/// sizes the parameter's shape names from the buffer's shape. A buffer of another shape is
/// refused.
#[test]
fn replace_after_extract_proc_inside_a_loop() {
    let src = "proc p(n: size, A: f32[n, 8] @ DRAM, B: f32[n, 8] @ DRAM) {
    for i in 0..n {
        for j in 0..8 {
            A[i, j] = A[i, j] + 1.0;
        }
    }
    for i2 in 0..n {
        for j in 0..8 {
            B[i2, j] = B[i2, j] + 1.0;
        }
    }
}
schedule q = p {
    extract_proc(\"for j #0\", rowinc);
    replace(\"for j #0\", rowinc);
}
";
    let (s, r) = common::scheduled(src);
    r.unwrap();
    common::shows(&s, &["rowinc(n, i, A);", "rowinc(n, i2, B);"]);
    for n in [1, 3] {
        same_results(&s, &[("n", n)]);
    }
    let other = src.replace("B: f32[n, 8]", "B: f32[n, 9]");
    let (_, r) = common::scheduled(&other);
    rejected(r, "replace", "");
}
