#include <string.h>
#include "flex_api.h"
#include "hash.h"

/* Odd multipliers with well-spread bits (from the fractional parts of sqrt(2), sqrt(3),
 * sqrt(5), sqrt(7)): odd, so each multiply is a bijection on 64 bits. */
#define K0 0x6a09e667f3bcc909ull
#define K1 0xbb67ae8584caa73bull
#define K2 0x3c6ef372fe94f82bull
#define K3 0xa54ff53a5f1d36f1ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v; /* little-endian hosts only (x86-64, aarch64) */
}

/* Per-lane step: absorb a word, then multiply and rotate (each step invertible, so distinct
 * inputs never collapse inside a lane). */
static inline uint64_t absorb(uint64_t lane, uint64_t w, uint64_t k) {
  lane ^= w * K1;
  lane = rotl(lane, 27) * k;
  return lane;
}

/* Avalanche: every input bit affects every output bit. */
static inline uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= K3;
  x ^= x >> 29;
  x *= K2;
  x ^= x >> 32;
  return x;
}

void fx_hasher_init(fx_hasher *h, uint64_t seed) {
  memset(h, 0, sizeof *h);
  h->lane[0] = seed ^ K0;
  h->lane[1] = seed + K1;
  h->lane[2] = rotl(seed, 17) ^ K2;
  h->lane[3] = ~seed * K3;
}

static void blocks(fx_hasher *h, const uint8_t *p, size_t n_blocks) {
  uint64_t a = h->lane[0], b = h->lane[1], c = h->lane[2], d = h->lane[3];
  for (size_t i = 0; i < n_blocks; i++, p += 32) {
    a = absorb(a, load64(p), K0);
    b = absorb(b, load64(p + 8), K2);
    c = absorb(c, load64(p + 16), K3);
    d = absorb(d, load64(p + 24), K0 ^ K2);
  }
  h->lane[0] = a; h->lane[1] = b; h->lane[2] = c; h->lane[3] = d;
}

void fx_hasher_update(fx_hasher *h, const void *data, size_t len) {
  const uint8_t *p = data;
  h->total += len;
  if (h->tail_len) {
    size_t take = 32 - h->tail_len < len ? 32 - h->tail_len : len;
    memcpy(h->tail + h->tail_len, p, take);
    h->tail_len += take;
    p += take;
    len -= take;
    if (h->tail_len < 32) return;
    blocks(h, h->tail, 1);
    h->tail_len = 0;
  }
  blocks(h, p, len / 32);
  p += len / 32 * 32;
  len %= 32;
  memcpy(h->tail, p, len);
  h->tail_len = len;
}

void fx_hasher_final(const fx_hasher *h, uint64_t out[2]) {
  fx_hasher t = *h;
  /* Pad the tail with zeros and its length, so "ab" + "" and "a" + "b\0" differ. */
  uint8_t last[32] = {0};
  memcpy(last, t.tail, t.tail_len);
  last[31] = (uint8_t)t.tail_len;
  blocks(&t, last, 1);
  uint64_t a = t.lane[0], b = t.lane[1], c = t.lane[2], d = t.lane[3];
  out[0] = mix(a ^ rotl(b, 13) ^ rotl(c, 29) ^ rotl(d, 47) ^ t.total);
  out[1] = mix(b ^ rotl(c, 11) ^ rotl(d, 23) ^ rotl(a, 41) ^ (t.total * K1) ^ out[0]);
}

uint64_t fx_hash64(const void *data, size_t len, uint64_t seed) {
  fx_hasher h;
  uint64_t out[2];
  fx_hasher_init(&h, seed);
  fx_hasher_update(&h, data, len);
  fx_hasher_final(&h, out);
  return out[0];
}

uint64_t flex_hash64(const void *data, size_t len, uint64_t seed) { return fx_hash64(data, len, seed); }
