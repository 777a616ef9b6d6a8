#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"

static const char *const k_names[] = {"partition", "plan", "cache", "exec"}; /* bit i: category 1 << i */
#define N_CATS (int)(sizeof k_names / sizeof *k_names)

unsigned fx_log_mask;

void fx_log(unsigned cat, const char *fmt, ...) {
  if (!(fx_log_mask & cat)) return;
  int i = 0;
  while (i < N_CATS - 1 && !((cat >> i) & 1)) i++;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "flexdelegate[%s]: ", k_names[i]);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int fx_log_parse(const char *v, unsigned *mask) {
  *mask = 0;
  const char *p = v;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    int found = 0;
    if (len == 3 && !strncmp(p, "all", 3)) { *mask |= (1u << N_CATS) - 1; found = 1; }
    if (len == 0 || (len == 4 && !strncmp(p, "none", 4))) found = 1;
    for (int i = 0; i < N_CATS && !found; i++)
      if (strlen(k_names[i]) == len && !strncmp(p, k_names[i], len)) { *mask |= 1u << i; found = 1; }
    if (!found) return -1;
    p += len + (comma ? 1 : 0);
  }
  return 0;
}

/* FLEXDELEGATE_LOG adds categories to whatever the option asked for. */
unsigned fx_log_env_mask(void) {
  const char *v = getenv("FLEXDELEGATE_LOG");
  unsigned m = 0;
  if (v && fx_log_parse(v, &m)) {
    fprintf(stderr, "flexdelegate: ignoring FLEXDELEGATE_LOG=%s (expected partition,plan,cache,exec,all)\n", v);
    m = 0;
  }
  return m;
}
