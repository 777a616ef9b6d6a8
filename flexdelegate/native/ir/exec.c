/* Execution of IR nodes: each operation's call of its kernel (the run column of ops.inc), the
 * GEMM geometry of convolutions, and what runs a node, for reports. The same functions run
 * nodes at invoke and at load-time folding. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "conv/conv.h"
#include "flex_api.h"
#include "band.h"
#include "graph.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/qs8-gemm/qs8-gemm.h"
#include "kernels/qs8-ops/qs8-ops.h"
#include "runtime/clock.h"
#include "runtime/pool.h"

static void conv_geom(fx_graph *g, const fx_node *n, fx_conv_geom *geo);

static fx_tensor *T(fx_graph *g, int id) { return id >= 0 ? &g->tensors[id] : NULL; }
static const float *F(fx_graph *g, int id) { return id >= 0 ? (const float *)g->tensors[id].ptr : NULL; }

void fx_node_conv_geom(const fx_graph *g, const fx_node *n, void *geo) { conv_geom((fx_graph *)g, n, geo); }

static void conv_geom(fx_graph *g, const fx_node *n, fx_conv_geom *geo) {
  const fx_shape *x = &T(g, n->in[0])->shape, *y = &T(g, n->out[0])->shape;
  memset(geo, 0, sizeof *geo);
  if (n->n_in > 3 && n->in[3] >= 0) {
    geo->residual = F(g, n->in[3]);
    geo->residual_act = n->res_act;
  }
  if (n->kind == FX_OP_FC) {
    const fx_shape *w = &T(g, n->in[1])->shape;
    geo->m = fx_shape_numel(x) / (size_t)w->d[1];
    geo->direct = 1;
    return;
  }
  int oh, ow;
  geo->ih = x->d[1]; geo->iw = x->d[2]; geo->cin = x->d[3];
  geo->kh = n->p.conv.kh; geo->kw = n->p.conv.kw;
  geo->stride_h = n->p.conv.stride_h; geo->stride_w = n->p.conv.stride_w;
  geo->dil_h = n->p.conv.dil_h; geo->dil_w = n->p.conv.dil_w;
  fx_node_window(n, 0, geo->ih, geo->kh, &oh, &geo->pad_top);
  fx_node_window(n, 1, geo->iw, geo->kw, &ow, &geo->pad_left);
  geo->oh = y->d[1]; geo->ow = y->d[2];
  geo->m = (size_t)y->d[0] * (size_t)oh * (size_t)ow;
  geo->direct = geo->kh == 1 && geo->kw == 1 && geo->stride_h == 1 && geo->stride_w == 1 &&
                geo->pad_top == 0 && geo->pad_left == 0;
}

static fx_window window_of(fx_graph *g, const fx_node *n) {
  const fx_shape *x = &T(g, n->in[0])->shape;
  fx_window w = {n->p.conv.stride_h, n->p.conv.stride_w, n->p.conv.dil_h, n->p.conv.dil_w,
                 n->p.conv.kh, n->p.conv.kw, 0, 0};
  int o;
  fx_node_window(n, 0, x->d[1], w.kh, &o, &w.pad_top);
  fx_node_window(n, 1, x->d[2], w.kw, &o, &w.pad_left);
  return w;
}

static const char *kernel_name(const fx_graph *g, const fx_node *n, const struct fx_conv_pack *pack, int kernel,
                               char *buf, size_t len) {
  const int direct = kernel == FLEX_KERNEL_DIRECT;
  if (n->fused) {
    snprintf(buf, len, "fused %s", n->fused == FX_FUSED_SKIP ? "(skipped)" : "(copy)");
    return buf;
  }
  /* a conv's in[3] is a fused residual ADD, a hybrid one's too (a TRANSPOSE_CONV's is its bias) */
  const int conv = n->kind == FX_OP_CONV || (n->kind == FX_OP_QCONV && fx_qlayer_is_hybrid(n->qlayer));
  const char *curve = n->act == FLEX_ACT_SWISH ? " +swish" : n->act == FLEX_ACT_SIGMOID ? " +sigmoid"
                      : n->act == FLEX_ACT_GELU || n->act == FLEX_ACT_GELU_TANH ? " +gelu"
                      : conv && n->n_in > 3 && n->in[3] >= 0 ? " +add"
                      : n->post_table ? " +swish" : "";
  if ((n->kind == FX_OP_CONV || n->kind == FX_OP_FC) && pack) {
    fx_conv_geom geo;
    conv_geom((fx_graph *)g, n, &geo);
    if (fx_conv_pack_tile(pack))
      snprintf(buf, len, "winograd-f%d %s%s", fx_conv_pack_tile(pack), fx_conv_pack_kernel(pack, 0), curve);
    else if ((kernel == FLEX_KERNEL_NODE || kernel == FLEX_KERNEL_WINOGRAD_RT) && fx_conv_pack_winograd_rt(pack))
      /* (a budget step of another kernel runs GEMM) */
      snprintf(buf, len, "winograd-f%d-rt %s%s", fx_conv_pack_winograd_rt(pack), fx_conv_pack_kernel(pack, 0), curve);
    else if (direct || fx_conv_pack_direct(pack))
      snprintf(buf, len, "direct %s%s", fx_conv_pack_kernel(pack, 1), curve);
    else
      snprintf(buf, len, "gemm-%s %s%s", geo.direct ? "direct" : "im2col", fx_conv_pack_kernel(pack, 0), curve);
  } else if (n->kind == FX_OP_ATTENTION) {
    snprintf(buf, len, "attention%s", n->p.attn.causal ? " +causal" : n->in[3] >= 0 ? " +mask" : "");
  } else {
    const char *gemm = fx_qlayer_gemm_name(n->qlayer); /* int8 layers: the GEMM variant chosen for it */
    snprintf(buf, len, "%s%s%s%s%s", fx_qlayer_is_hybrid(n->qlayer) ? "hybrid " : "", fx_op_name(n->kind),
             gemm ? " " : "", gemm ? gemm : "", curve);
  }
  return buf;
}

