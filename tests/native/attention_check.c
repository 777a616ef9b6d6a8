/* Checks every fused-attention variant this CPU runs (kernels/attention), built and run by
 * test_kernel_attention.py (natively, and for AArch64 under qemu with `quick`):
 *
 *   cc -std=gnu11 -O2 -pthread -I flexdelegate/native tests/native/attention_check.c flexdelegate/native/cpu.c \
 *      flexdelegate/native/threadpool.c flexdelegate/native/gemm/config.c flexdelegate/native/gemm/f32-gemm-*.c \
 *      flexdelegate/native/kernels/attention/\*.c -lm && ./a.out [quick]
 *
 * Per case (sequence lengths 1..1024, D 32/64/80/128, 1..12 heads, causal or not, SELECT and ADD
 * masks of every broadcast shape, [B,S,H,D] / [B,H,S,D] / padded layouts, K/V shared by all heads,
 * cross-attention Sq != Sk, causal offsets): the scalar reference variant against float64, every
 * other variant against float64 and the scalar variant (errors relative to the largest |v| of the
 * head, which bounds |o|), on 1 thread and on pools of 2 and 3 threads (bit for bit equal: a row's
 * arithmetic does not depend on the split), canaries in every stride gap of O. Then the special
 * rows: fully masked (uniform with a finite fill, NaN with -inf) and causal rows with no visible
 * key. Prints the worst error per variant and "ALL PASS", or exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/attention/attention.h"
#include "runtime/pool.h"

#define TOL_F64 2e-6 /* any variant vs float64, relative to max |v| */
#define TOL_REF 2e-6 /* a vector variant vs the scalar variant */
#define CANARY -4242.0f
#define KERAS_FILL -2.3726709e38f

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}
static float nrand(void) { return (float)(sqrt(-2.0 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand())); }

typedef struct {
  int b, h, sq, sk, d, dv;
  int causal, offset;
  int mask;       /* FX_ATTN_MASK_* */
  int mb, mh, mq; /* mask dims stored: 1 = broadcast */
  int layout;     /* 0: [B,S,H,D], 1: [B,H,S,D], 2: [B,S,H,D] with padding between rows and heads */
  int shared_kv;  /* one K/V head for all query heads (head stride 0) */
  float fill;
} attn_case;

typedef struct {
  float *buf;
  size_t n;
  ptrdiff_t sb, sh, ss;
} tensor4;

/* A [B, H, S, D] tensor stored in the case's layout; gaps filled with the canary. */
static tensor4 make(const attn_case *c, int heads, int s, int d, int random) {
  tensor4 t;
  const int pad = c->layout == 2 ? 3 : 0;
  if (c->layout == 1) {
    t.ss = d, t.sh = (ptrdiff_t)s * d, t.sb = (ptrdiff_t)heads * s * d;
  } else {
    t.sh = d + pad, t.ss = (ptrdiff_t)heads * (d + pad) + pad, t.sb = (ptrdiff_t)s * t.ss + pad;
  }
  t.n = (size_t)c->b * (size_t)t.sb;
  t.buf = malloc(t.n * sizeof(float));
  for (size_t i = 0; i < t.n; i++) t.buf[i] = CANARY;
  if (random)
    for (int b = 0; b < c->b; b++)
      for (int h = 0; h < heads; h++)
        for (int i = 0; i < s; i++)
          for (int f = 0; f < d; f++) t.buf[b * t.sb + h * t.sh + i * t.ss + f] = nrand();
  return t;
}

static float at(const tensor4 *t, int b, int h, int i, int f) { return t->buf[b * t->sb + h * t->sh + i * t->ss + f]; }

typedef struct {
  uint8_t *keep;
  float *add;
  ptrdiff_t sb, sh, sq;
} mask4;

