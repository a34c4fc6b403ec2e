//! The shipped SGEMM schedules (`sgemm_avx512`, `sgemm_avx512_par`, `sgemm_avx2` and
//! `sgemm_avx2_par` of examples/sgemm.weft) compute bit for bit what the naive fused SGEMM
//! computes in the interpreter, at sizes that include 1 and every remainder of the register tile
//! (6 x 64, and 6 x 16 for AVX2): every row count of the bottom edge, whole and masked vectors
//! of the right edge, and both corners; for AVX-512 both sides of M = 19, below which the
//! 64-column panels go to `sgemm_panel_avx512` (tiles of 8, 4, 2 and 1 rows: every remainder of
//! 8), for AVX2 both of its orders (the rows of `sgemm_avx2_rows` where K < 48 or K and N are at
//! most 128, the panels beyond: in place, `sgemm_panel_avx2`, up to 6 rows, every remainder of
//! 6, and packed from 7; from 7 rows up to 95 with N >= 512 and K >= 256, blocks of 256 x 256 of
//! B), and a single row from 64 columns to the matrix-vector product (8 rows
//! of B at a time, 4 with AVX2: every remainder of 8 of K); and the two-core versions on both
//! sides of the sizes where their parallel loops start; `sgemm_avx2_blocked` at every remainder
//! of its K and row blocks. A CPU without an instruction set skips the schedules that need it.

use std::collections::HashMap;
use std::path::Path;
use weft::jit::Jit;
use weft::run::{run_and_compare, RunOptions};

fn sizes(m: i64, n: i64, k: i64) -> HashMap<String, i64> {
    [("M", m), ("N", n), ("K", k)]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b))
        .collect()
}

/// Column counts: every kind of right edge of the 64-column panels (32, 16 and masked columns,
/// alone and together) and of AVX2's 16-column panels.
const NS: [i64; 17] = [
    1, 7, 8, 9, 15, 16, 17, 31, 33, 47, 48, 63, 64, 65, 96, 112, 129,
];

