/* Mixing weights, spectral figures, fingerprint, YAML output and node placement.
 * The spectra use LAPACK's dsyev on dense matrices: graphs here have at most a few thousand
 * nodes, and an exact eigensolver is simpler and more trustworthy than an iterative one. */
#include <math.h>
#include <string.h>

#include "../core/core_impl.h"
#include "dt/yaml.h"
#include "graph_impl.h"

/* LAPACK (from OpenBLAS), Fortran calling convention with hidden string lengths. */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info, size_t jobz_len,
                   size_t uplo_len);
extern void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda, double *wr,
                   double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr, double *work,
                   const int *lwork, int *info, size_t jobvl_len, size_t jobvr_len);

static const char *const mixing_names[DT_MIXING_COUNT] = {
    [DT_MIXING_METROPOLIS] = "metropolis",
    [DT_MIXING_UNIFORM] = "uniform",
};

const char *dt_mixing_name(dt_mixing m) {
  return (unsigned)m < DT_MIXING_COUNT ? mixing_names[m] : "unknown";
}

/* Push weights of a directed graph (see dt_graph): W_ij = 1/(1 + out-degree of j) for j -> i,
 * W_ii = 1/(1 + out-degree of i); each column sums to 1 (checked). */
static dt_status push_weights(dt_graph *g) {
  dt_status st = DT_OK;
  double *col = NULL, *share = NULL; /* share[j] = 1/(1 + out-degree of j), counted once per node */
  DT_ALLOC_GOTO(col, (size_t)g->n, "mixing weights");
  DT_ALLOC_GOTO(share, (size_t)g->n, "mixing weights");
  for (int i = 0; i < g->n; i++) share[i] = 1.0 / (1.0 + dt_graph_out_degree(g, i));
  for (int i = 0; i < g->n; i++) {
    g->w_self[i] = share[i];
    col[i] += g->w_self[i];
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) {
      const int j = g->nbr[k], back = dt_graph_nbr_index(g, j, i);
      DT_ASSERT_GOTO(back >= 0);
      g->w_nbr[k] = g->out_mask[g->nbr_start[j] + back] ? share[j] : 0.0;
      col[j] += g->w_nbr[k];
    }
  }
  for (int j = 0; j < g->n; j++) DT_ASSERT_GOTO(fabs(col[j] - 1.0) < 1e-12);
cleanup:
  dt_free(col);
  dt_free(share);
  return st;
}

dt_status dt_graph_mixing_compute(dt_graph *g) {
  if (g->directed) return push_weights(g);
  int max_deg = 0;
  for (int i = 0; i < g->n; i++) max_deg = dt_graph_degree(g, i) > max_deg ? dt_graph_degree(g, i) : max_deg;
  for (int i = 0; i < g->n; i++) {
    double sum = 0.0;
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) {
      int j = g->nbr[k];
      int dmax = dt_graph_degree(g, i) > dt_graph_degree(g, j) ? dt_graph_degree(g, i) : dt_graph_degree(g, j);
      g->w_nbr[k] = g->mixing == DT_MIXING_UNIFORM ? 1.0 / (1.0 + max_deg) : 1.0 / (1.0 + dmax);
      sum += g->w_nbr[k];
    }
    g->w_self[i] = 1.0 - sum;
  }
  /* Both rules are symmetric and doubly stochastic by construction; check it anyway, since the
   * consensus guarantees of every algorithm rest on it. */
  for (int i = 0; i < g->n; i++) {
    double row = g->w_self[i];
    DT_ASSERT(g->w_self[i] >= -1e-12);
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) {
      int j = g->nbr[k];
      int back = dt_graph_nbr_index(g, j, i);
      DT_ASSERT(back >= 0 && g->w_nbr[g->nbr_start[j] + back] == g->w_nbr[k]);
      row += g->w_nbr[k];
    }
    DT_ASSERT(fabs(row - 1.0) < 1e-12);
  }
  return DT_OK;
}

/* A stop signal before a dense eigensolver starts: one solve is the longest step of a graph's
 * set-up that cannot look at it (about 7 s at 4,096 nodes on two cores; a Fiedler-targeted
 * random graph does tens of them). */
static dt_status not_stopped(const char *what) {
  DT_CHECK(!dt_stop_requested(), DT_ERR_INTERRUPTED, "interrupted by signal %d before the %s", dt_stop_requested(), what);
  return DT_OK;
}

/* Eigenvalues (ascending) of the dense symmetric n x n matrix a (overwritten). */
static dt_status sym_eigenvalues(int n, double *a, double *w) {
  dt_status st = DT_OK;
  double *work = NULL, query = 0.0;
  int lwork = -1, info = 0;
  DT_TRY(not_stopped("eigenvalues of a graph's matrix"));
  dsyev_("N", "U", &n, a, &n, w, &query, &lwork, &info, 1, 1);
  DT_LAPACK_GOTO(info);
  lwork = (int)query;
  DT_ALLOC_GOTO(work, lwork, "eigensolver workspace");
  dsyev_("N", "U", &n, a, &n, w, work, &lwork, &info, 1, 1);
  DT_LAPACK_GOTO(info);
cleanup:
  dt_free(work);
  return st;
}

