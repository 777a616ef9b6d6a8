/* Weight packing for the integer kernels (layouts in pack.h). Sums and bias terms use
 * wrapping 32-bit arithmetic: TFLite's int32 accumulators wrap the same way, so the packed
 * decomposition equals its accumulator modulo 2^32 whatever the magnitudes. */
#include <string.h>
#include "pack.h"

static int geom_ok(const fx_qs8_gemm_geom *g) {
  return g && g->n > 0 && g->ks > 0 && g->kc > 0 && g->nr > 0 && g->kr > 0;
}

static size_t kgroups(const fx_qs8_gemm_geom *g) { return ((size_t)g->kc + (size_t)g->kr - 1) / (size_t)g->kr; }

/* A panel's k-groups, all taps, padded to whole multiples of kg_align. */
static size_t panel_kgroups(const fx_qs8_gemm_geom *g) {
  const size_t align = g->kg_align > 1 ? (size_t)g->kg_align : 1;
  return ((size_t)g->ks * kgroups(g) + align - 1) / align * align;
}

size_t fx_qs8_gemm_panel_bytes(const fx_qs8_gemm_geom *g) {
  const size_t nr = (size_t)g->nr;
  return nr * 4 + panel_kgroups(g) * nr * (size_t)g->kr + nr * 8;
}

size_t fx_qs8_gemm_packed_bytes(const fx_qs8_gemm_geom *g) {
  if (!geom_ok(g)) return 0;
  return ((size_t)g->n + (size_t)g->nr - 1) / (size_t)g->nr * fx_qs8_gemm_panel_bytes(g);
}

