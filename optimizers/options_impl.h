/* Shared helpers for optimizer option tables. */
#ifndef DT_OPTIONS_IMPL_H
#define DT_OPTIONS_IMPL_H

#include <float.h>
#include <stddef.h>

#include "dt/config.h"

#define DT_INF 1e308
/* Names of the local optimizers (dt_local_opt_kind order). */
extern const char *const dt_local_optim_names[];

#endif
