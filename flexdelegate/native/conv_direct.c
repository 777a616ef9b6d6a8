/* Direct convolution as an implicit GEMM (IGEMM): no im2col copy and no scratch. For each
 * tile of MR output pixels the task builds, on its stack, the row pointers of every tap (into
 * the NHWC input, or at a shared zero row for taps in the padding), and the IGEMM microkernel
 * accumulates taps x cin against the conv's packed GEMM panels: the same weights blob serves
 * im2col GEMM and direct conv. The threading (rows x panels tasks) is conv.c's. */
#include "conv.h"
#include "igemm/igemm.h"

/* Read as the padding, never written; zero-initialised .bss costs no memory until touched, and
 * reading it maps the kernel's shared zero page. Caps the channels of a direct conv. */
#define FX_DIRECT_ZERO_FLOATS 16384
static float g_zero_row[FX_DIRECT_ZERO_FLOATS];

/* Row pointers built at once: 32 KB of stack, i.e. 4096 / (taps * MR) tiles per block (57
 * tiles of 8 pixels for a 3x3, 10 for a 7x7); a block's pointers serve every panel. */
#define FX_DIRECT_POINTERS 4096

int fx_conv_direct_geom_ok(const fx_conv_geom *g, int mr) {
  return g->kh >= 1 && g->kw >= 1 && g->cin >= 1 && g->cin <= FX_DIRECT_ZERO_FLOATS &&
         (long)g->kh * g->kw * mr <= FX_DIRECT_POINTERS;
}

/* Pointers of the output pixels [m0, m0 + rows), rounded up to whole tiles of mr (the rows
 * past `rows` read the zero row): tile t, tap (ky, kx), row i at ind[(t * taps + tap) * mr + i]. */
static void fill_pointers(const fx_conv_geom *g, const float *x, size_t m0, size_t rows, size_t mr,
                          const float **ind) {
  const size_t taps = (size_t)g->kh * (size_t)g->kw, padded = (rows + mr - 1) / mr * mr;
  int ox = (int)(m0 % (size_t)g->ow), oy = (int)(m0 / (size_t)g->ow % (size_t)g->oh);
  const float *xb = x + m0 / ((size_t)g->ow * g->oh) * (size_t)g->ih * g->iw * g->cin; /* its image */
  for (size_t r = 0; r < padded; r++) {
    const float **col = ind + r / mr * taps * mr + r % mr;
    if (r >= rows) {
      for (size_t t = 0; t < taps; t++) col[t * mr] = g_zero_row;
      continue;
    }
    const int iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
    for (int ky = 0; ky < g->kh; ky++) {
      const int iy = iy0 + ky * g->dil_h;
      for (int kx = 0; kx < g->kw; kx++, col += mr) {
        const int ix = ix0 + kx * g->dil_w;
        const int inside = iy >= 0 && iy < g->ih && ix >= 0 && ix < g->iw;
        *col = inside ? xb + ((size_t)iy * g->iw + (size_t)ix) * g->cin : g_zero_row;
      }
    }
    if (++ox == g->ow) { /* next output row, maybe the next image */
      ox = 0;
      if (++oy == g->oh) {
        oy = 0;
        xb += (size_t)g->ih * g->iw * g->cin;
      }
    }
  }
}

void fx_conv_direct_rows(const fx_igemm_config *uk, const fx_conv_geom *g, size_t n, const float *x,
                         size_t m0, size_t rows, const float *panels, size_t pan_first, size_t pan0,
                         size_t pan1, float *y, float lo, float hi) {
  const float *ind[FX_DIRECT_POINTERS];
  const size_t mr = (size_t)uk->mr, nr = (size_t)uk->nr, cin = (size_t)g->cin;
  const size_t taps = (size_t)g->kh * (size_t)g->kw, block_rows = FX_DIRECT_POINTERS / (taps * mr) * mr;
  const size_t panel_floats = nr * (taps * cin + 1);
  for (size_t b0 = 0; b0 < rows; b0 += block_rows) {
    const size_t block = rows - b0 < block_rows ? rows - b0 : block_rows;
    fill_pointers(g, x, m0 + b0, block, mr, ind);
    for (size_t pan = pan0; pan < pan1; pan++) { /* panel outer: its weights stay in cache */
      const float *w = panels + (pan - pan_first) * panel_floats;
      const size_t n0 = pan * nr, nc = n - n0 < nr ? n - n0 : nr;
      for (size_t r = 0; r < block; r += mr)
        uk->fn(block - r < mr ? block - r : mr, nc, cin, taps, ind + r * taps, w,
               y + (m0 + b0 + r) * n + n0, n, lo, hi);
    }
  }
}
