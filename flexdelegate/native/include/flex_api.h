/* The native module's Python-facing API (also fed verbatim to cffi's cdef, so: plain
 * declarations only; lines starting with '#' are dropped for the cdef). */
#ifndef FLEX_API_H
#define FLEX_API_H
#include <stddef.h>
#include <stdint.h>

/* TFLite external-delegate plugin entry points (the runtime finds them with dlsym). The
 * delegate is opaque here: Python only passes the pointer back. */
void *tflite_plugin_create_delegate(char **keys, char **values, size_t n,
                                    void (*report_error)(const char *));
void tflite_plugin_destroy_delegate(void *delegate);

/* Statistics of the last Prepare as JSON, written into buf (NUL-terminated when cap > 0).
 * Returns the full length, so a caller can retry with a bigger buffer. */
size_t flex_stats_json(void *delegate, char *buf, size_t cap);

/* Validates one option as the plugin would; returns NULL if fine, else a message. */
const char *flex_check_option(const char *key, const char *value);

/* Arena planner (exposed for tests and the Python planner): buffers with byte sizes and
 * [first, last] lifetimes (inclusive node indices) get offsets; returns the arena size.
 * kind 0 = greedy by size, 1 = trivial (back to back). Returns (size_t)-1 on bad input. */
size_t flex_plan_arena(int kind, int n, const size_t *sizes, const int *first, const int *last,
                       size_t *offsets);

/* Name of the GEMM microkernel chosen for this CPU, e.g. "f32-gemm-8x32-avx512f". */
const char *flex_gemm_kernel_name(void);
/* Name of the i-th microkernel this CPU can run (0 = scalar reference), NULL past the end. */
const char *flex_gemm_kernel_at(int i);
/* c[m x n] = clamp(a[m x k] * w[n x k]^T + bias, lo, hi) with the i-th microkernel, packing
 * w as the delegate does (for tests against the scalar reference). 0 ok, -1 bad args/OOM. */
int flex_gemm_run(int i, int m, int n, int k, const float *a, const float *w, const float *bias,
                  float *c, float lo, float hi);

/* The weight cache's 64-bit content hash (cache/FORMAT.md), for the Python cache tools. */
uint64_t flex_hash64(const void *data, size_t len, uint64_t seed);
#endif