#[test]
fn avx512_and_avx2_sgemm_match_the_interpreter_at_every_remainder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = weft::load(&root.join("examples/sgemm.weft")).expect("the example loads");
    let jit = Jit::new().expect("a C compiler");
    let compare = |name: &str, proc: &std::sync::Arc<weft::ir::Proc>, (m, n, k), seed| {
        let opts = RunOptions {
            sizes: sizes(m, n, k),
            seed,
            reps: 1,
        };
        run_and_compare(&program, proc, &jit, &opts)
            .unwrap_or_else(|e| panic!("{name} at M={m} N={n} K={k}: {e}"));
    };
    let compare_at = |name: &str, shapes: &[(i64, i64, i64)]| {
        let proc = program.module.proc(name).expect("the schedule").clone();
        for &shape in shapes {
            compare(name, &proc, shape, 7);
        }
    };
    let mut runs = 0;
    // Short matrices (every remainder of 8 below 19), then every remainder of 6 from 19 up.
    let avx512_rows = [
        1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
    ];
    let avx2_rows = [1, 2, 3, 4, 5, 6, 7, 11, 12, 13];
    // AVX2: small K (the rows), and K = 130 (the panels, and the rows where N <= 128).
    let (avx512_ks, avx2_ks) = ([1, 3], [1, 3, 130]);
    for (name, isa, rows, ks) in [
        ("sgemm_avx512", "avx512f", &avx512_rows[..], &avx512_ks[..]),
        (
            "sgemm_avx512_par",
            "avx512f",
            &avx512_rows[..],
            &avx512_ks[..],
        ),
        ("sgemm_avx2", "avx2", &avx2_rows[..], &avx2_ks[..]),
        ("sgemm_avx2_par", "avx2", &avx2_rows[..], &avx2_ks[..]),
    ] {
        if weft::jit::isa::missing(&[isa.to_string()]).is_some() {
            eprintln!("{name} skipped: this CPU lacks {isa}");
            runs += rows.len() * NS.len() * ks.len();
            continue;
        }
        let proc = program.module.proc(name).expect("the schedule").clone();
        // A single row of 64 columns or more (the matrix-vector product) with K from 8 up.
        let gemv = [
            (1, 64, 8),
            (1, 65, 9),
            (1, 80, 15),
            (1, 129, 17),
            (1, 63, 16),
            (1, 70, 6),
        ];
        for shape in gemv {
            compare(name, &proc, shape, 3);
        }
        for &m in rows {
            for n in NS {
                for &k in ks {
                    compare(name, &proc, (m, n, k), (m * 1000 + n * 10 + k) as u64);
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(
        runs,
        2 * (avx512_rows.len() * avx512_ks.len() + avx2_rows.len() * avx2_ks.len()) * NS.len()
    );
    if weft::jit::isa::missing(&["avx2".to_string(), "fma".to_string()]).is_none() {
        // sgemm_avx2_par's parallel loops: the panels where N >= 32 with an even number of
        // them or N >= 80, M >= 4 and K >= 16; the small B's row tiles where M >= 48 and
        // N >= 32; the panels of at most 6 rows where N >= 768 and K >= 128; the single row's
        // 1024-column pieces where N >= 2048; the blocks of 256 columns of 7 to 63 rows where
        // N >= 1024 and K >= 256. Both sides of each:
        compare_at(
            "sgemm_avx2_par",
            &[
                (4, 160, 48),
                (3, 160, 48),
                (4, 160, 47),
                (5, 48, 130),
                (5, 80, 130),
                (48, 32, 20),
                (47, 33, 20),
                (49, 31, 20),
                (1, 2048, 9),
                (1, 2047, 9),
                (6, 768, 128),
                (5, 785, 128),
                (6, 767, 128),
                (3, 768, 127),
                (13, 1040, 260),
                (7, 1024, 256),
                (7, 1023, 256),
            ],
        );
        // sgemm_avx2's short, wide matrices (7 <= M < 96, N >= 512, K >= 256), in K blocks of
        // 256 and column blocks of 256: every remainder of 6 rows, of the column block (with
        // whole, masked or no vectors of the right edge) and of the K block; and just outside.
        compare_at(
            "sgemm_avx2",
            &[
                (7, 512, 256),
                (8, 531, 256),
                (9, 600, 260),
                (10, 515, 256),
                (11, 529, 257),
                (12, 520, 300),
                (6, 512, 256),
                (7, 511, 256),
                (7, 512, 255),
            ],
        );
        // sgemm_avx2_blocked: one K block and a remainder of 1 (257), two and a remainder (513),
        // exactly one (256); rows in a block of 144 and a remainder of 1, 5 or 6 rows (whose
        // tiles are the block's last rows), or only a remainder; every kind of right edge.
        compare_at(
            "sgemm_avx2_blocked",
            &[
                (145, 17, 257),
                (149, 9, 513),
                (150, 31, 256),
                (6, 40, 256),
                (1, 1, 1),
                (13, 64, 300),
            ],
        );
    }
    if weft::jit::isa::missing(&["avx512f".to_string()]).is_some() {
        return;
    }
    // The two-core version's parallel loops run: the panels where N >= 128 with an even number
    // of them or N >= 320, M >= 4 and K >= 16; else the row tiles of each panel where M >= 96
    // and K >= 16; the right edge's row tiles where M >= 96, K >= 16 and N % 64 > 0; a short
    // matrix's (M < 19) panels where N >= 768 and K >= 128 (below that a single row is the
    // matrix-vector product, on one core, and 16-18 rows are packed); a single row's pieces of
    // 1024 columns where N >= 2048, N % 1024 < 256 and K >= 1024. The sizes on both sides of
    // those thresholds:
    compare_at(
        "sgemm_avx512_par",
        &[
            (4, 128, 16),
            (3, 128, 16),
            (4, 128, 15),
            (5, 200, 16),
            (9, 321, 16),
            (7, 330, 15),
            (97, 200, 17),
            (95, 263, 16),
            (101, 390, 20),
            (96, 64, 16),
            (99, 128, 16),
            // a short matrix's panels: N >= 768 and K >= 128
            (1, 768, 128),
            (1, 767, 128),
            // a single row's 1024-column pieces: N >= 2048 with N % 1024 < 256 and K >= 1024
            (1, 2048, 1024),
            (1, 2303, 1025),
            (1, 2304, 1024),
            (1, 2048, 1023),
            (1, 800, 127),
            (15, 767, 128),
            (18, 768, 128),
            (16, 767, 128),
            (2, 832, 127),
        ],
    );
}
