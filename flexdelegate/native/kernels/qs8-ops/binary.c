/* ADD, SUB, MUL and PRELU with broadcasting, walking the output the way stock does (NOTES.md
 * "ADD, MUL"; PRELU's one arithmetic makes its walk indifferent, it shares ADD's):
 * equal shapes are one element-wise loop; broadcasts that fold into five dimensions
 * (ProcessBroadcastShapes) are runs of d[4] element-wise pairs, or, when d[4] == 1, runs of d[3]
 * elements against one broadcast scalar; any other broadcast goes an element at a time. On
 * LiteRT (FLEX_STOCK_NEON) each run's leading whole blocks take the NEON arithmetic and the rest
 * the portable one, so the form of an output element follows from its place in its run. */
#include <stdint.h>
#include <string.h>
#include "qs8-ops.h"

/* Bytes of a repeated broadcast vector tiled on the stack (fx_qs8_binary_run). */
#define FX_QS8_TILE_BYTES 2048

/* ProcessBroadcastShapes: returns the kind; d[] and swap for FX_BC_FIVEFOLD. */
int fx_qs8_bcast_plan(const fx_qs8_shape *a, const fx_qs8_shape *b, fx_qs8_bcast *bc) {
  const int rank = a->rank > b->rank ? a->rank : b->rank;
  if (rank > FX_QS8_MAX_RANK || a->rank < 0 || b->rank < 0) return -1;
  memset(bc, 0, sizeof *bc);
  bc->a.rank = bc->b.rank = bc->out.rank = rank;
  for (int i = 0; i < rank; i++) { /* extended with leading ones */
    const int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    bc->a.d[i] = ia >= 0 ? a->d[ia] : 1;
    bc->b.d[i] = ib >= 0 ? b->d[ib] : 1;
    if (bc->a.d[i] < 0 || bc->b.d[i] < 0) return -1;
    if (bc->a.d[i] != bc->b.d[i] && bc->a.d[i] != 1 && bc->b.d[i] != 1) return -1;
    bc->out.d[i] = bc->a.d[i] > bc->b.d[i] ? bc->a.d[i] : bc->b.d[i];
    if (bc->a.d[i] == 0 || bc->b.d[i] == 0) bc->out.d[i] = 0;
  }
  int i = rank - 1;
  while (i >= 0 && bc->a.d[i] == bc->b.d[i]) i--;
  if (i < 0) {
    bc->kind = FX_BC_NONE;
    return 0;
  }
  /* the input with the 1 in the last differing dimension broadcasts fastest: it becomes `a` */
  bc->swap = bc->b.d[i] == 1;
  const int *sa = bc->swap ? bc->b.d : bc->a.d, *sb = bc->swap ? bc->a.d : bc->b.d;
  for (int k = 0; k < 5; k++) bc->d[k] = 1;
  i = rank - 1;
  while (i >= 0 && sa[i] == sb[i]) bc->d[4] *= sb[i--];
  while (i >= 0 && sa[i] == 1) bc->d[3] *= sb[i--];
  while (i >= 0 && sa[i] == sb[i]) bc->d[2] *= sa[i--];
  while (i >= 0 && sb[i] == 1) bc->d[1] *= sa[i--];
  while (i >= 0 && sa[i] == sb[i]) bc->d[0] *= sb[i--];
  bc->kind = i >= 0 ? FX_BC_GENERIC : FX_BC_FIVEFOLD;
  return 0;
}

static int32_t type_lo(int u8) { return u8 ? 0 : -128; }
static int32_t type_hi(int u8) { return u8 ? 255 : 127; }

/* PRELU's output is its input's shape (stock checks it); an alpha not of x's very shape goes to
 * BroadcastPrelu4DSlow, which tflite-runtime 2.14 aborts in beyond 4-D (LiteRT runs it). */
static int prelu_shapes_ok(const fx_qs8_shape *x, const fx_qs8_shape *alpha, const fx_qs8_bcast *bc, int stock) {
  int same = alpha->rank == x->rank;
  if (bc->out.rank != x->rank) return 0;
  for (int i = 0; i < x->rank; i++) {
    if (bc->out.d[i] != x->d[i]) return 0;
    same = same && alpha->d[i] == x->d[i];
  }
  return same || x->rank <= 4 || stock == FLEX_STOCK_NEON;
}