/* 1 - |λ2| of the dense, not symmetric n x n matrix a (overwritten; row-major, which LAPACK
 * reads as the transpose: the same eigenvalues). The largest modulus is 1 (a stochastic matrix). */
static dt_status directed_gap(int n, double *a, double *gap) {
  dt_status st = DT_OK;
  double *wr = NULL, *wi = NULL, *work = NULL, query = 0.0, dummy = 0.0;
  int lwork = -1, info = 0, one = 1;
  DT_TRY(not_stopped("eigenvalues of a directed graph's matrix"));
  DT_ALLOC_GOTO(wr, n, "eigenvalues");
  DT_ALLOC_GOTO(wi, n, "eigenvalues");
  dgeev_("N", "N", &n, a, &n, wr, wi, &dummy, &one, &dummy, &one, &query, &lwork, &info, 1, 1);
  DT_LAPACK_GOTO(info);
  lwork = (int)query;
  DT_ALLOC_GOTO(work, lwork, "eigensolver workspace");
  dgeev_("N", "N", &n, a, &n, wr, wi, &dummy, &one, &dummy, &one, work, &lwork, &info, 1, 1);
  DT_LAPACK_GOTO(info);
  /* moduli, largest first: drop one copy of the largest (the eigenvalue 1) */
  double first = -1.0, second = 0.0;
  for (int i = 0; i < n; i++) {
    const double m = hypot(wr[i], wi[i]);
    if (m > first) second = first > second ? first : second, first = m;
    else if (m > second) second = m;
  }
  *gap = 1.0 - second;
cleanup:
  dt_free(wr);
  dt_free(wi);
  dt_free(work);
  return st;
}

dt_status dt_graph_laplacian_fiedler(int n, const int *edges, int m, double *out) {
  dt_status st = DT_OK;
  double *a = NULL, *w = NULL;
  *out = 0.0;
  if (n < 2) return DT_OK;
  DT_ALLOC_GOTO(a, (size_t)n * n, "Laplacian");
  DT_ALLOC_GOTO(w, n, "eigenvalues");
  for (int e = 0; e < m; e++) {
    const int u = edges[2 * e], v = edges[2 * e + 1];
    a[(size_t)u * n + u] += 1.0;
    a[(size_t)v * n + v] += 1.0;
    a[(size_t)u * n + v] = a[(size_t)v * n + u] = -1.0;
  }
  DT_TRY_GOTO(sym_eigenvalues(n, a, w));
  *out = w[1];
cleanup:
  dt_free(a);
  dt_free(w);
  return st;
}

dt_status dt_graph_spectrum_compute(dt_graph *g) {
  dt_status st = DT_OK;
  const int n = g->n;
  double *a = NULL, *w = NULL;
  if (n == 1) {
    g->fiedler = 0.0;
    g->spectral_gap = 1.0;
    g->lambda_min = 1.0;
    return DT_OK;
  }
  DT_TRY_GOTO(dt_graph_laplacian_fiedler(n, g->edges, g->num_edges, &g->fiedler));
  DT_ALLOC_GOTO(a, (size_t)n * n, "mixing matrix");
  DT_ALLOC_GOTO(w, n, "eigenvalues");
  for (int i = 0; i < n; i++) {
    a[(size_t)i * n + i] = g->w_self[i];
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) a[(size_t)i * n + g->nbr[k]] = g->w_nbr[k];
  }
  if (g->directed) {
    DT_TRY_GOTO(directed_gap(n, a, &g->spectral_gap));
    g->lambda_min = NAN;
    goto cleanup;
  }
  DT_TRY_GOTO(sym_eigenvalues(n, a, w));
  double second = fabs(w[n - 2]) > fabs(w[0]) ? fabs(w[n - 2]) : fabs(w[0]);
  g->spectral_gap = 1.0 - second;
  g->lambda_min = w[0];
cleanup:
  dt_free(a);
  dt_free(w);
  return st;
}

uint64_t dt_graph_fingerprint(const dt_graph *g) {
  uint64_t h = 0xcbf29ce484222325ull;
#define MIX(ptr, bytes)                                              \
  for (size_t b_ = 0; b_ < (bytes); b_++) {                          \
    h ^= ((const unsigned char *)(ptr))[b_];                         \
    h *= 0x100000001b3ull;                                           \
  }
  MIX(&g->n, sizeof g->n);
  MIX(&g->num_edges, sizeof g->num_edges);
  MIX(g->edges, sizeof(int) * 2 * (size_t)g->num_edges);
  MIX(g->w_nbr, sizeof(double) * 2 * (size_t)g->num_edges);
  MIX(g->w_self, sizeof(double) * (size_t)g->n);
  if (g->out_mask != NULL) MIX(g->out_mask, 2 * (size_t)g->num_edges); /* undirected graphs hash as before */
#undef MIX
  return h;
}

