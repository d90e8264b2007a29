/* The MPI_COMM_WORLD handle behind dt_comm: initialisation, broadcast and the few reductions the
 * runner and the centralized baseline need, with their bytes and time counted. */
#include <mpi.h>

#include "../core/core_impl.h"
#include "dt/exchange.h"
#include "dt/timer.h"
#include "graph_impl.h"
#include "exchange_impl.h"

dt_status dt_comm_init(int *argc, char ***argv, dt_comm **out) {
  dt_status st = DT_OK;
  dt_comm *c = NULL;
  int initialized = 0;
  *out = NULL;
  DT_MPI_GOTO(MPI_Initialized(&initialized));
  DT_ALLOC_GOTO(c, 1, "communicator");
  if (!initialized) {
    int provided = 0;
    DT_MPI_GOTO(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    c->owns_mpi = 1;
  }
  c->comm = MPI_COMM_WORLD;
  DT_MPI_GOTO(MPI_Comm_rank(c->comm, &c->rank));
  DT_MPI_GOTO(MPI_Comm_size(c->comm, &c->size));
  /* Errors come back as codes (wrapped by DT_MPI) instead of aborting the job. */
  DT_MPI_GOTO(MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN));
  *out = c;
  c = NULL;
cleanup:
  dt_free(c);
  return st;
}

dt_status dt_comm_finalize(dt_comm *c) {
  if (c == NULL) return DT_OK;
  int owns = c->owns_mpi;
  dt_free(c);
  if (owns) DT_MPI(MPI_Finalize());
  return DT_OK;
}

int dt_comm_rank(const dt_comm *c) { return c->rank; }
int dt_comm_size(const dt_comm *c) { return c->size; }

dt_status dt_comm_bcast(dt_comm *c, void *buf, size_t bytes, int root) {
  /* Broadcast in chunks below INT_MAX so any size works. */
  for (size_t off = 0; off < bytes;) {
    size_t chunk = bytes - off > (1u << 30) ? (1u << 30) : bytes - off;
    DT_MPI(MPI_Bcast((char *)buf + off, (int)chunk, MPI_BYTE, root, c->comm));
    off += chunk;
  }
  return DT_OK;
}

static dt_status allreduce(dt_comm *c, void *buf, int n, MPI_Datatype type, MPI_Op op,
                           size_t elem) {
  if (c->size == 1) return DT_OK;
  double t0 = dt_time_now();
  DT_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, n, type, op, c->comm));
  c->stats.seconds += dt_time_now() - t0;
  c->stats.bytes += (uint64_t)n * elem;
  return DT_OK;
}

dt_status dt_comm_allreduce_sum_f64(dt_comm *c, double *buf, int n) {
  return allreduce(c, buf, n, MPI_DOUBLE, MPI_SUM, sizeof(double));
}
dt_status dt_comm_allreduce_sum_f32(dt_comm *c, float *buf, int n) {
  return allreduce(c, buf, n, MPI_FLOAT, MPI_SUM, sizeof(float));
}
dt_status dt_comm_allreduce_max_f64(dt_comm *c, double *buf, int n) {
  return allreduce(c, buf, n, MPI_DOUBLE, MPI_MAX, sizeof(double));
}
dt_status dt_comm_allreduce_min_f64(dt_comm *c, double *buf, int n) {
  return allreduce(c, buf, n, MPI_DOUBLE, MPI_MIN, sizeof(double));
}
dt_status dt_comm_barrier(dt_comm *c) {
  DT_MPI(MPI_Barrier(c->comm));
  return DT_OK;
}
dt_comm_stats dt_comm_stats_get(const dt_comm *c) { return c->stats; }
