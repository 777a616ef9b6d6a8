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

#define FXV_HSUM(v) _mm512_reduce_add_ps(v)
#define FXV_HMAX(v) _mm512_reduce_max_ps(v)
#endif
