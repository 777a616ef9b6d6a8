/* Fused scaled-dot-product attention (NOTES.md): per batch b and head h,
 *   s[i][j] = scale * (q[b,h,i,:] . k[b,h,j,:])
 *   s[i][j] = fill        where the key is hidden: causal (j > i + causal_offset) or a SELECT mask's 0
 *   s[i][j] += add[i][j]  with an ADD mask (after the select, as HF-style graphs order them)
 *   o[b,h,i,:] = sum_j softmax_j(s[i][:]) v[b,h,j,:]
 * as stock computes BATCH_MATMUL -> MUL -> SELECT_V2 / ADD -> SOFTMAX -> BATCH_MATMUL, without the
 * score matrix: keys in tiles, an online softmax (running max and sum per row, the output
 * rescaled when the max grows), causal key tiles above the diagonal never computed.
 *
 * Hidden scores take the fill value, nothing else: a row whose every key is hidden is uniform
 * (stock's SOFTMAX of equal values) with a finite fill, and NaN with fill = -inf, as in stock.
 * Within ~3e-7 of float64 (relative to max |v|) on typical inputs. NaN inputs: the x86 variants'
 * GEMM output stage (gemm.h: max then min, which return their second operand on NaN) turns NaN
 * sums into -inf, so a NaN in V gives -inf outputs and a NaN in K drops that key where stock has
 * NaN (a NaN in Q still gives a NaN row); the scalar and NEON variants propagate NaN as stock.
 *
 * Layouts: each operand is a view through strides in floats for (batch, head, sequence); the
 * feature axis is contiguous. The converter's [B,S,H,D] (before its TRANSPOSEs) has strides
 * (S*H*D, D, H*D); [B,H,S,D] has (H*S*D, S*D, D); a stride of 0 broadcasts (e.g. one K/V head
 * shared by all query heads). */
#ifndef FLEX_ATTENTION_H
#define FLEX_ATTENTION_H
#include <stddef.h>
#include <stdint.h>
#include "kernels/gemm/gemm.h"

struct fx_pool;

typedef struct {
  const float *data;
  ptrdiff_t batch, head, seq; /* strides in floats */
} fx_attn_in;

typedef struct {
  float *data;
  ptrdiff_t batch, head, seq;
} fx_attn_out;

enum { FX_ATTN_MASK_NONE = 0, FX_ATTN_MASK_SELECT, FX_ATTN_MASK_ADD };

typedef struct {
  int batch, heads, q_len, kv_len, head_dim, value_dim;
  float scale;
  int causal;        /* key j hidden from query i when j > i + causal_offset */
  int causal_offset; /* 0 for Keras' use_causal_mask (Sq = Sk); Sk - Sq for a decoder's new rows */
  float fill;        /* what a hidden score becomes: the SELECT_V2's other operand (Keras: -0.7 FLT_MAX) */
  /* An explicit mask broadcastable to [B, H, Sq, Sk], keys contiguous: SELECT: uint8_t, nonzero
   * keeps the score; ADD: float added to it. Strides in elements, 0 to broadcast. */
  int mask_kind;
  const void *mask;
  ptrdiff_t mask_batch, mask_head, mask_row;
} fx_attn_params;

/* One row's online-softmax step over n scores (one key tile), in place: the raw dot products
 * become scale + masks applied, then p = e^(s - m_new); m, l: the row's running max and sum.
 * Returns the factor the row's output so far must be multiplied by (0 before any key). s is
 * padded: floats [n, round_up(n, 16)) may be read and overwritten. */
typedef struct {
  size_t visible;       /* keys [visible, n) of this tile are hidden (causal) */
  float fill;
  const uint8_t *keep;  /* SELECT mask for this tile's keys, or NULL */
  const float *add;     /* ADD mask for this tile's keys, or NULL */
} fx_attn_rowmask;
typedef float (*fx_attn_softmax_fn)(float *s, size_t n, float scale, const fx_attn_rowmask *mk, float *m, float *l);

/* Packs one head's keys k[j] (rows `seq` floats apart) as GEMM panels of nr keys: per panel a zero
 * bias row, then d rows of nr (row f = feature f of the panel's keys; zeros past the last key). */
typedef void (*fx_attn_pack_k_fn)(const float *k, ptrdiff_t seq, size_t n, size_t d, size_t nr, float *dst);
/* Packs keys [0, n) of one head's values as panels of nr features: per panel a zero bias row, then
 * n rows of nr (zeros past dv). */
typedef void (*fx_attn_pack_v_fn)(const float *v, ptrdiff_t seq, size_t n, size_t dv, size_t nr, float *dst);

/* A variant: a GEMM microkernel of gemm/gemm.h (mr rows x packed panels of nr columns) for both
 * products, and the packing and softmax step of the same ISA. */
typedef struct {
  const char *name; /* dtype-op-tile-isa */
  int isa;          /* its ISA family (runtime/cpu.h FX_ISA_*) */
  int mr, nr;
  fx_gemm_ukernel_fn gemm;
  fx_attn_softmax_fn softmax;
  fx_attn_pack_k_fn pack_k;
  fx_attn_pack_v_fn pack_v;
} fx_attention_config;

/* The variants of f32-attention.inc (attention.c). */
extern fx_isa_menu fx_attention_menu;

#define FX_UKERNEL(isa, name, x, mr, nr, gemm)                                                   \
  float fx_attn_softmax_##x(float *, size_t, float, const fx_attn_rowmask *, float *, float *); \
  void fx_attn_pack_k_##x(const float *, ptrdiff_t, size_t, size_t, size_t, float *);           \
  void fx_attn_pack_v_##x(const float *, ptrdiff_t, size_t, size_t, size_t, float *);
#include "f32-attention.inc"
#undef FX_UKERNEL

const fx_attention_config *fx_attention_config_get(void); /* this CPU's ($FLEXDELEGATE_ISA narrows) */
const fx_attention_config *fx_attention_config_at(int i); /* 0 = scalar reference; NULL past the end */

/* Scratch bytes fx_attention_f32 needs for p (cfg NULL: this CPU's) on `threads` threads: the
 * pool's fx_pool_threads (1 without a pool). Per thread, one head's packed K and V, a row tile's
 * scores and a query block's running max / sum: it does not grow with the heads or the batch. */
size_t fx_attention_scratch_bytes(const fx_attention_config *cfg, const fx_attn_params *p, int threads);

/* o = attention(q, k, v) on the pool (NULL: inline). scratch: fx_attention_scratch_bytes(), 64-byte
 * aligned preferred. Returns 0, or -1 on a parameter it cannot run (sizes < 1, NULL data). o must
 * not overlap q, k or v. */
int fx_attention_f32(const fx_attention_config *cfg, struct fx_pool *pool, const fx_attn_params *p, fx_attn_in q,
                     fx_attn_in k, fx_attn_in v, fx_attn_out o, void *scratch);

/* Whether a [Sq, Sk] bool mask (rows row_stride bytes apart) keeps exactly keys j <= i + offset
 * for some offset (Keras' use_causal_mask: 0): the delegate then passes it as `causal`. */
int fx_attn_mask_is_causal(const uint8_t *mask, int q_len, int kv_len, ptrdiff_t row_stride, int *offset);
#endif