static int requant_ok(int n, const int32_t *m, const int32_t *shift) {
  for (int c = 0; c < n; c++)
    if (m[c] < 0 || shift[c] < -31 || shift[c] > 30) return 0;
  return 1;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Where the int8 weights come from: int8 as they are, or uint8 flipped to int8; weight (c, k)
 * at w[c * cs + k * ks] (cs = K, ks = 1: the row-major [n][K] of a layer). */
typedef struct {
  const void *w;
  int flip;          /* uint8 weights: w ^ 0x80 */
  size_t cs, ks;
} wsrc;

static inline int8_t wget(const wsrc *s, size_t c, size_t k) {
  const size_t i = c * s->cs + k * s->ks;
  return s->flip ? (int8_t)(((const uint8_t *)s->w)[i] ^ 0x80) : ((const int8_t *)s->w)[i];
}

static uint32_t wsum(const wsrc *s, size_t c, size_t K) {
  uint32_t sum = 0;
  for (size_t k = 0; k < K; k++) sum += (uint32_t)(int32_t)wget(s, c, k);
  return sum;
}

/* zp8 / zw8: the int8-domain input and weight zero points (zw8 = 0 for int8 layer weights); m
 * and shift NULL: a hybrid panel (the weight sums in the requantization slots). */
static void pack_gemm_body(const fx_qs8_gemm_geom *g, const wsrc *s, const int32_t *bias,
                           int32_t zp8, int32_t zw8, const int32_t *m, const int32_t *shift,
                           uint8_t *dst) {
  const size_t nr = (size_t)g->nr, kr = (size_t)g->kr, kc = (size_t)g->kc, ks = (size_t)g->ks;
  const size_t kg = kgroups(g), K = ks * kc, pb = fx_qs8_gemm_panel_bytes(g);
  for (size_t n0 = 0; n0 < (size_t)g->n; n0 += nr, dst += pb) {
    memset(dst, 0, pb);
    const size_t cols = (size_t)g->n - n0 < nr ? (size_t)g->n - n0 : nr;
    int8_t *wp = (int8_t *)(dst + nr * 4);
    uint8_t *rq = dst + nr * 4 + panel_kgroups(g) * nr * kr;
    for (size_t j = 0; j < cols; j++) {
      const size_t c = n0 + j;
      const uint32_t b = bias ? (uint32_t)bias[c] : 0u, sum = wsum(s, c, K);
      put32(dst + 4 * j, b - (uint32_t)(zp8 + g->a_offset) * sum + (uint32_t)K * (uint32_t)zp8 * (uint32_t)zw8);
      put32(rq + 4 * j, m ? (uint32_t)m[c] : sum); /* hybrid (m NULL): the weight sum */
      put32(rq + 4 * (nr + j), shift ? (uint32_t)shift[c] : 0u);
      for (size_t t = 0; t < ks; t++)
        for (size_t k = 0; k < kc; k++)
          wp[((t * kg + k / kr) * nr + j) * kr + k % kr] = wget(s, c, t * kc + k);
    }
  }
}

static int pack_gemm(const fx_qs8_gemm_geom *g, const wsrc *s, const int32_t *bias, int32_t zp8,
                     int32_t zw8, const int32_t *m, const int32_t *shift, void *dst) {
  if (!geom_ok(g) || !s->w || !m || !shift || !dst || !requant_ok(g->n, m, shift)) return -1;
  pack_gemm_body(g, s, bias, zp8, zw8, m, shift, (uint8_t *)dst);
  return 0;
}

static size_t depth(const fx_qs8_gemm_geom *g) { return g ? (size_t)g->ks * (size_t)g->kc : 0; }

int fx_qs8_pack_gemm(const fx_qs8_gemm_geom *g, const int8_t *w, const int32_t *bias,
                     int32_t zp_in, const int32_t *m, const int32_t *shift, void *dst) {
  const wsrc s = {w, 0, depth(g), 1};
  return pack_gemm(g, &s, bias, zp_in, 0, m, shift, dst);
}

int fx_qs8_pack_gemm_zw(const fx_qs8_gemm_geom *g, const int8_t *w, size_t c_stride, size_t k_stride, int32_t zw,
                        int32_t zp_in, const int32_t *m, const int32_t *shift, void *dst) {
  const wsrc s = {w, 0, c_stride, k_stride};
  return pack_gemm(g, &s, NULL, zp_in, zw, m, shift, dst);
}

int fx_qs8_pack_hybrid(const fx_qs8_gemm_geom *g, const int8_t *w, void *dst) {
  const wsrc s = {w, 0, depth(g), 1};
  if (!geom_ok(g) || !w || !dst) return -1;
  pack_gemm_body(g, &s, NULL, 0, 0, NULL, NULL, (uint8_t *)dst);
  return 0;
}

int fx_qu8_pack_gemm(const fx_qs8_gemm_geom *g, const uint8_t *w, int32_t zw, const int32_t *bias,
                     int32_t zx, const int32_t *m, const int32_t *shift, void *dst) {
  const wsrc s = {w, 1, depth(g), 1};
  return pack_gemm(g, &s, bias, zx - 128, zw - 128, m, shift, dst);
}

size_t fx_qs8_dw_panel_bytes(int taps, int ct) { return (size_t)ct * (4 + 2 * (size_t)taps + 8); }

size_t fx_qs8_dw_packed_bytes(int channels, int taps, int ct) {
  if (channels <= 0 || taps <= 0 || ct <= 0) return 0;
  return ((size_t)channels + (size_t)ct - 1) / (size_t)ct * fx_qs8_dw_panel_bytes(taps, ct);
}

/* w16(c, t) = the int16 weight of channel c at tap t. */
static int pack_dw(int channels, int taps, int ct, const void *w, int is_u8, int32_t zw,
                   const int32_t *bias, int32_t zp8, const int32_t *m, const int32_t *shift,
                   void *dstv) {
  if (channels <= 0 || taps <= 0 || ct <= 0 || !w || !m || !shift || !dstv ||
      !requant_ok(channels, m, shift))
    return -1;
  uint8_t *dst = (uint8_t *)dstv;
  const size_t C = (size_t)channels, T = (size_t)taps, CT = (size_t)ct;
  const size_t pb = fx_qs8_dw_panel_bytes(taps, ct);
  for (size_t c0 = 0; c0 < C; c0 += CT, dst += pb) {
    memset(dst, 0, pb);
    const size_t cols = C - c0 < CT ? C - c0 : CT;
    uint8_t *rq = dst + CT * 4 + T * CT * 2;
    for (size_t j = 0; j < cols; j++) {
      const size_t c = c0 + j;
      uint32_t sum = 0;
      for (size_t t = 0; t < T; t++) {
        const int16_t v = is_u8 ? (int16_t)(((const uint8_t *)w)[t * C + c] - zw)
                                : (int16_t)((const int8_t *)w)[t * C + c];
        memcpy(dst + CT * 4 + (t * CT + j) * 2, &v, 2);
        sum += (uint32_t)(int32_t)v;
      }
      put32(dst + 4 * j, (bias ? (uint32_t)bias[c] : 0u) - (uint32_t)zp8 * sum);
      put32(rq + 4 * j, (uint32_t)m[c]);
      put32(rq + 4 * (CT + j), (uint32_t)shift[c]);
    }
  }
  return 0;
}

int fx_qs8_pack_dw(int channels, int taps, int ct, const int8_t *w, const int32_t *bias,
                   int32_t zp_in, const int32_t *m, const int32_t *shift, void *dst) {
  return pack_dw(channels, taps, ct, w, 0, 0, bias, zp_in, m, shift, dst);
}

int fx_qu8_pack_dw(int channels, int taps, int ct, const uint8_t *w, int32_t zw,
                   const int32_t *bias, int32_t zx, const int32_t *m, const int32_t *shift,
                   void *dst) {
  return pack_dw(channels, taps, ct, w, 1, zw, bias, zx - 128, m, shift, dst);
}

void fx_qu8_flip(const uint8_t *x, int8_t *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = (int8_t)(x[i] ^ 0x80);
}

void fx_qs8_rowsums_gemm(size_t mr, size_t kc, const int8_t *a, size_t a_stride, int32_t factor,
                         int32_t *out) {
  for (size_t i = 0; i < mr; i++) {
    uint32_t s = 0;
    for (size_t k = 0; k < kc; k++) s += (uint32_t)(int32_t)a[i * a_stride + k];
    out[i] = (int32_t)(s * (uint32_t)factor);
  }
}

void fx_qs8_rowsums_igemm(size_t mr, size_t kc, size_t ks, const int8_t *const *a, size_t mr_max,
                          int32_t factor, int32_t *out) {
  for (size_t i = 0; i < mr; i++) {
    uint32_t s = 0;
    for (size_t t = 0; t < ks; t++)
      for (size_t k = 0; k < kc; k++) s += (uint32_t)(int32_t)a[t * mr_max + i][k];
    out[i] = (int32_t)(s * (uint32_t)factor);
  }
}
