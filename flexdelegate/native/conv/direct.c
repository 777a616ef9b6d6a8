/* Direct convolution as an implicit GEMM (IGEMM): no im2col copy and no scratch. For each
 * tile of MR output pixels the task builds, on its stack, the row pointers of every tap (into
 * the NHWC input, or at a shared zero row for taps in the padding), and the IGEMM microkernel
 * accumulates taps x cin against the conv's packed GEMM panels: the same weights blob serves
 * im2col GEMM and direct conv. The threading (rows x panels tasks) is conv.c's. */
#include "conv.h"
#include "kernels/igemm/igemm.h"

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

/* Where output pixel (b, oy, ox) of the walk below is; advanced one pixel at a time. */
typedef struct { int ox, oy; const float *xb; } pixel;

static void next_pixel(const fx_conv_geom *g, pixel *p) {
  if (++p->ox < g->ow) return;
  p->ox = 0; /* next output row, maybe the next image */
  if (++p->oy == g->oh) {
    p->oy = 0;
    p->xb += (size_t)g->ih * g->iw * g->cin;
  }
}

/* A tile is "wide" when, without horizontal dilation, every pixel's kw taps of a tap row lie
 * inside the input row: then a tap row is one span of kw * cin floats (K's order is (ky, kx,
 * cin), so its weights are contiguous too) and the kernel runs kh taps of kw * cin channels
 * instead of kh * kw taps of cin. That is im2col's contiguity without its copy, and what keeps
 * cin = 3 stems from paying the per-tap pointer loads nine or 49 times over. */
static int tile_is_wide(const fx_conv_geom *g, pixel p, size_t rows) {
  if (g->dil_w != 1 || g->kw == 1 || (size_t)g->kw * g->cin > FX_DIRECT_ZERO_FLOATS) return 0;
  for (size_t r = 0; r < rows; r++, next_pixel(g, &p)) {
    const int ix0 = p.ox * g->stride_w - g->pad_left;
    if (ix0 < 0 || ix0 + g->kw > g->iw) return 0;
  }
  return 1;
}

/* Pointers of one tile of output pixels (`rows` <= mr of them, from p; the rest read the zero
 * row): tap t, row i at ind[t * mr + i], taps being (ky, kx) or, when wide, whole tap rows ky. */
static void fill_tile(const fx_conv_geom *g, pixel *p, size_t rows, size_t mr, int wide, const float **ind) {
  const int kw = wide ? 1 : g->kw, taps = g->kh * kw;
  for (size_t r = 0; r < mr; r++) {
    const float **col = ind + r;
    if (r >= rows) {
      for (int t = 0; t < taps; t++) col[(size_t)t * mr] = g_zero_row;
      continue;
    }
    const int iy0 = p->oy * g->stride_h - g->pad_top, ix0 = p->ox * g->stride_w - g->pad_left;
    for (int ky = 0; ky < g->kh; ky++) {
      const int iy = iy0 + ky * g->dil_h;
      for (int kx = 0; kx < kw; kx++, col += mr) {
        const int ix = ix0 + kx * g->dil_w;
        const int inside = iy >= 0 && iy < g->ih && ix >= 0 && ix < g->iw;
        *col = inside ? p->xb + ((size_t)iy * g->iw + (size_t)ix) * g->cin : g_zero_row;
      }
    }
    next_pixel(g, p);
  }
}

void fx_conv_direct_rows(const fx_igemm_config *uk, const fx_conv_geom *g, size_t n, const float *x,
                         size_t m0, size_t rows, const float *panels, size_t pan_first, size_t pan0,
                         size_t pan1, float *y, const float *res, const fx_gemm_out *out) {
  const float *ind[FX_DIRECT_POINTERS];
  unsigned char wide[FX_DIRECT_POINTERS];
  const size_t mr = (size_t)uk->mr, nr = (size_t)uk->nr, cin = (size_t)g->cin, kw = (size_t)g->kw;
  const size_t taps = (size_t)g->kh * kw, block_rows = FX_DIRECT_POINTERS / (taps * mr) * mr;
  const size_t panel_floats = nr * (taps * cin + 1);
  pixel p = {(int)(m0 % (size_t)g->ow), (int)(m0 / (size_t)g->ow % (size_t)g->oh),
             x + m0 / ((size_t)g->ow * g->oh) * (size_t)g->ih * g->iw * g->cin};
  for (size_t b0 = 0; b0 < rows; b0 += block_rows) {
    const size_t block = rows - b0 < block_rows ? rows - b0 : block_rows;
    for (size_t r = 0; r < block; r += mr) { /* tile r / mr's pointers at ind + r * taps */
      const size_t tile = block - r < mr ? block - r : mr;
      wide[r / mr] = (unsigned char)tile_is_wide(g, p, tile);
      fill_tile(g, &p, tile, mr, wide[r / mr], ind + r * taps);
    }
    for (size_t pan = pan0; pan < pan1; pan++) { /* panel outer: its weights stay in cache */
      const float *w = panels + (pan - pan_first) * panel_floats;
      const size_t n0 = pan * nr, nc = n - n0 < nr ? n - n0 : nr;
      for (size_t r = 0; r < block; r += mr) {
        const size_t ks = wide[r / mr] ? (size_t)g->kh : taps, kc = wide[r / mr] ? kw * cin : cin;
        const size_t at = (m0 + b0 + r) * n + n0;
        uk->fn(block - r < mr ? block - r : mr, nc, kc, ks, ind + r * taps, w, y + at, n, res ? res + at : NULL, out);
      }
    }
  }
}
