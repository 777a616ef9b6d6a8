/* Which stride-1 3x3 convolutions of a partition run as Winograd. Winograd is the fastest
 * kernel on most of them (conv.c fx_conv_fastest_tile), but its pre-transformed weights are
 * 4x (F4) or 7.1x (F6) the plain ones and stay resident, so by default a partition spends at
 * most a share of its plain packed weights on the extra bytes, on the layers that save the
 * most time per extra byte: big feature maps with few channels first (their weights are small
 * and their tiles cover the map well), deep 14x14 / 7x7 layers with megabytes of weights last.
 *
 * Measured (bench/compare.py, 1 thread, against LiteRT 2.3's XNNPack): VGG-19 0.93 with a flat
 * 1 MiB cap per layer, 0.62 with every layer of its 224..56 maps (+29 MB on 575 MB of
 * weights); ResNet-50 gains ~5% from its 28x28 layers for +7 MB on 105 MB, and its 14x14 ones
 * cost 7 MB each for ~1.5% each. A sixteenth of the weights buys the first and keeps
 * ResNet-50's resident memory under LiteRT's (bench/cache_load.py). */
#include <stdlib.h>
#include "conv.h"
#include "kernels/gemm/gemm.h"
#include "ir/graph.h"

/* Extra Winograd bytes a partition may spend: this share of its plain packed weights, and
 * never less than the floor (small models: a few 3x3 layers of a few hundred KB). */
#define WINO_EXTRA_SHARE 16
#define WINO_EXTRA_FLOOR (2u << 20)

/* Speed-up over im2col GEMM on a map its tiles cover exactly (bench/winograd.py, AVX-512;
 * compare.py --layers shows ~2.7x for F6 on ResNet-50's 56x56 layers). Only ranks layers. */
#define WINO_GAIN4 2.5
#define WINO_GAIN6 2.8

typedef struct {
  fx_node *n;
  int tile, oh, ow, cin, cout, order;
  double density; /* estimated flops saved per extra byte */
} candidate;

/* Winograd from the plain weights (winograd_rt.c) against direct conv, 1 thread,
 * AVX-512, warm weights (_native.winograd(from_gemm=True) vs _native.conv2d): 56x56x64 3.1x
 * (F6), 28x28x128 2.8x (F4), 14x14x256 1.7x (F4), 14x14x512 1.4x, 7x7x512 0.6x. It needs tiles
 * enough to pay for each panel's filter transform: at least RT_MIN_TILES4 F4 tiles per image;
 * F6 from RT_MIN_TILES6 F6 tiles (56x56 maps: F6 3.1x vs F4 2.9x; 28x28: F4 2.8x vs F6 2.6x).
 * Its scratch holds the whole transformed input ((tile+2)^2 / tile^2 times the input): past
 * RT_MAX_INPUT_BYTES (huge maps with many channels) the conv stays GEMM rather than grow the
 * arena by more than that. */
#define RT_MIN_TILES4 16
#define RT_MIN_TILES6 64
#define RT_MAX_INPUT_BYTES (8u << 20)

static int runtime_tile(int batch, int oh, int ow, int cin) {
  const long tiles4 = (long)((oh + 3) / 4) * ((ow + 3) / 4), tiles6 = (long)((oh + 5) / 6) * ((ow + 5) / 6);
  const int tile = tiles6 >= RT_MIN_TILES6 ? 6 : tiles4 >= RT_MIN_TILES4 ? 4 : 0;
  const double v = (double)(tile + 2) * (tile + 2) * (tile == 6 ? tiles6 : tiles4) * batch * ((cin + 15) / 16 * 16) * 4;
  return v <= RT_MAX_INPUT_BYTES ? tile : 0;
}

