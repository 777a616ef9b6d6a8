/* The AVX-512 VNNI c8 scheme of qs8-gemm/igemm-8x16c8-avx512vnni (XNNPACK's qs8 c8 design): a
 * panel k-group is 16 channels x 8 bytes, two zmm (channels 0-7, 8-15), a channel's 8 bytes in
 * two int32 lanes; a row's 8 bytes of A are broadcast to every qword, and vpdpbusd adds four
 * u8 x s8 products to each lane; at the end each channel's two lanes are summed. One A load feeds
 * two vpdpbusd: the c4 scheme before it (16 channels x 4 bytes a zmm) loaded A once for each, and
 * those loads and their xors held the k-loop back (1x1 64->256 @56: 205 -> 184 us, XNNPack 154).
 * vpdpbusd takes unsigned activations, so the kernel xors A with 0x80 (a + 128) and the panel's
 * bias carries -128 * sum(w) (a_offset = 128 in qs8-gemm.inc); the non-saturating vpdpbusd keeps
 * every sum exact. The output stage takes requant-avx2.h's constants: its fast form (nearly every
 * layer) runs on all 16 lanes in one zmm, the others on the two ymm halves. */
#ifndef FLEX_QS8_C8_AVX512VNNI_H
#define FLEX_QS8_C8_AVX512VNNI_H
#include <immintrin.h>
#include <string.h>
#include "../quant/requant-avx512.h"
#include "qs8-gemm.h"
#include "kernels/simd/nofuse.h"

#define FX_C8V __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni"), always_inline)) static inline
#define FX_C8V_TARGET __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni")))

/* 8 bytes of a row, +128 (as unsigned), in every qword. */
FX_C8V __m512i fx_c8v_load_a(const int8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return _mm512_xor_si512(_mm512_set1_epi64(v), _mm512_set1_epi64((int64_t)0x8080808080808080u));
}
/* The last n < 8 bytes; the missing ones are 0 (their weights are 0: any value would do). */
FX_C8V __m512i fx_c8v_load_a_part(const int8_t *p, size_t n) {
  const int64_t v = (int64_t)fx_qs8_load_tail(p, n);
  return _mm512_xor_si512(_mm512_set1_epi64(v), _mm512_set1_epi64((int64_t)0x8080808080808080u));
}

/* Two accumulators a row: channels 0-7 (acc) and 8-15 (bcc), each channel in two lanes (its
 * k-group's bytes 0-3 and 4-7), summed pairwise at the end (fx_c8v_pairs). They start from the
 * panel's biases (FX_C8V_BIAS: channel c's in the low lane of its pair), so no add is left for
 * the bias at the end. */
#define FX_C8V_BIAS(w)                                                         \
  const __m512i vbias_a = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(w))); \
  const __m512i vbias_b = _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(w) + 1));
#define FX_C8V_ACC(i) __m512i acc##i = vbias_a, bcc##i = vbias_b;
#define FX_C8V_DOT(i) acc##i = _mm512_dpbusd_epi32(acc##i, va##i, wv);
#define FX_C8V_DOTB(i) bcc##i = _mm512_dpbusd_epi32(bcc##i, va##i, wb);

#define FX_C8V_LOAD_A(i) const __m512i va##i = fx_c8v_load_a(a##i + k);
#define FX_C8V_LOAD_A_PART(i) const __m512i va##i = fx_c8v_load_a_part(a##i + k, kc - k);
/* 8 rows' vpdpbusd in one asm statement: each row's A in its own register, no copies of the
 * accumulators (GCC 12 moves every accumulator through a scratch register around the
 * intrinsic, and with the A values sharing one register the loop ran ~20 % slower). */
