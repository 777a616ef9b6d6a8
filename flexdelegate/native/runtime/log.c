#include <stdarg.h>
#include <stdio.h>
#include "tflite/delegate.h"

unsigned fx_log_mask;

void fx_log(unsigned cat, const char *fmt, ...) {
  if (!(fx_log_mask & cat)) return;
  static const char *const names[] = {"partition", "plan", "cache", "exec"};
  int i = 0;
  while (i < 3 && !((cat >> i) & 1)) i++;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "flexdelegate[%s]: ", names[i]);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
