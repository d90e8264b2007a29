/* Every optimizer on the convex problem (multinomial logistic regression with L2 on synthetic
 * data split over 5 nodes of a connected graph, full-batch gradients). The test computes the
 * centralized optimum itself, then checks each algorithm: CADMM, DSGT and centralized reach a
 * relative objective gap below 1e-3 and a relative consensus error below 1e-3; DSGD and gossip
 * (decaying steps) below 1e-2; solo must NOT get below 1e-2 (the control).
 * The "result:" lines must be identical for every rank count (tests/mpi/ranks.sh).
 * usage: test_convex [alg ...]  (default: all) */
#include <math.h>
#include <stdlib.h>

#include "../unit/check.h"
#include "dt/optimizer.h"
#include "dt/problem.h"
#include "dt/run.h"

static const char *const base_yaml =
    "experiment:\n"
    "  name: convex\n"
    "  dataset: synthetic\n"
    "  synthetic: {samples: 1000, features: 10}\n"
    "  data_split_type: random\n"
    "  seed: 3\n"
    "  graph: %s\n"
    "problem_configs:\n"
    "  p: {full_batch: true, l2: 0.01, optimizer_config: %s}\n";

#define WHEEL "{num_nodes: 5, type: wheel}"

typedef struct algo_case {
  const char *name, *opts;
  const char *graph; /* experiment.graph, or NULL: the 5-node wheel */
  double gap_bound, cons_bound;
  int must_fail; /* the control: must stay above gap_bound */
} algo_case;

