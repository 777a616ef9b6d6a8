/* BATCH_MATMUL (TFLite float semantics) on the f32 GEMM microkernels (README.md).
 *   A: [a_batch..., M, K], or [a_batch..., K, M] with adj_x
 *   B: [b_batch..., K, N], or [b_batch..., N, K] with adj_y
 *   C: [broadcast(a_batch, b_batch)..., M, N]
 * Batch dims are right-aligned and broadcast numpy-style (1 stretches); ranks 2..FX_BMM_MAX_RANK.
 * Every tensor is dense row-major. */
#ifndef FLEX_BATCH_MATMUL_H
#define FLEX_BATCH_MATMUL_H
#include <stddef.h>
#include "kernels/gemm/gemm.h"

struct fx_pool;

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
#endif
