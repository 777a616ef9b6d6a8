/* AMX-INT8 GEMM over a whole range: 32 rows x 32 channels (two 16-channel panels) per step in
 * four 16x16 int32 tiles, k in chunks of 64 bytes. A panel's k-groups (16 channels x 4 bytes)
 * are exactly the rows of an AMX B tile, so 16 of them (one chunk) load as one tile; the
 * packing pads every panel to whole chunks with zero weights (kg_align 16 in qs8-gemm.inc).
 * tdpbssd multiplies signed by signed bytes into int32 without saturation, as TFLite's
 * accumulators, so the panel's bias needs no activation offset (a_offset 0) and A is read
 * in place: whole 64-byte chunks by tileloadd at the row stride; the last chunk of a row when
 * kc is not a multiple of 64 is copied once per block of rows into a zero-padded buffer (the
 * padding meets zero weights). The accumulators start at the bias (a tile of its row copied
 * 16 times), go through memory once, and leave through the VNNI kernels' output stage
 * (c8-avx512vnni.h: the exact requantization), so results are those of every other variant.
 * Measured on Emerald Rapids: the tile unit and that vector output stage do not run in
 * parallel (a step's time is the sum of both), so each side's own cost counts: a panel's
 * output stage is set up in place (~25 ns, not ~220 with struct copies) once per panel pair
 * and block.
 *
 * The tile state is configured at entry and released at exit: a call is a whole task's range,
 * and the kernel leaves no AMX state behind (an idle thread's context switches stay small).
 *
 * Its second entry runs hybrid layers (float activations quantized on the fly): the same tiles
 * from hybrid panels (bias 0), the int32 results through a float output stage instead
 * (qs8-gemm.h fx_qs8_f32_out). */
#if defined(__x86_64__)
#include <math.h>
#include <string.h>
#include "c8-avx512vnni.h"
#include "kernels/simd/nofuse.h"

#define FX_AMX_TARGET __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni,amx-tile,amx-int8")))

/* tiles: C<row half><panel>, A<row half>, B<panel>; GCC's tile intrinsics paste the tile number
 * into their asm, so the names go through one more macro to become numbers first */
#define C00 0
#define C01 1
#define C10 2
#define C11 3
#define A0 4
#define A1 5
#define B0 6
#define B1 7
#define LOAD(t, p, stride) _tile_loadd(t, p, stride)
#define STORE(t, p, stride) _tile_stored(t, p, stride)
#define DOT(c, a, b) _tile_dpbssd(c, a, b)
#define CHUNK 64                              /* bytes of k per tile step */
#define ROWS_MAX 256                          /* rows per block (a multiple of 32) */

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} __attribute__((aligned(64))) tile_config;

/* Every tile 64 bytes wide; the C and A tiles of row half 0 `r0` rows, of half 1 `r1` (0: that
 * half unused, left at 16). */
static void config_tiles(tile_config *tc, int r0, int r1) {
  memset(tc, 0, sizeof *tc);
  tc->palette = 1;
  for (int t = 0; t < 8; t++) tc->colsb[t] = 64, tc->rows[t] = 16;
  tc->rows[C00] = tc->rows[C01] = tc->rows[A0] = (uint8_t)r0;
  if (r1) tc->rows[C10] = tc->rows[C11] = tc->rows[A1] = (uint8_t)r1;
}

/* Rows per block: their A rows within ~64 KB (L2; the panels' chunks then come from L1), 32 at
 * least. */
static size_t row_block(size_t kc) {
  const size_t rows = 65536 / (kc ? kc : 1) / 32 * 32;
  return rows < 32 ? 32 : rows > ROWS_MAX ? ROWS_MAX : rows;
}

/* One block of rows x a pair of panels (or one: w1 NULL). cbuf receives the int32 results. */
typedef struct {
  size_t rows, kc, chunks, a_stride;
  const int8_t *a;    /* the block's first row */
  const int8_t *tail; /* the block's copied last chunks (64 bytes a row), or NULL */
  const int32_t *corr; /* the block's row corrections, or NULL */
} block;

/* Rows [s, s + 32) of the block (fewer at its end: the tiles are configured for them) into the
 * C tiles, which start at the panels' biases: bias[0] and bias[1] hold each panel's bias row 16
 * times (a tile load at stride 0 from the one row took 2-3x as long as a whole step's dots at
 * K = 64); bias NULL starts them at zero (hybrid panels: their bias is 0 on AMX, quant/pack.h). */
