/* Checks every QS8 depthwise variant this CPU runs (3x3 and 5x5 fast kernels, any-tap kernel,
 * the portable loop for depth multipliers > 1) against a naive depthwise convolution written
 * here: windows 1..7 square and not, strides, dilations, SAME/VALID padding, channel counts
 * around the panel widths, zero points at both ends, tiny/huge multipliers, every clamp, every
 * rounding and LiteRT's AWAY/UP channel split, int8 and uint8 (QU8) data. Prints "ALL PASS". */
#include <string.h>
#include "kernels/qs8-dwconv/qs8-dwconv.h"
#include "qs8_tester_util.h"

typedef struct {
  fx_qs8_conv_geom g;
  int mult, u8, zx, zw;
  const int8_t *x, *w; /* x [batch][h][w][cin], w [kh][kw][cout] (TFLite [1][kh][kw][cout]) */
  const int32_t *bias, *m, *sh;
  fx_qs8_out o;
} dwp;

static void naive(const dwp *p, int8_t *y) {
  const fx_qs8_conv_geom *g = &p->g;
  for (int b = 0; b < g->batch; b++)
    for (int oy = 0; oy < g->oh; oy++)
      for (int ox = 0; ox < g->ow; ox++)
        for (int c = 0; c < g->cout; c++) {
          uint32_t acc = (uint32_t)p->bias[c];
          for (int ky = 0; ky < g->kh; ky++)
            for (int kx = 0; kx < g->kw; kx++) {
              const int iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
              if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
              const size_t xi = (((size_t)b * g->h + iy) * g->w + ix) * g->cin + c / p->mult;
              const size_t wi = ((size_t)ky * g->kw + kx) * g->cout + c;
              const int xv = p->u8 ? ((const uint8_t *)p->x)[xi] : p->x[xi];
              const int wv = p->u8 ? ((const uint8_t *)p->w)[wi] : p->w[wi];
              acc += (uint32_t)((xv - p->zx) * (wv - p->zw));
            }
          y[(((size_t)b * g->oh + oy) * g->ow + ox) * g->cout + c] =
              fx_qs8_out_one((int32_t)acc, p->m[c], p->sh[c], fx_qs8_rounding_of(&p->o, (size_t)c), &p->o);
        }
}

static int run(const fx_qs8_dwconv_config *v, const dwp *p, int8_t *y) {
  const fx_qs8_conv_geom *g = &p->g;
  const int taps = g->kh * g->kw;
  void *packed = malloc(fx_qs8_dw_packed_bytes(g->cout, taps, v->ct));
  const size_t nx = (size_t)g->batch * g->h * g->w * g->cin;
  int8_t *x8 = malloc(nx), *zero = malloc((size_t)g->cin);
  int rc = p->u8 ? fx_qu8_pack_dw(g->cout, taps, v->ct, (const uint8_t *)p->w, p->zw, p->bias, p->zx, p->m, p->sh, packed)
                 : fx_qs8_pack_dw(g->cout, taps, v->ct, p->w, p->bias, p->zx, p->m, p->sh, packed);
  if (p->u8) fx_qu8_flip((const uint8_t *)p->x, x8, nx); else memcpy(x8, p->x, nx);
  memset(zero, p->u8 ? p->zx - 128 : p->zx, (size_t)g->cin);
  if (rc == 0) rc = fx_qs8_dwconv_run(v, g, p->mult, x8, zero, packed, y, &p->o, 0, (size_t)g->batch * g->oh);
  free(packed); free(x8); free(zero);
  return rc;
}

