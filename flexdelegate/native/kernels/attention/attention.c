/* The fused attention driver (attention.h): (batch x head x query block) tasks on the pool. A
 * task first packs its head's K and V into GEMM panels in its thread's scratch, unless that
 * thread's previous task left them there (tasks are handed out in head order), so the panels are
 * written and read in L2 and the scratch is per thread, not per head. A task walks the key tiles;
 * per tile and per microkernel row tile: S = Q Kt (GEMM microkernel into a row-tile buffer),
 * the online-softmax step per row, the output rows rescaled when a row's max grew, O += P V
 * (the same microkernel, accumulating through its residual input). So a key tile's K and V
 * panels (~130 KB at D = 64) stay in L2 across the block's rows, and S is never bigger than
 * mr x tile. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "runtime/cpu.h"
#include "runtime/pool.h"
#include "../simd/vexp.h"
#include "attention.h"

fx_isa_menu fx_attention_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, x, mr, nr, gemm)                                                              \
  FX_ISA_ENTRY(isa, &((const fx_attention_config){name, FX_ISA_##isa, mr, nr, gemm, fx_attn_softmax_##x, \
                                                  fx_attn_pack_k_##x, fx_attn_pack_v_##x}))
#include "f32-attention.inc"
#undef FX_UKERNEL
}};

const fx_attention_config *fx_attention_config_get(void) { return fx_isa_chosen(&fx_attention_menu); }
const fx_attention_config *fx_attention_config_at(int i) { return fx_isa_at(&fx_attention_menu, i); }

/* Sequences up to FX_ATTN_ONE_TILE keys run as one key tile (a plain softmax, no rescaling);
 * longer ones in tiles of FX_ATTN_TILE keys (a multiple of every nr). */
#define FX_ATTN_ONE_TILE 512
#define FX_ATTN_TILE 256
#define FX_ALIGN 16 /* floats: 64 bytes */

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

typedef struct {
  const fx_attention_config *cfg;
  const fx_attn_params *p;
  fx_attn_in q, k, v;
  fx_attn_out o;
  size_t kt, ntiles, kts;    /* key tile, tiles, row stride of a row tile's scores */
  size_t dpanels;            /* panels of nr output features */
  size_t kpack, vpack;       /* floats per packed K / V head */
  float *tbuf;               /* per thread: packed K, packed V, scores, m, l, corr */
  const float **packed;      /* per thread: the K and V heads (first rows) it holds packed */
  size_t tfloats, qb, nqb;   /* per-thread floats, query rows per task, query blocks per head */
  fx_gemm_out none;
} attn_job;

/* Floats of one tile's V panels (n keys): dpanels panels of a zero bias row and n rows of nr. */
static size_t vtile_floats(const attn_job *j, size_t n) { return j->dpanels * (size_t)j->cfg->nr * (n + 1); }

static void layout(attn_job *j, const fx_attention_config *cfg, const fx_attn_params *p, int threads) {
  const size_t nr = (size_t)cfg->nr, sk = (size_t)p->kv_len, bh = (size_t)p->batch * (size_t)p->heads;
  j->cfg = cfg;
  j->p = p;
  j->kt = sk <= FX_ATTN_ONE_TILE ? sk : FX_ATTN_TILE;
  j->ntiles = (sk + j->kt - 1) / j->kt;
  j->kts = round_up(j->kt, FX_ALIGN);
  j->dpanels = ((size_t)p->value_dim + nr - 1) / nr;
  j->kpack = round_up((sk + nr - 1) / nr * nr * ((size_t)p->head_dim + 1), FX_ALIGN);
  j->vpack = round_up((j->ntiles - 1) * vtile_floats(j, j->kt) + vtile_floats(j, sk - (j->ntiles - 1) * j->kt), FX_ALIGN);
  /* >= 4 tasks per thread where the rows allow, in whole row tiles */
  const size_t rtiles = ((size_t)p->q_len + (size_t)cfg->mr - 1) / (size_t)cfg->mr;
  size_t nqb = ((size_t)threads * 4 + bh - 1) / bh;
  if (threads == 1) nqb = 1;
  if (nqb > rtiles) nqb = rtiles;
  j->qb = round_up(((size_t)p->q_len + nqb - 1) / nqb, (size_t)cfg->mr);
  j->nqb = ((size_t)p->q_len + j->qb - 1) / j->qb;
  j->tfloats = j->kpack + j->vpack + round_up((size_t)cfg->mr * j->kts + 2 * j->qb + (size_t)cfg->mr, FX_ALIGN);
}