FX_AMX_TARGET static void compute(const block *b, size_t s, const int8_t *w0, const int8_t *w1, int two_halves,
                                  const int32_t bias[2][16][16]) {
  const int8_t *a0 = b->a + s * b->a_stride, *a1 = a0 + 16 * b->a_stride;
  const size_t full = b->tail ? b->chunks - 1 : b->chunks;
  if (!bias) {
    _tile_zero(C00);
    _tile_zero(C10);
    _tile_zero(C01);
    _tile_zero(C11);
  } else {
    LOAD(C00, bias[0], 64);
    if (two_halves) LOAD(C10, bias[0], 64);
    if (w1) {
      LOAD(C01, bias[1], 64);
      if (two_halves) LOAD(C11, bias[1], 64);
    }
  }
  const int8_t *k0 = w0 + 64, *k1 = w1 ? w1 + 64 : NULL;
  for (size_t j = 0; j < b->chunks; j++, k0 += 16 * 64, k1 = k1 ? k1 + 16 * 64 : NULL) {
    if (j < full) {
      LOAD(A0, a0 + j * CHUNK, (long)b->a_stride);
      if (two_halves) LOAD(A1, a1 + j * CHUNK, (long)b->a_stride);
    } else {
      LOAD(A0, b->tail + s * CHUNK, CHUNK);
      if (two_halves) LOAD(A1, b->tail + (s + 16) * CHUNK, CHUNK);
    }
    LOAD(B0, k0, 64);
    DOT(C00, A0, B0);
    if (two_halves) DOT(C10, A1, B0);
    if (k1) {
      LOAD(B1, k1, 64);
      DOT(C01, A0, B1);
      if (two_halves) DOT(C11, A1, B1);
    }
  }
}

/* The C tiles into cbuf (32 rows of 32 int32). */
FX_AMX_TARGET static void store(int32_t cbuf[32][32], int two_panels, int two_halves) {
  STORE(C00, &cbuf[0][0], 128);
  if (two_halves) STORE(C10, &cbuf[16][0], 128);
  if (two_panels) {
    STORE(C01, &cbuf[0][16], 128);
    if (two_halves) STORE(C11, &cbuf[16][16], 128);
  }
}

/* Rows [0, rows) of one panel's 16 columns of cbuf (nc channels of them) through its output
 * stage into c. */
FX_AMX_TARGET static void finish_panel(const int32_t *cb, size_t rows, const int32_t *corr, const fx_c8v_out *os,
                                       size_t nc, int8_t *c, size_t c_stride) {
  if (os->rq16.on && !corr) {
    const fx_rq16_avx512 *q = &os->rq16;
    for (size_t i = 0; i < rows; i++, cb += 32, c += c_stride) fx_rq16_store_avx512(c, _mm512_load_si512(cb), q, nc, 0);
    return;
  }
  for (size_t i = 0; i < rows; i++, cb += 32, c += c_stride) {
    __m512i v = _mm512_load_si512(cb);
    if (corr) v = _mm512_add_epi32(v, _mm512_set1_epi32(corr[i]));
    if (os->rq16.on) {
      fx_rq16_store_avx512(c, v, &os->rq16, nc, 0);
    } else {
      const __m256i lo = fx_rq8_apply_avx2(_mm512_castsi512_si256(v), &os->rq0);
      const __m256i hi = fx_rq8_apply_avx2(_mm512_extracti64x4_epi64(v, 1), &os->rq1);
      fx_store_bytes_avx2(c, fx_pack16_avx2(lo, hi), nc);
    }
  }
}

/* A hybrid panel's float output stage (qs8-gemm.h fx_qs8_f32_out): its weight scales, biases and
 * weight sums (in the panel's requantization slot, quant/pack.h), nc lanes of them. */
typedef struct {
  __m512 ws, bias;
  __m512i wsum;
  __mmask16 lanes;
} f32_stage;

/* Rows [0, rows) of one panel's 16 columns of cbuf, rows row0.. of the call, through the float
 * stage into c (and res, the residual at those rows and channels, or NULL). Stock's order: the
 * zero point's term off the int32 sum, the sum to float, times the product of the scales, plus
 * the bias, each rounded (FX_NOFUSE), then the clamp. The values stored narrow range[0] / [1]
 * (their least / greatest, lane by lane): the next hybrid layer's quantization needs them. */
