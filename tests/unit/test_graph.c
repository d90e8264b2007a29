/* Topologies, mixing weights, spectral figures and placement, against hand-computed values and
 * closed forms; and every edge-file error with its message. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>

#include "check.h"
#include "dt/faults.h"
#include "dt/graph.h"
#include "dt/network.h"
#include "dt/rng.h"

static dt_graph *build(dt_graph_type type, int n) {
  dt_graph_spec s = {.type = type, .num_nodes = n, .gen_attempts = 20, .p = 0.5, .degree = 3, .radius = 0.6};
  dt_graph *g = NULL;
  CHECK_OK(dt_graph_build(&s, &g));
  return g;
}

static double w(const dt_graph *g, int i, int j) {
  if (i == j) return g->w_self[i];
  int k = dt_graph_nbr_index(g, i, j);
  return k < 0 ? 0.0 : g->w_nbr[g->nbr_start[i] + k];
}

static void test_wheel(void) {
  dt_graph *g = build(DT_GRAPH_WHEEL, 5);
  if (g == NULL) return;
  CHECK(g->num_edges == 8, "wheel(5) edges %d", g->num_edges);
  CHECK(dt_graph_degree(g, 0) == 4, "hub degree");
  for (int i = 1; i < 5; i++) {
    CHECK(dt_graph_degree(g, i) == 3, "rim degree %d", i);
    CHECK_CLOSE(w(g, 0, i), 1.0 / 5, 0, 1e-15);
    CHECK_CLOSE(w(g, i, 0), 1.0 / 5, 0, 1e-15);
    CHECK_CLOSE(w(g, i, i), 0.3, 0, 1e-15);
    int next = i == 4 ? 1 : i + 1;
    CHECK_CLOSE(w(g, i, next), 1.0 / 4, 0, 1e-15);
  }
  CHECK_CLOSE(w(g, 0, 0), 1.0 / 5, 0, 1e-15);
  CHECK(w(g, 1, 3) == 0.0, "1 and 3 are not adjacent in wheel(5)");
  /* neighbour lists are sorted */
  for (int i = 0; i < 5; i++)
    for (int k = g->nbr_start[i] + 1; k < g->nbr_start[i + 1]; k++) CHECK(g->nbr[k - 1] < g->nbr[k], "unsorted");
  /* Laplacian of W5: eigenvalues 0, 3, 3, 5, 5 -> Fiedler 3 */
  CHECK_CLOSE(g->fiedler, 3.0, 0, 1e-10);
  dt_graph_free(g);
}

static void test_closed_forms(void) {
  const double pi = 3.14159265358979323846;
  for (int n = 3; n <= 12; n += 3) {
    dt_graph *g = build(DT_GRAPH_CYCLE, n);
    CHECK_CLOSE(g->fiedler, 2 - 2 * cos(2 * pi / n), 0, 1e-10);
    /* Metropolis on a cycle: W = I/3 + A/3, eigenvalues (1 + 2cos(2πk/n))/3 */
    double l2 = (1 + 2 * cos(2 * pi / n)) / 3, ln = n % 2 ? (1 + 2 * cos(pi * (n - 1) / n)) / 3 : -1.0 / 3;
    double second = fabs(l2) > fabs(ln) ? fabs(l2) : fabs(ln);
    CHECK_CLOSE(g->spectral_gap, 1 - second, 0, 1e-10);
    dt_graph_free(g);
    g = build(DT_GRAPH_PATH, n);
    CHECK_CLOSE(g->fiedler, 2 - 2 * cos(pi / n), 0, 1e-10);
    CHECK(g->num_edges == n - 1, "path edges");
    dt_graph_free(g);
    g = build(DT_GRAPH_COMPLETE, n);
    CHECK_CLOSE(g->fiedler, (double)n, 0, 1e-10);
    CHECK_CLOSE(g->spectral_gap, 1.0, 0, 1e-10); /* W = J/n */
    CHECK(g->num_edges == n * (n - 1) / 2, "complete edges");
    dt_graph_free(g);
    g = build(DT_GRAPH_STAR, n);
    CHECK_CLOSE(g->fiedler, 1.0, 0, 1e-10);
    dt_graph_free(g);
  }
}

