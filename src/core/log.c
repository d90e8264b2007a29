/* Rank-prefixed, levelled logging (see dt/log.h). Each message is formatted into one buffer and
 * written with a single fputs so lines from threads and ranks do not interleave mid-line. */
#include "dt/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int log_rank = 0;
static int log_size = 1;
static dt_log_level log_level = DT_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

bool dt_log_parse_level(const char *s, dt_log_level *out) {
  /* the names, then the aliases other tools use (Python's logging, syslog, Rust's log), in any
   * case: --log-level warning or DT_LOG_LEVEL=WARNING mean warn */
  static const struct {
    const char *name;
    dt_log_level level;
  } aliases[] = {{"err", DT_LOG_ERROR}, {"critical", DT_LOG_ERROR}, {"fatal", DT_LOG_ERROR},
                 {"warning", DT_LOG_WARN}, {"notice", DT_LOG_INFO}, {"information", DT_LOG_INFO},
                 {"verbose", DT_LOG_DEBUG}, {"trace", DT_LOG_DEBUG}};
  for (int i = 0; i <= DT_LOG_DEBUG; i++) {
    if (strcasecmp(s, level_names[i]) == 0) {
      *out = (dt_log_level)i;
      return true;
    }
  }
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
    if (strcasecmp(s, aliases[i].name) == 0) {
      *out = aliases[i].level;
      return true;
    }
  }
  return false;
}

void dt_log_init(int rank, int size, dt_log_level level) {
  log_rank = rank;
  log_size = size;
  log_level = level;
}

dt_log_level dt_log_get_level(void) { return log_level; }

void dt_log(dt_log_level level, const char *fmt, ...) {
  if (level > log_level) return;
  char buf[4096];
  size_t used = 0;
  if (log_size > 1) used += (size_t)snprintf(buf, sizeof buf, "[rank %d] ", log_rank);
  if (level == DT_LOG_ERROR) used += (size_t)snprintf(buf + used, sizeof buf - used, "error: ");
  if (level == DT_LOG_WARN) used += (size_t)snprintf(buf + used, sizeof buf - used, "warning: ");
  if (used < sizeof buf) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, sizeof buf - used, fmt, ap);
    va_end(ap);
  }
  size_t len = strlen(buf);
  if (len + 1 < sizeof buf && (len == 0 || buf[len - 1] != '\n')) {
    buf[len] = '\n';
    buf[len + 1] = '\0';
  }
  FILE *f = level <= DT_LOG_WARN ? stderr : stdout;
  fputs(buf, f);
  fflush(f);
}
