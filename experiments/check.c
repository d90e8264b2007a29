/* `dtrun check`: the resolved config plus what it implies — graph figures, the model and its
 * size, rounds and traffic per problem — after building what `run` builds before training (the
 * graph, the data and its split, the model) so that it fails where run would; nothing is run. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dt/graph.h"
#include "dt/backend.h"
#include "dt/data.h"
#include "dt/faults.h"
#include "dt/log.h"
#include "dt/optimizer.h"
#include "dt/problem.h"
#include "dt/run.h"
#include "runner_impl.h"

/* The graph: type, shape, size, degrees, Fiedler value and spectral gap, and its schedule. */
static void print_graph(const dt_config *cfg, const dt_graph *g, const dt_schedule *sched, FILE *out) {
  char shape[64] = "";
  if (g->rows > 0) snprintf(shape, sizeof shape, " (%d rows x %d columns)", g->rows, g->cols);
  if (g->directed)
    fprintf(out, "# graph: directed %s, %d nodes, %d arcs (%d edges in their union), push weights 1/(1 + out-degree)\n",
            dt_graph_type_name(g->type), g->n, g->num_arcs, g->num_edges);
  else
    fprintf(out, "# graph: %s%s, %d nodes, %d edges, mixing %s\n", dt_graph_type_name(g->type), shape, g->n, g->num_edges,
            dt_mixing_name(g->mixing));
  if (g->directed) {
    fprintf(out, "#   out-degrees:");
    for (int i = 0; i < g->n && i < 64; i++) fprintf(out, " %d", dt_graph_out_degree(g, i));
    fprintf(out, "%s\n", g->n > 64 ? " ..." : "");
  }
  fprintf(out, "#   degrees:");
  for (int i = 0; i < g->n && i < 64; i++) fprintf(out, " %d", dt_graph_degree(g, i));
  fprintf(out, "%s\n#   Fiedler value %.6g", g->n > 64 ? " ..." : "", g->fiedler);
  if (g->fiedler_target > 0.0)
    fprintf(out, " (target %g, reached with %s = %.6g on draw %d)", g->fiedler_target,
            g->type == DT_GRAPH_GEOMETRIC ? "radius" : "p", g->threshold, g->attempts);
  if (g->directed) /* complex spectrum: the gap is 1 - |λ2| */
    fprintf(out, " (of the union), spectral gap of W %.6g\n", g->spectral_gap);
  else
    fprintf(out, ", spectral gap of W %.6g, smallest eigenvalue %.6g\n", g->spectral_gap, g->lambda_min);
  if (sched != NULL)
    fprintf(out, "#   time-varying: schedule %s over this graph (the union of the rounds' graphs)%s\n",
            dt_schedule_names[cfg->experiment.graph.schedule],
            cfg->experiment.graph.schedule == DT_SCHEDULE_RESAMPLE ? "; each draw is of the configured type" : "");
}

/* experiment.network: the speeds drawn (stragglers named) and the links' classes. */
static dt_status print_network(const dt_config *cfg, const dt_model *m, FILE *out) {
  const dt_network_spec *ns = &cfg->experiment.network;
  const int n = cfg->experiment.graph.num_nodes;
  dt_network *net = NULL;
  if (ns->speed <= 0) return DT_OK;
  DT_TRY(dt_network_create(ns, n, cfg->experiment.seed, dt_model_flops(m), &net));
  double lo = INFINITY, hi = 0;
  int slow = 0;
  for (int i = 0; i < n; i++) {
    lo = fmin(lo, dt_network_speed(net, i)), hi = fmax(hi, dt_network_speed(net, i));
    slow += dt_network_is_straggler(net, i);
  }
  const char *unit = ns->unit == DT_NETWORK_FLOPS ? "FLOP/s" : "samples/s";
  fprintf(out, "# network (simulated clock): node speeds %.4g to %.4g %s", lo, hi, unit);
  if (ns->jitter > 0) fprintf(out, ", jitter sigma %g per step", ns->jitter);
  if (slow > 0) {
    fprintf(out, "; %d straggler%s (%g times slower):", slow, slow > 1 ? "s" : "", ns->slowdown);
    for (int i = 0, shown = 0; i < n; i++)
      if (dt_network_is_straggler(net, i) && shown++ < 16) fprintf(out, " %d", i);
    if (slow > 16) fprintf(out, " ...");
  }
  fprintf(out, "\n#   links: %g s latency, %.4g bytes/s%s", ns->latency, ns->bandwidth, ns->link_spread > 0 ? " (spread per link)" : "");
  if (ns->nodes_per_host > 0)
    fprintf(out, "; between hosts of %d nodes: %g s, %.4g bytes/s", ns->nodes_per_host, ns->cross_latency, ns->cross_bandwidth);
  fprintf(out, "\n");
  dt_network_free(net);
  return DT_OK;
}

