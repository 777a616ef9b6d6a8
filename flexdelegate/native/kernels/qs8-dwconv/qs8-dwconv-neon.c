/* NEON depthwise, 16 channels per panel: per tap, 16 input bytes widened to two int16x8 and
 * multiplied-accumulated with the panel's int16 weights by vmlal(_high)_s16 into four int32x4;
 * output stage requant-neon.h. The 9- and 25-tap kernels have the tap count a constant. */
#if defined(__aarch64__)
#include <string.h>
#include "../quant/requant-neon.h"
#include "qs8-dwconv.h"

#define DW_NEON __attribute__((always_inline)) static inline

DW_NEON int8x16_t dwn_load_x(const int8_t *p, int full, size_t n) {
  if (full) return vld1q_s8(p);
  int8_t buf[16] = {0};
  memcpy(buf, p, n);
  return vld1q_s8(buf);
}

DW_NEON void dwn_tile(size_t c0, size_t nc, int full, size_t pixels, const int8_t *const *in,
                      const size_t T, const uint8_t *w, int8_t *out, size_t out_stride,
                      const fx_qs8_out *o) {
  const int32_t *bias = (const int32_t *)w;
  const int16_t *wt = (const int16_t *)(w + 64);
  const int32_t *rqp = (const int32_t *)(w + 64 + 32 * T);
  fx_rq4_neon rq[4];
  int32x4_t b[4];
  for (int q = 0; q < 4; q++) {
    rq[q] = fx_rq4_init_neon(rqp + 4 * q, rqp + 16 + 4 * q, fx_rq4_away_neon(o, c0 + 4 * (size_t)q), o);
    b[q] = vld1q_s32(bias + 4 * q);
  }
  for (size_t px = 0; px < pixels; px++, in += T) {
    int32x4_t a0 = b[0], a1 = b[1], a2 = b[2], a3 = b[3];
    for (size_t t = 0; t < T; t++) {
      const int8x16_t xb = dwn_load_x(in[t] + c0, full, nc);
      const int16x8_t xl = vmovl_s8(vget_low_s8(xb)), xh = vmovl_high_s8(xb);
      const int16x8_t wl = vld1q_s16(wt + 16 * t), wh = vld1q_s16(wt + 16 * t + 8);
      a0 = vmlal_s16(a0, vget_low_s16(xl), vget_low_s16(wl));
      a1 = vmlal_high_s16(a1, xl, wl);
      a2 = vmlal_s16(a2, vget_low_s16(xh), vget_low_s16(wh));
      a3 = vmlal_high_s16(a3, xh, wh);
    }
    a0 = fx_rq4_apply_neon(a0, &rq[0]);
    a1 = fx_rq4_apply_neon(a1, &rq[1]);
    a2 = fx_rq4_apply_neon(a2, &rq[2]);
    a3 = fx_rq4_apply_neon(a3, &rq[3]);
    fx_store_bytes_neon(out + px * out_stride + c0, vcombine_s8(fx_pack8_neon(a0, a1), fx_pack8_neon(a2, a3)), nc);
  }
}

DW_NEON void dwn_up16(FX_QS8_DW_ARGS) {
  const uint8_t *wp = (const uint8_t *)w;
  const size_t pb = 16 * (4 + 2 * taps + 8);
  size_t c0 = 0;
  for (; c0 + 16 <= channels; c0 += 16, wp += pb)
    dwn_tile(c0, 16, 1, pixels, in, taps, wp, out, out_stride, o);
  if (c0 < channels) dwn_tile(c0, channels - c0, 0, pixels, in, taps, wp, out, out_stride, o);
}

void fx_qs8_dwconv_9__neon(FX_QS8_DW_ARGS) {
  (void)taps;
  dwn_up16(channels, pixels, in, 9, w, out, out_stride, o);
}
void fx_qs8_dwconv_25__neon(FX_QS8_DW_ARGS) {
  (void)taps;
  dwn_up16(channels, pixels, in, 25, w, out, out_stride, o);
}
void fx_qs8_dwconv_any__neon(FX_QS8_DW_ARGS) { dwn_up16(channels, pixels, in, taps, w, out, out_stride, o); }
#endif