size_t fx_attention_scratch_bytes(const fx_attention_config *cfg, const fx_attn_params *p, int threads) {
  if (!cfg) cfg = fx_attention_config_get();
  if (threads < 1) threads = 1;
  attn_job j;
  layout(&j, cfg, p, threads);
  return ((size_t)threads * j.tfloats + FX_ALIGN) * sizeof(float) + 2 * (size_t)threads * sizeof(const float *);
}

/* The mask row of query i for keys [j0, ...), or NULL. */
static const void *mask_row(const fx_attn_params *p, size_t b, size_t h, size_t i, size_t j0) {
  const ptrdiff_t at = (ptrdiff_t)b * p->mask_batch + (ptrdiff_t)h * p->mask_head + (ptrdiff_t)i * p->mask_row +
                       (ptrdiff_t)j0;
  if (p->mask_kind == FX_ATTN_MASK_SELECT) return (const uint8_t *)p->mask + at;
  if (p->mask_kind == FX_ATTN_MASK_ADD) return (const float *)p->mask + at;
  return NULL;
}

/* Keys [0, limit) can be visible to some row of [r0, r1): causal rows see j <= i + offset; a row
 * that sees none (i + offset < 0) is all fill, so it needs every key, as stock's SOFTMAX does. */
static size_t key_limit(const fx_attn_params *p, size_t r0, size_t r1) {
  const long long sk = p->kv_len, off = p->causal_offset;
  if (!p->causal || (long long)r0 + off < 0) return (size_t)sk;
  const long long lim = (long long)r1 - 1 + off + 1;
  return (size_t)(lim < sk ? lim : sk);
}

/* One task's (batch, head) and its thread's buffers. */
typedef struct {
  size_t b, h, i0;
  const float *kp, *vp, *qh;
  float *oh, *sc, *m, *l, *corr; /* scores of a row tile; running max, sum of the block's rows */
} attn_rows;

/* Key tile t for rows [r0, r0 + rows), keys below lim only: S = Q Kt, the softmax step per row,
 * the rows' output rescaled, O += P V (the first tile stores instead). */
static void tile_rows(const attn_job *j, const attn_rows *a, size_t r0, size_t rows, size_t t, size_t lim) {
  const fx_attn_params *p = j->p;
  const fx_attention_config *cfg = j->cfg;
  const size_t nr = (size_t)cfg->nr, d = (size_t)p->head_dim, dv = (size_t)p->value_dim, j0 = t * j->kt;
  const size_t tile_n = (size_t)p->kv_len - j0 < j->kt ? (size_t)p->kv_len - j0 : j->kt;
  const size_t n = lim - j0 < tile_n ? lim - j0 : tile_n;
  const float *qr = a->qh + (ptrdiff_t)r0 * j->q.seq, *vt = a->vp + t * vtile_floats(j, j->kt);
  for (size_t c = 0; c < n; c += nr)
    cfg->gemm(rows, n - c < nr ? n - c : nr, d, qr, (size_t)j->q.seq, a->kp + (j0 + c) / nr * nr * (d + 1), a->sc + c,
              j->kts, NULL, &j->none);
  for (size_t r = 0; r < rows; r++) {
    const size_t i = r0 + r;
    fx_attn_rowmask mk = {n, p->fill, NULL, NULL};
    if (p->causal) {
      const long long vis = (long long)i + p->causal_offset + 1 - (long long)j0;
      mk.visible = vis < 0 ? 0 : (size_t)vis < n ? (size_t)vis : n;
    }
    if (p->mask_kind == FX_ATTN_MASK_SELECT) mk.keep = mask_row(p, a->b, a->h, i, j0);
    if (p->mask_kind == FX_ATTN_MASK_ADD) mk.add = mask_row(p, a->b, a->h, i, j0);
    a->corr[r] = cfg->softmax(a->sc + r * j->kts, n, p->scale, &mk, &a->m[i - a->i0], &a->l[i - a->i0]);
  }
  float *orow = a->oh + (ptrdiff_t)r0 * j->o.seq;
  if (t > 0)
    for (size_t r = 0; r < rows; r++)
      if (a->corr[r] != 1.0f) {
        float *o = orow + (ptrdiff_t)r * j->o.seq;
        for (size_t f = 0; f < dv; f++) o[f] *= a->corr[r];
      }
  for (size_t c = 0; c < dv; c += nr)
    cfg->gemm(rows, dv - c < nr ? dv - c : nr, n, a->sc, j->kts, vt + c / nr * nr * (tile_n + 1), orow + c,
              (size_t)j->o.seq, t > 0 ? orow + c : NULL, &j->none);
}

