/* Mixing with the weight matrix W over exchanged vectors, shared by DSGD and DSGT. */
#ifndef DT_MIX_H
#define DT_MIX_H

#include "dt/optimizer.h"

/* Per-edge state (Choco's and BEER's estimates): for each local out-edge e (g->nbr_start order,
 * from *e0 = g->nbr_start[first]), (*rev)[e − *e0] = the index of the reverse edge j → i. The
 * caller frees *rev. */
DT_MUST_USE dt_status dt_mix_reverse_edges(const dt_optimizer_run *run, int **rev, int *e0);
/* The terms of node i's mix with this round's graph, in increasing id with i at its place:
 * x[t] (vector `vec` as sent in the last exchange; i's own send buffer for i), its weight w[t]
 * and, when who is not NULL, its node who[t]. Neighbours that did not send to i this round are
 * left out. Returns the count, at most 1 + degree. */
int dt_mix_terms(dt_optimizer_run *run, int i, int vec, const float **x, float *w, int *who);
/* out's row of every local node l = Σ_j W_ij x_j as dt_mix computes it (vector `vec` of the last
 * exchange), the nodes in parallel on the run's threads. */
DT_MUST_USE dt_status dt_mix_all(dt_optimizer_run *run, int vec, dt_slab *out);
/* The graph Laplacian of exchanged vectors, ((I − W) v)_i = Σ_{j ≠ i} W_ij (v_i − v_j) over the
 * round's mixing terms (dt_mix_terms: vector `vec` of the last exchange, this round's weights, the
 * neighbours that sent), each edge's difference formed first: fl(v_i − v_j) = −fl(v_j − v_i), so
 * the two ends of an edge add exactly opposite terms and Σ_i out_i is zero up to each node's
 * rounding of its own sum, which vanishes as the v_i agree. What a conserved sum (the exact
 * methods' dual) may be grown by without drifting. A workspace made once per run (its scratch:
 * one vector per local out-edge); each call is two backend calls (mix_nodes), the nodes in
 * parallel. */
typedef struct dt_mix_laplacian dt_mix_laplacian;
DT_MUST_USE dt_status dt_mix_laplacian_create(dt_optimizer_run *run, dt_mix_laplacian **out);
/* out's row of every local node = its row of (I − W) v. */
DT_MUST_USE dt_status dt_mix_laplacian_all(dt_mix_laplacian *lap, int vec, dt_slab *out);
void dt_mix_laplacian_free(dt_mix_laplacian *lap); /* accepts NULL */
/* The vectors of dim floats a workspace holds: one per local out-edge. */
static inline double dt_mix_laplacian_per_edge(void) { return 1.0; }
/* The same over exchange ex (the run's own, or another such as the model buffers'). */
int dt_mix_terms_on(dt_optimizer_run *run, dt_exchange *ex, int i, int vec, const float **x, float *w, int *who);
/* Every local node's weighted sum in one backend call, of the terms terms(ctx, l, x, w) gives
 * for local node l (at most its degree + 1; it returns how many): y_l = 0 + w[0]·x[0] + ... into
 * out's row l. dt_mix_all is this with the round's mixing terms. */
DT_MUST_USE dt_status dt_mix_nodes_by(dt_optimizer_run *run, int (*terms)(void *ctx, int l, const float **x, float *w), void *ctx,
                                      dt_slab *out);

/* out = Σ_j W_ij x_j over j ∈ {i} ∪ N(i), in increasing id (self at its place), where x_j is
 * vector `vec` of j as sent in the last exchange (x_i: i's own send buffer). */
DT_MUST_USE dt_status dt_mix(dt_optimizer_run *run, int i, int vec, float *out);

/* update_order: sequential — the seed reference's sweep over the nodes in id order, where node
 * i mixes its lower-id neighbours' vectors of THIS round and its higher-id neighbours' of the
 * previous one. Ranks hold contiguous id blocks, so the sweep runs rank by rank: at stage s rank
 * s updates its nodes in order, then one masked exchange carries their new vectors along the
 * "upward" edges (i → j, j > i). Higher-id neighbours' old vectors come from the round-start
 * exchange. Every node sees the same values whatever the placement, so results are identical
 * for every rank count; the logical traffic is one vector set per upward edge per sweep.
 *
 * dt_mix_sweep runs one sweep over vector `vec` of every node's send buffer:
 *   v_i ← W_ii v_i + a·extra(l) + Σ_j W_ij v_j   (extra may return NULL: no term)
 * writing the result into node i's send buffer (where later nodes and ranks read it) and, when
 * out(l) is not NULL, into out(l) too (which is then no term of the mix: not extra(l), not a send
 * buffer). Collective (P stages of exchanges). */
typedef struct dt_sweep_io {
  const float *(*extra)(void *ctx, int l); /* term added with weight a, or NULL */
  float *(*out)(void *ctx, int l);         /* where the new vector also goes, or NULL */
  void *ctx;
} dt_sweep_io;
DT_MUST_USE dt_status dt_mix_sweep(dt_optimizer_run *run, int vec, float a, const dt_sweep_io *io);
/* The plug-in callbacks of an algorithm that sends one vector of dim floats along every edge of
 * the round's graph, both ways, and mixes with that round's weights (DSGDm, QG-DSGDm,
 * Local-DSGD, the exact methods' bytes): its bytes_per_round. */
double dt_mix_one_vector_bytes(const dt_graph *g, size_t dim, const void *opts);
/* The admission rule of `update_order: sequential` (DSGD's and DSGT's accepts): a sweep needs a
 * static graph, and cannot run under faults (its messages go in stages that depend on the rank
 * count, and so would their losses). */
int dt_mix_sequential_accepts(const char *name, int sequential, const dt_run_env *env, dt_refusal *why);
/* Bytes one sweep sends (upward edges, nvec vectors each). */
double dt_mix_sweep_bytes(const dt_graph *g, size_t dim, int nvec);

#endif
