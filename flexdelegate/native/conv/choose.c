/* How every convolution runs: the one file that chooses among the algorithm bodies of conv/
 * (im2col GEMM, direct conv, Winograd pre-transformed, Winograd at run time), with every
 * measured table and cost constant those choices use. Four decisions, and an order:
 *
 *   at init, per partition: which stride-1 3x3 convs pack Winograd weights, and which run
 *     Winograd from their plain weights instead (fx_conv_choose_winograd);
 *   at init, per GEMM-packed conv: run-time Winograd, stem conv, direct conv or im2col
 *     (fx_conv_choose_form);
 *   at init, per int8 conv: GEMM, im2col GEMM or IGEMM (fx_conv_choose_qs8_form);
 *   at load, per CPU: dynamic-range convs and FCs on the int8 GEMM or the FP32 one
 *     (fx_conv_choose_hybrid);
 *   under a budget: the time each way of running a layer is estimated at (fx_conv_cost_us,
 *     fx_conv_qs8_cost_us), so the planner can rank them. */
#include <stdlib.h>
#include <string.h>
#include "conv.h"
#include "flex_api.h"
#include "kernels/conv-stem/stem.h"
#include "kernels/gemm/gemm.h"
#include "conv/winograd.h"
#include "runtime/cpu.h"

/* ---- Winograd or not, per stride-1 3x3 conv ----
 * Winograd is the fastest kernel on most of them (fastest_tile), but its pre-transformed
 * weights are 4x (F4) or 7.1x (F6) the plain ones and stay resident, so by default a partition
 * spends at most a share of its plain packed weights on the extra bytes, on the layers that save
 * the most time per extra byte: big feature maps with few channels first (their weights are
 * small and their tiles cover the map well), deep 14x14 / 7x7 layers with megabytes of weights
 * last.
 *
 * Measured (bench/compare.py, 1 thread, against LiteRT 2.3's XNNPack): VGG-19 0.93 with a flat
 * 1 MiB cap per layer, 0.62 with every layer of its 224..56 maps (+29 MB on 575 MB of
 * weights); ResNet-50 gains ~5% from its 28x28 layers for +7 MB on 105 MB, and its 14x14 ones
 * cost 7 MB each for ~1.5% each. A sixteenth of the weights buys the first and keeps
 * ResNet-50's resident memory under LiteRT's (bench/cache_load.py). */

/* The stem kernel (3x3 convs over 3 channels) against im2col GEMM over the same panels, from
 * testing.conv2d (stem=True vs direct=False): stem / im2col time 0.50-0.77 wherever measured
 * (AVX2 stride 2 on a Zen 3; AVX2 and AVX-512 at strides 1 and 2, 1 and 2 threads, on the Xeon:
 * kernels/conv-stem/NOTES.md). At stride 1 it also beats Winograd, which a 3-channel conv
 * would otherwise take (one-conv models 224x224x3, AVX-512, 1 thread, min of 200 alternating
 * invokes, stem / F(4,3) time: 16 channels out 1.02, 32 0.72, 64 0.77). Only where measured;
 * FLEXDELEGATE_DIRECT=all|none (every supported conv direct through IGEMM, or none) leaves
 * stems to that. */
typedef struct { int isa, stride; } stem_rule;
static const stem_rule k_stem_rules[] = {{FX_ISA_AVX2, 1}, {FX_ISA_AVX2, 2}, {FX_ISA_AVX512F, 1}, {FX_ISA_AVX512F, 2}};

/* Whether a conv of this geometry runs the stem kernel, given GEMM panels of an `isa` kernel. */
static int stem_rule_for(const fx_conv_geom *g, int isa) {
  if (g->stride_h != g->stride_w || !fx_conv_stem_geom_ok(g)) return 0;
  const char *force = getenv("FLEXDELEGATE_DIRECT");
  if (force && *force) return 0;
  for (size_t i = 0; i < sizeof k_stem_rules / sizeof *k_stem_rules; i++)
    if (k_stem_rules[i].isa == isa && k_stem_rules[i].stride == g->stride_h) return 1;
  return 0;
}