static const algo_case cases[] = {
    {"cadmm", "{alg_name: cadmm, outer_iterations: 400, rho_init: 0.5, primal_iterations: 10, primal_optimizer: sgd, primal_lr: 0.1}", NULL, 1e-3, 1e-3, 0},
    {"dsgt", "{alg_name: dsgt, outer_iterations: 600, alpha: 0.5}", NULL, 1e-3, 1e-3, 0},
    {"centralized", "{alg_name: centralized, outer_iterations: 400, mode: gradient, optimizer: sgd, lr: 1.0}", NULL, 1e-3, 1e-3, 0},
    {"centralized_model", "{alg_name: centralized, outer_iterations: 400, mode: model, optimizer: sgd, lr: 1.0}", NULL, 1e-2, 1e-3, 0},
    {"dsgd", "{alg_name: dsgd, outer_iterations: 1500, alpha0: 0.5, mu: 0.02}", NULL, 1e-2, 1e-2, 0},
    {"dsgd_sequential", "{alg_name: dsgd, outer_iterations: 1500, alpha0: 0.5, mu: 0.02, update_order: sequential}", NULL, 1e-2, 1e-2, 0},
    /* The reference's in-place sweep does not conserve the sum of the trackers (Gauss–Seidel
     * mixing is not column-stochastic), so it reaches consensus at a biased point: only
     * consensus and rank-count independence are asserted. */
    {"dsgt_sequential", "{alg_name: dsgt, outer_iterations: 600, alpha: 0.3, update_order: sequential}", NULL, INFINITY, 1e-3, 0},
    {"gossip", "{alg_name: gossip, outer_iterations: 1500, mode: pairwise, lr: 0.5, mu: 0.02}", NULL, 1e-2, 1e-2, 0},
    {"gossip_push", "{alg_name: gossip, outer_iterations: 1500, mode: push, p: 0.7, lr: 0.5, mu: 0.02}", NULL, 1e-2, 1e-2, 0},
    {"easgd", "{alg_name: easgd, outer_iterations: 1500, alpha: 0.1, lr: 0.5, mu: 0.02}", NULL, 1e-2, 1e-2, 0},
    {"easgd_mpi_learn", "{alg_name: easgd, outer_iterations: 1500, elastic_force: 0.1, sync_every: 4, elastic_lr: 0.2, elastic_momentum: 0.5, mu: 0.05}", NULL, 1e-2, 1e-2, 0},
    {"downpour", "{alg_name: downpour, outer_iterations: 400, lr: 0.1}", NULL, 1e-3, 1e-3, 0},
    {"downpour_stale0", "{alg_name: downpour, outer_iterations: 800, lr: 0.05}", NULL, 1e-3, 1e-3, 0},
    {"downpour_stale4", "{alg_name: downpour, outer_iterations: 800, lr: 0.05, max_staleness: 4}", NULL, 1e-3, 1e-3, 0},
    {"choco_top_k", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: top_k, ratio: 0.2}}", NULL, 1e-2, 1e-2, 0},
    {"choco_qsgd", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: qsgd, levels: 16}}", NULL, 1e-2, 1e-2, 0},
    {"choco_random_k", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.2, compression: {operator: random_k, ratio: 0.3}}", NULL, 1e-2, 1e-2, 0},
    {"choco_sign", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: sign}}", NULL, 1e-2, 1e-2, 0},
    /* time-varying graphs (experiment.graph.schedule): DSGT reaches the optimum on each */
    {"dsgt_one_peer", "{alg_name: dsgt, outer_iterations: 800, alpha: 0.3}", "{num_nodes: 5, type: exponential, schedule: one_peer_exponential}", 1e-3, 1e-3, 0},
    {"dsgt_matching", "{alg_name: dsgt, outer_iterations: 1200, alpha: 0.2}", "{num_nodes: 5, type: wheel, schedule: random_matching}", 1e-3, 1e-3, 0},
    {"dsgt_resample", "{alg_name: dsgt, outer_iterations: 800, alpha: 0.3}", "{num_nodes: 5, type: random, p: 0.5, schedule: resample, resample_every: 7}", 1e-3, 1e-3, 0},
    {"dsgd_one_peer", "{alg_name: dsgd, outer_iterations: 1500, alpha0: 0.5, mu: 0.02}", "{num_nodes: 5, type: exponential, schedule: one_peer_exponential}", 1e-2, 1e-2, 0},
    {"choco_one_peer", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: top_k, ratio: 0.2}}", "{num_nodes: 5, type: exponential, schedule: one_peer_exponential}", 1e-2, 1e-2, 0},
    {"choco_matching", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: qsgd, levels: 16}}", "{num_nodes: 5, type: wheel, schedule: random_matching}", 1e-2, 1e-2, 0},
    {"choco_resample", "{alg_name: choco, outer_iterations: 1500, lr: 0.5, mu: 0.02, gamma: 0.2, compression: {operator: random_k, ratio: 0.3}}", "{num_nodes: 5, type: random, p: 0.5, schedule: resample, resample_every: 7}", 1e-2, 1e-2, 0},
    /* a resample schedule that never resamples runs the per-edge form on a static graph, where it
     * is Choco itself: uncompressed (top_k of every coordinate, so no selection can flip), it
     * must end where the static form does, to rounding (checked below; 100 rounds, because the
     * rounding differences grow with the rounds) */
    {"choco_static_random", "{alg_name: choco, outer_iterations: 100, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: top_k, ratio: 1.0}}", "{num_nodes: 5, type: random, p: 0.5}", INFINITY, INFINITY, 0},
    {"choco_per_edge_static", "{alg_name: choco, outer_iterations: 100, lr: 0.5, mu: 0.02, gamma: 0.4, compression: {operator: top_k, ratio: 1.0}}", "{num_nodes: 5, type: random, p: 0.5, schedule: resample, resample_every: 100000}", INFINITY, INFINITY, 0},
    {"gossip_matching", "{alg_name: gossip, outer_iterations: 1500, mode: pairwise, lr: 0.5, mu: 0.02}", "{num_nodes: 5, type: complete, schedule: random_matching}", 1e-2, 1e-2, 0},
    {"solo", "{alg_name: solo, outer_iterations: 600, optimizer: sgd, lr: 0.5}", NULL, 1e-2, 0, 1},
};

static int case_named(const char *name) {
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    if (strcmp(cases[c].name, name) == 0) return (int)c;
  return -1;
}

typedef struct world {
  dt_comm *comm;
  dt_backend *be;
  dt_config cfg;
  dt_graph *graph;
  dt_data data;
  dt_split split;
  dt_task *task;
  int first, count, n;
  size_t d;
} world;

