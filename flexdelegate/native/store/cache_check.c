/* The loader's verdict on one cache file, without loading a model: what fx_cache_open accepts
 * is exactly what a load would map. `flexdelegate cache verify` reports it beside the Python
 * reader's, and the cache fuzzer demands the two agree. */
#include "cache_file.h"
#include "flex_api.h"

int flex_cache_check(const char *path, char *msg, size_t msg_len) {
  if (!path || !msg || !msg_len) return -1;
  fx_cache_map *m = fx_cache_open(path, msg, msg_len);
  if (!m) return msg[0] ? -1 : 1; /* fx_cache_open leaves msg empty only for a missing file */
  fx_cache_map_unref(m);
  return 0;
}
