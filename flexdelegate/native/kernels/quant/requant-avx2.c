/* The AVX2 output stage over a row of channels (requant.h), 16 at a time. */
#if defined(__x86_64__)
#include "requant-avx2.h"

__attribute__((target("avx2,fma")))
void fx_qs8_requant_row_avx2(size_t n, const int32_t *acc, const int32_t *m, const int32_t *shift,
                             size_t c0, const fx_qs8_out *o, int8_t *y) {
  for (size_t c = 0; c < n; c += 16) {
    const size_t nc = n - c < 16 ? n - c : 16;
    int32_t ab[16] = {0}, mb[16] = {0}, sb[16] = {0};
    const int32_t *pa = acc + c, *pm = m + c, *ps = shift + c;
    if (nc < 16) { /* a partial block reads padded copies, never past n */
      for (size_t i = 0; i < nc; i++) ab[i] = pa[i], mb[i] = pm[i], sb[i] = ps[i];
      pa = ab, pm = mb, ps = sb;
    }
    fx_rq8_avx2 r0, r1;
    fx_rq8_init_avx2(&r0, pm, ps, fx_rq8_away_avx2(o, c0 + c), o);
    fx_rq8_init_avx2(&r1, pm + 8, ps + 8, fx_rq8_away_avx2(o, c0 + c + 8), o);
    const __m256i v0 = fx_rq8_apply_avx2(_mm256_loadu_si256((const __m256i *)pa), &r0);
    const __m256i v1 = fx_rq8_apply_avx2(_mm256_loadu_si256((const __m256i *)(pa + 8)), &r1);
    fx_store_bytes_avx2(y + c, fx_pack16_avx2(v0, v1), nc);
  }
}
#endif
