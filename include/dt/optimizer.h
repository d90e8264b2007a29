/* The distributed-optimizer plug-in interface and registry.
 *
 * An optimizer is one folder under optimizers/ that exports one dt_optimizer_def: its name and
 * aliases, the table of its config keys (validated like every other key) and the struct they
 * fill, and the callbacks the runner drives round by round. It sees only the problem
 * (dt/problem.h) and the exchange; it never calls MPI. */
#ifndef DT_OPTIMIZER_H
#define DT_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "dt/config.h"
#include "dt/problem.h"
#include "dt/status.h"

typedef struct dt_optimizer_def {
  const char *name;                /* alg_name as written in configs */
  const char *const *aliases;      /* other accepted alg_name spellings, NULL-terminated */
  const char *summary;             /* one line for `dtrun check` and the docs */
  const dt_key *keys;              /* its optimizer_config keys, ended by {0} */
  size_t opts_size;                /* size of the struct the keys fill (<= DT_OPTS_MAX) */
  /* Cross-key rules and shorthands after parsing (e.g. primal_lr); writes a message to err
   * (naming the keys) and returns false when the combination is invalid. May be NULL. */
  int (*finalize)(void *opts, int outer_iterations, char *err, size_t err_size);
  /* Creates per-problem state; collective. */
  dt_status (*create)(dt_optimizer_run *run, const void *opts, void **state);
  /* Runs round k (0-based) on every local node; collective. */
  dt_status (*round)(void *state, dt_optimizer_run *run, int k);
  void (*destroy)(void *state);
  /* Bytes all nodes together send in one round on graph g with dim-float parameters (the
   * expectation, for randomized algorithms); for `dtrun check` and the docs. */
  double (*bytes_per_round)(const dt_graph *g, size_t dim, const void *opts);
} dt_optimizer_def;

/* All registered optimizers, ended by NULL. */
extern const dt_optimizer_def *const dt_optimizers[];

/* The optimizer named (or aliased) `name`, or NULL. */
const dt_optimizer_def *dt_optimizer_find(const char *name);

#endif
