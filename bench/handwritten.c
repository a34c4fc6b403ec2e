/* The example kernels written by hand in C: the same loop nests as examples/*.weft, for the
 * side-by-side benchmark (`cargo run --release -p weft --bin weft-bench`). Each takes the proc's
 * size arguments in order in `s` and its buffers in order in `b`. Compiled with the same compiler
 * and flags as the JIT. */
#include <stdint.h>
#include <stdlib.h>
#include <immintrin.h>

void hw_sgemm(const int64_t *s, void **b) {
    const int64_t M = s[0], N = s[1], K = s[2];
    const float *restrict A = b[0];
    const float *restrict B = b[1];
    float *restrict C = b[2];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            for (int64_t k = 0; k < K; k++)
                C[i * N + j] += A[i * K + k] * B[k * N + j];
}

void hw_blur(const int64_t *s, void **b) {
    const int64_t H = s[0], W = s[1];
    const uint16_t *restrict in = b[0];
    uint16_t *restrict out = b[1];
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

void hw_conv2d_relu(const int64_t *s, void **b) {
    const int64_t N = s[0], C = s[1], K = s[2], H = s[3], W = s[4], R = s[5], S = s[6];
    const int64_t IH = H + R - 1, IW = W + S - 1;
    const float *restrict in = b[0];
    const float *restrict wt = b[1];
    const float *restrict bias = b[2];
    float *restrict out = b[3];
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

void hw_dot(const int64_t *s, void **b) {
    const int64_t n = s[0];
    const float *restrict x = b[0];
    const float *restrict y = b[1];
    float *restrict r = b[2];
    *r = 0.0f;
    for (int64_t i = 0; i < n; i++)
        *r += x[i] * y[i];
}

void hw_sum_i32(const int64_t *s, void **b) {
    const int64_t n = s[0];
    const int32_t *restrict x = b[0];
    int32_t *restrict r = b[1];
    uint32_t acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += (uint32_t) x[i];
    *r = (int32_t) acc;
}

void hw_vec_fma(const int64_t *s, void **b) {
    const int64_t n = s[0];
    const float *restrict a = b[0];
    const float *restrict bb = b[1];
    float *restrict c = b[2];
    __m512 acc = _mm512_loadu_ps(c);
    for (int64_t i = 0; i < n; i++)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(&a[i * 16]), _mm512_loadu_ps(&bb[i * 16]), acc);
    _mm512_storeu_ps(c, acc);
}