/* experiment.network's faults: the loss, and the share of the time links and nodes are down. */
static void print_faults(const dt_config *cfg, FILE *out) {
  const dt_network_spec *ns = &cfg->experiment.network;
  if (!dt_network_has_faults(ns)) return;
  fprintf(out, "# network faults:");
  const char *sep = "";
  if (ns->loss > 0) {
    fprintf(out, " %.4g%% of the messages lost", 100 * ns->loss);
    if (ns->loss_burst > 1) fprintf(out, " in bursts of %.4g on average", ns->loss_burst);
    sep = ";";
  }
  if (ns->link_up_rounds > 0) {
    fprintf(out, "%s\n#   links fail after %.4g rounds on average, for %.4g (down %.3g%% of rounds)", sep, ns->link_up_rounds,
            ns->link_down_rounds, 100 * ns->link_down_rounds / (ns->link_up_rounds + ns->link_down_rounds));
    sep = ";";
  }
  if (ns->node_up_rounds > 0)
    fprintf(out, "%s\n#   nodes leave after %.4g rounds on average, for %.4g (offline %.3g%% of rounds)", sep, ns->node_up_rounds,
            ns->node_down_rounds, 100 * ns->node_down_rounds / (ns->node_up_rounds + ns->node_down_rounds));
  fprintf(out, "\n");
}

/* The model: its parameter count and its layers. */
/* What the split gave each node: its samples and, for up to 10 classes, how many of each (more
 * classes: how many it holds and its largest class's share); 24 nodes at most, then the last. */
static void print_split(const dt_experiment_config *e, const dt_samples *train, const dt_split *split, FILE *out) {
  static const char *const kinds[] = {"random", "hetero (by class)", "dirichlet"};
  const int nc = train->num_classes, n = split->num_nodes, wide = nc > 10;
  size_t lo = (size_t)-1, hi = 0;
  for (int i = 0; i < n; i++) {
    const size_t k = split->start[i + 1] - split->start[i];
    lo = k < lo ? k : lo, hi = k > hi ? k : hi;
  }
  fprintf(out, "# split: %s", kinds[e->data_split_type]);
  if (e->data_split_type == DT_SPLIT_DIRICHLET) fprintf(out, ", alpha %g", e->dirichlet_alpha);
  fprintf(out, ", %zu samples over %d nodes (%zu to %zu each)\n#   node  samples", split->start[n], n, lo, hi);
  if (wide) fprintf(out, "  classes  largest class (share)\n");
  else {
    for (int c = 0; c < nc; c++) fprintf(out, " %6s%d", "c", c);
    fputc('\n', out);
  }
  int *hist = calloc((size_t)(nc > 0 ? nc : 1), sizeof *hist);
  if (hist == NULL) return;
  for (int i = 0; i < n; i++) {
    if (n > 25 && i == 24) fprintf(out, "#   ... (%d nodes more; a run's split.csv lists every node)\n", n - 25);
    if (n > 25 && i >= 24 && i < n - 1) continue;
    memset(hist, 0, sizeof *hist * (size_t)nc);
    for (size_t s = split->start[i]; s < split->start[i + 1]; s++) hist[train->labels[split->idx[s]]]++;
    const size_t size = split->start[i + 1] - split->start[i];
    fprintf(out, "#   %4d %8zu", i, size);
    if (wide) {
      int held = 0, top = 0;
      for (int c = 0; c < nc; c++) held += hist[c] > 0, top = hist[c] > hist[top] ? c : top;
      fprintf(out, "  %7d  %d (%.2f)\n", held, top, size > 0 ? (double)hist[top] / (double)size : 0.0);
    } else {
      for (int c = 0; c < nc; c++) fprintf(out, " %7d", hist[c]);
      fputc('\n', out);
    }
  }
  free(hist);
}

