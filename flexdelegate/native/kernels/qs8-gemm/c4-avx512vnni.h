/* The AVX-512 VNNI c4 scheme of qs8-gemm/igemm-8x16c4-avx512vnni: a panel k-group is 16
 * channels x 4 bytes (one zmm, one int32 lane per channel), a row's 4 bytes of A are broadcast
 * to every lane, and vpdpbusd adds the four u8 x s8 products to each channel's lane: no
 * reduction at the end. vpdpbusd takes unsigned activations, so the kernel xors A with 0x80
 * (a + 128) and the panel's bias carries -128 * sum(w) (a_offset = 128 in qs8-gemm.inc); the
 * non-saturating vpdpbusd keeps every sum exact. The output stage takes requant-avx2.h's
 * constants: its fast form (nearly every layer) runs on all 16 lanes in one zmm, the others on
 * the two ymm halves. */
#ifndef FLEX_QS8_C4_AVX512VNNI_H
#define FLEX_QS8_C4_AVX512VNNI_H
#include <immintrin.h>
#include <string.h>
#include "../quant/requant-avx512.h"
#include "qs8-gemm.h"
#include "kernels/simd/nofuse.h"

#define FX_C4V __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni"), always_inline)) static inline
#define FX_C4V_TARGET __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni")))

/* 4 bytes of a row, +128 (as unsigned), in every lane. */
FX_C4V __m512i fx_c4v_load_a(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return _mm512_xor_si512(_mm512_set1_epi32(v), _mm512_set1_epi32((int32_t)0x80808080u));
}
/* The last n < 4 bytes; the missing ones are 0 (their weights are 0: any value would do). */
FX_C4V __m512i fx_c4v_load_a_part(const int8_t *p, size_t n) {
  const int32_t v = (int32_t)fx_qs8_load_tail(p, n);
  return _mm512_xor_si512(_mm512_set1_epi32(v), _mm512_set1_epi32((int32_t)0x80808080u));
}

/* Two accumulators a row, for even and odd k-groups, summed at the end: a row's vpdpbusd
 * depend on its previous one, so a tile of few rows (a batch-1 FC: one row) was one chain
 * waiting on vpdpbusd's latency (Zen 5: 130 -> 220 GOPS with two; 8-row tiles unchanged). The
 * sums wrap alike in any order, so the result is the same. acc starts at the panel's bias. */
#define FX_C4V_ACC(i) __m512i acc##i = vbias, bcc##i = _mm512_setzero_si512();
#define FX_C4V_DOT(i) acc##i = _mm512_dpbusd_epi32(acc##i, va##i, wv);
#define FX_C4V_DOTB(i) bcc##i = _mm512_dpbusd_epi32(bcc##i, vb##i, wb);

#define FX_C4V_LOAD_A(i) const __m512i va##i = fx_c4v_load_a(a##i + k);
#define FX_C4V_LOAD_B(i) const __m512i vb##i = fx_c4v_load_a(a##i + k + 4);
#define FX_C4V_LOAD_A_PART(i) const __m512i va##i = fx_c4v_load_a_part(a##i + k, kc - k);
/* 8 rows' vpdpbusd in one asm statement: each row's A in its own register, no copies of the
 * accumulators (GCC 12 moves every accumulator through a scratch register around the
 * intrinsic, and with the A values sharing one register the loop ran ~20 % slower). */
