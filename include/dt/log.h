/* Rank-prefixed logging with levels.
 *
 * Messages go to stderr (warnings, errors) or stdout (info, debug), prefixed with the MPI rank
 * when more than one rank runs, so interleaved output from mpirun stays attributable. */
#ifndef DT_LOG_H
#define DT_LOG_H

#include <stdbool.h>

typedef enum dt_log_level {
  DT_LOG_ERROR = 0,
  DT_LOG_WARN,
  DT_LOG_INFO,
  DT_LOG_DEBUG,
} dt_log_level;

/* Sets this process's rank and rank count (for the prefix) and the threshold. Call once, early;
 * before it the prefix is omitted and the level is INFO (dtrun's main sets it from --log-level,
 * DT_LOG_LEVEL or --quiet). Not collective. */
void dt_log_init(int rank, int size, dt_log_level level);

/* "error", "warn", "info" or "debug" into *out, in any case, and the common aliases (warning,
 * err, critical, fatal, notice, information, verbose, trace); false when s is none of them. */
bool dt_log_parse_level(const char *s, dt_log_level *out);

/* Current threshold; messages above it are dropped. */
dt_log_level dt_log_get_level(void);

void dt_log(dt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define dt_log_error(...) dt_log(DT_LOG_ERROR, __VA_ARGS__)
#define dt_log_warn(...) dt_log(DT_LOG_WARN, __VA_ARGS__)
#define dt_log_info(...) dt_log(DT_LOG_INFO, __VA_ARGS__)
#define dt_log_debug(...) dt_log(DT_LOG_DEBUG, __VA_ARGS__)

#endif
