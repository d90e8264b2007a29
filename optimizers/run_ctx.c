/* The services the runner offers optimizers (dt_optimizer_run in dt/optimizer.h, its insides in
 * run_impl.h): the accessors, node-batched gradients with loss accounting, the exchange with byte
 * and time accounting, ordered means over all nodes, and the learners (local optimizer + gradient)
 * of SGD-style plug-ins. */
#include <math.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt/optimizer.h"
#include "mix.h"
#include "run_impl.h"
#include "run_clock.h"
#include "run_faults.h"
#include "dt/parallel.h"

dt_status dt_run_create(dt_comm *comm, const dt_graph *g, const dt_problem_config *pc, dt_task *task, uint64_t seed, int first,
                        int count, dt_optimizer_run **out) {
  dt_status st = DT_OK;
  dt_optimizer_run *run = NULL;
  *out = NULL;
  DT_ALLOC_GOTO(run, 1, "run");
  run->comm = comm;
  run->be = dt_task_backend(task);
  run->graph = g;
  run->round = (dt_round_graph){.mask = g->out_mask, .w_nbr = g->w_nbr, .w_self = g->w_self}; /* directed: its arcs */
  run->pc = pc;
  run->task = task;
  run->seed = seed;
  run->first = first;
  run->count = count;
  run->dim = dt_task_dim(task);
  run->threads = dt_run_threads(comm, count);
  dt_timer_reset(&run->t_compute);
  dt_timer_reset(&run->t_comm);
  DT_TRY_GOTO(dt_slab_create(run->be, count, run->dim, &run->theta));
  if (pc != NULL && pc->buffers == DT_BUFFERS_MIX && dt_task_buffers(task)->dim > 0)
    DT_TRY_GOTO(dt_exchange_create(comm, run->be, g, 1, dt_task_buffers(task)->dim, &run->buffer_exchange));
  DT_ALLOC_GOTO(run->loss, count, "run");
  DT_ALLOC_GOTO(run->train_loss_sum, count, "run");
  DT_ALLOC_GOTO(run->train_loss_n, count, "run");
  DT_ALLOC_GOTO(run->node_bytes, count, "run");
  DT_TRY_GOTO(dt_run_keep_slab(run, "theta", &run->theta));
  DT_TRY_GOTO(dt_run_keep_nodes(run, "train_loss_sum", run->train_loss_sum, sizeof(double)));
  DT_TRY_GOTO(dt_run_keep_nodes(run, "train_loss_n", run->train_loss_n, sizeof(long)));
  DT_TRY_GOTO(dt_run_keep_nodes(run, "node_bytes", run->node_bytes, sizeof(uint64_t)));
  *out = run;
  run = NULL;
cleanup:
  dt_run_free(run);
  return st;
}

/* The refusal of an admission rule (registry.c's, a plug-in's accepts, mix.c's sweep rule). */
int dt_refuse(dt_refusal *why, const char *option, const char *fmt, ...) {
  snprintf(why->key, sizeof why->key, "optimizer_config.%s", option != NULL ? option : "alg_name");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why->msg, sizeof why->msg, fmt, ap);
  va_end(ap);
  return 0;
}

void dt_run_set_schedule(dt_optimizer_run *run, dt_schedule *schedule) { run->schedule = schedule; }
void dt_run_set_trace(dt_optimizer_run *run, dt_trace *trace) { run->trace = trace; }
void dt_run_set_max_epochs(dt_optimizer_run *run, double epochs) { run->max_epochs = epochs; }