static mask4 make_mask(const attn_case *c) {
  mask4 m = {NULL, NULL, 0, 0, 0};
  if (c->mask == FX_ATTN_MASK_NONE) return m;
  const int nb = c->mb ? c->b : 1, nh = c->mh ? c->h : 1, nq = c->mq ? c->sq : 1;
  m.sq = c->mq ? c->sk : 0;
  m.sh = c->mh ? (ptrdiff_t)nq * c->sk : 0;
  m.sb = c->mb ? (ptrdiff_t)nh * nq * c->sk : 0;
  const size_t n = (size_t)nb * nh * nq * c->sk;
  if (c->mask == FX_ATTN_MASK_SELECT) {
    m.keep = malloc(n);
    for (size_t i = 0; i < n; i++) m.keep[i] = urand() < 0.75;
  } else {
    m.add = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) m.add[i] = urand() < 0.2 ? -10000.0f : (float)(urand() * 2.0 - 1.0);
  }
  if (c->mq && c->sq > 1) /* query row 1 of every (batch, head) fully masked: uniform, or NaN with -inf */
    for (int b = 0; b < nb; b++)
      for (int h = 0; h < nh; h++)
        for (int j = 0; j < c->sk; j++) {
          const ptrdiff_t at = b * m.sb + h * m.sh + m.sq + j;
          if (m.keep) m.keep[at] = 0; else m.add[at] = -INFINITY;
        }
  return m;
}

/* float64 reference of one (b, h): o[i][f] for all i, f. NaN rows where every score is -inf. */
static void ref_head(const attn_case *c, const tensor4 *q, const tensor4 *k, const tensor4 *v, const mask4 *m,
                     float scale, int b, int h, double *o) {
  double *s = malloc((size_t)c->sk * sizeof(double));
  const int kh = c->shared_kv ? 0 : h;
  for (int i = 0; i < c->sq; i++) {
    double mx = -INFINITY;
    for (int j = 0; j < c->sk; j++) {
      double dot = 0.0;
      for (int f = 0; f < c->d; f++) dot += (double)at(q, b, h, i, f) * at(k, b, kh, j, f);
      /* stock's graph rounds the scaled score and the mask ADD to float (an ADD mask of -1e4 leaves
       * a score 3 digits): so does the reference, the dot product itself in float64 */
      float sj = (float)dot * scale;
      const ptrdiff_t mi = b * m->sb + h * m->sh + i * m->sq + j;
      if ((c->causal && j > i + c->offset) || (m->keep && !m->keep[mi])) sj = c->fill;
      if (m->add) sj += m->add[mi];
      s[j] = sj;
      mx = sj > mx ? sj : mx;
    }
    double sum = 0.0;
    for (int j = 0; j < c->sk; j++) sum += s[j] = exp(s[j] - mx); /* -inf - -inf: NaN, as stock */
    for (int f = 0; f < c->dv; f++) {
      double acc = 0.0;
      for (int j = 0; j < c->sk; j++) acc += s[j] * at(v, b, kh, j, f);
      o[(size_t)i * c->dv + f] = acc / sum;
    }
  }
  free(s);
}

static double g_worst[8], g_worst_ref[8];
static int g_failures;