static void test_small_and_others(void) {
  for (int t = 0; t < DT_GRAPH_TYPE_COUNT; t++) {
    if (t == DT_GRAPH_FILE || t == DT_GRAPH_REGULAR || t == DT_GRAPH_GEOMETRIC || t == DT_GRAPH_RANDOM) continue;
    for (int n = 1; n <= 2; n++) {
      dt_graph *g = build((dt_graph_type)t, n);
      if (g == NULL) continue;
      CHECK(g->num_edges == n - 1, "%s(%d): %d edges", dt_graph_type_name((dt_graph_type)t), n, g->num_edges);
      if (n == 2) CHECK_CLOSE(w(g, 0, 1), 0.5, 0, 1e-15);
      if (n == 1) CHECK(g->w_self[0] == 1.0 && g->spectral_gap == 1.0, "N=1");
      dt_graph_free(g);
    }
  }
  dt_graph *g = build(DT_GRAPH_TORUS, 12); /* 3 x 4 torus: 4-regular */
  for (int i = 0; i < 12; i++) CHECK(dt_graph_degree(g, i) == 4, "torus degree %d", dt_graph_degree(g, i));
  dt_graph_free(g);
  g = build(DT_GRAPH_GRID, 12);
  CHECK(g->num_edges == 3 * 3 + 2 * 4, "grid 3x4 edges %d", g->num_edges);
  dt_graph_free(g);
  g = build(DT_GRAPH_EXPONENTIAL, 8); /* hops 1, 2, 4: degree 2+2+1 */
  for (int i = 0; i < 8; i++) CHECK(dt_graph_degree(g, i) == 5, "exponential degree %d", dt_graph_degree(g, i));
  dt_graph_free(g);
  g = build(DT_GRAPH_REGULAR, 10);
  for (int i = 0; i < 10; i++) CHECK(dt_graph_degree(g, i) == 3, "3-regular degree %d", dt_graph_degree(g, i));
  dt_graph_free(g);
  g = build(DT_GRAPH_GEOMETRIC, 10);
  CHECK(g != NULL && g->fiedler > 1e-9, "geometric connected");
  dt_graph_free(g);

  /* Uniform mixing: 1/(1 + max degree) on every edge. */
  dt_graph_spec s = {.type = DT_GRAPH_WHEEL, .num_nodes = 5, .mixing = DT_MIXING_UNIFORM};
  CHECK_OK(dt_graph_build(&s, &g));
  CHECK_CLOSE(w(g, 1, 2), 0.2, 0, 1e-15);
  CHECK_CLOSE(w(g, 1, 1), 0.4, 0, 1e-15);
  dt_graph_free(g);
}

static void test_random(void) {
  dt_graph_spec s = {.type = DT_GRAPH_RANDOM, .num_nodes = 20, .p = 0.3, .gen_attempts = 10, .seed = 7};
  dt_graph *a = NULL, *b = NULL;
  CHECK_OK(dt_graph_build(&s, &a));
  CHECK_OK(dt_graph_build(&s, &b));
  CHECK(a && b && dt_graph_fingerprint(a) == dt_graph_fingerprint(b), "same seed, different graph");
  dt_graph_free(b);
  s.seed = 8;
  CHECK_OK(dt_graph_build(&s, &b));
  CHECK(a && b && dt_graph_fingerprint(a) != dt_graph_fingerprint(b), "seed ignored");
  dt_graph_free(a);
  dt_graph_free(b);
  s.p = 0.01;
  s.gen_attempts = 3;
  CHECK_FAILS(dt_graph_build(&s, &a), DT_ERR_CONFIG, "no connected random graph with p = 0.01 on 20 nodes in 3 attempts");
  s.p = 1.5;
  CHECK_FAILS(dt_graph_build(&s, &a), DT_ERR_CONFIG, "graph.p must lie in (0, 1]");
  dt_graph_spec r = {.type = DT_GRAPH_REGULAR, .num_nodes = 5, .degree = 3, .gen_attempts = 1};
  CHECK_FAILS(dt_graph_build(&r, &a), DT_ERR_CONFIG, "num_nodes * degree must be even");
  dt_graph_spec gr = {.type = DT_GRAPH_GRID, .num_nodes = 10, .rows = 3};
  CHECK_FAILS(dt_graph_build(&gr, &a), DT_ERR_CONFIG, "a grid of 3 x 3 has 9 nodes, but num_nodes is 10");
  dt_graph_spec z = {.type = DT_GRAPH_CYCLE, .num_nodes = 0};
  CHECK_FAILS(dt_graph_build(&z, &a), DT_ERR_CONFIG, "graph.num_nodes must be at least 1");
}