static void print_model(const dt_model *m, FILE *out) {
  char desc[4096];
  dt_model_describe(m, desc, sizeof desc);
  fprintf(out, "# model: %zu parameters\n", dt_model_num_params(m));
  for (char *line = strtok(desc, "\n"); line != NULL; line = strtok(NULL, "\n")) fprintf(out, "#   %s\n", line);
}

/* Each problem: algorithm, rounds, evaluation, batch, traffic per round (d parameters). */
static dt_status print_problems(const dt_config *cfg, const dt_graph *g, dt_schedule *sched, const dt_model *m, size_t test_count, FILE *out) {
  const size_t d = dt_model_num_params(m);
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
    char batch[32];
    if (pc->full_batch) snprintf(batch, sizeof batch, "full batch");
    else snprintf(batch, sizeof batch, "batch %d", pc->train_batch_size);
    /* on a time-varying graph: the static figure scaled by the share of edges the rounds use */
    double share = 1, active = 0;
    if (sched != NULL && def->traffic_per_edge) {
      DT_TRY(dt_schedule_active_edges(sched, pc->outer_iterations, &active));
      share = g->num_edges > 0 ? active / (2.0 * g->num_edges * pc->outer_iterations) : 1;
    }
    char evals[96] = "";
    if (pc->evaluation.nodes == DT_EVAL_MEAN) snprintf(evals, sizeof evals, " (the mean model)");
    else if (pc->evaluation.sample > 0) snprintf(evals, sizeof evals, " (%d sampled nodes)", pc->evaluation.sample);
    if (pc->evaluation.test_samples > 0 && (size_t)pc->evaluation.test_samples < test_count)
      snprintf(evals + strlen(evals), sizeof evals - strlen(evals), " on %d test samples", pc->evaluation.test_samples);
    fprintf(out, "# problem %s: %s, %d rounds, evaluate every %d%s, %s, %.3g MB sent per round%s\n#   %s\n", pc->problem_name,
            pc->alg_name, pc->outer_iterations, pc->evaluate_frequency, evals, batch, share * dt_optimizer_bytes_per_round(def, g, m, d, pc->alg_opts) / 1e6,
            sched != NULL && def->traffic_per_edge ? " (mean over the rounds)" : "", def->plugin.summary);
    if (def->graph_unused != NULL) fprintf(out, "#   (%s does not use the graph: %s)\n", pc->alg_name, def->graph_unused);
  }
  return DT_OK;
}

/* Full-batch gradient steps above 2/L on softmax regression: a warning (L is cheap to bound there). */
static dt_status warn_steps(const dt_config *cfg, const dt_data *data, const dt_split *split, const dt_model_spec *ms, FILE *out) {
  double half_lambda = -1;
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
    const double step = pc->full_batch && def->gradient_step != NULL ? def->gradient_step(pc->alg_opts) : 0;
    if (step <= 0) continue;
    if (half_lambda < 0) DT_TRY(dt_problem_lipschitz(&data->train, split, ms, &half_lambda));
    if (half_lambda == 0) break; /* not softmax regression */
    const double L = half_lambda + pc->l2;
    if (step > 2 / L)
      fprintf(out, "# warning: problem %s: step %g is above 2/L = %.4g, where L = %.4g bounds every node's gradient\n"
              "#   Lipschitz constant (softmax regression: half the top eigenvalue of the data's Gram matrix, plus l2);\n"
              "#   full-batch gradient steps above 2/L oscillate or diverge\n", pc->problem_name, step, 2 / L, L);
  }
  return DT_OK;
}

/* What the run's backend says of memory: the backend run would make (dt_backend_select, as
 * choose_backend calls it), made and freed; a device backend that cannot start here (no GPU)
 * gives its device's size as not known. */
static dt_memory_backend memory_backend(const dt_config *cfg) {
  char note[320];
  dt_backend *be = NULL;
  if (dt_backend_select(dt_backend_kind_name(cfg->experiment.backend), 1, note, sizeof note, &be) != DT_OK) {
    dt_error_clear();
    return (dt_memory_backend){.host = 0};
  }
  const dt_memory_backend mb = {.host = be->host_memory, .device_memory = (double)be->device_memory, .device_count = be->device_count};
  dt_backend_free(be);
  return mb;
}

