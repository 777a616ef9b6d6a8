/* im2col GEMM: a convolution as GEMM over rows of im2col, built one tile at a time in the
 * calling thread's scratch (never the whole im2col matrix); 1x1 stride-1 convolutions and FC
 * read the input itself as the A matrix. The threading (rows x panels tasks) is conv.c's. */
#include <string.h>
#include "conv.h"
#include "kernels/gemm/gemm.h"

/* Short copies as plain loops: im2col spans are often a few floats (a 3-channel stem conv
 * copies 9 per tap row), where a memcpy call costs more than the copy (it was 5% of
 * MobileNetV2). GCC would turn the loops back into those calls: the attribute keeps them. */
#if defined(__GNUC__) && !defined(__clang__)
#define FX_NO_MEMCPY_CALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define FX_NO_MEMCPY_CALLS
#endif

static inline void copy_floats(float *restrict d, const float *restrict s, size_t n) {
  if (n >= 64) { /* long spans (wide 3x3 convs): libc's wide-vector copy wins */
    memcpy(d, s, n * sizeof(float));
    return;
  }
  size_t i = 0;
  for (; i + 4 <= n; i += 4) memcpy(d + i, s + i, 4 * sizeof(float)); /* one 16-byte move */
  for (; i < n; i++) d[i] = s[i];
}

static inline void zero_floats(float *d, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = 0.0f;
}

/* im2col rows [m0, m0+rows) of the output: row m holds the (ky, kx, cin) patch of pixel m.
 * Works one output row's run of pixels at a time, tap row by tap row; without horizontal
 * dilation the kx taps of a tap row are adjacent in the input, so for a pixel whose window
 * is inside the image a tap row is one contiguous span of kw * cin floats. */
FX_NO_MEMCPY_CALLS
static void im2col(const fx_conv_geom *g, const float *x, size_t m0, size_t rows, float *dst) {
  const int cin = g->cin, kw = g->kw, sw = g->stride_w;
  const size_t row_len = (size_t)g->kh * kw * cin, span = (size_t)kw * cin;
  int ox = (int)(m0 % (size_t)g->ow), oy = (int)(m0 / (size_t)g->ow % (size_t)g->oh);
  int b = (int)(m0 / ((size_t)g->ow * g->oh));
  for (size_t r = 0; r < rows;) {
    const int run = (int)(rows - r < (size_t)(g->ow - ox) ? rows - r : (size_t)(g->ow - ox));
    const float *xb = x + (size_t)b * g->ih * g->iw * cin;
    for (int ky = 0; ky < g->kh; ky++) {
      const int iy = oy * g->stride_h - g->pad_top + ky * g->dil_h;
      float *d = dst + r * row_len + (size_t)ky * span;
      if (iy < 0 || iy >= g->ih) {
        for (int p = 0; p < run; p++, d += row_len) zero_floats(d, span);
        continue;
      }
      const float *xr = xb + (size_t)iy * g->iw * cin;
      for (int p = 0; p < run; p++, d += row_len) {
        const int ix0 = (ox + p) * sw - g->pad_left;
        if (g->dil_w == 1 && ix0 >= 0 && ix0 + kw <= g->iw) {
          copy_floats(d, xr + (size_t)ix0 * cin, span);
          continue;
        }
        for (int kx = 0; kx < kw; kx++) {
          const int ix = ix0 + kx * g->dil_w;
          if (ix < 0 || ix >= g->iw) zero_floats(d + (size_t)kx * cin, (size_t)cin);
          else copy_floats(d + (size_t)kx * cin, xr + (size_t)ix * cin, (size_t)cin);
        }
      }
    }
    r += (size_t)run;
    ox += run;
    if (ox == g->ow) { /* next output row */
      ox = 0;
      if (++oy == g->oh) { oy = 0; b++; }
    }
  }
}

/* Prefetches run over cache lines (64 bytes on the CPUs this runs on; a longer line only
 * makes some of them redundant). */
#define CACHE_LINE_FLOATS 16

void fx_conv_gemm_rows(const fx_gemm_config *uk, const fx_conv_geom *g, size_t n, size_t k, const float *x,
                       size_t m0, size_t rows, float *buf, const float *panels, size_t pan_first, size_t pan0,
                       size_t pan1, size_t block, float *y, const float *res, const fx_gemm_out *out) {
  const size_t mr = (size_t)uk->mr, nr = (size_t)uk->nr;
  const float *a = x + m0 * k;
  if (buf) {
    im2col(g, x, m0, rows, buf);
    a = buf;
  }
  /* Block 0: panel by panel, every row tile against one panel (L1-resident) before the next.
   * Otherwise each row tile runs across a block of panels (kept in L2 over the row tiles), and
   * the next block is prefetched a little before each call, spread over this block's calls. */
  const int prefetch = block > 0;
  if (!block) block = 1;
  if (!rows) return;
  const size_t panel_floats = nr * (k + 1), tiles = (rows + mr - 1) / mr;
  for (size_t b0 = pan0; b0 < pan1; b0 += block) {
    const size_t b1 = pan1 - b0 > block ? b0 + block : pan1, b2 = pan1 - b1 > block ? b1 + block : pan1;
    const float *next = panels + (b1 - pan_first) * panel_floats;
    const size_t lines = prefetch ? (b2 - b1) * panel_floats / CACHE_LINE_FLOATS : 0;
    const size_t per_call = lines / (tiles * (b1 - b0)) + 1;
    size_t line = 0;
    for (size_t r = 0; r < rows; r += mr) {
      for (size_t pan = b0; pan < b1; pan++) {
        const float *w = panels + (pan - pan_first) * panel_floats;
        const size_t n0 = pan * nr, nc = n - n0 < nr ? n - n0 : nr, at = (m0 + r) * n + n0;
        for (const size_t end = line + per_call; line < end && line < lines; line++)
          __builtin_prefetch(next + line * CACHE_LINE_FLOATS, 0, 3);
        uk->fn(rows - r < mr ? rows - r : mr, nc, k, a + r * k, k, w, y + at, n, res ? res + at : NULL, out);
      }
    }
  }
}