/* A Fiedler target: the value reached within the tolerance, the same graph for the same seed, the
 * documented construction (geometric: the pairs of the draw's points within the radius found),
 * and every way a target can be refused. */
static void test_fiedler_target(void) {
  dt_graph_spec s = {.type = DT_GRAPH_GEOMETRIC, .num_nodes = 30, .fiedler = 1.0, .fiedler_tolerance = 0.01,
                     .gen_attempts = 100, .seed = 3};
  dt_graph *a = NULL, *b = NULL;
  CHECK_OK(dt_graph_build(&s, &a));
  CHECK_OK(dt_graph_build(&s, &b));
  if (a == NULL || b == NULL) return;
  CHECK(fabs(a->fiedler - 1.0) <= 0.01 + 1e-12, "geometric: Fiedler value %g, target 1", a->fiedler);
  CHECK(a->fiedler_target == 1.0 && a->threshold > 0.0 && a->threshold < 1.5, "radius found %g", a->threshold);
  CHECK(dt_graph_fingerprint(a) == dt_graph_fingerprint(b), "same seed, different graph");
  /* the graph is the unit-disk graph of draw a->attempts' points at the radius found */
  dt_rng r;
  double xy[60];
  dt_rng_init(&r, 3, DT_RNG_GRAPH, (uint64_t)(a->attempts - 1));
  for (int i = 0; i < 60; i++) xy[i] = dt_rng_double(&r);
  int mismatches = 0;
  for (int u = 0; u < 30; u++)
    for (int v = u + 1; v < 30; v++) {
      const int near = hypot(xy[2 * u] - xy[2 * v], xy[2 * u + 1] - xy[2 * v + 1]) <= a->threshold;
      mismatches += near != (dt_graph_nbr_index(a, u, v) >= 0);
    }
  CHECK(mismatches == 0, "%d pairs differ from the disk graph of radius %g", mismatches, a->threshold);
  dt_graph_free(a);
  dt_graph_free(b);
  a = b = NULL;

  s.type = DT_GRAPH_RANDOM;
  s.num_nodes = 10;
  s.fiedler = 0.7;
  CHECK_OK(dt_graph_build(&s, &a));
  if (a != NULL) CHECK(fabs(a->fiedler - 0.7) <= 0.01 + 1e-12, "random: Fiedler value %g, target 0.7", a->fiedler);
  s.seed = 4;
  CHECK_OK(dt_graph_build(&s, &b));
  CHECK(a && b && dt_graph_fingerprint(a) != dt_graph_fingerprint(b), "seed ignored");
  dt_graph_free(a);
  dt_graph_free(b);
  a = NULL;
  s.fiedler = 10; /* the complete graph's value */
  CHECK_OK(dt_graph_build(&s, &a));
  if (a != NULL) CHECK(a->num_edges == 45 && a->threshold == 1.0, "target N: %d edges, p %g", a->num_edges, a->threshold);
  dt_graph_free(a);

  s.fiedler = 5.8;
  s.fiedler_tolerance = 1e-4;
  s.gen_attempts = 3;
  CHECK_FAILS(dt_graph_build(&s, &a), DT_ERR_CONFIG,
              "graph: no random graph on 10 nodes with a Fiedler value within 0.0001 of 5.8 in 3 attempts (the closest: ");
  s.fiedler = 10.5;
  CHECK_FAILS(dt_graph_build(&s, &a), DT_ERR_CONFIG, "graph.fiedler must lie in (0, num_nodes] = (0, 10]");
  s.fiedler = 1;
  s.type = DT_GRAPH_CYCLE;
  CHECK_FAILS(dt_graph_build(&s, &a), DT_ERR_CONFIG,
              "graph.fiedler sets the Fiedler value of random and geometric graphs, not of a cycle graph");
}

