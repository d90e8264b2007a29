/* A plug-in's declared state (dt_optimizer_def.slots, state_fill, exchange_vectors): made,
 * registered for checkpoints, freed and counted from the one table, through the run's accessors
 * and services like any plug-in. */
#include <string.h>

#include "dt/optimizer.h"
#include "local_step.h"

static int slot_exists(const dt_state_slot *sl, const void *opts) { return sl->when == NULL || sl->when(opts); }

static dt_local_opt_spec slot_spec(const dt_state_slot *sl, const void *opts) {
  if (sl->spec != NULL) return sl->spec(opts);
  const unsigned char *o = opts;
  int kind;
  double lr;
  memcpy(&kind, o + sl->from.kind, sizeof kind);
  memcpy(&lr, o + sl->from.lr, sizeof lr);
  return dt_local_step_spec(kind, lr, sl->from.has_extras ? (const dt_sgd_extras *)(const void *)(o + sl->from.extras) : NULL);
}

/* Rows of an edge slot on this rank: its local out-edges (at least one row). */
static int local_edges(const dt_optimizer_run *run) {
  const int e = dt_run_local_edges(run);
  return e > 0 ? e : 1;
}

static dt_status slot_make(dt_optimizer_run *run, const dt_state_slot *sl, const void *opts, unsigned char *state) {
  void *at = state + sl->offset;
  dt_backend *be = dt_run_backend(run);
  const size_t row = dt_run_dim(run) + (size_t)sl->plus;
  switch (sl->kind) {
  case DT_SLOT_NODE:
    DT_TRY(dt_slab_create(be, dt_run_count(run), row, at));
    return sl->scratch ? DT_OK : dt_run_keep_slab(run, sl->name, at);
  case DT_SLOT_EDGE:
    DT_TRY(dt_slab_create(be, local_edges(run), row, at));
    return sl->scratch ? DT_OK : dt_run_keep_edge_slab(run, sl->name, at);
  case DT_SLOT_SHARED:
    DT_TRY(dt_be_alloc(be, sizeof(float) * dt_run_dim(run), at));
    return sl->scratch ? DT_OK : dt_run_keep_shared_vec(run, sl->name, *(float **)at);
  case DT_SLOT_HOST: {
    const int count = dt_run_count(run);
    DT_CHECK((*(void **)at = dt_calloc_(count > 0 ? (size_t)count : 1, sl->elem)) != NULL, DT_ERR_MEMORY,
             "out of memory for state '%s'", sl->name);
    return sl->scratch ? DT_OK : dt_run_keep_nodes(run, sl->name, *(void **)at, sl->elem);
  }
  case DT_SLOT_LEARNERS: {
    const dt_local_opt_spec spec = slot_spec(sl, opts);
    DT_TRY(dt_learners_create_spec(run, sl->name, &spec, at)); /* its state always kept */
    return sl->keep_grad ? dt_run_keep_slab(run, "grad", &((dt_learners *)at)->grad) : DT_OK;
  }
  }
  return DT_ERROR(DT_ERR_INTERNAL, "state slot '%s' has an unknown kind %d", sl->name, (int)sl->kind);
}

static void slot_free(dt_optimizer_run *run, const dt_state_slot *sl, unsigned char *state) {
  void *at = state + sl->offset;
  switch (sl->kind) {
  case DT_SLOT_NODE:
  case DT_SLOT_EDGE: dt_slab_free(dt_run_backend(run), at); break;
  case DT_SLOT_SHARED: dt_be_free(dt_run_backend(run), *(float **)at); break;
  case DT_SLOT_HOST: dt_free(*(void **)at); break;
  case DT_SLOT_LEARNERS: dt_learners_free(run, at); break;
  }
}

void dt_optimizer_destroy(const dt_optimizer_def *def, dt_optimizer_run *run, void *state) {
  if (state == NULL) return;
  if (def->destroy != NULL) def->destroy(run, state);
  /* a slot never made is zero, which each free accepts */
  for (const dt_state_slot *sl = def->slots; sl != NULL && sl->name != NULL; sl++) slot_free(run, sl, state);
  dt_free(state);
}

dt_status dt_optimizer_create(const dt_optimizer_def *def, dt_optimizer_run *run, const void *opts, void **out) {
  dt_status st = DT_OK;
  unsigned char *state = NULL;
  *out = NULL;
  DT_CHECK(def->state_bytes > 0, DT_ERR_INTERNAL, "optimizer %s declares no state struct (state_bytes)", def->plugin.name);
  state = dt_calloc_(1, def->state_bytes);
  DT_CHECK(state != NULL, DT_ERR_MEMORY, "out of memory for %s's state", def->plugin.name);
  if (def->state_fill & DT_STATE_OPTS) memcpy(state + def->opts_at, opts, def->plugin.opts_size);
  if (def->state_fill & DT_STATE_RUN) memcpy(state + def->run_at, &run, sizeof run);
  for (const dt_state_slot *sl = def->slots; sl != NULL && sl->name != NULL; sl++)
    if (slot_exists(sl, opts)) DT_TRY_GOTO(slot_make(run, sl, opts, state));
  if (def->exchange_vectors > 0) {
    dt_exchange *ex;
    DT_TRY_GOTO(dt_run_exchange(run, def->exchange_vectors, &ex));
  }
  if (def->create != NULL) DT_TRY_GOTO(def->create(run, opts, state));
  *out = state;
  state = NULL;
cleanup:
  dt_optimizer_destroy(def, run, state);
  return st;
}

dt_state_size dt_optimizer_state_size(const dt_optimizer_def *def, const void *opts, size_t dim) {
  dt_state_size z = def->state_extra != NULL ? def->state_extra(opts, dim) : (dt_state_size){0};
  z.per_node += def->exchange_vectors; /* the exchange's send vectors */
  for (const dt_state_slot *sl = def->slots; sl != NULL && sl->name != NULL; sl++) {
    if (!slot_exists(sl, opts)) continue;
    const double row = dim > 0 ? (double)(dim + (size_t)sl->plus) / (double)dim : 1.0;
    if (sl->kind == DT_SLOT_NODE) z.per_node += row;
    else if (sl->kind == DT_SLOT_EDGE) z.per_edge += row;
    else if (sl->kind == DT_SLOT_SHARED) z.per_rank += 1;
    else if (sl->kind == DT_SLOT_LEARNERS) { /* the gradient slab and the optimizer's moments */
      const dt_local_opt_spec spec = slot_spec(sl, opts);
      z.per_node += 1 + dt_local_opt_state_vectors(spec.kind, spec.momentum);
    }
  }
  return z;
}