/* QuantizeMultiplierSmallerThanOneExp: stock aborts on a multiplier >= 1; refused here. */
static int smaller_than_one(double real, int32_t *m, int32_t *shift) {
  fx_quantize_multiplier(real, 0, m, shift);
  return *shift > 0 ? -1 : 0;
}

int fx_qs8_binary_prepare(int op, int u8, float s1, int32_t z1, float s2, int32_t z2, float so,
                          int32_t zo, int act, const fx_qs8_shape *a, const fx_qs8_shape *b,
                          int stock, fx_qs8_binary_op *bop) {
  memset(bop, 0, sizeof *bop);
  if (op != FX_QS8_ADD && op != FX_QS8_SUB && op != FX_QS8_MUL && op != FX_QS8_PRELU) return -1;
  if (op == FX_QS8_PRELU && act != 0) return -1;
  if (!(s1 > 0) || !(s2 > 0) || !(so > 0)) return -1;
  const int32_t lo_t = type_lo(u8), hi_t = type_hi(u8);
  if (z1 < lo_t || z1 > hi_t || z2 < lo_t || z2 > hi_t || zo < lo_t || zo > hi_t) return -1;
  int32_t lo, hi;
  if (fx_qs8_act_range_of(act, so, zo, u8, &lo, &hi)) return -1;
  if (fx_qs8_bcast_plan(a, b, &bop->bc)) return -1;
  /* tflite-runtime 2.14's MUL aborts on generic broadcasts of rank > 4 (NOTES.md "MUL") */
  if (op == FX_QS8_MUL && stock == FLEX_STOCK_PORTABLE && bop->bc.kind == FX_BC_GENERIC && bop->bc.out.rank > 4)
    return -1;
  if (op == FX_QS8_PRELU && !prelu_shapes_ok(a, b, &bop->bc, stock)) return -1;
  bop->op = op;
  bop->stock = stock;
  if (op == FX_QS8_PRELU) {
    fx_qs8_prelu_params *p = &bop->prelu;
    /* stock's real multipliers are float expressions, widened (PreluPrepare) */
    const float identity = s1 / so, alpha = s1 * s2 / so;
    fx_quantize_multiplier((double)identity, 0, &p->m1, &p->s1);
    fx_quantize_multiplier((double)alpha, 0, &p->m2, &p->s2);
    if (p->s1 > 30 || p->s2 > 30) return -1;
    p->zx = z1, p->za = z2, p->zo = zo, p->u8 = u8;
  } else if (op == FX_QS8_ADD || op == FX_QS8_SUB) {
    fx_qs8_add_params *p = &bop->add;
    const double twice_max = 2.0 * (double)(s1 > s2 ? s1 : s2);
    const float out_den = (float)(1 << 20) * so; /* stock: (1 << left_shift) * scale, in float */
    if (smaller_than_one((double)s1 / twice_max, &p->m1, &p->s1) ||
        smaller_than_one((double)s2 / twice_max, &p->m2, &p->s2) ||
        smaller_than_one(twice_max / (double)out_den, &p->mo, &p->so)) return -1;
    p->z1 = z1, p->z2 = z2, p->zo = zo, p->lo = lo, p->hi = hi, p->u8 = u8;
    p->sub = op == FX_QS8_SUB; /* stock's SUB: the portable loops on both wheels */
  } else {
    fx_qs8_mul_params *p = &bop->mul;
    const float real = s1 * s2 / so; /* stock: float arithmetic, widened */
    fx_quantize_multiplier((double)real, 0, &p->m, &p->s);
    if (p->s > 30) return -1;
    p->z1 = z1, p->z2 = z2, p->zo = zo, p->lo = lo, p->hi = hi, p->u8 = u8;
  }
  return 0;
}

/* Stock's NEON block and arithmetic of the element-wise loop (scalar = 0) or of the
 * scalar-broadcast loop (scalar = 1); block 0: all portable. */
static void neon_loop(const fx_qs8_binary_op *bop, int scalar, int *block, int *form) {
  const int u8 = bop->op == FX_QS8_MUL ? bop->mul.u8 : bop->add.u8;
  if (bop->stock != FLEX_STOCK_NEON || bop->op == FX_QS8_SUB || bop->op == FX_QS8_PRELU) {
    *block = 0;
    *form = 0;
  } else if (bop->op == FX_QS8_ADD) {
    *block = u8 || scalar ? 8 : 16;
    *form = u8 || scalar ? FX_ADD_NEON_POST : FX_ADD_NEON_PRE;
  } else {
    *block = u8 ? 8 : 16;
    *form = u8 && scalar ? FX_MUL_NEON_TRUNC : FX_MUL_NEON_SAT;
  }
}

int fx_qs8_mul_of_table_prepare(const fx_qs8_binary_op *mul, const fx_qs8_lut_op *f, int x_at,
                                fx_qs8_lut_op *op) {
  if (mul->op != FX_QS8_MUL || mul->bc.kind != FX_BC_NONE || f->block != 0) return -1;
  int block, form;
  neon_loop(mul, 0, &block, &form);
  const fx_qs8_mul_params *p = &mul->mul;
  op->block = block;
  for (int part = 0; part < 2; part++) {
    const int fm = part ? 0 : form; /* table 1: past the NEON blocks, portable */
    for (int i = 0; i < 256; i++) {
      const int32_t x = p->u8 ? i : (int8_t)i, fx = p->u8 ? f->t[0][i] : (int8_t)f->t[0][i];
      op->t[part][i] = (uint8_t)(x_at == 0 ? fxq_mul_one(x, fx, p, fm) : fxq_mul_one(fx, x, p, fm));
    }
  }
  return 0;
}

/* The per-op parameters of one walk (the inputs exchanged or not). */
typedef struct {
  fx_qs8_add_params add;
  fx_qs8_mul_params mul;
  fx_qs8_prelu_params prelu;
} walk_params;

/* The params with the inputs exchanged (the walk's `a` is the fastest-broadcast input). */
static void swapped(const fx_qs8_binary_op *bop, walk_params *wp) {
  *wp = (walk_params){bop->add, bop->mul, bop->prelu};
  if (!bop->bc.swap) return;
  fx_qs8_add_params *ap = &wp->add;
  ap->z1 = bop->add.z2, ap->z2 = bop->add.z1, ap->m1 = bop->add.m2, ap->m2 = bop->add.m1;
  ap->s1 = bop->add.s2, ap->s2 = bop->add.s1;
  if (ap->sub) ap->sub = 3 - ap->sub; /* a - b with the inputs exchanged is b - a */
  wp->mul.z1 = bop->mul.z2, wp->mul.z2 = bop->mul.z1;
  wp->prelu.alpha_first = 1;
}

/* PRELU on n elements (a portable loop: PRELU is not on the models' hot paths). */
static void prelu_loop(size_t n, const uint8_t *a, size_t a_step, const uint8_t *b, uint8_t *y,
                       const fx_qs8_prelu_params *p) {
  for (size_t i = 0; i < n; i++) {
    const int32_t va = p->u8 ? a[i * a_step] : (int8_t)a[i * a_step], vb = p->u8 ? b[i] : (int8_t)b[i];
    y[i] = (uint8_t)(p->alpha_first ? fxq_prelu_one(vb, va, p) : fxq_prelu_one(va, vb, p));
  }
}

/* Elements [r0, r1) of one stock loop of `len` elements whose NEON part is its first
 * floor(len / block) * block; a, b, y at the loop's element 0. */
static void run_loop(const fx_qs8_ops_config *v, const fx_qs8_binary_op *bop, const walk_params *wp,
                     size_t len, int block, int form, const uint8_t *a, size_t a_step, const uint8_t *b,
                     uint8_t *y, size_t r0, size_t r1) {
  size_t mid = block ? len / (size_t)block * (size_t)block : 0;
  mid = mid < r0 ? r0 : mid > r1 ? r1 : mid;
  for (int part = 0; part < 2; part++) {
    const size_t s = part ? mid : r0, e = part ? r1 : mid;
    const int f = part ? 0 : form; /* 0: the portable form of both ops */
    if (e <= s) continue;
    if (bop->op == FX_QS8_PRELU) prelu_loop(e - s, a + s * a_step, a_step, b + s, y + s, &wp->prelu);
    else if (bop->op != FX_QS8_MUL) v->add(e - s, a + s * a_step, a_step, b + s, y + s, &wp->add, f);
    else v->mul(e - s, a + s * a_step, a_step, b + s, y + s, &wp->mul, f);
  }
}

