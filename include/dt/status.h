/* Status codes and the error traceback.
 *
 * Every fallible function returns a dt_status. The first failure records where it happened and
 * a message; each caller that passes the code up adds one traceback line (PETSc style). The
 * record is thread-local, so worker threads may fail independently. main() prints it. */
#ifndef DT_STATUS_H
#define DT_STATUS_H

#include <stddef.h>

typedef enum dt_status {
  DT_OK = 0,
  DT_ERR_USAGE,       /* bad command line */
  DT_ERR_CONFIG,      /* bad experiment configuration */
  DT_ERR_IO,          /* file could not be opened, read or written */
  DT_ERR_DATA,        /* file content is malformed (truncated, wrong magic, ...) */
  DT_ERR_MEMORY,      /* allocation failed */
  DT_ERR_MPI,         /* an MPI call failed */
  DT_ERR_BLAS,        /* a BLAS/LAPACK call reported an error */
  DT_ERR_CUDA,        /* a CUDA or cuBLAS call failed */
  DT_ERR_NUMERIC,     /* NaN, inf or a failed numerical check */
  DT_ERR_UNSUPPORTED, /* valid request this build or backend cannot serve */
  DT_ERR_INTERRUPTED, /* SIGINT/SIGTERM received */
  DT_ERR_INTERNAL,    /* a broken invariant: a bug in dtrun */
  DT_ERR_DIVERGED,    /* the run ended and wrote its files, but every problem diverged (exit 3) */
  DT_STATUS_COUNT
} dt_status;

/* A status the caller must look at. */
#define DT_MUST_USE __attribute__((warn_unused_result))

/* Drops a status on purpose, where a failure is already being reported or cannot change what
 * happens next; say why beside each call. (A (void) cast does not silence warn_unused_result in
 * gcc.) */
static inline void dt_ignore(dt_status st) { (void)st; }

/* Short lower-case name of a code ("config error", ...). Never NULL. */
const char *dt_status_name(dt_status code);

/* Exit code for a status, per the CLI contract: 0 ok, 2 bad input (usage, config, malformed
 * input data), 130 interrupted, else 1. */
int dt_status_exit_code(dt_status code);

/* A stop request (a signal number), set from a signal handler and read by long loops anywhere
 * (file loads, the round loop), which then end with DT_ERR_INTERRUPTED. Async-signal-safe. */
void dt_stop_request(int sig);
int dt_stop_requested(void);
/* Whether an evaluation under way may stop for a stop request (set by the runner around the
 * evaluations it can repeat on resume): the backends' evaluation loops then end between nodes
 * and batches with DT_ERR_INTERRUPTED, so that a signal acts within a node's evaluation, not a
 * whole one of thousands of nodes. dt_stop_evaluation() is that test. Not collective. */
void dt_stop_evaluations(int may);
int dt_stop_evaluation(void);