/* key: value, value an int (the graph's document is one mapping). */
static void kv_int(dt_yemit *y, const char *key, long long v) {
  dt_yemit_scalar(y, key, 0);
  dt_yemit_int(y, v);
}

static void kv_double(dt_yemit *y, const char *key, double v) {
  dt_yemit_scalar(y, key, 0);
  dt_yemit_double(y, v);
}

void dt_graph_emit_yaml(const dt_graph *g, dt_yemit *y) {
  dt_yemit_scalar(y, "type", 0), dt_yemit_str(y, dt_graph_type_name(g->type));
  dt_yemit_scalar(y, "mixing", 0), dt_yemit_str(y, dt_mixing_name(g->mixing));
  kv_int(y, "num_nodes", g->n);
  kv_int(y, "num_edges", g->num_edges);
  kv_int(y, "gen_attempts_used", g->attempts);
  if (g->fiedler_target > 0.0) {
    kv_double(y, "fiedler_target", g->fiedler_target);
    kv_double(y, g->type == DT_GRAPH_GEOMETRIC ? "radius" : "p", g->threshold);
  }
  kv_double(y, "fiedler_value", g->fiedler);
  kv_double(y, "spectral_gap", g->spectral_gap);
  dt_yemit_scalar(y, "degrees", 0);
  dt_yemit_seq(y, 1);
  for (int i = 0; i < g->n; i++) dt_yemit_int(y, dt_graph_degree(g, i));
  dt_yemit_end(y);
  if (g->directed) { /* the arcs, and the union's edges below; weights are push weights (rows: W_ij) */
    dt_yemit_scalar(y, "directed", 0), dt_yemit_scalar(y, "true", 0);
    kv_int(y, "num_arcs", g->num_arcs);
    dt_yemit_scalar(y, "out_degrees", 0);
    dt_yemit_seq(y, 1);
    for (int i = 0; i < g->n; i++) dt_yemit_int(y, dt_graph_out_degree(g, i));
    dt_yemit_end(y);
    dt_yemit_scalar(y, "arcs", 0);
    dt_yemit_seq(y, 0);
    for (int i = 0; i < g->n; i++)
      for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++)
        if (g->out_mask[k]) dt_yemit_seq(y, 1), dt_yemit_int(y, i), dt_yemit_int(y, g->nbr[k]), dt_yemit_end(y);
    dt_yemit_end(y);
  }
  dt_yemit_scalar(y, "edges", 0);
  dt_yemit_seq(y, 0);
  for (int e = 0; e < g->num_edges; e++) dt_yemit_seq(y, 1), dt_yemit_int(y, g->edges[2 * e]), dt_yemit_int(y, g->edges[2 * e + 1]), dt_yemit_end(y);
  dt_yemit_end(y);
  dt_yemit_scalar(y, "mixing_weights", 0);
  dt_yemit_seq(y, 0);
  for (int i = 0; i < g->n; i++) {
    dt_yemit_map(y, 1);
    kv_int(y, "node", i);
    kv_double(y, "self", g->w_self[i]);
    dt_yemit_scalar(y, "neighbors", 0);
    dt_yemit_seq(y, 1);
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) dt_yemit_int(y, g->nbr[k]);
    dt_yemit_end(y);
    dt_yemit_scalar(y, "weights", 0);
    dt_yemit_seq(y, 1);
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) dt_yemit_double(y, g->w_nbr[k]);
    dt_yemit_end(y);
    dt_yemit_end(y);
  }
  dt_yemit_end(y);
}

/* ---- placement ------------------------------------------------------------------------------- */

dt_status dt_placement_check(int num_nodes, int num_ranks) {
  DT_CHECK(num_ranks >= 1, DT_ERR_USAGE, "no MPI ranks");
  DT_CHECK(num_ranks <= num_nodes, DT_ERR_USAGE,
           "%d MPI ranks for a graph of %d nodes: every rank must host at least one node; run "
           "with mpirun -np K for some K <= %d (or without mpirun, all nodes in one process)",
           num_ranks, num_nodes, num_nodes);
  return DT_OK;
}

int dt_placement_count(int num_nodes, int num_ranks, int rank) {
  return num_nodes / num_ranks + (rank < num_nodes % num_ranks ? 1 : 0);
}

int dt_placement_first(int num_nodes, int num_ranks, int rank) {
  int base = num_nodes / num_ranks, extra = num_nodes % num_ranks;
  return rank * base + (rank < extra ? rank : extra);
}

int dt_placement_rank(int num_nodes, int num_ranks, int node) {
  int base = num_nodes / num_ranks, extra = num_nodes % num_ranks;
  int cut = extra * (base + 1); /* nodes held by the larger blocks */
  return node < cut ? node / (base + 1) : extra + (node - cut) / base;
}