/* Whether causal row i's skipped keys (j > i + offset: never computed) could weigh anything:
 * their scores are fill (+ add); they vanish beside the row's max m unless every key the row sees
 * is hidden too (m is then itself a fill), or the fill is small. Such a row is computed again over
 * every key, as stock's SOFTMAX sees them (a uniform row, for Keras' masks). */
static int skipped_keys_count(const attn_job *j, const attn_rows *a, size_t i) {
  const fx_attn_params *p = j->p;
  const long long vis = (long long)i + p->causal_offset + 1;
  if (vis >= p->kv_len) return 0; /* nothing skipped */
  float top = p->fill;
  if (p->mask_kind == FX_ATTN_MASK_ADD) {
    const float *add = mask_row(p, a->b, a->h, i, 0);
    float amax = -INFINITY;
    for (long long jj = vis < 0 ? 0 : vis; jj < p->kv_len; jj++) amax = add[jj] > amax ? add[jj] : amax;
    top = p->fill + amax;
  }
  return !(a->m[i - a->i0] - top > -FX_EXP_FTZ_MIN); /* e^(top - m) flushes to 0 below -87.3 */
}

static void attn_task(void *arg, int tid, size_t task) {
  attn_job *j = arg;
  const fx_attn_params *p = j->p;
  const size_t mr = (size_t)j->cfg->mr;
  const size_t bh = task / j->nqb;
  size_t blk = task % j->nqb;
  if (p->causal) blk = j->nqb - 1 - blk; /* the longest blocks (last rows) first */
  attn_rows a;
  a.b = bh / (size_t)p->heads, a.h = bh % (size_t)p->heads;
  a.i0 = blk * j->qb;
  const size_t i1 = a.i0 + j->qb < (size_t)p->q_len ? a.i0 + j->qb : (size_t)p->q_len;
  float *kp = j->tbuf + (size_t)tid * j->tfloats, *vp = kp + j->kpack;
  const float *kh = j->k.data + (ptrdiff_t)a.b * j->k.batch + (ptrdiff_t)a.h * j->k.head;
  const float *vh = j->v.data + (ptrdiff_t)a.b * j->v.batch + (ptrdiff_t)a.h * j->v.head;
  if (j->packed[2 * tid] != kh || j->packed[2 * tid + 1] != vh) { /* heads shared by zero strides: once */
    const size_t nr = (size_t)j->cfg->nr, sk = (size_t)p->kv_len;
    j->cfg->pack_k(kh, j->k.seq, sk, (size_t)p->head_dim, nr, kp);
    for (size_t t0 = 0, t = 0; t0 < sk; t0 += j->kt, t++) /* per key tile */
      j->cfg->pack_v(vh + (ptrdiff_t)t0 * j->v.seq, j->v.seq, sk - t0 < j->kt ? sk - t0 : j->kt, (size_t)p->value_dim,
                     nr, vp + t * vtile_floats(j, j->kt));
    j->packed[2 * tid] = kh, j->packed[2 * tid + 1] = vh;
  }
  a.kp = kp, a.vp = vp;
  a.qh = j->q.data + (ptrdiff_t)a.b * j->q.batch + (ptrdiff_t)a.h * j->q.head;
  a.oh = j->o.data + (ptrdiff_t)a.b * j->o.batch + (ptrdiff_t)a.h * j->o.head;
  a.sc = vp + j->vpack, a.m = a.sc + mr * j->kts, a.l = a.m + j->qb, a.corr = a.l + j->qb;
  for (size_t i = 0; i < i1 - a.i0; i++) a.m[i] = -INFINITY, a.l[i] = 0.0f;
  const size_t limit = key_limit(p, a.i0, i1);
  for (size_t t = 0; t < j->ntiles && t * j->kt < limit; t++)
    for (size_t r0 = a.i0; r0 < i1; r0 += mr) {
      const size_t rows = i1 - r0 < mr ? i1 - r0 : mr, lim = key_limit(p, r0, r0 + rows);
      if (lim > t * j->kt) tile_rows(j, &a, r0, rows, t, lim); /* (tile 0 always has a visible key) */
    }
  for (size_t i = a.i0; i < i1; i++) {
    if (p->causal && skipped_keys_count(j, &a, i)) {
      a.m[i - a.i0] = -INFINITY, a.l[i - a.i0] = 0.0f;
      for (size_t t = 0; t < j->ntiles; t++) tile_rows(j, &a, i, 1, t, (size_t)p->kv_len);
    }
    float *o = a.oh + (ptrdiff_t)i * j->o.seq; /* l = 0: every score was -inf, stock's NaN */
    const float li = a.l[i - a.i0], inv = li > 0.0f ? 1.0f / li : NAN;
    for (size_t f = 0; f < (size_t)p->value_dim; f++) o[f] = li > 0.0f ? o[f] * inv : NAN;
  }
}