FX_AMX_TARGET static void finish_panel_f32(const int32_t *cb, size_t rows, size_t row0, const f32_stage *fs,
                                           const fx_qs8_f32_out *o, float *c, size_t c_stride, const float *res,
                                           __m512 range[2]) {
  /* everything in locals: the float stores below may alias the structs, which would be read again */
  const __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi), ws = fs->ws, bias = fs->bias;
  const __m512 res_lo = _mm512_set1_ps(o->res_lo), res_hi = _mm512_set1_ps(o->res_hi);
  const __m512i wsum = fs->wsum;
  const __mmask16 lanes = fs->lanes;
  const float *x_scale = o->x_scale;
  const int32_t *x_zp = o->x_zp;
  const size_t x_step = o->x_step, res_stride = o->res_stride;
  const int nan_to_lo = o->nan_to_lo;
  __m512 scale = _mm512_setzero_ps(), lo_seen = range[0], hi_seen = range[1];
  __m512i zw = _mm512_setzero_si512();
  for (size_t i = 0; i < rows; i++, cb += 32, c += c_stride) {
    const size_t r = (row0 + i) * x_step;
    if (i == 0 || x_step) { /* the row's (or the image's) input scale and zero point */
      scale = _mm512_mul_ps(_mm512_set1_ps(x_scale[r]), ws);
      if (x_zp) zw = _mm512_mullo_epi32(_mm512_set1_epi32(x_zp[r]), wsum);
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(cb), zw)), scale);
    FX_NOFUSE(f);
    /* x86 min/max return their second operand when one is NaN: the value second keeps a NaN
     * (a poisoned row's scale, a NaN bias), first turns it into lo (qs8-gemm.h) */
    f = _mm512_add_ps(f, bias);
    f = nan_to_lo ? _mm512_min_ps(_mm512_max_ps(f, lo), hi) : _mm512_min_ps(hi, _mm512_max_ps(lo, f));
    if (res) {
      f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(lanes, res + i * res_stride));
      f = _mm512_min_ps(res_hi, _mm512_max_ps(res_lo, f));
    }
    _mm512_mask_storeu_ps(c, lanes, f);
    lo_seen = _mm512_mask_min_ps(lo_seen, lanes, lo_seen, f);
    hi_seen = _mm512_mask_max_ps(hi_seen, lanes, hi_seen, f);
  }
  range[0] = lo_seen;
  range[1] = hi_seen;
}

/* Rows [s0, s1) of a block (32-row steps; a last shorter one only as the whole range) over
 * panels [p0, p1) in pairs, the tiles configured for those steps; results as int8 (o) or, for a
 * hybrid layer, float (fo). */
typedef struct {
  size_t n, nr, rq_at, panel_bytes, c_stride, p0;
  const void *packed;
  void *c; /* int8_t, or float with fo */
  const fx_qs8_out *o;
  const fx_qs8_f32_out *fo;
} panels;

/* Panel p's float stage (the panel at `panel`). */
FX_AMX_TARGET static f32_stage f32_stage_of(const int8_t *panel, const panels *pn, size_t p) {
  const size_t n0 = p * pn->nr, nc = pn->n - n0 < pn->nr ? pn->n - n0 : pn->nr;
  f32_stage s;
  s.lanes = (__mmask16)((1u << nc) - 1);
  s.ws = _mm512_maskz_loadu_ps(s.lanes, pn->fo->w_scale + n0);
  s.bias = _mm512_maskz_loadu_ps(s.lanes, pn->fo->bias + n0);
  s.wsum = _mm512_loadu_si512(panel + pn->rq_at);
  return s;
}

/* A step's results waiting in a cbuf for their output stage (the float form: panels p, p + 1). */
typedef struct {
  size_t s, rows, p;
} pending;

FX_AMX_TARGET static void finish(const block *b, const pending *d, int32_t cbuf[32][32], const fx_c8v_out *os,
                                 size_t nc0, size_t nc1, int8_t *c, size_t c_stride) {
  const int32_t *corr = b->corr ? b->corr + d->s : NULL;
  c += d->s * c_stride;
  finish_panel(&cbuf[0][0], d->rows, corr, &os[0], nc0, c, c_stride);
  if (nc1) finish_panel(&cbuf[0][16], d->rows, corr, &os[1], nc1, c + 16, c_stride);
}

