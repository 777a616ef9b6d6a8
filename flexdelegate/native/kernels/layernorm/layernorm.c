/* The LayerNorm variants of f32-layernorm.inc, one per ISA family (probed in runtime/cpu.c),
 * and the driver that splits rows across the thread pool. */
#include "runtime/pool.h"
#include "layernorm.h"

fx_isa_menu fx_layernorm_menu = {.by_isa = {
#define FX_UKERNEL(isa, name, fn) FX_ISA_ENTRY(isa, &((const fx_layernorm_config){name, FX_ISA_##isa, fn}))
#include "f32-layernorm.inc"
#undef FX_UKERNEL
}};

const fx_layernorm_config *fx_layernorm_config_get(void) { return fx_isa_chosen(&fx_layernorm_menu); }
const fx_layernorm_config *fx_layernorm_config_at(int i) { return fx_isa_at(&fx_layernorm_menu, i); }

/* Floats per task, about: enough work that a task outweighs handing it out. */
#define FX_LN_TASK_FLOATS 32768

typedef struct {
  fx_layernorm_fn fn;
  size_t rows, per, c, xs, ys;
  const float *x;
  float *y;
  const fx_layernorm_params *p;
} ln_job;

static void ln_task(void *arg, int tid, size_t task) {
  (void)tid;
  const ln_job *j = arg;
  const size_t r0 = task * j->per, n = j->rows - r0 < j->per ? j->rows - r0 : j->per;
  j->fn(n, j->c, j->x + r0 * j->xs, j->xs, j->y + r0 * j->ys, j->ys, j->p);
}

void fx_layernorm_f32(fx_pool *pool, size_t rows, size_t c, const float *x, size_t x_stride, float *y,
                      size_t y_stride, const fx_layernorm_params *p) {
  const fx_layernorm_fn fn = fx_layernorm_config_get()->fn;
  const size_t threads = pool ? (size_t)fx_pool_threads(pool) : 1, work = rows * c;
  if (threads == 1 || rows < 2 || work < 2 * FX_LN_TASK_FLOATS) {
    fn(rows, c, x, x_stride, y, y_stride, p);
    return;
  }
  size_t tasks = work / FX_LN_TASK_FLOATS; /* >= 2 */
  if (tasks < threads) tasks = threads;
  if (tasks > rows) tasks = rows;
  const size_t per = (rows + tasks - 1) / tasks;
  ln_job j = {fn, rows, per, c, x_stride, y_stride, x, y, p};
  fx_parallel_tasks(pool, (rows + per - 1) / per, ln_task, &j);
}
