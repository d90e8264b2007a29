/* A run's trace (`dtrun run --dump-trace DIR`): what fixes the path of a run beyond its config,
 * written so that an independent implementation can follow the run step by step (tests/twin/).
 * Per problem and node one record stream, DIR/<problem>/node_<i>.trace:
 *
 *   "DTTRACE1"                                                    8 bytes, once
 *   char tag[4], int32 round, int32 type, int32 n, n values        each record (host byte order,
 *                                                                   little-endian on every target)
 *
 * type 0: int32 values, 1: float32 values. round is the 0-based round the record belongs to
 * (-1 before the first). The tags and what each holds are listed in tests/twin/README.md; a
 * stream's records of one round are in the order the node made them. Traces are for small runs:
 * each local node keeps one open file. */
#ifndef DT_TRACE_H
#define DT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "dt/status.h"

typedef struct dt_trace dt_trace;

/* Opens the streams of nodes [first, first+count) under dir/problem (made if missing; any other
 * rank may make it too). tags: a comma-separated list of the record tags to keep ("BIDX,THET"),
 * or NULL for all (the list is copied). */
DT_MUST_USE dt_status dt_trace_open(const char *dir, const char *problem, int first, int count, const char *tags,
                                    dt_trace **out);
/* Whether tags is a comma-separated list of one or more tags of trace records, each four
 * characters A-Z or 0-9; an error naming `what` (DT_ERR_USAGE) otherwise. */
DT_MUST_USE dt_status dt_trace_tags_check(const char *tags, const char *what);
/* Flushes and closes every stream; the first failure is returned. NULL is fine. */
DT_MUST_USE dt_status dt_trace_close(dt_trace *t);
/* The round the next records belong to. */
void dt_trace_set_round(dt_trace *t, int round);
/* One record of local node l (0-based on this rank). t NULL: nothing, DT_OK. Node streams are
 * independent: records of different nodes may be written from different threads. */
DT_MUST_USE dt_status dt_trace_i32(dt_trace *t, int l, const char *tag, const int32_t *v, size_t n);
DT_MUST_USE dt_status dt_trace_f32(dt_trace *t, int l, const char *tag, const float *v, size_t n);

#endif