/* The float form of finish: the pending step's rows of the call (from block row m0), its panel
 * pair's channels. */
FX_AMX_TARGET static void finish_f32(const pending *d, int32_t cbuf[32][32], const f32_stage *fs, const panels *pn,
                                     size_t m0, size_t p1, __m512 range[2]) {
  const fx_qs8_f32_out *o = pn->fo;
  const size_t row0 = m0 + d->s, n0 = d->p * pn->nr;
  float *c = (float *)pn->c + row0 * pn->c_stride + n0;
  const float *res = o->res ? o->res + row0 * o->res_stride + n0 : NULL;
  finish_panel_f32(&cbuf[0][0], d->rows, row0, &fs[0], o, c, pn->c_stride, res, range);
  if (d->p + 1 < p1)
    finish_panel_f32(&cbuf[0][16], d->rows, row0, &fs[1], o, c + 16, pn->c_stride, res ? res + 16 : NULL, range);
}

/* Software-pipelined: a step's tile instructions are issued, then the previous step's output
 * stage runs on the vector units while the tiles compute, then the tiles are stored (two
 * cbufs in turn). */
FX_AMX_TARGET static void steps(const block *b, size_t m0, size_t s0, size_t s1, const panels *pn, size_t p0,
                                size_t p1) {
  int32_t cbuf[2][32][32] __attribute__((aligned(64))), bias[2][16][16] __attribute__((aligned(64)));
  const size_t nr = pn->nr;
  for (size_t p = p0; p < p1; p += 2) {
    const int8_t *w0 = (const int8_t *)pn->packed + (p - pn->p0) * pn->panel_bytes;
    const int8_t *w1 = p + 1 < p1 ? w0 + pn->panel_bytes : NULL;
    const size_t n0 = p * nr, nc0 = pn->n - n0 < nr ? pn->n - n0 : nr;
    const size_t nc1 = w1 ? (pn->n - n0 - nc0 < nr ? pn->n - n0 - nc0 : nr) : 0;
    int8_t *c = (int8_t *)pn->c + m0 * pn->c_stride + n0;
    fx_c8v_out os[2];
    fx_c8v_out_init(&os[0], (const int32_t *)(w0 + pn->rq_at), pn->o);
    if (w1) fx_c8v_out_init(&os[1], (const int32_t *)(w1 + pn->rq_at), pn->o);
    for (int r = 0; r < 16; r++) {
      memcpy(bias[0][r], w0, 64);
      if (w1) memcpy(bias[1][r], w1, 64);
    }
    pending d = {0, 0, 0};
    int cur = 0;
    for (size_t s = s0; s < s1; s += 32, cur ^= 1) {
      const size_t rows = s1 - s < 32 ? s1 - s : 32;
      compute(b, s, w0, w1, rows > 16, bias);
      if (d.rows) finish(b, &d, cbuf[cur ^ 1], os, nc0, nc1, c, pn->c_stride);
      store(cbuf[cur], w1 != NULL, rows > 16);
      d = (pending){s, rows, p};
    }
    finish(b, &d, cbuf[cur ^ 1], os, nc0, nc1, c, pn->c_stride);
  }
}

/* The float form, rows outer: each 32-row step goes through every panel pair before the next,
 * pipelined the same way across the pairs, so a row's outputs (and its residual) are written
 * (read) in one run across its channels, which the hardware prefetchers follow; panel pairs
 * outer touched a new line every 32 rows x 1 KB and more: a 1x1 256->1024 conv at 14x14 with a
 * residual ADD 0.22 -> 0.18 ms, 256->64 at 56x56 0.41 -> 0.39 (3x3 64->64 at 56x56 0.31 ->
 * 0.32: two pairs only). */
