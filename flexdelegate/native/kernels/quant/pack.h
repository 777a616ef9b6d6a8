/* Packing of TFLite's integer weights into the blobs the kernels read. Deterministic: the bytes
 * depend only on the arguments, so the delegate can content-address them in its cache file like
 * the FP32 panels, and panels [p0, p1) are the one byte range [p0, p1) * panel_bytes.
 *
 * GEMM / IGEMM panel of NR output channels (a kernel's NR and KR, qs8-gemm.h):
 *   int32 bias[NR]      bias[c] - (zp_in + a_offset) * sum_k w[c][k]   (+ the QU8 term below)
 *   int8  w[ks][kg][NR][KR]   tap t, k-group g (kg = ceil(kc / KR)), channel j, byte i =
 *                             w[n0 + j][t][g*KR + i]; zero past kc and past n, and in the
 *                             k-groups that pad ks * kg to a multiple of kg_align (AMX: whole
 *                             64-byte tile rows)
 *   int32 multiplier[NR], int32 shift[NR]   (requant.h; zero past n)
 * A K of ks taps x kc channels pads every tap to whole k-groups, so the IGEMM can read tap t's
 * run of a row pointer on its own; FULLY_CONNECTED and 1x1 convs are ks = 1.
 *
 * Hybrid GEMM panel (float activations quantized on the fly, dynamic.h): the same with no bias
 * and input zero point 0 (bias[c] = -a_offset * sum_k w[c][k]: 0 on AMX, -128 * sum on AVX-512
 * VNNI, the variants that run them), and in the requantization slots int32 wsum[NR] = sum_k w[c][k] then NR zeros: the
 * float output stage subtracts zp_row * wsum[c] of an asymmetrically quantized row. The float
 * bias and weight scales stay beside the panels (the layer's). 
 *
 * Depthwise panel of CT channels (qs8-dwconv.h):
 *   int32 bias[CT]      bias[c] - zp_in * sum_t w[t][c]
 *   int16 w[T][CT]      tap t = ky*kw + kx; int16 so that uint8 weights minus their zero point
 *                       ([-255, 255]) fit the same kernels (int8 * int16 products fit int16)
 *   int32 multiplier[CT], int32 shift[CT]
 *
 * QU8 (uint8 activations and weights, per-tensor zero points): the kernels stay int8. Bytes
 * are moved to int8 by x ^ 0x80 (= x - 128); activations are xor-ed on the way into and out of
 * each layer (fx_qu8_flip; ir/qlayer.c), zero points and clamps shift by -128. The depthwise weights become w - zw in
 * int16. The GEMM weights become w8 = w - 128 with zero point zw8 = zw - 128, and
 *   sum_k (a8 - zx8)(w8 - zw8) = sum a8*w8 - zx8 sum w8 + K zx8 zw8 - zw8 sum_k a8,
 * so the packed bias takes the constant terms and the kernels add -zw8 * (row sum of a8) per
 * output row (row_corr, fx_qs8_rowsums_*), which is zero work when zw = 128. */
#ifndef FLEX_QUANT_PACK_H
#define FLEX_QUANT_PACK_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int n;        /* output channels */
  int ks, kc;   /* taps and channels per tap (K = ks * kc) */
  int nr, kr;   /* the kernel's panel width and k-group */
  int a_offset; /* added to every activation by the kernel: 128 for VNNI's unsigned trick */
  int kg_align; /* the panel's k-groups padded to a multiple of this (0 or 1: none) */
} fx_qs8_gemm_geom;

size_t fx_qs8_gemm_panel_bytes(const fx_qs8_gemm_geom *g);
size_t fx_qs8_gemm_packed_bytes(const fx_qs8_gemm_geom *g);

/* w: [n][ks][kc] int8 (TFLite conv OHWI, FC [n][k]); bias: n int32 or NULL; m/shift: n each.
 * Returns 0, or -1 for bad geometry, m < 0 or a shift outside [-31, 30]. */
int fx_qs8_pack_gemm(const fx_qs8_gemm_geom *g, const int8_t *w, const int32_t *bias,
                     int32_t zp_in, const int32_t *m, const int32_t *shift, void *dst);
/* int8 weights with a zero point zw, weight (c, k) at w[c * c_stride + k * k_stride] (a run-time
 * BATCH_MATMUL right-hand side: [n][K] with adj_y, else [K][n]), no bias; the kernels then take
 * row_corr = -zw * rowsum (row_factor -zw): sum_k (a - zp_in)(w - zw) in all. */
int fx_qs8_pack_gemm_zw(const fx_qs8_gemm_geom *g, const int8_t *w, size_t c_stride, size_t k_stride, int32_t zw,
                        int32_t zp_in, const int32_t *m, const int32_t *shift, void *dst);
/* Hybrid panels of int8 weights w ([n][ks][kc]). Returns 0, or -1 for bad geometry. */
int fx_qs8_pack_hybrid(const fx_qs8_gemm_geom *g, const int8_t *w, void *dst);
/* The same for uint8 weights with zero point zw and a uint8 input zero point zx; the kernels
 * then take row_corr = -(zw - 128) * rowsum (fx_qu8_row_factor). */
int fx_qu8_pack_gemm(const fx_qs8_gemm_geom *g, const uint8_t *w, int32_t zw, const int32_t *bias,
                     int32_t zx, const int32_t *m, const int32_t *shift, void *dst);
static inline int32_t fx_qu8_row_factor(int32_t zw) { return -(zw - 128); }

/* Depthwise: ct channels per panel, taps = kh*kw, filter [1][kh][kw][channels]. */
size_t fx_qs8_dw_panel_bytes(int taps, int ct);
size_t fx_qs8_dw_packed_bytes(int channels, int taps, int ct);
int fx_qs8_pack_dw(int channels, int taps, int ct, const int8_t *w, const int32_t *bias,
                   int32_t zp_in, const int32_t *m, const int32_t *shift, void *dst);
int fx_qu8_pack_dw(int channels, int taps, int ct, const uint8_t *w, int32_t zw,
                   const int32_t *bias, int32_t zx, const int32_t *m, const int32_t *shift,
                   void *dst);

/* uint8 <-> the int8 the kernels see (x ^ 0x80), n bytes, in place allowed. */
void fx_qu8_flip(const uint8_t *x, int8_t *y, size_t n);

/* Row sums of int8 activations: GEMM rows (mr rows of kc bytes, a_stride apart), and IGEMM
 * rows (ks groups of mr_max pointers, kc bytes each, as the IGEMM kernels take them). */
void fx_qs8_rowsums_gemm(size_t mr, size_t kc, const int8_t *a, size_t a_stride, int32_t factor,
                         int32_t *out);
void fx_qs8_rowsums_igemm(size_t mr, size_t kc, size_t ks, const int8_t *const *a, size_t mr_max,
                          int32_t factor, int32_t *out);
#endif
