/* GELU over float arrays (TFLite GELU; README.md). */
#ifndef FLEX_VGELU_H
#define FLEX_VGELU_H
#include <stddef.h>
#include "runtime/cpu.h"

/* y[i] = gelu(x[i]) for i < n; approximate != 0: the tanh form. y may be x (in place). */
typedef void (*fx_vgelu_fn)(const float *x, float *y, size_t n, int approximate);

typedef struct {
  const char *name; /* dtype-op-tile-isa */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  fx_vgelu_fn fn;
} fx_vgelu_config;

/* The variants of f32-vgelu.inc (vgelu_config.c). */
extern fx_isa_menu fx_vgelu_menu;

#define FX_UKERNEL(isa, name, fn) void fn(const float *x, float *y, size_t n, int approximate);
#include "f32-vgelu.inc"
#undef FX_UKERNEL

/* The variant for this CPU ($FLEXDELEGATE_ISA narrows it, as for every family). */
const fx_vgelu_config *fx_vgelu_config_get(void);
/* Every variant this CPU runs, 0 = the scalar reference; NULL past the end. */
const fx_vgelu_config *fx_vgelu_config_at(int i);
/* This CPU's variant on one array. */
void fx_vgelu_f32(const float *x, float *y, size_t n, int approximate);
#endif