/* F(x) = (1/N) Σ_i f_i(x) for one vector x known to every rank, summed in node order. */
static double global_objective(world *w, const float *x) {
  float *vals = calloc((size_t)w->count, sizeof(float) * 16);
  const float **rows = calloc((size_t)w->count, sizeof(float *));
  double out[16] = {0};
  for (int l = 0; l < w->count; l++) {
    double v = 0;
    CHECK_OK(dt_task_objective(w->task, w->first + l, x, &v));
    /* split the double into two floats so the ordered float sum stays exact enough */
    vals[16 * l] = (float)v;
    vals[16 * l + 1] = (float)(v - (double)(float)v);
    rows[l] = vals + 16 * l;
  }
  /* dt_comm_node_sum sums float vectors; use a 2-float vector per node */
  CHECK_OK(dt_comm_node_sum(w->comm, w->n, rows, 2, out));
  free(vals);
  free(rows);
  return (out[0] + out[1]) / w->n;
}

/* The optimum by full-batch gradient descent with backtracking, to a gradient norm of 1e-7. */
static double optimum(world *w, float *x) {
  float *g = calloc(w->d, sizeof(float)), *xn = calloc(w->d, sizeof(float));
  double *sum = calloc(w->d, sizeof(double));
  float loss[64];
  dt_slab th, grads;
  const float **rows = calloc((size_t)w->count, sizeof(float *));
  CHECK_OK(dt_slab_create(w->be, w->count, w->d, &th));
  CHECK_OK(dt_slab_create(w->be, w->count, w->d, &grads));
  for (int l = 0; l < w->count; l++) rows[l] = dt_slab_node(&grads, l);
  dt_task_init_params(w->task, 0, x);
  double f = global_objective(w, x), step = 1.0;
  for (int it = 0; it < 5000; it++) {
    CHECK_OK(dt_slab_broadcast_host(w->be, x, &th));
    CHECK_OK(dt_task_gradients(w->task, &th, &grads, NULL, loss));
    CHECK_OK(dt_comm_node_sum(w->comm, w->n, rows, w->d, sum));
    double gn = 0;
    for (size_t q = 0; q < w->d; q++) {
      g[q] = (float)(sum[q] / w->n);
      gn += (double)g[q] * g[q];
    }
    if (sqrt(gn) < 1e-7) break;
    for (;;) {
      for (size_t q = 0; q < w->d; q++) xn[q] = x[q] - (float)step * g[q];
      double fn = global_objective(w, xn);
      if (fn <= f - 0.5 * step * gn || step < 1e-6) {
        memcpy(x, xn, sizeof(float) * w->d);
        f = fn;
        step *= 1.5;
        break;
      }
      step *= 0.5;
    }
  }
  dt_slab_free(w->be, &th);
  dt_slab_free(w->be, &grads);
  free(g), free(xn), free(sum), free(rows);
  return f;
}

/* Each case's worst gap and consensus error, to tell cases apart (gap -1: not run). */
static double case_gap[64], case_cons[64];

