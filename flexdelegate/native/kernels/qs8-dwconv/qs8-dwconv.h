/* QS8 depthwise convolution (DEPTHWISE_CONV_2D, int8, per-channel requantization).
 *
 * Microkernels (depth multiplier 1): for each of `pixels` output pixels, `in` holds `taps`
 * pointers (tap t = ky*kw + kx) to the input pixel the tap reads, channel 0 (a tap in the
 * padding points at a row of input zero-point bytes), and every channel c < channels is
 *   out[px*out_stride + c] = out(bias'[c] + sum_t in[px*taps + t][c] * w[t][c])
 * over the packed panels w (quant/pack.h, CT channels each). Channel tiles outer, pixels inner:
 * a tile's weights and requantization constants are set up once per call. Inputs are read
 * exactly (channels bytes per pointer).
 *
 * fx_qs8_dwconv_run drives a whole layer (any kh, kw, strides, dilations, padding): multiplier
 * 1 through a variant's microkernels (its 9- and 25-tap ones for 3x3 / 5x5), other multipliers
 * through the portable loop, which reads the same panels and is the scalar variant. */
#ifndef FLEX_QS8_DWCONV_H
#define FLEX_QS8_DWCONV_H
#include <stddef.h>
#include <stdint.h>
#include "runtime/cpu.h"
#include "../qs8-gemm/qs8-run.h"

typedef void (*fx_qs8_dwconv_fn)(size_t channels, size_t pixels, const int8_t *const *in,
                                 size_t taps, const void *w, int8_t *out, size_t out_stride,
                                 const fx_qs8_out *o);

typedef struct fx_qs8_dwconv_config {
  const char *name; /* "qs8-dwconv-<CT>c-<isa>" */
  int ct;
  fx_qs8_dwconv_fn taps9, taps25, any;
} fx_qs8_dwconv_config;

/* The variants of qs8-dwconv.inc (config.c). */
extern fx_isa_menu fx_qs8_dwconv_menu;
const fx_qs8_dwconv_config *fx_qs8_dwconv_config_get(void);
const fx_qs8_dwconv_config *fx_qs8_dwconv_config_at(int i);

/* Output rows [r0, r1) of batch*oh. cg->cout = cg->cin * mult; packed: fx_qs8_pack_dw with the
 * variant's CT; zero_row: cin bytes of the input zero point. 0, or -1 if the pointer buffer of
 * a huge window cannot be allocated. */
int fx_qs8_dwconv_run(const fx_qs8_dwconv_config *v, const fx_qs8_conv_geom *cg, int mult,
                      const int8_t *x, const int8_t *zero_row, const void *packed, int8_t *y,
                      const fx_qs8_out *o, size_t r0, size_t r1);

/* The portable loop over rows [r0, r1), any multiplier, panels of ct channels. */
void fx_qs8_dwconv_generic(int ct, const fx_qs8_conv_geom *cg, int mult, const int8_t *x,
                           int32_t zp_in, const void *packed, int8_t *y, const fx_qs8_out *o,
                           size_t r0, size_t r1);

/* The portable microkernel over panels of ct channels (the scalar variant; SIMD variants fall
 * back to it for windows their kernels do not hold). */
#define FX_QS8_DW_ARGS0 size_t channels, size_t pixels, const int8_t *const *in, size_t taps, \
  const void *w, int8_t *out, size_t out_stride, const fx_qs8_out *o
void fx_qs8_dwconv_portable(size_t ct, FX_QS8_DW_ARGS0);

#define FX_QS8_DW_ARGS                                                                      \
  size_t channels, size_t pixels, const int8_t *const *in, size_t taps, const void *w,       \
      int8_t *out, size_t out_stride, const fx_qs8_out *o
#define FX_QS8_DWCONV(isa, CT, suffix)                  \
  void fx_qs8_dwconv_9__##suffix(FX_QS8_DW_ARGS);       \
  void fx_qs8_dwconv_25__##suffix(FX_QS8_DW_ARGS);      \
  void fx_qs8_dwconv_any__##suffix(FX_QS8_DW_ARGS);
#include "qs8-dwconv.inc"
#undef FX_QS8_DWCONV
#endif
