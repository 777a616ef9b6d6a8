/* Depthwise convolution, AVX2 + FMA: 8 channels per vector, vmaskmov for the channel tail,
 * vpermps to expand input channels when the depth multiplier is > 1. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include "dwconv.h"

#define DW_V __m256
#define DW_VL 8
#define DW_P 4 /* pixels per fast-path step */
#define DW_P3 6 /* 3x3 windows, measured: dwconv_body.inc */
#define DW_FN static inline __attribute__((always_inline, target("avx2,fma")))
#define DW_ENTRY __attribute__((target("avx2,fma")))
#define DW_NAME(x) x##_avx2
#define DW_TAIL_T __m256i
#define DW_TAIL(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define DW_LOAD(p) _mm256_loadu_ps(p)
#define DW_LOADT(p, t) _mm256_maskload_ps((p), (t))
#define DW_STORE(p, v) _mm256_storeu_ps((p), (v))
#define DW_STORET(p, v, t) _mm256_maskstore_ps((p), (t), (v))
#define DW_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define DW_ADD(a, b) _mm256_add_ps((a), (b))
#define DW_MUL(a, b) _mm256_mul_ps((a), (b))
#define DW_SET1(f) _mm256_set1_ps(f)
#define DW_ZERO() _mm256_setzero_ps()
/* Operands swapped: every use is DW_MIN(DW_MAX(value, lo), hi), and x86 min/max return their
 * second operand when one is NaN, so a NaN stays NaN, as in LiteRT (tflite-runtime 2.14's
 * depthwise kernel turns it into hi instead; its conv and fully connected keep it). */
#define DW_MIN(a, b) _mm256_min_ps((b), (a))
#define DW_MAX(a, b) _mm256_max_ps((b), (a))

typedef struct { __m256i idx, m; } dw_exp256;
#define DW_EXP_T dw_exp256
#define DW_EXP_INIT(e, r, mult, n_in) dw_exp_init256(&(e), (r), (mult), (n_in))
#define DW_EXP_LOAD(p, e) _mm256_permutevar8x32_ps(_mm256_maskload_ps((p), (e).m), (e).idx)

__attribute__((target("avx2,fma")))
static void dw_exp_init256(dw_exp256 *e, int r, int mult, int n_in) {
  int idx[8];
  for (int j = 0; j < 8; j++) {
    int k = (r + j) / mult;
    idx[j] = k < 8 ? k : 7;
  }
  e->idx = _mm256_loadu_si256((const __m256i *)idx);
  e->m = DW_TAIL(n_in >= 8 ? 8 : n_in);
}

#include "dwconv_body.inc"
#endif
