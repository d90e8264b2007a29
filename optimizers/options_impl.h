/* Shared helpers for optimizer option tables. */
#ifndef DT_OPTIONS_IMPL_H
#define DT_OPTIONS_IMPL_H

#include <float.h>
#include <stddef.h>

#include "dt/config.h"
#include "dt/local_opt.h"

#define DT_INF 1e308

#endif
