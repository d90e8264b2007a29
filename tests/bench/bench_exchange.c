/* Benchmark: dt_exchange_run against a raw MPI_Neighbor_allgather of the same bytes over the
 * same neighbourhoods, and the per-edge exchange (a different message to each neighbour) against
 * a raw MPI_Neighbor_alltoall, in the same run, interleaved batch by batch so drift hits all alike.
 * usage: mpiexec -n P bench_exchange [N] [floats] [graph] [batches] [reps]
 *   (default 5 nodes, 28440 floats, cycle, 30 batches of 20 exchanges) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "dt/exchange.h"
#include "dt/timer.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static dt_backend *be; /* the CPU backend owns the exchange buffers */

/* A failed exchange would leave timings of nothing: report it and stop every rank. */
static void bench_check(dt_status st) {
  if (st == DT_OK) return;
  fprintf(stderr, "bench_exchange: %s\n", dt_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
  dt_comm *comm = NULL;
  if (dt_comm_init(&argc, &argv, &comm) != DT_OK || dt_backend_cpu_create(1, &be) != DT_OK) return 1;
  int n = argc > 1 ? atoi(argv[1]) : 5;
  size_t len = argc > 2 ? (size_t)atol(argv[2]) : 28440;
  dt_graph_type type = DT_GRAPH_CYCLE;
  if (argc > 3 && strcmp(argv[3], "wheel") == 0) type = DT_GRAPH_WHEEL;
  int rank = dt_comm_rank(comm), P = dt_comm_size(comm);
  if (P != n) {
    if (rank == 0) fprintf(stderr, "bench_exchange compares with a raw allgather: run with -n %d\n", n);
    dt_ignore(dt_comm_finalize(comm)); /* exiting with the usage error anyway */
    return 2;
  }
  dt_graph_spec spec = {.type = type, .num_nodes = n};
  dt_graph *g = NULL;
  dt_exchange *ex = NULL, *exe = NULL;
  if (dt_graph_build(&spec, &g) != DT_OK || dt_exchange_create(comm, be, g, 1, len, &ex) != DT_OK ||
      dt_exchange_create_edges(comm, be, g, len, &exe) != DT_OK) {
    fprintf(stderr, "setup failed: %s\n", dt_error_message());
    return 1;
  }
  /* The raw limit: one rank per node, neighbours = graph neighbours, plain allgather. */
  int deg = dt_graph_degree(g, rank);
  const int *nb = g->nbr + g->nbr_start[rank];
  MPI_Comm raw;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, nb, MPI_UNWEIGHTED, deg, nb, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &raw);
  float *sendbuf = calloc(len, sizeof(float)), *recvbuf = calloc(len * (size_t)deg, sizeof(float));
  float *mine = dt_exchange_send_buffer(ex, rank, 0);
  for (size_t k = 0; k < len; k++) mine[k] = sendbuf[k] = (float)k;
  float *sendall = calloc(len * (size_t)deg, sizeof(float)); /* per edge: one message per neighbour */
  for (int e = 0; e < deg; e++)
    for (size_t k = 0; k < len; k++) sendall[(size_t)e * len + k] = dt_exchange_edge_buffer(exe, rank, e)[k] = (float)(e + k);

  const int batches = argc > 4 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 30;
  const int reps = argc > 5 && atoi(argv[5]) > 0 ? atoi(argv[5]) : 20;
  double *t_raw = calloc((size_t)batches, sizeof(double)), *t_dt = calloc((size_t)batches, sizeof(double));
  double *t_a2a = calloc((size_t)batches, sizeof(double)), *t_edge = calloc((size_t)batches, sizeof(double));
  for (int w = 0; w < reps; w++) {
    MPI_Neighbor_allgather(sendbuf, (int)len, MPI_FLOAT, recvbuf, (int)len, MPI_FLOAT, raw);
    bench_check(dt_exchange_run(ex, NULL));
    MPI_Neighbor_alltoall(sendall, (int)len, MPI_FLOAT, recvbuf, (int)len, MPI_FLOAT, raw);
    bench_check(dt_exchange_run(exe, NULL));
  }
  for (int b = 0; b < batches; b++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = dt_time_now();
    for (int r = 0; r < reps; r++)
      MPI_Neighbor_allgather(sendbuf, (int)len, MPI_FLOAT, recvbuf, (int)len, MPI_FLOAT, raw);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = dt_time_now();
    for (int r = 0; r < reps; r++) bench_check(dt_exchange_run(ex, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = dt_time_now();
    for (int r = 0; r < reps; r++)
      MPI_Neighbor_alltoall(sendall, (int)len, MPI_FLOAT, recvbuf, (int)len, MPI_FLOAT, raw);
    MPI_Barrier(MPI_COMM_WORLD);
    double t3 = dt_time_now();
    for (int r = 0; r < reps; r++) bench_check(dt_exchange_run(exe, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    double t4 = dt_time_now();
    t_raw[b] = (t1 - t0) / reps;
    t_dt[b] = (t2 - t1) / reps;
    t_a2a[b] = (t3 - t2) / reps;
    t_edge[b] = (t4 - t3) / reps;
  }
  qsort(t_raw, batches, sizeof(double), cmp);
  qsort(t_dt, batches, sizeof(double), cmp);
  qsort(t_a2a, batches, sizeof(double), cmp);
  qsort(t_edge, batches, sizeof(double), cmp);
  if (rank == 0) {
    double raw_us = 1e6 * t_raw[batches / 2], dt_us = 1e6 * t_dt[batches / 2];
    printf("exchange benchmark: %s graph, %d nodes on %d ranks, %zu floats per node\n",
           dt_graph_type_name(type), n, P, len);
    printf("  raw MPI_Neighbor_allgather: %8.1f us (median of %d batches of %d)\n", raw_us, batches, reps);
    printf("  dt_exchange_run:            %8.1f us\n", dt_us);
    printf("  overhead: %+.1f%% (ratio %.3f)\n", 100.0 * (dt_us / raw_us - 1.0), dt_us / raw_us);
    double a2a_us = 1e6 * t_a2a[batches / 2], edge_us = 1e6 * t_edge[batches / 2];
    printf("  per edge, raw MPI_Neighbor_alltoall: %8.1f us\n", a2a_us);
    printf("  per edge, dt_exchange_run:           %8.1f us\n", edge_us);
    printf("  per-edge overhead: %+.1f%% (ratio %.3f)\n", 100.0 * (edge_us / a2a_us - 1.0), edge_us / a2a_us);
  }
  free(sendall);
  free(t_a2a);
  free(t_edge);
  dt_exchange_free(exe);
  free(sendbuf);
  free(recvbuf);
  free(t_raw);
  free(t_dt);
  MPI_Comm_free(&raw);
  dt_exchange_free(ex);
  dt_graph_free(g);
  return dt_comm_finalize(comm) == DT_OK ? 0 : 1;
}
