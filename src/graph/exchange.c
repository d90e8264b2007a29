/* Neighbourhood exchange over a distributed-graph communicator.
 *
 * Each rank keeps one send slab and one receive slab of "units". Per node (dt_exchange_create)
 * a unit is a local node's vectors, and a receive slot holds a remote node that some local node
 * neighbours; per edge (dt_exchange_create_edges) a unit is one local out-edge's message, and a
 * slot one remote in-edge's. For each neighbour rank an indexed MPI datatype picks exactly the
 * units that rank needs out of the send slab and drops them into their slots on arrival, both
 * sides listing them in (sender, receiver) id order, so one MPI_Neighbor_alltoallw moves
 * everything without packing, and same-rank neighbours are read straight from the send slab.
 * Both slabs are backend memory; on a backend whose memory is not the host's, MPI works on host
 * copies (Debian's OpenMPI is not CUDA-aware) that are downloaded before and uploaded after each
 * exchange. */
#include <mpi.h>
#include <string.h>

#include "../core/core_impl.h"
#include "dt/timer.h"
#include "exchange_impl.h"

struct dt_exchange {
  dt_comm *comm;
  dt_backend *be;
  const dt_graph *g;
  int nvec;
  int len;
  int per_edge;       /* units are out-edges (one vector each), not nodes */
  size_t vec_stride;  /* floats between vectors of one unit (len rounded up to 16) */
  size_t node_stride; /* floats per unit: nvec * vec_stride */
  int first, count;   /* local nodes */
  int edge0;          /* per edge: g->nbr_start[first], the first local out-edge */
  size_t nunits;      /* send units: count, or the local out-edges */
  float *send;        /* nunits * node_stride */
  float *recv;        /* nslots * node_stride */
  size_t nslots;
  float *send_h, *recv_h; /* host copies for MPI; the slabs themselves on a host-memory backend */
  int *slot;          /* receive slot per graph node (per edge: per directed edge), or -1 */
  int nranks;         /* neighbour ranks (same set in and out: the graph is undirected) */
  int *ranks;
  int *send_start, *send_nodes; /* per neighbour rank: local nodes (edges) it needs (CSR) */
  int *recv_start, *recv_nodes; /* per neighbour rank: its nodes (edges) we need (CSR) */
  MPI_Comm gcomm;
  MPI_Datatype *full_send, *full_recv; /* committed types for unmasked exchanges */
  MPI_Datatype *call_send, *call_recv; /* types of the exchange in flight */
  int *call_owned;                     /* call types to free at wait (masked exchanges) */
  int *counts_s, *counts_r;
  MPI_Aint *displs;                    /* all zero: the types carry the offsets */
  MPI_Request req;
  int in_flight;
  uint8_t *mask;                       /* copy of the last exchange's mask, or all ones */
  double t_start;
  dt_exchange_stats stats;
};

int dt_exchange_first_node(const dt_exchange *ex) { return ex->first; }
int dt_exchange_num_local(const dt_exchange *ex) { return ex->count; }
dt_exchange_stats dt_exchange_stats_get(const dt_exchange *ex) { return ex->stats; }

float *dt_exchange_send_buffer(dt_exchange *ex, int node, int vec) {
  if (ex->per_edge) return NULL;
  return ex->send + (size_t)(node - ex->first) * ex->node_stride + (size_t)vec * ex->vec_stride;
}

float *dt_exchange_edge_buffer(dt_exchange *ex, int node, int k) {
  if (!ex->per_edge) return NULL;
  return ex->send + (size_t)(ex->g->nbr_start[node] + k - ex->edge0) * ex->node_stride;
}

/* Vector vec of what nbr sent node over the edge nbr→node, the k-th of nbr's list. */
static const float *edge_data(const dt_exchange *ex, int nbr, int k, int vec) {
  const int e = ex->g->nbr_start[nbr] + k;
  const int local = nbr >= ex->first && nbr < ex->first + ex->count;
  size_t unit;
  if (ex->per_edge) unit = local ? (size_t)(e - ex->edge0) : (size_t)ex->slot[e];
  else unit = local ? (size_t)(nbr - ex->first) : (size_t)ex->slot[nbr];
  return (local ? ex->send : ex->recv) + unit * ex->node_stride + (size_t)vec * ex->vec_stride;
}