int main(int argc, char **argv) {
  const int cases = argc > 1 ? atoi(argv[1]) : 1500;
  const fx_qs8_dwconv_config *v;
  printf("variants:");
  for (int i = 0; (v = fx_qs8_dwconv_config_at(i)); i++) printf(" %s", v->name);
  printf("\n");
  int bad = 0, fast = 0;
  static const int ks[] = {1, 2, 3, 3, 3, 5, 5, 7, 9};
  for (int n = 0; n < cases; n++) {
    dwp p;
    memset(&p, 0, sizeof p);
    fx_qs8_conv_geom *g = &p.g;
    const int kh = ks[rnd_in(0, 8)], kw = rnd_in(0, 3) ? kh : ks[rnd_in(0, 8)];
    const int s = rnd_in(1, 2), d = rnd_in(0, 4) ? 1 : 2, same = rnd_in(0, 3) != 0;
    g->batch = rnd_in(1, 2); g->h = rnd_in(1, 11); g->w = rnd_in(1, 11);
    g->kh = kh; g->kw = kw; g->sh = s; g->sw = rnd_in(0, 4) ? s : 3 - s; g->dh = d; g->dw = d;
    const int eh = (kh - 1) * d + 1, ew = (kw - 1) * d + 1;
    if (same) {
      g->oh = (g->h + g->sh - 1) / g->sh; g->ow = (g->w + g->sw - 1) / g->sw;
      const int ph = (g->oh - 1) * g->sh + eh - g->h, pw = (g->ow - 1) * g->sw + ew - g->w;
      g->pt = ph > 0 ? ph / 2 : 0; g->pl = pw > 0 ? pw / 2 : 0;
    } else {
      if (eh > g->h || ew > g->w) { n--; continue; }
      g->oh = (g->h - eh) / g->sh + 1; g->ow = (g->w - ew) / g->sw + 1;
    }
    p.mult = rnd_in(0, 4) ? 1 : rnd_in(2, 3);
    g->cin = rnd_in(0, 3) ? rnd_in(1, 40) : rnd_in(41, 80);
    g->cout = g->cin * p.mult;
    fast += p.mult == 1 && (kh * kw == 9 || kh * kw == 25);
    p.u8 = rnd_in(0, 3) == 0;
    const size_t nx = (size_t)g->batch * g->h * g->w * g->cin, nw = (size_t)kh * kw * g->cout;
    int8_t *x = malloc(nx), *w = malloc(nw);
    int32_t *bias = malloc(4 * g->cout), *m = malloc(4 * g->cout), *sh = malloc(4 * g->cout);
    const int wide = rnd_in(0, 3) != 0;
    if (p.u8) {
      p.zx = rnd_zp(0, 255); p.zw = rnd_zp(0, 255);
      for (size_t i = 0; i < nx; i++) x[i] = (int8_t)rnd_in(0, 255);
      for (size_t i = 0; i < nw; i++) w[i] = (int8_t)(wide ? rnd_in(0, 255) : rnd_in(p.zw > 1 ? p.zw - 1 : 0, p.zw < 254 ? p.zw + 1 : 255));
    } else {
      p.zx = rnd_zp(-128, 127);
      rnd_i8(x, nx, -128, 127);
      if (wide) rnd_i8(w, nw, -128, 127); else rnd_i8(w, nw, -1, 1);
    }
    for (int c = 0; c < g->cout; c++) bias[c] = rnd_in(-20000, 20000);
    p.o = rnd_out(g->cout, 1);
    rnd_requant(g->cout, (wide ? 128.0 * 100 : 128.0) * sqrt((double)(kh * kw)), p.o.rounding, m, sh);
    if (p.u8) { p.o.zp = rnd_zp(0, 255) - 128; if (p.o.lo > p.o.zp) p.o.lo = p.o.zp; }
    p.x = x; p.w = w; p.bias = bias; p.m = m; p.sh = sh;
    const size_t ny = (size_t)g->batch * g->oh * g->ow * g->cout;
    int8_t *want = malloc(ny), *got = malloc(ny);
    naive(&p, want);
    for (int i = 0; (v = fx_qs8_dwconv_config_at(i)); i++) {
      memset(got, 0x55, ny);
      if (run(v, &p, got) != 0 || memcmp(got, want, ny) != 0) {
        bad++;
        size_t e = 0;
        while (e < ny && got[e] == want[e]) e++;
        fprintf(stderr, "FAIL %s: %dx%dx%d k%dx%d s%d,%d d%d p%d,%d mult %d u8 %d rnd %d tail %d@%d: diff @%zu got %d want %d\n",
                v->name, g->h, g->w, g->cin, kh, kw, g->sh, g->sw, d, g->pt, g->pl, p.mult, p.u8,
                p.o.rounding, p.o.tail_rounding, p.o.tail_from, e, got[e], want[e]);
      }
    }
    free(x); free(w); free(bias); free(m); free(sh); free(want); free(got);
  }
  printf("random depthwise layers: %d (%d on the 3x3/5x5 kernels), failures %d\n", cases, fast, bad);
  if (bad) { printf("FAILED\n"); return 1; }
  printf("ALL PASS (%d layers x every variant)\n", cases);
  return 0;
}
