/* Monotonic time for profiles and logs. */
#ifndef FLEX_CLOCK_H
#define FLEX_CLOCK_H
#include <stdint.h>
#include <time.h>

static inline uint64_t fx_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif
