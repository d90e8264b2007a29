/* Graph topologies. igraph generates them (random ones from an igraph RNG seeded by dtrun's own
 * (seed, graph, attempt) stream, so a draw never depends on the rank); dtrun then normalises the
 * edge list (no loops, no duplicates, u < v, sorted) into CSR arrays that the rest of the code
 * reads without igraph. */
#include <ctype.h>
#include <errno.h>
#include <igraph.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dt/rng.h"
#include "graph_impl.h"

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
  int *edges = *edges_io;
  *edges_io = NULL;
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
cleanup:
  return st;
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

static int is_connected(const dt_graph *g) {
  if (g->n <= 1) return 1;
  int *stack = malloc(sizeof(int) * (size_t)g->n);
  char *seen = calloc((size_t)g->n, 1);
  int top = 0, reached = 1;
  if (stack == NULL || seen == NULL) {
    free(stack);
    free(seen);
    return -1;
  }
  stack[top++] = 0;
  seen[0] = 1;
  while (top > 0) {
    int u = stack[--top];
    for (int k = g->nbr_start[u]; k < g->nbr_start[u + 1]; k++) {
      int v = g->nbr[k];
      if (!seen[v]) {
        seen[v] = 1;
        reached++;
        stack[top++] = v;
      }
    }
  }
  free(stack);
  free(seen);
  return reached == g->n;
}

/* First unreachable nodes from node 0, for error messages. */
static void describe_unreachable(const dt_graph *g, char *buf, size_t size) {
  char *seen = calloc((size_t)g->n, 1);
  int *stack = malloc(sizeof(int) * (size_t)g->n);
  int top = 0;
  buf[0] = '\0';
  if (seen == NULL || stack == NULL) goto done;
  stack[top++] = 0;
  seen[0] = 1;
  while (top > 0) {
    int u = stack[--top];
    for (int k = g->nbr_start[u]; k < g->nbr_start[u + 1]; k++)
      if (!seen[g->nbr[k]]) {
        seen[g->nbr[k]] = 1;
        stack[top++] = g->nbr[k];
      }
  }
  size_t used = 0;
  int shown = 0, total = 0;
  for (int i = 0; i < g->n; i++) {
    if (seen[i]) continue;
    total++;
    if (shown < 8 && used < size) {
      used += (size_t)snprintf(buf + used, size - used, "%s%d", shown ? ", " : "", i);
      shown++;
    }
  }
  if (total > shown && used < size) snprintf(buf + used, size - used, ", ... (%d in all)", total);
done:
  free(seen);
  free(stack);
}

/* ---- deterministic topologies ---------------------------------------------------------------- */