static void test_edge_file(void) {
  char path[] = "/tmp/dt_edges_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  struct {
    const char *text, *needle;
    dt_status code;
  } cases[] = {
      {"# ring\n0 1\n1 2\n2 3 # comment\n3 0\n", NULL, DT_OK},
      {"0 1\n1 2\n2 x\n", ":3: expected two node ids 'u v', found '2 x'", DT_ERR_CONFIG},
      {"0 1\n1 4\n", ":2: node id 4 is out of range: graph.num_nodes is 4, so ids are 0..3", DT_ERR_CONFIG},
      {"0 1\n-1 2\n", ":2: node id -1 is out of range", DT_ERR_CONFIG},
      {"0 1\n2 2\n", ":2: self-loop on node 2", DT_ERR_CONFIG},
      {"0 1\n1 2\n\n2 1\n", ":4: duplicate edge 2-1 (first given on line 2)", DT_ERR_CONFIG},
      {"0 1\n2 3\n", "the graph is not connected: nodes 2, 3 cannot be reached from node 0", DT_ERR_CONFIG},
      {"# nothing\n", "no edges found", DT_ERR_CONFIG},
      {"0 1 2\n", "expected two node ids 'u v', found '0 1 2'", DT_ERR_CONFIG},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    FILE *f = fopen(path, "w");
    fputs(cases[c].text, f);
    fclose(f);
    dt_graph_spec s = {.type = DT_GRAPH_FILE, .num_nodes = 4, .edge_file = path};
    dt_graph *g = NULL;
    if (cases[c].code == DT_OK) {
      CHECK_OK(dt_graph_build(&s, &g));
      CHECK(g && g->num_edges == 4 && dt_graph_degree(g, 0) == 2, "edge file ring");
      dt_graph_free(g);
    } else {
      CHECK_FAILS(dt_graph_build(&s, &g), cases[c].code, cases[c].needle);
    }
  }
  unlink(path);
  dt_graph_spec s = {.type = DT_GRAPH_FILE, .num_nodes = 4, .edge_file = "/nonexistent/edges.txt"};
  dt_graph *g = NULL;
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "graph.edge_file '/nonexistent/edges.txt': cannot open");
  /* inputs that once hung or said only "read error" */
  s.edge_file = "/dev/zero"; /* endless NUL bytes */
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "graph.edge_file '/dev/zero' is not a regular file");
  char fifo[] = "/tmp/dt_edges_fifo_XXXXXX"; /* a FIFO nobody writes: its open once blocked forever */
  CHECK(mkdtemp(fifo) != NULL, "mkdtemp");
  char fifo_path[64];
  snprintf(fifo_path, sizeof fifo_path, "%s/edges", fifo);
  CHECK(mkfifo(fifo_path, 0600) == 0, "mkfifo");
  s.edge_file = fifo_path;
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "is not a regular file (a FIFO, a device or a socket)");
  unlink(fifo_path);
  rmdir(fifo);
  char nul[] = "/tmp/dt_edges_nul_XXXXXX";
  const int nul_fd = mkstemp(nul);
  CHECK(nul_fd >= 0 && write(nul_fd, "0 1\n\0\0", 6) == 6, "mkstemp");
  close(nul_fd);
  s.edge_file = nul;
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, ":2: a NUL byte: not a text file");
  s.edge_file = "/tmp";
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "graph.edge_file '/tmp' is a folder");
  char big[] = "/tmp/dt_edges_big_XXXXXX";
  const int big_fd = mkstemp(big);
  CHECK(big_fd >= 0, "mkstemp");
  FILE *f = fdopen(big_fd, "w");
  for (long i = 0; i < (260L << 20) / 64; i++) fputs("# a comment line that makes a big file, 64 bytes per line ......\n", f);
  fclose(f);
  s.edge_file = big;
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "larger than 256 MiB: not an edge list");
  unlink(big);
  /* a signal during a load ends it */
  s.edge_file = nul;
  dt_stop_request(15);
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_INTERRUPTED, "reading interrupted by signal 15");
  dt_stop_request(0);
  unlink(nul);
}

