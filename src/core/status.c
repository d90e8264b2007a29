/* Error record and traceback behind dt_status.
 *
 * One record per thread: the first failure's message, what config key it is about (as data,
 * dt_error_context), plus up to DT_MAX_FRAMES "func (file:line)" frames added as the code travels
 * up the stack. */
#include "dt/status.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DT_MAX_FRAMES = 32, DT_MSG_SIZE = 2048, DT_FRAME_SIZE = 160 };

typedef struct error_record {
  dt_status code;
  char message[DT_MSG_SIZE];
  dt_error_context ctx;
  int frames;
  int dropped; /* frames beyond DT_MAX_FRAMES, counted but not stored */
  char frame[DT_MAX_FRAMES][DT_FRAME_SIZE];
} error_record;

static _Thread_local error_record rec;

static const char *const names[DT_STATUS_COUNT] = {
    [DT_OK] = "ok",
    [DT_ERR_USAGE] = "usage error",
    [DT_ERR_CONFIG] = "config error",
    [DT_ERR_IO] = "I/O error",
    [DT_ERR_DATA] = "data error",
    [DT_ERR_MEMORY] = "out of memory",
    [DT_ERR_MPI] = "MPI error",
    [DT_ERR_BLAS] = "BLAS error",
    [DT_ERR_CUDA] = "CUDA error",
    [DT_ERR_NUMERIC] = "numerical error",
    [DT_ERR_UNSUPPORTED] = "unsupported",
    [DT_ERR_INTERRUPTED] = "interrupted",
    [DT_ERR_INTERNAL] = "internal error",
    [DT_ERR_DIVERGED] = "every problem diverged",
};

const char *dt_status_name(dt_status code) {
  if ((int)code < 0 || code >= DT_STATUS_COUNT) return "unknown error";
  return names[code];
}

int dt_status_exit_code(dt_status code) {
  switch (code) {
    case DT_OK: return 0;
    case DT_ERR_USAGE:
    case DT_ERR_CONFIG:
    case DT_ERR_DATA: return 2;
    case DT_ERR_INTERRUPTED: return 130;
    case DT_ERR_DIVERGED: return 3;
    default: return 1;
  }
}

static volatile sig_atomic_t stop_sig = 0;

void dt_stop_request(int sig) { stop_sig = sig; }
int dt_stop_requested(void) { return stop_sig; }

static volatile int evaluations_may_stop = 0;

void dt_stop_evaluations(int may) { evaluations_may_stop = may; }
int dt_stop_evaluation(void) { return evaluations_may_stop && stop_sig != 0; }

static void add_frame(const char *file, int line, const char *func) {
  if (rec.frames >= DT_MAX_FRAMES) {
    rec.dropped++;
    return;
  }
  snprintf(rec.frame[rec.frames++], DT_FRAME_SIZE, "%s (%s:%d)", func, file, line);
}

dt_status dt_error_set(dt_status code, const char *file, int line, const char *func,
                       const char *fmt, ...) {
  rec.code = code;
  rec.frames = 0;
  rec.dropped = 0;
  memset(&rec.ctx, 0, sizeof rec.ctx);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rec.message, sizeof rec.message, fmt, ap);
  va_end(ap);
  add_frame(file, line, func);
  return code;
}

dt_status dt_error_trace(dt_status code, const char *file, int line, const char *func) {
  if (rec.code == DT_OK) {
    /* A code with no record: someone returned a bare code. Record it so it is not silent. */
    return dt_error_set(code, file, line, func, "%s (no message recorded)", dt_status_name(code));
  }
  add_frame(file, line, func);
  return code;
}

dt_status dt_error_code(void) { return rec.code; }

const char *dt_error_message(void) { return rec.code == DT_OK ? "" : rec.message; }

dt_status dt_error_set_key(dt_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rec.ctx.key, sizeof rec.ctx.key, fmt, ap);
  va_end(ap);
  return code;
}

dt_status dt_error_set_where(dt_status code, const char *file, int line, int column) {
  snprintf(rec.ctx.file, sizeof rec.ctx.file, "%s", file != NULL ? file : "");
  rec.ctx.line = line;
  rec.ctx.column = column;
  return code;
}

const dt_error_context *dt_error_where(void) { return &rec.ctx; }

void dt_error_format(char *buf, size_t size) {
  if (size == 0) return;
  size_t used = (size_t)snprintf(buf, size, "%s", dt_error_message());
  for (int i = 0; i < rec.frames && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "\n  at %s", rec.frame[i]);
  if (rec.dropped > 0 && used < size)
    snprintf(buf + used, size - used, "\n  ... %d more frames", rec.dropped);
}

void dt_error_clear(void) {
  rec.code = DT_OK;
  rec.message[0] = '\0';
  memset(&rec.ctx, 0, sizeof rec.ctx);
  rec.frames = 0;
  rec.dropped = 0;
}

void *dt_calloc_(size_t count, size_t size) {
  if (count == 0 || size == 0) return NULL;
  if (count > (SIZE_MAX - 63) / size) return NULL;
  size_t bytes = (count * size + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, bytes);
  if (p != NULL) memset(p, 0, bytes);
  return p;
}

void dt_free(void *ptr) { free(ptr); }
