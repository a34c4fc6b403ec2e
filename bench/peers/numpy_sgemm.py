"""numpy's SGEMM (OpenBLAS), timed on request, for weft's side-by-side benchmark
(`cargo run --release -p weft --bin weft-sgemm-bench`).

Reads one size `n` per line on stdin, runs one `np.matmul` of two n x n float32 matrices (inputs
made once per size, one warm-up call), and prints the seconds it took. The benchmark alternates
these calls with calls of the weft kernel, so that both are timed under the same machine
conditions. Start Python with OPENBLAS_NUM_THREADS=1; the benchmark does.
"""
import sys
import time

import numpy as np

cache = {}
for line in sys.stdin:
    n = int(line)
    if n not in cache:
        rng = np.random.default_rng(0)
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        c = np.zeros((n, n), dtype=np.float32)
        np.matmul(a, b, out=c)
        cache[n] = (a, b, c)
    a, b, c = cache[n]
    t = time.perf_counter()
    np.matmul(a, b, out=c)
    print(time.perf_counter() - t, flush=True)
