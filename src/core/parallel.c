/* dt_parallel_for (dt/parallel.h). */
#include "dt/parallel.h"

dt_status dt_parallel_for(int count, int threads, dt_status (*fn)(void *ctx, int i), void *ctx) {
  dt_status st = DT_OK, *sts = NULL;
  char (*msgs)[1024] = NULL;
  if (threads <= 1) { /* the plain loop: no allocation, messages stay where they are */
    for (int i = 0; i < count; i++) DT_TRY(fn(ctx, i));
    return DT_OK;
  }
  DT_ALLOC_GOTO(sts, count, "item status");
  DT_ALLOC_GOTO(msgs, count, "item messages");
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int i = 0; i < count; i++) {
    sts[i] = fn(ctx, i);
    if (sts[i] != DT_OK) { /* the error record is per thread: carry the message over */
      dt_error_format(msgs[i], sizeof msgs[i]);
      dt_error_clear();
    }
  }
  for (int i = 0; i < count; i++)
    if (sts[i] != DT_OK) {
      st = dt_error_set(sts[i], __FILE__, __LINE__, __func__, "%s", msgs[i]);
      break;
    }
cleanup:
  dt_free(sts);
  dt_free(msgs);
  return st;
}
