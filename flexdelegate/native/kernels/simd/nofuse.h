/* FX_NOFUSE(v): an empty asm that makes the compiler forget how v was computed, so that
 * -ffp-contract (GCC's default outside ISO C mode) cannot fuse `v = a*b; v + c` into one FMA.
 * Used where a kernel reproduces a stock graph's separate roundings (LayerNorm's x*g + t is 0 for
 * a constant row only with two roundings). Works on scalars and on vector registers. */
#ifndef FLEX_NOFUSE_H
#define FLEX_NOFUSE_H
#if defined(__x86_64__) || defined(__i386__)
#define FX_NOFUSE(v) __asm__("" : "+x"(v))
#elif defined(__aarch64__)
#define FX_NOFUSE(v) __asm__("" : "+w"(v))
#else
#define FX_NOFUSE(v) __asm__("" : "+g"(v))
#endif
#endif
