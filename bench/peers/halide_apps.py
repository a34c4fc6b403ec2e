"""Halide 21 versions of the pipeline benchmarks (issue 9), with the manual CPU schedules of
the Halide apps of the same names (halide/Halide apps/*/*_generator.cpp): the branch a
generator takes when it is not autoscheduled and its target has no GPU feature.

Usage: python halide_apps.py APP --input FILE --width W --height H --threads T --reps N
                             --out FILE [--param NAME=VALUE ...]

Reads the input image, JIT-compiles the app (for the host target), runs it `reps` times on
`threads` threads, writes the output and prints one JSON line:
{"compile_s": ..., "times_ms": [...]}.

Raw files (input and output) are little-endian, with no header, in numpy's C order:
shape (H, W) for a 2-D image and (C, H, W) for an image with C channels, i.e. Halide's x
innermost, then y, then c (planar channels). W and H are --width and --height; the output has
the input's width and height. Per app (`App` fields below):

  app              input (dtype, shape)           params (defaults)              output
  blur             u16 (H+2, W+2) *               -                              u16 (H, W)
  unsharp          f32 (3, H, W)                  -                              f32 (3, H, W)
  harris           f32 (3, H, W) **               -                              f32 (H, W)
  interpolate      f32 (4, H, W) (RGBA)           -                              f32 (3, H, W)
  bilateral_grid   f32 (H, W)                     r_sigma=0.1                    f32 (H, W)
  local_laplacian  u16 (3, H, W)                  levels=8 alpha=1 beta=1        u16 (3, H, W)

  *  blur has no boundary condition: its input file carries a 1-pixel border (it holds the
     pixels at x, y in [-1, W] x [-1, H]).
  ** harris has no boundary condition either; like apps/harris/filter.cpp, which pads the
     image by 32 on each side, the input is padded here with zeros by 32 pixels in x and y.
  The other apps clamp their input themselves (BoundaryConditions::repeat_edge), so their
  inputs are exactly W x H.

Vector widths: where a generator asks natural_vector_size<float>() (unsharp, harris,
interpolate), this asks the JIT target the same (16 lanes of f32 on an AVX-512 host, 8 on an
AVX2 one); bilateral_grid and local_laplacian write 8 in their schedules and get 8.

Sizes: the schedules' splits of the output shift their last tile inwards (Halide's default
tail strategy), so, as with the generators, an image must hold at least one tile: W at least
the vector width and H at least the row split (8 for blur and bilateral_grid, 32 for unsharp,
harris and interpolate, 64 for local_laplacian); smaller images fail in realize.
"""

import argparse
import json
import os
import sys
import time


class App:
    """What main needs to run one app.

    inp: the ImageParam; out: the output Func; out_type: its Halide type; in_dtype: the numpy
    dtype of the input file; in_channels / out_channels: None for 2-D images, else the channel
    count (the file holds (C, H, W)); border: pixels around the image that the input file
    already holds; pad: pixels of zeros added around the image here before the run; params:
    {name: (default, python type)}; bind(values): sets the Halide Params from the values of
    `params` (the defaults, overridden by --param)."""

    def __init__(self, inp, out, out_type, in_dtype, in_channels=None, out_channels=None,
                 border=0, pad=0, params=None, bind=None):
        self.inp, self.out, self.out_type = inp, out, out_type
        self.in_dtype, self.in_channels, self.out_channels = in_dtype, in_channels, out_channels
        self.border, self.pad = border, pad
        self.params = params or {}
        self.bind = bind or (lambda values: None)


def natural_f32_lanes(hl):
    """natural_vector_size<float>() of the target the JIT compiles for (the host)."""
    return hl.get_jit_target_from_environment().natural_vector_size(hl.Float(32))