const float *dt_exchange_recv(const dt_exchange *ex, int node, int nbr, int vec) {
  const dt_graph *g = ex->g;
  int k = dt_graph_nbr_index(g, nbr, node); /* position of node in nbr's list: edge nbr→node */
  if (k < 0 || !ex->mask[g->nbr_start[nbr] + k]) return NULL;
  return edge_data(ex, nbr, k, vec);
}

const float *dt_exchange_latest(const dt_exchange *ex, int node, int nbr, int vec) {
  int k = dt_graph_nbr_index(ex->g, nbr, node);
  if (k < 0) return NULL;
  return edge_data(ex, nbr, k, vec);
}

/* A type selecting the first `bytes` bytes of the nvec vectors of each listed node (node i at
 * base_index[i] node strides into the buffer). An empty list gives MPI_DATATYPE_NULL. */
static dt_status make_type(const dt_exchange *ex, const int *base_index, int nn, size_t bytes, MPI_Datatype *out) {
  dt_status st = DT_OK;
  MPI_Aint *displs = NULL;
  *out = MPI_DATATYPE_NULL;
  if (nn == 0) return DT_OK;
  DT_ALLOC_GOTO(displs, (size_t)nn * ex->nvec, "datatype displacements");
  for (int i = 0; i < nn; i++)
    for (int v = 0; v < ex->nvec; v++)
      displs[i * ex->nvec + v] =
          (MPI_Aint)(sizeof(float) * ((size_t)base_index[i] * ex->node_stride + (size_t)v * ex->vec_stride));
  DT_MPI_GOTO(MPI_Type_create_hindexed_block(nn * ex->nvec, (int)bytes, displs, MPI_BYTE, out));
  DT_MPI_GOTO(MPI_Type_commit(out));
cleanup:
  dt_free(displs);
  return st;
}

static int rank_of(const dt_exchange *ex, int node) {
  return dt_placement_rank(ex->g->n, ex->comm->size, node);
}

/* Per node: a receive slot for every remote node in `need` (a neighbour of a local node), in
 * id order (grouped by rank); the send list to rank r holds the local nodes with a neighbour on
 * r, in id order. */
static dt_status build_node_lists(dt_exchange *ex, const int *rank_pos, const char *need) {
  dt_status st = DT_OK;
  const dt_graph *g = ex->g;
  DT_ALLOC_GOTO(ex->slot, (size_t)g->n, "receive slots");
  int nslots = 0;
  for (int j = 0; j < g->n; j++) {
    ex->slot[j] = -1;
    if (need[j]) {
      ex->slot[j] = nslots++; /* nodes are in rank blocks, so slots are grouped by rank */
      ex->recv_start[rank_pos[rank_of(ex, j)] + 1]++;
    }
  }
  DT_ALLOC_GOTO(ex->recv_nodes, nslots + 1, "receive lists");
  for (int k = 0; k < ex->nranks; k++) ex->recv_start[k + 1] += ex->recv_start[k];
  for (int j = 0, n = 0; j < g->n; j++)
    if (need[j]) ex->recv_nodes[n++] = j;

  /* Send lists: by symmetry, local node i goes to rank r iff it has a neighbour on r. */
  int total = 0;
  for (int k = 0; k < ex->nranks; k++) {
    for (int i = ex->first; i < ex->first + ex->count; i++) {
      int hit = 0;
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1] && !hit; e++) hit = rank_of(ex, g->nbr[e]) == ex->ranks[k];
      total += hit;
    }
    ex->send_start[k + 1] = total;
  }
  DT_ALLOC_GOTO(ex->send_nodes, total + 1, "send lists");
  for (int k = 0, n = 0; k < ex->nranks; k++)
    for (int i = ex->first; i < ex->first + ex->count; i++) {
      int hit = 0;
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1] && !hit; e++) hit = rank_of(ex, g->nbr[e]) == ex->ranks[k];
      if (hit) ex->send_nodes[n++] = i;
    }
  ex->nslots = (size_t)nslots;
cleanup:
  return st;
}