int fx_conv_stem_would_run(const fx_conv_geom *g) {
  const fx_gemm_config *uk = fx_gemm_config_get();
  return fx_stem_config_for(uk) && stem_rule_for(g, uk->isa);
}

/* Extra Winograd bytes a partition may spend: this share of its plain packed weights, and
 * never less than the floor (small models: a few 3x3 layers of a few hundred KB). */
#define WINO_EXTRA_SHARE 16
#define WINO_EXTRA_FLOOR (2u << 20)

/* Speed-up over im2col GEMM on a map its tiles cover exactly (bench/winograd.py, AVX-512;
 * compare.py --layers shows ~2.7x for F6 on ResNet-50's 56x56 layers). They only rank layers
 * for the allowance here; a budget plan prices each layer from its own table below. */
#define WINO_GAIN4 2.5
#define WINO_GAIN6 2.8

/* The fastest kernel for a stride-1 3x3 conv, from bench/winograd.py on this project's CPUs
 * (GFLOP/s per shape): with AVX-512 GEMM, im2col wins when an image has under ~8 4x4 tiles
 * (7x7 maps), F(6,3) on big maps of up to 128x128 channels, F(4,3) elsewhere; with slower GEMMs
 * (AVX2, scalar, NEON) Winograd wins everywhere. By the ISA family of the GEMM kernel: */
static const int k_wino_min_tiles4[FX_ISA_COUNT] = {[FX_ISA_AVX512F] = 8};
#define WINO6_MIN_TILES 36
#define WINO6_MAX_CHANNELS2 (128 * 128)

/* Winograd from the plain weights (winograd_rt.c) against direct conv, 1 thread,
 * AVX-512, warm weights (_native_testing.winograd(from_gemm=True) vs conv2d): 56x56x64 3.1x
 * (F6), 28x28x128 2.8x (F4), 14x14x256 1.7x (F4), 14x14x512 1.4x, 7x7x512 0.6x. It needs tiles
 * enough to pay for each panel's filter transform: at least RT_MIN_TILES4 F4 tiles per image;
 * F6 from RT_MIN_TILES6 F6 tiles (56x56 maps: F6 3.1x vs F4 2.9x; 28x28: F4 2.8x vs F6 2.6x).
 * Its scratch holds the whole transformed input ((tile+2)^2 / tile^2 times the input): past
 * RT_MAX_INPUT_BYTES (huge maps with many channels) the conv stays GEMM rather than grow the
 * arena by more than that. */
#define RT_MIN_TILES4 16
#define RT_MIN_TILES6 64
#define RT_MAX_INPUT_BYTES (8u << 20)

static long tiles_of(int oh, int ow, int tile) { return (long)((oh + tile - 1) / tile) * ((ow + tile - 1) / tile); }

static int fastest_tile(const fx_wino_layer *l) {
  if (tiles_of(l->oh, l->ow, 4) < k_wino_min_tiles4[fx_gemm_config_get()->isa]) return 0;
  return tiles_of(l->oh, l->ow, 6) >= WINO6_MIN_TILES && (long)l->cin * l->cout <= WINO6_MAX_CHANNELS2 ? 6 : 4;
}

static int runtime_tile(const fx_wino_layer *l) {
  const long tiles4 = tiles_of(l->oh, l->ow, 4), tiles6 = tiles_of(l->oh, l->ow, 6);
  const int tile = tiles6 >= RT_MIN_TILES6 ? 6 : tiles4 >= RT_MIN_TILES4 ? 4 : 0;
  const double v = (double)(tile + 2) * (tile + 2) * (tile == 6 ? tiles6 : tiles4) * l->batch * ((l->cin + 15) / 16 * 16) * 4;
  return v <= RT_MAX_INPUT_BYTES ? tile : 0;
}

