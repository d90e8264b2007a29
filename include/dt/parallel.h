/* Independent per-item work on threads, with dtrun's error contract kept: the error record is
 * per thread, so each failing item's message is carried back and the first failure (lowest
 * index) is returned to the caller's thread with its message. */
#ifndef DT_PARALLEL_H
#define DT_PARALLEL_H

#include "dt/status.h"

/* Runs fn(ctx, i) for i in [0, count) on `threads` OpenMP threads (<= 1: a plain loop that stops
 * at the first failure). The items must be independent (each writes only its own state), which
 * keeps results identical for any thread count. */
DT_MUST_USE dt_status dt_parallel_for(int count, int threads, dt_status (*fn)(void *ctx, int i), void *ctx);

#endif