static void test_placement(void) {
  for (int n = 1; n <= 12; n++)
    for (int p = 1; p <= n; p++) {
      int next = 0;
      for (int r = 0; r < p; r++) {
        int first = dt_placement_first(n, p, r), count = dt_placement_count(n, p, r);
        CHECK(first == next && count >= n / p && count <= n / p + 1, "n=%d p=%d r=%d", n, p, r);
        for (int i = first; i < first + count; i++) CHECK(dt_placement_rank(n, p, i) == r, "rank of %d", i);
        next += count;
      }
      CHECK(next == n, "placement covers %d of %d", next, n);
    }
  CHECK_OK(dt_placement_check(5, 5));
  CHECK_FAILS(dt_placement_check(5, 6), DT_ERR_USAGE, "6 MPI ranks for a graph of 5 nodes");
}

/* Directed graphs: arcs, push weights (every column sums to 1), strong connectivity, spectra. */
static void test_directed(void) {
  dt_graph_spec s = {.type = DT_GRAPH_CYCLE, .num_nodes = 5, .directed = 1};
  dt_graph *g = NULL;
  CHECK_OK(dt_graph_build(&s, &g));
  CHECK(g->directed && g->num_arcs == 5 && g->num_edges == 5, "directed cycle: 5 arcs");
  for (int i = 0; i < 5; i++) {
    CHECK(dt_graph_out_degree(g, i) == 1 && w(g, i, i) == 0.5, "directed cycle: out-degree 1, W_ii = 1/2");
    CHECK(w(g, (i + 1) % 5, i) == 0.5 && w(g, i, (i + 1) % 5) == 0.0, "directed cycle: W_(i+1)i = 1/2, W_i(i+1) = 0");
  }
  /* W = (I + S)/2 with S the cyclic shift: eigenvalues (1 + e^(2πik/5))/2, |λ2| = cos(π/5) */
  CHECK(fabs(g->spectral_gap - (1.0 - cos(M_PI / 5))) < 1e-12, "directed cycle spectral gap %g", g->spectral_gap);
  CHECK(isnan(g->lambda_min), "directed: no smallest real eigenvalue");
  dt_graph_free(g);

  s.type = DT_GRAPH_EXPONENTIAL, s.num_nodes = 8;
  CHECK_OK(dt_graph_build(&s, &g));
  CHECK(g->num_arcs == 24 && dt_graph_out_degree(g, 3) == 3 && w(g, 4, 3) == 0.25 && w(g, 3, 4) == 0.0,
        "directed exponential: i -> i+1, i+2, i+4, weights 1/4");
  dt_graph_free(g);

  s.type = DT_GRAPH_RANDOM, s.num_nodes = 9, s.p = 0.3, s.gen_attempts = 50, s.seed = 4;
  CHECK_OK(dt_graph_build(&s, &g));
  int irregular = 0;
  for (int j = 0; j < 9; j++) {
    double col = 0.0;
    for (int i = 0; i < 9; i++) col += w(g, i, j);
    CHECK(fabs(col - 1.0) < 1e-12, "random directed: column %d sums to %.17g", j, col);
    irregular |= dt_graph_out_degree(g, j) != dt_graph_out_degree(g, 0);
  }
  CHECK(irregular && g->spectral_gap > 0.0 && g->spectral_gap < 1.0, "random directed: uneven out-degrees, gap %g", g->spectral_gap);
  dt_graph_free(g);

  s.type = DT_GRAPH_WHEEL, s.num_nodes = 5;
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "graph.directed: a directed graph is of type cycle");
  s.type = DT_GRAPH_RANDOM, s.p = 0.02, s.gen_attempts = 3;
  CHECK_FAILS(dt_graph_build(&s, &g), DT_ERR_CONFIG, "no strongly connected directed random graph with p = 0.02");

  char path[] = "/tmp/dt_arcs_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  struct {
    const char *text, *needle;
  } cases[] = {
      {"0 1\n1 2\n2 3\n3 0\n1 0\n", NULL}, /* a ring and one arc back: "1 0" is no duplicate */
      {"0 1\n1 0\n1 2\n2 3\n", "the graph is not strongly connected: nodes 2, 3 cannot reach node 0 along the arcs"},
      {"1 0\n2 0\n3 0\n", "the graph is not strongly connected: nodes 1, 2, 3 cannot be reached from node 0"},
      {"0 1\n1 2\n0 1\n", ":3: duplicate arc 0 -> 1 (first given on line 1)"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    FILE *f = fopen(path, "w");
    fputs(cases[c].text, f);
    fclose(f);
    dt_graph_spec fs = {.type = DT_GRAPH_FILE, .num_nodes = 4, .edge_file = path, .directed = 1};
    if (cases[c].needle == NULL) {
      CHECK_OK(dt_graph_build(&fs, &g));
      CHECK(g->num_arcs == 5 && g->num_edges == 4 && dt_graph_out_degree(g, 1) == 2 && w(g, 0, 1) == 1.0 / 3,
            "edge file of arcs: 5 arcs over 4 edges, node 1 pushes a third to node 0");
      dt_graph_free(g);
    } else {
      CHECK_FAILS(dt_graph_build(&fs, &g), DT_ERR_CONFIG, cases[c].needle);
    }
  }
  unlink(path);
}