static void run_case(world *w, const algo_case *c, double fstar, double *gap_out, double *cons_out) {
  char yaml[2048];
  snprintf(yaml, sizeof yaml, base_yaml, c->graph != NULL ? c->graph : WHEEL, c->opts);
  dt_config cfg;
  CHECK_OK(dt_config_load_string(yaml, strlen(yaml), c->name, &dt_builtin, NULL, 0, &cfg));
  const dt_problem_config *pc = &cfg.problems[0];
  const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
  /* the case's graph and schedule (the data and the split do not depend on them) */
  dt_graph *graph = NULL;
  dt_schedule *sched = NULL;
  CHECK_OK(dt_graph_from_config(&cfg, &graph));
  CHECK_OK(dt_schedule_from_config(&cfg, graph, &sched));
  if (graph == NULL) return;
  dt_optimizer_run run;
  /* P=1: threads; P=5: one each */
  CHECK_OK(dt_run_init(&run, w->comm, graph, pc, w->task, cfg.experiment.seed, w->first, w->count));
  run.schedule = sched;
  float *x0 = calloc(w->d, sizeof(float));
  dt_task_init_params(w->task, cfg.experiment.seed, x0);
  CHECK_OK(dt_slab_broadcast_host(w->be, x0, &run.theta));
  free(x0);
  CHECK_OK(dt_task_begin(w->task, pc->train_batch_size, pc->full_batch, pc->l2));
  void *state = NULL;
  CHECK_OK(def->create(&run, pc->alg_opts, &state));
  for (int k = 0; k < pc->outer_iterations && state != NULL; k++) CHECK_OK(dt_run_round(def, state, &run, k));
  if (state != NULL) def->destroy(state);
  /* the traffic the plug-in declares is what the exchange counted (deterministic algorithms) */
  double bytes = 0;
  for (int l = 0; l < w->count; l++) bytes += (double)run.node_bytes[l];
  CHECK_OK(dt_comm_allreduce_sum_f64(w->comm, &bytes, 1));
  /* (on a time-varying graph: the static figure times the share of edges the rounds used) */
  double active = 2.0 * graph->num_edges * pc->outer_iterations;
  if (sched != NULL) CHECK_OK(dt_schedule_active_edges(sched, pc->outer_iterations, &active));
  const double declared = def->bytes_per_round(graph, w->d, pc->alg_opts) * pc->outer_iterations * active /
                          (2.0 * graph->num_edges * pc->outer_iterations);
  if (strcmp(pc->alg_name, "gossip") != 0)
    CHECK(bytes == declared, "%s: sent %.0f bytes, declared %.0f", c->name, bytes, declared);

  /* worst node: relative gap of F at x_i, and ‖x_i − x̄‖/‖x̄‖ */
  double *mean = calloc(w->d, sizeof(double));
  const float *const *rows;
  CHECK_OK(dt_run_host_rows(&run, &run.theta, &rows));
  CHECK_OK(dt_comm_node_sum(w->comm, w->n, rows, w->d, mean));
  double mnorm = 0;
  for (size_t q = 0; q < w->d; q++) mnorm += (mean[q] / w->n) * (mean[q] / w->n);
  mnorm = sqrt(mnorm);
  double worst_gap = 0, worst_cons = 0;
  float *xi = calloc(w->d, sizeof(float));
  for (int i = 0; i < w->n; i++) {
    /* every rank evaluates F at node i's vector: rank of i broadcasts it */
    if (i >= w->first && i < w->first + w->count) memcpy(xi, rows[i - w->first], sizeof(float) * w->d);
    CHECK_OK(dt_comm_bcast(w->comm, xi, sizeof(float) * w->d, dt_placement_rank(w->n, dt_comm_size(w->comm), i)));
    double gap = (global_objective(w, xi) - fstar) / fabs(fstar), cons = 0;
    for (size_t q = 0; q < w->d; q++) cons += (xi[q] - mean[q] / w->n) * (xi[q] - mean[q] / w->n);
    cons = sqrt(cons) / mnorm;
    /* not fmax, which drops a NaN: a run that diverged must fail */
    if (isnan(gap) || gap > worst_gap) worst_gap = isnan(worst_gap) ? worst_gap : gap;
    if (isnan(cons) || cons > worst_cons) worst_cons = isnan(worst_cons) ? worst_cons : cons;
  }
  if (dt_comm_rank(w->comm) == 0) printf("result: %-18s gap %.6e consensus %.6e\n", c->name, worst_gap, worst_cons);
  *gap_out = worst_gap;
  *cons_out = worst_cons;
  if (c->must_fail) {
    CHECK(worst_gap > c->gap_bound, "%s (the control) reached gap %g < %g: the test could not tell", c->name, worst_gap, c->gap_bound);
  } else {
    CHECK(worst_gap < c->gap_bound, "%s: relative objective gap %g, must be < %g", c->name, worst_gap, c->gap_bound);
    CHECK(worst_cons < c->cons_bound, "%s: relative consensus error %g, must be < %g", c->name, worst_cons, c->cons_bound);
  }
  dt_run_free(&run);
  dt_schedule_free(sched);
  dt_graph_free(graph);
  free(mean), free(xi);
}

