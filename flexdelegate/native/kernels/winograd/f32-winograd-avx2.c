/* Winograd transforms, AVX2 + FMA: 8 channels per vector, vmaskmov channel tails. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include "transforms.h"

#define WG_V __m256
#define WG_VL 8
#define WG_FN static inline __attribute__((always_inline, target("avx2,fma")))
#define WG_ENTRY __attribute__((target("avx2,fma")))
#define WG_NAME(x) x##_avx2
#define WG_ADD(a, b) _mm256_add_ps((a), (b))
#define WG_SUB(a, b) _mm256_sub_ps((a), (b))
#define WG_MUL(a, k) _mm256_mul_ps((a), _mm256_set1_ps(k))
#define WG_FMA(a, k, c) _mm256_fmadd_ps((a), _mm256_set1_ps(k), (c))
#define WG_VADD(a, b) _mm256_add_ps((a), (b))
#define WG_TAIL_T __m256i
#define WG_TAIL(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define WG_LOAD(p) _mm256_loadu_ps(p)
#define WG_LOADT(p, t) _mm256_maskload_ps((p), (t))
#define WG_STORE(p, v) _mm256_storeu_ps((p), (v))
#define WG_STORET(p, v, t) _mm256_maskstore_ps((p), (t), (v))
#define WG_ZERO() _mm256_setzero_ps()
#define WG_SET1(f) _mm256_set1_ps(f)
/* Operands swapped: every use clamps a value (a) to a bound (b), and x86 min/max return the
 * second operand when one is NaN: this way a NaN stays NaN, as in TFLite. */
#define WG_MIN(a, b) _mm256_min_ps((b), (a))
#define WG_MAX(a, b) _mm256_max_ps((b), (a))

#include "transforms_2d.inc"
#endif