dt_backend *dt_run_backend(const dt_optimizer_run *run) { return run->be; }
size_t dt_run_dim(const dt_optimizer_run *run) { return run->dim; }
int dt_run_first(const dt_optimizer_run *run) { return run->first; }
int dt_run_count(const dt_optimizer_run *run) { return run->count; }
int dt_run_local_edges(const dt_optimizer_run *run) {
  return run->graph->nbr_start[run->first + run->count] - run->graph->nbr_start[run->first];
}
dt_slab *dt_run_theta(dt_optimizer_run *run) { return &run->theta; }
const dt_graph *dt_run_graph(const dt_optimizer_run *run) { return run->graph; }
const dt_round_graph *dt_run_this_round(const dt_optimizer_run *run) { return &run->round; }
int dt_run_time_varying(const dt_optimizer_run *run) {
  return run->schedule != NULL && dt_schedule_kind_of(run->schedule) != DT_SCHEDULE_STATIC;
}
const dt_problem_config *dt_run_problem(const dt_optimizer_run *run) { return run->pc; }
dt_task *dt_run_task(const dt_optimizer_run *run) { return run->task; }
uint64_t dt_run_seed(const dt_optimizer_run *run) { return run->seed; }
dt_exchange *dt_run_the_exchange(const dt_optimizer_run *run) { return run->exchange; }
int dt_run_faulty(const dt_optimizer_run *run) { return run->faults != NULL; }
int dt_run_online(const dt_optimizer_run *run, int node) { return run->online == NULL || run->online[node]; }
int dt_run_tracing(const dt_optimizer_run *run) { return run->trace != NULL; }
double dt_run_max_epochs(const dt_optimizer_run *run) { return run->max_epochs; }

dt_trace *dt_run_trace(const dt_optimizer_run *run) { return run->trace; }
void dt_run_times(const dt_optimizer_run *run, double *compute, double *comm) {
  *compute = run->t_compute.total;
  *comm = run->t_comm.total;
}
void dt_run_set_times(dt_optimizer_run *run, double compute, double comm) {
  run->t_compute.total = compute;
  run->t_comm.total = comm;
}
double dt_run_train_loss(const dt_optimizer_run *run, int l) {
  return run->train_loss_n[l] > 0 ? run->train_loss_sum[l] / run->train_loss_n[l] : NAN;
}
void dt_run_train_loss_totals(const dt_optimizer_run *run, int l, double *sum, long *n) {
  *sum = run->train_loss_sum[l];
  *n = run->train_loss_n[l];
}
void dt_run_train_loss_reset(dt_optimizer_run *run) {
  for (int l = 0; l < run->count; l++) run->train_loss_sum[l] = 0, run->train_loss_n[l] = 0;
}
int dt_run_diverged(const dt_optimizer_run *run) {
  for (int l = 0; l < run->count; l++)
    if (!isfinite(run->train_loss_sum[l])) return 1;
  return 0;
}
double dt_run_sim_time(const dt_optimizer_run *run, int node) { return run->sim_clock != NULL ? run->sim_clock[node] : NAN; }
uint64_t dt_run_events(const dt_optimizer_run *run) { return run->events; }
int dt_run_delivered(const dt_optimizer_run *run, const uint8_t *mask, int e) {
  if (run->delivered != NULL) return run->delivered[e];
  return mask == NULL || mask[e];
}

/* Bytes of one exchange: per_msg for every out-edge of a local node that mask lets carry. */
static void count_sent(dt_optimizer_run *run, const uint8_t *mask, uint64_t per_msg) {
  const dt_graph *g = run->graph;
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l;
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++)
      if (mask == NULL || mask[e]) run->node_bytes[l] += per_msg;
  }
}

/* buffers: mix (dt_run_round): b_i ← Σ_j W_ij b_j over the round's graph. */
static dt_status mix_buffers(dt_optimizer_run *run) {
  const dt_round_graph *rg = &run->round;
  dt_slab *b = dt_task_buffers(run->task), send = dt_exchange_send_slab(run->buffer_exchange, 0);
  DT_TRY(dt_slab_copy(run->be, b, &send));
  const uint8_t *arrive = run->faults != NULL ? run_faults_exchange(run, rg->mask) : rg->mask;
  dt_timer_start(&run->t_comm);
  const dt_status st = dt_exchange_run(run->buffer_exchange, arrive);
  dt_timer_stop(&run->t_comm);
  DT_TRY(st);
  count_sent(run, run->faults != NULL ? run->fault_sent : rg->mask, sizeof(float) * b->dim);
  if (run->net != NULL) DT_TRY(run_clock_exchange(run, arrive, sizeof(float) * (double)b->dim));
  for (int l = 0; l < run->count; l++) {
    const int i = run->first + l, deg = dt_graph_degree(run->graph, i);
    const float *x[deg + 1];
    float w[deg + 1];
    const int k = dt_mix_terms_on(run, run->buffer_exchange, i, 0, x, w, NULL);
    DT_TRY(dt_be_mix(run->be, b->dim, k, x, w, dt_slab_node(b, l)));
  }
  return DT_OK;
}