dt_status runner_batch_order(const dt_config *cfg, const dt_split *split, size_t train_count, dt_batch_order *out) {
  static const char key[] = "experiment.batch_order";
  memset(out, 0, sizeof *out);
  if (cfg->experiment.batch_order[0] == '\0') return DT_OK;
  for (int k = 0; k < cfg->num_problems; k++)
    if (cfg->problems[k].full_batch)
      return dt_config_positioned(cfg, DT_ERROR_KEY(DT_ERR_CONFIG, key, "%s: problem %s computes full-batch gradients; a minibatch "
                                                    "order has nothing to order", key, cfg->problems[k].key));
  DT_TRY(dt_config_positioned(cfg, dt_batch_order_read(cfg->experiment.batch_order, split, train_count, key, out)));
  dt_status st = DT_OK;
  for (int k = 0; k < cfg->num_problems && st == DT_OK; k++) {
    const dt_problem_config *pc = &cfg->problems[k];
    if (out->widest > pc->train_batch_size)
      st = DT_ERROR_KEY(DT_ERR_CONFIG, key, "%s: %s holds minibatches of %d samples; problem %s's train_batch_size is %d", key,
                        cfg->experiment.batch_order, out->widest, pc->key, pc->train_batch_size);
  }
  if (st != DT_OK) dt_batch_order_free(out);
  return dt_config_positioned(cfg, st);
}

dt_status runner_init_weights(const dt_config *cfg, const dt_model *m, float *params, float *buffers, char sha256[65]) {
  const dt_model_config *mc = &cfg->experiment.model;
  if (mc->init_file[0] == '\0') return DT_OK;
  return dt_config_positioned(cfg, dt_model_init_from_file(m, mc->init_file, mc->init_row, "experiment.model.init_file", params, buffers,
                                                           sha256));
}

dt_status runner_check_setup(const dt_config *cfg, const dt_data *data, dt_split *split, dt_model_spec *ms, dt_model **m) {
  const dt_experiment_config *e = &cfg->experiment;
  DT_TRY(dt_config_positioned(cfg, dt_split_make(&data->train, e, split)));
  DT_TRY(dt_config_positioned(cfg, dt_augment_check(&data->train, e->augment.crop_padding, e->augment.flip)));
  DT_TRY(dt_config_positioned(cfg, dt_problem_model(cfg, &data->train, ms)));
  DT_TRY(dt_config_positioned(cfg, dt_model_create(ms, m)));
  dt_batch_order order;
  DT_TRY(runner_batch_order(cfg, split, data->train.count, &order));
  dt_batch_order_free(&order);
  if (e->model.init_file[0] == '\0') return DT_OK;
  float *params = NULL, *buffers = NULL;
  char sha[65];
  dt_status st = DT_OK;
  DT_ALLOC_GOTO(params, dt_model_num_params(*m) + 1, "initial weights");
  DT_ALLOC_GOTO(buffers, dt_model_num_buffers(*m) + 1, "initial weights");
  st = runner_init_weights(cfg, *m, params, dt_model_num_buffers(*m) > 0 ? buffers : NULL, sha);
cleanup:
  dt_free(params);
  dt_free(buffers);
  return st;
}

