/* Time: monotonic wall-clock timers, and the local time of day as text. Accumulating timers split
 * a run's time into compute, communication and evaluation without per-call allocation. */
#ifndef DT_TIMER_H
#define DT_TIMER_H

#include <stddef.h>

/* Seconds since an arbitrary fixed point, from CLOCK_MONOTONIC. */
double dt_time_now(void);

/* The local time of day now, formatted by strftime(3) with format into buf (always
 * NUL-terminated; "" when it does not fit). For time stamps in file and folder names and in
 * result files; measure intervals with dt_time_now. Not collective. */
void dt_time_local(char *buf, size_t size, const char *format);

/* The run's heartbeat, for its watchdog (experiments/watchdog.c): loops that may run long (a
 * node's gradients or evaluation, a round, a checkpoint) call dt_heartbeat() as they make
 * progress; dt_heartbeat_age() is the seconds since the last beat (since the first call of
 * either). Thread-safe and cheap (a clock read and a relaxed atomic store). */
void dt_heartbeat(void);
double dt_heartbeat_age(void);

typedef struct dt_timer {
  double total;   /* accumulated seconds over finished intervals */
  double started; /* start of the running interval, or < 0 when stopped */
  long count;     /* finished intervals */
} dt_timer;

void dt_timer_reset(dt_timer *t);
void dt_timer_start(dt_timer *t);
/* Stops the running interval and adds it to total; returns the interval's length (0 if the
 * timer was not running). */
double dt_timer_stop(dt_timer *t);

#endif