size_t fx_conv_plain_bytes(int cout, int k) {
  return fx_gemm_packed_floats(cout, k, fx_gemm_config_get()->nr) * sizeof(float);
}

/* Bytes a Winograd tile's packed weights take beyond the GEMM-packed ones (0 for tile 0). */
static size_t extra_bytes(int tile, int cin, int cout) {
  if (!tile) return 0;
  const size_t plain = fx_conv_plain_bytes(cout, cin * 9);
  const size_t packed = fx_winograd_packed_floats(tile, cout, cin, fx_gemm_config_get()->nr) * sizeof(float);
  return packed > plain ? packed - plain : 0;
}

/* Estimated flops saved per extra byte of F(tile, 3) weights. */
static double saved_per_byte(const fx_wino_layer *l, int tile) {
  size_t extra = extra_bytes(tile, l->cin, l->cout);
  double covered = (double)((l->oh + tile - 1) / tile * tile) * ((l->ow + tile - 1) / tile * tile);
  double saved = 1.0 - covered / ((double)l->oh * l->ow) / (tile == 6 ? WINO_GAIN6 : WINO_GAIN4);
  double flops = 18.0 * l->oh * l->ow * l->cin * l->cout;
  return saved > 0 && extra ? flops * saved / (double)extra : 0;
}

typedef struct {
  fx_wino_layer *l;
  int order;
  double density; /* saved_per_byte at F4 */
} candidate;

static int by_density(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->density != y->density) return x->density < y->density ? 1 : -1;
  return x->order - y->order;
}

/* AUTO: the allowance goes to the densest candidates first, F6 where its extra bytes still fit. */
static void spend_allowance(candidate *c, int nc, size_t plain_bytes) {
  size_t left = plain_bytes / WINO_EXTRA_SHARE;
  if (left < WINO_EXTRA_FLOOR) left = WINO_EXTRA_FLOOR;
  qsort(c, (size_t)nc, sizeof *c, by_density);
  for (int i = 0; i < nc; i++) {
    const fx_wino_layer *l = c[i].l;
    int tile = fastest_tile(l);
    if (extra_bytes(tile, l->cin, l->cout) > left) tile = 4;
    const size_t extra = extra_bytes(tile, l->cin, l->cout);
    if (extra > left) continue; /* a later, smaller layer may still fit */
    c[i].l->tile = tile;
    left -= extra;
  }
}

/* A layer the stem kernel would run runs it instead (AUTO; ALL still forces Winograd). */
static int stem_instead(const fx_wino_layer *l, int mode) { return mode == FX_WINO_AUTO && l->stem; }

int fx_conv_choose_winograd(fx_wino_layer *layers, int n, size_t plain_bytes, int mode) {
  candidate *c = calloc((size_t)n + 1, sizeof *c);
  if (!c) return -1;
  int nc = 0;
  for (int i = 0; i < n; i++) {
    fx_wino_layer *l = &layers[i];
    l->tile = l->rt_tile = 0;
    const int tile = mode == FX_WINO_OFF || stem_instead(l, mode) ? 0 : fastest_tile(l);
    if (!tile) continue;
    if (mode == FX_WINO_ALL) l->tile = tile;
    const double density = saved_per_byte(l, 4);
    if (density > 0) c[nc++] = (candidate){l, i, density};
  }
  if (mode == FX_WINO_AUTO) {
    spend_allowance(c, nc, plain_bytes);
    for (int i = 0; i < n; i++)
      if (!layers[i].tile && !stem_instead(&layers[i], mode)) layers[i].rt_tile = runtime_tile(&layers[i]);
  }
  free(c);
  return 0;
}

