/* MPI communicator handle and the neighbourhood exchange.
 *
 * The exchange moves, in one neighbourhood collective over a distributed-graph communicator,
 * one or more flat float vectors of every local graph node to the graph neighbours that live on
 * other ranks (or, in its per-edge form, one vector per directed edge, a different message to
 * each neighbour); neighbours on the same rank are read in place. Optimizers talk to each other only
 * through it, so bytes and time are counted here. No MPI type appears in this header. */
#ifndef DT_EXCHANGE_H
#define DT_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "dt/backend.h"
#include "dt/graph.h"
#include "dt/status.h"

typedef struct dt_comm dt_comm;

/* Initialises MPI (thread level FUNNELED) unless already initialised, and wraps
 * MPI_COMM_WORLD. Works without mpirun (a singleton of one rank). Collective. */
DT_MUST_USE dt_status dt_comm_init(int *argc, char ***argv, dt_comm **out);
/* Frees the handle; finalises MPI if dt_comm_init initialised it. Collective. NULL is a no-op. */
DT_MUST_USE dt_status dt_comm_finalize(dt_comm *c);
/* Ends every rank of the job with exit code `code` (MPI_Abort). Only main() calls it, after a
 * failure that other ranks may not share and would wait on forever. */
void dt_comm_abort(dt_comm *c, int code);
int dt_comm_rank(const dt_comm *c);
int dt_comm_size(const dt_comm *c);
/* Whether a launcher (mpirun, srun) started this process, or DT_MPI_SINGLETON asked for MPI. */
int dt_comm_launched(const dt_comm *c);
/* Ranks on this rank's host (this one included), and hosts in the job. */
int dt_comm_host_size(const dt_comm *c);
int dt_comm_num_hosts(const dt_comm *c);
/* Broadcast bytes from root. Collective. */
DT_MUST_USE dt_status dt_comm_bcast(dt_comm *c, void *buf, size_t bytes, int root);
/* In-place reductions over all ranks. Collective. */
DT_MUST_USE dt_status dt_comm_allreduce_sum_f64(dt_comm *c, double *buf, int n);
DT_MUST_USE dt_status dt_comm_allreduce_max_f64(dt_comm *c, double *buf, int n);
DT_MUST_USE dt_status dt_comm_allreduce_min_f64(dt_comm *c, double *buf, int n);
/* Sum over all num_nodes nodes (placed in contiguous blocks) of a per-node float vector of
 * length d, in node order, in double: rank 0 receives the vectors one node at a time and
 * broadcasts the sum to out. Unlike MPI_Allreduce, the summation order does not depend on the
 * rank count, so results are bit-identical for every P. v[l] is local node l's vector.
 * Collective. */
DT_MUST_USE dt_status dt_comm_node_sum(dt_comm *c, int num_nodes, const float *const *v, size_t d, double *out);
/* Gathers every node's float vector to rank 0 in node order into all (num_nodes * d floats; only
 * read on rank 0, may be NULL elsewhere). Collective. */
DT_MUST_USE dt_status dt_comm_node_gather(dt_comm *c, int num_nodes, const float *const *v, size_t d, float *all);
/* Gathers k doubles per node (local[l*k ..]) from every rank to rank 0, in node order, into
 * all (num_nodes * k; read on rank 0 only). Collective. */
DT_MUST_USE dt_status dt_comm_gather_rows(dt_comm *c, int num_nodes, const double *local, int k, double *all);
/* Every node's value on every rank: local[l] is local node l's (this rank's block), all gets the
 * N values in node order (local may be all + first: in place). Collective. */
DT_MUST_USE dt_status dt_comm_allgather_nodes(dt_comm *c, int num_nodes, const double *local, double *all);
/* Streams node j's vector to rank 0, in node order, for every node with send[j] != 0 (send
 * identical on every rank; NULL: all nodes): rank 0 calls fn(ctx, j, x), x valid during the call
 * (v[l] is local node l's vector). After a failed fn every transfer still completes, without
 * further calls; rank 0 returns the first failure, the other ranks DT_OK (tell them yourself).
 * A parameter server applying pushes in a fixed order. Collective. */
DT_MUST_USE dt_status dt_comm_node_stream(dt_comm *c, int num_nodes, const float *const *v, size_t d, const uint8_t *send,
                                          dt_status (*fn)(void *ctx, int node, const float *x), void *ctx);
/* Per-node byte strings between the nodes' ranks and rank 0 (checkpoints: only rank 0 touches
 * files, so no shared file system is needed). One node at a time, in node order, so rank 0 holds
 * one node's bytes at once.
 *   to_root:   give(ctx, l, &data, &size) yields local node l's bytes on its rank; rank 0 gets
 *              take(ctx, node, data, size) for every node (data valid during the call).
 *   from_root: rank 0's give(ctx, node, ...) for every node; the owner's take(ctx, l, ...).
 * A failure on any rank (give or take) still lets every transfer finish, then fails on every
 * rank. Collective. */
typedef dt_status (*dt_blob_give)(void *ctx, int node_or_l, const void **data, size_t *size);
typedef dt_status (*dt_blob_take)(void *ctx, int node_or_l, const void *data, size_t size);
DT_MUST_USE dt_status dt_comm_node_blobs_to_root(dt_comm *c, int num_nodes, dt_blob_give give, dt_blob_take take, void *ctx);
DT_MUST_USE dt_status dt_comm_node_blobs_from_root(dt_comm *c, int num_nodes, dt_blob_give give, dt_blob_take take, void *ctx);
/* Point-to-point payloads between ranks, for schedules every rank knows (the asynchronous
 * engine): a send copies the bytes and returns at once; the receiver takes them, in the order
 * they were sent from that rank, with a blocking receive. A request is finished (its copy freed)
 * when dt_comm_request_finish reports it done: wait != 0 waits for it, else *done says whether
 * it was (a request not done stays valid). Only between distinct ranks of a launched job. */
