/* The error traceback: first message kept, one frame per level, exit-code mapping, the MPI
 * wrapper's message, and the key context that travels beside a message. */
#include <mpi.h>
#include <stdlib.h>

#include "../../src/core/core_impl.h"
#include "check.h"
#include "dt/status.h"

static dt_status leaf(int x) {
  DT_CHECK(x < 10, DT_ERR_CONFIG, "x = %d is too large (at most 9)", x);
  return DT_OK;
}

static dt_status middle(int x) {
  DT_TRY(leaf(x));
  return DT_OK;
}

static dt_status top(int x, int *freed) {
  dt_status st = DT_OK;
  int *buf = NULL;
  DT_ALLOC_GOTO(buf, 16, "test buffer");
  DT_TRY_GOTO(middle(x));
cleanup:
  if (buf != NULL) *freed = 1;
  dt_free(buf);
  return st;
}

static dt_status keyed_leaf(int layer) {
  char key[64];
  snprintf(key, sizeof key, "experiment.model.layers[%d]", layer);
  DT_CHECK_KEY(layer < 2, DT_ERR_CONFIG, key, "layer %d is too deep", layer);
  return DT_OK;
}

static dt_status keyed_middle(int layer) {
  DT_TRY(keyed_leaf(layer));
  return DT_OK;
}

/* The key is data beside the message: set with the error, kept while the code travels up,
 * dropped by the next error and by dt_error_clear. */
static void test_key_context(void) {
  CHECK(dt_error_where()->key[0] == '\0' && dt_error_where()->line == 0, "context before any error");
  dt_status st = keyed_middle(3);
  const dt_error_context *c = dt_error_where();
  CHECK(st == DT_ERR_CONFIG && strcmp(c->key, "experiment.model.layers[3]") == 0, "key: '%s'", c->key);
  CHECK(strcmp(dt_error_message(), "layer 3 is too deep") == 0, "the message is unchanged: %s", dt_error_message());
  CHECK(c->file[0] == '\0' && c->line == 0 && c->column == 0, "no position yet: %s:%d:%d", c->file, c->line, c->column);
  st = dt_error_set_where(st, "x.yaml", 4, 7);
  CHECK(st == DT_ERR_CONFIG && strcmp(c->file, "x.yaml") == 0 && c->line == 4 && c->column == 7, "where: %s:%d:%d", c->file,
        c->line, c->column);
  st = DT_ERROR(DT_ERR_IO, "another error");
  CHECK(c->key[0] == '\0' && c->file[0] == '\0' && c->line == 0, "a new error kept the old context: %s %s", c->key, c->file);
  st = DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph", "graph: %s", "x");
  CHECK(strcmp(c->key, "experiment.graph") == 0 && strcmp(dt_error_message(), "graph: x") == 0, "DT_ERROR_KEY: %s", c->key);
  dt_error_clear();
  CHECK(c->key[0] == '\0', "clear kept the key '%s'", c->key);
}

static dt_status mpi_fails(void) {
  DT_MPI(MPI_ERR_COUNT);
  return DT_OK;
}

int main(void) {
  int freed = 0;
  CHECK_OK(top(3, &freed));
  CHECK(freed == 1, "cleanup not run on success");

  freed = 0;
  dt_status st = top(12, &freed);
  CHECK(st == DT_ERR_CONFIG, "got %s", dt_status_name(st));
  CHECK(freed == 1, "cleanup not run on failure");
  CHECK(strcmp(dt_error_message(), "x = 12 is too large (at most 9)") == 0, "message: %s",
        dt_error_message());
  char buf[4096];
  dt_error_format(buf, sizeof buf);
  const char *l = strstr(buf, "at leaf (");
  const char *m = strstr(buf, "at middle (");
  const char *t = strstr(buf, "at top (");
  CHECK(l && m && t && l < m && m < t, "traceback out of order:\n%s", buf);
  CHECK(strstr(buf, "test_status.c:") != NULL, "traceback lacks file:line:\n%s", buf);
  dt_error_clear();
  CHECK(dt_error_message()[0] == '\0', "clear left a message");

  /* A bare code passed up without a record still produces a message. */
  st = dt_error_trace(DT_ERR_IO, "f.c", 1, "g");
  CHECK(strstr(dt_error_message(), "I/O error") != NULL, "bare code message: %s",
        dt_error_message());
  dt_error_clear();

  CHECK(dt_status_exit_code(DT_OK) == 0, "ok");
  CHECK(dt_status_exit_code(DT_ERR_CONFIG) == 2, "config");
  CHECK(dt_status_exit_code(DT_ERR_USAGE) == 2, "usage");
  CHECK(dt_status_exit_code(DT_ERR_INTERRUPTED) == 130, "interrupted");
  CHECK(dt_status_exit_code(DT_ERR_IO) == 1, "io");
  CHECK(strcmp(dt_status_name((dt_status)999), "unknown error") == 0, "out-of-range name");

  /* Deep recursion keeps the first message and counts dropped frames. */
  st = DT_ERROR(DT_ERR_DATA, "deep");
  for (int i = 0; i < 100; i++) st = dt_error_trace(st, "x.c", i, "f");
  dt_error_format(buf, sizeof buf);
  CHECK(strncmp(buf, "deep", 4) == 0 && strstr(buf, "more frames") != NULL, "deep: %s", buf);
  dt_error_clear();

  test_key_context();

  MPI_Init(NULL, NULL);
  st = mpi_fails();
  CHECK(st == DT_ERR_MPI, "mpi wrapper returned %s", dt_status_name(st));
  CHECK(strstr(dt_error_message(), "MPI_ERR_COUNT") != NULL, "mpi message: %s",
        dt_error_message());
  CHECK(strstr(dt_error_message(), "count") != NULL, "mpi message lacks MPI's text: %s",
        dt_error_message());
  dt_error_clear();
  MPI_Finalize();
  return check_report("test_status");
}
