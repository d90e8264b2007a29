/* Internal pieces of the graph module shared between its files. */
#ifndef DT_GRAPH_IMPL_H
#define DT_GRAPH_IMPL_H

#include "dt/graph.h"

/* Mixing weights W (w_nbr, w_self) of g for its mixing rule; checks symmetry and stochasticity. */
DT_MUST_USE dt_status dt_graph_mixing_compute(dt_graph *g);

/* Fiedler value of the Laplacian and spectral gap of W (dense LAPACK dsyev). */
DT_MUST_USE dt_status dt_graph_spectrum_compute(dt_graph *g);

/* Second-smallest Laplacian eigenvalue of the graph on n nodes with the m edges (pairs of ids,
 * no duplicates); 0 when it is disconnected. */
DT_MUST_USE dt_status dt_graph_laplacian_fiedler(int n, const int *edges, int m, double *out);

#endif