/* ---- direct conv or im2col, per GEMM-packed conv ----
 * Layers that run direct by default, per ISA family of the GEMM kernel, from
 * `python bench/direct_conv.py --rounds 9 [--kernel f32-gemm-6x16-avx2]` (1 thread, medians of
 * alternating runs, direct / im2col time) on this project's AVX-512 machine (Zen 5):
 *   AVX-512 (32 columns): 3x3 s1 at cin 64..256: 0.81-0.97 (ResNet-50 56/28/14 maps:
 *     0.87/0.93/0.95, VGG-19 224x224x64: 0.81-0.88); the im2col copy is what direct saves.
 *     7x7 s2 stem (cin 3): 0.92-0.95. No gain at 512 channels (0.97-1.09), on 3x3 cin-3 stems
 *     (0.96-1.06) or 1x1 s2 (0.96-1.07): those stay im2col.
 *   AVX2 (16 columns): 3x3 at cin 64..512: 0.90-1.00 (never slower), 7x7 stem 0.92; 3x3 stems
 *     and 1x1 s2: 0.97-1.00, left to im2col.
 * Scalar and NEON are not measured: never by default. 3x3 s1 layers that take Winograd never
 * get here (their weights are not GEMM panels).
 * FLEXDELEGATE_DIRECT=all runs every supported conv direct, =none none (tests, benches). */
typedef struct { int isa, min_taps, min_cin, max_cin; } direct_rule;
static const direct_rule k_direct_rules[] = {
    {FX_ISA_AVX512F, 9, 64, 256}, {FX_ISA_AVX512F, 49, 1, 64},
    {FX_ISA_AVX2, 9, 64, 512}, {FX_ISA_AVX2, 49, 1, 64},
};

static int direct_wins(const fx_conv_pack *p, const fx_conv_geom *g) {
  if (g->direct || !fx_conv_direct_supported(p, g)) return 0;
  const char *force = getenv("FLEXDELEGATE_DIRECT");
  if (force && *force) return strcmp(force, "all") == 0;
  for (size_t i = 0; i < sizeof k_direct_rules / sizeof *k_direct_rules; i++) {
    const direct_rule *r = &k_direct_rules[i];
    if (r->isa == fx_conv_isa(p) && g->kh * g->kw >= r->min_taps && g->cin >= r->min_cin && g->cin <= r->max_cin)
      return 1;
  }
  return 0;
}

/* ---- stem conv, per 3x3 conv over 3 channels (stem.c) ---- */
static int stem_wins(const fx_conv_pack *p, const fx_conv_geom *g) {
  return fx_conv_stem_supported(p, g) && stem_rule_for(g, fx_conv_isa(p));
}

void fx_conv_choose_form(fx_conv_pack *p, const fx_conv_geom *g, int rt_tile) {
  if (rt_tile) fx_conv_set_winograd_rt(p, rt_tile); /* Winograd from the same panels */
  else if (stem_wins(p, g)) fx_conv_set_stem(p, 1); /* or the stem kernel, */
  else fx_conv_set_direct(p, direct_wins(p, g));    /* or direct, where that measured faster */
}

/* ---- the int8 GEMM variant, per layer ----
 * AMX computes 64-deep k steps (a tile row is 64 bytes): a layer only 32 or fewer deep spends
 * half or more of every step on zero padding, and its output stage, not the tiles, bounds it.
 * There the AVX-512 VNNI tile is faster (one thread, interleaved, GOPS VNNI / AMX: 1x1 16->96
 * @112 1.8x, 24->144 @56 1.4x, 32->192 @56 1.1x, 32->16 @112 1.8x, the 3x3/2 stem over 3
 * channels, K = 27, 1.4x; K = 40 and 48: 0.7-0.97x, K >= 64: 0.4-0.74x). MobileNetV2 and
 * EfficientNet expand 16-, 24- and 32-channel maps this way at their largest sizes. Hybrid layers
 * keep AMX (the VNNI tile's float output stage came later, on a machine without AMX: the shallow
 * hybrid layers' choice there is not measured). */
#define FX_QS8_VNNI_MAX_DEPTH 32

