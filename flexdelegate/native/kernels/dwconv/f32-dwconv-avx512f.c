/* Depthwise convolution, AVX-512F: 16 channels per vector, masked loads/stores for the channel
 * tail, vpermps to expand input channels when the depth multiplier is > 1. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include "dwconv.h"

#define DW_V __m512
#define DW_VL 16
#define DW_P 4 /* pixels per fast-path step */
#define DW_P3 0 /* 3x3 windows, not measured on AVX-512 hardware yet: the slide, as before */
#define DW_FN static inline __attribute__((always_inline, target("avx512f")))
#define DW_ENTRY __attribute__((target("avx512f")))
#define DW_NAME(x) x##_avx512f
#define DW_TAIL_T __mmask16
#define DW_TAIL(n) ((__mmask16)((1u << (n)) - 1u))
#define DW_LOAD(p) _mm512_loadu_ps(p)
#define DW_LOADT(p, t) _mm512_maskz_loadu_ps((t), (p))
#define DW_STORE(p, v) _mm512_storeu_ps((p), (v))
#define DW_STORET(p, v, t) _mm512_mask_storeu_ps((p), (t), (v))
#define DW_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define DW_ADD(a, b) _mm512_add_ps((a), (b))
#define DW_MUL(a, b) _mm512_mul_ps((a), (b))
#define DW_SET1(f) _mm512_set1_ps(f)
#define DW_ZERO() _mm512_setzero_ps()
/* Operands swapped: every use is DW_MIN(DW_MAX(value, lo), hi), and x86 min/max return their
 * second operand when one is NaN, so a NaN stays NaN, as in LiteRT (tflite-runtime 2.14's
 * depthwise kernel turns it into hi instead; its conv and fully connected keep it). */
#define DW_MIN(a, b) _mm512_min_ps((b), (a))
#define DW_MAX(a, b) _mm512_max_ps((b), (a))

typedef struct { __m512i idx; __mmask16 m; } dw_exp512;
#define DW_EXP_T dw_exp512
#define DW_EXP_INIT(e, r, mult, n_in) dw_exp_init512(&(e), (r), (mult), (n_in))
#define DW_EXP_LOAD(p, e) _mm512_permutexvar_ps((e).idx, _mm512_maskz_loadu_ps((e).m, (p)))

__attribute__((target("avx512f")))
static void dw_exp_init512(dw_exp512 *e, int r, int mult, int n_in) {
  int idx[16];
  for (int j = 0; j < 16; j++) {
    int k = (r + j) / mult;
    idx[j] = k < 16 ? k : 15;
  }
  e->idx = _mm512_loadu_si512((const void *)idx);
  e->m = n_in >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n_in) - 1u);
}

#include "dwconv_body.inc"
#endif
