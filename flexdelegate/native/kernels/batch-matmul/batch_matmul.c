/* BATCH_MATMUL driver (batch_matmul.h): the GEMM loop of conv.c (a panel of B in L1/L2 while
 * microkernel row tiles of A stream past it) per output batch, tasks over (batch, row group,
 * panel group) on the pool. */
#include <math.h>
#include <string.h>
#include "runtime/pool.h"
#include "batch_matmul.h"


int fx_bmm_plan_init(fx_bmm_plan *p, const int *a_dims, int a_rank, const int *b_dims, int b_rank, int adj_x,
                     int adj_y) {
  if (a_rank < 2 || b_rank < 2 || a_rank > FX_BMM_MAX_RANK || b_rank > FX_BMM_MAX_RANK) return -1;
  for (int i = 0; i < a_rank; i++)
    if (a_dims[i] < 0) return -1;
  for (int i = 0; i < b_rank; i++)
    if (b_dims[i] < 0) return -1;
  memset(p, 0, sizeof *p);
  p->adj_x = adj_x, p->adj_y = adj_y;
  p->m = adj_x ? a_dims[a_rank - 1] : a_dims[a_rank - 2];
  p->k = adj_x ? a_dims[a_rank - 2] : a_dims[a_rank - 1];
  const int kb = adj_y ? b_dims[b_rank - 1] : b_dims[b_rank - 2];
  p->n = adj_y ? b_dims[b_rank - 2] : b_dims[b_rank - 1];
  if (kb != p->k) return -1;
  const int ab = a_rank - 2, bb = b_rank - 2, cb = ab > bb ? ab : bb;
  p->rank = cb + 2;
  /* right-aligned broadcast; steps from the innermost batch dim out */
  size_t as = 1, bs = 1;
  p->batches = 1;
  for (int i = cb - 1; i >= 0; i--) {
    const int ai = i - (cb - ab), bi = i - (cb - bb);
    const int ad = ai >= 0 ? a_dims[ai] : 1, bd = bi >= 0 ? b_dims[bi] : 1;
    if (ad != bd && ad != 1 && bd != 1) return -1;
    const int cd = ad == 1 ? bd : ad;
    p->dims[i] = cd;
    p->a_step[i] = ad == 1 ? 0 : as;
    p->b_step[i] = bd == 1 ? 0 : bs;
    as *= (size_t)ad, bs *= (size_t)bd;
    p->batches *= (size_t)cd;
  }
  p->a_batches = as, p->b_batches = bs;
  p->dims[cb] = p->m, p->dims[cb + 1] = p->n;
  return 0;
}

static const fx_gemm_config *kernel(const fx_gemm_config *uk) { return uk ? uk : fx_gemm_config_get(); }

static size_t panels(const fx_bmm_plan *p, int nr) { return ((size_t)p->n + (size_t)nr - 1) / (size_t)nr; }
static size_t matrix_floats(const fx_bmm_plan *p, int nr) { return panels(p, nr) * (size_t)nr * ((size_t)p->k + 1); }

size_t fx_bmm_packed_floats(const fx_bmm_plan *p, const fx_gemm_config *uk) {
  return p->b_batches * matrix_floats(p, kernel(uk)->nr);
}

/* One B matrix: with adj_y it is [N][K], the FC layout fx_gemm_pack takes; else [K][N], whose
 * rows are already runs of a panel's nr columns. */
static void pack_matrix(const fx_bmm_plan *p, int nr, const float *b, float *dst) {
  if (p->adj_y) {
    fx_gemm_pack(p->n, p->k, nr, b, NULL, dst);
    return;
  }
  const size_t n = (size_t)p->n, k = (size_t)p->k;
  for (size_t n0 = 0; n0 < n; n0 += (size_t)nr, dst += (size_t)nr * (k + 1)) {
    const size_t cols = n - n0 < (size_t)nr ? n - n0 : (size_t)nr;
    memset(dst, 0, (size_t)nr * sizeof(float));
    for (size_t kk = 0; kk < k; kk++) {
      float *row = dst + (size_t)nr * (kk + 1);
      const float *src = b + kk * n + n0;
      for (size_t j = 0; j < cols; j++) row[j] = src[j];
      for (size_t j = cols; j < (size_t)nr; j++) row[j] = 0.0f;
    }
  }
}

void fx_bmm_pack_b(const fx_bmm_plan *p, const fx_gemm_config *uk, const float *b, float *packed) {
  const int nr = kernel(uk)->nr;
  const size_t mf = matrix_floats(p, nr), bf = (size_t)p->k * (size_t)p->n;
  for (size_t i = 0; i < p->b_batches; i++) pack_matrix(p, nr, b + i * bf, packed + i * mf);
}

typedef struct {
  const fx_bmm_plan *p;
  const fx_gemm_config *uk;
  const float *a, *b;
  const float *packed;
  float *c, *packing, *at; /* B packed here per invoke; per-thread transposed A rows */
  fx_bmm_tasks grid;
  fx_gemm_out none;
} bmm_job;

static void pack_task(void *arg, int tid, size_t task) {
  (void)tid;
  const bmm_job *j = arg;
  const fx_bmm_plan *p = j->p;
  pack_matrix(p, j->uk->nr, j->b + task * (size_t)p->k * (size_t)p->n, j->packing + task * matrix_floats(p, j->uk->nr));
}

void fx_bmm_operands(const fx_bmm_plan *p, size_t ob, size_t *ai, size_t *bi) {
  size_t a = 0, b = 0;
  for (int i = p->rank - 3; i >= 0; i--) {
    const size_t d = (size_t)p->dims[i], x = ob % d;
    ob /= d;
    a += x * p->a_step[i], b += x * p->b_step[i];
  }
  *ai = a, *bi = b;
}

