/* int8 BATCH_MATMUL on the QS8 GEMM drivers (batch_matmul.h). Both operands may change at every
 * invoke (attention's Q x K^T), so each B matrix is packed into scratch per invoke as GEMM
 * panels of its N columns (a constant B too: the model's bytes are read in place and the
 * packing costs K x N per matrix, against M x K x N multiply-adds); its zero point becomes the
 * drivers' row correction (-zb x row sum of A) and A's the packed bias (quant/pack.h), so the
 * int32 sums are sum (a - za)(b - zb) exactly, as stock's, wrapping alike. One multiplier for
 * every column (stock's per-tensor scales), in each panel's requantization. */
#include <string.h>
#include "kernels/qs8-gemm/qs8-run.h"
#include "runtime/pool.h"
#include "batch_matmul.h"

static size_t up64(size_t v) { return (v + 63) & ~(size_t)63; }

/* Scratch: n multipliers then n shifts; the packed B matrices; per thread, transposed A rows. */
typedef struct {
  size_t matrix_bytes, panel_bytes, packed_at, at_at, total;
} qlayout;

static qlayout layout_of(const fx_bmm_plan *p, const fx_qs8_gemm_config *g, int threads) {
  const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(g, p->n, 1, p->k);
  qlayout l = {.matrix_bytes = fx_qs8_gemm_packed_bytes(&geom), .panel_bytes = fx_qs8_gemm_panel_bytes(&geom)};
  const size_t rows = (size_t)p->m < FX_BMM_ROWS ? (size_t)p->m : FX_BMM_ROWS;
  l.packed_at = up64(2 * sizeof(int32_t) * (size_t)p->n);
  l.at_at = l.packed_at + up64(p->b_batches * l.matrix_bytes);
  l.total = l.at_at + (p->adj_x ? (size_t)(threads > 0 ? threads : 1) * rows * (size_t)p->k : 0);
  return l;
}

size_t fx_bmm_qs8_scratch_bytes(const fx_bmm_plan *p, const fx_qs8_gemm_config *g, int threads) {
  return p->m && p->n && p->k && p->batches ? layout_of(p, g, threads).total : 0;
}

typedef struct {
  const fx_bmm_plan *p;
  const fx_qs8_gemm_config *g;
  const int8_t *a, *b;
  int8_t *c;
  uint8_t *scratch;
  int32_t za, zb;
  const fx_qs8_out *o;
  qlayout l;
  fx_bmm_tasks grid;
  int failed;
} qbmm_job;

/* B matrix `task`: [N][K] with adj_y (channel c's weights a row), else [K][N] (a column). */
static void pack_task(void *arg, int tid, size_t task) {
  (void)tid;
  qbmm_job *j = arg;
  const fx_bmm_plan *p = j->p;
  const size_t k = (size_t)p->k, n = (size_t)p->n;
  const fx_qs8_gemm_geom geom = fx_qs8_gemm_geom_of(j->g, p->n, 1, p->k);
  const int32_t *ms = (const int32_t *)j->scratch;
  if (fx_qs8_pack_gemm_zw(&geom, j->b + task * k * n, p->adj_y ? k : 1, p->adj_y ? 1 : n, j->zb, j->za, ms, ms + n,
                          j->scratch + j->l.packed_at + task * j->l.matrix_bytes))
    j->failed = 1;
}

static void gemm_task(void *arg, int tid, size_t task) {
  const qbmm_job *j = arg;
  const fx_bmm_plan *p = j->p;
  const size_t m = (size_t)p->m, k = (size_t)p->k, n = (size_t)p->n;
  const size_t all = (n + (size_t)j->g->nr - 1) / (size_t)j->g->nr;
  fx_bmm_task t;
  fx_bmm_task_of(p, &j->grid, all, task, &t);
  const int8_t *a = j->a + t.ai * m * k;
  if (p->adj_x) { /* A is [K][M]: this task's rows, transposed */
    int8_t *at = (int8_t *)j->scratch + j->l.at_at + (size_t)tid * j->grid.rows * k;
    for (size_t kk = 0; kk < k; kk++)
      for (size_t i = 0; i < t.rows; i++) at[i * k + kk] = a[kk * m + t.m0 + i];
    a = at;
  } else {
    a += t.m0 * k;
  }
  const uint8_t *w = j->scratch + j->l.packed_at + t.bi * j->l.matrix_bytes + t.pan0 * j->l.panel_bytes;
  fx_qs8_gemm_run_split(j->g, t.rows, n, k, a, k, w, j->c + (t.ob * m + t.m0) * n, n, -j->zb, j->o, t.pan0,
                        t.pan1);
}

int fx_bmm_qs8(fx_pool *pool, const fx_bmm_plan *p, const fx_qs8_gemm_config *g, const int8_t *a, int32_t za,
               const int8_t *b, int32_t zb, int32_t m, int32_t shift, const fx_qs8_out *o, int8_t *c, void *scratch) {
  if (!p || !g || !o) return -1;
  if (!p->batches || !p->m || !p->n) return 0;
  if (!p->k || !a || !b || !c || !scratch) return -1; /* an empty sum is left to stock (ir/shape.c) */
  const int threads = pool ? fx_pool_threads(pool) : 1;
  qbmm_job j = {.p = p, .g = g, .a = a, .b = b, .c = c, .scratch = scratch, .za = za, .zb = zb, .o = o,
                .l = layout_of(p, g, threads)};
  int32_t *ms = scratch;
  for (int i = 0; i < p->n; i++) ms[i] = m, ms[p->n + i] = shift;
  if (pool) fx_parallel_tasks(pool, p->b_batches, pack_task, &j);
  else
    for (size_t t = 0; t < p->b_batches; t++) pack_task(&j, 0, t);
  if (j.failed) return -1; /* a multiplier the kernels do not take (the reader refuses them) */
  const size_t panels = ((size_t)p->n + (size_t)g->nr - 1) / (size_t)g->nr;
  const size_t tasks = fx_bmm_grid(p, (size_t)g->mr, panels, threads, &j.grid);
  if (pool) fx_parallel_tasks(pool, tasks, gemm_task, &j);
  else
    for (size_t t = 0; t < tasks; t++) gemm_task(&j, 0, t);
  return 0;
}