#define FX_C8V_DOT8_(A, V, W)                                                                      \
  __asm__("vpdpbusd %16, %8, %0\n\tvpdpbusd %16, %9, %1\n\tvpdpbusd %16, %10, %2\n\t"               \
          "vpdpbusd %16, %11, %3\n\tvpdpbusd %16, %12, %4\n\tvpdpbusd %16, %13, %5\n\t"              \
          "vpdpbusd %16, %14, %6\n\tvpdpbusd %16, %15, %7"                                            \
          : "+v"(A##0), "+v"(A##1), "+v"(A##2), "+v"(A##3), "+v"(A##4), "+v"(A##5), "+v"(A##6), "+v"(A##7) \
          : "v"(V##0), "v"(V##1), "v"(V##2), "v"(V##3), "v"(V##4), "v"(V##5), "v"(V##6), "v"(V##7), "v"(W));
#define FX_C8V_DOT8 FX_C8V_DOT8_(acc, va, wv)
#define FX_C8V_DOT8B FX_C8V_DOT8_(bcc, va, wb)
/* The k-loop over one run of kc bytes per row, from byte K0: per k-group two weight loads, one
 * broadcast load of each row's 8 bytes, then two vpdpbusd a row; a last partial k-group reads
 * exactly the bytes left. */
#define FX_C8V_KLOOP_FROM(ROWS, K0)                       \
  {                                                       \
    size_t k = K0;                                        \
    for (; k + 8 <= kc; k += 8, wk += 128) {              \
      const __m512i wv = _mm512_loadu_si512(wk);          \
      const __m512i wb = _mm512_loadu_si512(wk + 64);     \
      ROWS(FX_C8V_LOAD_A)                                 \
      FX_C8V_DOTS(ROWS)                                   \
      FX_C8V_DOTSB(ROWS)                                  \
    }                                                     \
    if (k < kc) {                                         \
      const __m512i wv = _mm512_loadu_si512(wk);          \
      const __m512i wb = _mm512_loadu_si512(wk + 64);     \
      ROWS(FX_C8V_LOAD_A_PART)                            \
      ROWS(FX_C8V_DOT)                                    \
      ROWS(FX_C8V_DOTB)                                   \
      wk += 128;                                          \
    }                                                     \
  }
/* One row alone has two chains of vpdpbusd, each waiting on its last result (latency 4-5
 * cycles, 2 a cycle issued): four k-groups a step into four accumulator pairs keeps eight in
 * flight, summed before the rest of the row (a classifier head's 1 x 1280 x 1000: 14.7 -> 13.5 us,
 * XNNPack 11.3). Other tile heights have 2 x rows chains already. */
#define FX_C8V_KLOOP_1ROW                                                                    \
  {                                                                                          \
    size_t k4 = 0;                                                                           \
    if (kc >= 64) {                                                                          \
      __m512i acc0_1 = _mm512_setzero_si512(), bcc0_1 = acc0_1, acc0_2 = acc0_1, bcc0_2 = acc0_1; \
      __m512i acc0_3 = acc0_1, bcc0_3 = acc0_1;                                              \
      for (; k4 + 32 <= kc; k4 += 32, wk += 512) {                                           \
        const __m512i v0 = fx_c8v_load_a(a0 + k4), v1 = fx_c8v_load_a(a0 + k4 + 8);          \
        const __m512i v2 = fx_c8v_load_a(a0 + k4 + 16), v3 = fx_c8v_load_a(a0 + k4 + 24);     \
        acc0 = _mm512_dpbusd_epi32(acc0, v0, _mm512_loadu_si512(wk));                        \
        bcc0 = _mm512_dpbusd_epi32(bcc0, v0, _mm512_loadu_si512(wk + 64));                   \
        acc0_1 = _mm512_dpbusd_epi32(acc0_1, v1, _mm512_loadu_si512(wk + 128));              \
        bcc0_1 = _mm512_dpbusd_epi32(bcc0_1, v1, _mm512_loadu_si512(wk + 192));              \
        acc0_2 = _mm512_dpbusd_epi32(acc0_2, v2, _mm512_loadu_si512(wk + 256));              \
        bcc0_2 = _mm512_dpbusd_epi32(bcc0_2, v2, _mm512_loadu_si512(wk + 320));              \
        acc0_3 = _mm512_dpbusd_epi32(acc0_3, v3, _mm512_loadu_si512(wk + 384));              \
        bcc0_3 = _mm512_dpbusd_epi32(bcc0_3, v3, _mm512_loadu_si512(wk + 448));              \
      }                                                                                      \
      acc0 = _mm512_add_epi32(_mm512_add_epi32(acc0, acc0_1), _mm512_add_epi32(acc0_2, acc0_3)); \
      bcc0 = _mm512_add_epi32(_mm512_add_epi32(bcc0, bcc0_1), _mm512_add_epi32(bcc0_2, bcc0_3)); \
    }                                                                                        \
    FX_C8V_KLOOP_FROM(FX_C8V_ROWS1, k4)                                                      \
  }
/* The k-loop of a tile of ROWS (FX_C8V_ROWS<MR>). */
#define FX_C8V_KLOOP(ROWS) FX_C8V_KLOOP_(ROWS)
#define FX_C8V_KLOOP_(ROWS) FX_C8V_KLOOP_##ROWS
#define FX_C8V_KLOOP_FX_C8V_ROWS1 FX_C8V_KLOOP_1ROW
#define FX_C8V_KLOOP_FX_C8V_ROWS2 FX_C8V_KLOOP_FROM(FX_C8V_ROWS2, 0)
#define FX_C8V_KLOOP_FX_C8V_ROWS3 FX_C8V_KLOOP_FROM(FX_C8V_ROWS3, 0)
#define FX_C8V_KLOOP_FX_C8V_ROWS4 FX_C8V_KLOOP_FROM(FX_C8V_ROWS4, 0)
#define FX_C8V_KLOOP_FX_C8V_ROWS5 FX_C8V_KLOOP_FROM(FX_C8V_ROWS5, 0)
#define FX_C8V_KLOOP_FX_C8V_ROWS6 FX_C8V_KLOOP_FROM(FX_C8V_ROWS6, 0)
#define FX_C8V_KLOOP_FX_C8V_ROWS7 FX_C8V_KLOOP_FROM(FX_C8V_ROWS7, 0)
#define FX_C8V_KLOOP_FX_C8V_ROWS8 FX_C8V_KLOOP_FROM(FX_C8V_ROWS8, 0)

/* An accumulator's 8 channel sums: lane pair c's sum in the low dword of qword c (the high
 * dword is left as it is), the layout the pairs output stage multiplies (requant-avx512.h). */
FX_C8V __m512i fx_c8v_pairs(__m512i acc) { return _mm512_add_epi32(acc, _mm512_srli_epi64(acc, 32)); }
/* The 16 sums of two such pair sets in channel order. */
FX_C8V __m512i fx_c8v_order(__m512i sa, __m512i sb) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_epi32(sa, even, sb);
}
/* A row's 16 channel sums in order, from its two accumulators. */
FX_C8V __m512i fx_c8v_sum(__m512i acc, __m512i bcc) { return fx_c8v_order(fx_c8v_pairs(acc), fx_c8v_pairs(bcc)); }

/* A panel's requantization slot (quant/pack.h): past its 16 int32 biases and ks taps of
 * ceil(kc / 8) k-groups of 128 bytes (the GEMM's ks is 1). */
FX_C8V const int32_t *fx_c8v_requant_slot(const void *w, size_t kc, size_t ks) {
  return (const int32_t *)((const int8_t *)w + 64 + ks * ((kc + 7) / 8) * 128);
}

/* A panel's output stage, from its requant parameters (past its bias and k-groups,
 * quant/pack.h): channels 0-7, 8-15, and the 16-lane fast form. */
typedef struct {
  fx_rq8_avx2 rq0, rq1;
  fx_rq16_avx512 rq16;   /* AMX's form: 16 sums in channel order */
  fx_rq16p_avx512 rq16p; /* this scheme's: the sums in lane pairs */
} fx_c8v_out;
FX_C8V void fx_c8v_out_init(fx_c8v_out *s, const int32_t *rqp, const fx_qs8_out *o) {
  fx_rq8_init_avx2(&s->rq0, rqp, rqp + 16, fx_rq8_away_all_avx2(o), o);
  fx_rq8_init_avx2(&s->rq1, rqp + 8, rqp + 24, fx_rq8_away_all_avx2(o), o);
  fx_rq16_init_avx512(&s->rq16, &s->rq0, &s->rq1);
  fx_rq16p_init_avx512(&s->rq16p, &s->rq16);
}

/* Before a tile's rows: the fast stage and its mask of nc bytes. Every row is requantized
 * before any is stored, so the stage's constants need no copy: stored row by row, a char store
 * (which may alias them) had the compiler read them again after every row. */
#define FX_C8V_FINISH_SETUP                     \
  const fx_rq16p_avx512 *q16 = &os->rq16p;      \
  const __mmask16 q16_n = (__mmask16)((1u << nc) - 1u);
/* Row i: its pair sums, + row correction, requantized by the output stage `*os` into out##i
 * (the fast form q16 on the pairs; `lean` as the tile was compiled), or else stored now by
 * AVX2 on the two halves of the sums in order. */
#define FX_C8V_FINISH(i)                                                                      \
  __m128i out##i = _mm_setzero_si128();                                                       \
  if (mr > (i)) {                                                                             \
    __m512i sa = fx_c8v_pairs(acc##i), sb = fx_c8v_pairs(bcc##i);                             \
    if (row_corr) {                                                                           \
      const __m512i rc = _mm512_set1_epi32(row_corr[i]);                                      \
      sa = _mm512_add_epi32(sa, rc), sb = _mm512_add_epi32(sb, rc);                           \
    }                                                                                         \
    if (q16->on) {                                                                            \
      out##i = fx_rq16p_apply_avx512(sa, sb, q16, lean);                                      \
    } else {                                                                                  \
      const __m512i v = fx_c8v_order(sa, sb);                                                 \
      const __m256i lo = fx_rq8_apply_avx2(_mm512_castsi512_si256(v), &os->rq0);               \
      const __m256i hi = fx_rq8_apply_avx2(_mm512_extracti64x4_epi64(v, 1), &os->rq1);         \
      fx_store_bytes_avx2(c + (i) * c_stride, fx_pack16_avx2(lo, hi), nc);                    \
    }                                                                                         \
  }
/* Then the fast form's rows are stored. */
#define FX_C8V_FINISH_STORE(i) \
  if (mr > (i) && q16->on) _mm_mask_storeu_epi8(c + (i) * c_stride, q16_n, out##i);

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
} fx_c8v_f32;

/* The stage of the panel whose requantization slot is at rq, channels [n0, n0 + nc). */
FX_C8V void fx_c8v_f32_init(fx_c8v_f32 *s, const int32_t *rq, size_t n0, size_t nc, const fx_qs8_f32_out *o) {
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
FX_C8V void fx_c8v_f32_row(__m512i v, size_t row, const fx_c8v_f32 *s, float *c, const float *res, __m512 range[2]) {
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
FX_C8V void fx_c8v_f32_range(const fx_qs8_f32_out *o, const __m512 range[2]) {
  if (!o->range) return;
  const float lo = _mm512_reduce_min_ps(range[0]), hi = _mm512_reduce_max_ps(range[1]);
  o->range[0] = lo < o->range[0] ? lo : o->range[0];
  o->range[1] = hi > o->range[1] ? hi : o->range[1];
}

/* Row i of a tile through the float stage `s` (rows from row0 of the call; res: the residual
 * at the tile's first row and the panel's first channel, or NULL). */
#define FX_C8V_FINISH_F32_SETUP
#define FX_C8V_FINISH_F32_STORE(i)
#define FX_C8V_FINISH_F32(i)                                                                   \
  if (mr > (i))                                                                                \
    fx_c8v_f32_row(fx_c8v_sum(acc##i, bcc##i), row0 + (i), s, c + (i) * c_stride,        \
                   res ? res + (i) * s->res_stride : NULL, range);

/* The rows of a tile of MR (1..8) rows: each kernel is compiled for every MR, so a tile of the
 * last few rows of a matrix (49 = 6 x 8 + 1 at 7x7) computes only those. */
#define FX_C8V_ROWS1(X) X(0)
#define FX_C8V_ROWS2(X) FX_C8V_ROWS1(X) X(1)
#define FX_C8V_ROWS3(X) FX_C8V_ROWS2(X) X(2)
#define FX_C8V_ROWS4(X) FX_C8V_ROWS3(X) X(3)
#define FX_C8V_ROWS5(X) FX_C8V_ROWS4(X) X(4)
#define FX_C8V_ROWS6(X) FX_C8V_ROWS5(X) X(5)
#define FX_C8V_ROWS7(X) FX_C8V_ROWS6(X) X(6)
#define FX_C8V_ROWS8(X) FX_C8V_ROWS7(X) X(7)
/* The dots of a k-group: the 8-row tile in one asm statement (FX_C8V_DOT8), others per row. */
#define FX_C8V_DOTS(ROWS) FX_C8V_DOTS_(ROWS)
#define FX_C8V_DOTS_(ROWS) FX_C8V_DOTS_##ROWS
#define FX_C8V_DOTS_FX_C8V_ROWS8 FX_C8V_DOT8
#define FX_C8V_DOTS_FX_C8V_ROWS1 FX_C8V_ROWS1(FX_C8V_DOT)
#define FX_C8V_DOTS_FX_C8V_ROWS2 FX_C8V_ROWS2(FX_C8V_DOT)
#define FX_C8V_DOTS_FX_C8V_ROWS3 FX_C8V_ROWS3(FX_C8V_DOT)
#define FX_C8V_DOTS_FX_C8V_ROWS4 FX_C8V_ROWS4(FX_C8V_DOT)
#define FX_C8V_DOTS_FX_C8V_ROWS5 FX_C8V_ROWS5(FX_C8V_DOT)
#define FX_C8V_DOTS_FX_C8V_ROWS6 FX_C8V_ROWS6(FX_C8V_DOT)
#define FX_C8V_DOTS_FX_C8V_ROWS7 FX_C8V_ROWS7(FX_C8V_DOT)
#define FX_C8V_DOTSB(ROWS) FX_C8V_DOTSB_(ROWS)
#define FX_C8V_DOTSB_(ROWS) FX_C8V_DOTSB_##ROWS
#define FX_C8V_DOTSB_FX_C8V_ROWS8 FX_C8V_DOT8B
#define FX_C8V_DOTSB_FX_C8V_ROWS1 FX_C8V_ROWS1(FX_C8V_DOTB)
#define FX_C8V_DOTSB_FX_C8V_ROWS2 FX_C8V_ROWS2(FX_C8V_DOTB)
#define FX_C8V_DOTSB_FX_C8V_ROWS3 FX_C8V_ROWS3(FX_C8V_DOTB)
#define FX_C8V_DOTSB_FX_C8V_ROWS4 FX_C8V_ROWS4(FX_C8V_DOTB)
#define FX_C8V_DOTSB_FX_C8V_ROWS5 FX_C8V_ROWS5(FX_C8V_DOTB)
#define FX_C8V_DOTSB_FX_C8V_ROWS6 FX_C8V_ROWS6(FX_C8V_DOTB)
#define FX_C8V_DOTSB_FX_C8V_ROWS7 FX_C8V_ROWS7(FX_C8V_DOTB)
/* Calls F##MR(args) for the mr at hand (mr >= 8: 8). */
#define FX_C8V_BY_MR(mr, F, ...)              \
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
