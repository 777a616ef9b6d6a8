/* Which chains run band by band, with what band height and strips (band.h).
 * FLEXDELEGATE_BAND overrides for tests and benches: unset, empty or "auto", the rule below;
 * "none", no chain; "all" or "all:ROWS[:STRIPS]", every chain that can, with that band height
 * and strips per image. The rule is the default since it measured faster on the Xeon (2 MB L2
 * per core) CI runs on: MobileNetV2 FP32, one process, the two interpreters' invokes
 * alternating, median of per-round auto / none 0.89-0.91 at 1 thread and 0.90-0.92 at 2
 * (300-400 rounds), EfficientNet-B0 0.98 / 1.00, ResNet-50 0.99; and it takes MobileNetV2's
 * unlimited arena from 6.0 to 1.4 MB. On Zen 3 (32 MB L3, where MobileNetV2's largest
 * expanded map, 4.8 MB, never leaves L3) it measured 0.97-0.99. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "band.h"

/* A band's working set (its buffers and im2col tile) should stay in the L2 of the core running
 * it, beside the layers' weights. */
#define BAND_SCRATCH_BYTES (256u * 1024)

/* Chains whose intermediate tensors (all of them, per image) take less than this already run
 * from cache: banding them only adds calls. */
#define BAND_MIN_INTERMEDIATE_BYTES (512u * 1024)

typedef struct {
  int mode; /* 0 the rule, 1 every chain, -1 none */
  int rows, strips; /* forced, or 0 */
} band_override;

static band_override read_override(void) {
  band_override o = {0, 0, 0};
  const char *v = getenv("FLEXDELEGATE_BAND");
  if (!v || !*v) return o;
  if (strcmp(v, "none") == 0) o.mode = -1;
  else if (strncmp(v, "all", 3) == 0) {
    o.mode = 1;
    if (sscanf(v, "all:%d:%d", &o.rows, &o.strips) < 1) o.rows = 0;
  }
  return o;
}

static size_t intermediate_bytes(const fx_band_chain *c) {
  size_t bytes = 0;
  for (int i = 0; i + 1 < c->n_layers; i++) bytes += (size_t)c->layer[i].oh * c->layer[i].out_row * sizeof(float);
  return bytes;
}

/* The tallest band whose scratch fits BAND_SCRATCH_BYTES (at least one row). */
static int band_height(const fx_graph *g, const fx_band_chain *c, int strips) {
  const int oh = c->layer[c->n_layers - 1].oh;
  int best = 1;
  for (int rows = 1; rows <= (oh + strips - 1) / strips; rows++) {
    fx_band_cost cost;
    if (fx_band_measure(g, c, rows, strips, &cost) || cost.scratch_bytes > BAND_SCRATCH_BYTES) break;
    best = rows;
  }
  return best;
}

void fx_band_choose(fx_graph *g, int threads) {
  const band_override o = read_override();
  for (int i = 0; i < g->n_chains; i++) {
    fx_band_chain *c = &g->chains[i];
    c->active = 0;
    if (o.mode < 0 || fx_band_shape(g, c)) continue;
    if (o.mode == 0 && intermediate_bytes(c) < BAND_MIN_INTERMEDIATE_BYTES) continue;
    const int oh = c->layer[c->n_layers - 1].oh;
    int strips = o.strips > 0 ? o.strips : threads;
    if (strips > oh) strips = oh;
    /* The rule bands only where each thread gets a strip of several bands: with fewer rows
     * (a 1-D conv graph's one-row maps) the chain would only lose its layers' own threads
     * (audio1d at 2 threads: its 8-layer chain on one thread, 1.35x LiteRT's time). */
    if (o.mode == 0 && strips < threads) continue;
    const int rows = o.rows > 0 ? o.rows : band_height(g, c, strips);
    if (o.mode == 0 && (long)rows * strips >= oh) continue;
    if (fx_band_measure(g, c, rows, strips, &c->cost)) continue;
    c->band_rows = rows;
    c->strips = strips;
    c->active = 1;
  }
}
