/* Monotonic wall-clock timers. Accumulating timers split a run's time into compute,
 * communication and evaluation without per-call allocation. */
#ifndef DT_TIMER_H
#define DT_TIMER_H

/* Seconds since an arbitrary fixed point, from CLOCK_MONOTONIC. */
double dt_time_now(void);

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
