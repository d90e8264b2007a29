/* Graph topologies: the spec checked, the graph built by the generator of its type (generate.c)
 * or read from an edge file (edge_file.c), its edge list normalised (no loops, no duplicates,
 * u < v, sorted) into CSR arrays that the rest of the code reads, connectivity checked, and the
 * mixing weights and spectral figures (mixing.c) filled in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topology_impl.h"

static const char *const type_names[DT_GRAPH_TYPE_COUNT] = {
    [DT_GRAPH_WHEEL] = "wheel",         [DT_GRAPH_CYCLE] = "cycle",
    [DT_GRAPH_COMPLETE] = "complete",   [DT_GRAPH_STAR] = "star",
    [DT_GRAPH_PATH] = "path",           [DT_GRAPH_RANDOM] = "random",
    [DT_GRAPH_GRID] = "grid",           [DT_GRAPH_TORUS] = "torus",
    [DT_GRAPH_REGULAR] = "regular",     [DT_GRAPH_GEOMETRIC] = "geometric",
    [DT_GRAPH_EXPONENTIAL] = "exponential", [DT_GRAPH_FILE] = "file",
};

const char *dt_graph_type_name(dt_graph_type t) {
  return (unsigned)t < DT_GRAPH_TYPE_COUNT ? type_names[t] : "unknown";
}

/* ---- edge list → CSR ------------------------------------------------------------------------ */

static int cmp_edge(const void *a, const void *b) {
  const int *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Takes ownership of *edges_io (2*m ids, any order/orientation; loops and duplicates dropped)
 * and sets it to NULL, whatever the outcome. */
static dt_status graph_from_edges(int n, int **edges_io, int m, dt_graph *g) {
  dt_status st = DT_OK;
  int *edges = *edges_io, *arcs = NULL;
  *edges_io = NULL;
  if (g->directed) { /* the arcs as given, before their union is normalised */
    arcs = malloc(sizeof(int) * (2 * (size_t)m + 2));
    if (arcs == NULL) {
      free(edges);
      return DT_ERROR(DT_ERR_MEMORY, "out of memory for a graph's %d arcs", m);
    }
    memcpy(arcs, edges, sizeof(int) * 2 * (size_t)m);
  }
  for (int e = 0; e < m; e++) {
    int u = edges[2 * e], v = edges[2 * e + 1];
    edges[2 * e] = u < v ? u : v;
    edges[2 * e + 1] = u < v ? v : u;
  }
  qsort(edges, (size_t)m, 2 * sizeof(int), cmp_edge);
  int k = 0;
  for (int e = 0; e < m; e++) {
    int u = edges[2 * e], v = edges[2 * e + 1];
    if (u == v) continue;
    if (k > 0 && edges[2 * (k - 1)] == u && edges[2 * (k - 1) + 1] == v) continue;
    edges[2 * k] = u;
    edges[2 * k + 1] = v;
    k++;
  }
  g->n = n;
  g->num_edges = k;
  g->edges = edges;
  DT_ALLOC_GOTO(g->nbr_start, n + 1, "graph offsets");
  DT_ALLOC_GOTO(g->nbr, 2 * k + 1, "graph neighbours");
  DT_ALLOC_GOTO(g->w_nbr, 2 * k + 1, "mixing weights");
  DT_ALLOC_GOTO(g->w_self, n, "mixing weights");
  for (int e = 0; e < k; e++) {
    g->nbr_start[edges[2 * e] + 1]++;
    g->nbr_start[edges[2 * e + 1] + 1]++;
  }
  for (int i = 0; i < n; i++) g->nbr_start[i + 1] += g->nbr_start[i];
  int *fill = NULL;
  DT_ALLOC_GOTO(fill, n, "graph fill");
  /* Edges are sorted by (u, v): visiting them in order appends each node's neighbours in
   * increasing id for both endpoints (lower ids arrive first as u for v, and as v for u). */
  for (int e = 0; e < k; e++) {
    int u = edges[2 * e], v = edges[2 * e + 1];
    g->nbr[g->nbr_start[v] + fill[v]++] = u;
  }
  for (int e = 0; e < k; e++) {
    int u = edges[2 * e], v = edges[2 * e + 1];
    g->nbr[g->nbr_start[u] + fill[u]++] = v;
  }
  dt_free(fill);
  if (arcs != NULL) {
    DT_ALLOC_GOTO(g->out_mask, 2 * (size_t)k + 1, "graph arcs");
    for (int e = 0; e < m; e++) {
      const int u = arcs[2 * e], v = arcs[2 * e + 1];
      if (u == v) continue;
      const int t = dt_graph_nbr_index(g, u, v);
      DT_ASSERT_GOTO(t >= 0);
      g->out_mask[g->nbr_start[u] + t] = 1;
    }
    g->num_arcs = 0;
    for (int e = 0; e < 2 * k; e++) g->num_arcs += g->out_mask[e] != 0;
  }
cleanup:
  free(arcs);
  return st;
}

int dt_graph_out_degree(const dt_graph *g, int i) {
  if (g->out_mask == NULL) return dt_graph_degree(g, i);
  int d = 0;
  for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) d += g->out_mask[e] != 0;
  return d;
}

