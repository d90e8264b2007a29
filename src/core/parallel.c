/* dt_parallel_for (dt/parallel.h). */
#include "dt/parallel.h"

#include <string.h>

dt_status dt_parallel_for(int count, int threads, dt_status (*fn)(void *ctx, int i), void *ctx) {
  if (threads <= 1) { /* the plain loop: messages stay where they are */
    for (int i = 0; i < count; i++) DT_TRY(fn(ctx, i));
    return DT_OK;
  }
  /* Only the lowest failing item's status and message are kept, so a round costs no allocation:
   * that is most of what a parallel loop over a few nodes of a small model costs. */
  int bad = count;
  dt_status bad_st = DT_OK;
  char msg[1024] = "";
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int i = 0; i < count; i++) {
    const dt_status st = fn(ctx, i);
    if (st != DT_OK) { /* the error record is per thread: carry the message over */
      char mine[sizeof msg];
      dt_error_format(mine, sizeof mine);
      dt_error_clear();
#pragma omp critical(dt_parallel_for_error)
      if (i < bad) {
        bad = i, bad_st = st;
        memcpy(msg, mine, sizeof msg);
      }
    }
  }
  return bad < count ? dt_error_set(bad_st, __FILE__, __LINE__, __func__, "%s", msg) : DT_OK;
}