def blur(hl):
    """3x3 box blur in u16, separable: blur_x over three columns, blur_y over three rows."""
    import numpy as np

    x, y, yi = hl.Var("x"), hl.Var("y"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    # apps/blur/halide_blur_generator.cpp, CPU schedule.
    by.split(y, y, yi, 8).parallel(y).vectorize(x, 8)
    bx.store_at(by, y).compute_at(by, yi).vectorize(x, 8)
    return App(inp, by, hl.UInt(16), np.uint16, border=1)


def unsharp(hl):
    """apps/unsharp/unsharp_generator.cpp: gray, a 7-tap Gaussian (sigma 1.5) in y then x,
    sharpen = 2 gray - blur, output = (sharpen / gray) * input. repeat_edge on the input for
    gray; the output multiplies the unclamped input."""
    import numpy as np

    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    sigma = np.float32(1.5)  # GeneratorParam sigma
    k_pi = np.float32(3.14159265358979310000)
    # C++: exp(-x * x / (2 * sigma * sigma)) / (sqrtf(2 * kPi) * sigma), the divisor in f32.
    two_sigma2 = float(np.float32(2) * sigma * sigma)
    norm = float(np.sqrt(np.float32(2) * k_pi, dtype=np.float32) * sigma)
    kernel = hl.Func("kernel")
    kernel[x] = hl.exp(-x * x / hl.f32(two_sigma2)) / hl.f32(norm)

    bounded = hl.BoundaryConditions.repeat_edge(inp)
    gray = hl.Func("gray")
    gray[x, y] = (hl.f32(0.299) * bounded[x, y, 0] + hl.f32(0.587) * bounded[x, y, 1]
                  + hl.f32(0.114) * bounded[x, y, 2])
    blur_y = hl.Func("blur_y")
    blur_y[x, y] = (kernel[0] * gray[x, y]
                    + kernel[1] * (gray[x, y - 1] + gray[x, y + 1])
                    + kernel[2] * (gray[x, y - 2] + gray[x, y + 2])
                    + kernel[3] * (gray[x, y - 3] + gray[x, y + 3]))
    blur_x = hl.Func("blur_x")
    blur_x[x, y] = (kernel[0] * blur_y[x, y]
                    + kernel[1] * (blur_y[x - 1, y] + blur_y[x + 1, y])
                    + kernel[2] * (blur_y[x - 2, y] + blur_y[x + 2, y])
                    + kernel[3] * (blur_y[x - 3, y] + blur_y[x + 3, y]))
    sharpen = hl.Func("sharpen")
    sharpen[x, y] = 2 * gray[x, y] - blur_x[x, y]
    ratio = hl.Func("ratio")
    ratio[x, y] = sharpen[x, y] / gray[x, y]
    output = hl.Func("output")
    output[x, y, c] = ratio[x, y] * inp[x, y, c]

    # CPU schedule ("1.93ms on an Intel i9-9960X using 16 threads").
    yo, yi = hl.Var("yo"), hl.Var("yi")
    vec = natural_f32_lanes(hl)
    output.split(y, yo, yi, 32).vectorize(x, vec).parallel(yo).reorder(x, c, yi, yo)
    gray.compute_at(output, yi).store_at(output, yo).vectorize(x, vec)
    blur_y.compute_at(output, yi).store_at(output, yo).vectorize(x, vec)
    ratio.compute_at(output, yi).store_at(output, yo).vectorize(x, vec)
    return App(inp, output, hl.Float(32), np.float32, in_channels=3, out_channels=3)


def harris(hl):
    """apps/harris/harris_generator.cpp: gray, Sobel-like gradients Ix, Iy (/12), the 3x3 sums
    of Ix^2, Iy^2, IxIy, response det - 0.04 trace^2. No boundary condition: the output at
    (x, y) reads the input in [x-2, x+2] x [y-2, y+2] (see `pad`)."""
    import numpy as np

    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    gray = hl.Func("gray")
    gray[x, y] = (hl.f32(0.299) * inp[x, y, 0] + hl.f32(0.587) * inp[x, y, 1]
                  + hl.f32(0.114) * inp[x, y, 2])
    m1, m2 = hl.f32(-1.0 / 12), hl.f32(-2.0 / 12)
    p1, p2 = hl.f32(1.0 / 12), hl.f32(2.0 / 12)
    Iy = hl.Func("Iy")
    Iy[x, y] = (gray[x - 1, y - 1] * m1 + gray[x - 1, y + 1] * p1
                + gray[x, y - 1] * m2 + gray[x, y + 1] * p2
                + gray[x + 1, y - 1] * m1 + gray[x + 1, y + 1] * p1)
    Ix = hl.Func("Ix")
    Ix[x, y] = (gray[x - 1, y - 1] * m1 + gray[x + 1, y - 1] * p1
                + gray[x - 1, y] * m2 + gray[x + 1, y] * p2
                + gray[x - 1, y + 1] * m1 + gray[x + 1, y + 1] * p1)
    Ixx, Iyy, Ixy = hl.Func("Ixx"), hl.Func("Iyy"), hl.Func("Ixy")
    Ixx[x, y] = Ix[x, y] * Ix[x, y]
    Iyy[x, y] = Iy[x, y] * Iy[x, y]
    Ixy[x, y] = Ix[x, y] * Iy[x, y]

    def sum3x3(f):
        return (f[x - 1, y - 1] + f[x - 1, y] + f[x - 1, y + 1]
                + f[x, y - 1] + f[x, y] + f[x, y + 1]
                + f[x + 1, y - 1] + f[x + 1, y] + f[x + 1, y + 1])

    Sxx, Syy, Sxy = hl.Func("Sxx"), hl.Func("Syy"), hl.Func("Sxy")
    Sxx[x, y] = sum3x3(Ixx)
    Syy[x, y] = sum3x3(Iyy)
    Sxy[x, y] = sum3x3(Ixy)
    det, trace = hl.Func("det"), hl.Func("trace")
    det[x, y] = Sxx[x, y] * Syy[x, y] - Sxy[x, y] * Sxy[x, y]
    trace[x, y] = Sxx[x, y] + Syy[x, y]
    output = hl.Func("output")
    output[x, y] = det[x, y] - hl.f32(0.04) * trace[x, y] * trace[x, y]

    # CPU schedule ("0.92ms on an Intel i9-9960X using 16 threads").
    yi = hl.Var("yi")
    vec = natural_f32_lanes(hl)
    output.split(y, y, yi, 32).parallel(y).vectorize(x, vec)
    gray.store_at(output, y).compute_at(output, yi).vectorize(x, vec)
    Ix.store_at(output, y).compute_at(output, yi).vectorize(x, vec)
    Iy.store_at(output, y).compute_at(output, yi).vectorize(x, vec)
    Ix.compute_with(Iy, x)
    return App(inp, output, hl.Float(32), np.float32, in_channels=3, pad=32)


def interpolate(hl):
    """apps/interpolate/interpolate_generator.cpp: pyramid interpolation of an RGBA image
    (premultiplied by alpha, 10 levels, downsampling [1 2 1]/4, upsampling by averaging, a
    clamp at level 4), normalized by alpha. repeat_edge on the input."""
    import numpy as np

    levels = 10  # GeneratorParam levels
    x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    # Input must have four color channels - rgba
    inp.dim(2).set_bounds(0, 4)

    def funcs(name):
        return [hl.Func(f"{name}_{i}") for i in range(levels)]

    downsampled, downx = funcs("downsampled"), funcs("downx")
    interpolated, upsampled, upsampledx = funcs("interpolated"), funcs("upsampled"), funcs(
        "upsampledx")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    downsampled[0][x, y, c] = hl.select(c < 3, clamped[x, y, c] * clamped[x, y, 3],
                                        clamped[x, y, 3])
    for l in range(1, levels):
        prev = downsampled[l - 1]
        if l == 4:
            # The generator's boundary condition at a middle level (its footprint would
            # otherwise reach 512 pixels off each edge).
            w = inp.width() // (1 << (l - 1))
            h = inp.height() // (1 << (l - 1))
            prev = hl.lambda_func(x, y, c, prev[hl.clamp(x, 0, w), hl.clamp(y, 0, h), c])
        downx[l][x, y, c] = (prev[x * 2 - 1, y, c] + 2.0 * prev[x * 2, y, c]
                             + prev[x * 2 + 1, y, c]) * 0.25
        downsampled[l][x, y, c] = (downx[l][x, y * 2 - 1, c] + 2.0 * downx[l][x, y * 2, c]
                                   + downx[l][x, y * 2 + 1, c]) * 0.25
    interpolated[levels - 1][x, y, c] = downsampled[levels - 1][x, y, c]
    for l in range(levels - 2, -1, -1):
        upsampledx[l][x, y, c] = (interpolated[l + 1][x // 2, y, c]
                                  + interpolated[l + 1][(x + 1) // 2, y, c]) / 2.0
        upsampled[l][x, y, c] = (upsampledx[l][x, y // 2, c]
                                 + upsampledx[l][x, (y + 1) // 2, c]) / 2.0
        alpha = 1.0 - downsampled[l][x, y, 3]
        interpolated[l][x, y, c] = downsampled[l][x, y, c] + alpha * upsampled[l][x, y, c]
    normalize = hl.Func("normalize")
    normalize[x, y, c] = interpolated[0][x, y, c] / interpolated[0][x, y, 3]

    # CPU schedule ("4.54ms on an Intel i9-9960X using 16 threads").
    xo, xi, yo, yi = hl.Var("xo"), hl.Var("xi"), hl.Var("yo"), hl.Var("yi")
    vec = natural_f32_lanes(hl)
    for l in range(1, levels - 1):
        (downsampled[l].compute_root().never_partition([x]).reorder(x, c, y)
         .split(y, yo, yi, 8).parallel(yo).vectorize(x, vec))
    (downsampled[0].clone_in(downx[1]).store_at(downsampled[1], yo)
     .compute_at(downsampled[1], yi).reorder(c, x, y).unroll(c).vectorize(x, vec)
     .never_partition([y]))
    (normalize.bound(x, 0, inp.width()).bound(y, 0, inp.height()).bound(c, 0, 3)
     .never_partition([y]).split(x, xo, xi, vec).split(y, yo, yi, 32)
     .reorder(xi, c, xo, yi, yo).unroll(c).vectorize(xi).parallel(yo))
    for l in range(1, levels):
        (interpolated[l].store_at(normalize, yo).compute_at(normalize, yi)
         .never_partition_all().vectorize(x, vec))
    return App(inp, normalize, hl.Float(32), np.float32, in_channels=4, out_channels=3)


def bilateral_grid(hl):
    """apps/bilateral_grid/bilateral_grid_generator.cpp: a bilateral grid (s_sigma 8, range
    cells of r_sigma) built by a histogram (an update over an 8x8 RDom), blurred [1 4 6 4 1] in
    z, x, y, sampled trilinearly and normalized. repeat_edge on the input for the grid."""
    import numpy as np

    s_sigma = 8  # GeneratorParam s_sigma
    x, y, z, c = hl.Var("x"), hl.Var("y"), hl.Var("z"), hl.Var("c")
    inp = hl.ImageParam(hl.Float(32), 2, "input")
    r_sigma = hl.Param(hl.Float(32), "r_sigma")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    r = hl.RDom([hl.Range(0, s_sigma), hl.Range(0, s_sigma)])
    val = clamped[x * s_sigma + r.x - s_sigma // 2, y * s_sigma + r.y - s_sigma // 2]
    val = hl.clamp(val, 0.0, 1.0)
    zi = hl.i32(val * (1.0 / r_sigma) + 0.5)
    histogram = hl.Func("histogram")
    histogram[x, y, z, c] = hl.f32(0)
    histogram[x, y, zi, c] += hl.mux(c, [val, hl.f32(1)])

    blurx, blury, blurz = hl.Func("blurx"), hl.Func("blury"), hl.Func("blurz")
    blurz[x, y, z, c] = (histogram[x, y, z - 2, c] + histogram[x, y, z - 1, c] * 4
                         + histogram[x, y, z, c] * 6 + histogram[x, y, z + 1, c] * 4
                         + histogram[x, y, z + 2, c])
    blurx[x, y, z, c] = (blurz[x - 2, y, z, c] + blurz[x - 1, y, z, c] * 4
                         + blurz[x, y, z, c] * 6 + blurz[x + 1, y, z, c] * 4
                         + blurz[x + 2, y, z, c])
    blury[x, y, z, c] = (blurx[x, y - 2, z, c] + blurx[x, y - 1, z, c] * 4
                         + blurx[x, y, z, c] * 6 + blurx[x, y + 1, z, c] * 4
                         + blurx[x, y + 2, z, c])

    val = hl.clamp(inp[x, y], 0.0, 1.0)
    zv = val * (1.0 / r_sigma)
    zi = hl.i32(zv)
    zf = zv - zi
    xf = hl.f32(x % s_sigma) / s_sigma
    yf = hl.f32(y % s_sigma) / s_sigma
    xi = x // s_sigma
    yi = y // s_sigma
    interpolated = hl.Func("interpolated")
    interpolated[x, y, c] = hl.lerp(
        hl.lerp(hl.lerp(blury[xi, yi, zi, c], blury[xi + 1, yi, zi, c], xf),
                hl.lerp(blury[xi, yi + 1, zi, c], blury[xi + 1, yi + 1, zi, c], xf), yf),
        hl.lerp(hl.lerp(blury[xi, yi, zi + 1, c], blury[xi + 1, yi, zi + 1, c], xf),
                hl.lerp(blury[xi, yi + 1, zi + 1, c], blury[xi + 1, yi + 1, zi + 1, c], xf),
                yf),
        zf)
    output = hl.Func("bilateral_grid")
    output[x, y] = interpolated[x, y, 0] / interpolated[x, y, 1]

    # CPU schedule ("2.04ms on an Intel i9-9960X using 32 threads at 3.5 GHz using target
    # host"; the generator writes 8 lanes, not natural_vector_size).
    blurz.compute_at(blurx, y).reorder(c, z, x, y).vectorize(x, 8).unroll(c)
    histogram.compute_at(blurz, y)
    histogram.update().reorder(c, r.x, r.y, x, y).unroll(c)
    blurx.compute_root().reorder(c, x, z, y).parallel(y).vectorize(x, 8).unroll(c)
    (blury.compute_at(output, y).store_in(hl.MemoryType.Stack).reorder(c, x, y, z)
     .reorder_storage(c, z, x, y).vectorize(x, 8).unroll(c))
    output.compute_root().parallel(y, 8).vectorize(x, 8)

    def bind(values):
        r_sigma.set(float(values["r_sigma"]))

    return App(inp, output, hl.Float(32), np.float32,
               params={"r_sigma": (0.1, float)}, bind=bind)


def local_laplacian(hl):
    """apps/local_laplacian/local_laplacian_generator.cpp: local Laplacian filter of a u16 RGB
    image (8 pyramid levels, `levels` intensity levels, a remapping LUT scaled by alpha,
    detail scaled by beta), color reintroduced by the ratio to gray. repeat_edge on the input.

    The parameter `alpha` is process.cpp's: like it, the pipeline is given
    alpha / (levels - 1) (apps/local_laplacian/process.cpp runs "8 1 1")."""
    import numpy as np

    J = 8  # GeneratorParam pyramid_levels
    x, y, c, k = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("k")
    inp = hl.ImageParam(hl.UInt(16), 3, "input")
    levels = hl.Param(hl.Int(32), "levels")
    alpha = hl.Param(hl.Float(32), "alpha")
    beta = hl.Param(hl.Float(32), "beta")

    def downsample(f):
        # Downsample with a 1 3 3 1 filter.
        dx, dy = hl.Func("downx"), hl.Func("downy")
        _ = hl._
        dx[x, y, _] = (f[2 * x - 1, y, _] + 3.0 * (f[2 * x, y, _] + f[2 * x + 1, y, _])
                       + f[2 * x + 2, y, _]) / 8.0
        dy[x, y, _] = (dx[x, 2 * y - 1, _] + 3.0 * (dx[x, 2 * y, _] + dx[x, 2 * y + 1, _])
                       + dx[x, 2 * y + 2, _]) / 8.0
        return dy

    def upsample(f):
        # Upsample using bilinear interpolation.
        ux, uy = hl.Func("upx"), hl.Func("upy")
        _ = hl._
        ux[x, y, _] = hl.lerp(f[(x + 1) // 2, y, _], f[(x - 1) // 2, y, _],
                              ((x % 2) * 2 + 1) / 4.0)
        uy[x, y, _] = hl.lerp(ux[x, (y + 1) // 2, _], ux[x, (y - 1) // 2, _],
                              ((y % 2) * 2 + 1) / 4.0)
        return uy

    # The remapping function as a lookup table.
    remap = hl.Func("remap")
    fx = hl.f32(x) / 256.0
    remap[x] = alpha * fx * hl.exp(-fx * fx / 2.0)
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    floating = hl.Func("floating")
    floating[x, y, c] = clamped[x, y, c] / 65535.0
    gray = hl.Func("gray")
    gray[x, y] = (hl.f32(0.299) * floating[x, y, 0] + hl.f32(0.587) * floating[x, y, 1]
                  + hl.f32(0.114) * floating[x, y, 2])

    # The processed Gaussian pyramid (a LUT with 256 entries per intensity level).
    gPyramid = [hl.Func(f"gPyramid_{j}") for j in range(J)]
    level = k * (1.0 / (levels - 1))
    idx = gray[x, y] * hl.f32(levels - 1) * 256.0
    idx = hl.clamp(hl.i32(idx), 0, (levels - 1) * 256)
    gPyramid[0][x, y, k] = beta * (gray[x, y] - level) + level + remap[idx - 256 * k]
    for j in range(1, J):
        gPyramid[j][x, y, k] = downsample(gPyramid[j - 1])[x, y, k]
    # Its Laplacian pyramid.
    lPyramid = [hl.Func(f"lPyramid_{j}") for j in range(J)]
    lPyramid[J - 1][x, y, k] = gPyramid[J - 1][x, y, k]
    for j in range(J - 2, -1, -1):
        lPyramid[j][x, y, k] = gPyramid[j][x, y, k] - upsample(gPyramid[j + 1])[x, y, k]
    # The Gaussian pyramid of the input.
    inGPyramid = [hl.Func(f"inGPyramid_{j}") for j in range(J)]
    inGPyramid[0][x, y] = gray[x, y]
    for j in range(1, J):
        inGPyramid[j][x, y] = downsample(inGPyramid[j - 1])[x, y]
    # The Laplacian pyramid of the output.
    outLPyramid = [hl.Func(f"outLPyramid_{j}") for j in range(J)]
    for j in range(J):
        lv = inGPyramid[j][x, y] * hl.f32(levels - 1)
        li = hl.clamp(hl.i32(lv), 0, levels - 2)
        lf = lv - hl.f32(li)
        outLPyramid[j][x, y] = ((1.0 - lf) * lPyramid[j][x, y, li]
                                + lf * lPyramid[j][x, y, li + 1])
    # The Gaussian pyramid of the output.
    outGPyramid = [hl.Func(f"outGPyramid_{j}") for j in range(J)]
    outGPyramid[J - 1][x, y] = outLPyramid[J - 1][x, y]
    for j in range(J - 2, -1, -1):
        outGPyramid[j][x, y] = upsample(outGPyramid[j + 1])[x, y] + outLPyramid[j][x, y]
    # Reintroduce color.
    color = hl.Func("color")
    eps = hl.f32(0.01)
    color[x, y, c] = outGPyramid[0][x, y] * (floating[x, y, c] + eps) / (gray[x, y] + eps)
    output = hl.Func("output")
    output[x, y, c] = hl.u16(hl.clamp(color[x, y, c], 0.0, 1.0) * 65535.0)

    # CPU schedule ("21.4ms on an Intel i9-9960X using 32 threads at 3.7 GHz, using the
    # target x86-64-avx2"; the generator writes 8 lanes).
    remap.compute_root()
    yo = hl.Var("yo")
    output.reorder(c, x, y).split(y, yo, y, 64).parallel(yo).vectorize(x, 8)
    gray.compute_root().parallel(y, 32).vectorize(x, 8)
    for j in range(1, 5):
        inGPyramid[j].compute_root().parallel(y, 32).vectorize(x, 8)
        (gPyramid[j].compute_root().reorder_storage(x, k, y).reorder(k, y)
         .parallel(y, 8).vectorize(x, 8))
        (outGPyramid[j].store_at(output, yo).compute_at(output, y).fold_storage(y, 4)
         .vectorize(x, 8))
    outGPyramid[0].compute_at(output, y).vectorize(x, 8)
    for j in range(5, J):
        inGPyramid[j].compute_root()
        gPyramid[j].compute_root().parallel(k)
        outGPyramid[j].compute_root()

    def bind(values):
        n = int(values["levels"])
        levels.set(n)
        alpha.set(float(values["alpha"]) / (n - 1))
        beta.set(float(values["beta"]))

    return App(inp, output, hl.UInt(16), np.uint16, in_channels=3, out_channels=3,
               params={"levels": (8, int), "alpha": (1.0, float), "beta": (1.0, float)},
               bind=bind)


APPS = {
    "blur": blur,
    "unsharp": unsharp,
    "harris": harris,
    "interpolate": interpolate,
    "bilateral_grid": bilateral_grid,
    "local_laplacian": local_laplacian,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("app", choices=sorted(APPS))
    ap.add_argument("--input", required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--height", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", required=True)
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override a scalar parameter of the app (repeatable)")
    a = ap.parse_args()
    # The Halide runtime reads its thread count when its pool starts.
    os.environ["HL_NUM_THREADS"] = str(a.threads)
    import halide as hl
    import numpy as np

    app = APPS[a.app](hl)
    values = {name: default for name, (default, _) in app.params.items()}
    for item in a.param:
        name, eq, text = item.partition("=")
        if not eq or name not in app.params:
            ap.error(f"--param {item}: {a.app} has parameters {sorted(app.params) or 'none'}")
        try:
            values[name] = app.params[name][1](text)
        except ValueError:
            ap.error(f"--param {item}: not a {app.params[name][1].__name__}")
    app.bind(values)

    w, h = a.width, a.height
    b, p = app.border, app.pad
    shape = (h + 2 * b, w + 2 * b)
    if app.in_channels:
        shape = (app.in_channels,) + shape
    data = np.fromfile(a.input, dtype=app.in_dtype)
    if data.size != int(np.prod(shape)):
        sys.exit(f"{a.input}: {data.size} values, {a.app} wants {shape} of {app.in_dtype.__name__}")
    data = data.reshape(shape)
    if p:
        padded = np.zeros(shape[:-2] + (shape[-2] + 2 * p, shape[-1] + 2 * p), app.in_dtype)
        padded[..., p:p + shape[-2], p:p + shape[-1]] = data
        data = padded
    data = np.ascontiguousarray(data)
    ib = hl.Buffer(data)
    ib.set_min([-(b + p), -(b + p)] + ([0] if app.in_channels else []))
    app.inp.set(ib)

    t = time.perf_counter()
    app.out.compile_jit()
    compile_s = time.perf_counter() - t
    out = hl.Buffer(app.out_type, [w, h] + ([app.out_channels] if app.out_channels else []))
    app.out.realize(out)
    times = []
    for _ in range(a.reps):
        t = time.perf_counter()
        app.out.realize(out)
        times.append((time.perf_counter() - t) * 1e3)
    np.asarray(out).tofile(a.out)
    print(json.dumps({"compile_s": compile_s, "times_ms": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
