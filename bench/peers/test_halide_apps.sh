#!/usr/bin/env bash
# Tests bench/peers/halide_apps.py: for each app and a few sizes, writes a random input, runs
# the app (--threads 1 --reps 2), checks the output file's size and that its values are finite,
# and compares it with a plain numpy version of the same algorithm written here (float32 math
# in the same order; f32 outputs within rtol 1e-4 (plus an atol of 1e-5 times the largest
# |value|, for values that cancel near zero), u16 outputs exactly for blur and within 1 for
# local_laplacian, whose float math ends in a truncating cast).
# Usage: bash bench/peers/test_halide_apps.sh [PYTHON] (default .venv-peers/bin/python; made by
# bench/peers/setup.sh when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${1:-.venv-peers/bin/python}"
if [ ! -x "$py" ]; then
    bash bench/peers/setup.sh
    py=.venv-peers/bin/python
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$py" - "$tmp" <<'PYEOF'
import json
import subprocess
import sys

import numpy as np

TMP = sys.argv[1]
SCRIPT = "bench/peers/halide_apps.py"
f32 = np.float32


# ---------------------------------------------------------------- helpers

class Grid:
    """Values of a Func over a rectangle: data[..., y - y0, x - x0]."""

    def __init__(self, data, x0, y0):
        self.data, self.x0, self.y0 = data, x0, y0

    def at(self, X, Y):
        xi, yi = X - self.x0, Y - self.y0
        ny, nx = self.data.shape[-2:]
        assert xi.min() >= 0 and xi.max() < nx and yi.min() >= 0 and yi.max() < ny, "region"
        return self.data[..., yi, xi]


def rng_xy(xa, xb, ya, yb):
    """Index arrays X (1, n) and Y (m, 1) for x in [xa, xb], y in [ya, yb]."""
    return np.arange(xa, xb + 1)[None, :], np.arange(ya, yb + 1)[:, None]


def clamp_take(img, X, Y):
    """repeat_edge: img[..., clamp(Y), clamp(X)]."""
    h, w = img.shape[-2:]
    return img[..., np.clip(Y, 0, h - 1), np.clip(X, 0, w - 1)]


def lerp(a, b, w):
    """Halide's float lerp: a * (1 - w) + b * w."""
    return a * (f32(1) - w) + b * w


def gray_of(r, g, b):
    return f32(0.299) * r + f32(0.587) * g + f32(0.114) * b


# ---------------------------------------------------------------- references

