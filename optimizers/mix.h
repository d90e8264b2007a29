/* Mixing with the weight matrix W over exchanged vectors, shared by DSGD and DSGT. */
#ifndef DT_MIX_H
#define DT_MIX_H

#include "dt/problem.h"

/* out = Σ_j W_ij x_j over j ∈ {i} ∪ N(i), in increasing id (self at its place), where x_j is
 * vector `vec` of j as sent in the last exchange (x_i: i's own send buffer). */
void dt_mix(dt_optimizer_run *run, int i, int vec, float *out);

/* For update_order: sequential. Errors unless every node is on this rank (the sweep reads the
 * neighbours' current vectors directly). */
dt_status dt_mix_check_sequential(const dt_optimizer_run *run, const char *alg);
/* In place, node order: x_i ← W_ii x_i + Σ_j W_ij x_j over vectors v[j] as they are now (lower
 * ids already updated this round), plus `extra` (may be NULL) scaled by `a`. */
void dt_mix_inplace(const dt_optimizer_run *run, int i, float **v, float a, const float *extra);

#endif
