/* The MPI_COMM_WORLD handle behind dt_comm: initialisation, broadcast, the few reductions the
 * runner needs, and the node-ordered sums and gathers that keep results independent of P.
 * A process started without a launcher (no mpirun, no srun) is the whole job: it does not start
 * MPI at all, since singleton start-up costs about half a second and one rank needs no MPI call
 * (every function here and in exchange.c returns early for one rank). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/core_impl.h"
#include "dt/exchange.h"
#include "graph_impl.h"
#include "exchange_impl.h"

/* Whether a launcher started this process: the variables OpenMPI's mpirun, PMIx/PMI2 (srun,
 * other MPIs' launchers) and SLURM steps set in every rank. */
static int launched(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_STEP_ID", NULL};
  for (int i = 0; vars[i] != NULL; i++)
    if (getenv(vars[i]) != NULL) return 1;
  return 0;
}

dt_status dt_comm_init(int *argc, char ***argv, dt_comm **out) {
  dt_status st = DT_OK;
  dt_comm *c = NULL;
  int initialized = 0;
  *out = NULL;
  DT_MPI_GOTO(MPI_Initialized(&initialized));
  DT_ALLOC_GOTO(c, 1, "communicator");
  if (!initialized && !launched() && getenv("DT_MPI_SINGLETON") == NULL) {
    c->comm = MPI_COMM_NULL; /* the whole job in one process, without MPI */
    c->size = c->host_size = c->num_hosts = 1;
    *out = c;
    return DT_OK;
  }
  c->mpi = 1;
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
  /* Placement: how many ranks share this host (they share its cores) and how many hosts. */
  MPI_Comm host = MPI_COMM_NULL;
  DT_MPI_GOTO(MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &host));
  int host_rank = 0;
  DT_MPI_GOTO(MPI_Comm_size(host, &c->host_size));
  DT_MPI_GOTO(MPI_Comm_rank(host, &host_rank));
  DT_MPI_GOTO(MPI_Comm_free(&host));
  int leader = host_rank == 0;
  DT_MPI_GOTO(MPI_Allreduce(&leader, &c->num_hosts, 1, MPI_INT, MPI_SUM, c->comm));
  *out = c;
  c = NULL;
cleanup:
  dt_free(c);
  return st;
}

dt_status dt_comm_finalize(dt_comm *c) {
  if (c == NULL) return DT_OK;
  const int owns = c->owns_mpi, barrier = c->mpi && c->size > 1;
  const MPI_Comm comm = c->comm;
  dt_free(c);
  /* Every rank's messages are delivered before any rank tears MPI down: a rank that finalizes
   * while a peer's TCP connection to it is still being set up can crash in OpenMPI 4.1's
   * finalize (open-mpi/ompi#10313; seen as a SIGSEGV in the cluster suite after a job of a few
   * broadcasts). Finalize waits for every rank anyway (a PMIx fence). */
  if (owns && barrier) DT_MPI(MPI_Barrier(comm));
  if (owns) DT_MPI(MPI_Finalize());
  return DT_OK;
}

int dt_comm_rank(const dt_comm *c) { return c->rank; }
void dt_comm_abort(dt_comm *c, int code) {
  if (c->mpi) MPI_Abort(c->comm, code);
  exit(code); /* one process without MPI: nobody else to stop */
}
int dt_comm_size(const dt_comm *c) { return c->size; }
int dt_comm_launched(const dt_comm *c) { return c->mpi; }
int dt_comm_host_size(const dt_comm *c) { return c->host_size; }
int dt_comm_num_hosts(const dt_comm *c) { return c->num_hosts; }

dt_status dt_comm_bcast(dt_comm *c, void *buf, size_t bytes, int root) {
  if (c->size == 1) return DT_OK;
  /* Broadcast in chunks below INT_MAX so any size works. */
  for (size_t off = 0; off < bytes;) {
    size_t chunk = bytes - off > (1u << 30) ? (1u << 30) : bytes - off;
    DT_MPI(MPI_Bcast((char *)buf + off, (int)chunk, MPI_BYTE, root, c->comm));
    off += chunk;
  }
  return DT_OK;
}

static dt_status allreduce(dt_comm *c, void *buf, int n, MPI_Datatype type, MPI_Op op) {
  if (c->size == 1) return DT_OK;
  DT_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, n, type, op, c->comm));
  return DT_OK;
}