FX_AMX_TARGET static void steps_f32(const block *b, size_t m0, size_t s0, size_t s1, const panels *pn, size_t p0,
                                    size_t p1) {
  int32_t cbuf[2][32][32] __attribute__((aligned(64)));
  f32_stage fs[2][2];
  pending d = {0, 0, 0};
  int cur = 0;
  __m512 range[2] = {_mm512_set1_ps(INFINITY), _mm512_set1_ps(-INFINITY)}; /* two vector ops a row, kept */
  for (size_t s = s0; s < s1; s += 32) {
    const size_t rows = s1 - s < 32 ? s1 - s : 32;
    for (size_t p = p0; p < p1; p += 2, cur ^= 1) {
      const int8_t *w0 = (const int8_t *)pn->packed + (p - pn->p0) * pn->panel_bytes;
      const int8_t *w1 = p + 1 < p1 ? w0 + pn->panel_bytes : NULL;
      fs[cur][0] = f32_stage_of(w0, pn, p);
      if (w1) fs[cur][1] = f32_stage_of(w1, pn, p + 1);
      compute(b, s, w0, w1, rows > 16, NULL);
      if (d.rows) finish_f32(&d, cbuf[cur ^ 1], fs[cur ^ 1], pn, m0, p1, range);
      store(cbuf[cur], w1 != NULL, rows > 16);
      d = (pending){s, rows, p};
    }
  }
  if (d.rows) finish_f32(&d, cbuf[cur ^ 1], fs[cur ^ 1], pn, m0, p1, range);
  if (pn->fo->range) {
    const float lo = _mm512_reduce_min_ps(range[0]), hi = _mm512_reduce_max_ps(range[1]);
    float *r = pn->fo->range;
    r[0] = lo < r[0] ? lo : r[0];
    r[1] = hi > r[1] ? hi : r[1];
  }
}

/* Rows [0, m) in blocks, each block's tail chunk copied and row factor summed once, every
 * panel pair of the range over it. */
FX_AMX_TARGET static void run_range(size_t m, size_t kc, const int8_t *a, size_t a_stride, int32_t row_factor,
                                   const panels *pn, size_t p0, size_t p1) {
  const size_t chunks = (kc + CHUNK - 1) / CHUNK, tail_bytes = kc % CHUNK;
  const size_t block_rows = row_block(kc);
  int8_t tail[ROWS_MAX * CHUNK] __attribute__((aligned(64)));
  int32_t corr[ROWS_MAX];
  tile_config tc;
  int configured = -1; /* the rows of the configured tiles: half 0 + 32 * half 1 */
  for (size_t m0 = 0; m0 < m; m0 += block_rows) {
    block b = {m - m0 < block_rows ? m - m0 : block_rows, kc, chunks, a_stride, a + m0 * a_stride, NULL, NULL};
    if (tail_bytes) {
      for (size_t i = 0; i < b.rows; i++) {
        memcpy(tail + i * CHUNK, b.a + i * a_stride + (kc - tail_bytes), tail_bytes);
        memset(tail + i * CHUNK + tail_bytes, 0, CHUNK - tail_bytes);
      }
      b.tail = tail;
    }
    if (row_factor) {
      fx_qs8_rowsums_gemm(b.rows, kc, b.a, a_stride, row_factor, corr);
      b.corr = corr;
    }
    /* whole 32-row steps over every panel, then the short last step over every panel: the
     * tiles are configured at most twice per block (a configuration costs ~200 cycles) */
    const size_t whole = b.rows / 32 * 32;
    for (size_t part = 0; part < 2; part++) {
      const size_t s0 = part ? whole : 0, s1 = part ? b.rows : whole, rows = s1 - s0;
      if (!rows) continue;
      const int r0 = rows < 16 ? (int)rows : 16, r1 = rows > 16 ? (int)(rows < 32 ? rows : 32) - 16 : 0;
      if (configured != r0 + 32 * r1) {
        config_tiles(&tc, r0, r1);
        _tile_loadconfig(&tc);
        configured = r0 + 32 * r1;
      }
      if (pn->fo) steps_f32(&b, m0, s0, s1, pn, p0, p1);
      else steps(&b, m0, s0, s1, pn, p0, p1);
    }
  }
  if (configured >= 0) _tile_release();
}

FX_AMX_TARGET
void fx_qs8_gemm_range_32x32c4__amx(FX_QS8_GEMM_RANGE_ARGS) {
  const panels pn = {n, 16, 64 + (kc + CHUNK - 1) / CHUNK * 16 * 64, panel_bytes, c_stride, p0, packed, c, o, NULL};
  run_range(m, kc, a, a_stride, row_factor, &pn, p0, p1);
}

FX_AMX_TARGET
void fx_qs8_gemm_range_f32_32x32c4__amx(FX_QS8_GEMM_RANGE_F32_ARGS) {
  const panels pn = {n, 16, 64 + (kc + CHUNK - 1) / CHUNK * 16 * 64, panel_bytes, c_stride, p0, packed, c, NULL, o};
  run_range(m, kc, a, a_stride, 0, &pn, p0, p1);
}
#endif