/* The simulated network's tables: exact straggler counts, link classes, symmetric links, costs. */
static void test_network(void) {
  dt_network_spec ns = {.speed = 100, .stragglers = 0.25, .slowdown = 4, .latency = 0.001, .bandwidth = 1e6, .nodes_per_host = 4,
                        .cross_latency = 0.01, .cross_bandwidth = 1e5};
  dt_network *net = NULL, *again = NULL;
  CHECK_OK(dt_network_create(&ns, 8, 5, 0.0, &net));
  int slow = 0;
  for (int i = 0; i < 8; i++) {
    slow += dt_network_is_straggler(net, i);
    CHECK(dt_network_speed(net, i) == (dt_network_is_straggler(net, i) ? 25.0 : 100.0), "node %d speed %g", i, dt_network_speed(net, i));
  }
  CHECK(slow == 2, "round(0.25 x 8) = 2 stragglers, found %d", slow);
  CHECK(fabs(dt_network_message_seconds(net, 0, 3, 1000) - (0.001 + 1000 / 1e6)) < 1e-15, "a link inside a host");
  CHECK(fabs(dt_network_message_seconds(net, 4, 3, 1000) - (0.01 + 1000 / 1e5)) < 1e-15, "a link between hosts");
  CHECK(dt_network_step_seconds(net, 1, 7, 50) == 50 / dt_network_speed(net, 1), "a step without jitter: samples / speed");
  dt_network_free(net);
  ns.stragglers = 0, ns.speed_spread = 0.5, ns.jitter = 0.2, ns.link_spread = 0.3, ns.unit = DT_NETWORK_FLOPS;
  CHECK_OK(dt_network_create(&ns, 8, 5, 1e6, &net));
  CHECK_OK(dt_network_create(&ns, 8, 5, 1e6, &again));
  int spread = 0;
  for (int i = 0; i < 8; i++) {
    spread |= dt_network_speed(net, i) != 100;
    CHECK(dt_network_speed(net, i) == dt_network_speed(again, i), "speeds are a function of the seed");
    CHECK(dt_network_step_seconds(net, i, 3, 2) == dt_network_step_seconds(again, i, 3, 2) &&
              dt_network_step_seconds(net, i, 3, 2) != dt_network_step_seconds(net, i, 4, 2),
          "jitter: the same draw for the same step, another for the next");
    for (int j = 0; j < 8; j++)
      CHECK(dt_network_message_seconds(net, i, j, 64) == dt_network_message_seconds(net, j, i, 64), "links are symmetric");
  }
  CHECK(spread, "speed_spread spreads the speeds");
  dt_network_free(net);
  dt_network_free(again);
  /* FLOPs: a step of 2 samples costs 2 x 3 x 1e6 FLOPs at the node's speed, exactly (no jitter);
   * link_spread moves a link away from latency + bytes / bandwidth */
  ns.jitter = 0;
  CHECK_OK(dt_network_create(&ns, 8, 5, 1e6, &net));
  CHECK(dt_network_step_seconds(net, 2, 0, 2) == 2 * 3e6 / dt_network_speed(net, 2), "a step in FLOPs: 3 x forward FLOPs per sample");
  CHECK(dt_network_message_seconds(net, 0, 1, 1000) != 0.001 + 1000 / 1e6, "link_spread changes a link");
  dt_network_free(net);
}