const fx_qs8_gemm_config *fx_conv_choose_qs8_gemm(int depth, int hybrid) {
  const fx_qs8_gemm_config *g = fx_qs8_gemm_config_get();
  if (hybrid || depth > FX_QS8_VNNI_MAX_DEPTH || g != fx_isa_variant(&fx_qs8_gemm_menu, FX_ISA_AMX)) return g;
  const fx_qs8_gemm_config *vnni = fx_isa_variant(&fx_qs8_gemm_menu, FX_ISA_AVX512VNNI);
  return vnni ? vnni : g;
}

/* ---- the int8 forms, per int8 conv ----
 * A pointwise conv (1x1, stride 1, no padding, the output as big as the input) reads its input
 * as the GEMM's A as it is. Otherwise the IGEMM, unless cin is too small to fill the kernel's
 * k-groups (the 3-channel stem of most CNNs: 3 of every 8 bytes would be padding): then one
 * flat K = kh*kw*cin of gathered im2col rows through the GEMM. */
int fx_conv_choose_qs8_form(const fx_qs8_gemm_config *g, const fx_qs8_conv_geom *cg, int hybrid) {
  if (cg->kh == 1 && cg->kw == 1 && cg->sh == 1 && cg->sw == 1 && cg->pt == 0 && cg->pl == 0 && cg->oh == cg->h &&
      cg->ow == cg->w)
    return FX_QS8_CONV_GEMM;
  /* a range-only variant (AMX) gathers its A rows; so do hybrid layers on a variant whose float
   * output stage is a GEMM's only (range_f32, no igemm_tiles_f32) */
  if (!g->igemm || (hybrid && !g->igemm_tiles_f32)) return FX_QS8_CONV_IM2COL;
  if (cg->kh * cg->kw > 1 && cg->cin % g->kr != 0 && cg->cin < 2 * g->kr) return FX_QS8_CONV_IM2COL;
  return FX_QS8_CONV_IGEMM;
}

/* ---- hybrid layers, on the int8 GEMM or the FP32 one ----
 * A dynamic-range CONV_2D / FULLY_CONNECTED (float activations, int8 weights) computes as stock's
 * hybrid kernels do where the int8 variant has a float output stage (range_f32: AMX): its input
 * quantized per image / row, the int8 GEMM, stock's float epilogue. 1 thread, min CPU time,
 * against the FP32 kernels from the weights dequantized at pack time: MobileNetV2 dynamic 6.5 ->
 * 3.8 ms, EfficientNet-B0 11.7 -> 7.6, ResNet-50 54 -> 13.2; per layer it wins on every shape
 * tried (1x1 256->64 @56 0.78 -> 0.35, 3x3 256->256 @14 0.94 -> 0.14). The other variants keep
 * the FP32 path: their int8 GEMMs run at about the FP32 GEMM's speed, and the input's
 * quantization and the float outputs would cost on top. */
int fx_conv_choose_hybrid(const fx_qs8_gemm_config *g) { return g->range_f32 != NULL; }

/* ---- panel order, per GEMM run ----
 * A GEMM runs every row tile against one weight panel (nr columns, L1-resident) before the
 * next: each weight is read once, and the A rows come from L2. With few rows, big weights and a
 * wide output that writes each output row nr floats at a time, the rows a page or more apart,
 * so no hardware prefetcher follows the stores, and the next panel comes from DRAM unasked:
 * gpt2_tiny's vocabulary FC (128 rows, K 128, N 50257: 25.7 MB of weights, 201 KB output rows)
 * ran at 62 GFLOP/s of 90 (AVX2, Zen 3). There each row tile instead runs across a block of
 * BLOCK_BYTES of panels (kept in L2 over the row tiles; output rows written in runs of the
 * block's width) while the next block is prefetched: medians of alternating rounds, 1 thread,
 * on a loaded machine, blocks of 64 / 128 / 256 KB 0.58 / 0.60 / 0.72x the time (min 28.1 ->
 * 20.0 ms). The weights must outgrow L2 (MIN_WEIGHT_BYTES; below it the panel order is as
 * fast) and the rows of A stay in L2 beside the block (MAX_A_BYTES): BERT-base's 128 x 768 x
 * 3072 FC (393 KB of A) measured 0.99-1.07x blocked, ResNet-50's 1x1 convs and 7x7 stage
 * 0.98-1.03x. A single row tile has nothing to block. */
