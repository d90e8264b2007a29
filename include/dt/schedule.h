/* Time-varying communication graphs: which edges carry messages in round k, with which mixing
 * weights.
 *
 * A schedule runs over a fixed union graph, the one the exchange is built on; round k activates
 * some of its directed edges and gives every node the weights of that round's graph. Every
 * round is a pure function of (spec, seed, k), the same on every rank for every rank count.
 *
 *   static                the union graph every round (mask NULL, its own weights).
 *   one_peer_exponential  Bluefog's dynamic exponential graph: with T = ⌈log2 N⌉ and
 *                         d = 2^(k mod T), node i sends to (i + d) mod N and mixes
 *                         x_i ← ½ x_i + ½ x_{(i−d) mod N}. Union: the exponential graph.
 *                         W is doubly stochastic, not symmetric (a directed round graph).
 *   random_matching       a fresh random maximal matching of the union graph's edges each round
 *                         (edges shuffled by the stream (seed, schedule, k), taken greedily);
 *                         matched pairs average (½, ½), unmatched nodes keep their vector.
 *   resample              every R rounds a new graph of the configured random type (random,
 *                         regular, geometric), drawn with the seed (seed, schedule, epoch) —
 *                         epoch 0 is the configured graph itself — with its mixing weights.
 *                         Union: the complete graph. */
#ifndef DT_SCHEDULE_H
#define DT_SCHEDULE_H

#include <stdint.h>
#include <stdio.h>

#include "dt/graph.h"
#include "dt/status.h"
#include "dt/yaml.h"

typedef enum dt_schedule_kind {
  DT_SCHEDULE_STATIC = 0,
  DT_SCHEDULE_ONE_PEER_EXPONENTIAL,
  DT_SCHEDULE_RANDOM_MATCHING,
  DT_SCHEDULE_RESAMPLE,
  DT_SCHEDULE_COUNT
} dt_schedule_kind;

/* "static", "one_peer_exponential", "random_matching", "resample", NULL. */
extern const char *const dt_schedule_names[];

/* One round's graph, over the union graph g's CSR. */
typedef struct dt_round_graph {
  const uint8_t *mask;  /* [2·E]: mask[g->nbr_start[j] + t] != 0 when j sends to its t-th neighbour;
                           NULL: every edge (the exchange's mask argument) */
  const double *w_nbr;  /* [2·E]: W_ij for j = g->nbr[e], e in i's list (0 where j → i is idle) */
  const double *w_self; /* [N]: W_ii */
} dt_round_graph;

typedef struct dt_schedule dt_schedule;

/* The schedule `kind` over union graph g (borrowed). spec is the configured graph (resample
 * draws its graphs from it; copied), every = R (resample). Errors: DT_ERR_CONFIG when g is not
 * the union the kind needs. */
DT_MUST_USE dt_status dt_schedule_create(const dt_graph *g, const dt_graph_spec *spec, int kind, int every,
                                         dt_schedule **out);
void dt_schedule_free(dt_schedule *s);
/* The schedule of cfg's experiment.graph.schedule over g (the graph dt_graph_from_config built),
 * or NULL for static. Errors are dt_schedule_create's, positioned at their key in the config file.
 * Not collective. */
DT_MUST_USE dt_status dt_schedule_from_config(const struct dt_config *cfg, const dt_graph *g, dt_schedule **out);
int dt_schedule_kind_of(const dt_schedule *s);

/* Round k's graph; the arrays stay valid until the next call on s. Not collective. */
DT_MUST_USE dt_status dt_schedule_round(dt_schedule *s, int k, dt_round_graph *out);

/* Directed edges active over rounds [0, rounds), summed (static: rounds·2E). */
DT_MUST_USE dt_status dt_schedule_active_edges(dt_schedule *s, int rounds, double *out);

/* The schedule as graph.yaml's "schedule:" key, into y's open mapping. */
void dt_schedule_emit_yaml(const dt_schedule *s, dt_yemit *y);

#endif
