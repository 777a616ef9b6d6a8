/* The online-softmax step and the K / V packing, portable scalar references (attention.h): what
 * the vector variants are tested against. */
#include <math.h>
#include "../simd/vexp.h"
#include "attention.h"

float fx_attn_softmax_scalar(float *s, size_t n, float scale, const fx_attn_rowmask *mk, float *m, float *l) {
  float mt = -INFINITY;
  for (size_t j = 0; j < n; j++) {
    float v = s[j] * scale;
    if (j >= mk->visible || (mk->keep && !mk->keep[j])) v = mk->fill;
    if (mk->add) v += mk->add[j];
    s[j] = v;
    mt = v > mt ? v : mt;
  }
  const float m_old = *m, m_new = mt > m_old ? mt : m_old;
  if (m_new == -INFINITY) { /* every score so far -inf: nothing to add (a row that stays so is NaN) */
    for (size_t j = 0; j < n; j++) s[j] = 0.0f;
    return 1.0f;
  }
  float sum = 0.0f;
  for (size_t j = 0; j < n; j++) {
    s[j] = fx_exp_ftz_ref(s[j] - m_new);
    sum += s[j];
  }
  const float corr = m_old == -INFINITY ? 0.0f : fx_exp_ftz_ref(m_old - m_new);
  *m = m_new;
  *l = *l * corr + sum;
  return corr;
}

void fx_attn_pack_k_scalar(const float *k, ptrdiff_t seq, size_t n, size_t d, size_t nr, float *dst) {
  for (size_t j0 = 0; j0 < n; j0 += nr, dst += nr * (d + 1)) {
    for (size_t c = 0; c < nr; c++) dst[c] = 0.0f;
    for (size_t f = 0; f < d; f++)
      for (size_t c = 0; c < nr; c++) dst[nr + f * nr + c] = j0 + c < n ? k[(ptrdiff_t)(j0 + c) * seq + (ptrdiff_t)f] : 0.0f;
  }
}

void fx_attn_pack_v_scalar(const float *v, ptrdiff_t seq, size_t n, size_t dv, size_t nr, float *dst) {
  for (size_t c0 = 0; c0 < dv; c0 += nr, dst += nr * (n + 1)) {
    for (size_t c = 0; c < nr; c++) dst[c] = 0.0f;
    for (size_t r = 0; r < n; r++)
      for (size_t c = 0; c < nr; c++) dst[nr * (r + 1) + c] = c0 + c < dv ? v[(ptrdiff_t)r * seq + (ptrdiff_t)(c0 + c)] : 0.0f;
  }
}
