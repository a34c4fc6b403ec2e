//! The shipped AVX-512 convolution schedule (`conv_avx512` of examples/conv.weft) computes bit
//! for bit what the naive layer computes in the interpreter, at sizes that include 1 and every
//! remainder of its 6-pixel by 64-channel register tile: every pixel count of the right edge (4,
//! 2 and 1 at a time), 32- and 16-channel strips and the prefix strip, both corners, and windows
//! of 1 and 3; and the two-core version on both sides of the sizes where its parallel loops
//! start.

use std::collections::HashMap;
use std::path::Path;
use weft::jit::Jit;
use weft::run::{run_and_compare, RunOptions};

fn sizes(v: [(&str, i64); 6]) -> HashMap<String, i64> {
    v.into_iter().map(|(a, b)| (a.to_string(), b)).collect()
}

#[test]
fn avx512_conv_matches_the_interpreter_at_every_remainder() {
    if weft::jit::isa::missing(&["avx512f".to_string()]).is_some() {
        eprintln!("skipped: this CPU lacks AVX-512F");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = weft::load(&root.join("examples/conv.weft")).expect("the example loads");
    let jit = Jit::new().expect("a C compiler");
    let mut runs = 0;
    for name in ["conv_avx512"] {
        let proc = program.module.proc(name).expect("the schedule").clone();
        for w in [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13] {
            for k in [1, 15, 16, 17, 47, 63, 64, 65, 79, 100] {
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
    assert_eq!(runs, 12 * 10 * 2);
    // The two-core version runs its panels in parallel where K is a multiple of 128 (from 16
    // channels in and 2 rows), or else its rows from 2 rows of 6 pixels and 16 channels in and
    // out: both sides of those, at every kind of edge.
    let proc = program
        .module
        .proc("conv_avx512_par")
        .expect("the schedule")
        .clone();
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
    ] {
        let opts = RunOptions {
            sizes: sizes([("N", n), ("H", h), ("W", w), ("C", c), ("K", k), ("R", r)]),
            seed: 3,
            reps: 1,
        };
        run_and_compare(&program, &proc, &jit, &opts).unwrap_or_else(|e| {
            panic!("conv_avx512_par at N={n} H={h} W={w} C={c} K={k} R={r}: {e}")
        });
    }
}
