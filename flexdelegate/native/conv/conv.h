#ifndef FLEX_CONV_H
#define FLEX_CONV_H
#include <stddef.h>
#include "kernels/ops/ops.h"
#include "kernels/qs8-gemm/qs8-run.h"

typedef struct fx_conv_pack fx_conv_pack;

/* Geometry of one GEMM-lowered op. FC and 1x1/stride-1/unpadded convs are `direct`
 * (the input is already the A matrix, m rows of k). */
typedef struct {
  size_t m;            /* output rows: batch * oh * ow, or FC rows */
  int direct;
  int ih, iw, cin, oh, ow, kh, kw, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
  /* A fused residual ADD (fuse.c): y = residual_act(y + residual), same [m][n] layout as y. */
  const float *residual;
  int residual_act;
} fx_conv_geom;

struct fx_store;
/* w is [n][k] row-major (TFLite conv [cout][kh][kw][cin] and FC [out][in]); bias may be NULL.
 * The packed form comes from the store (cache file or memory). With w NULL, the weights are
 * the deferred fold `wsrc` (a reference is kept): keyed by its recipe, computed only to pack. */
struct fx_blob;
fx_conv_pack *fx_conv_pack_new(struct fx_store *store, int n, int k, int tile, const float *w,
                               struct fx_blob *wsrc, const float *bias);
int fx_conv_pack_tile(const fx_conv_pack *p);
/* The im2col GEMM-panel packing of a Winograd pack's weights (from the same store), so a
 * budget plan can run the layer as GEMM where the Winograd form does not fit. NULL on OOM. */
fx_conv_pack *fx_conv_pack_gemm_form(struct fx_store *store, const fx_conv_pack *p);
/* Nonzero when p's weights are in the cache file's mapping (not packed, not pending). */
int fx_conv_pack_mapped(const fx_conv_pack *p);
/* Frees a pack whose weights are still pending, taking them back out of the store's commit. */
void fx_conv_pack_forget(struct fx_store *store, fx_conv_pack *p);
void fx_conv_pack_free(fx_conv_pack *p);
/* Verifies cached packed weights once (repacking from the model if damaged); -1 on OOM.
 * unmapped: through the file, not the mapping (weights a budget plan streams). */
int fx_conv_pack_check(fx_conv_pack *p, int unmapped);
/* If the cache mapping behind the weights was damaged under us (truncated, rewritten in
 * place), repacks them in memory: 1 repaired, 0 nothing to do, -1 out of memory. */
int fx_conv_pack_repair(fx_conv_pack *p);
/* The microkernel's name: the IGEMM one when the pack runs direct (or `direct` asks for it). */
const char *fx_conv_pack_kernel(const fx_conv_pack *p, int direct);
size_t fx_conv_scratch_bytes(const fx_conv_pack *p, const fx_conv_geom *g, int threads);
void fx_conv_run(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                 float *y, float *scratch, int act);
/* Part of the conv, for budget plans: output rows [m0, m1) and weight panels [pan0, pan1)
 * (panel = nr output channels, contiguous in the packed blob, fx_conv_panel_bytes each), with
 * `panels` pointing at panel pan0 (e.g. a slice streamed into the arena); tile caps the im2col
 * rows per thread (0 = default), so the scratch fits the plan's slot. A Winograd pack runs
 * every row (m0, m1 and tile are not used) with its whole scratch. */
void fx_conv_run_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                      float *y, float *scratch, int act, const float *panels, int pan0, int pan1,
                      size_t m0, size_t m1, size_t tile);
int fx_conv_panels(const fx_conv_pack *p);
int fx_conv_nr(const fx_conv_pack *p);
int fx_conv_isa(const fx_conv_pack *p); /* the ISA family of its GEMM kernel (runtime/cpu.h) */
size_t fx_conv_panel_bytes(const fx_conv_pack *p);
size_t fx_conv_row_bytes(const fx_conv_pack *p); /* im2col bytes per output row per thread */
struct fx_wref;
const struct fx_wref *fx_conv_weights(const fx_conv_pack *p);

