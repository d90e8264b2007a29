/* Mixing with the weight matrix W over exchanged vectors, shared by DSGD and DSGT. */
#ifndef DT_MIX_H
#define DT_MIX_H

#include "dt/problem.h"

/* out = Σ_j W_ij x_j over j ∈ {i} ∪ N(i), in increasing id (self at its place), where x_j is
 * vector `vec` of j as sent in the last exchange (x_i: i's own send buffer). */
void dt_mix(dt_optimizer_run *run, int i, int vec, float *out);

#endif
