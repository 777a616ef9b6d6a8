/* Sigmoid / swish over arrays, one variant per ISA (vsigmoid_config.c). */
#ifndef FLEX_VSIGMOID_H
#define FLEX_VSIGMOID_H
#include <stddef.h>

typedef void (*fx_vsigmoid_fn)(const float *x, float *y, size_t n, int swish);
typedef struct {
  const char *name; /* e.g. "f32-vsigmoid-avx512f" */
  fx_vsigmoid_fn fn;
} fx_vsigmoid_config;

/* y = sigmoid(x) (swish: x * sigmoid(x)); y may equal x. Runs the SIMD variant for this CPU
 * and returns 1, or returns 0 when there is none (the caller's portable loop, which the
 * compiler vectorises for the baseline ISA, e.g. NEON, does the work). */
int fx_vsigmoid(const float *x, float *y, size_t n, int swish);
/* The variant for this CPU. */
const fx_vsigmoid_config *fx_vsigmoid_config_get(void);
/* Every variant this CPU can run (index 0 = the portable reference); NULL past the end. */
const fx_vsigmoid_config *fx_vsigmoid_config_at(int i);
void fx_vsigmoid_ref(const float *x, float *y, size_t n, int swish);
#endif