dt_status dt_comm_allreduce_sum_f64(dt_comm *c, double *buf, int n) {
  return allreduce(c, buf, n, MPI_DOUBLE, MPI_SUM);
}
dt_status dt_comm_allreduce_max_f64(dt_comm *c, double *buf, int n) {
  return allreduce(c, buf, n, MPI_DOUBLE, MPI_MAX);
}
dt_status dt_comm_allreduce_min_f64(dt_comm *c, double *buf, int n) {
  return allreduce(c, buf, n, MPI_DOUBLE, MPI_MIN);
}

/* Receives (or takes locally) node j's vector on rank 0, in node order, for every node with
 * send[j] != 0 (NULL: all), and hands it to fn. After a failed fn the remaining vectors are still
 * received (the senders must not block) but not handed on; rank 0 returns the first failure. */
static dt_status node_stream(dt_comm *c, int num_nodes, const float *const *v, size_t d, const uint8_t *send, float *buf,
                             dt_status (*fn)(void *ctx, int node, const float *x), void *ctx) {
  const int first = dt_placement_first(num_nodes, c->size, c->rank);
  const int count = dt_placement_count(num_nodes, c->size, c->rank);
  dt_status st = DT_OK;
  DT_CHECK(d <= (size_t)1 << 30, DT_ERR_INTERNAL, "vector too long for one message");
  if (c->rank == 0) {
    for (int j = 0; j < num_nodes; j++) {
      if (send != NULL && !send[j]) continue;
      const float *x;
      if (j < count) {
        x = v[j];
      } else {
        DT_MPI(MPI_Recv(buf, (int)d, MPI_FLOAT, dt_placement_rank(num_nodes, c->size, j), j, c->comm, MPI_STATUS_IGNORE));
        x = buf;
      }
      if (st == DT_OK) st = fn(ctx, j, x);
    }
  } else {
    for (int l = 0; l < count; l++)
      if (send == NULL || send[first + l]) DT_MPI(MPI_Send(v[l], (int)d, MPI_FLOAT, 0, first + l, c->comm));
  }
  return st;
}

dt_status dt_comm_node_stream(dt_comm *c, int num_nodes, const float *const *v, size_t d, const uint8_t *send,
                              dt_status (*fn)(void *ctx, int node, const float *x), void *ctx) {
  dt_status st = DT_OK;
  float *buf = NULL;
  if (c->rank == 0 && c->size > 1) DT_ALLOC_GOTO(buf, d, "receive buffer");
  st = node_stream(c, num_nodes, v, d, send, buf, fn, ctx);
cleanup:
  dt_free(buf);
  return st;
}

typedef struct sum_ctx {
  double *out;
  size_t d;
} sum_ctx;

static dt_status add_to(void *ctx, int node, const float *x) {
  sum_ctx *s = ctx;
  (void)node;
  for (size_t i = 0; i < s->d; i++) s->out[i] += x[i];
  return DT_OK;
}

dt_status dt_comm_node_sum(dt_comm *c, int num_nodes, const float *const *v, size_t d, double *out) {
  memset(out, 0, sizeof(double) * d);
  sum_ctx s = {.out = out, .d = d};
  DT_TRY(dt_comm_node_stream(c, num_nodes, v, d, NULL, add_to, &s));
  return c->size > 1 ? dt_comm_bcast(c, out, sizeof(double) * d, 0) : DT_OK;
}

typedef struct gather_ctx {
  float *all;
  size_t d;
} gather_ctx;

static dt_status put(void *ctx, int node, const float *x) {
  gather_ctx *g = ctx;
  memcpy(g->all + (size_t)node * g->d, x, sizeof(float) * g->d);
  return DT_OK;
}

dt_status dt_comm_node_gather(dt_comm *c, int num_nodes, const float *const *v, size_t d, float *all) {
  gather_ctx g = {.all = all, .d = d};
  return dt_comm_node_stream(c, num_nodes, v, d, NULL, put, &g);
}

dt_status dt_comm_gather_rows(dt_comm *c, int num_nodes, const double *local, int k, double *all) {
  dt_status st = DT_OK;
  int *counts = NULL, *displs = NULL;
  const int count = dt_placement_count(num_nodes, c->size, c->rank);
  if (c->size == 1) {
    memcpy(all, local, sizeof(double) * (size_t)num_nodes * (size_t)k);
    return DT_OK;
  }
  if (c->rank == 0) {
    DT_ALLOC_GOTO(counts, c->size, "gather counts");
    DT_ALLOC_GOTO(displs, c->size, "gather displacements");
    for (int r = 0; r < c->size; r++) {
      counts[r] = dt_placement_count(num_nodes, c->size, r) * k;
      displs[r] = dt_placement_first(num_nodes, c->size, r) * k;
    }
  }
  DT_MPI_GOTO(MPI_Gatherv(local, count * k, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, c->comm));
cleanup:
  dt_free(counts);
  dt_free(displs);
  return st;
}