static dt_status round_steps(const dt_optimizer_def *def, void *state, dt_optimizer_run *run, int k) {
  if (run->schedule != NULL) DT_TRY(dt_schedule_round(run->schedule, k, &run->round));
  if (run->faults != NULL) DT_TRY(run_faults_begin_round(run, k));
  DT_TRY(def->round(state, run, k));
  if (run->buffer_exchange != NULL) DT_TRY(mix_buffers(run));
  return run->faults != NULL ? run_faults_end_round(run) : DT_OK;
}

dt_status dt_run_round(const dt_optimizer_def *def, void *state, dt_optimizer_run *run, int k) {
  const double start = dt_time_now(), comm_before = run->t_comm.total;
  const dt_status st = round_steps(def, state, run, k);
  run->t_compute.total += dt_time_now() - start - (run->t_comm.total - comm_before);
  return st;
}

void dt_run_free(dt_optimizer_run *run) {
  if (run == NULL) return;
  dt_exchange_free(run->exchange);
  dt_exchange_free(run->buffer_exchange);
  /* host rows are copies only off the host; on it they point into the slabs */
  for (int l = 0; run->host_rows != NULL && run->be != NULL && !run->be->host_memory && l < run->count; l++) dt_free(run->host_rows[l]);
  dt_free(run->host_rows);
  if (run->be != NULL) {
    dt_slab_free(run->be, &run->theta);
    dt_be_free(run->be, run->sum);
    dt_be_free(run->be, run->sweep_tmp);
  }
  dt_free(run->loss);
  dt_free(run->train_loss_sum);
  dt_free(run->train_loss_n);
  dt_free(run->node_bytes);
  dt_free(run->items);
  dt_free(run->blob);
  run_clock_free(run);
  run_faults_free(run);
  dt_free(run);
}

dt_status dt_run_gradients(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, const uint8_t *active) {
  if (run->net != NULL) run_clock_before_step(run, active);
  DT_TRY(dt_task_gradients(run->task, x, grad, active, run->loss));
  if (run->net != NULL) run_clock_after_step(run, active);
  for (int l = 0; l < run->count; l++) {
    if (active != NULL && !active[l]) continue;
    run->train_loss_sum[l] += run->loss[l];
    run->train_loss_n[l]++;
  }
  return DT_OK;
}

dt_status dt_run_gradient_node(dt_optimizer_run *run, const dt_slab *x, dt_slab *grad, int l) {
  const int i = run->first + l;
  const uint64_t seen = dt_task_samples_seen(run->task, i);
  DT_TRY(dt_task_gradient_node(run->task, x, grad, l, &run->loss[l]));
  if (run->net != NULL)
    run->sim_clock[i] += dt_network_step_seconds(run->net, i, run->sim_steps[l]++, (double)(dt_task_samples_seen(run->task, i) - seen));
  run->train_loss_sum[l] += run->loss[l];
  run->train_loss_n[l]++;
  return DT_OK;
}

dt_status dt_run_trace_i32(dt_optimizer_run *run, int l, const char *tag, const int32_t *v, size_t n) {
  return dt_trace_i32(run->trace, l, tag, v, n);
}

dt_status dt_run_trace_f32(dt_optimizer_run *run, int l, const char *tag, const float *v, size_t n) {
  return dt_trace_f32(run->trace, l, tag, v, n);
}

dt_status dt_run_exchange(dt_optimizer_run *run, int nvec, dt_exchange **out) {
  return dt_run_exchange_len(run, nvec, run->dim, out);
}

