//! Indices computed from data (`clamp_index(v, lo, hi)`, issue 9: lookup tables and histograms):
//! checked for every value the data may hold, run by the interpreter and in C with the same
//! results, rejected where control flow would depend on data, and kept out of parallel loops
//! whose iterations may hit the same cell.

use std::collections::HashMap;
use weft_interp::{run, ArgValue, Buffer, ConfigState};
use weft_jit::{Arg, BufArg, Jit};

fn load(src: &str) -> Result<weft::Program, weft::Error> {
    weft::load_str("t.weft", src)
}

fn rejected(src: &str, rule: &str, fragments: &[&str]) {
    let e = match load(src) {
        Ok(_) => panic!("the program must be rejected:\n{src}"),
        Err(e) => e,
    };
    assert!(
        e.diagnostics.iter().any(|d| d.rule == rule),
        "no rule {rule}: {e}"
    );
    for f in fragments {
        assert!(e.rendered.contains(f), "no '{f}' in:\n{e}");
    }
}

const HIST: &str = "proc hist(n: size, img: u8[n], h: i32[256]) {
    for b in 0..256 { h[b] = 0; }
    for i in 0..n { h[clamp_index(img[i], 0, 255)] += 1; }
}
proc lut(n: size, m: size, img: i16[n], table: f32[m], out: f32[n]) {
    for i in 0..n { out[i] = table[clamp_index(img[i] - 3, 0, m - 1)] * 2.0; }
}
";

fn pseudo_random(n: usize, seed: u64) -> Vec<i64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 1000) as i64 - 300
        })
        .collect()
}

#[test]
fn a_histogram_and_a_lookup_table_agree_in_the_interpreter_and_in_c() {
    let program = load(HIST).unwrap_or_else(|e| panic!("{e}"));
    let hist = program.module.proc("hist").unwrap().clone();
    let lut = program.module.proc("lut").unwrap().clone();
    let dir = tempfile::tempdir().unwrap();
    let jit = Jit::with_compiler(dir.path(), "cc", vec!["-O2".into()]).unwrap();
    let module = jit.compile(&[hist.clone(), lut.clone()]).unwrap();
    for (n, seed) in [(1usize, 1u64), (2, 2), (7, 3), (1000, 4)] {
        let img: Vec<u8> = pseudo_random(n, seed).iter().map(|v| *v as u8).collect();
        // The histogram by hand.
        let mut expect = vec![0i32; 256];
        for v in &img {
            expect[*v as usize] += 1;
        }
        let mut args = vec![
            ArgValue::Int(n as i64),
            ArgValue::Buf(Buffer::from_u8(vec![n], &img)),
            ArgValue::Buf(Buffer::zeros(weft_ir::DType::I32, vec![256])),
        ];
        run(&hist, &mut args, &mut ConfigState::default()).unwrap();
        assert_eq!(args[2].as_buffer().unwrap().to_i32_vec().unwrap(), expect);
        let mut h = vec![-1i32; 256];
        module
            .kernel("hist")
            .unwrap()
            .call(&mut [
                Arg::Int(n as i64),
                Arg::Buf(BufArg::from(&img[..])),
                Arg::Buf(BufArg::new(&mut h, &[256])),
            ])
            .unwrap();
        assert_eq!(h, expect, "n = {n}");

        // A table of 5 entries, indexed below and above its ends.
        let m = 5;
        let idx: Vec<i16> = pseudo_random(n, seed + 9)
            .iter()
            .map(|v| (*v % 12) as i16)
            .collect();
        let table: Vec<f32> = (0..m).map(|k| k as f32 + 0.5).collect();
        let expect: Vec<f32> = idx
            .iter()
            .map(|v| table[(*v as i64 - 3).clamp(0, m as i64 - 1) as usize] * 2.0)
            .collect();
        let mut args = vec![
            ArgValue::Int(n as i64),
            ArgValue::Int(m as i64),
            ArgValue::Buf(Buffer::from_i16(vec![n], &idx)),
            ArgValue::Buf(Buffer::from_f32(vec![m], &table)),
            ArgValue::Buf(Buffer::zeros(weft_ir::DType::F32, vec![n])),
        ];
        run(&lut, &mut args, &mut ConfigState::default()).unwrap();
        assert_eq!(args[4].as_buffer().unwrap().to_f32_vec().unwrap(), expect);
        let mut out = vec![0f32; n];
        module
            .kernel("lut")
            .unwrap()
            .call(&mut [
                Arg::Int(n as i64),
                Arg::Int(m as i64),
                Arg::Buf(BufArg::from(&idx[..])),
                Arg::Buf(BufArg::from(&table[..])),
                Arg::Buf(BufArg::new(&mut out, &[n])),
            ])
            .unwrap();
        assert_eq!(out, expect, "n = {n}");
    }
}