dt_status dt_comm_allgather_nodes(dt_comm *c, int num_nodes, const double *local, double *all) {
  dt_status st = DT_OK;
  int *counts = NULL, *displs = NULL;
  const int first = dt_placement_first(num_nodes, c->size, c->rank), count = dt_placement_count(num_nodes, c->size, c->rank);
  if (c->size == 1) {
    if (all != local) memcpy(all, local, sizeof(double) * (size_t)num_nodes);
    return DT_OK;
  }
  DT_ALLOC_GOTO(counts, c->size, "allgather counts");
  DT_ALLOC_GOTO(displs, c->size, "allgather displacements");
  for (int r = 0; r < c->size; r++) {
    counts[r] = dt_placement_count(num_nodes, c->size, r);
    displs[r] = dt_placement_first(num_nodes, c->size, r);
  }
  if (local == all + first) DT_MPI_GOTO(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_DOUBLE, c->comm));
  else DT_MPI_GOTO(MPI_Allgatherv(local, count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, c->comm));
cleanup:
  dt_free(counts);
  dt_free(displs);
  return st;
}

/* A failed give travels as this size, so the receiver knows and the transfer stays matched. */
#define BLOB_FAILED UINT64_MAX
enum { BLOB_TAG = 7301 };

/* Sends size then bytes (in pieces below INT_MAX) to `to`. */
static dt_status blob_send(dt_comm *c, int to, const void *data, uint64_t size) {
  DT_MPI(MPI_Send(&size, 1, MPI_UINT64_T, to, BLOB_TAG, c->comm));
  for (uint64_t off = 0; size != BLOB_FAILED && off < size; off += 1u << 30) {
    const uint64_t n = size - off < (1u << 30) ? size - off : (1u << 30);
    DT_MPI(MPI_Send((const char *)data + off, (int)n, MPI_BYTE, to, BLOB_TAG, c->comm));
  }
  return DT_OK;
}

/* Receives what blob_send sent into *buf (grown as needed); *size = BLOB_FAILED for a failure. */
static dt_status blob_recv(dt_comm *c, int from, char **buf, uint64_t *cap, uint64_t *size) {
  DT_MPI(MPI_Recv(size, 1, MPI_UINT64_T, from, BLOB_TAG, c->comm, MPI_STATUS_IGNORE));
  if (*size == BLOB_FAILED) return DT_OK;
  if (*size > *cap) {
    char *grown = realloc(*buf, *size);
    DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory receiving %llu bytes", (unsigned long long)*size);
    *buf = grown;
    *cap = *size;
  }
  for (uint64_t off = 0; off < *size; off += 1u << 30) {
    const uint64_t n = *size - off < (1u << 30) ? *size - off : (1u << 30);
    DT_MPI(MPI_Recv(*buf + off, (int)n, MPI_BYTE, from, BLOB_TAG, c->comm, MPI_STATUS_IGNORE));
  }
  return DT_OK;
}

/* Every rank learns whether all succeeded; the first local failure keeps its message. */
static dt_status blobs_agree(dt_comm *c, dt_status st, const char *what) {
  double ok = st == DT_OK;
  if (c->size > 1) {
    const dt_status ast = dt_comm_allreduce_min_f64(c, &ok, 1);
    if (st == DT_OK && ast != DT_OK) return ast;
  }
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_IO, "%s failed on another rank (its message is in that rank's output)", what);
  return DT_OK;
}

/* Node i's bytes travel from the rank that gives them (to_root: its owner; else rank 0) to the
 * rank that takes them (the other one); give and take see local indices on the owner, node ids
 * on rank 0. */