/* ---- connectivity ---------------------------------------------------------------------------- */

/* Nodes reachable from node 0 along out-edges (forward) or against them (backward); every edge
 * both ways on an undirected graph. seen[] gets 1 for each. */
static int reach_from_0(const dt_graph *g, int backward, int *stack, char *seen) {
  int top = 0, reached = 1;
  memset(seen, 0, (size_t)g->n);
  stack[top++] = 0;
  seen[0] = 1;
  while (top > 0) {
    int u = stack[--top];
    for (int k = g->nbr_start[u]; k < g->nbr_start[u + 1]; k++) {
      const int v = g->nbr[k];
      if (g->out_mask != NULL) { /* u -> v forward; v -> u backward */
        const int back = dt_graph_nbr_index(g, v, u);
        if (!(backward ? g->out_mask[g->nbr_start[v] + back] : g->out_mask[k])) continue;
      }
      if (!seen[v]) {
        seen[v] = 1;
        reached++;
        stack[top++] = v;
      }
    }
  }
  return reached;
}

/* Whether every node reaches every other (strongly, along the arcs of a directed graph); -1
 * when out of memory. */
static int is_connected(const dt_graph *g) {
  if (g->n <= 1) return 1;
  int *stack = malloc(sizeof(int) * (size_t)g->n);
  char *seen = malloc((size_t)g->n);
  int ok = -1;
  if (stack != NULL && seen != NULL)
    ok = reach_from_0(g, 0, stack, seen) == g->n && (g->out_mask == NULL || reach_from_0(g, 1, stack, seen) == g->n);
  free(stack);
  free(seen);
  return ok;
}

/* The first nodes node 0 cannot reach, or (directed, when it reaches all) that cannot reach
 * node 0, for error messages: "nodes 3, 4 cannot be reached from node 0". */
static void describe_unreachable(const dt_graph *g, char *buf, size_t size) {
  char *seen = malloc((size_t)g->n);
  int *stack = malloc(sizeof(int) * (size_t)g->n);
  buf[0] = '\0';
  if (seen == NULL || stack == NULL) goto done;
  int backward = 0;
  if (reach_from_0(g, 0, stack, seen) == g->n) {
    if (g->out_mask == NULL) goto done;
    backward = 1;
    reach_from_0(g, 1, stack, seen);
  }
  size_t used = (size_t)snprintf(buf, size, "nodes ");
  int shown = 0, total = 0;
  for (int i = 0; i < g->n; i++) {
    if (seen[i]) continue;
    total++;
    if (shown < 8 && used < size) {
      used += (size_t)snprintf(buf + used, size - used, "%s%d", shown ? ", " : "", i);
      shown++;
    }
  }
  if (total > shown && used < size) used += (size_t)snprintf(buf + used, size - used, ", ... (%d in all)", total);
  if (used < size) snprintf(buf + used, size - used, backward ? " cannot reach node 0 along the arcs" : " cannot be reached from node 0");
done:
  free(seen);
  free(stack);
}

/* ---- build ----------------------------------------------------------------------------------- */