/* The run's exchange, made on first use: per node (nvec vectors) or per edge (one). */
static dt_status run_exchange(dt_optimizer_run *run, int per_edge, int nvec, size_t len, dt_exchange **out) {
  if (run->exchange == NULL) {
    if (per_edge) DT_TRY(dt_exchange_create_edges(run->comm, run->be, run->graph, len, &run->exchange));
    else DT_TRY(dt_exchange_create(run->comm, run->be, run->graph, nvec, len, &run->exchange));
    run->exchange_nvec = nvec;
    run->exchange_len = len;
  }
  *out = run->exchange;
  return DT_OK;
}

dt_status dt_run_exchange_len(dt_optimizer_run *run, int nvec, size_t len, dt_exchange **out) {
  return run_exchange(run, 0, nvec, len, out);
}

dt_status dt_run_exchange_edges(dt_optimizer_run *run, size_t len, dt_exchange **out) {
  return run_exchange(run, 1, 1, len, out);
}

dt_status dt_run_send(dt_optimizer_run *run, int vec, const dt_slab *src) {
  dt_slab dst = dt_exchange_send_slab(run->exchange, vec);
  return dt_slab_copy(run->be, src, &dst);
}

dt_status dt_run_exchange_go(dt_optimizer_run *run, const uint8_t *mask) {
  return dt_run_exchange_go_sized(run, mask, sizeof(float) * run->exchange_len);
}

dt_status dt_run_exchange_go_sized(dt_optimizer_run *run, const uint8_t *mask, size_t bytes) {
  if (mask == NULL) mask = run->round.mask;
  /* the layers of an exchange: the faults decide what is sent and what arrives, the exchange
   * carries it, the clock stamps the arrivals; a run without experiment.network enters neither */
  const uint8_t *arrive = run->faults != NULL ? run_faults_exchange(run, mask) : mask;
  DT_TRY(dt_be_profile_mark(run->be, DT_PHASE_OTHER));
  dt_timer_start(&run->t_comm);
  dt_status st = dt_exchange_run_sized(run->exchange, arrive, bytes);
  dt_timer_stop(&run->t_comm);
  DT_TRY(st);
  DT_TRY(dt_be_profile_mark(run->be, DT_PHASE_EXCHANGE));
  count_sent(run, run->faults != NULL ? run->fault_sent : mask, (uint64_t)run->exchange_nvec * bytes);
  return run->net != NULL ? run_clock_exchange(run, arrive, (double)run->exchange_nvec * (double)bytes) : DT_OK;
}

dt_status dt_run_host_rows(dt_optimizer_run *run, const dt_slab *v, const float *const **rows) {
  dt_status st = DT_OK;
  if (run->host_rows == NULL) DT_ALLOC_GOTO(run->host_rows, run->count, "host rows");
  if (!run->be->host_memory && v->dim > run->host_rows_dim) { /* rows for longer vectors than so far */
    for (int l = 0; l < run->count; l++) {
      dt_free(run->host_rows[l]);
      run->host_rows[l] = NULL;
    }
    run->host_rows_dim = v->dim;
  }
  for (int l = 0; l < run->count; l++) {
    if (run->be->host_memory) {
      run->host_rows[l] = dt_slab_node(v, l);
      continue;
    }
    if (run->host_rows[l] == NULL) DT_ALLOC_GOTO(run->host_rows[l], run->host_rows_dim, "host rows");
    DT_TRY_GOTO(dt_slab_download_node(run->be, v, l, run->host_rows[l]));
  }
  *rows = (const float *const *)run->host_rows;
cleanup:
  return st;
}

dt_status dt_run_sum_nodes(dt_optimizer_run *run, const dt_slab *v, double *sum) {
  dt_status st = DT_OK;
  const float *const *rows;
  double *sum_h = NULL;
  DT_TRY(dt_run_host_rows(run, v, &rows));
  sum_h = run->be->host_memory ? sum : NULL;
  if (sum_h == NULL) DT_ALLOC_GOTO(sum_h, v->dim, "node sum");
  DT_TRY_GOTO(dt_comm_node_sum(run->comm, run->graph->n, rows, v->dim, sum_h));
  DT_TRY_GOTO(dt_be_upload(run->be, sum, sum_h, sizeof(double) * v->dim));
cleanup:
  if (sum_h != sum) dt_free(sum_h);
  return st;
}