def ref_blur(inp, w, h, params):
    # inp is (h + 2, w + 2) with a 1-pixel border; u16 arithmetic wraps as in Halide.
    a = inp.astype(np.uint16)
    bx = (a[:, 0:w] + a[:, 1:w + 1] + a[:, 2:w + 2]) // np.uint16(3)
    return ((bx[0:h] + bx[1:h + 1] + bx[2:h + 2]) // np.uint16(3)).astype(np.uint16)


def ref_unsharp(inp, w, h, params):
    sigma = f32(1.5)
    norm = np.sqrt(f32(2) * f32(3.14159265358979310000), dtype=f32) * sigma
    k = [f32(np.exp(f32(-i * i) / (f32(2) * sigma * sigma), dtype=f32) / norm)
         for i in range(4)]
    p = 3
    ext = np.pad(inp, ((0, 0), (p, p), (p, p)), mode="edge")
    g = gray_of(ext[0], ext[1], ext[2])  # rows, cols in [-3, h+3) x [-3, w+3)

    def tap(a, axis, d, n):  # shifted view along axis: a[... + d] over n entries
        sl = [slice(None)] * 2
        sl[axis] = slice(p + d, p + d + n)
        return a[tuple(sl)]

    by = (k[0] * tap(g, 0, 0, h) + k[1] * (tap(g, 0, -1, h) + tap(g, 0, 1, h))
          + k[2] * (tap(g, 0, -2, h) + tap(g, 0, 2, h))
          + k[3] * (tap(g, 0, -3, h) + tap(g, 0, 3, h)))  # (h, w + 6)
    bx = (k[0] * tap(by, 1, 0, w) + k[1] * (tap(by, 1, -1, w) + tap(by, 1, 1, w))
          + k[2] * (tap(by, 1, -2, w) + tap(by, 1, 2, w))
          + k[3] * (tap(by, 1, -3, w) + tap(by, 1, 3, w)))
    g0 = g[p:p + h, p:p + w]
    ratio = (f32(2) * g0 - bx) / g0
    return ratio[None] * inp


def ref_harris(inp, w, h, params):
    p = 2
    ext = np.pad(inp, ((0, 0), (p, p), (p, p)))  # zeros, as the app pads
    g = gray_of(ext[0], ext[1], ext[2])

    def s(a, dx, dy, m):  # a(x + dx, y + dy) for x, y in [-m, w + m) x [-m, h + m)
        o = (a.shape[0] - h) // 2
        return a[o + dy - m:o + dy + h + m, o + dx - m:o + dx + w + m]

    m1, m2, p1, p2 = f32(-1.0 / 12), f32(-2.0 / 12), f32(1.0 / 12), f32(2.0 / 12)
    Iy = (s(g, -1, -1, 1) * m1 + s(g, -1, 1, 1) * p1 + s(g, 0, -1, 1) * m2
          + s(g, 0, 1, 1) * p2 + s(g, 1, -1, 1) * m1 + s(g, 1, 1, 1) * p1)
    Ix = (s(g, -1, -1, 1) * m1 + s(g, 1, -1, 1) * p1 + s(g, -1, 0, 1) * m2
          + s(g, 1, 0, 1) * p2 + s(g, -1, 1, 1) * m1 + s(g, 1, 1, 1) * p1)

    def sum3(a):
        return (s(a, -1, -1, 0) + s(a, -1, 0, 0) + s(a, -1, 1, 0) + s(a, 0, -1, 0)
                + s(a, 0, 0, 0) + s(a, 0, 1, 0) + s(a, 1, -1, 0) + s(a, 1, 0, 0)
                + s(a, 1, 1, 0))

    Sxx, Syy, Sxy = sum3(Ix * Ix), sum3(Iy * Iy), sum3(Ix * Iy)
    det = Sxx * Syy - Sxy * Sxy
    tr = Sxx + Syy
    return det - f32(0.04) * tr * tr


def ref_interpolate(inp, w, h, params):
    levels = 10
    memo = {}

    def down(l, xa, xb, ya, yb):
        X, Y = rng_xy(xa, xb, ya, yb)
        if l == 0:
            a = clamp_take(inp, X, Y)
            return Grid(np.concatenate([a[:3] * a[3:4], a[3:4]]), xa, ya)
        pxa, pxb, pya, pyb = 2 * xa - 1, 2 * xb + 1, 2 * ya - 1, 2 * yb + 1
        if l == 4:
            cw, ch = w // (1 << (l - 1)), h // (1 << (l - 1))
            cx = lambda v: min(max(v, 0), cw)
            cy = lambda v: min(max(v, 0), ch)
            prev = down(l - 1, cx(pxa), cx(pxb), cy(pya), cy(pyb))
            get = lambda X, Y: prev.at(np.clip(X, 0, cw), np.clip(Y, 0, ch))
        else:
            prev = down(l - 1, pxa, pxb, pya, pyb)
            get = prev.at
        Xd, Yd = rng_xy(xa, xb, pya, pyb)
        dx = Grid((get(Xd * 2 - 1, Yd) + f32(2) * get(Xd * 2, Yd) + get(Xd * 2 + 1, Yd))
                  * f32(0.25), xa, pya)
        return Grid((dx.at(X, Y * 2 - 1) + f32(2) * dx.at(X, Y * 2) + dx.at(X, Y * 2 + 1))
                    * f32(0.25), xa, ya)

    def interp(l, xa, xb, ya, yb):
        d = down(l, xa, xb, ya, yb)
        if l == levels - 1:
            return d
        X, Y = rng_xy(xa, xb, ya, yb)
        nxt = interp(l + 1, xa // 2, (xb + 1) // 2, ya // 2, (yb + 1) // 2)
        Xu, Yu = rng_xy(xa, xb, ya // 2, (yb + 1) // 2)
        ux = Grid((nxt.at(Xu // 2, Yu) + nxt.at((Xu + 1) // 2, Yu)) / f32(2), xa, ya // 2)
        up = (ux.at(X, Y // 2) + ux.at(X, (Y + 1) // 2)) / f32(2)
        dd = d.data
        return Grid(dd + (f32(1) - dd[3:4]) * up, xa, ya)

    i0 = interp(0, 0, w - 1, 0, h - 1).data
    return i0[:3] / i0[3:4]


def ref_bilateral_grid(inp, w, h, params):
    s = 8
    r_sigma = f32(params.get("r_sigma", 0.1))
    inv = f32(1) / r_sigma
    gx0, gx1 = -2, (w - 1) // s + 3  # grid cells the output's blury reads, with the blurs'
    gy0, gy1 = -2, (h - 1) // s + 3  # 2-cell reach
    zmax = int(f32(1) * inv) + 1
    z0, z1 = -4, zmax + 4
    nz = z1 - z0 + 1
    GX, GY = rng_xy(gx0, gx1, gy0, gy1)
    hist = np.zeros((2, nz, gy1 - gy0 + 1, gx1 - gx0 + 1), f32)
    for ry in range(s):
        for rx in range(s):
            val = np.clip(clamp_take(inp, GX * s + rx - s // 2, GY * s + ry - s // 2),
                          f32(0), f32(1))
            zi = (val * inv + f32(0.5)).astype(np.int32) - z0
            iy, ix = np.indices(val.shape)
            np.add.at(hist[0], (zi, iy, ix), val)
            np.add.at(hist[1], (zi, iy, ix), f32(1))

    def blur5(a, axis):
        n = a.shape[axis] - 4
        t = lambda d: np.take(a, np.arange(d, d + n), axis=axis)
        return t(0) + t(1) * f32(4) + t(2) * f32(6) + t(3) * f32(4) + t(4)

    bz = blur5(hist, 1)  # z in [z0 + 2, z1 - 2]
    bx = blur5(bz, 3)    # x in [gx0 + 2, gx1 - 2]
    by = blur5(bx, 2)    # y in [gy0 + 2, gy1 - 2]
    bzo, byo, bxo = z0 + 2, gy0 + 2, gx0 + 2

    X, Y = rng_xy(0, w - 1, 0, h - 1)
    val = np.clip(inp, f32(0), f32(1))
    zv = val * inv
    zi = zv.astype(np.int32)
    zf = zv - zi.astype(f32)
    xf = (X % s).astype(f32) / f32(s)
    yf = (Y % s).astype(f32) / f32(s)
    xi, yi = X // s, Y // s
    B = lambda dx, dy, dz: by[:, zi + dz - bzo, yi + dy - byo, xi + dx - bxo]
    it = lerp(lerp(lerp(B(0, 0, 0), B(1, 0, 0), xf), lerp(B(0, 1, 0), B(1, 1, 0), xf), yf),
              lerp(lerp(B(0, 0, 1), B(1, 0, 1), xf), lerp(B(0, 1, 1), B(1, 1, 1), xf), yf),
              zf)
    return it[0] / it[1]


def ref_local_laplacian(inp, w, h, params):
    J = 8
    levels = int(params.get("levels", 8))
    alpha = f32(float(params.get("alpha", 1.0)) / (levels - 1))
    beta = f32(params.get("beta", 1.0))
    nk = levels  # k in [0, levels - 1]

    # Regions (x range, y range) per pyramid level: U from the output's upsampling chain, D
    # (for g and inG) adds what the downsampling of the level above reads.
    up_need = lambda r: ((r[0] - 1) // 2, (r[1] + 1) // 2)
    down_need = lambda r: (2 * r[0] - 1, 2 * r[1] + 2)
    U = [((0, w - 1), (0, h - 1))]
    for j in range(1, J):
        U.append((up_need(U[-1][0]), up_need(U[-1][1])))
    D = [None] * J
    D[J - 1] = U[J - 1]
    for j in range(J - 2, -1, -1):
        dn = (down_need(D[j + 1][0]), down_need(D[j + 1][1]))
        D[j] = tuple((min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(U[j], dn))

    def down(g, r):
        (xa, xb), (ya, yb) = r
        Xd, Yd = rng_xy(xa, xb, 2 * ya - 1, 2 * yb + 2)
        dx = Grid((g.at(2 * Xd - 1, Yd) + f32(3) * (g.at(2 * Xd, Yd) + g.at(2 * Xd + 1, Yd))
                   + g.at(2 * Xd + 2, Yd)) / f32(8), xa, 2 * ya - 1)
        X, Y = rng_xy(xa, xb, ya, yb)
        return Grid((dx.at(X, 2 * Y - 1) + f32(3) * (dx.at(X, 2 * Y) + dx.at(X, 2 * Y + 1))
                     + dx.at(X, 2 * Y + 2)) / f32(8), xa, ya)

    def up(g, r):
        (xa, xb), (ya, yb) = r
        uy0, uy1 = (ya - 1) // 2, (yb + 1) // 2
        Xu, Yu = rng_xy(xa, xb, uy0, uy1)
        wx = ((Xu % 2) * 2 + 1).astype(f32) / f32(4)
        ux = Grid(lerp(g.at((Xu + 1) // 2, Yu), g.at((Xu - 1) // 2, Yu), wx), xa, uy0)
        X, Y = rng_xy(xa, xb, ya, yb)
        wy = ((Y % 2) * 2 + 1).astype(f32) / f32(4)
        return lerp(ux.at(X, (Y + 1) // 2), ux.at(X, (Y - 1) // 2), wy)

    (xa, xb), (ya, yb) = D[0]
    X, Y = rng_xy(xa, xb, ya, yb)
    floating = clamp_take(inp, X, Y).astype(f32) / f32(65535)
    gray = gray_of(floating[0], floating[1], floating[2])
    lut_x = np.arange(-(levels - 1) * 256, (levels - 1) * 256 + 1)
    fx = lut_x.astype(f32) / f32(256)
    remap = alpha * fx * np.exp(-fx * fx / f32(2), dtype=f32)
    k = np.arange(nk, dtype=np.int32)[:, None, None]
    level = k.astype(f32) * (f32(1) / f32(levels - 1))
    idx = np.clip((gray * f32(levels - 1) * f32(256)).astype(np.int32), 0, (levels - 1) * 256)
    g0 = beta * (gray[None] - level) + level + remap[idx[None] - 256 * k - lut_x[0]]
    g = [Grid(g0, xa, ya)]
    inG = [Grid(gray, xa, ya)]
    for j in range(1, J):
        g.append(down(g[-1], D[j]))
        inG.append(down(inG[-1], D[j]))

    def sub(gr, r):  # a Grid restricted to region r
        X, Y = rng_xy(r[0][0], r[0][1], r[1][0], r[1][1])
        return gr.at(X, Y)

    outL = []
    for j in range(J):
        lp = sub(g[j], U[j]) - (up(g[j + 1], U[j]) if j < J - 1 else 0)
        lv = sub(inG[j], U[j]) * f32(levels - 1)
        li = np.clip(lv.astype(np.int32), 0, levels - 2)
        lf = lv - li.astype(f32)
        pick = lambda kk: np.take_along_axis(lp, kk[None], axis=0)[0]
        outL.append((f32(1) - lf) * pick(li) + lf * pick(li + 1))
    outG = Grid(outL[J - 1], U[J - 1][0][0], U[J - 1][1][0])
    for j in range(J - 2, -1, -1):
        outG = Grid(up(outG, U[j]) + outL[j], U[j][0][0], U[j][1][0])
    X, Y = rng_xy(0, w - 1, 0, h - 1)
    fl = inp.astype(f32) / f32(65535)
    gr = gray_of(fl[0], fl[1], fl[2])
    eps = f32(0.01)
    color = outG.data[None] * (fl + eps) / (gr + eps)[None]
    return (np.clip(color, f32(0), f32(1)) * f32(65535)).astype(np.uint16)


# ---------------------------------------------------------------- inputs and the runs

def make_input(app, w, h, rng):
    if app == "blur":
        return rng.integers(0, 65536, (h + 2, w + 2)).astype(np.uint16)
    if app in ("unsharp", "harris"):
        return rng.uniform(0.05, 1.0, (3, h, w)).astype(np.float32)
    if app == "interpolate":
        a = rng.uniform(0.0, 1.0, (4, h, w)).astype(np.float32)
        a[3] = np.where(rng.uniform(size=(h, w)) < 0.3, f32(1), f32(0))  # sparse known pixels
        a[3, 0, 0] = f32(1)
        return a
    if app == "bilateral_grid":
        return rng.uniform(-0.1, 1.1, (h, w)).astype(np.float32)  # exercises the clamp
    if app == "local_laplacian":
        return rng.integers(0, 65536, (3, h, w)).astype(np.uint16)
    raise KeyError(app)


OUT = {  # output dtype, channels
    "blur": (np.uint16, None), "unsharp": (np.float32, 3), "harris": (np.float32, None),
    "interpolate": (np.float32, 3), "bilateral_grid": (np.float32, None),
    "local_laplacian": (np.uint16, 3),
}
REF = {name: globals()["ref_" + name] for name in OUT}

# local_laplacian's schedule splits the output's rows by 64 (ShiftInwards), so like the
# generator it needs H >= 64: its small case is 67x77 instead of 67x45.
CASES = []
for app in OUT:
    small = (67, 77) if app == "local_laplacian" else (67, 45)
    for size in (small, (256, 192)):
        CASES.append((app, size, {}))
CASES += [("bilateral_grid", (67, 45), {"r_sigma": 0.2}),
          ("local_laplacian", (67, 77), {"levels": 6, "alpha": 2.0, "beta": 0.5})]

rng = np.random.default_rng(1)
fails = 0
for app, (w, h), params in CASES:
    inp = make_input(app, w, h, rng)
    fin, fout = f"{TMP}/{app}_{w}x{h}.in", f"{TMP}/{app}_{w}x{h}.out"
    inp.tofile(fin)
    cmd = [sys.executable, SCRIPT, app, "--input", fin, "--width", str(w), "--height", str(h),
           "--threads", "1", "--reps", "2", "--out", fout]
    for k, v in params.items():
        cmd += ["--param", f"{k}={v}"]
    tag = f"{app} {w}x{h} {params or ''}"
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL {tag}: exit {p.returncode}\n{p.stderr}")
        fails += 1
        continue
    lines = p.stdout.strip().splitlines()
    j = json.loads(lines[-1])
    assert len(lines) == 1 and set(j) == {"compile_s", "times_ms"} and len(j["times_ms"]) == 2
    dt, ch = OUT[app]
    shape = (h, w) if ch is None else (ch, h, w)
    raw = np.fromfile(fout, dtype=np.uint8)
    if raw.size != int(np.prod(shape)) * np.dtype(dt).itemsize:
        print(f"FAIL {tag}: {raw.size} bytes, want {shape} of {np.dtype(dt).name}")
        fails += 1
        continue
    out = raw.view(dt).reshape(shape)
    if not np.all(np.isfinite(out)):
        print(f"FAIL {tag}: non-finite values")
        fails += 1
        continue
    ref = REF[app](inp, w, h, params)
    assert ref.shape == out.shape, (ref.shape, out.shape)
    if dt == np.uint16:
        diff = np.abs(out.astype(np.int64) - ref.astype(np.int64))
        tol = 0 if app == "blur" else 1
        ok = diff.max() <= tol
        what = f"max |diff| {diff.max()} (tolerance {tol}), {np.count_nonzero(diff)} differ"
    else:
        # rtol 1e-4, plus an atol of 1e-5 times the largest |value| for the outputs that
        # are differences cancelling near zero (unsharp's 2 gray - blur, harris's
        # det - 0.04 trace^2), where float32 rounding alone gives large relative errors.
        scale = float(np.abs(ref).max())
        err = np.abs(out.astype(np.float64) - ref)
        ok = np.allclose(out, ref, rtol=1e-4, atol=1e-5 * scale)
        what = (f"max rel err {(err / np.maximum(np.abs(ref), 1e-30)).max():.2e}, "
                f"max abs err {err.max():.2e} (largest |value| {scale:.2e})")
    print(f"{'ok  ' if ok else 'FAIL'} {tag}: {what}; compile {j['compile_s']:.2f}s")
    fails += not ok

sys.exit(1 if fails else 0)
PYEOF
echo "test_halide_apps: all passed"