#[test]
fn the_clamp_range_must_lie_in_the_buffer_with_a_counterexample() {
    rejected(
        "proc f(n: size, img: i16[n], h: i32[256]) {
            for i in 0..n { h[clamp_index(img[i], 0, 256)] += 1; }
        }",
        "bounds",
        &["h"],
    );
    // A u8 value never exceeds 255: the same clamp into 256 cells is safe.
    load(
        "proc f(n: size, img: u8[n], h: i32[256]) {
            for i in 0..n { h[clamp_index(img[i], 0, 256)] += 1; }
        }",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    rejected(
        "proc f(n: size, m: size, img: i32[n], t: f32[m], o: f32[n]) {
            for i in 0..n { o[i] = t[clamp_index(img[i], 0, m)]; }
        }",
        "bounds",
        &["m = "],
    );
    // A range that starts below 0.
    rejected(
        "proc f(n: size, img: i32[n], t: f32[8], o: f32[n]) {
            for i in 0..n { o[i] = t[clamp_index(img[i], -1, 7)]; }
        }",
        "bounds",
        &["t"],
    );
}

#[test]
fn control_values_never_depend_on_data() {
    // In a loop bound, a condition, arithmetic of an index, a window coordinate.
    for body in [
        "for j in 0..clamp_index(img[0], 0, 3) { o[j] = 1.0; }",
        "if clamp_index(img[0], 0, 3) == 1 { o[0] = 1.0; }",
        "o[clamp_index(img[0], 0, 2) + 1] = 1.0;",
        "let w = o[clamp_index(img[0], 0, 3):4]; w[0] = 1.0;",
    ] {
        let src = format!("proc f(img: i32[4], o: f32[4]) {{ {body} }}");
        rejected(&src, "data-index", &["clamp_index"]);
    }
    // A float value.
    rejected(
        "proc f(img: f32[4], o: f32[4]) { o[clamp_index(img[0], 0, 3)] = 1.0; }",
        "type",
        &["must be an integer"],
    );
}

#[test]
fn a_read_at_a_data_index_needs_the_whole_range_written() {
    rejected(
        "proc f(n: size, img: u8[n], o: i32[n]) {
            alloc h: i32[256];
            for b in 0..255 { h[b] = 0; }
            for i in 0..n { o[i] = h[clamp_index(img[i], 0, 255)]; }
        }",
        "init",
        &["h"],
    );
    load(
        "proc f(n: size, img: u8[n], o: i32[n]) {
            alloc h: i32[256];
            for b in 0..256 { h[b] = 0; }
            for i in 0..n { o[i] = h[clamp_index(img[i], 0, 255)]; }
        }",
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_histogram_loop_cannot_be_parallelized_but_a_lookup_loop_can() {
    rejected(
        &format!("{HIST}schedule p = hist {{ parallelize(i); }}\n"),
        "schedule",
        &["may race", "reduces into h"],
    );
    let p = load(&format!("{HIST}schedule p = lut {{ parallelize(i); }}\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    // The parallel lookup computes what the serial one does.
    let q = p.module.proc("p").unwrap();
    let sizes: HashMap<String, i64> = [("n".to_string(), 9), ("m".to_string(), 4)].into();
    let args = weft_interp::random_args(q, &sizes, 5).unwrap();
    let mut a = args.clone();
    let mut b = args;
    run(q, &mut a, &mut ConfigState::default()).unwrap();
    run(
        p.module.proc("lut").unwrap(),
        &mut b,
        &mut ConfigState::default(),
    )
    .unwrap();
    assert_eq!(a, b);
}

#[test]
fn clamp_index_round_trips_through_text() {
    let p = load(HIST).unwrap();
    let text = weft_ir::print::module_to_string(&p.module);
    assert!(
        text.contains("h[clamp_index(img[i], 0, 255)] += 1"),
        "{text}"
    );
    let q = load(&text).unwrap_or_else(|e| panic!("{e}"));
    for (a, b) in p.module.procs.iter().zip(&q.module.procs) {
        assert!(weft_ir::alpha::alpha_eq_proc(a, b));
    }
}

/// `run_and_compare` (interpreter against compiled C) of proc `name` in `body`, for seeds 0..4.
fn agrees(name: &str, body: &str, sizes: &[(&str, i64)]) {
    let jit = Jit::new().unwrap();
    let program = load(body).unwrap_or_else(|e| panic!("{name}: {}", e.rendered));
    let proc = program.module.proc(name).unwrap();
    for seed in 0..4 {
        let opts = weft::run::RunOptions {
            sizes: sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            seed,
            reps: 1,
        };
        if let Err(e) = weft::run::run_and_compare(&program, proc, &jit, &opts) {
            panic!("{name}, seed {seed}: {}", e.rendered);
        }
    }
}

/// Found by review of the 32-bit offsets of gathers (`weft-c`'s `narrow`): a product of six
/// leaves (each `-(32)` assumed within ±2^24) has interval bounds past i128, which wrapped to
/// [0, 0], so `min(..., 7)` was computed in 32 bits on a value that does not fit (a segfault,
/// or with a clamp a wrong cell); and a data quotient by `-(-128)` in i8 was bounded as if the
/// divisor were 128 (a wrong cell). Both now agree with the interpreter, for several seeds.
#[test]
fn narrowed_gathers_of_huge_products_and_wrapped_divisors_agree_with_the_interpreter() {
    agrees(
        "oob",
        "proc oob(x: i32[8] @ DRAM, o: i32[8] @ DRAM) { for i in 0..8 {
            o[i] = x[min(i * -(32) * -(32) * -(32) * -(32) * -(32) * -(32), 7)]; } }",
        &[],
    );
    agrees(
        "wrap",
        "proc wrap(x: i32[8] @ DRAM, o: i32[8] @ DRAM) { for i in 0..8 {
            o[i] = x[max(min(i * -(32) * -(32) * -(32) * -(32) * -(32) * -(32), 5), 0)]; } }",
        &[],
    );
    agrees(
        "negdiv",
        "proc negdiv(a: i8[8] @ DRAM, x: i32[8] @ DRAM, o: i32[8] @ DRAM) { for i in 0..8 {
            o[i] = x[clamp_index(i64(a[i] / -(-128)) * 2147483648, 0, 7)]; } }",
        &[],
    );
}

