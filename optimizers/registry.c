/* The optimizer registry: one line per plug-in in DT_OPTIMIZER_LIST. Adding an optimizer = its
 * folder, a line here, a line in meson.build, a test. */
#include "dt/optimizer.h"

#define DT_OPTIMIZER_LIST(X) \
  X(cadmm)                   \
  X(dsgd)                    \
  X(dsgdm)                   \
  X(dsgt)                    \
  X(gossip)                  \
  X(choco)                   \
  X(easgd)                   \
  X(downpour)                \
  X(centralized)             \
  X(solo)

#define DECLARE(name) extern const dt_optimizer_def dt_optimizer_##name;
#define DEF(name) &dt_optimizer_##name,
#define PLUGIN(name) &dt_optimizer_##name.plugin,
DT_OPTIMIZER_LIST(DECLARE)
const dt_optimizer_def *const dt_optimizers[] = {DT_OPTIMIZER_LIST(DEF) NULL};
const dt_plugin *const dt_optimizer_plugins[] = {DT_OPTIMIZER_LIST(PLUGIN) NULL};

const dt_optimizer_def *dt_optimizer_find(const char *name) {
  for (int i = 0; dt_optimizers[i] != NULL; i++)
    if (dt_plugin_named(&dt_optimizers[i]->plugin, name)) return dt_optimizers[i];
  return NULL;
}