#define BLOCK_BYTES (64u << 10)
#define BLOCK_MIN_WEIGHT_BYTES (2u << 20)
#define BLOCK_MAX_A_BYTES (128u << 10)

size_t fx_conv_panel_block(size_t rows, int mr, size_t k, size_t panels, size_t panel_bytes) {
  if (rows <= (size_t)mr || !panel_bytes || panels * panel_bytes < BLOCK_MIN_WEIGHT_BYTES ||
      rows * k * sizeof(float) > BLOCK_MAX_A_BYTES)
    return 0;
  return BLOCK_BYTES / panel_bytes ? BLOCK_BYTES / panel_bytes : 1;
}

/* ---- estimates for the budget planner ----
 * Per thread: good enough to rank kernels and to decide how early to preload; the planner only
 * compares them. Direct conv where the load-time table kept im2col measured 0.93-1.07x
 * im2col's time there (bench/direct_conv.py); it is costed a little slower, so that a budget
 * takes it for its zero scratch, when im2col's does not fit, rather than for speed. */
#define GEMM_FLOPS_PER_US 40e3
#define DIRECT_SLOWDOWN 1.1

/* Winograd under a budget, pre-transformed (winograd.c) and run-time (winograd_rt.c), against
 * im2col GEMM on the same conv: `python bench/winograd_rt_cost.py --iters 3 --rounds 7` (1 thread,
 * f32-gemm-6x16-avx2 on Zen 3, warm weights, medians of alternating rounds on a 2-core machine
 * at load 4-5; "best" = the best round). Gain = im2col time / Winograd time:
 *
 *   shape        tile  pre-transformed   run-time   its blob   transformed input
 *   56x56x64     F6    6.3 (best 8.0)    6.7 (7.8)   1.0 MB     1.6 MB
 *   28x28x128    F4    6.2 (7.8)         4.5 (6.1)   2.4 MB     0.9 MB
 *   14x14x256    F4    1.3 (1.0)         2.5 (1.7)   9.4 MB     0.6 MB
 *   14x14x512    F4    1.3 (0.7)         2.8 (1.7)    38 MB     1.2 MB
 *   224x224x64   F6    2.8 (2.9)         1.5 (1.8)   1.0 MB      24 MB
 *   112x112x128  F6    2.4 (2.8)         1.1 (1.1)   4.2 MB      12 MB
 *   56x56x256    F4    1.3 (1.5)         1.6 (1.6)   9.4 MB     7.2 MB
 *   28x28x512    F4    1.6 (1.7)         4.1 (4.3)    38 MB     3.6 MB
 *
 * What decides is where the data lives: pre-transformed weights past the caches (a 9-38 MB blob)
 * stream from memory at every tile block, so the deep layers gain little; the run-time form
 * transforms one panel's filters into cache instead, but its whole transformed input past
 * ~4 MB (VGG's 224..56 maps) streams from memory for every panel. A flat 2.5 for the
 * pre-transformed blob against 5.5-6.5 for the run-time form had VGG-19 @ 60 MB run its
 * 224/112 maps from the GEMM panels at twice the pre-transformed time (per-node profile). */
#define WINO_BIG_BYTES (8u << 20) /* blob or transformed input past the caches */
#define RT_WARM_INPUT_BYTES (4u << 20)

static double wino_gain_pre(size_t blob_bytes, size_t input_bytes) {
  if (blob_bytes > WINO_BIG_BYTES) return 1.3;
  return input_bytes > WINO_BIG_BYTES ? 2.6 : 6.0;
}

