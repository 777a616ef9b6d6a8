/* GELU, portable scalar reference: what every vector variant is tested against. */
#include "gelu_math.h"
#include "vgelu.h"

void fx_f32_vgelu_scalar(const float *x, float *y, size_t n, int approximate) {
  if (approximate)
    for (size_t i = 0; i < n; i++) y[i] = fx_gelu_tanh_ref(x[i]);
  else
    for (size_t i = 0; i < n; i++) y[i] = fx_gelu_exact_ref(x[i]);
}
