/* The neighbourhood exchange under mpiexec: every node receives exactly its neighbours' vectors
 * (full, masked and non-blocking exchanges), non-neighbours and masked edges give NULL, bytes
 * add up, and the graph is identical on every rank. The per-edge form: every node receives what
 * each neighbour wrote for it alone. Lines starting "result:" must not depend on
 * the rank count; tests/mpi/ranks.sh compares them across runs with different P. */
#include <stdlib.h>

#include "../unit/check.h"
#include "dt/exchange.h"
#include "dt/rng.h"

enum { NVEC = 2 };
static const size_t LEN = 1001; /* not a multiple of the 16-float stride: padding must not leak */

static dt_backend *be; /* the CPU backend owns the exchange buffers */

static float value(int node, int vec, size_t k, int round) {
  return (float)(node * 100000 + vec * 10000 + round * 1000 + (int)(k % 997));
}

static void fill(dt_exchange *ex, int round) {
  for (int i = dt_exchange_first_node(ex); i < dt_exchange_first_node(ex) + dt_exchange_num_local(ex); i++)
    for (int v = 0; v < NVEC; v++) {
      float *b = dt_exchange_send_buffer(ex, i, v);
      for (size_t k = 0; k < LEN; k++) b[k] = value(i, v, k, round);
    }
}

static void verify(const dt_graph *g, dt_exchange *ex, const uint8_t *mask, int round) {
  for (int i = dt_exchange_first_node(ex); i < dt_exchange_first_node(ex) + dt_exchange_num_local(ex); i++) {
    for (int j = 0; j < g->n; j++) {
      int k = dt_graph_nbr_index(g, j, i);
      int active = k >= 0 && (mask == NULL || mask[g->nbr_start[j] + k]);
      for (int v = 0; v < NVEC; v++) {
        const float *r = dt_exchange_recv(ex, i, j, v);
        if (!active) {
          CHECK(r == NULL, "node %d got a view of %d (round %d, not an active edge)", i, j, round);
          continue;
        }
        CHECK(r != NULL, "node %d has no view of neighbour %d (round %d)", i, j, round);
        if (r == NULL) continue;
        int bad = 0;
        for (size_t t = 0; t < LEN; t++) bad += r[t] != value(j, v, t, round);
        CHECK(bad == 0, "node %d: %d wrong floats from %d vec %d round %d", i, bad, j, v, round);
      }
    }
  }
}

/* After a sized exchange: the first `bytes` bytes of every active edge's vectors arrived. */
static void verify_prefix(const dt_graph *g, dt_exchange *ex, const uint8_t *mask, int round, size_t bytes) {
  float *want = calloc(LEN, sizeof(float));
  for (int i = dt_exchange_first_node(ex); i < dt_exchange_first_node(ex) + dt_exchange_num_local(ex); i++)
    for (int j = 0; j < g->n; j++) {
      int k = dt_graph_nbr_index(g, j, i);
      if (k < 0 || (mask != NULL && !mask[g->nbr_start[j] + k])) continue;
      for (int v = 0; v < NVEC; v++) {
        const float *r = dt_exchange_recv(ex, i, j, v);
        for (size_t t = 0; t < LEN; t++) want[t] = value(j, v, t, round);
        CHECK(r != NULL && memcmp(r, want, bytes) == 0, "node %d: the %zu-byte payload from %d vec %d round %d differs", i,
              bytes, j, v, round);
      }
    }
  free(want);
}

