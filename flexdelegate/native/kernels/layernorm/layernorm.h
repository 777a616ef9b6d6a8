/* LayerNorm over the last axis, as the converter spells it (README.md). */
#ifndef FLEX_LAYERNORM_H
#define FLEX_LAYERNORM_H
#include <stddef.h>
#include "runtime/cpu.h"

struct fx_pool;

/* Per row of c floats: mean = sum(x)/c, var = sum((x - mean)^2)/c, r = 1/sqrt(var + eps), then
 *   FX_LN_AFFINE: g_j = gamma ? r*gamma_j : r,  y_j = x_j*g_j + (-mean*g_j + (beta ? beta_j : 0))
 *   FX_LN_KERAS_RMS (LayerNormalization(rms_scaling=True)): y_j = (x_j*r) * (gamma ? gamma_j : 1)
 * each product and sum rounded as in the stock graph (a constant row's x*g and mean*g cancel
 * exactly, as there; fused they would leave a rounding error times g, up to 1e6). gamma /
 * beta: c floats or NULL. Rows are x_stride / y_stride floats apart; y may be x. */
enum { FX_LN_AFFINE = 0, FX_LN_KERAS_RMS = 1 };

typedef struct {
  const float *gamma, *beta; /* c floats each, or NULL */
  float eps;
  int mode;                  /* FX_LN_AFFINE or FX_LN_KERAS_RMS */
} fx_layernorm_params;

typedef void (*fx_layernorm_fn)(size_t rows, size_t c, const float *x, size_t x_stride, float *y,
                                size_t y_stride, const fx_layernorm_params *p);

typedef struct {
  const char *name; /* dtype-op-tile-isa */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  fx_layernorm_fn fn;
} fx_layernorm_config;

/* The variants of f32-layernorm.inc (layernorm.c). */
extern fx_isa_menu fx_layernorm_menu;

#define FX_UKERNEL(isa, name, fn) \
  void fn(size_t rows, size_t c, const float *x, size_t x_stride, float *y, size_t y_stride, const fx_layernorm_params *p);
#include "f32-layernorm.inc"
#undef FX_UKERNEL

const fx_layernorm_config *fx_layernorm_config_get(void);  /* this CPU's ($FLEXDELEGATE_ISA narrows) */
const fx_layernorm_config *fx_layernorm_config_at(int i);  /* 0 = scalar reference; NULL past the end */

/* This CPU's kernel over `rows` rows, split across the pool (NULL: inline). */
void fx_layernorm_f32(struct fx_pool *pool, size_t rows, size_t c, const float *x, size_t x_stride, float *y,
                      size_t y_stride, const fx_layernorm_params *p);
#endif