/* Adds "WHERE: key: what" to the warning lines in buf (dt_warning_add). */
static void add_warning(const dt_config *cfg, const char *key, char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add_warning(const dt_config *cfg, const char *key, char *buf, size_t size, const char *fmt, ...) {
  char where[DT_PATH_MAX + 200], what[512];
  dt_config_key_where(cfg, key, where, sizeof where);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  dt_warning_add(buf, size, "%s: %s: %s", where, key, what);
}

/* The last round of the longest problem's churn in which some node is online, or -1 when one is
 * online in the last round (or the simulation would be too long to be worth it: n x rounds above
 * 5e7); the churn of dt_faults, as a run draws it. */
static dt_status last_online_round(const dt_config *cfg, const dt_graph *g, int rounds, int *last) {
  *last = -1;
  if (cfg->experiment.network.node_up_rounds <= 0 || (double)g->n * rounds > 5e7) return DT_OK;
  dt_status st = DT_OK;
  dt_faults *f = NULL;
  uint8_t *online = NULL, *up = NULL;
  DT_TRY_GOTO(dt_faults_create(&cfg->experiment.network, g, cfg->experiment.seed, &f));
  DT_ALLOC_GOTO(online, g->n, "churn");
  DT_ALLOC_GOTO(up, 2 * (size_t)g->num_edges + 1, "churn");
  int seen = -1;
  for (int k = 0; k < rounds; k++) {
    dt_faults_round(f, k, online, up);
    for (int i = 0; i < g->n; i++)
      if (online[i]) {
        seen = k;
        break;
      }
  }
  *last = seen == rounds - 1 ? -1 : seen;
cleanup:
  dt_free(online);
  dt_free(up);
  dt_faults_free(f);
  return st;
}

dt_status runner_setup_warnings(const dt_config *cfg, const dt_data *data, const dt_graph *g, char *buf, size_t size) {
  buf[0] = '\0';
  int longest = 0;
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    longest = pc->outer_iterations > longest ? pc->outer_iterations : longest;
    if ((size_t)pc->evaluation.test_samples <= data->test.count) continue;
    char key[DT_NAME_MAX + 64];
    snprintf(key, sizeof key, "problem_configs.%s.evaluation.test_samples", pc->key);
    add_warning(cfg, key, buf, size, "%d is more than the test set's %zu samples: every evaluation uses all %zu", pc->evaluation.test_samples,
                data->test.count, data->test.count);
  }
  int last = -1;
  DT_TRY(last_online_round(cfg, g, longest, &last));
  if (last >= 0)
    add_warning(cfg, "experiment.network.node_up_rounds", buf, size,
                "with node_down_rounds %g, every node is offline from round %d to the end (round %d): nothing is computed after "
                "round %d", cfg->experiment.network.node_down_rounds, last + 1, longest, last + 1);
  return DT_OK;
}

/* Prints warning lines ("# warning: LINE" to out, or dt_log_warn when out is NULL). */
void runner_print_warnings(const char *lines, FILE *out) {
  for (const char *w = lines; *w != '\0';) {
    const char *nl = strchr(w, '\n');
    const int len = nl != NULL ? (int)(nl - w) : (int)strlen(w);
    if (out != NULL) fprintf(out, "# warning: %.*s\n", len, w);
    else dt_log_warn("%.*s", len, w);
    w += len + (nl != NULL);
  }
}

dt_status dt_experiment_check(const dt_config *cfg, FILE *out) {
  dt_status st = DT_OK;
  dt_graph *g = NULL;
  dt_schedule *sched = NULL;
  dt_model *m = NULL;
  dt_data data;
  dt_split split;
  char more[4096];
  memset(&data, 0, sizeof data);
  memset(&split, 0, sizeof split);
  /* everything `run` would reject before training, with the same messages: the graph, the data
   * files, the split, augmentation of data that are not images, the model on the data's shape,
   * the output folder */
  DT_TRY_GOTO(dt_graph_from_config(cfg, &g));
  DT_TRY_GOTO(dt_schedule_from_config(cfg, g, &sched));
  DT_TRY_GOTO(dt_optimizers_admit(cfg, g));
  DT_TRY_GOTO(dt_config_positioned(cfg, dt_data_load(&cfg->experiment, &data)));
  dt_model_spec ms;
  DT_TRY_GOTO(runner_check_setup(cfg, &data, &split, &ms, &m));
  /* the memory of a run with every node in one process (as `dtrun CONFIG` runs it); where that
   * does not fit, the fewest ranks (one per host) that do, refused only when one node per rank
   * does not */
  dt_memory mem, fewest;
  const dt_memory_backend host = memory_backend(cfg);
  int min_ranks = 1;
  DT_TRY_GOTO(dt_memory_estimate(cfg, &data, g, m, 1, dt_run_threads(NULL, INT_MAX), host, &mem));
  fewest = mem;
  while (dt_memory_over(&fewest) && min_ranks < g->n) {
    min_ranks++;
    DT_TRY_GOTO(dt_memory_estimate(cfg, &data, g, m, min_ranks, dt_run_threads(NULL, INT_MAX), host, &fewest));
  }
  DT_TRY_GOTO(dt_memory_check(cfg, &fewest));
  if (cfg->experiment.writeout) DT_TRY_GOTO(dt_config_positioned(cfg, dt_output_check(cfg)));
  DT_TRY_GOTO(dt_config_emit(cfg, &dt_builtin, out));
  fprintf(out, "# ---- summary ----\n");
  print_graph(cfg, g, sched, out);
  DT_TRY_GOTO(print_network(cfg, m, out));
  print_faults(cfg, out);
  print_split(&cfg->experiment, &data.train, &split, out);
  print_model(m, out);
  DT_TRY_GOTO(print_problems(cfg, g, sched, m, data.test.count, out));
  dt_memory_print(cfg, &mem, out);
  if (min_ranks > 1) {
    char a[24], b[24], gpu[48] = "";
    if (fewest.device > 0) snprintf(gpu, sizeof gpu, " and %s of GPU memory", dt_memory_text(fewest.device, b, sizeof b));
    fprintf(out, "#   more than this host has: run it with at least %d ranks, one per host (about %s%s per rank)\n", min_ranks,
            dt_memory_text(fewest.total, a, sizeof a), gpu);
  }
  DT_TRY_GOTO(warn_steps(cfg, &data, &split, &ms, out));
  char order[1024];
  if (dt_config_order_note(cfg, "# ", order, sizeof order)) fputs(order, out);
  runner_print_warnings(cfg->warnings, out);
  DT_TRY_GOTO(runner_setup_warnings(cfg, &data, g, more, sizeof more));
  runner_print_warnings(more, out);
cleanup:
  dt_model_free(m);
  dt_schedule_free(sched);
  dt_graph_free(g);
  dt_split_free(&split);
  dt_data_free(&data);
  return st;
}