/* A member of an active chain says so; the chain's whole time is its last member's. */
const char *fx_node_kernel(const fx_graph *g, const fx_node *n, const struct fx_conv_pack *pack, int kernel,
                           char *buf, size_t len) {
  const int i = (int)(n - g->nodes);
  const fx_band_chain *c = i >= 0 && i < g->n_nodes ? fx_band_of(g, i) : NULL;
  if (!c) return kernel_name(g, n, pack, kernel, buf, len);
  char own[96];
  kernel_name(g, n, pack, kernel, own, sizeof own);
  if (i == c->run_at)
    snprintf(buf, len, "band x%d (%d layers, %d rows) %s", c->strips, c->n_layers, c->band_rows, own);
  else
    snprintf(buf, len, "band %s", own);
  return buf;
}

/* The node's input x and output y, and x's element size (layout ops move any type). */
#define XT T(g, n->in[0])
#define YT T(g, n->out[0])
#define ES fx_dtype_size(XT->dtype)

int fx_run_gemm(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (fx_conv_pack_check(n->pack, 0)) return -1;
  fx_conv_geom geo;
  conv_geom(g, n, &geo);
  float *scratch = n->scratch >= 0 ? (float *)g->tensors[n->scratch].ptr : NULL;
  fx_conv_run(pool, n->pack, &geo, F(g, n->in[0]), YT->ptr, scratch, n->act);
  return 0;
}

int fx_run_depthwise(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_window w = window_of(g, n);
  fx_depthwise_f32(pool, F(g, n->in[0]), &XT->shape, F(g, n->in[1]), n->n_in > 2 ? F(g, n->in[2]) : NULL,
                   n->p.conv.mult, &w, YT->ptr, &YT->shape, n->act);
  return 0;
}

static int is_q8(int dtype) { return dtype == FX_I8 || dtype == FX_U8; }

typedef struct {
  const fx_qs8_ops_config *v;
  fx_qs8_pool_geom p;
  const void *x;
  void *y;
} avgpool_task;

static void avgpool_rows(void *ctx, size_t r0, size_t r1) {
  const avgpool_task *t = ctx;
  fx_qs8_avgpool_rows(t->v, &t->p, t->x, t->y, r0, r1);
}