static dt_status check_spec(const dt_graph_spec *s) {
  const int n = s->num_nodes;
  DT_CHECK_KEY(n >= 1, DT_ERR_CONFIG, "experiment.graph.num_nodes", "graph.num_nodes must be at least 1, found %d", n);
  DT_CHECK_KEY((unsigned)s->type < DT_GRAPH_TYPE_COUNT, DT_ERR_CONFIG, "experiment.graph.type", "graph.type %d is unknown",
               (int)s->type);
  DT_CHECK_KEY((unsigned)s->mixing < DT_MIXING_COUNT, DT_ERR_CONFIG, "experiment.graph.mixing", "graph.mixing %d is unknown",
               (int)s->mixing);
  switch (s->type) {
    case DT_GRAPH_RANDOM:
      DT_CHECK_KEY(s->fiedler > 0.0 || (s->p > 0.0 && s->p <= 1.0), DT_ERR_CONFIG, "experiment.graph.p",
                   "graph.p must lie in (0, 1] for a random graph, found %g", s->p);
      break;
    case DT_GRAPH_REGULAR:
      DT_CHECK_KEY(s->degree >= 1 && s->degree < n, DT_ERR_CONFIG, "experiment.graph.degree",
                   "graph.degree must lie in [1, num_nodes - 1] = [1, %d], found %d", n - 1,
                   s->degree);
      DT_CHECK_KEY((n * s->degree) % 2 == 0, DT_ERR_CONFIG, "experiment.graph.degree",
                   "a %d-regular graph on %d nodes does not exist (num_nodes * degree must be even)", s->degree, n);
      break;
    case DT_GRAPH_GEOMETRIC:
      DT_CHECK_KEY(s->fiedler > 0.0 || s->radius > 0.0, DT_ERR_CONFIG, "experiment.graph.radius", "graph.radius must be positive, found %g",
                   s->radius);
      break;
    case DT_GRAPH_FILE:
      DT_CHECK_KEY(s->edge_file != NULL && s->edge_file[0] != '\0', DT_ERR_CONFIG, "experiment.graph.type",
                   "graph.type file needs graph.edge_file");
      break;
    case DT_GRAPH_GRID:
    case DT_GRAPH_TORUS:
      DT_CHECK_KEY(s->rows >= 0 && s->cols >= 0, DT_ERR_CONFIG, "experiment.graph.rows", "graph.rows and graph.cols must be "
                   "positive (or 0 to choose automatically)");
      break;
    default: break;
  }
  if (s->directed) {
    DT_CHECK_KEY(s->type == DT_GRAPH_CYCLE || s->type == DT_GRAPH_EXPONENTIAL || s->type == DT_GRAPH_RANDOM || s->type == DT_GRAPH_FILE,
                 DT_ERR_CONFIG, "experiment.graph.directed",
                 "graph.directed: a directed graph is of type cycle (i -> i+1), exponential (i -> i+2^k), random (each "
                 "arc with probability p) or file (lines 'u v' are arcs u -> v), found %s", type_names[s->type]);
    DT_CHECK_KEY(s->fiedler == 0.0, DT_ERR_CONFIG, "experiment.graph.fiedler",
                 "graph.fiedler targets the Fiedler value of undirected graphs; a directed graph takes p");
  }
  if (s->fiedler != 0.0) {
    DT_CHECK_KEY(s->type == DT_GRAPH_RANDOM || s->type == DT_GRAPH_GEOMETRIC, DT_ERR_CONFIG, "experiment.graph.fiedler",
                 "graph.fiedler sets the Fiedler value of random and geometric graphs, not of a %s graph",
                 type_names[s->type]);
    DT_CHECK_KEY(n >= 2 && s->fiedler > 0.0 && s->fiedler <= n, DT_ERR_CONFIG, "experiment.graph.fiedler",
                 "graph.fiedler must lie in (0, num_nodes] = (0, %d] (the complete graph's value is "
                 "num_nodes), found %g", n, s->fiedler);
    DT_CHECK_KEY(s->fiedler_tolerance > 0.0, DT_ERR_CONFIG, "experiment.graph.fiedler_tolerance",
                 "graph.fiedler_tolerance must be positive, found %g", s->fiedler_tolerance);
  }
  if (s->type == DT_GRAPH_RANDOM || s->type == DT_GRAPH_REGULAR || s->type == DT_GRAPH_GEOMETRIC)
    DT_CHECK_KEY(s->gen_attempts >= 1, DT_ERR_CONFIG, "experiment.graph.gen_attempts", "graph.gen_attempts must be at least 1, found %d",
                 s->gen_attempts);
  return DT_OK;
}

int dt_graph_nbr_index(const dt_graph *g, int i, int j) {
  int lo = g->nbr_start[i], hi = g->nbr_start[i + 1];
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (g->nbr[mid] < j) lo = mid + 1;
    else hi = mid;
  }
  return (lo < g->nbr_start[i + 1] && g->nbr[lo] == j) ? lo - g->nbr_start[i] : -1;
}

void dt_graph_free(dt_graph *g) {
  if (g == NULL) return;
  dt_free(g->out_mask);
  dt_free(g->edges);
  dt_free(g->nbr_start);
  dt_free(g->nbr);
  dt_free(g->w_nbr);
  dt_free(g->w_self);
  dt_free(g);
}

/* Releases the topology arrays of g, keeping the struct (between random attempts). */
static void clear_topology(dt_graph *g) {
  dt_free(g->out_mask);
  g->out_mask = NULL;
  dt_free(g->edges);
  dt_free(g->nbr_start);
  dt_free(g->nbr);
  dt_free(g->w_nbr);
  dt_free(g->w_self);
  g->edges = g->nbr_start = g->nbr = NULL;
  g->w_nbr = g->w_self = NULL;
}

