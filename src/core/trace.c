/* Per-node record streams of a run's trace (see dt/trace.h). */
#define _POSIX_C_SOURCE 200809L
#include "dt/trace.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct dt_trace {
  int first, count, round;
  char tags[256]; /* ",BIDX,THET," or "" for every record */
  FILE **f;     /* [count] */
  char **path;  /* [count] */
};

static dt_status make_dir(const char *path) {
  DT_CHECK(mkdir(path, 0777) == 0 || errno == EEXIST, DT_ERR_IO, "cannot create trace folder %s: %s", path, strerror(errno));
  return DT_OK;
}

dt_status dt_trace_tags_check(const char *tags, const char *what) {
  const size_t n = strlen(tags);
  int ok = n > 0 && n % 5 == 4 && n < 250;
  for (size_t i = 0; ok && i < n; i++)
    ok = i % 5 == 4 ? tags[i] == ',' : (tags[i] >= 'A' && tags[i] <= 'Z') || (tags[i] >= '0' && tags[i] <= '9');
  DT_CHECK(ok, DT_ERR_USAGE, "%s: expected record tags of four capitals or digits, separated by commas (BIDX,THET), found '%s'",
           what, tags);
  return DT_OK;
}

dt_status dt_trace_open(const char *dir, const char *problem, int first, int count, const char *tags, dt_trace **out) {
  dt_status st = DT_OK;
  dt_trace *t = NULL;
  char sub[4096];
  *out = NULL;
  if (tags != NULL) DT_TRY(dt_trace_tags_check(tags, "trace tags"));
  DT_CHECK(snprintf(sub, sizeof sub, "%s/%s", dir, problem) < (int)sizeof sub, DT_ERR_IO, "trace folder name too long: %s", dir);
  DT_TRY(make_dir(dir));
  DT_TRY(make_dir(sub));
  DT_ALLOC_GOTO(t, 1, "trace");
  t->first = first;
  t->count = count;
  t->round = -1;
  if (tags != NULL) snprintf(t->tags, sizeof t->tags, ",%s,", tags);
  DT_ALLOC_GOTO(t->f, count > 0 ? count : 1, "trace streams");
  DT_ALLOC_GOTO(t->path, count > 0 ? count : 1, "trace streams");
  for (int l = 0; l < count; l++) {
    const size_t len = strlen(sub) + 32;
    DT_ALLOC_GOTO(t->path[l], len, "trace path");
    snprintf(t->path[l], len, "%s/node_%d.trace", sub, first + l);
    t->f[l] = fopen(t->path[l], "wb");
    DT_CHECK_GOTO(t->f[l] != NULL, DT_ERR_IO, "cannot write trace %s: %s", t->path[l], strerror(errno));
    DT_CHECK_GOTO(fwrite("DTTRACE1", 1, 8, t->f[l]) == 8, DT_ERR_IO, "cannot write trace %s: %s", t->path[l], strerror(errno));
  }
  *out = t;
  t = NULL;
cleanup:
  if (t != NULL) {
    const dt_status ignored = dt_trace_close(t); /* the first failure is the one reported */
    (void)ignored;
  }
  return st;
}

dt_status dt_trace_close(dt_trace *t) {
  dt_status st = DT_OK;
  if (t == NULL) return DT_OK;
  for (int l = 0; l < t->count && t->f != NULL; l++) {
    if (t->f[l] != NULL && fclose(t->f[l]) != 0 && st == DT_OK)
      st = DT_ERROR(DT_ERR_IO, "cannot write trace %s: %s", t->path[l], strerror(errno));
    if (t->path != NULL) dt_free(t->path[l]);
  }
  dt_free(t->f);
  dt_free(t->path);
  dt_free(t);
  return st;
}

void dt_trace_set_round(dt_trace *t, int round) {
  if (t != NULL) t->round = round;
}

static dt_status record(dt_trace *t, int l, const char *tag, int32_t type, const void *v, size_t n) {
  if (t == NULL) return DT_OK;
  DT_ASSERT(l >= 0 && l < t->count && strlen(tag) == 4 && n <= INT32_MAX);
  if (t->tags[0] != '\0') {
    const char key[7] = {',', tag[0], tag[1], tag[2], tag[3], ',', '\0'};
    if (strstr(t->tags, key) == NULL) return DT_OK;
  }
  const int32_t head[3] = {t->round, type, (int32_t)n};
  FILE *f = t->f[l];
  DT_CHECK(fwrite(tag, 1, 4, f) == 4 && fwrite(head, sizeof head, 1, f) == 1 && (n == 0 || fwrite(v, 4, n, f) == n), DT_ERR_IO,
           "cannot write trace %s: %s", t->path[l], strerror(errno));
  return DT_OK;
}

dt_status dt_trace_i32(dt_trace *t, int l, const char *tag, const int32_t *v, size_t n) { return record(t, l, tag, 0, v, n); }
dt_status dt_trace_f32(dt_trace *t, int l, const char *tag, const float *v, size_t n) { return record(t, l, tag, 1, v, n); }