/* Records a new error (clearing any earlier record) and returns code. Not collective. */
DT_MUST_USE dt_status dt_error_set(dt_status code, const char *file, int line, const char *func,
                                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Adds a traceback frame to the current error record and returns code unchanged. */
DT_MUST_USE dt_status dt_error_trace(dt_status code, const char *file, int line, const char *func);

/* The current error's message (first failure only), or "" when none. */
/* The current error's code (DT_OK: none). */
DT_MUST_USE dt_status dt_error_code(void);
const char *dt_error_message(void);

/* Writes "message\n  at func (file:line)\n..." into buf (always NUL-terminated). */
void dt_error_format(char *buf, size_t size);

/* Forgets the current error record (after handling an error deliberately). */
void dt_error_clear(void);

/* ---- propagation macros ------------------------------------------------------------------
 * Plain forms return from the function; the _GOTO forms store the code in a local `st` and
 * jump to the function's single `cleanup:` label. */

#define DT_ERROR(code, ...) dt_error_set((code), __FILE__, __LINE__, __func__, __VA_ARGS__)

#define DT_TRY(expr)                                                                         \
  do {                                                                                       \
    dt_status dt_try_st_ = (expr);                                                           \
    if (dt_try_st_ != DT_OK) return dt_error_trace(dt_try_st_, __FILE__, __LINE__, __func__); \
  } while (0)

#define DT_TRY_GOTO(expr)                                                    \
  do {                                                                       \
    st = (expr);                                                             \
    if (st != DT_OK) {                                                       \
      st = dt_error_trace(st, __FILE__, __LINE__, __func__); /* = st */      \
      goto cleanup;                                                          \
    }                                                                        \
  } while (0)

/* User-input check: fails with `code` and a formatted message when cond is false. */
#define DT_CHECK(cond, code, ...)                 \
  do {                                            \
    if (!(cond)) return DT_ERROR((code), __VA_ARGS__); \
  } while (0)

#define DT_CHECK_GOTO(cond, code, ...)  \
  do {                                  \
    if (!(cond)) {                      \
      st = DT_ERROR((code), __VA_ARGS__); \
      goto cleanup;                     \
    }                                   \
  } while (0)

/* ---- what a config error is about, as data ------------------------------------------------
 * An error about a config key records the key's path beside its message, and where the key was
 * read when that is known, so that a caller can place the error in the config file (or a test
 * can check it) without reading the message back. A new error (dt_error_set) starts empty. */
typedef struct dt_error_context {
  char key[256];    /* "experiment.model.layers[2]"; "" when the error is about no key */
  char file[1024];  /* where the key was read: the config file, or an override's text
                       ("--set KEY=VALUE"); "" while the error is not placed yet */
  int line, column; /* 1-based position in file; 0 when there is none (an override, a default) */
} dt_error_context;

/* Attaches the key path (printf format) to the current error and returns code. Not collective. */
DT_MUST_USE dt_status dt_error_set_key(dt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Attaches where the key was read (file NULL: ""; line, column 0 when unknown) to the current
 * error and returns code. Not collective. */
DT_MUST_USE dt_status dt_error_set_where(dt_status code, const char *file, int line, int column);

/* The current error's context (this thread's); all empty when none was attached. Never NULL. */
const dt_error_context *dt_error_where(void);

/* A new error about config key `key` (a plain string, e.g. "experiment.graph.degree"). */
#define DT_ERROR_KEY(code, key, ...) dt_error_set_key(DT_ERROR((code), __VA_ARGS__), "%s", (key))

/* DT_CHECK for a value read from config key `key`. */
#define DT_CHECK_KEY(cond, code, key, ...)                   \
  do {                                                       \
    if (!(cond)) return DT_ERROR_KEY((code), (key), __VA_ARGS__); \
  } while (0)

#define DT_CHECK_KEY_GOTO(cond, code, key, ...)    \
  do {                                             \
    if (!(cond)) {                                 \
      st = DT_ERROR_KEY((code), (key), __VA_ARGS__); \
      goto cleanup;                                \
    }                                              \
  } while (0)

/* Internal invariant: a failure is a dtrun bug, reported as DT_ERR_INTERNAL. */
#define DT_ASSERT(cond)                                                              \
  do {                                                                               \
    if (!(cond)) return DT_ERROR(DT_ERR_INTERNAL, "internal error: assertion '%s' failed", #cond); \
  } while (0)

#define DT_ASSERT_GOTO(cond)                                                          \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      st = DT_ERROR(DT_ERR_INTERNAL, "internal error: assertion '%s' failed", #cond); \
      goto cleanup;                                                                   \
    }                                                                                 \
  } while (0)

/* Allocation that fails with DT_ERR_MEMORY naming what was being allocated. */
#define DT_ALLOC_GOTO(ptr, count, what)                                                        \
  do {                                                                                         \
    (ptr) = dt_calloc_((count), sizeof(*(ptr)));                                               \
    if ((ptr) == NULL && (count) > 0) {                                                        \
      st = DT_ERROR(DT_ERR_MEMORY, "out of memory allocating %zu bytes for %s",               \
                    (size_t)(count) * sizeof(*(ptr)), (what));                                 \
      goto cleanup;                                                                            \
    }                                                                                          \
  } while (0)

/* The same, returning the error (for functions without cleanup). */
#define DT_ALLOC(ptr, count, what)                                                             \
  do {                                                                                         \
    (ptr) = dt_calloc_((count), sizeof(*(ptr)));                                               \
    if ((ptr) == NULL && (count) > 0)                                                          \
      return DT_ERROR(DT_ERR_MEMORY, "out of memory allocating %zu bytes for %s",             \
                      (size_t)(count) * sizeof(*(ptr)), (what));                               \
  } while (0)

/* calloc with overflow-checked count*size; 64-byte aligned so vector loops and BLAS are happy.
 * Free with dt_free. Returns NULL on failure. */
void *dt_calloc_(size_t count, size_t size);
void dt_free(void *ptr);

#endif