/* A random or geometric graph drawn to a target Fiedler value. */
static dt_status build_targeted(const dt_graph_spec *spec, dt_graph *g, int **edges) {
  int m = 0;
  topology_draw t = {0};
  DT_TRY(topology_targeted(spec, edges, &m, &g->attempts, &t));
  DT_TRY(graph_from_edges(spec->num_nodes, edges, m, g));
  g->fiedler_target = spec->fiedler;
  g->threshold = t.threshold;
  return DT_OK;
}

/* A graph of a random type: draws until one is connected, at most gen_attempts. */
static dt_status build_random(const dt_graph_spec *spec, dt_graph *g, int **edges) {
  int connected = 0, m = 0;
  for (int a = 0; a < spec->gen_attempts && !connected; a++) {
    clear_topology(g);
    DT_TRY(topology_random(spec, a, edges, &m));
    DT_TRY(graph_from_edges(spec->num_nodes, edges, m, g));
    g->attempts = a + 1;
    connected = is_connected(g);
    DT_CHECK(connected >= 0, DT_ERR_MEMORY, "out of memory checking connectivity");
  }
  if (connected) return DT_OK;
  char hint[160] = "";
  if (spec->type == DT_GRAPH_RANDOM)
    snprintf(hint, sizeof hint, "; connectivity needs p above about ln(N)/N = %.3g", log((double)spec->num_nodes) / spec->num_nodes);
  if (spec->type == DT_GRAPH_GEOMETRIC)
    snprintf(hint, sizeof hint, "; connectivity needs a radius above about sqrt(ln(N)/(pi N)) = %.3g",
             sqrt(log((double)spec->num_nodes) / (3.14159265358979 * spec->num_nodes)));
  if (spec->type == DT_GRAPH_RANDOM)
    return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph",
                        "graph: no %s random graph with p = %g on %d nodes in %d attempts "
                        "(graph.gen_attempts)%s; raise graph.p or graph.gen_attempts",
                        spec->directed ? "strongly connected directed" : "connected", spec->p, spec->num_nodes, spec->gen_attempts, hint);
  return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph",
                      "graph: no connected %s graph on %d nodes in %d attempts "
                      "(graph.gen_attempts)%s",
                      type_names[spec->type], spec->num_nodes, spec->gen_attempts, hint);
}

/* A deterministic type or an edge file: one graph, which must be connected. */
static dt_status build_fixed(const dt_graph_spec *spec, dt_graph *g, int **edges) {
  int m = 0;
  if (spec->type == DT_GRAPH_FILE)
    DT_TRY(topology_read_edge_file(spec->edge_file, spec->num_nodes, spec->directed, edges, &m));
  else
    DT_TRY(topology_deterministic(spec, edges, &m));
  DT_TRY(graph_from_edges(spec->num_nodes, edges, m, g));
  if (spec->type == DT_GRAPH_GRID || spec->type == DT_GRAPH_TORUS) topology_grid_shape(spec, &g->rows, &g->cols);
  int connected = is_connected(g);
  DT_CHECK(connected >= 0, DT_ERR_MEMORY, "out of memory checking connectivity");
  if (connected) return DT_OK;
  char which[200];
  describe_unreachable(g, which, sizeof which);
  if (spec->type == DT_GRAPH_FILE)
    return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph.edge_file", "%s: the graph is not %sconnected: %s", spec->edge_file,
                        spec->directed ? "strongly " : "", which);
  return DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph", "graph: the %s graph on %d nodes is not connected", type_names[spec->type],
                      spec->num_nodes);
}

dt_status dt_graph_build(const dt_graph_spec *spec, dt_graph **out) {
  dt_status st = DT_OK;
  dt_graph *g = NULL;
  int *edges = NULL; /* a generator's edge list until graph_from_edges takes it */
  *out = NULL;
  DT_TRY_GOTO(check_spec(spec));
  DT_ALLOC_GOTO(g, 1, "graph");
  g->type = spec->type;
  g->mixing = spec->mixing;
  g->directed = spec->directed != 0;
  g->attempts = 1;
  const int random = spec->type == DT_GRAPH_RANDOM || spec->type == DT_GRAPH_REGULAR || spec->type == DT_GRAPH_GEOMETRIC;
  if (spec->fiedler > 0.0) DT_TRY_GOTO(build_targeted(spec, g, &edges));
  else if (random) DT_TRY_GOTO(build_random(spec, g, &edges));
  else DT_TRY_GOTO(build_fixed(spec, g, &edges));
  DT_TRY_GOTO(dt_graph_mixing_compute(g));
  DT_TRY_GOTO(dt_graph_spectrum_compute(g));
  *out = g;
  g = NULL;
cleanup:
  free(edges);
  dt_graph_free(g);
  return st;
}
