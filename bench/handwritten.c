/* The example kernels written by hand in C: the same loop nests as examples/*.weft, for the
 * side-by-side benchmark (`cargo run --release -p weft --bin weft-bench`).
 *
 * Each kernel is an ordinary C function taking its sizes and pointers as parameters, the way a
 * person writes it. The benchmark calls it through `hw_<name>(s, b)`, which unpacks the proc's
 * size arguments (in order, in `s`) and buffers (in order, in `b`). The kernels are kept out of
 * line (`noinline`) so that the unpacking cannot change how they are compiled: GCC does not
 * analyse loops whose bounds it has to reload through `s` the way it analyses loops over
 * parameters, and an earlier version of this file that read sizes from `s` inside the loop nest
 * was compiled differently from the very same nest with parameters.
 *
 * Compiled with the same compiler and flags as the JIT. */
#include <stdint.h>
#include <stdlib.h>
#include <immintrin.h>

#define KERNEL static __attribute__((noinline)) void

KERNEL sgemm(int64_t M, int64_t N, int64_t K, const float *restrict A, const float *restrict B,
             float *restrict C) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            for (int64_t k = 0; k < K; k++)
                C[i * N + j] += A[i * K + k] * B[k * N + j];
}

void hw_sgemm(const int64_t *s, void **b) { sgemm(s[0], s[1], s[2], b[0], b[1], b[2]); }

KERNEL blur(int64_t H, int64_t W, const uint16_t *restrict in, uint16_t *restrict out) {
    uint16_t *bx = malloc((size_t) ((H + 2) * W) * sizeof(uint16_t));
    for (int64_t y = 0; y < H + 2; y++)
        for (int64_t x = 0; x < W; x++)
            bx[y * W + x] = (uint16_t) (((uint32_t) in[y * (W + 2) + x] + (uint32_t) in[y * (W + 2) + x + 1] +
                                         (uint32_t) in[y * (W + 2) + x + 2]) / 3u);
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++)
            out[y * W + x] = (uint16_t) (((uint32_t) bx[y * W + x] + (uint32_t) bx[(y + 1) * W + x] +
                                          (uint32_t) bx[(y + 2) * W + x]) / 3u);
    free(bx);
}

void hw_blur(const int64_t *s, void **b) { blur(s[0], s[1], b[0], b[1]); }

KERNEL conv2d_relu(int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t R, int64_t S,
                   const float *restrict in, const float *restrict wt, const float *restrict bias,
                   float *restrict out) {
    const int64_t IH = H + R - 1, IW = W + S - 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++) {
                    float *o = &out[((n * K + k) * H + y) * W + x];
                    *o = bias[k];
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t q = 0; q < S; q++)
                                *o += in[((n * C + c) * IH + y + r) * IW + x + q] * wt[((k * C + c) * R + r) * S + q];
                    *o = *o > 0.0f ? *o : 0.0f;
                }
}

void hw_conv2d_relu(const int64_t *s, void **b) {
    conv2d_relu(s[0], s[1], s[2], s[3], s[4], s[5], s[6], b[0], b[1], b[2], b[3]);
}

KERNEL dot(int64_t n, const float *restrict x, const float *restrict y, float *restrict r) {
    *r = 0.0f;
    for (int64_t i = 0; i < n; i++)
        *r += x[i] * y[i];
}

void hw_dot(const int64_t *s, void **b) { dot(s[0], b[0], b[1], b[2]); }

KERNEL sum_i32(int64_t n, const int32_t *restrict x, int32_t *restrict r) {
    uint32_t acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += (uint32_t) x[i];
    *r = (int32_t) acc;
}

void hw_sum_i32(const int64_t *s, void **b) { sum_i32(s[0], b[0], b[1]); }

KERNEL vec_fma(int64_t n, const float *restrict a, const float *restrict b, float *restrict c) {
    __m512 acc = _mm512_loadu_ps(c);
    for (int64_t i = 0; i < n; i++)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(&a[i * 16]), _mm512_loadu_ps(&b[i * 16]), acc);
    _mm512_storeu_ps(c, acc);
}

void hw_vec_fma(const int64_t *s, void **b) { vec_fma(s[0], b[0], b[1], b[2]); }
