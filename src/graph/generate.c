/* Generators of the graph types: the deterministic ones (wheel, cycle, complete, star, path,
 * grid, torus, exponential) built directly, the random ones (random, regular, geometric) drawn by
 * igraph from an igraph RNG seeded by dtrun's own (seed, graph, attempt) stream, so a draw never
 * depends on the rank, and random or geometric graphs drawn to a target Fiedler value. Each
 * returns an edge list that topology.c normalises into the graph. */
#include <igraph.h>
#include <math.h>
#include <stdlib.h>

#include "dt/rng.h"
#include "topology_impl.h"

/* ---- igraph's errors and edge lists ---------------------------------------------------------- */

static dt_status igraph_fail(igraph_error_t rc, const char *file, int line, const char *func,
                             const char *call) {
  return dt_error_set(rc == IGRAPH_ENOMEM ? DT_ERR_MEMORY : DT_ERR_INTERNAL, file, line, func,
                      "igraph call %s failed: %s", call, igraph_strerror(rc));
}

#define IG_GOTO(call)                                                          \
  do {                                                                         \
    igraph_error_t ig_rc_ = (call);                                            \
    if (ig_rc_ != IGRAPH_SUCCESS) {                                            \
      st = igraph_fail(ig_rc_, __FILE__, __LINE__, __func__, #call);           \
      goto cleanup;                                                            \
    }                                                                          \
  } while (0)

/* igraph's default handler aborts the process; dtrun wants the error code back. */
static void igraph_quiet(void) {
  static int done = 0;
  if (!done) {
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    done = 1;
  }
}

static dt_status edges_from_igraph(const igraph_t *ig, int **edges, int *m) {
  dt_status st = DT_OK;
  igraph_vector_int_t el;
  int inited = 0;
  IG_GOTO(igraph_vector_int_init(&el, 0));
  inited = 1;
  IG_GOTO(igraph_get_edgelist(ig, &el, 0));
  *m = (int)(igraph_vector_int_size(&el) / 2);
  DT_ALLOC_GOTO(*edges, 2 * *m + 2, "edge list");
  for (int i = 0; i < 2 * *m; i++) (*edges)[i] = (int)VECTOR(el)[i];
cleanup:
  if (inited) igraph_vector_int_destroy(&el);
  return st;
}

/* ---- deterministic topologies ---------------------------------------------------------------- */

void topology_grid_shape(const dt_graph_spec *s, int *rows, int *cols) {
  if (s->rows > 0 || s->cols > 0) {
    *rows = s->rows > 0 ? s->rows : s->num_nodes / s->cols;
    *cols = s->cols > 0 ? s->cols : s->num_nodes / s->rows;
    return;
  }
  int r = (int)floor(sqrt((double)s->num_nodes));
  while (r > 1 && s->num_nodes % r != 0) r--;
  *rows = r;
  *cols = s->num_nodes / r;
}

dt_status topology_deterministic(const dt_graph_spec *s, int **edges, int *m) {
  dt_status st = DT_OK;
  const int n = s->num_nodes;
  int cap = 0, k = 0;
  switch (s->type) {
    case DT_GRAPH_WHEEL: cap = 2 * n; break;
    case DT_GRAPH_CYCLE: cap = n; break;
    case DT_GRAPH_COMPLETE: cap = n * (n - 1) / 2; break;
    case DT_GRAPH_STAR: cap = n; break;
    case DT_GRAPH_PATH: cap = n; break;
    case DT_GRAPH_GRID:
    case DT_GRAPH_TORUS: cap = 2 * n; break;
    case DT_GRAPH_EXPONENTIAL: cap = n * 32; break;
    default: DT_ASSERT_GOTO(0);
  }
  DT_ALLOC_GOTO(*edges, 2 * cap + 2, "edge list");
  int *e = *edges;
#define EDGE(a, b) (e[2 * k] = (a), e[2 * k + 1] = (b), k++)
  switch (s->type) {
    case DT_GRAPH_WHEEL:
      /* networkx.wheel_graph: hub 0 joined to every rim node, rim 1..n-1 a cycle. */
      for (int i = 1; i < n; i++) EDGE(0, i);
      for (int i = 1; i < n && n > 3; i++) EDGE(i, i + 1 < n ? i + 1 : 1);
      break;
    case DT_GRAPH_CYCLE:
      for (int i = 0; i < n && n > 1; i++) EDGE(i, (i + 1) % n);
      break;
    case DT_GRAPH_COMPLETE:
      for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) EDGE(i, j);
      break;
    case DT_GRAPH_STAR:
      for (int i = 1; i < n; i++) EDGE(0, i);
      break;
    case DT_GRAPH_PATH:
      for (int i = 0; i + 1 < n; i++) EDGE(i, i + 1);
      break;
    case DT_GRAPH_GRID:
    case DT_GRAPH_TORUS: {
      int rows, cols;
      topology_grid_shape(s, &rows, &cols);
      DT_CHECK_KEY_GOTO(rows * cols == n && rows > 0 && cols > 0, DT_ERR_CONFIG, "experiment.graph",
                        "graph: a %s of %d x %d has %d nodes, but num_nodes is %d; choose rows and "
                        "cols whose product is num_nodes",
                        dt_graph_type_name(s->type), rows, cols, rows * cols, n);
      int wrap = s->type == DT_GRAPH_TORUS;
      for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
          int i = r * cols + c;
          if (c + 1 < cols) EDGE(i, i + 1);
          else if (wrap && cols > 2) EDGE(i, r * cols);
          if (r + 1 < rows) EDGE(i, i + cols);
          else if (wrap && rows > 2) EDGE(i, c);
        }
      break;
    }
    case DT_GRAPH_EXPONENTIAL:
      /* Static exponential graph (Ying et al., NeurIPS 2021), undirected: i ~ i + 2^k mod n;
       * directed, the arcs i -> i + 2^k (Assran et al., 2019). A cycle's are i -> i + 1. */
      for (int i = 0; i < n; i++)
        for (int hop = 1; hop < n; hop *= 2) EDGE(i, (i + hop) % n);
      break;
    default: break;
  }