/* The faults' draws: the loss rate and burst lengths, intervals with their means, links alike both
 * ways, and the same states again after a restart (a resumed problem). */
static void test_faults(void) {
  dt_graph *g = build(DT_GRAPH_CYCLE, 6);
  const int m = 2 * g->num_edges;
  dt_network_spec ns = {.loss = 0.2, .loss_burst = 1};
  dt_faults *f = NULL;
  uint8_t sent[12], state[12], lost[12] = {0}, online[6] = {0}, up[12];
  memset(sent, 1, sizeof sent);
  /* independent: the rate; bursts of mean 5 at the same rate */
  for (int burst = 0; burst < 2; burst++) {
    ns.loss_burst = burst ? 5 : 1;
    CHECK_OK(dt_faults_create(&ns, g, 11, &f));
    dt_faults_burst_start(f, state);
    long n = 0, nl = 0, runs = 0;
    for (uint64_t x = 0; x < 20000; x++) {
      const uint8_t before = lost[0];
      dt_faults_loss(f, x, sent, state, lost);
      for (int e = 0; e < m; e++) n++, nl += lost[e];
      runs += x > 0 && lost[0] && !before;
    }
    const double rate = (double)nl / n, mean_run = (double)nl / m / (runs > 0 ? runs : 1);
    CHECK(fabs(rate - 0.2) < 0.01, "burst %g: loss rate %g", ns.loss_burst, rate);
    CHECK(fabs(mean_run - ns.loss_burst * (burst ? 1.0 : 1.25)) < 0.35 * ns.loss_burst, "burst %g: runs of %g lost messages",
          ns.loss_burst, mean_run);
    dt_faults_free(f);
  }
  /* intervals: links down 1/(1+4) of the rounds, nodes 2/(8+2), both directions of a link alike */
  ns = (dt_network_spec){.loss_burst = 1, .link_up_rounds = 20, .link_down_rounds = 5, .node_up_rounds = 8, .node_down_rounds = 2};
  CHECK_OK(dt_faults_create(&ns, g, 11, &f));
  long down = 0, off = 0, flips = 0;
  uint8_t first[6 * 40];
  for (int k = 0; k < 20000; k++) {
    const uint8_t was = online[0];
    dt_faults_round(f, k, online, up);
    if (k < 40) memcpy(first + 6 * k, online, 6);
    for (int i = 0; i < 6; i++) {
      off += !online[i];
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) {
        const int j = g->nbr[e];
        down += !up[e];
        CHECK(up[e] == up[g->nbr_start[j] + dt_graph_nbr_index(g, j, i)], "link %d-%d differs by direction", i, j);
      }
    }
    flips += k > 0 && online[0] != was;
  }
  CHECK(fabs((double)down / (20000.0 * m) - 0.2) < 0.02, "links down %g of the rounds", (double)down / (20000.0 * m));
  CHECK(fabs((double)off / (20000.0 * 6) - 0.2) < 0.02, "nodes offline %g of the rounds", (double)off / (20000.0 * 6));
  CHECK(fabs(flips / 2.0 - 20000.0 / 10) < 200, "node 0 left %g times in 20000 rounds, expected about 2000", flips / 2.0);
  for (int k = 0; k < 40; k++) { /* an earlier round starts again from round 0: the same states */
    dt_faults_round(f, k, online, up);
    CHECK(memcmp(first + 6 * k, online, 6) == 0, "round %d after a restart", k);
  }
  dt_faults_round(f, 0, online, up);
  for (int i = 0; i < 6; i++) CHECK(online[i], "node %d offline at round 0", i);
  dt_faults_free(f);
  dt_graph_free(g);
}

int main(void) {
  test_wheel();
  test_closed_forms();
  test_small_and_others();
  test_random();
  test_fiedler_target();
  test_edge_file();
  test_directed();
  test_network();
  test_faults();
  test_placement();
  return check_report("test_graph");
}