/* Per edge: a receive slot for every directed edge j→i with j remote and i local, in (j, i)
 * order (grouped by j's rank); the send list to rank r holds the local out-edges i→j with j on r
 * in (i, j) order, which is the order r's slots list them in. rank_pos maps a rank to its
 * position in ex->ranks. */
static dt_status build_edge_lists(dt_exchange *ex, const int *rank_pos) {
  dt_status st = DT_OK;
  const dt_graph *g = ex->g;
  const int me = ex->comm->rank, last = ex->first + ex->count;
  DT_ALLOC_GOTO(ex->slot, 2 * (size_t)g->num_edges + 1, "receive slots");
  int nslots = 0;
  for (int j = 0; j < g->n; j++)
    for (int e = g->nbr_start[j]; e < g->nbr_start[j + 1]; e++) {
      const int i = g->nbr[e];
      ex->slot[e] = -1;
      if (rank_of(ex, j) != me && i >= ex->first && i < last) {
        ex->slot[e] = nslots++;
        ex->recv_start[rank_pos[rank_of(ex, j)] + 1]++;
      }
    }
  DT_ALLOC_GOTO(ex->recv_nodes, nslots + 1, "receive lists");
  for (int k = 0; k < ex->nranks; k++) ex->recv_start[k + 1] += ex->recv_start[k];
  for (int e = 0, n = 0; e < 2 * g->num_edges; e++)
    if (ex->slot[e] >= 0) ex->recv_nodes[n++] = e;

  const int e0 = g->nbr_start[ex->first], e1 = g->nbr_start[last];
  DT_ALLOC_GOTO(ex->send_nodes, e1 - e0 + 1, "send lists");
  int n = 0;
  for (int k = 0; k < ex->nranks; k++) {
    for (int e = e0; e < e1; e++)
      if (rank_of(ex, g->nbr[e]) == ex->ranks[k]) ex->send_nodes[n++] = e;
    ex->send_start[k + 1] = n;
  }
  ex->nslots = (size_t)nslots;
cleanup:
  return st;
}

/* Finds the neighbour ranks (those hosting a neighbour of a local node), then the per-rank send
 * and receive lists of units. */
static dt_status build_lists(dt_exchange *ex) {
  dt_status st = DT_OK;
  const dt_graph *g = ex->g;
  const int P = ex->comm->size, me = ex->comm->rank;
  int *rank_pos = NULL;
  char *need = NULL;
  DT_ALLOC_GOTO(rank_pos, P, "rank table");
  DT_ALLOC_GOTO(need, (size_t)g->n, "node table");
  for (int r = 0; r < P; r++) rank_pos[r] = -1;
  /* Remote nodes adjacent to a local node, and the ranks hosting them. */
  for (int i = ex->first; i < ex->first + ex->count; i++)
    for (int k = g->nbr_start[i]; k < g->nbr_start[i + 1]; k++) {
      int j = g->nbr[k];
      if (rank_of(ex, j) != me) need[j] = 1;
    }
  for (int j = 0; j < g->n; j++)
    if (need[j] && rank_pos[rank_of(ex, j)] < 0) rank_pos[rank_of(ex, j)] = 0;
  for (int r = 0; r < P; r++)
    if (rank_pos[r] == 0) ex->nranks++;
  DT_ALLOC_GOTO(ex->ranks, ex->nranks + 1, "neighbour ranks");
  for (int r = 0, k = 0; r < P; r++)
    if (rank_pos[r] == 0) {
      rank_pos[r] = k;
      ex->ranks[k++] = r;
    }

  DT_ALLOC_GOTO(ex->recv_start, ex->nranks + 1, "receive lists");
  DT_ALLOC_GOTO(ex->send_start, ex->nranks + 1, "send lists");
  if (ex->per_edge) DT_TRY_GOTO(build_edge_lists(ex, rank_pos));
  else DT_TRY_GOTO(build_node_lists(ex, rank_pos, need));
cleanup:
  dt_free(rank_pos);
  dt_free(need);
  return st;
}

