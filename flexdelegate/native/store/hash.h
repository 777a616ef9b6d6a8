/* Content hashing for the weight cache: fast enough to re-hash every weight at each load
 * (that is how a changed model is detected), not cryptographic. */
#ifndef FLEX_HASH_H
#define FLEX_HASH_H
#include <stddef.h>
#include <stdint.h>

/* Streaming 128-bit hash: four independent 64-bit lanes over 32-byte blocks. */
typedef struct {
  uint64_t lane[4];
  uint8_t tail[32];
  size_t tail_len;
  uint64_t total;
} fx_hasher;

void fx_hasher_init(fx_hasher *h, uint64_t seed);
void fx_hasher_update(fx_hasher *h, const void *data, size_t len);
void fx_hasher_final(const fx_hasher *h, uint64_t out[2]);
uint64_t fx_hash64(const void *data, size_t len, uint64_t seed);
#endif