int fx_attention_f32(const fx_attention_config *cfg, fx_pool *pool, const fx_attn_params *p, fx_attn_in q,
                     fx_attn_in k, fx_attn_in v, fx_attn_out o, void *scratch) {
  if (!cfg) cfg = fx_attention_config_get();
  if (!p || p->batch < 1 || p->heads < 1 || p->q_len < 1 || p->kv_len < 1 || p->head_dim < 1 || p->value_dim < 1 ||
      !q.data || !k.data || !v.data || !o.data || !scratch || (p->mask_kind != FX_ATTN_MASK_NONE && !p->mask))
    return -1;
  const int threads = pool ? fx_pool_threads(pool) : 1;
  attn_job j;
  layout(&j, cfg, p, threads);
  j.q = q, j.k = k, j.v = v, j.o = o;
  j.none = fx_gemm_out_clamp(-INFINITY, INFINITY);
  j.tbuf = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
  j.packed = (const float **)(j.tbuf + (size_t)threads * j.tfloats);
  for (int t = 0; t < 2 * threads; t++) j.packed[t] = NULL;
  const size_t tasks = (size_t)p->batch * (size_t)p->heads * j.nqb;
  if (pool) fx_parallel_tasks(pool, tasks, attn_task, &j);
  else
    for (size_t t = 0; t < tasks; t++) attn_task(&j, 0, t);
  return 0;
}

int fx_attn_mask_is_causal(const uint8_t *mask, int q_len, int kv_len, ptrdiff_t row_stride, int *offset) {
  if (!mask || q_len < 1 || kv_len < 1) return 0;
  /* the offset from row 0: keys [0, 1 + offset) kept */
  int kept = 0;
  while (kept < kv_len && mask[kept]) kept++;
  const int off = kept - 1;
  for (int i = 0; i < q_len; i++) {
    const uint8_t *row = mask + (ptrdiff_t)i * row_stride;
    for (int jj = 0; jj < kv_len; jj++)
      if (!!row[jj] != (jj <= i + off)) return 0;
  }
  if (offset) *offset = off;
  return 1;
}