static dt_status blobs_move(dt_comm *c, int num_nodes, int to_root, dt_blob_give give, dt_blob_take take, void *ctx) {
  dt_status st = DT_OK, mpi = DT_OK;
  char *buf = NULL;
  uint64_t cap = 0;
  const int first = dt_placement_first(num_nodes, c->size, c->rank);
  for (int i = 0; i < num_nodes && mpi == DT_OK; i++) {
    const int owner = dt_placement_rank(num_nodes, c->size, i);
    const int src = to_root ? owner : 0, dst = to_root ? 0 : owner;
    const int index = c->rank == owner ? i - first : i; /* what give and take see on this rank */
    if (c->rank == src) {
      const void *data = NULL;
      size_t size = 0;
      const dt_status g = st == DT_OK ? give(ctx, index, &data, &size) : DT_ERR_IO;
      if (g != DT_OK && st == DT_OK) st = g;
      if (dst != src) mpi = blob_send(c, dst, data, g == DT_OK ? (uint64_t)size : BLOB_FAILED);
      else if (g == DT_OK && st == DT_OK) st = take(ctx, index, data, size);
    } else if (c->rank == dst) {
      uint64_t got = 0;
      mpi = blob_recv(c, src, &buf, &cap, &got);
      if (mpi == DT_OK && got == BLOB_FAILED && st == DT_OK) st = DT_ERROR(DT_ERR_IO, "rank %d could not provide node %d's state", src, i);
      if (mpi == DT_OK && got != BLOB_FAILED && st == DT_OK) st = take(ctx, index, buf, (size_t)got);
    }
  }
  dt_free(buf);
  if (mpi != DT_OK) return mpi;
  return blobs_agree(c, st, to_root ? "gathering node state" : "distributing node state");
}

dt_status dt_comm_node_blobs_to_root(dt_comm *c, int num_nodes, dt_blob_give give, dt_blob_take take, void *ctx) {
  return blobs_move(c, num_nodes, 1, give, take, ctx);
}

dt_status dt_comm_node_blobs_from_root(dt_comm *c, int num_nodes, dt_blob_give give, dt_blob_take take, void *ctx) {
  return blobs_move(c, num_nodes, 0, give, take, ctx);
}

void dt_comm_host(char *buf, size_t size) {
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0, initialized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS || !initialized || MPI_Get_processor_name(name, &len) != MPI_SUCCESS) len = 0;
  if (len == 0 && gethostname(name, sizeof name - 1) == 0) len = (int)strnlen(name, sizeof name - 1);
  name[len] = '\0';
  snprintf(buf, size, "%s", len ? name : "unknown");
}

/* ---- point-to-point payloads (the asynchronous engine, optimizers/async.c) ------------------ */

enum { PAYLOAD_TAG = 7302 };

struct dt_comm_request {
  MPI_Request req;
  void *copy; /* the bytes in flight (owned) */
};

dt_status dt_comm_send_bytes(dt_comm *c, int to, const void *buf, size_t bytes, dt_comm_request **out) {
  *out = NULL;
  DT_CHECK(bytes < (1u << 31), DT_ERR_INTERNAL, "a %zu-byte payload is too large for one message", bytes);
  dt_comm_request *r = dt_calloc_(1, sizeof *r);
  DT_CHECK(r != NULL, DT_ERR_MEMORY, "out of memory sending %zu bytes", bytes);
  r->copy = malloc(bytes > 0 ? bytes : 1);
  if (r->copy == NULL) {
    dt_free(r);
    return DT_ERROR(DT_ERR_MEMORY, "out of memory sending %zu bytes", bytes);
  }
  memcpy(r->copy, buf, bytes);
  const int rc = MPI_Isend(r->copy, (int)bytes, MPI_BYTE, to, PAYLOAD_TAG, c->comm, &r->req);
  if (rc != MPI_SUCCESS) {
    free(r->copy);
    dt_free(r);
    return DT_ERROR(DT_ERR_MPI, "MPI_Isend of %zu bytes to rank %d failed (%d)", bytes, to, rc);
  }
  *out = r;
  return DT_OK;
}

dt_status dt_comm_recv_bytes(dt_comm *c, int from, void *buf, size_t bytes) {
  DT_CHECK(bytes < (1u << 31), DT_ERR_INTERNAL, "a %zu-byte payload is too large for one message", bytes);
  DT_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, from, PAYLOAD_TAG, c->comm, MPI_STATUS_IGNORE));
  return DT_OK;
}

dt_status dt_comm_request_finish(dt_comm_request *r, int wait, int *done) {
  int flag = 1;
  if (wait) DT_MPI(MPI_Wait(&r->req, MPI_STATUS_IGNORE));
  else DT_MPI(MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE));
  if (done != NULL) *done = flag;
  if (flag) {
    free(r->copy);
    dt_free(r);
  }
  return DT_OK;
}
