/* A partition's convolutions and fully-connected layers at init: which run as Winograd (the
 * choice is conv/choose.c's, on what the graph says of each layer), their packed weights from
 * the store, and what those need at run time. */
#include <stdlib.h>
#include "conv/conv.h"
#include "graph.h"
#include "kernels/qs8-gemm/qs8-gemm.h"
#include "qop.h"

static const fx_tensor *T(const fx_graph *g, int id) { return id >= 0 ? &g->tensors[id] : NULL; }
static const void *cdata_of(const fx_graph *g, int id) {
  const fx_tensor *t = T(g, id);
  return t && t->storage == FX_ST_CONST ? t->cdata : NULL;
}

/* A stride-1, undilated 3x3 conv with constant 4-D weights: what Winograd can run. */
static int winograd_candidate(const fx_graph *g, const fx_node *n) {
  return n->kind == FX_OP_CONV && n->p.conv.kh == 3 && n->p.conv.kw == 3 && n->p.conv.stride_h == 1 &&
         n->p.conv.stride_w == 1 && n->p.conv.dil_h == 1 && n->p.conv.dil_w == 1 && n->n_in >= 2 &&
         n->in[1] >= 0 && g->tensors[n->in[1]].storage == FX_ST_CONST && g->tensors[n->in[1]].shape.rank == 4 &&
         g->tensors[n->out[0]].shape.rank == 4;
}

/* The partition's constant conv / FC weights as GEMM panels, in bytes. */
static size_t plain_weight_bytes(const fx_graph *g) {
  size_t bytes = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || n->n_in < 2 || n->in[1] < 0) continue;
    const fx_shape *w = &g->tensors[n->in[1]].shape;
    if (g->tensors[n->in[1]].storage != FX_ST_CONST || w->rank < 2 || w->d[0] <= 0) continue;
    bytes += fx_conv_plain_bytes(w->d[0], (int)(fx_shape_numel(w) / (size_t)w->d[0]));
  }
  return bytes;
}

int fx_choose_winograd(fx_graph *g, int mode) {
  fx_wino_layer *layers = calloc((size_t)g->n_nodes + 1, sizeof *layers);
  int *node_of = calloc((size_t)g->n_nodes + 1, sizeof *node_of);
  int n = 0, rc = -1;
  if (!layers || !node_of) goto done;
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *nd = &g->nodes[i];
    nd->wino_tile = nd->wino_rt = 0;
    if (!winograd_candidate(g, nd)) continue;
    const fx_shape *y = &g->tensors[nd->out[0]].shape;
    fx_conv_geom geo;
    fx_node_conv_geom(g, nd, &geo);
    layers[n] = (fx_wino_layer){y->d[0], y->d[1], y->d[2], g->tensors[nd->in[1]].shape.d[3], y->d[3],
                                fx_conv_stem_would_run(&geo), 0, 0};
    node_of[n++] = i;
  }
  if (fx_conv_choose_winograd(layers, n, plain_weight_bytes(g), mode)) goto done;
  for (int i = 0; i < n; i++) {
    g->nodes[node_of[i]].wino_tile = layers[i].tile;
    g->nodes[node_of[i]].wino_rt = layers[i].rt_tile;
  }
  rc = 0;
done:
  free(layers);
  free(node_of);
  return rc;
}

const char *fx_prepare_node_weights(fx_graph *g, fx_node *n, struct fx_store *store) {
  if (n->kind == FX_OP_QCONV || n->kind == FX_OP_QFC || n->kind == FX_OP_QDEPTHWISE ||
      n->kind == FX_OP_QTRANSPOSE_CONV)
    return n->qlayer ? NULL : fx_qlayer_pack(g, n, store);
  if (n->kind != FX_OP_CONV && n->kind != FX_OP_FC) return NULL;
  if (n->pack) return NULL;
  const fx_tensor *w = T(g, n->in[1]);
  const float *wd = cdata_of(g, n->in[1]);
  const float *bd = n->n_in > 2 ? cdata_of(g, n->in[2]) : NULL;
  fx_blob *deferred = !wd && w->storage == FX_ST_CONST && w->blob && w->blob->deferred ? w->blob : NULL;
  if (!wd && !deferred) return "weights are not constant";
  if (n->n_in > 2 && n->in[2] >= 0 && !bd) return "bias is not constant";
  int cout = w->shape.d[0];
  int k = (int)(fx_shape_numel(&w->shape) / (size_t)(cout ? cout : 1));
  if (bd && (int)fx_shape_numel(&T(g, n->in[2])->shape) != cout) return "bias size != output channels";
  n->pack = fx_conv_pack_new(store, cout, k, n->wino_tile, wd, deferred, bd);
  if (!n->pack) return "out of memory packing weights";
  if (n->kind == FX_OP_CONV && !n->wino_tile) { /* GEMM panels: im2col, direct or Winograd from them */
    fx_conv_geom geo;
    fx_node_conv_geom(g, n, &geo);
    fx_conv_choose_form(n->pack, &geo, n->wino_rt);
  }
  return NULL;
}

