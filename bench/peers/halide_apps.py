"""Halide 21 versions of the pipeline benchmarks (issue 9), with the manual CPU schedules of
the Halide apps of the same names (halide/Halide apps/*/*_generator.cpp).

Usage: python halide_apps.py APP --input FILE --width W --height H --threads T --reps N --out FILE

Reads the input image (raw little-endian, row-major, with the border the app needs: see
`border`), JIT-compiles the app, runs it `reps` times on `threads` threads, writes the output
(raw, row-major) and prints one JSON line: {"compile_s": ..., "times_ms": [...]}.
"""

import argparse
import json
import os
import sys
import time


def blur(hl):
    """3x3 box blur in u16, separable: blur_x over three columns, blur_y over three rows."""
    x, y, yi = hl.Var("x"), hl.Var("y"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    # apps/blur/halide_blur_generator.cpp, CPU schedule.
    by.split(y, y, yi, 8).parallel(y).vectorize(x, 8)
    bx.store_at(by, y).compute_at(by, yi).vectorize(x, 8)
    return inp, by, hl.UInt(16), 1


APPS = {"blur": blur}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("app", choices=sorted(APPS))
    ap.add_argument("--input", required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--height", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    # The Halide runtime reads its thread count when its pool starts.
    os.environ["HL_NUM_THREADS"] = str(a.threads)
    import halide as hl
    import numpy as np

    inp, out_func, out_type, border = APPS[a.app](hl)
    w, h = a.width, a.height
    data = np.fromfile(a.input, dtype=np.uint16).reshape(h + 2 * border, w + 2 * border)
    ib = hl.Buffer(data)
    ib.set_min([-border, -border])
    inp.set(ib)
    t = time.perf_counter()
    out_func.compile_jit()
    compile_s = time.perf_counter() - t
    out = hl.Buffer(out_type, [w, h])
    out_func.realize(out)
    times = []
    for _ in range(a.reps):
        t = time.perf_counter()
        out_func.realize(out)
        times.append((time.perf_counter() - t) * 1e3)
    np.asarray(out).tofile(a.out)
    print(json.dumps({"compile_s": compile_s, "times_ms": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