static void run_graph(dt_comm *comm, dt_graph_type type, int n) {
  dt_graph_spec s = {.type = type, .num_nodes = n, .p = 0.5, .gen_attempts = 50, .seed = 3, .degree = 2};
  dt_graph *g = NULL;
  dt_exchange *ex = NULL;
  CHECK_OK(dt_graph_build(&s, &g));
  if (g == NULL) return;
  double fp[2] = {(double)(dt_graph_fingerprint(g) >> 12), -(double)(dt_graph_fingerprint(g) >> 12)};
  CHECK_OK(dt_comm_allreduce_max_f64(comm, fp, 2));
  CHECK(fp[0] == -fp[1], "graph differs between ranks");
  if (dt_comm_rank(comm) == 0)
    printf("result: %s n=%d edges=%d fingerprint=%016llx fiedler=%.12f gap=%.12f\n", dt_graph_type_name(type), n,
           g->num_edges, (unsigned long long)dt_graph_fingerprint(g), g->fiedler, g->spectral_gap);

  CHECK_OK(dt_exchange_create(comm, be, g, NVEC, LEN, &ex));
  if (ex == NULL) {
    dt_graph_free(g);
    return;
  }
  fill(ex, 0);
  CHECK_OK(dt_exchange_run(ex, NULL));
  verify(g, ex, NULL, 0);

  uint8_t *mask = calloc(2 * (size_t)g->num_edges + 1, 1);
  double expect_bytes = 2.0 * g->num_edges * NVEC * LEN * 4;
  for (int round = 1; round <= 6; round++) {
    dt_rng r;
    dt_rng_init(&r, 11, DT_RNG_TEST, (uint64_t)round);
    for (int e = 0; e < 2 * g->num_edges; e++) mask[e] = round == 6 ? 0 : dt_rng_u32(&r) % 2;
    for (int e = 0; e < 2 * g->num_edges; e++) expect_bytes += mask[e] * (double)NVEC * LEN * 4;
    fill(ex, round);
    if (round % 2) {
      CHECK_OK(dt_exchange_run(ex, mask));
    } else { /* non-blocking, with "compute" in between */
      CHECK_OK(dt_exchange_start(ex, mask));
      volatile double x = 0;
      for (int t = 0; t < 10000; t++) x += t;
      (void)x;
      CHECK_OK(dt_exchange_wait(ex));
    }
    verify(g, ex, mask, round);
  }
  /* payloads of a different size each call (compressed messages), masked and not */
  for (int round = 7; round <= 10; round++) {
    const size_t bytes = round == 10 ? 4 * LEN : 1 + 37 * (size_t)round * round;
    const uint8_t *m = round % 2 ? mask : NULL;
    if (round == 9)
      for (int e = 0; e < 2 * g->num_edges; e++) mask[e] = (uint8_t)(e % 3 != 0);
    for (int e = 0; e < 2 * g->num_edges; e++) expect_bytes += (m == NULL || m[e]) * (double)NVEC * bytes;
    fill(ex, round);
    CHECK_OK(dt_exchange_run_sized(ex, m, bytes));
    verify_prefix(g, ex, m, round, bytes);
  }
  dt_exchange_stats es = dt_exchange_stats_get(ex);
  double bytes = (double)es.bytes_sent;
  CHECK_OK(dt_comm_allreduce_sum_f64(comm, &bytes, 1));
  CHECK(bytes == expect_bytes, "bytes_sent %.0f, expected %.0f", bytes, expect_bytes);
  if (dt_comm_rank(comm) == 0) printf("result: %s n=%d bytes_sent=%.0f\n", dt_graph_type_name(type), n, bytes);
  free(mask);
  dt_exchange_free(ex);
  dt_graph_free(g);
}

/* Per edge: what `from` writes for `to`. */
static float edge_value(int from, int to, size_t k, int round) {
  return (float)(from * 1000000 + to * 100000 + round * 1000 + (int)(k % 997));
}

static void fill_edges(const dt_graph *g, dt_exchange *ex, int round) {
  for (int i = dt_exchange_first_node(ex); i < dt_exchange_first_node(ex) + dt_exchange_num_local(ex); i++)
    for (int k = 0; k < dt_graph_degree(g, i); k++) {
      float *b = dt_exchange_edge_buffer(ex, i, k);
      for (size_t t = 0; t < LEN; t++) b[t] = edge_value(i, g->nbr[g->nbr_start[i] + k], t, round);
    }
}

/* Every active edge j→i delivered the first `bytes` bytes of what j wrote for i in `round`;
 * masked edges give NULL from dt_exchange_recv, and dt_exchange_latest keeps what the edge
 * carried last (latest[e]: that round). */
static void verify_edges(const dt_graph *g, dt_exchange *ex, const uint8_t *mask, int round, size_t bytes, int *latest) {
  float *want = calloc(LEN, sizeof(float));
  for (int i = dt_exchange_first_node(ex); i < dt_exchange_first_node(ex) + dt_exchange_num_local(ex); i++)
    for (int j = 0; j < g->n; j++) {
      const int k = dt_graph_nbr_index(g, j, i);
      if (k < 0) {
        CHECK(dt_exchange_recv(ex, i, j, 0) == NULL && dt_exchange_latest(ex, i, j, 0) == NULL,
              "node %d got a view of non-neighbour %d", i, j);
        continue;
      }
      const int e = g->nbr_start[j] + k;
      const float *r = dt_exchange_recv(ex, i, j, 0);
      if (mask != NULL && !mask[e]) {
        CHECK(r == NULL, "node %d got a view of %d over a masked edge (round %d)", i, j, round);
      } else {
        for (size_t t = 0; t < LEN; t++) want[t] = edge_value(j, i, t, round);
        CHECK(r != NULL && memcmp(r, want, bytes) == 0, "edge %d->%d: the %zu-byte message of round %d differs", j, i, bytes,
              round);
        latest[e] = round;
      }
      /* same-rank senders are read in place, so only remote edges keep a masked round's old data */
      const int local = j >= dt_exchange_first_node(ex) && j < dt_exchange_first_node(ex) + dt_exchange_num_local(ex);
      const float *l = dt_exchange_latest(ex, i, j, 0);
      const int from = local ? round : latest[e];
      CHECK(l != NULL && l[0] == edge_value(j, i, 0, from), "edge %d->%d: latest is not round %d's", j, i, from);
    }
  free(want);
}