/* Run-time: too few tiles per image to pay for each panel's filter transform below 16 F4 tiles
 * (7x7 maps: 0.6x direct conv, see runtime_tile); 14x14 maps (16-48 tiles) pay it per 16. */
static double wino_gain_rt(size_t tiles_per_image, int tile, size_t input_bytes) {
  if (tile == 4 && tiles_per_image < 16) return 1.0;
  if (input_bytes > WINO_BIG_BYTES) return 1.3;
  if (input_bytes > RT_WARM_INPUT_BYTES) return 1.6;
  return tile == 4 && tiles_per_image < 49 ? 2.0 : 4.5;
}

/* Bytes of a conv's input transformed to F(tile, 3) points (what the run-time form holds whole). */
static size_t transformed_input_bytes(const fx_conv_geom *g, int tile, size_t *tiles_per_image) {
  const size_t per_image = (size_t)((g->oh + tile - 1) / tile) * (size_t)((g->ow + tile - 1) / tile);
  const size_t batch = g->m / ((size_t)g->oh * g->ow);
  if (tiles_per_image) *tiles_per_image = per_image;
  return (size_t)(tile + 2) * (tile + 2) * per_image * batch * (size_t)g->cin * sizeof(float);
}

/* Each extra output-channel slice of either Winograd form transforms the whole input again
 * (both drivers transform every tile for the slice's panels); the slice's panels then read it
 * back. Same runs, (time in 4 slices - whole) / 3 per input float, run-time (pre-transformed):
 * 0.25-0.6 (0.27-0.64) ns at 56x56x64 and 28x28x128; 2-25 ns at 256 channels and more or with
 * a transformed input past 4 MB: 14x14x256 2.1-24, 14x14x512 5.2-25, 28x28x512 4.5-10.5,
 * 56x56x256 4.9, 112x112x128 4.9-6.2, 224x224x64 3.3-5.3 (2.2); the spread is the load. */
#define WINO_SLICE_NS_WARM 0.6
#define WINO_SLICE_NS_COLD 5.0

double fx_conv_winograd_slice_us(const fx_conv_geom *g, int tile, int threads) {
  const double floats = (double)(g->m / ((size_t)g->oh * g->ow)) * g->ih * g->iw * g->cin;
  const int warm = g->cin <= 128 && transformed_input_bytes(g, tile, NULL) <= RT_WARM_INPUT_BYTES;
  return floats * (warm ? WINO_SLICE_NS_WARM : WINO_SLICE_NS_COLD) / 1e3 / threads;
}

/* int8 conv / FC: ResNet-50 INT8's convs ran at 16-37 GFLOP/s here (AVX2, 1 thread, load 5), the
 * FP32 GEMM's estimate above. */
#define QS8_FLOPS_PER_US GEMM_FLOPS_PER_US

double fx_conv_qs8_cost_us(double flops, int threads) { return flops / (QS8_FLOPS_PER_US * threads); }

double fx_conv_cost_us(int kernel, double flops, int threads, const fx_conv_geom *g, const fx_conv_pack *p) {
  const double gemm_us = flops / (GEMM_FLOPS_PER_US * threads);
  size_t tiles = 0;
  if (kernel == FLEX_KERNEL_WINOGRAD) {
    const size_t blob = (size_t)fx_conv_panels(p) * fx_conv_panel_bytes(p);
    return gemm_us / wino_gain_pre(blob, transformed_input_bytes(g, fx_conv_pack_tile(p), NULL));
  }
  if (kernel == FLEX_KERNEL_WINOGRAD_RT) {
    const int tile = fx_conv_pack_winograd_rt(p);
    const size_t input = transformed_input_bytes(g, tile, &tiles);
    return gemm_us / wino_gain_rt(tiles, tile, input);
  }
  return kernel == FLEX_KERNEL_DIRECT ? gemm_us * DIRECT_SLOWDOWN : gemm_us;
}
