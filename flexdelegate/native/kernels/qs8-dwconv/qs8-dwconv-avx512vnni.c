/* AVX-512 VNNI depthwise, 32 channels per panel: qs8-dwconv-avx2.c's scheme on zmm. Input bytes
 * sign-extended to int16 (vpmovsxbw), taps in pairs (the two taps' inputs interleaved by
 * vpunpck{l,h}wd meet their interleaved weights in one vpdpwssd), the 16-lane output stage of
 * requant-avx512.h. On a full 512-bit datapath (Zen 5) a zmm op costs what a ymm op does, so
 * 32 channels take half the instructions of two 16-channel tiles; a last panel of fewer
 * channels is read and written through byte masks (144 = 4 x 32 + 16). */
#if defined(__x86_64__)
#include "../quant/requant-avx512.h"
#include "qs8-dwconv.h"

#define DW_TARGET_ISAS "avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni"
#define DW __attribute__((target(DW_TARGET_ISAS), always_inline)) static inline
#define DW_MAX_PAIRS 32

/* 32 input bytes widened; a partial tile reads its first channels only (mask k). */
DW __m512i dw_load_x(const int8_t *p, const int full, __mmask32 k) {
  return _mm512_cvtepi8_epi16(full ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi8(k, p));
}

/* Taps t and t + 1 of one pixel into the accumulators: vpunpck works within 128-bit lanes, so
 * lo holds channels {0-3, 8-11, 16-19, 24-27} and hi {4-7, 12-15, 20-23, 28-31}, put in order
 * once per pixel (|pair sum| <= 2 * 128 * 255: exact in int32). */
DW void dw_pair(const int8_t *const *in, size_t t, size_t T, size_t c0, const int full, __mmask32 k,
                const __m512i *wp, __m512i *lo, __m512i *hi) {
  const __m512i xa = dw_load_x(in[t] + c0, full, k);
  const __m512i xb = t + 1 < T ? dw_load_x(in[t + 1] + c0, full, k) : _mm512_setzero_si512();
  *lo = _mm512_dpwssd_epi32(*lo, _mm512_unpacklo_epi16(xa, xb), wp[0]);
  *hi = _mm512_dpwssd_epi32(*hi, _mm512_unpackhi_epi16(xa, xb), wp[1]);
}

/* The accumulators' qwords in channel order: channels 0-15 and 16-31. */
#define DW_FIRST _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11)
#define DW_LAST _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15)

/* The 16-lane output stage on both halves (`lean` a constant of the loop), one 32-byte store. */
#define DW_STORE16(y, lo, hi)                                                                                  \
  do {                                                                                                         \
    const __m256i v_ = _mm256_inserti128_si256(                                                                \
        _mm256_castsi128_si256(fx_rq16_apply_avx512(_mm512_permutex2var_epi64(lo, DW_FIRST, hi), &qa, lean)), \
        fx_rq16_apply_avx512(_mm512_permutex2var_epi64(lo, DW_LAST, hi), &qb, lean), 1);                      \
    if (full) _mm256_storeu_si256((__m256i *)(y), v_);                                                        \
    else _mm256_mask_storeu_epi8(y, k, v_);                                                                    \
  } while (0)

/* Any other stage (a lane shifting left, saturating roundings): requant-avx2.h per 8 lanes. */
#define DW_STORE8(y, lo, hi)                                                                        \
  do {                                                                                              \
    const __m512i a_ = _mm512_permutex2var_epi64(lo, DW_FIRST, hi);                                 \
    const __m512i b_ = _mm512_permutex2var_epi64(lo, DW_LAST, hi);                                  \
    const __m128i v0_ = fx_pack16_avx2(fx_rq8_apply_mode_avx2(_mm512_castsi512_si256(a_), &r[0], single),     \
                                       fx_rq8_apply_mode_avx2(_mm512_extracti64x4_epi64(a_, 1), &r[1], single)); \
    const __m128i v1_ = fx_pack16_avx2(fx_rq8_apply_mode_avx2(_mm512_castsi512_si256(b_), &r[2], single),     \
                                       fx_rq8_apply_mode_avx2(_mm512_extracti64x4_epi64(b_, 1), &r[3], single)); \
    _mm256_mask_storeu_epi8(y, k, _mm256_inserti128_si256(_mm256_castsi128_si256(v0_), v1_, 1));    \
  } while (0)

