/* The FXV_* vector vocabulary for AVX2 + FMA (8 floats). See README.md. Include from an
 * x86-64 translation unit only; every function carries its own target attribute. */
#ifndef FLEX_SIMD_AVX2_H
#define FLEX_SIMD_AVX2_H
#include <immintrin.h>
#include <stddef.h>

#define FXV_ISA "avx2"
#define FXV_T __m256
#define FXV_M __m256 /* a lane mask: all-ones or zero bits per lane */
#define FXV_L 8
#define FXV_FN static inline __attribute__((always_inline, target("avx2,fma")))
#define FXV_ENTRY __attribute__((target("avx2,fma")))
#define FXV_NAME(x) x##_avx2

/* Lanes [0, n) of a partial vector, n in [0, 8]. */
#define FXV_TAIL_T __m256i
#define FXV_TAIL(n) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define FXV_LOAD(p) _mm256_loadu_ps(p)
#define FXV_LOADT(p, t) _mm256_maskload_ps((p), (t)) /* zero past the tail, no access there */
#define FXV_STORE(p, v) _mm256_storeu_ps((p), (v))
#define FXV_STORET(p, v, t) _mm256_maskstore_ps((p), (t), (v))
#define FXV_TAIL_KEEP(v, t) _mm256_and_ps((v), _mm256_castsi256_ps(t)) /* zero past the tail */

#define FXV_SET1(f) _mm256_set1_ps(f)
#define FXV_ZERO() _mm256_setzero_ps()
#define FXV_ADD(a, b) _mm256_add_ps((a), (b))
#define FXV_SUB(a, b) _mm256_sub_ps((a), (b))
#define FXV_MUL(a, b) _mm256_mul_ps((a), (b))
#define FXV_DIV(a, b) _mm256_div_ps((a), (b))
#define FXV_SQRT(a) _mm256_sqrt_ps(a)
#define FXV_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))   /* a*b + c, one rounding */
#define FXV_FNMA(a, b, c) _mm256_fnmadd_ps((a), (b), (c)) /* c - a*b, one rounding */
#define FXV_FMS(a, b, c) _mm256_fmsub_ps((a), (b), (c))   /* a*b - c, one rounding */
/* x86 min/max return their second operand when either is NaN: FXV_MAX(bound, x) keeps a NaN x. */
#define FXV_MIN(a, b) _mm256_min_ps((a), (b))
#define FXV_MAX(a, b) _mm256_max_ps((a), (b))
#define FXV_ABS(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (a))
#define FXV_ROUND(a) _mm256_round_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* Ordered comparisons (false on NaN) and m ? a : b. */
#define FXV_LT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define FXV_GE(a, b) _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define FXV_SEL(m, a, b) _mm256_blendv_ps((b), (a), (m))
#define FXV_ZERO_IF(m, a) _mm256_andnot_ps((m), (a)) /* m ? 0 : a */

/* a * 2^n, n an integral float in [-126, 127]: the power built from its exponent bits. */
FXV_FN __m256 fxv_scale2_avx2(__m256 a, __m256 n) {
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(a, _mm256_castsi256_ps(e));
}
#define FXV_SCALE2(a, n) fxv_scale2_avx2((a), (n))
/* The float whose bits are v's shifted left by 23: 2^(n - 127) when v holds a float whose low
 * mantissa bits are the integer n (the round-by-adding-1.5*2^23 trick). */
#define FXV_SHL23(v) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(v), 23))

FXV_FN float fxv_hsum_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
FXV_FN float fxv_hmax_avx2(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
#define FXV_HSUM(v) fxv_hsum_avx2(v)
/* Lane indices 0..7 as floats, and the lanes whose byte p[j] is nonzero (8 bytes read). */
#define FXV_IOTA() _mm256_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f)
FXV_FN __m256 fxv_mask_u8_avx2(const unsigned char *p) {
  const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(b, _mm256_setzero_si256()));
}
#define FXV_MASK_U8(p) fxv_mask_u8_avx2(p)

/* dst[c * ds + r] = src[r * ss + c] for r, c < 8: an 8 x 8 block transposed in registers. */
FXV_FN void fxv_transpose_avx2(const float *src, ptrdiff_t ss, float *dst, ptrdiff_t ds) {
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss), r2 = _mm256_loadu_ps(src + 2 * ss);
  __m256 r3 = _mm256_loadu_ps(src + 3 * ss), r4 = _mm256_loadu_ps(src + 4 * ss), r5 = _mm256_loadu_ps(src + 5 * ss);
  __m256 r6 = _mm256_loadu_ps(src + 6 * ss), r7 = _mm256_loadu_ps(src + 7 * ss);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  r0 = _mm256_shuffle_ps(t0, t2, 0x44), r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  r2 = _mm256_shuffle_ps(t1, t3, 0x44), r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  r4 = _mm256_shuffle_ps(t4, t6, 0x44), r5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  r6 = _mm256_shuffle_ps(t5, t7, 0x44), r7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(r0, r4, 0x20));
  _mm256_storeu_ps(dst + ds, _mm256_permute2f128_ps(r1, r5, 0x20));
  _mm256_storeu_ps(dst + 2 * ds, _mm256_permute2f128_ps(r2, r6, 0x20));
  _mm256_storeu_ps(dst + 3 * ds, _mm256_permute2f128_ps(r3, r7, 0x20));
  _mm256_storeu_ps(dst + 4 * ds, _mm256_permute2f128_ps(r0, r4, 0x31));
  _mm256_storeu_ps(dst + 5 * ds, _mm256_permute2f128_ps(r1, r5, 0x31));
  _mm256_storeu_ps(dst + 6 * ds, _mm256_permute2f128_ps(r2, r6, 0x31));
  _mm256_storeu_ps(dst + 7 * ds, _mm256_permute2f128_ps(r3, r7, 0x31));
}
#define FXV_TRANSPOSE(src, ss, dst, ds) fxv_transpose_avx2((src), (ss), (dst), (ds))
#define FXV_HMAX(v) fxv_hmax_avx2(v)
#endif