/* Types for neighbour rank k: nodes from `list` (len nn) that pass `keep`, placed at `base`. */
static dt_status list_type(dt_exchange *ex, const int *list, int nn, int local_send,
                           const uint8_t *mask, int peer, size_t bytes, MPI_Datatype *out, int *kept) {
  dt_status st = DT_OK;
  int *base = NULL, m = 0;
  DT_ALLOC_GOTO(base, nn + 1, "datatype nodes");
  const dt_graph *g = ex->g;
  for (int t = 0; t < nn; t++) {
    int i = list[t], keep = 1;
    if (ex->per_edge) { /* i is a directed edge: a local out-edge (send) or a remote in-edge */
      if (mask == NULL || mask[i]) base[m++] = local_send ? i - ex->edge0 : ex->slot[i];
      continue;
    }
    if (mask != NULL) {
      /* i sends to rank `peer` when some active edge i→j has j on peer (send side), or some
       * active edge i→j has j local (receive side, i on peer). */
      keep = 0;
      for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1] && !keep; e++) {
        int target_rank = rank_of(ex, g->nbr[e]);
        keep = mask[e] && target_rank == (local_send ? peer : ex->comm->rank);
      }
    }
    if (keep) base[m++] = local_send ? i - ex->first : ex->slot[i];
  }
  *kept = m;
  DT_TRY_GOTO(make_type(ex, base, m, bytes, out));
cleanup:
  dt_free(base);
  return st;
}

static dt_status create(dt_comm *comm, dt_backend *be, const dt_graph *g, int per_edge, int nvec, size_t len,
                        dt_exchange **out) {
  dt_status st = DT_OK;
  dt_exchange *ex = NULL;
  *out = NULL;
  DT_TRY_GOTO(dt_placement_check(g->n, comm->size));
  DT_CHECK_GOTO(nvec >= 1 && len >= 1 && len < (1u << 28), DT_ERR_INTERNAL,
                "exchange of %d vectors of %zu floats is not supported", nvec, len);
  DT_ALLOC_GOTO(ex, 1, "exchange");
  ex->comm = comm;
  ex->be = be;
  ex->g = g;
  ex->gcomm = MPI_COMM_NULL;
  ex->nvec = nvec;
  ex->len = (int)len;
  ex->per_edge = per_edge;
  ex->vec_stride = (len + 15) & ~(size_t)15;
  ex->node_stride = (size_t)nvec * ex->vec_stride;
  ex->first = dt_placement_first(g->n, comm->size, comm->rank);
  ex->count = dt_placement_count(g->n, comm->size, comm->rank);
  ex->edge0 = g->nbr_start[ex->first];
  ex->nunits = per_edge ? (size_t)(g->nbr_start[ex->first + ex->count] - ex->edge0) : (size_t)ex->count;
  DT_TRY_GOTO(dt_be_alloc(be, sizeof(float) * (ex->nunits * ex->node_stride + 1), (void **)&ex->send));
  DT_ALLOC_GOTO(ex->mask, 2 * (size_t)g->num_edges + 1, "edge mask");
  memset(ex->mask, 1, 2 * (size_t)g->num_edges + 1);
  DT_TRY_GOTO(build_lists(ex));
  DT_TRY_GOTO(dt_be_alloc(be, sizeof(float) * (ex->nslots * ex->node_stride + 1), (void **)&ex->recv));
  if (be->host_memory) {
    ex->send_h = ex->send;
    ex->recv_h = ex->recv;
  } else {
    DT_ALLOC_GOTO(ex->send_h, ex->nunits * ex->node_stride + 1, "send staging");
    DT_ALLOC_GOTO(ex->recv_h, ex->nslots * ex->node_stride + 1, "receive staging");
  }

  const int K = ex->nranks;
  DT_ALLOC_GOTO(ex->full_send, K + 1, "datatypes");
  DT_ALLOC_GOTO(ex->full_recv, K + 1, "datatypes");
  DT_ALLOC_GOTO(ex->call_send, K + 1, "datatypes");
  DT_ALLOC_GOTO(ex->call_recv, K + 1, "datatypes");
  DT_ALLOC_GOTO(ex->call_owned, K + 1, "datatypes");
  DT_ALLOC_GOTO(ex->counts_s, K + 1, "counts");
  DT_ALLOC_GOTO(ex->counts_r, K + 1, "counts");
  DT_ALLOC_GOTO(ex->displs, K + 1, "displacements");
  for (int k = 0; k < K; k++) ex->full_send[k] = ex->full_recv[k] = MPI_DATATYPE_NULL;
  for (int k = 0; k < K; k++) {
    int kept;
    DT_TRY_GOTO(list_type(ex, ex->send_nodes + ex->send_start[k], ex->send_start[k + 1] - ex->send_start[k],
                          1, NULL, ex->ranks[k], sizeof(float) * len, &ex->full_send[k], &kept));
    DT_TRY_GOTO(list_type(ex, ex->recv_nodes + ex->recv_start[k], ex->recv_start[k + 1] - ex->recv_start[k],
                          0, NULL, ex->ranks[k], sizeof(float) * len, &ex->full_recv[k], &kept));
  }
  if (comm->size > 1)
    DT_MPI_GOTO(MPI_Dist_graph_create_adjacent(comm->comm, K, ex->ranks, MPI_UNWEIGHTED, K,
                                               ex->ranks, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                               &ex->gcomm));
  *out = ex;
  ex = NULL;
cleanup:
  dt_exchange_free(ex);
  return st;
}

