/* AMX-INT8 GEMM over a whole range: 32 rows x 32 channels (two 16-channel panels) per step in
 * four 16x16 int32 tiles, k in chunks of 64 bytes. A panel's k-groups (16 channels x 4 bytes)
 * are exactly the rows of an AMX B tile, so 16 of them (one chunk) load as one tile; the
 * packing pads every panel to whole chunks with zero weights (kg_align 16 in qs8-gemm.inc).
 * tdpbssd multiplies signed by signed bytes into int32 without saturation, as TFLite's
 * accumulators, so the panel's bias needs no activation offset (a_offset 0) and A is read
 * in place: whole 64-byte chunks by tileloadd at the row stride; the last chunk of a row when
 * kc is not a multiple of 64 is copied once per block of rows into a zero-padded buffer (the
 * padding meets zero weights). The accumulators start at the bias (a tile loaded with stride
 * 0 repeats one row), go through memory once, and leave through the VNNI kernels' output stage
 * (c4-avx512vnni.h: the exact requantization), so results are those of every other variant.
 *
 * The tile state is configured at entry and released at exit: a call is a whole task's range,
 * and the kernel leaves no AMX state behind (an idle thread's context switches stay small). */
#if defined(__x86_64__)
#include <string.h>
#include "c4-avx512vnni.h"

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
 * C tiles. */
FX_AMX_TARGET static void compute(const block *b, size_t s, const int8_t *w0, const int8_t *w1, int two_halves) {
  const int8_t *a0 = b->a + s * b->a_stride, *a1 = a0 + 16 * b->a_stride;
  const size_t full = b->tail ? b->chunks - 1 : b->chunks;
  LOAD(C00, w0, 0); /* the bias, 16 int32, in every row */
  if (two_halves) LOAD(C10, w0, 0);
  if (w1) {
    LOAD(C01, w1, 0);
    if (two_halves) LOAD(C11, w1, 0);
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
FX_AMX_TARGET static void finish_panel(const int32_t *cb, size_t rows, const int32_t *corr, const fx_c4v_out *os,
                                       size_t nc, int8_t *c, size_t c_stride) {
  if (os->rq16.on && !corr) {
    const fx_rq16_avx512 q = os->rq16;
    for (size_t i = 0; i < rows; i++, cb += 32, c += c_stride) fx_rq16_store_avx512(c, _mm512_load_si512(cb), &q, nc);
    return;
  }
  for (size_t i = 0; i < rows; i++, cb += 32, c += c_stride) {
    __m512i v = _mm512_load_si512(cb);
    if (corr) v = _mm512_add_epi32(v, _mm512_set1_epi32(corr[i]));
    if (os->rq16.on) {
      fx_rq16_store_avx512(c, v, &os->rq16, nc);
    } else {
      const __m256i lo = fx_rq8_apply_avx2(_mm512_castsi512_si256(v), &os->rq0);
      const __m256i hi = fx_rq8_apply_avx2(_mm512_extracti64x4_epi64(v, 1), &os->rq1);
      fx_store_bytes_avx2(c, fx_pack16_avx2(lo, hi), nc);
    }
  }
}

/* Rows [s0, s1) of a block (32-row steps; a last shorter one only as the whole range) over
 * panels [p0, p1) in pairs, the tiles configured for those steps. */
typedef struct {
  size_t n, nr, rq_at, panel_bytes, c_stride, p0;
  const void *packed;
  int8_t *c;
  const fx_qs8_out *o;
} panels;

/* A step's results waiting in a cbuf for their output stage. */
typedef struct {
  size_t s, rows;
} pending;

FX_AMX_TARGET static void finish(const block *b, const pending *d, int32_t cbuf[32][32], const fx_c4v_out *os,
                                 size_t nc0, size_t nc1, int8_t *c, size_t c_stride) {
  const int32_t *corr = b->corr ? b->corr + d->s : NULL;
  c += d->s * c_stride;
  finish_panel(&cbuf[0][0], d->rows, corr, &os[0], nc0, c, c_stride);
  if (nc1) finish_panel(&cbuf[0][16], d->rows, corr, &os[1], nc1, c + 16, c_stride);
}

/* Software-pipelined: a step's tile instructions are issued, then the previous step's output
 * stage runs on the vector units while the tiles compute, then the tiles are stored (two
 * cbufs in turn). */
FX_AMX_TARGET static void steps(const block *b, size_t m0, size_t s0, size_t s1, const panels *pn, size_t p0,
                                size_t p1) {
  int32_t cbuf[2][32][32] __attribute__((aligned(64)));
  const size_t nr = pn->nr;
  for (size_t p = p0; p < p1; p += 2) {
    const int8_t *w0 = (const int8_t *)pn->packed + (p - pn->p0) * pn->panel_bytes;
    const int8_t *w1 = p + 1 < p1 ? w0 + pn->panel_bytes : NULL;
    const size_t n0 = p * nr, nc0 = pn->n - n0 < nr ? pn->n - n0 : nr;
    const size_t nc1 = w1 ? (pn->n - n0 - nc0 < nr ? pn->n - n0 - nc0 : nr) : 0;
    int8_t *c = pn->c + m0 * pn->c_stride + n0;
    fx_c4v_out os[2];
    os[0] = fx_c4v_out_of((const int32_t *)(w0 + pn->rq_at), pn->o);
    if (w1) os[1] = fx_c4v_out_of((const int32_t *)(w1 + pn->rq_at), pn->o);
    pending d = {0, 0};
    int cur = 0;
    for (size_t s = s0; s < s1; s += 32, cur ^= 1) {
      const size_t rows = s1 - s < 32 ? s1 - s : 32;
      compute(b, s, w0, w1, rows > 16);
      if (d.rows) finish(b, &d, cbuf[cur ^ 1], os, nc0, nc1, c, pn->c_stride);
      store(cbuf[cur], w1 != NULL, rows > 16);
      d = (pending){s, rows};
    }
    finish(b, &d, cbuf[cur ^ 1], os, nc0, nc1, c, pn->c_stride);
  }
}

FX_AMX_TARGET
void fx_qs8_gemm_range_32x32c4__amx(FX_QS8_GEMM_RANGE_ARGS) {
  const size_t chunks = (kc + CHUNK - 1) / CHUNK, tail_bytes = kc % CHUNK;
  const panels pn = {n, 16, 64 + chunks * 16 * 64, panel_bytes, c_stride, p0, packed, c, o};
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
      steps(&b, m0, s0, s1, &pn, p0, p1);
    }
  }
  if (configured >= 0) _tile_release();
}
#endif