dt_status dt_experiment_time(dt_comm *comm, const dt_config *cfg, int points, FILE *out) {
  enum { ROUNDS = 4 }; /* the first warms up; the rounds after it are timed */
  static dt_config cal;
  double seconds[DT_MAX_PROBLEMS][2];
  cal = *cfg;
  cal.experiment.writeout = false;
  cal.experiment.tensorboard = false;
  for (int p = 0; p < cal.num_problems; p++) {
    dt_problem_config *pc = &cal.problems[p];
    pc->outer_iterations = pc->outer_iterations < ROUNDS ? pc->outer_iterations : ROUNDS;
    pc->evaluate_frequency = pc->outer_iterations; /* round 0 and the last */
    seconds[p][0] = seconds[p][1] = 0;
  }
  fprintf(out, "# ---- time (check --time: %d rounds of every problem, measured here) ----\n", ROUNDS);
  fflush(out);
  const dt_run_options ro = {.quiet = 1, .progress = DT_PROGRESS_NEVER, .calibration = seconds, .watchdog = 0};
  const double t0 = dt_time_now();
  DT_TRY(dt_experiment_run(comm, &cal, &ro));
  double used = 0, total = 0;
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const int evals = pc->outer_iterations / pc->evaluate_frequency + 1 + (pc->outer_iterations % pc->evaluate_frequency != 0);
    const double t = pc->outer_iterations * seconds[p][0] + evals * seconds[p][1];
    used += ROUNDS * seconds[p][0] + 2 * seconds[p][1];
    total += t;
    fprintf(out, "#   %-16s %6d rounds x %8.3g s + %4d evaluations x %7.3g s = %s\n", pc->problem_name, pc->outer_iterations,
            seconds[p][0], evals, seconds[p][1], runner_clock_text(t));
  }
  const double setup = fmax(dt_time_now() - t0 - used, 0); /* data, graph, model: what a run does once */
  char threads[64];
  snprintf(threads, sizeof threads, "1 process, %d thread%s", dt_run_threads(NULL, INT_MAX), dt_run_threads(NULL, INT_MAX) > 1 ? "s" : "");
  if (points > 1)
  {
    char per[32];
    snprintf(per, sizeof per, "%s", runner_clock_text(total + setup));
    fprintf(out, "#   about %s per point (setup %.2g s) and %s for the sweep's %d points, here (%s)\n", per, setup,
            runner_clock_text(points * (total + setup)), points, threads);
  }
  else
    fprintf(out, "#   about %s for the run (setup %.2g s), here (%s; mpirun's ranks divide the computation)\n",
            runner_clock_text(total + setup), setup, threads);
  return DT_OK;
}