dt_status dt_exchange_create(dt_comm *comm, dt_backend *be, const dt_graph *g, int nvec, size_t len, dt_exchange **out) {
  return create(comm, be, g, 0, nvec, len, out);
}

dt_status dt_exchange_create_edges(dt_comm *comm, dt_backend *be, const dt_graph *g, size_t len, dt_exchange **out) {
  return create(comm, be, g, 1, 1, len, out);
}

static void free_call_types(dt_exchange *ex) {
  for (int k = 0; k < ex->nranks; k++) {
    if (ex->call_owned[k]) {
      /* an empty selection stands in as MPI_FLOAT (count 0): predefined, not ours to free */
      if (ex->call_send[k] != MPI_DATATYPE_NULL && ex->call_send[k] != MPI_FLOAT) MPI_Type_free(&ex->call_send[k]);
      if (ex->call_recv[k] != MPI_DATATYPE_NULL && ex->call_recv[k] != MPI_FLOAT) MPI_Type_free(&ex->call_recv[k]);
      ex->call_owned[k] = 0;
    }
  }
}

void dt_exchange_free(dt_exchange *ex) {
  if (ex == NULL) return;
  if (ex->in_flight) MPI_Wait(&ex->req, MPI_STATUS_IGNORE);
  if (ex->call_owned != NULL) free_call_types(ex);
  for (int k = 0; ex->full_send != NULL && k < ex->nranks; k++) {
    if (ex->full_send[k] != MPI_DATATYPE_NULL) MPI_Type_free(&ex->full_send[k]);
    if (ex->full_recv[k] != MPI_DATATYPE_NULL) MPI_Type_free(&ex->full_recv[k]);
  }
  if (ex->gcomm != MPI_COMM_NULL) MPI_Comm_free(&ex->gcomm);
  if (ex->send_h != ex->send) dt_free(ex->send_h);
  if (ex->recv_h != ex->recv) dt_free(ex->recv_h);
  if (ex->be != NULL) {
    dt_be_free(ex->be, ex->send);
    dt_be_free(ex->be, ex->recv);
  }
  dt_free(ex->slot);
  dt_free(ex->ranks);
  dt_free(ex->send_start);
  dt_free(ex->send_nodes);
  dt_free(ex->recv_start);
  dt_free(ex->recv_nodes);
  dt_free(ex->full_send);
  dt_free(ex->full_recv);
  dt_free(ex->call_send);
  dt_free(ex->call_recv);
  dt_free(ex->call_owned);
  dt_free(ex->counts_s);
  dt_free(ex->counts_r);
  dt_free(ex->displs);
  dt_free(ex->mask);
  dt_free(ex);
}

dt_status dt_exchange_start(dt_exchange *ex, const uint8_t *edge_mask) {
  return dt_exchange_start_sized(ex, edge_mask, sizeof(float) * (size_t)ex->len);
}

