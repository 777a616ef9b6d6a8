/* MAX_POOL_2D on int8 / uint8 (NHWC), as TFLite's integer kernels: the max of the in-bounds
 * taps, clamped to the fused activation's quantized range. No arithmetic, so no rounding: the
 * result is exact on every runtime. */
#include "ops.h"

typedef struct {
  const void *x;
  void *y;
  int H, W, C, OH, OW;
  fx_window w;
  int32_t lo, hi;
} maxpool_ctx;

/* The row loop for one element type T (int8_t / uint8_t). */
#define FX_MAXPOOL_ROWS(T, name)                                                        \
  static void name(void *vctx, size_t begin, size_t end) {                              \
    const maxpool_ctx *c = (const maxpool_ctx *)vctx;                                   \
    const int H = c->H, W = c->W, C = c->C, OH = c->OH, OW = c->OW;                     \
    const int kh = c->w.kh, kw = c->w.kw, sh = c->w.stride_h, sw = c->w.stride_w;      \
    const T lo = (T)c->lo, hi = (T)c->hi;                                               \
    for (size_t r = begin; r < end; ++r) {                                              \
      const int b = (int)(r / (size_t)OH), oy = (int)(r % (size_t)OH);                  \
      const int iy0 = oy * sh - c->w.pad_top;                                           \
      const int fy0 = iy0 < 0 ? -iy0 : 0, fy1 = (H - iy0) < kh ? (H - iy0) : kh;        \
      const T *xb = (const T *)c->x + (size_t)b * H * W * C;                            \
      T *yr = (T *)c->y + r * (size_t)OW * C;                                           \
      for (int ox = 0; ox < OW; ++ox) {                                                 \
        const int ix0 = ox * sw - c->w.pad_left;                                        \
        const int fx0 = ix0 < 0 ? -ix0 : 0, fx1 = (W - ix0) < kw ? (W - ix0) : kw;      \
        T *restrict yp = yr + (size_t)ox * C;                                           \
        for (int ch = 0; ch < C; ++ch) yp[ch] = lo;                                     \
        for (int fy = fy0; fy < fy1; ++fy)                                              \
          for (int fx = fx0; fx < fx1; ++fx) {                                          \
            const T *restrict xp = xb + ((size_t)(iy0 + fy) * W + (size_t)(ix0 + fx)) * C; \
            for (int ch = 0; ch < C; ++ch) yp[ch] = yp[ch] < xp[ch] ? xp[ch] : yp[ch];  \
          }                                                                             \
        for (int ch = 0; ch < C; ++ch) yp[ch] = yp[ch] > hi ? hi : yp[ch];              \
      }                                                                                 \
    }                                                                                   \
  }
FX_MAXPOOL_ROWS(int8_t, maxpool_rows_s8)
FX_MAXPOOL_ROWS(uint8_t, maxpool_rows_u8)
#undef FX_MAXPOOL_ROWS

void fx_maxpool_q8(fx_pool *pool, int is_unsigned, const void *x, const fx_shape *xs, const fx_window *w,
                   void *y, const fx_shape *ys, int32_t lo, int32_t hi) {
  maxpool_ctx c = {x, y, xs->d[1], xs->d[2], xs->d[3], ys->d[1], ys->d[2], *w, lo, hi};
  fx_window_rows(pool, ys, w, is_unsigned ? maxpool_rows_u8 : maxpool_rows_s8, &c);
}

void fx_clamp_q8(int is_unsigned, const void *x, void *y, size_t n, int32_t lo, int32_t hi) {
  if (is_unsigned) {
    const uint8_t *restrict a = x;
    uint8_t *restrict b = y;
    for (size_t i = 0; i < n; i++) b[i] = a[i] < lo ? (uint8_t)lo : a[i] > hi ? (uint8_t)hi : a[i];
  } else {
    const int8_t *restrict a = x;
    int8_t *restrict b = y;
    for (size_t i = 0; i < n; i++) b[i] = a[i] < lo ? (int8_t)lo : a[i] > hi ? (int8_t)hi : a[i];
  }
}