int fx_run_pool(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_window w = window_of(g, n);
  if (is_q8(XT->dtype) && n->p.conv.is_max) {
    fx_maxpool_q8(pool, XT->dtype == FX_U8, XT->ptr, &XT->shape, &w, YT->ptr, &YT->shape, n->qout.lo, n->qout.hi);
    return 0;
  }
  if (is_q8(XT->dtype)) {
    const fx_shape *xs = &XT->shape, *ys = &YT->shape;
    avgpool_task t = {fx_qs8_ops_config_get(),
                      {XT->dtype == FX_U8, xs->d[0], xs->d[1], xs->d[2], xs->d[3], ys->d[1], ys->d[2], w.kh, w.kw,
                       w.stride_h, w.stride_w, w.pad_top, w.pad_left, n->qout.lo, n->qout.hi},
                      XT->ptr, YT->ptr};
    fx_parallel_for(pool, (size_t)ys->d[0] * (size_t)ys->d[1], 1, avgpool_rows, &t);
    return 0;
  }
  fx_pool2d_f32(pool, n->p.conv.is_max, F(g, n->in[0]), &XT->shape, &w, YT->ptr, &YT->shape, n->act);
  return 0;
}

int fx_run_transpose_conv(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_tconv_geom geo;
  fx_node_tconv_geom(g, n, &geo);
  const fx_tensor *s = n->scratch >= 0 ? T(g, n->scratch) : NULL;
  if (!s || !s->ptr || fx_shape_numel(&s->shape) < fx_tconv_packed_floats(&geo, NULL)) return -1; /* never past the slot */
  fx_tconv_f32(pool, &geo, NULL, F(g, n->in[2]), F(g, n->in[1]), n->n_in > 3 ? F(g, n->in[3]) : NULL, YT->ptr,
               s->ptr, n->act);
  return 0;
}

void fx_node_tconv_geom(const fx_graph *g, const fx_node *n, fx_tconv_geom *geo) {
  const fx_shape *xs = &g->tensors[n->in[2]].shape, *ys = &g->tensors[n->out[0]].shape;
  int oh, ow;
  *geo = (fx_tconv_geom){xs->d[0], xs->d[1], xs->d[2], xs->d[3], ys->d[1], ys->d[2], ys->d[3], n->p.conv.kh,
                         n->p.conv.kw, n->p.conv.stride_h, n->p.conv.stride_w, 0, 0};
  /* TFLite derives the padding from the output size as if running the forward conv. */
  fx_same_valid(n->p.conv.same, ys->d[1], geo->kh, geo->stride_h, 1, &oh, &geo->pad_top);
  fx_same_valid(n->p.conv.same, ys->d[2], geo->kw, geo->stride_w, 1, &ow, &geo->pad_left);
}

/* The kernels' element type of an IR dtype. */
static int elem_of(int dtype) {
  return dtype == FX_I32 ? FX_ELEM_I32 : dtype == FX_I64 ? FX_ELEM_I64 : dtype == FX_BOOL ? FX_ELEM_BOOL : FX_ELEM_F32;
}

int fx_run_binary(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_tensor *bt = T(g, n->in[1]);
  if (YT->dtype != FX_F32) {
    fx_binary_int(n->p.bin.op, elem_of(YT->dtype), XT->ptr, &XT->shape, bt->ptr, &bt->shape, YT->ptr, &YT->shape);
    return 0;
  }
  fx_binary_f32(pool, n->p.bin.op, XT->ptr, &XT->shape, bt->ptr, &bt->shape, YT->ptr, &YT->shape, n->act);
  return 0;
}

int fx_run_unary(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (is_q8(XT->dtype)) { /* the RELUs on quantized data: clamps (read_relu) */
    fx_clamp_q8(XT->dtype == FX_U8, XT->ptr, YT->ptr, fx_shape_numel(&XT->shape), n->qout.lo, n->qout.hi);
    return 0;
  }
  fx_unary_f32_pool(pool, n->p.un.kind, n->p.un.alpha, XT->ptr, YT->ptr, fx_shape_numel(&XT->shape));
  return 0;
}

int fx_run_compare(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_tensor *b = T(g, n->in[1]);
  fx_compare(n->p.cmp.op, elem_of(XT->dtype), XT->ptr, &XT->shape, b->ptr, &b->shape, YT->ptr, &YT->shape);
  return 0;
}

int fx_run_logical(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_tensor *b = n->n_in > 1 ? T(g, n->in[1]) : NULL;
  fx_logical(n->p.cmp.op, XT->ptr, &XT->shape, b ? b->ptr : NULL, b ? &b->shape : NULL, YT->ptr, &YT->shape);
  return 0;
}

