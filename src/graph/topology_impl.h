/* Private interface of the graph topologies: the generators of each graph type (generate.c) and
 * the edge-list file reader (edge_file.c) hand topology.c an edge list, which it normalises into
 * the graph's CSR arrays, checks for connectivity and completes with mixing weights. */
#ifndef DT_TOPOLOGY_IMPL_H
#define DT_TOPOLOGY_IMPL_H

#include "graph_impl.h"

/* Rows and columns of a grid or torus: as given, or the most square factorisation of num_nodes. */
void topology_grid_shape(const dt_graph_spec *s, int *rows, int *cols);

/* The edges of a deterministic type (wheel, cycle, complete, star, path, grid, torus,
 * exponential) into *edges (2 * *m ids; dt_free it); DT_ERR_CONFIG for a grid whose rows and
 * columns do not make num_nodes. */
DT_MUST_USE dt_status topology_deterministic(const dt_graph_spec *s, int **edges, int *m);

/* Draw number `attempt` of a random type (random, regular, geometric) from the (seed, graph,
 * attempt) stream, into *edges as above. */
DT_MUST_USE dt_status topology_random(const dt_graph_spec *s, int attempt, int **edges, int *m);

/* A draw aimed at a Fiedler value: the pairs admitted, the graph's Fiedler value, and the p or
 * radius that admits exactly those pairs. */
typedef struct topology_draw {
  int k;            /* pairs admitted */
  double fiedler;   /* Fiedler value of that graph */
  double threshold; /* the p or radius that admits exactly those pairs */
} topology_draw;

/* The first of gen_attempts draws whose Fiedler value lies within the tolerance of the target,
 * as an edge list; *attempts the draws made, *best its figures (or, when none is close enough,
 * the closest one's, and DT_ERR_CONFIG). */
DT_MUST_USE dt_status topology_targeted(const dt_graph_spec *s, int **edges, int *m, int *attempts, topology_draw *best);

/* The edge list of file `path` for n nodes (free() it); DT_ERR_CONFIG naming the file and line
 * for anything that is not a simple graph's edge list. directed: each line "u v" is the arc
 * u -> v (so "0 1" and "1 0" are two arcs, not a duplicate). */
DT_MUST_USE dt_status topology_read_edge_file(const char *path, int n, int directed, int **edges, int *m);

#endif
