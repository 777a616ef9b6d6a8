/* The FXV_* vector vocabulary for AVX-512F (16 floats). See README.md. Structurally the AVX2
 * header with __mmask16 lane masks and vscalefps for 2^n. x86-64 translation units only. */
#ifndef FLEX_SIMD_AVX512F_H
#define FLEX_SIMD_AVX512F_H
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define FXV_ISA "avx512f"
#define FXV_T __m512
#define FXV_M __mmask16
#define FXV_L 16
#define FXV_FN static inline __attribute__((always_inline, target("avx512f")))
#define FXV_ENTRY __attribute__((target("avx512f")))
#define FXV_NAME(x) x##_avx512f

#define FXV_TAIL_T __mmask16
#define FXV_TAIL(n) ((__mmask16)((n) >= 16 ? 0xFFFFu : (1u << (n)) - 1u))
#define FXV_LOAD(p) _mm512_loadu_ps(p)
#define FXV_LOADT(p, t) _mm512_maskz_loadu_ps((t), (p))
#define FXV_STORE(p, v) _mm512_storeu_ps((p), (v))
#define FXV_STORET(p, v, t) _mm512_mask_storeu_ps((p), (t), (v))
#define FXV_TAIL_KEEP(v, t) _mm512_maskz_mov_ps((t), (v))

#define FXV_SET1(f) _mm512_set1_ps(f)
#define FXV_ZERO() _mm512_setzero_ps()
#define FXV_ADD(a, b) _mm512_add_ps((a), (b))
#define FXV_SUB(a, b) _mm512_sub_ps((a), (b))
#define FXV_MUL(a, b) _mm512_mul_ps((a), (b))
#define FXV_DIV(a, b) _mm512_div_ps((a), (b))
#define FXV_SQRT(a) _mm512_sqrt_ps(a)
#define FXV_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define FXV_FNMA(a, b, c) _mm512_fnmadd_ps((a), (b), (c))
#define FXV_FMS(a, b, c) _mm512_fmsub_ps((a), (b), (c))
#define FXV_MIN(a, b) _mm512_min_ps((a), (b)) /* second operand on NaN, as AVX2 */
#define FXV_MAX(a, b) _mm512_max_ps((a), (b))
#define FXV_ABS(a) _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32(INT32_MIN), _mm512_castps_si512(a)))
#define FXV_ROUND(a) _mm512_roundscale_ps((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

#define FXV_LT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define FXV_GE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define FXV_SEL(m, a, b) _mm512_mask_blend_ps((m), (b), (a))
#define FXV_ZERO_IF(m, a) _mm512_maskz_mov_ps((__mmask16)~(m), (a))

/* a * 2^n for integral n (any range: vscalefps, exact). */
#define FXV_SCALE2(a, n) _mm512_scalef_ps((a), (n))
#define FXV_SHL23(v) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(v), 23))

#define FXV_HSUM(v) _mm512_reduce_add_ps(v)
#define FXV_IOTA() _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f)
/* The lanes whose byte p[j] is nonzero (16 bytes read). */
/* dst[c * ds + r] = src[r * ss + c] for r, c < 16: four 8 x 8 blocks transposed in ymm registers
 * (AVX-512F implies AVX2's shuffles; the same sequence as simd-avx2.h's). */
FXV_FN void fxv_transpose8_avx512f(const float *src, ptrdiff_t ss, float *dst, ptrdiff_t ds) {
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
FXV_FN void fxv_transpose_avx512f(const float *src, ptrdiff_t ss, float *dst, ptrdiff_t ds) {
  fxv_transpose8_avx512f(src, ss, dst, ds);
  fxv_transpose8_avx512f(src + 8, ss, dst + 8 * ds, ds);
  fxv_transpose8_avx512f(src + 8 * ss, ss, dst + 8, ds);
  fxv_transpose8_avx512f(src + 8 * ss + 8, ss, dst + 8 * ds + 8, ds);
}
#define FXV_TRANSPOSE(src, ss, dst, ds) fxv_transpose_avx512f((src), (ss), (dst), (ds))
#define FXV_MASK_U8(p) _mm512_test_epi32_mask(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p))), _mm512_set1_epi32(0xFF))
#define FXV_HMAX(v) _mm512_reduce_max_ps(v)
#endif
