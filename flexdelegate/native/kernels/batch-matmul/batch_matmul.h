/* BATCH_MATMUL (TFLite float semantics) on the f32 GEMM microkernels (README.md).
 *   A: [a_batch..., M, K], or [a_batch..., K, M] with adj_x
 *   B: [b_batch..., K, N], or [b_batch..., N, K] with adj_y
 *   C: [broadcast(a_batch, b_batch)..., M, N]
 * Batch dims are right-aligned and broadcast numpy-style (1 stretches); ranks 2..FX_BMM_MAX_RANK.
 * Every tensor is dense row-major. */
#ifndef FLEX_BATCH_MATMUL_H
#define FLEX_BATCH_MATMUL_H
#include <stddef.h>
#include <stdint.h>
#include "kernels/gemm/gemm.h"
#include "kernels/quant/requant.h"

struct fx_pool;
struct fx_qs8_gemm_config;

#define FX_BMM_MAX_RANK 6

typedef struct {
  int m, k, n, adj_x, adj_y;
  int rank;                         /* of C (>= 2) */
  int dims[FX_BMM_MAX_RANK];        /* C's shape */
  size_t batches;                   /* C's batch count (product of its batch dims) */
  size_t a_batches, b_batches;      /* distinct A / B matrices */
  /* per C batch dim: the stride, in matrices, of A's and B's batch index (0 where broadcast) */
  size_t a_step[FX_BMM_MAX_RANK], b_step[FX_BMM_MAX_RANK];
} fx_bmm_plan;

/* Rows of A per task at most (their transposed copy with adj_x stays in L2: 64 rows x K). */
#define FX_BMM_ROWS 64

/* Fills p from the operand shapes; -1 if they cannot multiply (K differs, batch dims clash, ranks
 * out of range, a dimension < 0). Zero-sized dims are allowed (nothing to compute). */
int fx_bmm_plan_init(fx_bmm_plan *p, const int *a_dims, int a_rank, const int *b_dims, int b_rank, int adj_x,
                     int adj_y);

/* Constant B: floats of the packed form of all its matrices for microkernel uk (NULL: this
 * CPU's), and the packing itself: per B matrix, ceil(N/nr) panels of a zero bias row and K rows
 * of nr (zero past N). Depends only on B's values, adj_y and uk->nr. */
size_t fx_bmm_packed_floats(const fx_bmm_plan *p, const fx_gemm_config *uk);
void fx_bmm_pack_b(const fx_bmm_plan *p, const fx_gemm_config *uk, const float *b, float *packed);

/* Scratch floats for fx_bmm_f32 on `threads` threads: B packed per invoke unless b_packed, plus
 * per-thread transposed A rows with adj_x. */
size_t fx_bmm_scratch_floats(const fx_bmm_plan *p, const fx_gemm_config *uk, int threads, int b_packed);

/* C = A B on the pool (NULL: inline). Either b (packed here into scratch) or b_packed (from
 * fx_bmm_pack_b with the same uk) is given. scratch: fx_bmm_scratch_floats() floats, or NULL
 * when that is 0. Returns 0, or -1 when an input is missing. C must not overlap A or B. */
int fx_bmm_f32(struct fx_pool *pool, const fx_bmm_plan *p, const fx_gemm_config *uk, const float *a, const float *b,
               const float *b_packed, float *c, float *scratch);

/* The drivers' task grid (FP32 and int8): tasks over (C batch, row group, panel group), >= 4
 * per thread where the work allows: rows in whole mr tiles of at most FX_BMM_ROWS; when one
 * batch's weights outweigh its rows (N > M), panel groups instead. */
typedef struct {
  size_t rows, row_groups, panels_per_group, panel_groups;
} fx_bmm_tasks;
typedef struct {
  size_t ob, ai, bi;   /* C batch; its A and B matrices */
  size_t m0, rows;     /* rows [m0, m0 + rows) of it */
  size_t pan0, pan1;   /* panels [pan0, pan1) of `all` */
} fx_bmm_task;
/* The grid for B in `all` panels of microkernel rows mr on `threads` threads; returns the task count. */
size_t fx_bmm_grid(const fx_bmm_plan *p, size_t mr, size_t all, int threads, fx_bmm_tasks *t);
void fx_bmm_task_of(const fx_bmm_plan *p, const fx_bmm_tasks *g, size_t all, size_t task, fx_bmm_task *t);
/* The A and B matrix indices of C batch ob. */
void fx_bmm_operands(const fx_bmm_plan *p, size_t ob, size_t *ai, size_t *bi);

/* int8 (qs8_batch_matmul.c): A and B int8 with zero points za, zb, C int8 through o (one
 * multiplier m, shift for every column: stock's), on the QS8 GEMM drivers of variant g: each B
 * matrix is packed per invoke into scratch (quant/pack.h, B's zero point as a row correction),
 * A's rows transposed there with adj_x. Exact int32 sums sum (a - za)(b - zb), as stock's. */
size_t fx_bmm_qs8_scratch_bytes(const fx_bmm_plan *p, const struct fx_qs8_gemm_config *g, int threads);
int fx_bmm_qs8(struct fx_pool *pool, const fx_bmm_plan *p, const struct fx_qs8_gemm_config *g, const int8_t *a,
               int32_t za, const int8_t *b, int32_t zb, int32_t m, int32_t shift, const fx_qs8_out *o, int8_t *c,
               void *scratch);
#endif
