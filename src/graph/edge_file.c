/* A graph read from an edge-list file (graph.type file): one "u v" per line, '#' comments and
 * blank lines allowed. Every malformed line, out-of-range id, self-loop or duplicate is an error
 * naming the file and line, so that a hand-written file is easy to fix. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dt/io.h"
#include "dt/timer.h"
#include "topology_impl.h"

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

dt_status topology_read_edge_file(const char *path, int n, int directed, int **edges_out, int *m_out) {
  dt_status st = DT_OK;
  int *edges = NULL, cap = 64, m = 0, lineno = 0, got = 0;
  edge_at *at = NULL;
  long total = 0;
  char line[EDGE_LINE_MAX];
  struct stat sb;
  FILE *f = dt_open_regular(path, &sb); /* a FIFO must not hang the open, nor /dev/zero the read */
  if (f == NULL) {
    DT_CHECK_KEY_GOTO(errno == EINVAL, DT_ERR_CONFIG, "experiment.graph.edge_file", "graph.edge_file '%s': cannot open: %s", path,
                      strerror(errno));
    DT_CHECK_KEY_GOTO(!S_ISDIR(sb.st_mode), DT_ERR_CONFIG, "experiment.graph.edge_file",
                      "graph.edge_file '%s' is a folder, expected a file of lines 'u v'", path);
    DT_CHECK_KEY_GOTO(0, DT_ERR_CONFIG, "experiment.graph.edge_file",
                      "graph.edge_file '%s' is not a regular file (a FIFO, a device or a socket), expected a file of lines 'u v'", path);
  }
  DT_CHECK_KEY_GOTO(sb.st_size <= EDGE_FILE_MAX_BYTES, DT_ERR_CONFIG, "experiment.graph.edge_file",
                    "%s: larger than %ld MiB: not an edge list", path, EDGE_FILE_MAX_BYTES >> 20);
  DT_ALLOC_GOTO(edges, 2 * cap, "edge list");
  DT_ALLOC_GOTO(at, cap, "edge list");
  for (;;) {
    DT_CHECK_GOTO(!dt_stop_requested(), DT_ERR_INTERRUPTED, "%s: reading interrupted by signal %d", path, dt_stop_requested());
    if ((lineno & 4095) == 0) dt_heartbeat(); /* a long read is progress to the watchdog */
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
    /* an undirected edge is its two ends in either order; a directed one is (from, to) */
    const int swap = !directed && v < u;
    at[m] = (edge_at){.a = (int)(swap ? v : u), .b = (int)(swap ? u : v), .line = lineno, .index = m};
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
  DT_CHECK_GOTO(dup < 0, DT_ERR_CONFIG, "%s:%d: duplicate %s %d%s%d (first given on line %d)", path,
                dup >= 0 ? at[dup].line : 0, directed ? "arc" : "edge", dup >= 0 ? edges[2 * at[dup].index] : 0, directed ? " -> " : "-",
                dup >= 0 ? edges[2 * at[dup].index + 1] : 0, first);
  *edges_out = edges;
  *m_out = m;
  edges = NULL;
cleanup:
  if (f != NULL) fclose(f);
  free(edges);
  free(at);
  return st;
}