#define FX_C4V_DOT8_(A, V, W)                                                                      \
  __asm__("vpdpbusd %16, %8, %0\n\tvpdpbusd %16, %9, %1\n\tvpdpbusd %16, %10, %2\n\t"               \
          "vpdpbusd %16, %11, %3\n\tvpdpbusd %16, %12, %4\n\tvpdpbusd %16, %13, %5\n\t"              \
          "vpdpbusd %16, %14, %6\n\tvpdpbusd %16, %15, %7"                                            \
          : "+v"(A##0), "+v"(A##1), "+v"(A##2), "+v"(A##3), "+v"(A##4), "+v"(A##5), "+v"(A##6), "+v"(A##7) \
          : "v"(V##0), "v"(V##1), "v"(V##2), "v"(V##3), "v"(V##4), "v"(V##5), "v"(V##6), "v"(V##7), "v"(W));
#define FX_C4V_DOT8 FX_C4V_DOT8_(acc, va, wv)
#define FX_C4V_DOT8B FX_C4V_DOT8_(bcc, vb, wb)
/* The k-loop over one run of kc bytes per row: per k-group one weight load, then every row's
 * vpdpbusd, two k-groups a step (the second into bcc). */
#define FX_C4V_KLOOP(ROWS)                                \
  {                                                       \
    size_t k = 0;                                         \
    for (; k + 8 <= kc; k += 8, wk += 128) {              \
      const __m512i wv = _mm512_loadu_si512(wk);          \
      const __m512i wb = _mm512_loadu_si512(wk + 64);     \
      ROWS(FX_C4V_LOAD_A)                                 \
      FX_C4V_DOTS(ROWS)                                   \
      ROWS(FX_C4V_LOAD_B)                                 \
      FX_C4V_DOTSB(ROWS)                                  \
    }                                                     \
    if (k + 4 <= kc) {                                    \
      const __m512i wv = _mm512_loadu_si512(wk);          \
      ROWS(FX_C4V_LOAD_A)                                 \
      FX_C4V_DOTS(ROWS)                                   \
      k += 4, wk += 64;                                   \
    }                                                     \
    if (k < kc) {                                         \
      const __m512i wv = _mm512_loadu_si512(wk);          \
      ROWS(FX_C4V_LOAD_A_PART)                            \
      ROWS(FX_C4V_DOT)                                    \
      wk += 64;                                           \
    }                                                     \
  }

/* A panel's requantization slot (quant/pack.h): past its 16 int32 biases and ks taps of
 * ceil(kc / 4) k-groups of 64 bytes (the GEMM's ks is 1). */
FX_C4V const int32_t *fx_c4v_requant_slot(const void *w, size_t kc, size_t ks) {
  return (const int32_t *)((const int8_t *)w + 64 + ks * ((kc + 3) / 4) * 64);
}

/* A panel's output stage, from its requant parameters (past its bias and k-groups,
 * quant/pack.h): channels 0-7, 8-15, and the 16-lane fast form. */
typedef struct {
  fx_rq8_avx2 rq0, rq1;
  fx_rq16_avx512 rq16;
} fx_c4v_out;
FX_C4V void fx_c4v_out_init(fx_c4v_out *s, const int32_t *rqp, const fx_qs8_out *o) {
  fx_rq8_init_avx2(&s->rq0, rqp, rqp + 16, fx_rq8_away_all_avx2(o), o);
  fx_rq8_init_avx2(&s->rq1, rqp + 8, rqp + 24, fx_rq8_away_all_avx2(o), o);
  fx_rq16_init_avx512(&s->rq16, &s->rq0, &s->rq1);
}

/* Row i: + row correction, requantized by the output stage `*os` (the 16-lane fast form, else
 * AVX2 on the two halves), stored. */
#define FX_C4V_FINISH(i)                                                                      \
  if (mr > (i)) {                                                                             \
    __m512i v = _mm512_add_epi32(acc##i, bcc##i);                                             \
    if (row_corr) v = _mm512_add_epi32(v, _mm512_set1_epi32(row_corr[i]));                    \
    if (os->rq16.on) {                                                                         \
      fx_rq16_store_avx512(c + (i) * c_stride, v, &os->rq16, nc);                              \
    } else {                                                                                  \
      const __m256i lo = fx_rq8_apply_avx2(_mm512_castsi512_si256(v), &os->rq0);               \
      const __m256i hi = fx_rq8_apply_avx2(_mm512_extracti64x4_epi64(v, 1), &os->rq1);         \
      fx_store_bytes_avx2(c + (i) * c_stride, fx_pack16_avx2(lo, hi), nc);                    \
    }                                                                                         \
  }

/* ---- the hybrid form's output stage (qs8-gemm.h fx_qs8_f32_out), of the GEMM and the IGEMM ----
 * One panel's float stage: its weight scales, biases and weight sums (in the requantization
 * slot, quant/pack.h), and o's fields in locals (the float stores may alias o in the compiler's
 * view, which would reload them every row). */
typedef struct {
  __m512 ws, bias, lo, hi, res_lo, res_hi;
  __m512i wsum;
  __mmask16 lanes;
  const float *x_scale;
  const int32_t *x_zp;
  size_t x_step, res_stride;
  int nan_to_lo;
} fx_c4v_f32;

/* The stage of the panel whose requantization slot is at rq, channels [n0, n0 + nc). */
FX_C4V void fx_c4v_f32_init(fx_c4v_f32 *s, const int32_t *rq, size_t n0, size_t nc, const fx_qs8_f32_out *o) {
  s->lanes = (__mmask16)((1u << nc) - 1);
  s->ws = _mm512_maskz_loadu_ps(s->lanes, o->w_scale + n0);
  s->bias = _mm512_maskz_loadu_ps(s->lanes, o->bias + n0);
  s->wsum = _mm512_loadu_si512(rq);
  s->lo = _mm512_set1_ps(o->lo), s->hi = _mm512_set1_ps(o->hi);
  s->res_lo = _mm512_set1_ps(o->res_lo), s->res_hi = _mm512_set1_ps(o->res_hi);
  s->x_scale = o->x_scale, s->x_zp = o->x_zp, s->x_step = o->x_step, s->res_stride = o->res_stride;
  s->nan_to_lo = o->nan_to_lo;
}

/* Row `row` of the call: stock's order, each step rounded (FX_NOFUSE: no fused multiply-add),
 * the zero point's term off the int32 sum, to float, times the product of the scales, plus the
 * bias, then the clamp (x86 min/max return their second operand on a NaN: the value second
 * keeps it, first turns it into lo), the residual; the stored values narrow range. */
FX_C4V void fx_c4v_f32_row(__m512i v, size_t row, const fx_c4v_f32 *s, float *c, const float *res, __m512 range[2]) {
  const size_t r = row * s->x_step;
  const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(s->x_scale[r]), s->ws);
  if (s->x_zp) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_set1_epi32(s->x_zp[r]), s->wsum));
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), scale);
  FX_NOFUSE(f);
  f = _mm512_add_ps(f, s->bias);
  f = s->nan_to_lo ? _mm512_min_ps(_mm512_max_ps(f, s->lo), s->hi) : _mm512_min_ps(s->hi, _mm512_max_ps(s->lo, f));
  if (res) {
    f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(s->lanes, res));
    f = _mm512_min_ps(s->res_hi, _mm512_max_ps(s->res_lo, f));
  }
  _mm512_mask_storeu_ps(c, s->lanes, f);
  range[0] = _mm512_mask_min_ps(range[0], s->lanes, range[0], f);
  range[1] = _mm512_mask_max_ps(range[1], s->lanes, range[1], f);
}