/* Offset of output element e's source in an extended input shape `in` of the output `out`. */
static size_t generic_offset(const fx_qs8_shape *out, const fx_qs8_shape *in, size_t e) {
  size_t off = 0, stride = 1;
  for (int i = out->rank - 1; i >= 0; i--) {
    const size_t idx = e % (size_t)out->d[i];
    e /= (size_t)out->d[i];
    if (in->d[i] != 1) off += idx * stride;
    stride *= (size_t)in->d[i];
  }
  return off;
}

void fx_qs8_binary_run(const fx_qs8_ops_config *v, const fx_qs8_binary_op *bop, const void *a,
                       const void *b, void *y, size_t e0, size_t e1) {
  const fx_qs8_bcast *bc = &bop->bc;
  const uint8_t *pa = a, *pb = b;
  uint8_t *py = y;
  int block, form;
  const walk_params plain = {bop->add, bop->mul, bop->prelu}; /* the inputs as given */
  walk_params wp;
  if (bc->kind == FX_BC_NONE) {
    neon_loop(bop, 0, &block, &form);
    run_loop(v, bop, &plain, fx_qs8_numel(&bc->out), block, form, pa, 1, pb, py, e0, e1);
    return;
  }
  if (bc->kind == FX_BC_GENERIC) { /* BroadcastAdd6DSlow / BroadcastMul6DSlow: portable */
    for (size_t e = e0; e < e1; e++) {
      const size_t oa = generic_offset(&bc->out, &bc->a, e), ob = generic_offset(&bc->out, &bc->b, e);
      run_loop(v, bop, &plain, 1, 0, 0, pa + oa, 0, pb + ob, py + e, 0, 1);
    }
    return;
  }
  swapped(bop, &wp);
  const uint8_t *fa = bc->swap ? pb : pa, *fb = bc->swap ? pa : pb; /* fa broadcasts fastest */
  const int64_t *d = bc->d;
  const int scalar = d[4] == 1;
  const size_t len = (size_t)(scalar ? d[3] : d[4]);
  neon_loop(bop, scalar, &block, &form);
  if (len == 0) return;
  /* Short runs against one repeated vector (squeeze-and-excite's gate over a feature map):
   * k whole runs at a time against the vector tiled k times, one kernel call per k * len
   * elements instead of one per run (EfficientNet-B0: 12,544 calls of 32). Only where every
   * element of a run takes the same arithmetic (no NEON block boundary inside a run). */
  uint8_t tiled[FX_QS8_TILE_BYTES];
  size_t tiled_off = SIZE_MAX; /* the run now tiled, as many times as fit */
  const int tile = !scalar && 2 * len <= sizeof tiled && (block == 0 || len % (size_t)block == 0);
  for (size_t e = e0; e < e1;) {
    const size_t q = e / len, r0 = e % len;
    const size_t r1 = e1 - (e - r0) < len ? e1 - (e - r0) : len;
    size_t a_off, b_off;
    if (scalar) { /* q = (i0 * d1 + i1) * d2 + i2; b walks i0, i2 */
      const size_t i2 = q % (size_t)d[2], i0 = q / ((size_t)d[2] * (size_t)d[1]);
      a_off = q;
      b_off = (i0 * (size_t)d[2] + i2) * len;
    } else { /* q = ((i0 * d1 + i1) * d2 + i2) * d3 + i3 */
      const size_t i3 = q % (size_t)d[3], q2 = q / (size_t)d[3];
      const size_t i2 = q2 % (size_t)d[2], i0 = q2 / ((size_t)d[2] * (size_t)d[1]);
      a_off = q2 * len;
      b_off = ((i0 * (size_t)d[2] + i2) * (size_t)d[3] + i3) * len;
      size_t k = sizeof tiled / len, left = (size_t)d[3] - i3, whole = (e1 - e) / len;
      k = k < left ? k : left;
      k = k < whole ? k : whole;
      if (tile && r0 == 0 && k >= 2) {
        if (tiled_off != a_off) {
          tiled_off = a_off;
          for (size_t j = 0; j + len <= sizeof tiled; j += len) memcpy(tiled + j, fa + a_off, len);
        }
        run_loop(v, bop, &wp, k * len, block, form, tiled, 1, fb + b_off, py + e, 0, k * len);
        e += k * len;
        continue;
      }
    }
    run_loop(v, bop, &wp, len, block, form, fa + a_off, scalar ? 0 : 1, fb + b_off, py + (e - r0), r0, r1);
    e += r1 - r0;
  }
}
