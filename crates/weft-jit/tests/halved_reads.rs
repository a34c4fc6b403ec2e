//! Reads at half the lane of a short vector loop (`a[(v + s) / 2]`, an upsampled level) are
//! staged before the loop as two dense rows (weft-c's `halved_reads`): the same values as the
//! reads themselves for every parity and sign of `s`, and left alone where the loop writes the
//! buffer it reads.

use std::sync::Arc;
use weft_ir::Proc;
use weft_jit::{Arg, BufArg, Jit};

fn procs(src: &str) -> Vec<Arc<Proc>> {
    let mut sources = weft_syntax::SourceMap::new();
    match weft_syntax::parse_module(&mut sources, "t.weft", src) {
        Ok(m) => m.procs,
        Err(d) => panic!("{}", sources.render(&d[0])),
    }
}

const SRC: &str = "
proc up(n: size, s: index, a: f32[n], y: f32[2, 16]) {
    assert -16 <= s;
    assert (s + 15) / 2 + 8 < n;
    for r in 0..2 {
        for v in 0..16 {
            y[r, v] = a[(v + s) / 2 + 8] * 2.0 + a[8 + (s + v + 1) / 2] + f32(r);
        }
    }
}
proc up_in_place(n: size, s: index, a: f32[n]) {
    assert 0 <= s;
    assert s / 2 + 24 < n;
    assert 48 <= n;
    for v in 0..16 {
        a[v + 4] = a[(v + s) / 2] + 1.0;
    }
}
";

#[test]
fn halved_reads_read_what_the_loop_reads() {
    let ps = procs(SRC);
    let unit = weft_c::emit(&ps).unwrap();
    // Both reads of `up` are staged (in each of the narrowed and general versions of its loop,
    // if it has two); `up_in_place` writes `a` in its loop and stages nothing.
    let up = &unit.source[unit.source.find("up(").unwrap()..];
    assert!(unit.source.contains("t_halved_"), "{}", unit.source);
    let in_place = unit
        .source
        .split("/* proc ")
        .find(|s| s.starts_with("up_in_place"))
        .unwrap_or(up);
    assert!(!in_place.contains("t_halved_"), "{in_place}");
    let dir = tempfile::tempdir().unwrap();
    let jit =
        Jit::with_compiler(dir.path(), "cc", vec!["-O3".into(), "-march=native".into()]).unwrap();
    let m = jit.compile(&ps).unwrap();
    let n = 40usize;
    let a: Vec<f32> = (0..n)
        .map(|i| (i * i % 17) as f32 + 0.25 * i as f32)
        .collect();
    for s in [-16i64, -15, -3, -2, -1, 0, 1, 2, 7, 10, 11] {
        if (s + 15).div_euclid(2) + 8 >= n as i64 {
            continue;
        }
        let mut y = vec![0.0f32; 32];
        m.kernel("up")
            .unwrap()
            .call(&mut [
                Arg::Int(n as i64),
                Arg::Int(s),
                Arg::Buf(BufArg::from_slice(&a, &[n])),
                Arg::Buf(BufArg::new(&mut y, &[2, 16])),
            ])
            .unwrap();
        for r in 0..2 {
            for v in 0..16i64 {
                let at = |k: i64| a[k as usize];
                let want = at((v + s).div_euclid(2) + 8) * 2.0
                    + at(8 + (s + v + 1).div_euclid(2))
                    + r as f32;
                assert_eq!(y[r * 16 + v as usize], want, "s = {s}, r = {r}, v = {v}");
            }
        }
    }
    for s in [0i64, 1, 30, 31] {
        let mut b: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let before = b.clone();
        m.kernel("up_in_place")
            .unwrap()
            .call(&mut [
                Arg::Int(64),
                Arg::Int(s),
                Arg::Buf(BufArg::new(&mut b, &[64])),
            ])
            .unwrap();
        let mut want = before.clone();
        // In order: later iterations read what earlier ones wrote (s = 0: a[5] at v = 10).
        for v in 0..16i64 {
            want[(v + 4) as usize] = want[((v + s).div_euclid(2)) as usize] + 1.0;
        }
        assert_eq!(b, want, "s = {s}");
    }
}

/// The staged index keeps the loop's tree of additions: every value it computes is one the
/// loop computes, which the checker proved fits in 64 bits. A flattened and regrouped sum
/// (review: `((0 + n K) + m K) - C` for `n K + (m K - C)`) overflowed here, which signed C
/// arithmetic may not; compiled to trap on signed overflow.
#[test]
fn halved_reads_keep_the_order_of_the_index_arithmetic() {
    let ps = procs(
        "
proc up_wide(n: size, m: size, a: f32[8], y: f32[8]) {
    assert n + m == 2147483648;
    for v in 0..8 {
        y[v] = a[(v + (n * 4294967296 + (m * 4294967296 - 9223372036854775807))) / 2];
    }
}
",
    );
    let unit = weft_c::emit(&ps).unwrap();
    assert!(unit.source.contains("t_halved_"), "{}", unit.source);
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "-O0",
        "-fsanitize=signed-integer-overflow",
        "-fsanitize-undefined-trap-on-error",
    ];
    let jit = Jit::with_compiler(
        dir.path(),
        "cc",
        flags.iter().map(|f| f.to_string()).collect(),
    )
    .unwrap();
    let m = jit.compile(&ps).unwrap();
    let a: Vec<f32> = (0..8).map(|i| i as f32 * 1.5).collect();
    let mut y = vec![0.0f32; 8];
    m.kernel("up_wide")
        .unwrap()
        .call(&mut [
            Arg::Int(1 << 30),
            Arg::Int(1 << 30),
            Arg::Buf(BufArg::from_slice(&a, &[8])),
            Arg::Buf(BufArg::new(&mut y, &[8])),
        ])
        .unwrap();
    // n K + (m K - C) = 1: the loop reads a[(v + 1) / 2].
    let want: Vec<f32> = (0..8usize).map(|v| a[v.div_ceil(2)]).collect();
    assert_eq!(y, want);
}
