/* Shared pieces of the optimizer plug-ins' option tables: the unbounded maximum and the
 * update_order values that DSGD and DSGT share. Each plug-in's options struct is its own. */
#ifndef DT_OPTIONS_IMPL_H
#define DT_OPTIONS_IMPL_H

#include <float.h>
#include <stddef.h>

#include "dt/config.h"
#include "dt/local_opt.h"

#define DT_INF 1e308

/* update_order: synchronous (every node mixes round-k values; the default, what ranks exchanging
 * messages compute) or sequential (the seed reference's in-place sweep in node order; one
 * process only). The values' names are defined beside the sweep (mix.c). */
enum { DT_ORDER_SYNCHRONOUS = 0, DT_ORDER_SEQUENTIAL };
extern const char *const dt_update_orders[];

#endif