typedef struct dt_comm_request dt_comm_request;
DT_MUST_USE dt_status dt_comm_send_bytes(dt_comm *c, int to, const void *buf, size_t bytes, dt_comm_request **out);
DT_MUST_USE dt_status dt_comm_recv_bytes(dt_comm *c, int from, void *buf, size_t bytes);
DT_MUST_USE dt_status dt_comm_request_finish(dt_comm_request *r, int wait, int *done);
/* Name of this host (MPI_Get_processor_name). */
void dt_comm_host(char *buf, size_t size);

typedef struct dt_exchange dt_exchange;

typedef struct dt_exchange_stats {
  uint64_t bytes_sent; /* bytes each local node sent to its neighbours, whatever their rank:
                          placement-independent, what a real deployment would transmit */
  uint64_t bytes_mpi;  /* bytes this rank actually passed to MPI (remote neighbours only) */
  double seconds;      /* time inside run/start..wait */
  long exchanges;
} dt_exchange_stats;

/* Creates the exchange for graph g placed on comm's ranks (contiguous blocks): each local node
 * owns `nvec` vectors of `len` floats, in be's memory (be is borrowed), that it sends to all its
 * neighbours. Builds the distributed-graph communicator (MPI_Dist_graph_create_adjacent,
 * reorder = 0) between ranks that host neighbouring nodes.
 * Collective. Errors: DT_ERR_USAGE when the rank count does not fit the graph. */
DT_MUST_USE dt_status dt_exchange_create(dt_comm *comm, dt_backend *be, const dt_graph *g, int nvec, size_t len,
                                         dt_exchange **out);
/* The per-edge form: each local node owns one vector of `len` floats per neighbour, and the
 * directed edge i→j carries i's vector for j (dt_exchange_edge_buffer), so a node can send every
 * neighbour something different in one exchange (per-edge state, such as Choco-SGD's estimates
 * on a time-varying graph). Memory: one vector per directed edge on each side. Masks, sizes,
 * dt_exchange_recv and dt_exchange_latest (vec 0) work as for the per-node form. Collective. */
DT_MUST_USE dt_status dt_exchange_create_edges(dt_comm *comm, dt_backend *be, const dt_graph *g, size_t len,
                                               dt_exchange **out);
/* Collective (frees a communicator). NULL is a no-op. */
void dt_exchange_free(dt_exchange *ex);

int dt_exchange_first_node(const dt_exchange *ex); /* first local node id */
int dt_exchange_num_local(const dt_exchange *ex);  /* local node count */

/* Where local node `node` writes vector `vec` before an exchange; len floats of backend memory,
 * 64-byte aligned. The exchange owns it. Neighbours on the same rank read this memory directly, so it must not
 * change between an exchange and the last read of its results. NULL on a per-edge exchange. */
float *dt_exchange_send_buffer(dt_exchange *ex, int node, int vec);
/* Per edge: where local node `node` writes what it sends its k-th neighbour (g->nbr[g->nbr_start[node] + k]);
 * the same rules. NULL on a per-node exchange. */
float *dt_exchange_edge_buffer(dt_exchange *ex, int node, int k);
/* Vector `vec` of every local node as a slab view (node stride nvec·16-rounded len); per edge,
 * every local out-edge's vector, in (node, neighbour) order. */
dt_slab dt_exchange_send_slab(dt_exchange *ex, int vec);

/* Sends every local node's vectors along its out-edges. edge_mask, when not NULL, selects the
 * directed edges i→j that carry data: edge_mask[g->nbr_start[i] + k] != 0 for i's k-th
 * neighbour; it must be identical on every rank (draw it from a shared seeded stream).
 * Collective. */
DT_MUST_USE dt_status dt_exchange_run(dt_exchange *ex, const uint8_t *edge_mask);
/* Non-blocking form: start, compute, wait. The send buffers must not change until wait returns.
 * Both collective. */
DT_MUST_USE dt_status dt_exchange_start(dt_exchange *ex, const uint8_t *edge_mask);
DT_MUST_USE dt_status dt_exchange_wait(dt_exchange *ex);

/* The same, each vector carrying only its first `bytes` bytes (1 <= bytes <= 4·len), which may
 * change from call to call: a compressed message of this round's size travels as what it is,
 * and bytes_sent counts exactly those bytes. The rest of a receiving buffer is left as it was. */
DT_MUST_USE dt_status dt_exchange_run_sized(dt_exchange *ex, const uint8_t *edge_mask, size_t bytes);
DT_MUST_USE dt_status dt_exchange_start_sized(dt_exchange *ex, const uint8_t *edge_mask, size_t bytes);

/* What neighbour `nbr` sent to local node `node` in the last exchange: len floats, valid until
 * the next start/run. NULL when nbr is not a neighbour of node or the edge nbr→node was masked
 * out. */
const float *dt_exchange_recv(const dt_exchange *ex, int node, int nbr, int vec);

/* The most recent vector `vec` that neighbour nbr delivered to this rank by any exchange (a
 * same-rank neighbour: its send buffer as it is now), whatever the last exchange's mask; NULL
 * when nbr is not a neighbour of node. For staged algorithms that update nodes in sequence. */
const float *dt_exchange_latest(const dt_exchange *ex, int node, int nbr, int vec);

dt_exchange_stats dt_exchange_stats_get(const dt_exchange *ex);

#endif
