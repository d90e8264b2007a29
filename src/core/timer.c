/* Monotonic timers and the local time of day as text (see dt/timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "dt/timer.h"

#include <stdatomic.h>
#include <time.h>

double dt_time_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static atomic_llong heartbeat_ns; /* 0: no beat yet */

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void dt_heartbeat(void) { atomic_store_explicit(&heartbeat_ns, now_ns(), memory_order_relaxed); }

double dt_heartbeat_age(void) {
  long long last = atomic_load_explicit(&heartbeat_ns, memory_order_relaxed);
  if (last == 0) {
    dt_heartbeat();
    return 0.0;
  }
  return 1e-9 * (double)(now_ns() - last);
}

void dt_time_local(char *buf, size_t size, const char *format) {
  const time_t now = time(NULL);
  struct tm tmv;
  localtime_r(&now, &tmv);
  if (size > 0 && strftime(buf, size, format, &tmv) == 0) buf[0] = '\0';
}

void dt_timer_reset(dt_timer *t) {
  t->total = 0.0;
  t->started = -1.0;
  t->count = 0;
}

void dt_timer_start(dt_timer *t) { t->started = dt_time_now(); }

double dt_timer_stop(dt_timer *t) {
  if (t->started < 0.0) return 0.0;
  double dt = dt_time_now() - t->started;
  t->total += dt;
  t->count++;
  t->started = -1.0;
  return dt;
}
