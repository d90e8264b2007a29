/* Communication graphs: topologies (built with igraph), mixing weights, spectral figures, and
 * the placement of graph nodes on MPI ranks.
 *
 * A graph is a pure function of its spec (seed included): building it involves no communication
 * and gives the same graph on every rank for every rank count. */
#ifndef DT_GRAPH_H
#define DT_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "dt/rng.h"
#include "dt/status.h"
#include "dt/yaml.h"

typedef enum dt_graph_type {
  DT_GRAPH_WHEEL = 0, /* node 0 the hub, nodes 1..N-1 a cycle (networkx.wheel_graph) */
  DT_GRAPH_CYCLE,     /* alias ring */
  DT_GRAPH_COMPLETE,
  DT_GRAPH_STAR,      /* node 0 the centre */
  DT_GRAPH_PATH,
  DT_GRAPH_RANDOM,    /* Erdős–Rényi G(N, p), redrawn until connected */
  DT_GRAPH_GRID,      /* rows x cols lattice */
  DT_GRAPH_TORUS,     /* rows x cols lattice with wrap-around */
  DT_GRAPH_REGULAR,   /* random k-regular, redrawn until connected */
  DT_GRAPH_GEOMETRIC, /* random geometric in the unit square, radius r, redrawn until connected */
  DT_GRAPH_EXPONENTIAL, /* i ~ i ± 2^k (mod N), k = 0, 1, ... */
  DT_GRAPH_FILE,      /* edge list "u v" per line, '#' comments */
  DT_GRAPH_TYPE_COUNT
} dt_graph_type;

typedef enum dt_mixing {
  DT_MIXING_METROPOLIS = 0, /* W_ij = 1 / (1 + max(deg_i, deg_j)) */
  DT_MIXING_UNIFORM,        /* W_ij = 1 / (1 + max degree) */
  DT_MIXING_COUNT
} dt_mixing;

/* Names as written in configs ("wheel", ...; "metropolis", ...). */
const char *dt_graph_type_name(dt_graph_type t);
const char *dt_mixing_name(dt_mixing m);

typedef struct dt_graph_spec {
  dt_graph_type type;
  int num_nodes;
  uint64_t seed;      /* experiment seed; random types draw from (seed, DT_RNG_GRAPH, attempt) */
  double p;           /* random: edge probability */
  int gen_attempts;   /* random types: draws before giving up (>= 1) */
  int rows, cols;     /* grid, torus: 0, 0 = the most square factorisation of num_nodes */
  int degree;         /* regular: k */
  double radius;      /* geometric */
  double fiedler;     /* random, geometric: > 0 bisects p or the radius to this Fiedler value */
  double fiedler_tolerance; /* accepted |Fiedler value - fiedler| */
  const char *edge_file; /* file: path (borrowed) */
  dt_mixing mixing;
  int directed;       /* cycle, exponential, random, file: arcs u -> v (push weights, see dt_graph) */
} dt_graph_spec;

typedef struct dt_graph {
  int n;            /* nodes */
  int num_edges;    /* undirected edges */
  int *edges;       /* 2*num_edges ids, each pair u < v, sorted; owned */
  int *nbr_start;   /* n+1 offsets into nbr (CSR); owned */
  int *nbr;         /* neighbours of each node in increasing id order; owned */
  double *w_nbr;    /* mixing weight W_ij for each nbr entry; owned */
  double *w_self;   /* W_ii; owned */
  dt_graph_type type;
  dt_mixing mixing;
  int attempts;     /* draws used by random types (1 otherwise) */
  double fiedler;   /* algebraic connectivity: 2nd-smallest Laplacian eigenvalue */
  double spectral_gap; /* 1 - max(|λ2(W)|, |λN(W)|); 1 for N = 1 */
  double lambda_min;   /* λN(W), W's smallest eigenvalue (D² needs it above -1/3); 1 for N = 1 */
  double fiedler_target; /* the spec's fiedler (0: none) */
  double threshold;    /* with a Fiedler target: the p (random) or radius (geometric) found */
  int rows, cols;      /* grid, torus: the shape built (0, 0 otherwise) */
  /* A directed graph keeps the CSR above as the union of its arcs (what the exchange is built
   * on) and says which way each edge carries messages: out_mask[nbr_start[i] + t] != 0 when i
   * sends to its t-th neighbour (the layout of a round's mask). Its weights are push weights,
   * column-stochastic and not symmetric: a node keeps 1/(1 + out-degree) of its own vector and
   * sends as much to each out-neighbour, so W_ij (i's row, j's column) = 1/(1 + out-degree of j)
   * when j -> i and 0 otherwise; spectral_gap is 1 - |λ2(W)| of that W's complex spectrum and
   * lambda_min is NAN. Strongly connected (checked). */
  int directed;
  int num_arcs;
  uint8_t *out_mask;   /* [2E]; NULL for an undirected graph */
} dt_graph;