int main(int argc, char **argv) {
  world w;
  memset(&w, 0, sizeof w);
  if (dt_comm_init(&argc, &argv, &w.comm) != DT_OK) return 1;
  char yaml[2048];
  snprintf(yaml, sizeof yaml, base_yaml, WHEEL, "{alg_name: solo}");
  CHECK_OK(dt_config_load_string(yaml, strlen(yaml), "convex", &dt_builtin, NULL, 0, &w.cfg));
  w.n = w.cfg.experiment.graph.num_nodes;
  const int P = dt_comm_size(w.comm), rank = dt_comm_rank(w.comm);
  w.first = dt_placement_first(w.n, P, rank);
  w.count = dt_placement_count(w.n, P, rank);
  CHECK_OK(dt_graph_from_config(&w.cfg, &w.graph));
  CHECK_OK(dt_data_load(&w.cfg.experiment, &w.data));
  CHECK_OK(dt_split_make(&w.data.train, &w.cfg.experiment, &w.split));
  dt_model_spec ms;
  CHECK_OK(dt_problem_model(&w.cfg, &w.data.train, &ms));
  CHECK_OK(dt_backend_cpu_create(dt_run_threads(w.comm, w.count), &w.be));
  CHECK_OK(dt_task_create(w.be, &w.data.train, &w.data.test, &w.split, &ms, w.first, w.count, w.cfg.experiment.seed, &w.task));
  if (check_failures == 0) {
    w.d = dt_task_dim(w.task);
    CHECK_OK(dt_task_begin(w.task, 64, 1, 0.01));
    float *xstar = calloc(w.d, sizeof(float));
    double fstar = optimum(&w, xstar);
    if (rank == 0) printf("result: optimum F* = %.9f (%zu parameters)\n", fstar, w.d);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int selected = argc < 2;
      for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], cases[c].name) == 0;
      case_gap[c] = -1;
      if (selected) run_case(&w, &cases[c], fstar, &case_gap[c], &case_cons[c]);
    }
    /* staleness is at work: the same Downpour with stale pushes ends elsewhere */
    const int fresh = case_named("downpour_stale0"), stale = case_named("downpour_stale4");
    if (case_gap[fresh] >= 0 && case_gap[stale] >= 0)
      CHECK(case_gap[fresh] != case_gap[stale], "max_staleness 4 changed nothing (gap %.9e both)", case_gap[fresh]);
    /* Choco's per-edge form is Choco on a graph that does not change (rounding aside: measured
     * 3e-8 after one round and 6e-6 after 100) */
    const int plain = case_named("choco_static_random"), edges = case_named("choco_per_edge_static");
    if (case_gap[plain] >= 0 && case_gap[edges] >= 0) {
      CHECK(fabs(case_gap[plain] - case_gap[edges]) <= 1e-4 * case_gap[plain] &&
                fabs(case_cons[plain] - case_cons[edges]) <= 1e-4 * case_cons[plain],
            "choco per edge on a static graph: gap %.9e consensus %.9e, static form %.9e %.9e", case_gap[edges], case_cons[edges],
            case_gap[plain], case_cons[plain]);
      if (rank == 0)
        printf("result: choco per edge vs static: gap %.3e, consensus %.3e relative difference\n",
               fabs(case_gap[plain] - case_gap[edges]) / case_gap[plain], fabs(case_cons[plain] - case_cons[edges]) / case_cons[plain]);
    }
    free(xstar);
  }
  double fails = check_failures;
  if (dt_comm_allreduce_sum_f64(w.comm, &fails, 1) != DT_OK) { /* the other ranks' counts are unknown */
    fprintf(stderr, "summing the failure counts failed: %s\n", dt_error_message());
    fails += 1;
  }
  if (rank == 0) printf("test_convex: %d checks on rank 0, %.0f failed on all ranks\n", check_count, fails);
  dt_task_free(w.task);
  dt_split_free(&w.split);
  dt_data_free(&w.data);
  dt_graph_free(w.graph);
  dt_backend_free(w.be);
  if (dt_comm_finalize(w.comm) != DT_OK) {
    fprintf(stderr, "dt_comm_finalize failed: %s\n", dt_error_message());
    fails += 1;
  }
  return fails == 0 ? 0 : 1;
}
