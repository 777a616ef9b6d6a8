/* Winograd transforms, AVX-512F: 16 channels per vector, masked channel tails. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include "transforms.h"

#define WG_V __m512
#define WG_VL 16
#define WG_FN static inline __attribute__((always_inline, target("avx512f")))
#define WG_ENTRY __attribute__((target("avx512f")))
#define WG_NAME(x) x##_avx512f
#define WG_ADD(a, b) _mm512_add_ps((a), (b))
#define WG_SUB(a, b) _mm512_sub_ps((a), (b))
#define WG_MUL(a, k) _mm512_mul_ps((a), _mm512_set1_ps(k))
#define WG_FMA(a, k, c) _mm512_fmadd_ps((a), _mm512_set1_ps(k), (c))
#define WG_VADD(a, b) _mm512_add_ps((a), (b))
#define WG_TAIL_T __mmask16
#define WG_TAIL(n) ((__mmask16)((1u << (n)) - 1u))
#define WG_LOAD(p) _mm512_loadu_ps(p)
#define WG_LOADT(p, t) _mm512_maskz_loadu_ps((t), (p))
#define WG_STORE(p, v) _mm512_storeu_ps((p), (v))
#define WG_STORET(p, v, t) _mm512_mask_storeu_ps((p), (t), (v))
#define WG_ZERO() _mm512_setzero_ps()
#define WG_SET1(f) _mm512_set1_ps(f)
/* Operands swapped: every use clamps a value (a) to a bound (b), and x86 min/max return the
 * second operand when one is NaN: this way a NaN stays NaN, as in TFLite. */
#define WG_MIN(a, b) _mm512_min_ps((b), (a))
#define WG_MAX(a, b) _mm512_max_ps((b), (a))

#include "transforms_2d.inc"
#endif