static void run_case(const attn_case *c, int quick) {
  const int kvh = c->shared_kv ? 1 : c->h;
  tensor4 q = make(c, c->h, c->sq, c->d, 1), k = make(c, kvh, c->sk, c->d, 1), v = make(c, kvh, c->sk, c->dv, 1);
  mask4 m = make_mask(c);
  const float scale = 1.0f / sqrtf((float)c->d);
  fx_attn_params p = {c->b, c->h, c->sq, c->sk, c->d, c->dv, scale, c->causal, c->offset, c->fill,
                      c->mask, m.keep ? (const void *)m.keep : (const void *)m.add, m.sb, m.sh, m.sq};
  fx_attn_in qi = {q.buf, q.sb, q.sh, q.ss}, ki = {k.buf, k.sb, c->shared_kv ? 0 : k.sh, k.ss};
  fx_attn_in vi = {v.buf, v.sb, c->shared_kv ? 0 : v.sh, v.ss};
  double *ref = malloc((size_t)c->b * c->h * c->sq * c->dv * sizeof(double));
  for (int b = 0; b < c->b; b++)
    for (int h = 0; h < c->h; h++) ref_head(c, &q, &k, &v, &m, scale, b, h, ref + ((size_t)b * c->h + h) * c->sq * c->dv);
  tensor4 o0 = make(c, c->h, c->sq, c->dv, 0);
  for (int vi_ = 0; fx_attention_config_at(vi_); vi_++) {
    const fx_attention_config *cfg = fx_attention_config_at(vi_);
    for (int threads = 1; threads <= (quick ? 2 : 3); threads++) {
      tensor4 o = make(c, c->h, c->sq, c->dv, 0);
      fx_pool *pool = threads > 1 ? fx_pool_new(threads) : NULL;
      void *scratch = malloc(fx_attention_scratch_bytes(cfg, &p, threads));
      const fx_attn_out oo = {o.buf, o.sb, o.sh, o.ss};
      const int rc = fx_attention_f32(cfg, pool, &p, qi, ki, vi, oo, scratch);
      free(scratch);
      if (pool) fx_pool_free(pool);
      double worst = 0.0, worst_ref = 0.0;
      int bad_canary = 0, bad_nan = 0, differs = 0;
      for (int b = 0; b < c->b; b++)
        for (int h = 0; h < c->h; h++) {
          double vmax = 1e-30;
          for (int j = 0; j < c->sk; j++)
            for (int f = 0; f < c->dv; f++) vmax = fmax(vmax, fabs(at(&v, b, c->shared_kv ? 0 : h, j, f)));
          for (int i = 0; i < c->sq; i++)
            for (int f = 0; f < c->dv; f++) {
              const double want = ref[(((size_t)b * c->h + h) * c->sq + i) * c->dv + f];
              const float got = at(&o, b, h, i, f);
              if (isnan(want) || isnan(got)) {
                bad_nan |= isnan(want) != isnan(got);
                continue;
              }
              worst = fmax(worst, fabs(got - want) / vmax);
              if (vi_ > 0) worst_ref = fmax(worst_ref, fabs(got - at(&o0, b, h, i, f)) / vmax);
            }
        }
      if (threads == 1 && vi_ == 0) memcpy(o0.buf, o.buf, o.n * sizeof(float));
      /* canaries, and 1 thread vs many bit for bit (same variant) */
      static float *one;
      if (threads == 1) {
        free(one);
        one = malloc(o.n * sizeof(float));
        memcpy(one, o.buf, o.n * sizeof(float));
      } else {
        differs = memcmp(one, o.buf, o.n * sizeof(float)) != 0;
      }
      for (size_t i = 0; i < o.n; i++) {
        const ptrdiff_t b = (ptrdiff_t)i / o.sb, r = (ptrdiff_t)i % o.sb;
        int inside = 0;
        for (int h = 0; h < c->h && !inside; h++)
          for (int s = 0; s < c->sq && !inside; s++) {
            const ptrdiff_t off = h * o.sh + s * o.ss;
            inside = r >= off && r < off + c->dv;
          }
        (void)b;
        if (!inside && o.buf[i] != CANARY) bad_canary = 1;
      }
      const double tol = TOL_F64;
      const int fail = rc != 0 || worst > tol || worst_ref > TOL_REF || bad_canary || bad_nan || differs;
      if (fail) {
        printf("FAIL %s threads=%d: B=%d H=%d Sq=%d Sk=%d D=%d Dv=%d causal=%d/%d mask=%d(%d%d%d) layout=%d shared=%d: "
               "rc %d err %.3g vs f64, %.3g vs scalar%s%s%s\n",
               cfg->name, threads, c->b, c->h, c->sq, c->sk, c->d, c->dv, c->causal, c->offset, c->mask, c->mb, c->mh,
               c->mq, c->layout, c->shared_kv, rc, worst, worst_ref, bad_canary ? " CANARY" : "",
               bad_nan ? " NAN-PATTERN" : "", differs ? " THREADS-DIFFER" : "");
        g_failures++;
      }
      g_worst[vi_] = fmax(g_worst[vi_], worst);
      g_worst_ref[vi_] = fmax(g_worst_ref[vi_], worst_ref);
      free(o.buf);
    }
  }
  free(o0.buf), free(ref), free(q.buf), free(k.buf), free(v.buf), free(m.keep), free(m.add);
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
  int cases = 0;
  /* {b, h, sq, sk, d, dv, causal, offset, mask, mb, mh, mq, layout, shared_kv, fill} */
  const attn_case list[] = {
      {1, 1, 1, 1, 32, 32, 0, 0, 0, 0, 0, 0, 0, 0, KERAS_FILL},
      {1, 3, 7, 7, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0, KERAS_FILL},
      {2, 2, 7, 7, 80, 80, 1, 0, 0, 0, 0, 0, 1, 0, KERAS_FILL},
      {1, 4, 64, 64, 32, 32, 1, 0, 0, 0, 0, 0, 0, 0, KERAS_FILL},
      {1, 3, 197, 197, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0, KERAS_FILL},  /* ViT-Tiny */
      {2, 2, 128, 128, 64, 64, 0, 0, FX_ATTN_MASK_SELECT, 1, 0, 0, 0, 0, KERAS_FILL}, /* BERT padding */
      {1, 2, 128, 128, 128, 128, 0, 0, FX_ATTN_MASK_SELECT, 1, 1, 1, 2, 0, KERAS_FILL},
      {2, 3, 33, 33, 64, 48, 0, 0, FX_ATTN_MASK_ADD, 1, 0, 1, 1, 0, KERAS_FILL},
      {1, 5, 50, 50, 64, 64, 1, 0, FX_ATTN_MASK_SELECT, 0, 0, 0, 2, 0, KERAS_FILL}, /* causal + padding */
      {1, 4, 9, 40, 64, 64, 1, 31, 0, 0, 0, 0, 0, 0, KERAS_FILL},   /* decoder rows: offset Sk - Sq */
      {1, 4, 30, 17, 64, 64, 0, 0, 0, 0, 0, 0, 1, 1, KERAS_FILL},   /* cross, K/V shared by the heads */
      {1, 2, 600, 600, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0, KERAS_FILL},  /* several key tiles */
      {1, 2, 700, 700, 80, 80, 1, 0, FX_ATTN_MASK_ADD, 0, 0, 1, 1, 0, KERAS_FILL},
      {1, 3, 1024, 1024, 64, 64, 1, 0, 0, 0, 0, 0, 0, 0, KERAS_FILL}, /* GPT-2 */
      {1, 1, 1024, 1024, 128, 128, 0, 0, FX_ATTN_MASK_SELECT, 0, 0, 1, 0, 0, KERAS_FILL},
      {1, 12, 197, 197, 64, 64, 0, 0, 0, 0, 0, 0, 1, 0, KERAS_FILL},  /* ViT-B */
      {1, 2, 20, 20, 32, 32, 1, -3, 0, 0, 0, 0, 0, 0, KERAS_FILL},    /* rows 0-2 see no key: uniform */
      {1, 2, 20, 20, 32, 32, 1, -3, 0, 0, 0, 0, 0, 0, -INFINITY},     /* ... NaN */
      {2, 2, 40, 40, 64, 64, 0, 0, FX_ATTN_MASK_SELECT, 1, 1, 1, 0, 0, -INFINITY},
      {1, 2, 600, 600, 32, 32, 1, 0, FX_ATTN_MASK_SELECT, 0, 0, 1, 0, 0, KERAS_FILL}, /* + masked row 1 */
      {1, 1, 300, 300, 64, 64, 1, 0, 0, 0, 0, 0, 0, 0, -10000.0f},   /* HF's old causal fill */
      {2, 3, 45, 45, 36, 20, 1, 0, FX_ATTN_MASK_ADD, 1, 1, 1, 2, 0, KERAS_FILL}, /* D, Dv not whole vectors */
      {1, 2, 19, 61, 4, 1, 0, 0, 0, 0, 0, 0, 1, 1, KERAS_FILL},
  };
  const int n = sizeof list / sizeof list[0];
  for (int i = 0; i < n; i++) {
    if (quick && (double)list[i].sq * list[i].sk * list[i].h * list[i].d > 50e6) continue; /* qemu: smaller only */
    run_case(&list[i], quick);
    cases++;
  }
  for (int i = 0; fx_attention_config_at(i); i++)
    printf("%s: max %.3g vs float64%s", fx_attention_config_at(i)->name, g_worst[i], i ? "" : "\n");
  for (int i = 1; fx_attention_config_at(i); i++) printf(", %.3g vs the scalar variant\n", g_worst_ref[i]);
  printf("%d cases\n", cases);
  if (g_failures) {
    printf("%d FAILURES\n", g_failures);
    return 1;
  }
  printf("ALL PASS\n");
  return 0;
}