#undef EDGE
  *m = k;
cleanup:
  return st;
}

/* ---- random topologies ----------------------------------------------------------------------- */

dt_status topology_random(const dt_graph_spec *s, int attempt, int **edges, int *m) {
  dt_status st = DT_OK;
  igraph_t ig;
  int have = 0;
  dt_rng r;
  igraph_quiet();
  dt_rng_init(&r, s->seed, DT_RNG_GRAPH, (uint64_t)attempt);
  IG_GOTO(igraph_rng_seed(igraph_rng_default(), (igraph_uint_t)dt_rng_u64(&r)));
  switch (s->type) {
    case DT_GRAPH_RANDOM:
      /* directed: each ordered pair an arc with probability p (igraph lists arcs from, to) */
      IG_GOTO(igraph_erdos_renyi_game_gnp(&ig, s->num_nodes, s->p, s->directed ? 1 : 0, 0));
      break;
    case DT_GRAPH_REGULAR:
      IG_GOTO(igraph_k_regular_game(&ig, s->num_nodes, s->degree, 0, 0));
      break;
    case DT_GRAPH_GEOMETRIC:
      IG_GOTO(igraph_grg_game(&ig, s->num_nodes, s->radius, 0, NULL, NULL));
      break;
    default: DT_ASSERT_GOTO(0);
  }
  have = 1;
  DT_TRY_GOTO(edges_from_igraph(&ig, edges, m));
cleanup:
  if (have) igraph_destroy(&ig);
  return st;
}

/* ---- Fiedler targets ------------------------------------------------------------------------- */

/* A pair of nodes and the key that orders its admission: a uniform draw (random) or the distance
 * between the pair's points in the unit square (geometric). */
typedef struct pair_key {
  double key;
  int u, v;
} pair_key;

static int cmp_pair_key(const void *a, const void *b) {
  const pair_key *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->u != y->u) return x->u < y->u ? -1 : 1;
  return (x->v > y->v) - (x->v < y->v);
}

/* Fiedler value of the graph made of the first k pairs. */
static dt_status prefix_fiedler(int n, const pair_key *pk, int k, int *scratch, double *f) {
  for (int e = 0; e < k; e++) {
    scratch[2 * e] = pk[e].u;
    scratch[2 * e + 1] = pk[e].v;
  }
  return dt_graph_laplacian_fiedler(n, scratch, k, f);
}