/* avg = the sum of v's rows over all nodes, in node order, divided by count. Collective. */
static dt_status mean_over(dt_optimizer_run *run, const dt_slab *v, double count, float *avg) {
  if (run->sum == NULL) DT_TRY(dt_be_alloc(run->be, sizeof(double) * run->dim, (void **)&run->sum));
  DT_TRY(dt_run_sum_nodes(run, v, run->sum));
  return dt_be_mean_of_sum(run->be, run->dim, run->sum, count, avg);
}

dt_status dt_run_mean_uncounted(dt_optimizer_run *run, const dt_slab *v, float *avg) {
  return mean_over(run, v, (double)run->graph->n, avg);
}

dt_status dt_run_node_mean(dt_optimizer_run *run, const dt_slab *v, float *avg) {
  dt_timer_start(&run->t_comm);
  dt_status st = dt_run_mean_uncounted(run, v, avg);
  dt_timer_stop(&run->t_comm);
  DT_TRY(st);
  dt_run_count_to_centre(run);
  if (run->net == NULL) return DT_OK;
  DT_TRY(run_clock_centre(run, NULL, sizeof(float) * (double)run->dim));
  return run_clock_reply(run, NULL, sizeof(float) * (double)run->dim);
}

dt_status dt_run_centre_mean(dt_optimizer_run *run, dt_slab *v, float *avg, int *arrived) {
  const double bytes = sizeof(float) * (double)run->dim;
  const uint8_t *got = dt_run_centre_send(run, 0, NULL, sizeof(float) * run->dim);
  int m = 0;
  for (int i = 0; i < run->graph->n; i++) m += got[i];
  for (int l = 0; l < run->count; l++) /* a push that did not arrive adds nothing */
    if (!got[run->first + l]) DT_TRY(dt_be_fill(run->be, run->dim, 0.0f, dt_slab_node(v, l)));
  *arrived = m;
  if (m > 0) {
    dt_timer_start(&run->t_comm);
    const dt_status st = mean_over(run, v, (double)m, avg);
    dt_timer_stop(&run->t_comm);
    DT_TRY(st);
  }
  return run->net != NULL ? run_clock_centre(run, got, bytes) : DT_OK;
}

dt_status dt_run_centre_reply(dt_optimizer_run *run, const uint8_t *to, size_t counted, const uint8_t **got) {
  *got = dt_run_centre_send(run, 1, to, counted);
  return run->net != NULL ? run_clock_reply(run, *got, sizeof(float) * (double)run->dim) : DT_OK;
}

void dt_run_count_to_centre(dt_optimizer_run *run) {
  /* logically every node sends its vector once, whatever the placement */
  for (int l = 0; l < run->count; l++) run->node_bytes[l] += run->dim * sizeof(float);
}

void dt_run_count_from_centre(dt_optimizer_run *run) {
  if (run->first == 0) run->node_bytes[0] += (uint64_t)run->graph->n * run->dim * sizeof(float);
}

dt_status dt_run_to_centre(dt_optimizer_run *run, const dt_slab *v, const uint8_t *arrives,
                           dt_status (*apply)(void *ctx, int node, const float *x), void *ctx) {
  const float *const *rows;
  DT_TRY(dt_run_host_rows(run, v, &rows));
  dt_timer_start(&run->t_comm);
  const dt_status st = dt_comm_node_stream(run->comm, run->graph->n, rows, run->dim, arrives, apply, ctx);
  dt_timer_stop(&run->t_comm);
  const dt_status clock = run->net != NULL ? run_clock_centre(run, arrives, sizeof(float) * (double)run->dim) : DT_OK;
  return st != DT_OK ? st : clock;
}

dt_status dt_run_from_centre(dt_optimizer_run *run, dt_status centre, float *host) {
  dt_timer_start(&run->t_comm);
  double ok = centre == DT_OK; /* rank 0 tells the others whether it failed */
  dt_status st = dt_comm_bcast(run->comm, &ok, sizeof ok, 0);
  if (st == DT_OK && ok) st = dt_comm_bcast(run->comm, host, sizeof(float) * run->dim, 0);
  dt_timer_stop(&run->t_comm);
  DT_TRY(centre);
  DT_TRY(st);
  DT_CHECK(ok, DT_ERR_INTERNAL, "the parameter server (rank 0) failed; its message is in rank 0's output");
  if (run->centre_up != NULL) { /* under faults: the replies to the nodes online, some lost */
    const uint8_t *got;
    return dt_run_centre_reply(run, NULL, sizeof(float) * run->dim, &got);
  }
  dt_run_count_from_centre(run);
  return run->net != NULL ? run_clock_reply(run, NULL, sizeof(float) * (double)run->dim) : DT_OK;
}

