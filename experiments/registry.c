/* The plug-ins this build runs, as the config loader is handed them: every registered optimizer
 * (optimizers/registry.c) and problem (problems/registry.c). */
#include "dt/optimizer.h"
#include "dt/run.h"

const dt_registry dt_builtin = {.optimizers = dt_optimizer_plugins, .problems = dt_problem_plugins};