/* One draw of a coupled family of graphs: every pair gets a key from (seed, graph, attempt), and
 * the graph of threshold t holds the pairs whose key is below t (random: u_ij < p; geometric:
 * distance <= r). Its edge set grows with t and its Fiedler value with it, since adding an edge
 * never lowers λ2. Bisection over the number of admitted pairs finds the first graph whose value
 * reaches the target; the nearer of it and the graph before it is the draw's answer. */
static dt_status targeted_draw(const dt_graph_spec *s, int attempt, pair_key *pk, double *xy, int *scratch, topology_draw *out) {
  const int n = s->num_nodes, pairs = n * (n - 1) / 2;
  const int geo = s->type == DT_GRAPH_GEOMETRIC;
  dt_rng r;
  dt_rng_init(&r, s->seed, DT_RNG_GRAPH, (uint64_t)attempt);
  if (geo)
    for (int i = 0; i < 2 * n; i++) xy[i] = dt_rng_double(&r);
  int q = 0;
  for (int u = 0; u < n; u++)
    for (int v = u + 1; v < n; v++, q++) {
      pk[q].u = u;
      pk[q].v = v;
      pk[q].key = geo ? hypot(xy[2 * u] - xy[2 * v], xy[2 * u + 1] - xy[2 * v + 1]) : dt_rng_double(&r);
    }
  qsort(pk, (size_t)pairs, sizeof *pk, cmp_pair_key);
  /* f(lo) < target <= f(hi), with f(0) = 0 */
  int lo = 0, hi = pairs;
  double f_lo = 0.0, f_hi = 0.0;
  DT_TRY(prefix_fiedler(n, pk, pairs, scratch, &f_hi));
  if (f_hi < s->fiedler) {
    lo = hi;
    f_lo = f_hi;
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    double f;
    DT_TRY(prefix_fiedler(n, pk, mid, scratch, &f));
    if (f >= s->fiedler) {
      hi = mid;
      f_hi = f;
    } else {
      lo = mid;
      f_lo = f;
    }
  }
  const int take_hi = fabs(f_hi - s->fiedler) <= fabs(f_lo - s->fiedler);
  out->k = take_hi ? hi : lo;
  out->fiedler = take_hi ? f_hi : f_lo;
  if (geo) out->threshold = out->k > 0 ? pk[out->k - 1].key : 0.0;
  else out->threshold = out->k < pairs ? pk[out->k].key : 1.0;
  return DT_OK;
}

/* The first draw whose Fiedler value lies within the tolerance of the target, as an edge list;
 * *best is its figures (or, when no draw is close enough, the closest one's for the message). */
dt_status topology_targeted(const dt_graph_spec *s, int **edges, int *m, int *attempts, topology_draw *best) {
  dt_status st = DT_OK;
  const int n = s->num_nodes, pairs = n * (n - 1) / 2;
  pair_key *pk = NULL;
  double *xy = NULL;
  int *scratch = NULL;
  int found = 0;
  *best = (topology_draw){.k = -1};
  DT_ALLOC_GOTO(pk, pairs + 1, "graph pairs");
  DT_ALLOC_GOTO(xy, 2 * n, "node positions");
  DT_ALLOC_GOTO(scratch, 2 * pairs + 2, "edge list");
  for (int a = 0; a < s->gen_attempts && !found; a++) {
    topology_draw t = {0};
    DT_TRY_GOTO(targeted_draw(s, a, pk, xy, scratch, &t));
    *attempts = a + 1;
    found = t.fiedler > 0.0 && fabs(t.fiedler - s->fiedler) <= s->fiedler_tolerance;
    if (found || best->k < 0 || fabs(t.fiedler - s->fiedler) < fabs(best->fiedler - s->fiedler))
      *best = t;
    if (found) {
      for (int e = 0; e < t.k; e++) {
        scratch[2 * e] = pk[e].u;
        scratch[2 * e + 1] = pk[e].v;
      }
      *edges = scratch;
      *m = t.k;
      scratch = NULL;
    }
  }
  DT_CHECK_KEY_GOTO(found, DT_ERR_CONFIG, "experiment.graph",
                    "graph: no %s graph on %d nodes with a Fiedler value within %g of %g in %d attempts "
                    "(the closest: %.4g); raise graph.fiedler_tolerance or graph.gen_attempts",
                    dt_graph_type_name(s->type), n, s->fiedler_tolerance, s->fiedler, s->gen_attempts,
                    best->fiedler);
cleanup:
  dt_free(pk);
  dt_free(xy);
  dt_free(scratch);
  return st;
}