void dt_learners_free(dt_optimizer_run *run, dt_learners *ls) {
  dt_local_opt_free(ls->opt);
  if (run->be != NULL) dt_slab_free(run->be, &ls->grad);
  memset(ls, 0, sizeof *ls);
}

dt_status dt_learners_create(dt_optimizer_run *run, const char *name, int kind, double lr, dt_learners *out) {
  dt_local_opt_spec spec = dt_local_opt_spec_default((dt_local_opt_kind)kind);
  spec.lr = (float)lr;
  return dt_learners_create_spec(run, name, &spec, out);
}

dt_status dt_run_local_opt(dt_optimizer_run *run, const char *name, const dt_local_opt_spec *spec, dt_local_opt **out) {
  DT_TRY(dt_local_opt_create(run->be, spec, run->count, run->dim, out));
  dt_slab *m, *v;
  long *steps;
  char item[64];
  dt_status st = DT_OK;
  dt_local_opt_state(*out, &m, &v, &steps);
  snprintf(item, sizeof item, "%s.steps", name);
  DT_TRY_GOTO(dt_run_keep_nodes(run, item, steps, sizeof(long)));
  snprintf(item, sizeof item, "%s.m", name);
  if (m->data != NULL) DT_TRY_GOTO(dt_run_keep_slab(run, item, m));
  snprintf(item, sizeof item, "%s.v", name);
  if (v->data != NULL) DT_TRY_GOTO(dt_run_keep_slab(run, item, v));
cleanup:
  if (st != DT_OK) dt_local_opt_free(*out), *out = NULL;
  return st;
}

dt_status dt_learners_create_spec(dt_optimizer_run *run, const char *name, const dt_local_opt_spec *spec, dt_learners *out) {
  dt_status st = DT_OK;
  memset(out, 0, sizeof *out);
  DT_TRY_GOTO(dt_run_local_opt(run, name, spec, &out->opt));
  DT_TRY_GOTO(dt_slab_create(run->be, run->count, run->dim, &out->grad));
cleanup:
  if (st != DT_OK) dt_learners_free(run, out);
  return st;
}

dt_status dt_learners_step(dt_optimizer_run *run, dt_learners *ls, float lr, const uint8_t *active) {
  DT_TRY(dt_run_gradients(run, &run->theta, &ls->grad, active));
  if (active == NULL) return dt_local_opt_step_all(ls->opt, &run->theta, &ls->grad, lr);
  for (int l = 0; l < run->count; l++)
    if (active[l]) DT_TRY(dt_local_opt_step(ls->opt, l, dt_slab_node(&run->theta, l), dt_slab_node(&ls->grad, l), lr, NULL));
  return DT_OK;
}

int dt_run_threads(const dt_comm *comm, int count) {
  const char *env = getenv("DT_THREADS");
  int t = env != NULL ? atoi(env) : 0;
  if (t <= 0) {
    t = (int)sysconf(_SC_NPROCESSORS_ONLN) / (comm != NULL ? dt_comm_host_size(comm) : 1); /* NULL: one process */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < t) t = CPU_COUNT(&set);
    const char *slurm = getenv("SLURM_CPUS_PER_TASK"); /* set even where SLURM sets no affinity */
    if (slurm != NULL && atoi(slurm) > 0 && atoi(slurm) < t) t = atoi(slurm);
  }
  if (t > count) t = count;
  return t < 1 ? 1 : t;
}

dt_status dt_run_for_nodes(dt_optimizer_run *run, dt_status (*fn)(void *ctx, int l), void *ctx) {
  return dt_parallel_for(run->count, run->threads, fn, ctx);
}
