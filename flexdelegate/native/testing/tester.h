/* What the tester entries (flex_testing.h) share. */
#ifndef FLEX_TESTER_H
#define FLEX_TESTER_H

/* The one timing loop: runs run(ctx) max(iters, 1) times, each run's seconds into seconds[i]
 * when seconds is not NULL. */
void fx_tester_time(int iters, double *seconds, void (*run)(void *ctx), void *ctx);
#endif