int fx_run_select(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_tensor *x = T(g, n->in[1]), *yv = T(g, n->in[2]);
  fx_shape c;
  fx_select_cond_shape(g, n, &c);
  fx_select(fx_dtype_size(YT->dtype), XT->ptr, &c, x->ptr, &x->shape, yv->ptr, &yv->shape, YT->ptr, &YT->shape);
  return 0;
}

int fx_run_layernorm(fx_graph *g, fx_node *n, fx_pool *pool) {
  const fx_shape *xs = &XT->shape;
  const size_t c = (size_t)xs->d[xs->rank - 1], rows = c ? fx_shape_numel(xs) / c : 0;
  const fx_layernorm_params p = {F(g, n->in[1]), F(g, n->in[2]), n->p.ln.eps, n->p.ln.mode};
  fx_layernorm_f32(pool, rows, c, F(g, n->in[0]), c, YT->ptr, c, &p);
  return 0;
}

int fx_run_attention(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_attn_params p;
  fx_attn_in q, k, v;
  fx_attn_out o;
  fx_shape ys;
  if (fx_node_attention(g, n, &p, &q, &k, &v, &o, &ys)) return -1;
  const size_t need = fx_attention_scratch_bytes(NULL, &p, pool ? fx_pool_threads(pool) : 1);
  const fx_tensor *s = n->scratch >= 0 ? T(g, n->scratch) : NULL;
  if (need && (!s || !s->ptr || fx_shape_numel(&s->shape) * sizeof(float) < need)) return -1;
  return fx_attention_f32(NULL, pool, &p, q, k, v, o, s ? s->ptr : NULL);
}

int fx_run_batch_matmul(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_bmm_plan p;
  if (fx_node_bmm_plan(g, n, &p)) return -1;
  const size_t need = fx_bmm_scratch_floats(&p, NULL, pool ? fx_pool_threads(pool) : 1, 0);
  const fx_tensor *s = n->scratch >= 0 ? T(g, n->scratch) : NULL;
  if (need && (!s || !s->ptr || fx_shape_numel(&s->shape) < need)) return -1; /* never past the slot */
  return fx_bmm_f32(pool, &p, NULL, F(g, n->in[0]), F(g, n->in[1]), NULL, YT->ptr, s ? s->ptr : NULL);
}

int fx_run_qbatch_matmul(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_bmm_plan p;
  if (fx_node_bmm_plan(g, n, &p)) return -1;
  const fx_qs8_gemm_config *uk = fx_qs8_gemm_config_get();
  const size_t need = fx_bmm_qs8_scratch_bytes(&p, uk, pool ? fx_pool_threads(pool) : 1);
  const fx_tensor *s = n->scratch >= 0 ? T(g, n->scratch) : NULL, *b = T(g, n->in[1]);
  if (need && (!s || !s->ptr || fx_shape_numel(&s->shape) * sizeof(float) < need)) return -1; /* never past the slot */
  fx_qs8_out o = n->qout;
  if (!o.tail_from) o.tail_from = p.n - p.n % 8; /* a split rule: the last N % 8 columns */
  return fx_bmm_qs8(pool, &p, uk, XT->ptr, XT->quant.zero_point, b->ptr, b->quant.zero_point, n->p.bmm.qm,
                    n->p.bmm.qshift, &o, YT->ptr, s ? s->ptr : NULL);
}

int fx_run_mean(fx_graph *g, fx_node *n, fx_pool *pool) {
  fx_mean_f32_pool(pool, XT->ptr, &XT->shape, (unsigned)n->pads[0], YT->ptr);
  return 0;
}

int fx_run_softmax(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_shape *xs = &XT->shape;
  int cols = xs->d[xs->rank - 1];
  fx_softmax_f32(XT->ptr, fx_shape_numel(xs) / (size_t)(cols ? cols : 1), cols, n->p.softmax.beta, YT->ptr);
  return 0;
}

int fx_run_pad(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const uint8_t fill = (uint8_t)n->p.pad.fill;
  const void *value = n->n_in > 2 && n->in[2] >= 0 ? T(g, n->in[2])->ptr : n->p.pad.has_fill ? &fill : NULL;
  fx_pad(XT->ptr, &XT->shape, n->pads, value, ES, YT->ptr);
  return 0;
}