/* Builds the graph of spec: topology, connectivity check, mixing weights (checked symmetric and
 * doubly stochastic) and spectral figures. Caller frees with dt_graph_free.
 * Errors: DT_ERR_CONFIG for impossible specs (N < 1, grid shape not N, k*N odd, a random graph
 * still disconnected after gen_attempts draws, ...); DT_ERR_IO / DT_ERR_CONFIG for an unreadable
 * or invalid edge file, naming file:line. Not collective: every rank may call it. */
DT_MUST_USE dt_status dt_graph_build(const dt_graph_spec *spec, dt_graph **out);
void dt_graph_free(dt_graph *g);

struct dt_config;
/* Builds the experiment's communication graph from cfg's experiment.graph (edge files relative to
 * the config file): the configured graph, or for schedule: resample the union of its draws, the
 * complete graph. Errors are dt_graph_build's, DT_ERR_CONFIG positioned at their key in the config
 * file (file:line:column). Not collective. */
DT_MUST_USE dt_status dt_graph_from_config(const struct dt_config *cfg, dt_graph **out);

static inline int dt_graph_degree(const dt_graph *g, int i) {
  return g->nbr_start[i + 1] - g->nbr_start[i];
}

/* Nodes i sends to: out-degree (its degree on an undirected graph). */
int dt_graph_out_degree(const dt_graph *g, int i);

/* Index of j in i's neighbour list, or -1 when j is not a neighbour. */
int dt_graph_nbr_index(const dt_graph *g, int i, int j);

/* A random maximal matching of g's edges: the edges in the order of one shuffle drawn from r,
 * each taken when neither end is matched yet and, when live is not NULL, the edge is live in
 * at least one direction (live indexed like the exchange's mask: g->nbr_start[u] + position of
 * v). partner[i] = i's match or -1; order is scratch of num_edges entries. */
void dt_graph_random_matching(const dt_graph *g, dt_rng *r, const uint8_t *live, uint32_t *order, int *partner);

/* 64-bit fingerprint of nodes, edges and the exact bits of every weight: equal fingerprints
 * mean identical graphs (used to prove rank-count independence). */
uint64_t dt_graph_fingerprint(const dt_graph *g);

/* The graph as graph.yaml's keys, into y's open mapping: nodes, edges, mixing weights, degrees,
 * Fiedler value, spectral gap. */
void dt_graph_emit_yaml(const dt_graph *g, dt_yemit *y);

/* ---- placement: N nodes on P ranks in contiguous blocks, the first N mod P ranks one larger -- */

/* DT_ERR_USAGE unless 1 <= num_ranks <= num_nodes, with a message that says how to fix the
 * mpirun command. */
DT_MUST_USE dt_status dt_placement_check(int num_nodes, int num_ranks);
int dt_placement_first(int num_nodes, int num_ranks, int rank); /* first node of rank */
int dt_placement_count(int num_nodes, int num_ranks, int rank); /* nodes on rank */
int dt_placement_rank(int num_nodes, int num_ranks, int node);  /* rank hosting node */

#endif
