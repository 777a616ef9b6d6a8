/* Survives a cache file truncated under a live mapping (by someone other than us: our
 * writers never modify a file in place). A SIGBUS inside a watched range maps a zero page
 * there and marks the range damaged; the kernel that read it reports an error instead of a
 * result. Faults elsewhere go to the previous handler. */
#ifndef FLEX_SIGBUS_H
#define FLEX_SIGBUS_H
#include <stddef.h>

void fx_sigbus_watch(const void *base, size_t size);
void fx_sigbus_unwatch(const void *base);
/* Nonzero once any watched range was damaged (cheap: checked after every invoke). */
int fx_sigbus_any(void);
/* Nonzero once any fault hit [base, base+size) of a watched range. */
int fx_sigbus_damaged(const void *base);
#endif
