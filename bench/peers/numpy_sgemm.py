"""Times numpy's SGEMM (OpenBLAS) for the sizes on the command line, single-threaded.

Prints one line per size: `n seconds` (best of the repetitions), for weft's side-by-side
benchmark (`cargo run --release -p weft --bin weft-sgemm-bench`). Set OPENBLAS_NUM_THREADS=1
before starting Python; the benchmark does.
"""
import sys
import time

import numpy as np


def best_time(n: int, reps: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.zeros((n, n), dtype=np.float32)
    np.matmul(a, b, out=c)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        best = min(best, time.perf_counter() - t)
    return best


for arg in sys.argv[1:]:
    n = int(arg)
    reps = max(3, min(200, int(2e9 / (2 * n**3))))
    print(n, best_time(n, reps), flush=True)