size_t fx_node_scratch_bytes(const fx_graph *g, const fx_node *n, int threads) {
  fx_bmm_plan bmm;
  if (n->kind == FX_OP_ATTENTION) {
    fx_attn_params p;
    fx_attn_in q, k, v;
    fx_attn_out o;
    fx_shape ys;
    return fx_node_attention(g, n, &p, &q, &k, &v, &o, &ys) ? 0 : fx_attention_scratch_bytes(NULL, &p, threads);
  }
  if (n->kind == FX_OP_TRANSPOSE_CONV) { /* the filter as GEMM panels per tap, packed per run */
    fx_tconv_geom geo;
    fx_node_tconv_geom(g, n, &geo);
    return fx_tconv_packed_floats(&geo, NULL) * sizeof(float);
  }
  if (n->kind == FX_OP_QCONV || n->kind == FX_OP_QFC || n->kind == FX_OP_QDEPTHWISE)
    return fx_qlayer_scratch_bytes(g, n);
  if (n->kind == FX_OP_BATCH_MATMUL) /* B packed per run, A's rows transposed with adj_x */
    return fx_node_bmm_plan(g, n, &bmm) ? 0 : fx_bmm_scratch_floats(&bmm, NULL, threads, 0) * sizeof(float);
  if (n->kind == FX_OP_QBATCH_MATMUL) /* the same in int8, B's panels with their requantization */
    return fx_node_bmm_plan(g, n, &bmm) ? 0 : fx_bmm_qs8_scratch_bytes(&bmm, fx_qs8_gemm_config_get(), threads);
  if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || !n->pack) return 0;
  fx_conv_geom geo;
  fx_node_conv_geom(g, n, &geo);
  const size_t gemm = fx_conv_scratch_bytes(n->pack, &geo, threads), rt = fx_conv_winograd_rt_scratch_bytes(n->pack, &geo, threads);
  return rt > gemm ? rt : gemm;
}

int fx_pack_gemm_forms(fx_graph *g, struct fx_store *store, int mapped_only) {
  int added = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *n = &g->nodes[i];
    if (!n->pack || !fx_conv_pack_tile(n->pack) || n->gemm_pack) continue;
    if (!(n->gemm_pack = fx_conv_pack_gemm_form(store, n->pack))) return -1;
    if (mapped_only && !fx_conv_pack_mapped(n->gemm_pack)) {
      fx_conv_pack_forget(store, n->gemm_pack);
      n->gemm_pack = NULL;
      continue;
    }
    /* a budget plan may run it as Winograd from these panels: scratch, not 4-7x the bytes */
    fx_conv_set_winograd_rt(n->gemm_pack, fx_conv_pack_tile(n->pack));
    added++;
  }
  return added;
}

int fx_node_check_unmapped(fx_node *n) {
  if (n->qlayer) return fx_qlayer_check_unmapped(n->qlayer);
  return (n->pack && fx_conv_pack_check(n->pack, 1)) || (n->gemm_pack && fx_conv_pack_check(n->gemm_pack, 1)) ? -1 : 0;
}

int fx_node_repair(fx_node *n) {
  if (n->qlayer) return fx_qlayer_repair(n->qlayer);
  const int a = n->pack ? fx_conv_pack_repair(n->pack) : 0;
  const int b = n->gemm_pack ? fx_conv_pack_repair(n->gemm_pack) : 0;
  return a < 0 || b < 0 ? -1 : a | b;
}

void fx_node_release(fx_node *n) {
  fx_conv_pack_free(n->pack);
  fx_conv_pack_free(n->gemm_pack);
  fx_qlayer_free(n->qlayer);
  fx_qop_free(n->qop);
  n->qop = NULL;
  n->pack = n->gemm_pack = NULL;
  n->qlayer = NULL;
}