size_t fx_bmm_grid(const fx_bmm_plan *p, size_t mr, size_t all, int threads, fx_bmm_tasks *t) {
  const size_t m = (size_t)p->m, n = (size_t)p->n, want = (size_t)threads * 4;
  t->rows = m < FX_BMM_ROWS ? m : FX_BMM_ROWS;
  t->panels_per_group = all;
  if (threads > 1 && p->batches * ((m + t->rows - 1) / t->rows) < want) {
    const size_t per_batch = (want + p->batches - 1) / p->batches;
    if (n > m) {
      const size_t per = all / per_batch;
      t->panels_per_group = per ? per : 1;
    } else {
      size_t rows = (m + per_batch - 1) / per_batch;
      rows = (rows + mr - 1) / mr * mr;
      if (rows < t->rows) t->rows = rows;
    }
  }
  t->row_groups = (m + t->rows - 1) / t->rows;
  t->panel_groups = (all + t->panels_per_group - 1) / t->panels_per_group;
  return p->batches * t->row_groups * t->panel_groups;
}

void fx_bmm_task_of(const fx_bmm_plan *p, const fx_bmm_tasks *g, size_t all, size_t task, fx_bmm_task *t) {
  const size_t rg = task % g->row_groups, pg = task / g->row_groups % g->panel_groups;
  t->ob = task / g->row_groups / g->panel_groups;
  fx_bmm_operands(p, t->ob, &t->ai, &t->bi);
  t->m0 = rg * g->rows;
  t->rows = (size_t)p->m - t->m0 < g->rows ? (size_t)p->m - t->m0 : g->rows;
  t->pan0 = pg * g->panels_per_group;
  t->pan1 = t->pan0 + g->panels_per_group < all ? t->pan0 + g->panels_per_group : all;
}

static void bmm_task(void *arg, int tid, size_t task) {
  const bmm_job *j = arg;
  const fx_bmm_plan *p = j->p;
  const fx_gemm_config *uk = j->uk;
  const size_t m = (size_t)p->m, k = (size_t)p->k, n = (size_t)p->n, mr = (size_t)uk->mr, nr = (size_t)uk->nr;
  fx_bmm_task t;
  fx_bmm_task_of(p, &j->grid, panels(p, uk->nr), task, &t);
  const float *a = j->a + t.ai * m * k, *w = j->packed + t.bi * matrix_floats(p, uk->nr);
  size_t as = k;
  if (p->adj_x) { /* A is [K][M]: this task's rows, transposed */
    float *at = j->at + (size_t)tid * j->grid.rows * k;
    for (size_t kk = 0; kk < k; kk++)
      for (size_t i = 0; i < t.rows; i++) at[i * k + kk] = a[kk * m + t.m0 + i];
    a = at;
  } else {
    a += t.m0 * k;
  }
  float *c = j->c + t.ob * m * n + t.m0 * n;
  for (size_t pan = t.pan0; pan < t.pan1; pan++) {
    const size_t n0 = pan * nr, nc = n - n0 < nr ? n - n0 : nr;
    const float *wp = w + pan * nr * (k + 1);
    for (size_t r = 0; r < t.rows; r += mr)
      uk->fn(t.rows - r < mr ? t.rows - r : mr, nc, k, a + r * as, as, wp, c + r * n + n0, n, NULL, &j->none);
  }
}

size_t fx_bmm_scratch_floats(const fx_bmm_plan *p, const fx_gemm_config *uk, int threads, int b_packed) {
  uk = kernel(uk);
  const size_t rows = (size_t)p->m < FX_BMM_ROWS ? (size_t)p->m : FX_BMM_ROWS;
  return (b_packed ? 0 : fx_bmm_packed_floats(p, uk)) + (p->adj_x ? (size_t)(threads > 0 ? threads : 1) * rows * (size_t)p->k : 0);
}

int fx_bmm_f32(fx_pool *pool, const fx_bmm_plan *p, const fx_gemm_config *uk, const float *a, const float *b,
               const float *b_packed, float *c, float *scratch) {
  uk = kernel(uk);
  if (!p || !c || (!a && p->m && p->k) || (!b && !b_packed && p->k && p->n)) return -1;
  const size_t m = (size_t)p->m, n = (size_t)p->n, k = (size_t)p->k;
  if (!p->batches || !m || !n) return 0;
  if (!k) { /* an empty sum */
    memset(c, 0, p->batches * m * n * sizeof(float));
    return 0;
  }
  const int threads = pool ? fx_pool_threads(pool) : 1;
  bmm_job j = {.p = p, .uk = uk, .a = a, .b = b, .c = c, .none = fx_gemm_out_clamp(-INFINITY, INFINITY)};
  j.packing = scratch;
  j.at = scratch + (b_packed ? 0 : fx_bmm_packed_floats(p, uk));
  if (!b_packed) {
    if (!scratch) return -1;
    if (pool) fx_parallel_tasks(pool, p->b_batches, pack_task, &j);
    else
      for (size_t t = 0; t < p->b_batches; t++) pack_task(&j, 0, t);
    b_packed = scratch;
  }
  if (p->adj_x && !scratch) return -1;
  j.packed = b_packed;
  const size_t tasks = fx_bmm_grid(p, (size_t)uk->mr, panels(p, uk->nr), threads, &j.grid);
  if (pool) fx_parallel_tasks(pool, tasks, bmm_task, &j);
  else
    for (size_t t = 0; t < tasks; t++) bmm_task(&j, 0, t);
  return 0;
}