/* ---- direct convolution (implicit GEMM, direct.c): the same packed panels, no scratch ---- */
struct fx_gemm_config;
struct fx_gemm_out;
struct fx_igemm_config;
/* Whether this conv can run direct: GEMM-packed (not Winograd) weights of a conv (not FC)
 * whose kernel size and channels fit the fixed row-pointer and zero-row buffers. */
int fx_conv_direct_supported(const fx_conv_pack *p, const fx_conv_geom *g);
/* Makes fx_conv_run / fx_conv_run_part run this pack direct (scratch 0; the kernel name says
 * so). Only for a supported geometry. */
void fx_conv_set_direct(fx_conv_pack *p, int on);
int fx_conv_pack_direct(const fx_conv_pack *p);
/* Makes fx_conv_run run this GEMM-packed stride-1 3x3 conv as Winograd F(tile, 3) from its
 * panels (winograd_rt.c; tile 0: off), given fx_conv_winograd_rt_scratch_bytes of scratch;
 * fx_conv_run_part's partial runs stay GEMM (a budget plan asks for fx_conv_run_winograd_rt_part). */
void fx_conv_set_winograd_rt(fx_conv_pack *p, int tile);
int fx_conv_pack_winograd_rt(const fx_conv_pack *p);
size_t fx_conv_winograd_rt_scratch_bytes(const fx_conv_pack *p, const fx_conv_geom *g, int threads);
/* Panels [pan0, pan1) of a conv with a run-time Winograd tile (fx_conv_pack_winograd_rt), as
 * Winograd from those GEMM panels at `panels` (a budget plan's slice: each call transforms the
 * whole input again); scratch: fx_conv_winograd_rt_scratch_bytes. */
void fx_conv_run_winograd_rt_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                                  float *y, float *scratch, int act, const float *panels, int pan0, int pan1);
/* As fx_conv_run_part, direct: rows [m0, m1), panels [pan0, pan1) at `panels`; no scratch. */
void fx_conv_run_direct_part(fx_pool *pool, const fx_conv_pack *p, const fx_conv_geom *g, const float *x,
                             float *y, int act, const float *panels, int pan0, int pan1, size_t m0, size_t m1);
/* ---- stem conv (stem.c): a 3x3 conv of a 3-channel image, direct from the same panels ---- */
/* Whether this conv can run as a stem: GEMM-packed 3x3 weights over 3 input channels, undilated,
 * an input row within the zero row's length, and a stem kernel for the pack's GEMM kernel. */
int fx_conv_stem_supported(const fx_conv_pack *p, const fx_conv_geom *g);
/* Makes the pack run direct through the stem kernel (on), or as before (off: im2col). Only for
 * a supported geometry; fx_conv_set_direct after it chooses again. */
void fx_conv_set_stem(fx_conv_pack *p, int on);
int fx_conv_pack_stem(const fx_conv_pack *p);

/* A pack for GEMM kernel `uk` (any this CPU runs) rather than the chosen one: test entries. */
fx_conv_pack *fx_conv_pack_new_with(struct fx_store *store, const struct fx_gemm_config *uk, int n, int k,
                                    const float *w, const float *bias);

/* The algorithm bodies' row drivers, for conv.c: rows [m0, m0 + rows) of the output and panels
 * [pan0, pan1) of n output channels, `panels` pointing at panel pan_first. im2col.c: A is the
 * input itself (buf NULL: 1x1 stride 1, FC) or im2col rows built in buf (rows x k floats);
 * block: panels per block (fx_conv_panel_block; 0 = one panel at a time). The order changes
 * no output's sum: each comes from the same microkernel call either way. */
void fx_conv_gemm_rows(const struct fx_gemm_config *uk, const fx_conv_geom *g, size_t n, size_t k, const float *x,
                       size_t m0, size_t rows, float *buf, const float *panels, size_t pan_first, size_t pan0,
                       size_t pan1, size_t block, float *y, const float *res, const struct fx_gemm_out *out);
/* direct.c: */
int fx_conv_direct_geom_ok(const fx_conv_geom *g, int mr);
void fx_conv_direct_rows(const struct fx_igemm_config *uk, const fx_conv_geom *g, size_t n, const float *x,
                         size_t m0, size_t rows, const float *panels, size_t pan_first, size_t pan0,
                         size_t pan1, float *y, const float *res, const struct fx_gemm_out *out);

