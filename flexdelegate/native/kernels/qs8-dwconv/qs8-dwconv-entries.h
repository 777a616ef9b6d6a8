/* The panel walk and the three entry points of a SIMD depthwise variant, one definition for all
 * of them. The includer defines DW_TARGET_ISAS, DW (that target, always_inline), DW_CT (channels
 * a panel), DW_MAX_PAIRS (the unrolled kernels' window limit, in tap pairs), DW_ISA (the name
 * suffix) and dw_tile(c0, nc, full, pixels, in, taps, w, out, out_stride, o, single): panel w
 * (channels c0 .. c0 + nc; full: nc == DW_CT) over every pixel, `single` a constant where full. */

/* Every panel: the full ones compiled for their rounding, the last partial one as it is. */
DW void dw_panels(FX_QS8_DW_ARGS) {
  const uint8_t *wp = (const uint8_t *)w;
  const size_t pb = DW_CT * (4 + 2 * taps + 8);
  const int single = o->rounding == FLEX_RQ_SINGLE;
  size_t c0 = 0;
  for (; c0 + DW_CT <= channels; c0 += DW_CT, wp += pb) {
    if (single) dw_tile(c0, DW_CT, 1, pixels, in, taps, wp, out, out_stride, o, 1);
    else dw_tile(c0, DW_CT, 1, pixels, in, taps, wp, out, out_stride, o, 0);
  }
  if (c0 < channels) dw_tile(c0, channels - c0, 0, pixels, in, taps, wp, out, out_stride, o, single);
}

#define DW_FN2(name, isa) name##isa
#define DW_FN(name, isa) DW_FN2(name, isa)
#define DW_ENTRY __attribute__((target(DW_TARGET_ISAS)))

/* The 9- and 25-tap kernels: the tap count a constant, the tap loops unrolled. */
DW_ENTRY void DW_FN(fx_qs8_dwconv_9__, DW_ISA)(FX_QS8_DW_ARGS) {
  (void)taps;
  dw_panels(channels, pixels, in, 9, w, out, out_stride, o);
}
DW_ENTRY void DW_FN(fx_qs8_dwconv_25__, DW_ISA)(FX_QS8_DW_ARGS) {
  (void)taps;
  dw_panels(channels, pixels, in, 25, w, out, out_stride, o);
}
DW_ENTRY void DW_FN(fx_qs8_dwconv_any__, DW_ISA)(FX_QS8_DW_ARGS) {
  if (taps > 2 * DW_MAX_PAIRS) {
    fx_qs8_dwconv_portable(DW_CT, channels, pixels, in, taps, w, out, out_stride, o);
    return;
  }
  dw_panels(channels, pixels, in, taps, w, out, out_stride, o);
}