/* Every pixel, two at a time (each weight vector feeds both), stored by STORE. */
#define DW_PIXELS(STORE)                                                                 \
  do {                                                                                   \
    size_t px = 0;                                                                       \
    const int8_t *const *inp = in;                                                       \
    for (; px + 2 <= pixels; px += 2, inp += 2 * T) {                                    \
      __m512i lo0 = blo, hi0 = bhi, lo1 = blo, hi1 = bhi;                                \
      for (size_t t = 0; t < T; t += 2) {                                                \
        dw_pair(inp, t, T, c0, full, k, wp + t, &lo0, &hi0);                             \
        dw_pair(inp + T, t, T, c0, full, k, wp + t, &lo1, &hi1);                         \
      }                                                                                  \
      STORE(out + px * out_stride + c0, lo0, hi0);                                       \
      STORE(out + (px + 1) * out_stride + c0, lo1, hi1);                                 \
    }                                                                                    \
    if (px < pixels) {                                                                   \
      __m512i lo0 = blo, hi0 = bhi;                                                      \
      for (size_t t = 0; t < T; t += 2) dw_pair(inp, t, T, c0, full, k, wp + t, &lo0, &hi0); \
      STORE(out + px * out_stride + c0, lo0, hi0);                                       \
    }                                                                                    \
  } while (0)

/* One panel (channels c0 .. c0 + nc, nc <= 32) over all pixels. T <= 2 * DW_MAX_PAIRS. */
DW void dw_tile(size_t c0, size_t nc, const int full, size_t pixels, const int8_t *const *in, const size_t T,
                const uint8_t *w, int8_t *out, size_t out_stride, const fx_qs8_out *o, const int single) {
  const __mmask32 k = (__mmask32)(nc >= 32 ? ~0u : (1u << nc) - 1u);
  /* the bias in the accumulators' channel order */
  const __m512i b0 = _mm512_loadu_si512(w), b1 = _mm512_loadu_si512(w + 64);
  const __m512i blo = _mm512_permutex2var_epi64(b0, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), b1);
  const __m512i bhi = _mm512_permutex2var_epi64(b0, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), b1);
  const int16_t *wt = (const int16_t *)(w + 128);
  const int32_t *rqp = (const int32_t *)(w + 128 + 64 * T);
  fx_rq8_avx2 r[4];
  for (int i = 0; i < 4; i++) fx_rq8_init_avx2(&r[i], rqp + 8 * i, rqp + 32 + 8 * i, fx_rq8_away_avx2(o, c0 + 8 * i), o);
  fx_rq16_avx512 qa, qb;
  fx_rq16_init_avx512(&qa, &r[0], &r[1]);
  fx_rq16_init_avx512(&qb, &r[2], &r[3]);
  __m512i wp[2 * DW_MAX_PAIRS];
  for (size_t t = 0; t < T; t += 2) {
    const __m512i wa = _mm512_loadu_si512(wt + 32 * t);
    const __m512i wb = t + 1 < T ? _mm512_loadu_si512(wt + 32 * (t + 1)) : _mm512_setzero_si512();
    wp[t] = _mm512_unpacklo_epi16(wa, wb);
    wp[t + 1] = _mm512_unpackhi_epi16(wa, wb);
  }
  if (qa.on && qb.on) {
    if (qa.lean == 1 && qb.lean == 1) {
      const int lean = 1;
      DW_PIXELS(DW_STORE16);
    } else if (qa.lean == FX_RQ16_AWAY_LEAN && qb.lean == FX_RQ16_AWAY_LEAN) { /* tflite-runtime's */
      const int lean = FX_RQ16_AWAY_LEAN;
      DW_PIXELS(DW_STORE16);
    } else {
      const int lean = 0;
      DW_PIXELS(DW_STORE16);
    }
  } else {
    DW_PIXELS(DW_STORE8);
  }
}

#define DW_CT 32
#define DW_ISA avx512vnni
#include "qs8-dwconv-entries.h"
#endif