/// Found by the proc generator once it made those shapes: the C hoisted the offset of a read
/// whose first index is computed from data (`a[clamp_index(a[0, 0], ..), j + 3]`) out of the
/// `j` loop, but the loop writes `a[0, i]`, which is `a[0, 0]` when `i` is 0: later iterations
/// read the cell the old index chose. Offsets with data in their indices are not hoisted now.
#[test]
fn an_offset_indexed_by_data_the_loop_writes_is_not_hoisted() {
    agrees(
        "hoist",
        "proc hoist(n: size, a: i64[n, n + 3] @ DRAM) { for i in 0..n { for j in 0..n {
            a[0, i] = a[clamp_index(a[0, 0], 0, n - 1), j + 3]; } } }",
        &[("n", 4)],
    );
}

/// A short vector loop of several stores loads each repeated read once, before the stores
/// (`weft-c`'s `load_repeated_reads`): reads of a buffer the loop writes must stay where they
/// are (`a` here: the reads of `c`'s stores see the new values).
#[test]
fn repeated_reads_of_vector_loops_are_loaded_once_and_writes_are_seen() {
    let body =
        "proc rl(b: f32[16] @ DRAM, a: f32[16] @ DRAM, c: f32[16] @ DRAM, d: f32[8] @ DRAM) {
        for i in 0..8 {
            a[2 * i] = b[2 * i] + d[i];
            a[2 * i + 1] = b[2 * i + 1] * d[i];
            c[2 * i] = a[2 * i] * d[i] + a[2 * i + 1];
            c[2 * i + 1] = a[2 * i + 1] - b[2 * i];
        }
    }";
    agrees("rl", body, &[]);
    let program = load(body).unwrap();
    let c = weft_c::emit(&program.module.procs).unwrap().source;
    let locals: Vec<&str> = c
        .lines()
        .filter(|l| l.contains("const float t_read_"))
        .collect();
    // d[i] (three times) and b[2 i] (twice); never a read of `a`.
    assert_eq!(locals.len(), 2, "{c}");
    assert!(locals.iter().all(|l| !l.contains("v_a_")), "{c}");
}

/// Found by review of the hoisted offsets of strided accesses (`weft-c`'s `hoist_offsets`): a
/// base at a negative literal start was multiplied in C's `int` (it overflowed: a segfault),
/// and moving the literals of an offset out of its base reordered its sum, which then
/// overflowed 64 bits (writes before the buffer). Bases now keep the terms in their order, the
/// variable's term in 64 bits.
#[test]
fn hoisted_strided_offsets_keep_their_arithmetic_in_range() {
    agrees(
        "neg",
        "proc neg(c: f32[1] @ DRAM) { for i in -32769..-32768 { c[65536 * i + 2147549184] = 1.0; } }",
        &[],
    );
    agrees(
        "neg8",
        "proc neg8(b: f32[8] @ DRAM, c: f32[16] @ DRAM) {
            for i in -1073741825..-1073741817 { c[2 * i + 2147483650] = b[i + 1073741825]; }
        }",
        &[],
    );
    agrees(
        "ov",
        "proc ov(n: index, b: f32[8] @ DRAM, c: f32[16] @ DRAM) {
            assert n == 1;
            for i in 0..8 {
                c[i + 4611686018427387905 * n - 10 + 4611686018427387905 * n - 4611686018427387904 - 4611686018427387904 + 8] = b[i];
            }
        }",
        &[("n", 1)],
    );
    // Accesses a literal apart share a base: the lanes of a split by 2, crossed.
    agrees(
        "lanes",
        "proc lanes(b: f32[18] @ DRAM, c: f32[17] @ DRAM) {
            for i in 0..8 {
                c[2 * i] = b[2 * i + 1] + b[2 * i + 2];
                c[2 * i + 1] = b[2 * i] - b[2 * i + 2];
            }
        }",
        &[],
    );
}