static int eligible(const fx_graph *g, const fx_node *n) {
  return n->kind == FX_OP_CONV && n->p.conv.kh == 3 && n->p.conv.kw == 3 && n->p.conv.stride_h == 1 &&
         n->p.conv.stride_w == 1 && n->p.conv.dil_h == 1 && n->p.conv.dil_w == 1 && n->n_in >= 2 &&
         n->in[1] >= 0 && g->tensors[n->in[1]].storage == FX_ST_CONST && g->tensors[n->in[1]].shape.rank == 4 &&
         g->tensors[n->out[0]].shape.rank == 4;
}

static double saved_per_byte(const candidate *c, int tile) {
  size_t extra = fx_conv_winograd_extra_bytes(tile, c->cin, c->cout);
  double covered = (double)((c->oh + tile - 1) / tile * tile) * ((c->ow + tile - 1) / tile * tile);
  double saved = 1.0 - covered / ((double)c->oh * c->ow) / (tile == 6 ? WINO_GAIN6 : WINO_GAIN4);
  double flops = 18.0 * c->oh * c->ow * c->cin * c->cout;
  return saved > 0 && extra ? flops * saved / (double)extra : 0;
}

static int by_density(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->density != y->density) return x->density < y->density ? 1 : -1;
  return x->order - y->order;
}

static size_t plain_weight_bytes(const fx_graph *g) {
  const int nr = fx_gemm_config_get()->nr;
  size_t bytes = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const fx_node *n = &g->nodes[i];
    if ((n->kind != FX_OP_CONV && n->kind != FX_OP_FC) || n->n_in < 2 || n->in[1] < 0) continue;
    const fx_shape *w = &g->tensors[n->in[1]].shape;
    if (g->tensors[n->in[1]].storage != FX_ST_CONST || w->rank < 2 || w->d[0] <= 0) continue;
    bytes += fx_gemm_packed_floats(w->d[0], (int)(fx_shape_numel(w) / (size_t)w->d[0]), nr) * sizeof(float);
  }
  return bytes;
}

int fx_choose_winograd(fx_graph *g, int mode) {
  candidate *c = calloc((size_t)g->n_nodes + 1, sizeof *c);
  if (!c) return -1;
  int nc = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    fx_node *n = &g->nodes[i];
    n->wino_tile = n->wino_rt = 0;
    if (mode == FX_WINO_OFF || !eligible(g, n)) continue;
    const fx_shape *y = &g->tensors[n->out[0]].shape;
    candidate k = {n, 0, y->d[1], y->d[2], g->tensors[n->in[1]].shape.d[3], y->d[3], i, 0};
    k.tile = fx_conv_fastest_tile(k.oh, k.ow, k.cin, k.cout);
    if (!k.tile) continue;
    if (mode == FX_WINO_ALL) n->wino_tile = k.tile;
    k.density = saved_per_byte(&k, 4);
    if (k.density > 0) c[nc++] = k;
  }
  if (mode == FX_WINO_AUTO) {
    size_t left = plain_weight_bytes(g) / WINO_EXTRA_SHARE;
    if (left < WINO_EXTRA_FLOOR) left = WINO_EXTRA_FLOOR;
    qsort(c, (size_t)nc, sizeof *c, by_density);
    for (int i = 0; i < nc; i++) {
      int tile = c[i].tile;
      if (fx_conv_winograd_extra_bytes(tile, c[i].cin, c[i].cout) > left) tile = 4;
      size_t extra = fx_conv_winograd_extra_bytes(tile, c[i].cin, c[i].cout);
      if (extra > left) continue; /* a later, smaller layer may still fit */
      c[i].n->wino_tile = tile;
      left -= extra;
    }
  }
  for (int i = 0; i < g->n_nodes && mode == FX_WINO_AUTO; i++) {
    fx_node *n = &g->nodes[i];
    if (n->wino_tile || !eligible(g, n)) continue;
    const fx_shape *y = &g->tensors[n->out[0]].shape;
    n->wino_rt = runtime_tile(y->d[0], y->d[1], y->d[2], g->tensors[n->in[1]].shape.d[3]);
  }
  free(c);
  return 0;
}