static void grid_shape(const dt_graph_spec *s, int *rows, int *cols) {
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

static dt_status make_deterministic(const dt_graph_spec *s, int **edges, int *m) {
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
      grid_shape(s, &rows, &cols);
      DT_CHECK_KEY_GOTO(rows * cols == n && rows > 0 && cols > 0, DT_ERR_CONFIG, "experiment.graph",
                        "graph: a %s of %d x %d has %d nodes, but num_nodes is %d; choose rows and "
                        "cols whose product is num_nodes",
                        type_names[s->type], rows, cols, rows * cols, n);
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
      /* Static exponential graph (Ying et al., NeurIPS 2021), undirected: i ~ i + 2^k mod n. */
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

static dt_status make_random(const dt_graph_spec *s, int attempt, int **edges, int *m) {
  dt_status st = DT_OK;
  igraph_t ig;
  int have = 0;
  dt_rng r;
  dt_rng_init(&r, s->seed, DT_RNG_GRAPH, (uint64_t)attempt);
  IG_GOTO(igraph_rng_seed(igraph_rng_default(), (igraph_uint_t)dt_rng_u64(&r)));
  switch (s->type) {
    case DT_GRAPH_RANDOM:
      IG_GOTO(igraph_erdos_renyi_game_gnp(&ig, s->num_nodes, s->p, 0, 0));
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

typedef struct targeted {
  int k;            /* pairs admitted */
  double fiedler;   /* Fiedler value of that graph */
  double threshold; /* the p or radius that admits exactly those pairs */
} targeted;

/* One draw of a coupled family of graphs: every pair gets a key from (seed, graph, attempt), and
 * the graph of threshold t holds the pairs whose key is below t (random: u_ij < p; geometric:
 * distance <= r). Its edge set grows with t and its Fiedler value with it, since adding an edge
 * never lowers λ2. Bisection over the number of admitted pairs finds the first graph whose value
 * reaches the target; the nearer of it and the graph before it is the draw's answer. */
static dt_status targeted_draw(const dt_graph_spec *s, int attempt, pair_key *pk, double *xy,
                               int *scratch, targeted *out) {
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
static dt_status make_targeted(const dt_graph_spec *s, int **edges, int *m, int *attempts,
                               targeted *best) {
  dt_status st = DT_OK;
  const int n = s->num_nodes, pairs = n * (n - 1) / 2;
  pair_key *pk = NULL;
  double *xy = NULL;
  int *scratch = NULL;
  int found = 0;
  *best = (targeted){.k = -1};
  DT_ALLOC_GOTO(pk, pairs + 1, "graph pairs");
  DT_ALLOC_GOTO(xy, 2 * n, "node positions");
  DT_ALLOC_GOTO(scratch, 2 * pairs + 2, "edge list");
  for (int a = 0; a < s->gen_attempts && !found; a++) {
    targeted t = {0};
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
                    type_names[s->type], n, s->fiedler_tolerance, s->fiedler, s->gen_attempts,
                    best->fiedler);
cleanup:
  dt_free(pk);
  dt_free(xy);
  dt_free(scratch);
  return st;
}

/* ---- edge-list file -------------------------------------------------------------------------- */

/* Bounds that keep a wrong path (a device, a huge binary) from hanging or exhausting a run. */
enum { EDGE_LINE_MAX = 1024 };
#define EDGE_FILE_MAX_BYTES ((long)256 << 20)

/* The next line of f into line (without its newline); 0 at the end of the file, 1 for a line,
 * or an error naming path:lineno for a line too long, a NUL byte or a file too large. */
static dt_status next_line(FILE *f, const char *path, int lineno, char *line, long *total, int *got) {
  size_t len = 0;
  int c;
  *got = 0;
  while ((c = getc_unlocked(f)) != EOF) {
    *got = 1;
    if (++*total > EDGE_FILE_MAX_BYTES)
      return DT_ERROR(DT_ERR_CONFIG, "%s: larger than %ld MiB: not an edge list", path, EDGE_FILE_MAX_BYTES >> 20);
    if (c == '\n') break;
    if (c == '\0') return DT_ERROR(DT_ERR_CONFIG, "%s:%d: a NUL byte: not a text file of lines 'u v'", path, lineno);
    if (len + 1 >= EDGE_LINE_MAX)
      return DT_ERROR(DT_ERR_CONFIG, "%s:%d: line longer than %d characters", path, lineno, EDGE_LINE_MAX - 2);
    line[len++] = (char)c;
  }
  line[len] = '\0';
  DT_CHECK(!ferror(f), DT_ERR_CONFIG, "%s: read error after line %d: %s", path, lineno - 1, strerror(errno));
  return DT_OK;
}

/* Parses "u v" (with '#' comments) into *u, *v; *blank for a line without an edge. */
static dt_status parse_edge(const char *path, int lineno, char *line, int n, long *u, long *v, int *blank) {
  char *hash = strchr(line, '#');
  if (hash != NULL) *hash = '\0';
  char *p = line;
  while (isspace((unsigned char)*p)) p++;
  *blank = *p == '\0';
  if (*blank) return DT_OK;
  char *end1, *end2 = NULL;
  errno = 0;
  *u = strtol(p, &end1, 10);
  *v = end1 != p ? strtol(end1, &end2, 10) : 0;
  int ok = end1 != p && end2 != end1 && errno == 0;
  if (ok) {
    while (isspace((unsigned char)*end2)) end2++;
    ok = *end2 == '\0';
  }
  if (!ok) {
    p[strcspn(p, "\r\n")] = '\0';
    return DT_ERROR(DT_ERR_CONFIG, "%s:%d: expected two node ids 'u v', found '%.80s'", path, lineno, p);
  }
  DT_CHECK(*u >= 0 && *u < n && *v >= 0 && *v < n, DT_ERR_CONFIG,
           "%s:%d: node id %ld is out of range: graph.num_nodes is %d, so ids are 0..%d", path, lineno,
           (*u < 0 || *u >= n) ? *u : *v, n, n - 1);
  DT_CHECK(*u != *v, DT_ERR_CONFIG, "%s:%d: self-loop on node %ld is not allowed", path, lineno, *u);
  return DT_OK;
}

/* An edge as read: its ends (smaller first) and its line, for reporting duplicates. */
typedef struct edge_at {
  int a, b, line, index;
} edge_at;

static int edge_at_cmp(const void *x, const void *y) {
  const edge_at *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->line < q->line ? -1 : p->line > q->line;
}

static dt_status read_edge_file(const char *path, int n, int **edges_out, int *m_out) {
  dt_status st = DT_OK;
  int *edges = NULL, cap = 64, m = 0, lineno = 0, got = 0;
  edge_at *at = NULL;
  long total = 0;
  char line[EDGE_LINE_MAX];
  struct stat sb;
  FILE *f = NULL;
  DT_CHECK_KEY_GOTO(stat(path, &sb) == 0, DT_ERR_CONFIG, "experiment.graph.edge_file", "graph.edge_file '%s': cannot open: %s", path,
                    strerror(errno));
  DT_CHECK_KEY_GOTO(!S_ISDIR(sb.st_mode), DT_ERR_CONFIG, "experiment.graph.edge_file",
                    "graph.edge_file '%s' is a folder, expected a file of lines 'u v'", path);
  f = fopen(path, "r");
  DT_CHECK_KEY_GOTO(f != NULL, DT_ERR_CONFIG, "experiment.graph.edge_file", "graph.edge_file '%s': cannot open: %s", path,
                    strerror(errno));
  DT_ALLOC_GOTO(edges, 2 * cap, "edge list");
  DT_ALLOC_GOTO(at, cap, "edge list");
  for (;;) {
    DT_CHECK_GOTO(!dt_stop_requested(), DT_ERR_INTERRUPTED, "%s: reading interrupted by signal %d", path, dt_stop_requested());
    DT_TRY_GOTO(next_line(f, path, lineno + 1, line, &total, &got));
    if (!got) break;
    lineno++;
    long u, v;
    int blank;
    DT_TRY_GOTO(parse_edge(path, lineno, line, n, &u, &v, &blank));
    if (blank) continue;
    if (m == cap) {
      cap *= 2;
      int *grown = realloc(edges, sizeof(int) * 2 * (size_t)cap);
      DT_CHECK_GOTO(grown != NULL, DT_ERR_MEMORY, "out of memory reading %s", path);
      edges = grown;
      edge_at *grown_at = realloc(at, sizeof(edge_at) * (size_t)cap);
      DT_CHECK_GOTO(grown_at != NULL, DT_ERR_MEMORY, "out of memory reading %s", path);
      at = grown_at;
    }
    edges[2 * m] = (int)u;
    edges[2 * m + 1] = (int)v;
    at[m] = (edge_at){.a = (int)(u < v ? u : v), .b = (int)(u < v ? v : u), .line = lineno, .index = m};
    m++;
  }
  DT_CHECK_GOTO(m > 0 || n == 1, DT_ERR_CONFIG, "%s: no edges found (expected lines 'u v')", path);
  /* duplicates, found by sorting (a quadratic scan would stall on large files) */
  qsort(at, (size_t)m, sizeof *at, edge_at_cmp);
  int dup = -1, first = 0; /* the earliest line repeating an edge, and that edge's first line */
  for (int e = 1, group = 0; e < m; e++) {
    if (at[e].a != at[group].a || at[e].b != at[group].b) {
      group = e;
      continue;
    }
    if (dup < 0 || at[e].line < at[dup].line) dup = e, first = at[group].line;
  }
  DT_CHECK_GOTO(dup < 0, DT_ERR_CONFIG, "%s:%d: duplicate edge %d-%d (first given on line %d)", path,
                dup >= 0 ? at[dup].line : 0, dup >= 0 ? edges[2 * at[dup].index] : 0, dup >= 0 ? edges[2 * at[dup].index + 1] : 0, first);
  *edges_out = edges;
  *m_out = m;
  edges = NULL;
cleanup:
  if (f != NULL) fclose(f);
  free(edges);
  free(at);
  return st;
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
      DT_CHECK((n * s->degree) % 2 == 0, DT_ERR_CONFIG,
               "a %d-regular graph on %d nodes does not exist (num_nodes * degree must be even)",
               s->degree, n);
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
  dt_free(g->edges);
  dt_free(g->nbr_start);
  dt_free(g->nbr);
  dt_free(g->w_nbr);
  dt_free(g->w_self);
  dt_free(g);
}

/* Releases the topology arrays of g, keeping the struct (between random attempts). */
static void clear_topology(dt_graph *g) {
  dt_free(g->edges);
  dt_free(g->nbr_start);
  dt_free(g->nbr);
  dt_free(g->w_nbr);
  dt_free(g->w_self);
  g->edges = g->nbr_start = g->nbr = NULL;
  g->w_nbr = g->w_self = NULL;
}

dt_status dt_graph_build(const dt_graph_spec *spec, dt_graph **out) {
  dt_status st = DT_OK;
  dt_graph *g = NULL;
  int *edges = NULL, m = 0;
  *out = NULL;
  igraph_quiet();
  DT_TRY_GOTO(check_spec(spec));
  DT_ALLOC_GOTO(g, 1, "graph");
  g->type = spec->type;
  g->mixing = spec->mixing;
  g->attempts = 1;

  const int random = spec->type == DT_GRAPH_RANDOM || spec->type == DT_GRAPH_REGULAR ||
                     spec->type == DT_GRAPH_GEOMETRIC;
  if (spec->fiedler > 0.0) {
    targeted t = {0};
    DT_TRY_GOTO(make_targeted(spec, &edges, &m, &g->attempts, &t));
    DT_TRY_GOTO(graph_from_edges(spec->num_nodes, &edges, m, g));
    g->fiedler_target = spec->fiedler;
    g->threshold = t.threshold;
  } else if (random) {
    int connected = 0;
    for (int a = 0; a < spec->gen_attempts && !connected; a++) {
      clear_topology(g);
      DT_TRY_GOTO(make_random(spec, a, &edges, &m));
      DT_TRY_GOTO(graph_from_edges(spec->num_nodes, &edges, m, g));
      g->attempts = a + 1;
      connected = is_connected(g);
      DT_CHECK_GOTO(connected >= 0, DT_ERR_MEMORY, "out of memory checking connectivity");
    }
    if (!connected) {
      char hint[160] = "";
      if (spec->type == DT_GRAPH_RANDOM)
        snprintf(hint, sizeof hint, "; connectivity needs p above about ln(N)/N = %.3g",
                 log((double)spec->num_nodes) / spec->num_nodes);
      if (spec->type == DT_GRAPH_GEOMETRIC)
        snprintf(hint, sizeof hint, "; connectivity needs a radius above about sqrt(ln(N)/(pi N)) = %.3g",
                 sqrt(log((double)spec->num_nodes) / (3.14159265358979 * spec->num_nodes)));
      if (spec->type == DT_GRAPH_RANDOM)
        DT_CHECK_KEY_GOTO(0, DT_ERR_CONFIG, "experiment.graph",
                          "graph: no connected random graph with p = %g on %d nodes in %d attempts "
                          "(graph.gen_attempts)%s; raise graph.p or graph.gen_attempts",
                          spec->p, spec->num_nodes, spec->gen_attempts, hint);
      DT_CHECK_KEY_GOTO(0, DT_ERR_CONFIG, "experiment.graph",
                        "graph: no connected %s graph on %d nodes in %d attempts "
                        "(graph.gen_attempts)%s",
                        type_names[spec->type], spec->num_nodes, spec->gen_attempts, hint);
    }
  } else {
    if (spec->type == DT_GRAPH_FILE)
      DT_TRY_GOTO(read_edge_file(spec->edge_file, spec->num_nodes, &edges, &m));
    else
      DT_TRY_GOTO(make_deterministic(spec, &edges, &m));
    DT_TRY_GOTO(graph_from_edges(spec->num_nodes, &edges, m, g));
    if (spec->type == DT_GRAPH_GRID || spec->type == DT_GRAPH_TORUS) grid_shape(spec, &g->rows, &g->cols);
    int connected = is_connected(g);
    DT_CHECK_GOTO(connected >= 0, DT_ERR_MEMORY, "out of memory checking connectivity");
    if (!connected) {
      char which[200];
      describe_unreachable(g, which, sizeof which);
      if (spec->type == DT_GRAPH_FILE)
        DT_CHECK_GOTO(0, DT_ERR_CONFIG,
                      "%s: the graph is not connected: nodes %s cannot be reached from node 0",
                      spec->edge_file, which);
      DT_CHECK_KEY_GOTO(0, DT_ERR_CONFIG, "experiment.graph", "graph: the %s graph on %d nodes is not connected",
                        type_names[spec->type], spec->num_nodes);
    }
  }
  DT_TRY_GOTO(dt_graph_mixing_compute(g));
  DT_TRY_GOTO(dt_graph_spectrum_compute(g));
  *out = g;
  g = NULL;
cleanup:
  free(edges);
  dt_graph_free(g);
  return st;
}