/* The least and greatest value a call stored, merged into o->range when it is wanted. */
FX_C4V void fx_c4v_f32_range(const fx_qs8_f32_out *o, const __m512 range[2]) {
  if (!o->range) return;
  const float lo = _mm512_reduce_min_ps(range[0]), hi = _mm512_reduce_max_ps(range[1]);
  o->range[0] = lo < o->range[0] ? lo : o->range[0];
  o->range[1] = hi > o->range[1] ? hi : o->range[1];
}

/* Row i of a tile through the float stage `s` (rows from row0 of the call; res: the residual
 * at the tile's first row and the panel's first channel, or NULL). */
#define FX_C4V_FINISH_F32(i)                                                                   \
  if (mr > (i))                                                                                \
    fx_c4v_f32_row(_mm512_add_epi32(acc##i, bcc##i), row0 + (i), s, c + (i) * c_stride,        \
                   res ? res + (i) * s->res_stride : NULL, range);

/* The rows of a tile of MR (1..8) rows: each kernel is compiled for every MR, so a tile of the
 * last few rows of a matrix (49 = 6 x 8 + 1 at 7x7) computes only those. */
#define FX_C4V_ROWS1(X) X(0)
#define FX_C4V_ROWS2(X) FX_C4V_ROWS1(X) X(1)
#define FX_C4V_ROWS3(X) FX_C4V_ROWS2(X) X(2)
#define FX_C4V_ROWS4(X) FX_C4V_ROWS3(X) X(3)
#define FX_C4V_ROWS5(X) FX_C4V_ROWS4(X) X(4)
#define FX_C4V_ROWS6(X) FX_C4V_ROWS5(X) X(5)
#define FX_C4V_ROWS7(X) FX_C4V_ROWS6(X) X(6)
#define FX_C4V_ROWS8(X) FX_C4V_ROWS7(X) X(7)
/* The dots of a k-group: the 8-row tile in one asm statement (FX_C4V_DOT8), others per row. */
#define FX_C4V_DOTS(ROWS) FX_C4V_DOTS_(ROWS)
#define FX_C4V_DOTS_(ROWS) FX_C4V_DOTS_##ROWS
#define FX_C4V_DOTS_FX_C4V_ROWS8 FX_C4V_DOT8
#define FX_C4V_DOTS_FX_C4V_ROWS1 FX_C4V_ROWS1(FX_C4V_DOT)
#define FX_C4V_DOTS_FX_C4V_ROWS2 FX_C4V_ROWS2(FX_C4V_DOT)
#define FX_C4V_DOTS_FX_C4V_ROWS3 FX_C4V_ROWS3(FX_C4V_DOT)
#define FX_C4V_DOTS_FX_C4V_ROWS4 FX_C4V_ROWS4(FX_C4V_DOT)
#define FX_C4V_DOTS_FX_C4V_ROWS5 FX_C4V_ROWS5(FX_C4V_DOT)
#define FX_C4V_DOTS_FX_C4V_ROWS6 FX_C4V_ROWS6(FX_C4V_DOT)
#define FX_C4V_DOTS_FX_C4V_ROWS7 FX_C4V_ROWS7(FX_C4V_DOT)
#define FX_C4V_DOTSB(ROWS) FX_C4V_DOTSB_(ROWS)
#define FX_C4V_DOTSB_(ROWS) FX_C4V_DOTSB_##ROWS
#define FX_C4V_DOTSB_FX_C4V_ROWS8 FX_C4V_DOT8B
#define FX_C4V_DOTSB_FX_C4V_ROWS1 FX_C4V_ROWS1(FX_C4V_DOTB)
#define FX_C4V_DOTSB_FX_C4V_ROWS2 FX_C4V_ROWS2(FX_C4V_DOTB)
#define FX_C4V_DOTSB_FX_C4V_ROWS3 FX_C4V_ROWS3(FX_C4V_DOTB)
#define FX_C4V_DOTSB_FX_C4V_ROWS4 FX_C4V_ROWS4(FX_C4V_DOTB)
#define FX_C4V_DOTSB_FX_C4V_ROWS5 FX_C4V_ROWS5(FX_C4V_DOTB)
#define FX_C4V_DOTSB_FX_C4V_ROWS6 FX_C4V_ROWS6(FX_C4V_DOTB)
#define FX_C4V_DOTSB_FX_C4V_ROWS7 FX_C4V_ROWS7(FX_C4V_DOTB)
/* Calls F##MR(args) for the mr at hand (mr >= 8: 8). */
#define FX_C4V_BY_MR(mr, F, ...)              \
  switch (mr) {                               \
    case 1: F##1(__VA_ARGS__); break;         \
    case 2: F##2(__VA_ARGS__); break;         \
    case 3: F##3(__VA_ARGS__); break;         \
    case 4: F##4(__VA_ARGS__); break;         \
    case 5: F##5(__VA_ARGS__); break;         \
    case 6: F##6(__VA_ARGS__); break;         \
    case 7: F##7(__VA_ARGS__); break;         \
    default: F##8(__VA_ARGS__); break;        \
  }
#endif