int fx_run_concat(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const void *ptrs[64];
  const fx_shape *shapes[64];
  fx_shape packed[64];
  fx_tensor *yt = YT;
  if (n->n_in > 64) return -1;
  for (int i = 0; i < n->n_in; i++) {
    fx_tensor *t = T(g, n->in[i]);
    ptrs[i] = t->ptr;
    if (n->p.concat.pack) { /* the packed axis becomes a size-1 dim of every input */
      packed[i] = yt->shape;
      packed[i].d[n->p.concat.axis] = 1;
      shapes[i] = &packed[i];
    } else {
      shapes[i] = &t->shape;
    }
  }
  fx_concat(n->n_in, ptrs, shapes, n->p.concat.axis, ES, yt->ptr);
  if (yt->dtype == FX_F32) fx_apply_act(n->act, yt->ptr, fx_shape_numel(&yt->shape));
  return 0;
}

int fx_run_reshape(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  if (YT->ptr != XT->ptr) memmove(YT->ptr, XT->ptr, fx_shape_numel(&XT->shape) * ES);
  return 0;
}

int fx_run_transpose(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_transpose(XT->ptr, &XT->shape, n->perm, ES, YT->ptr);
  return 0;
}

int fx_run_strided_slice(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_strided_slice(XT->ptr, &XT->shape, &n->slice, ES, YT->ptr);
  return 0;
}

typedef struct {
  const fx_tensor *x, *y;
  int align_corners, half_pixel;
} resize_task;

static void resize_q8_rows(void *ctx, size_t r0, size_t r1) {
  const resize_task *t = ctx;
  fx_resize_bilinear_q8(t->x->dtype == FX_U8, t->x->ptr, &t->x->shape, t->y->ptr, &t->y->shape, t->align_corners,
                        t->half_pixel, r0, r1);
}

int fx_run_resize_bilinear(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (is_q8(XT->dtype)) { /* output rows over the pool */
    resize_task t = {XT, YT, n->p.resize.align_corners, n->p.resize.half_pixel};
    const size_t rows = (size_t)YT->shape.d[0] * (size_t)YT->shape.d[1];
    const size_t row_bytes = (size_t)YT->shape.d[2] * (size_t)YT->shape.d[3];
    fx_parallel_for(pool, rows, 1 + (1 << 14) / (row_bytes + 1), resize_q8_rows, &t);
    return 0;
  }
  fx_resize_bilinear_f32(XT->ptr, &XT->shape, YT->ptr, &YT->shape, n->p.resize.align_corners, n->p.resize.half_pixel);
  return 0;
}

int fx_run_resize_nearest(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_resize_nearest(XT->ptr, &XT->shape, YT->ptr, &YT->shape, ES, n->p.resize.align_corners, n->p.resize.half_pixel);
  return 0;
}

int fx_run_depth_to_space(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_depth_to_space(XT->ptr, &XT->shape, n->p.block.block, ES, YT->ptr);
  return 0;
}

int fx_run_space_to_depth(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_space_to_depth(XT->ptr, &XT->shape, n->p.block.block, ES, YT->ptr);
  return 0;
}

int fx_run_gather(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_tensor *it = T(g, n->in[1]);
  return fx_gather(XT->ptr, &XT->shape, it->ptr, it->dtype == FX_I64, &it->shape, n->p.gather.axis,
                   n->p.gather.batch_dims, ES, YT->ptr);
}

int fx_run_reduce(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_reduce(n->p.mean.op, elem_of(XT->dtype), XT->ptr, &XT->shape, (unsigned)n->pads[0], YT->ptr);
  return 0;
}

int fx_run_log_softmax(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_shape *xs = &XT->shape;
  int cols = xs->rank ? xs->d[xs->rank - 1] : 1;
  fx_log_softmax_f32(XT->ptr, fx_shape_numel(xs) / (size_t)(cols ? cols : 1), cols, YT->ptr);
  return 0;
}

int fx_run_broadcast_to(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_broadcast_to(XT->ptr, &XT->shape, &YT->shape, ES, YT->ptr);
  return 0;
}

int fx_run_gather_nd(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_tensor *it = T(g, n->in[1]);
  return fx_gather_nd(XT->ptr, &XT->shape, it->ptr, it->dtype == FX_I64, &it->shape, ES, YT->ptr);
}

int fx_run_fill(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_tensor *v = T(g, n->in[1]);
  fx_fill(YT->ptr, fx_shape_numel(&YT->shape), v->ptr, fx_dtype_size(v->dtype));
  return 0;
}

