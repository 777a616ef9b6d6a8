/* The NEON output stage over a row of channels (requant.h), 16 at a time. */
#if defined(__aarch64__)
#include "requant-neon.h"

void fx_qs8_requant_row_neon(size_t n, const int32_t *acc, const int32_t *m, const int32_t *shift,
                             size_t c0, const fx_qs8_out *o, int8_t *y) {
  for (size_t c = 0; c < n; c += 16) {
    const size_t nc = n - c < 16 ? n - c : 16;
    int32_t ab[16] = {0}, mb[16] = {0}, sb[16] = {0};
    const int32_t *pa = acc + c, *pm = m + c, *ps = shift + c;
    if (nc < 16) { /* a partial block reads padded copies, never past n */
      for (size_t i = 0; i < nc; i++) ab[i] = pa[i], mb[i] = pm[i], sb[i] = ps[i];
      pa = ab, pm = mb, ps = sb;
    }
    int32x4_t v[4];
    for (int q = 0; q < 4; q++) {
      const fx_rq4_neon r = fx_rq4_init_neon(pm + 4 * q, ps + 4 * q, fx_rq4_away_neon(o, c0 + c + 4 * (size_t)q), o);
      v[q] = fx_rq4_apply_neon(vld1q_s32(pa + 4 * q), &r);
    }
    fx_store_bytes_neon(y + c, vcombine_s8(fx_pack8_neon(v[0], v[1]), fx_pack8_neon(v[2], v[3])), nc);
  }
}
#endif
