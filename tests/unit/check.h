/* Minimal test harness: CHECK records a failure with file:line and keeps going, so one run shows
 * every broken expectation; main returns check_report(). Exit 77 means skipped (meson). */
#ifndef DT_TEST_CHECK_H
#define DT_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond, ...)                                              \
  do {                                                                \
    check_count++;                                                    \
    if (!(cond)) {                                                    \
      check_failures++;                                               \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fputc('\n', stderr);                                            \
    }                                                                 \
  } while (0)

/* |a-b| <= atol + rtol*|b| */
#define CHECK_CLOSE(a, b, rtol, atol)                                                      \
  do {                                                                                     \
    double check_a_ = (a), check_b_ = (b);                                                 \
    CHECK(fabs(check_a_ - check_b_) <= (atol) + (rtol)*fabs(check_b_), "%s = %.9g, %s = %.9g", \
          #a, check_a_, #b, check_b_);                                                     \
  } while (0)

#define CHECK_OK(expr)                                                        \
  do {                                                                        \
    dt_status check_st_ = (expr);                                             \
    CHECK(check_st_ == DT_OK, "%s returned %s: %s", #expr, dt_status_name(check_st_), \
          dt_error_message());                                                \
    dt_error_clear();                                                         \
  } while (0)

/* Expects `expr` to fail with `code` and a message containing `needle`. */
#define CHECK_FAILS(expr, code, needle)                                                        \
  do {                                                                                         \
    dt_status check_st_ = (expr);                                                              \
    CHECK(check_st_ == (code), "%s returned %s, expected %s (message: %s)", #expr,            \
          dt_status_name(check_st_), dt_status_name(code), dt_error_message());               \
    CHECK(strstr(dt_error_message(), (needle)) != NULL, "message of %s lacks '%s': %s", #expr, \
          (needle), dt_error_message());                                                       \
    dt_error_clear();                                                                          \
  } while (0)

/* A test that ran no check proves nothing: it fails. */
static inline int check_report(const char *name) {
  printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
  if (check_count == 0) fprintf(stderr, "%s: no check ran\n", name);
  return check_failures == 0 && check_count > 0 ? 0 : 1;
}

#endif