int fx_run_range(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_range(elem_of(YT->dtype), XT->ptr, T(g, n->in[2])->ptr, fx_shape_numel(&YT->shape), YT->ptr);
  return 0;
}

int fx_run_cumsum(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  fx_cumsum(elem_of(XT->dtype), XT->ptr, &XT->shape, n->p.cumsum.axis, n->p.cumsum.exclusive, n->p.cumsum.reverse,
            YT->ptr);
  return 0;
}

int fx_run_shape(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_shape *xs = &XT->shape;
  fx_tensor *yt = YT;
  for (int i = 0; i < xs->rank; i++) {
    if (yt->dtype == FX_I64) ((int64_t *)yt->ptr)[i] = xs->d[i];
    else ((int32_t *)yt->ptr)[i] = xs->d[i];
  }
  return 0;
}

int fx_run_cast(fx_graph *g, fx_node *n, fx_pool *pool) {
  (void)pool;
  const fx_tensor *x = XT;
  fx_tensor *y = YT;
  size_t count = fx_shape_numel(&x->shape);
  for (size_t i = 0; i < count; i++) {
    double v;
    switch (x->dtype) {
      case FX_F32: v = ((const float *)x->ptr)[i]; break;
      case FX_I32: v = ((const int32_t *)x->ptr)[i]; break;
      case FX_I64: v = (double)((const int64_t *)x->ptr)[i]; break;
      default: v = 0;
    }
    switch (y->dtype) {
      case FX_F32: ((float *)y->ptr)[i] = (float)v; break;
      case FX_I32: ((int32_t *)y->ptr)[i] = (int32_t)v; break;
      case FX_I64: ((int64_t *)y->ptr)[i] = (int64_t)v; break;
    }
  }
  return 0;
}

/* Every output holds zero elements: nothing to write, and an empty tensor's buffer may be NULL,
 * which no kernel's memcpy may get even for 0 bytes (UBSan; the graph fuzzer found GATHER,
 * SPACE_TO_DEPTH, then RESHAPE over empty tensors: one rule here instead of one per kernel).
 * Except the gathers: their index checks are stock's behaviour to keep even when nothing is
 * copied (the fuzzer's next find; ops.c leaves a gather from an empty tensor to stock). */
static int writes_nothing(const fx_graph *g, const fx_node *n) {
  if (n->kind == FX_OP_GATHER || n->kind == FX_OP_GATHER_ND) return 0;
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i] >= 0 && fx_shape_numel(&g->tensors[n->out[i]].shape)) return 0;
  return n->n_out > 0;
}

int fx_run_node(fx_graph *g, fx_node *n, fx_pool *pool) {
  if (writes_nothing(g, n)) return 0;
  if (n->fused) { /* the producer's fused activation did the work (fuse.c) */
    const void *from = T(g, n->fuse_from)->ptr;
    if (n->fused == FX_FUSED_COPY && from != YT->ptr) memmove(YT->ptr, from, fx_shape_numel(&YT->shape) * ES);
    return 0;
  }
  return n->kind >= 0 && n->kind < FX_OP_COUNT ? fx_op_defs[n->kind].run(g, n, pool) : -1;
}

/* An active chain (band.h) at its last member's turn; its other members do nothing. */
static int run_chain(fx_graph *g, const fx_band_chain *c, int i, fx_pool *pool) {
  if (i != c->run_at) return 0;
  if (fx_band_check(g, c)) return -1;
  fx_band_run(g, c, pool, (float *)g->tensors[c->scratch].ptr, NULL);
  return 0;
}

int fx_run_nodes(fx_graph *g, fx_pool *pool, int profile) {
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *n = &g->nodes[i];
    if (n->at_prepare) continue;
    const fx_band_chain *c = fx_band_of(g, i);
    if (c && i != c->run_at) continue;
    uint64_t t0 = profile ? fx_now_ns() : 0;
    if (c ? run_chain(g, c, i, pool) : fx_run_node(g, n, pool)) return i;
    if (profile) {
      n->prof_ns += fx_now_ns() - t0;
      n->prof_runs++;
    }
  }
  return -1;
}

