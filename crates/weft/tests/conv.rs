//! The shipped convolution schedules (`conv_avx512` and `conv_avx2` of examples/conv.weft)
//! compute bit for bit what the naive layer computes in the interpreter, at sizes that include 1
//! and every remainder of their register tiles (6 pixels by 64 channels, and by 16 with AVX2):
//! every pixel count of the right edge (4, 2 and 1 at a time), the 32-, 16- and 8-channel strips
//! and the prefix strip, both corners, and windows of 1 and 3; and the two-core versions on both
//! sides of the sizes where their parallel loops start. A CPU without an instruction set skips
//! the schedules that need it.

use std::collections::HashMap;
use std::path::Path;
use weft::jit::Jit;
use weft::run::{run_and_compare, RunOptions};

fn sizes(v: [(&str, i64); 6]) -> HashMap<String, i64> {
    v.into_iter().map(|(a, b)| (a.to_string(), b)).collect()
}

#[test]
fn avx512_and_avx2_conv_match_the_interpreter_at_every_remainder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = weft::load(&root.join("examples/conv.weft")).expect("the example loads");
    let jit = Jit::new().expect("a C compiler");
    let mut runs = 0;
    for (name, isa) in [("conv_avx512", "avx512f"), ("conv_avx2", "avx2")] {
        if weft::jit::isa::missing(&[isa.to_string()]).is_some() {
            eprintln!("{name} skipped: this CPU lacks {isa}");
            runs += 12 * 12 * 2;
            continue;
        }
        let proc = program.module.proc(name).expect("the schedule").clone();
        for w in [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13] {
            for k in [1, 7, 8, 9, 15, 16, 17, 47, 63, 64, 65, 100] {
                for (c, r) in [(1, 1), (3, 3)] {
                    let h = if r == 1 { 2 } else { 1 };
                    let opts = RunOptions {
                        sizes: sizes([("N", 1), ("H", h), ("W", w), ("C", c), ("K", k), ("R", r)]),
                        seed: (w * 1000 + k * 10 + c) as u64,
                        reps: 1,
                    };
                    run_and_compare(&program, &proc, &jit, &opts)
                        .unwrap_or_else(|e| panic!("{name} at W={w} K={k} C={c} R={r}: {e}"));
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 2 * 12 * 12 * 2);
    // The two-core versions run their panels in parallel where K is a multiple of two panels
    // (128 channels, 32 with AVX2; from 16 channels in and 2 rows, windows from 2), or else their
    // rows from 2 rows of 6 pixels and 16 channels in and out: both sides of those, at every
    // kind of edge.
    for (name, isa) in [("conv_avx512_par", "avx512f"), ("conv_avx2_par", "avx2")] {
        if weft::jit::isa::missing(&[isa.to_string()]).is_some() {
            continue;
        }
        let proc = program.module.proc(name).expect("the schedule").clone();
        for (n, h, w, c, k, r) in [
            (1, 3, 13, 16, 100, 3),
            (2, 2, 7, 17, 65, 1),
            (1, 2, 6, 16, 16, 3),
            (1, 1, 13, 16, 100, 3),
            (1, 4, 5, 16, 64, 2),
            (1, 2, 8, 15, 33, 1),
            (1, 2, 7, 16, 128, 1),
            (1, 1, 7, 16, 128, 1),
            (1, 2, 5, 15, 256, 1),
            (1, 2, 7, 16, 32, 3),
            (1, 2, 7, 16, 48, 3),
            (1, 2, 7, 15, 32, 3),
        ] {
            let opts = RunOptions {
                sizes: sizes([("N", n), ("H", h), ("W", w), ("C", c), ("K", k), ("R", r)]),
                seed: 3,
                reps: 1,
            };
            run_and_compare(&program, &proc, &jit, &opts)
                .unwrap_or_else(|e| panic!("{name} at N={n} H={h} W={w} C={c} K={k} R={r}: {e}"));
        }
    }
}
