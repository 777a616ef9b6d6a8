/* GELU over float arrays (TFLite GELU; README.md). */
#ifndef FLEX_VGELU_H
#define FLEX_VGELU_H
#include <stddef.h>

/* y[i] = gelu(x[i]) for i < n; approximate != 0: the tanh form. y may be x (in place). */
typedef void (*fx_vgelu_fn)(const float *x, float *y, size_t n, int approximate);

typedef struct {
  const char *name; /* dtype-op-tile-isa */
  fx_vgelu_fn fn;
} fx_vgelu_config;

#define FX_VGELU_VARIANT(isa, name, fn) void fn(const float *x, float *y, size_t n, int approximate);
#include "vgelu.inc"
#undef FX_VGELU_VARIANT

/* The variant for this CPU ($FLEXDELEGATE_ISA narrows it, as for every family). */
const fx_vgelu_config *fx_vgelu_config_get(void);
/* Every variant this CPU runs, 0 = the scalar reference; NULL past the end. */
const fx_vgelu_config *fx_vgelu_config_at(int i);
/* This CPU's variant on one array. */
void fx_vgelu_f32(const float *x, float *y, size_t n, int approximate);
#endif