const struct fx_conv_pack *fx_node_pack(const fx_node *n, int kernel) {
  if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || !n->pack) return NULL;
  const int winograd = fx_conv_pack_tile(n->pack) != 0;
  if (kernel == FLEX_KERNEL_WINOGRAD) return winograd ? n->pack : NULL;
  if (kernel == FLEX_KERNEL_WINOGRAD_RT) { /* from the GEMM panels (a Winograd conv's GEMM form too) */
    const struct fx_conv_pack *p = winograd ? n->gemm_pack : n->pack;
    return p && fx_conv_pack_winograd_rt(p) ? p : NULL;
  }
  if (kernel == FLEX_KERNEL_GEMM || kernel == FLEX_KERNEL_GEMM_ROWS || kernel == FLEX_KERNEL_DIRECT)
    return winograd ? n->gemm_pack : n->pack;
  return NULL;
}

/* QUANTIZE / DEQUANTIZE, as stock. Float -> int: the qs8-ops quantize microkernel (ref.h's
 * fxq_quantize_one: FLEX_QUANT_AWAY, TFLite's scalar loop; FLEX_QUANT_RECIP_EVEN, its NEON loop),
 * the rule n->qout.rounding on the first count - count % 8 values and tail_rounding on the rest
 * when split (tail_from == 0), clamped to the type. Int -> int with equal scales moves the zero
 * point (stock's requantize by exactly 1.0 rounds nothing). Int -> float (DEQUANTIZE), the same
 * split of rules (quant_rounding.py): FLEX_QUANT_AWAY, scale * (float)(q - zero point), one
 * rounding of an exact product (TFLite's scalar loop); FLEX_QUANT_RECIP_EVEN, (float)q * scale -
 * (float)zp * scale in float (its NEON loop). */
typedef struct {
  const fx_qs8_ops_config *v;
  const float *x;
  uint8_t *y;
  size_t main;
  fx_qs8_quant_params p;
  int rounding, tail_rounding;
} quantize_job;

/* Values [b, e): each under the rule of its index (element-wise: any split gives stock's bytes). */
static void quantize_part(void *ctx, size_t b, size_t e) {
  const quantize_job *j = ctx;
  const size_t mid = e < j->main ? e : b > j->main ? b : j->main;
  if (mid > b) j->v->quantize(mid - b, j->x + b, j->y + b, &j->p, j->rounding);
  if (e > mid) j->v->quantize(e - mid, j->x + mid, j->y + mid, &j->p, j->tail_rounding);
}

int fx_run_quantize(fx_graph *g, fx_node *n, fx_pool *pool) {
  const fx_tensor *x = XT, *y = YT;
  const size_t count = fx_shape_numel(&x->shape);
  const int xu8 = x->dtype == FX_U8, yu8 = y->dtype == FX_U8;
  const size_t main = n->qout.tail_from == 0 ? count - count % 8 : count;
  if (y->dtype == FX_F32) {
    const float scale = x->quant.scale, zp_scaled = (float)x->quant.zero_point * scale;
    const int32_t zp = x->quant.zero_point;
    float *out = y->ptr;
    for (size_t i = 0; i < count; i++) {
      const int32_t v = xu8 ? ((const uint8_t *)x->ptr)[i] : ((const int8_t *)x->ptr)[i];
      const int mul_sub = (i < main ? n->qout.rounding : n->qout.tail_rounding) == FLEX_QUANT_RECIP_EVEN;
      out[i] = mul_sub ? (float)v * scale - zp_scaled : scale * (float)(v - zp);
    }
    return 0;
  }
  const int32_t lo = n->qout.lo, hi = n->qout.hi, zy = n->qout.zp;
  if (x->dtype == FX_F32) {
    const quantize_job j = {fx_qs8_ops_config_get(), x->ptr, y->ptr, main,
                            {.scale = (double)y->quant.scale, .inv_scale = (float)(1.0 / (double)y->quant.scale),
                             .zp = zy, .lo = lo, .hi = hi, .u8 = yu8},
                            n->qout.rounding, n->qout.tail_rounding};
    fx_parallel_for(pool, count, 1 << 13, quantize_part, (void *)&j);
    return 0;
  }
  for (size_t i = 0; i < count; i++) {
    int32_t v = (xu8 ? ((const uint8_t *)x->ptr)[i] : ((const int8_t *)x->ptr)[i]) - x->quant.zero_point + zy;
    v = v < lo ? lo : v > hi ? hi : v;
    if (yu8) ((uint8_t *)y->ptr)[i] = (uint8_t)v;
    else ((int8_t *)y->ptr)[i] = (int8_t)v;
  }
  return 0;
}