/* stem.c: */
struct fx_stem_config;
int fx_conv_stem_geom_ok(const fx_conv_geom *g);
void fx_conv_stem_rows(const struct fx_stem_config *uk, const fx_conv_geom *g, size_t n, const float *x, size_t m0,
                       size_t rows, const float *panels, size_t pan_first, size_t pan0, size_t pan1, float *y,
                       const float *res, const struct fx_gemm_out *out);

/* ---- the choice of algorithm (choose.c) ---- */
/* The `winograd` option: AUTO spends a share of a partition's packed weight bytes on Winograd
 * weights for the layers that gain most per byte and runs the others' Winograd from their plain
 * weights where that wins, ALL packs Winograd weights wherever Winograd is faster, OFF none. */
enum { FX_WINO_AUTO = 0, FX_WINO_ALL, FX_WINO_OFF };
/* A stride-1, undilated 3x3 conv of a partition, as the Winograd choice sees it. */
typedef struct {
  int batch, oh, ow, cin, cout;
  int stem;    /* the stem kernel would run it (fx_conv_stem_would_run) */
  int tile;    /* chosen: 4 or 6 packs Winograd weights F(tile, 3), 0 none */
  int rt_tile; /* chosen: 4 or 6 runs Winograd from the GEMM panels, transformed per run */
} fx_wino_layer;
/* Chooses tile and rt_tile for the n convs of a partition (in node order) whose plain
 * GEMM-packed weights take plain_bytes in all; mode FX_WINO_*. -1 when out of memory. */
int fx_conv_choose_winograd(fx_wino_layer *layers, int n, size_t plain_bytes, int mode);
/* Whether a conv of this geometry would run the stem kernel from GEMM panels (choose.c's rule,
 * before there is a pack): a stem layer takes it rather than Winograd. */
int fx_conv_stem_would_run(const fx_conv_geom *g);
/* Bytes of n x k weights packed as GEMM panels for this CPU's kernel. */
size_t fx_conv_plain_bytes(int n, int k);
/* How a GEMM-packed conv runs: Winograd from its panels when rt_tile (fx_conv_choose_winograd
 * chose it), else direct conv where the measured table says it beats im2col. */
void fx_conv_choose_form(fx_conv_pack *p, const fx_conv_geom *g, int rt_tile);
/* The order an im2col / direct GEMM run walks its weight panels in: panels per block
 * (fx_conv_gemm_rows) for a task of `rows` rows of k (microkernel rows mr) over a run of
 * `panels` panels of panel_bytes each; 0 = one panel at a time. */
size_t fx_conv_panel_block(size_t rows, int mr, size_t k, size_t panels, size_t panel_bytes);
/* Estimated microseconds of `flops` run by FLEX_KERNEL_* `kernel` from pack p (the Winograd
 * blob, or the GEMM panels) on `threads` threads. */
double fx_conv_cost_us(int kernel, double flops, int threads, const fx_conv_geom *g, const fx_conv_pack *p);
/* What one more output-channel slice of Winograd F(tile, 3) costs, pre-transformed or run-time:
 * the input transformed again. */
double fx_conv_winograd_slice_us(const fx_conv_geom *g, int tile, int threads);
/* The QS8 GEMM variant of an int8 layer whose dot products are `depth` deep (kh * kw * cin; an
 * FC's K), hybrid or not: this CPU's, or a faster one for that depth. */
const fx_qs8_gemm_config *fx_conv_choose_qs8_gemm(int depth, int hybrid);
/* How an int8 conv (hybrid: a dynamic-range one) runs on QS8 GEMM variant g (FX_QS8_CONV_*;
 * packing and runs follow it). */
int fx_conv_choose_qs8_form(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int hybrid);
/* Whether dynamic-range (hybrid) convs and FCs run on QS8 GEMM variant g (its float output
 * stage), rather than on the FP32 kernels from dequantized weights. */
int fx_conv_choose_hybrid(const fx_qs8_gemm_config *g);
/* Estimated microseconds of an int8 conv / FC's `flops` on `threads` threads (any form). */
double fx_conv_qs8_cost_us(double flops, int threads);
#endif