static void run_edges(dt_comm *comm, dt_graph_type type, int n) {
  dt_graph_spec s = {.type = type, .num_nodes = n, .p = 0.5, .gen_attempts = 50, .seed = 3, .degree = 2};
  dt_graph *g = NULL;
  dt_exchange *ex = NULL;
  CHECK_OK(dt_graph_build(&s, &g));
  if (g == NULL) return;
  CHECK_OK(dt_exchange_create_edges(comm, be, g, LEN, &ex));
  if (ex == NULL) {
    dt_graph_free(g);
    return;
  }
  const int first = dt_exchange_first_node(ex), last = first + dt_exchange_num_local(ex);
  CHECK(dt_exchange_send_buffer(ex, first, 0) == NULL, "a per-edge exchange has no per-node buffer");
  CHECK(dt_exchange_send_slab(ex, 0).count == g->nbr_start[last] - g->nbr_start[first], "the send slab is not the local out-edges");
  uint8_t *mask = calloc(2 * (size_t)g->num_edges + 1, 1);
  int *latest = calloc(2 * (size_t)g->num_edges + 1, sizeof(int));
  double expect_bytes = 0;
  for (int round = 0; round <= 6; round++) {
    dt_rng r;
    dt_rng_init(&r, 13, DT_RNG_TEST, (uint64_t)round);
    for (int e = 0; e < 2 * g->num_edges; e++) mask[e] = round == 5 ? 0 : dt_rng_u32(&r) % 2;
    const uint8_t *m = round == 0 ? NULL : mask;
    const size_t bytes = round % 3 == 2 ? 1 + 53 * (size_t)round : 4 * LEN;
    for (int e = 0; e < 2 * g->num_edges; e++) expect_bytes += (m == NULL || m[e]) * (double)bytes;
    fill_edges(g, ex, round);
    if (round % 2) {
      CHECK_OK(dt_exchange_run_sized(ex, m, bytes));
    } else {
      CHECK_OK(dt_exchange_start_sized(ex, m, bytes));
      CHECK_OK(dt_exchange_wait(ex));
    }
    verify_edges(g, ex, m, round, bytes, latest);
  }
  double bytes = (double)dt_exchange_stats_get(ex).bytes_sent;
  CHECK_OK(dt_comm_allreduce_sum_f64(comm, &bytes, 1));
  CHECK(bytes == expect_bytes, "per edge: bytes_sent %.0f, expected %.0f", bytes, expect_bytes);
  if (dt_comm_rank(comm) == 0) printf("result: %s n=%d per-edge bytes_sent=%.0f\n", dt_graph_type_name(type), n, bytes);
  free(mask);
  free(latest);
  dt_exchange_free(ex);
  dt_graph_free(g);
}

int main(int argc, char **argv) {
  dt_comm *comm = NULL;
  if (dt_comm_init(&argc, &argv, &comm) != DT_OK) {
    fprintf(stderr, "MPI init failed: %s\n", dt_error_message());
    return 1;
  }
  if (dt_backend_cpu_create(1, &be) != DT_OK) return 1;
  int n = argc > 1 ? atoi(argv[1]) : 5;
  if (dt_comm_size(comm) > n) {
    /* The placement error, as users see it. */
    dt_graph_spec s = {.type = DT_GRAPH_CYCLE, .num_nodes = n};
    dt_graph *g = NULL;
    dt_exchange *ex = NULL;
    CHECK_OK(dt_graph_build(&s, &g));
    CHECK_FAILS(dt_exchange_create(comm, be, g, 1, 4, &ex), DT_ERR_USAGE, "every rank must host at least one node");
    dt_graph_free(g);
  } else {
    const dt_graph_type types[] = {DT_GRAPH_WHEEL, DT_GRAPH_CYCLE, DT_GRAPH_COMPLETE, DT_GRAPH_STAR,
                                   DT_GRAPH_PATH, DT_GRAPH_RANDOM, DT_GRAPH_EXPONENTIAL, DT_GRAPH_REGULAR};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) run_graph(comm, types[t], n);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) run_edges(comm, types[t], n);
  }
  double fails = check_failures;
  if (dt_comm_allreduce_sum_f64(comm, &fails, 1) != DT_OK) { /* the other ranks' counts are unknown */
    fprintf(stderr, "summing the failure counts failed: %s\n", dt_error_message());
    fails += 1;
  }
  if (dt_comm_rank(comm) == 0) printf("test_exchange: %d checks on rank 0, %.0f failed on all ranks\n", check_count, fails);
  if (dt_comm_finalize(comm) != DT_OK) {
    fprintf(stderr, "dt_comm_finalize failed: %s\n", dt_error_message());
    fails += 1;
  }
  return fails == 0 ? 0 : 1;
}