dt_status dt_exchange_start_sized(dt_exchange *ex, const uint8_t *edge_mask, size_t bytes) {
  dt_status st = DT_OK;
  const dt_graph *g = ex->g;
  DT_ASSERT(!ex->in_flight);
  DT_ASSERT(bytes >= 1 && bytes <= sizeof(float) * (size_t)ex->len);
  const int full = bytes == sizeof(float) * (size_t)ex->len;
  ex->t_start = dt_time_now();
  if (edge_mask != NULL) memcpy(ex->mask, edge_mask, 2 * (size_t)g->num_edges);
  else memset(ex->mask, 1, 2 * (size_t)g->num_edges);

  /* Logical traffic: every active out-edge of every local node carries nvec payloads (per
   * edge: its one message). */
  const uint64_t per_msg = (uint64_t)ex->nvec * bytes;
  for (int i = ex->first; i < ex->first + ex->count; i++)
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) ex->stats.bytes_sent += ex->mask[e] ? per_msg : 0;

  for (int k = 0; k < ex->nranks; k++) {
    int ns = ex->send_start[k + 1] - ex->send_start[k], nr = ex->recv_start[k + 1] - ex->recv_start[k];
    if (edge_mask == NULL && full) {
      ex->call_send[k] = ex->full_send[k];
      ex->call_recv[k] = ex->full_recv[k];
    } else {
      ex->call_owned[k] = 1;
      DT_TRY_GOTO(list_type(ex, ex->send_nodes + ex->send_start[k], ns, 1, edge_mask ? ex->mask : NULL, ex->ranks[k],
                            bytes, &ex->call_send[k], &ns));
      DT_TRY_GOTO(list_type(ex, ex->recv_nodes + ex->recv_start[k], nr, 0, edge_mask ? ex->mask : NULL, ex->ranks[k],
                            bytes, &ex->call_recv[k], &nr));
    }
    /* An empty selection still needs a valid type argument: send zero MPI_FLOATs. */
    ex->counts_s[k] = ns > 0;
    ex->counts_r[k] = nr > 0;
    if (ns == 0) ex->call_send[k] = MPI_FLOAT;
    if (nr == 0) ex->call_recv[k] = MPI_FLOAT;
    ex->stats.bytes_mpi += (uint64_t)ns * per_msg;
    ex->displs[k] = 0;
  }
  if (ex->gcomm != MPI_COMM_NULL) {
    DT_TRY_GOTO(dt_be_download(ex->be, ex->send_h, ex->send, sizeof(float) * ex->nunits * ex->node_stride));
    DT_MPI_GOTO(MPI_Ineighbor_alltoallw(ex->send_h, ex->counts_s, ex->displs, ex->call_send, ex->recv_h,
                                        ex->counts_r, ex->displs, ex->call_recv, ex->gcomm, &ex->req));
    ex->in_flight = 1;
  }
  ex->stats.exchanges++;
cleanup:
  if (st != DT_OK) free_call_types(ex);
  return st;
}

dt_status dt_exchange_wait(dt_exchange *ex) {
  dt_status st = DT_OK;
  if (ex->in_flight) {
    ex->in_flight = 0;
    DT_MPI_GOTO(MPI_Wait(&ex->req, MPI_STATUS_IGNORE));
    DT_TRY_GOTO(dt_be_upload(ex->be, ex->recv, ex->recv_h, sizeof(float) * ex->nslots * ex->node_stride));
  }
cleanup:
  free_call_types(ex);
  ex->stats.seconds += dt_time_now() - ex->t_start;
  return st;
}

dt_status dt_exchange_run(dt_exchange *ex, const uint8_t *edge_mask) {
  return dt_exchange_run_sized(ex, edge_mask, sizeof(float) * (size_t)ex->len);
}

dt_status dt_exchange_run_sized(dt_exchange *ex, const uint8_t *edge_mask, size_t bytes) {
  DT_TRY(dt_exchange_start_sized(ex, edge_mask, bytes));
  DT_TRY(dt_exchange_wait(ex));
  return DT_OK;
}

dt_slab dt_exchange_send_slab(dt_exchange *ex, int vec) {
  return (dt_slab){.data = ex->send + (size_t)vec * ex->vec_stride, .count = (int)ex->nunits, .dim = (size_t)ex->len,
                   .stride = ex->node_stride};
}
