/* The optimizer registry: one line per plug-in. Adding an optimizer = its folder, a line here,
 * a line in meson.build, a test. */
#include <string.h>

#include "dt/optimizer.h"
#include "opts.h"

extern const dt_optimizer_def dt_optimizer_cadmm, dt_optimizer_dsgd, dt_optimizer_dsgt,
    dt_optimizer_gossip, dt_optimizer_centralized, dt_optimizer_solo;

const dt_optimizer_def *const dt_optimizers[] = {
    &dt_optimizer_cadmm,  &dt_optimizer_dsgd,        &dt_optimizer_dsgt,
    &dt_optimizer_gossip, &dt_optimizer_centralized, &dt_optimizer_solo,
    NULL,
};

const dt_plugin *const dt_optimizer_plugins[] = {
    &dt_optimizer_cadmm.plugin,  &dt_optimizer_dsgd.plugin,        &dt_optimizer_dsgt.plugin,
    &dt_optimizer_gossip.plugin, &dt_optimizer_centralized.plugin, &dt_optimizer_solo.plugin,
    NULL,
};

const char *const dt_local_optim_names[] = {"sgd", "adam", "adamw", NULL};
const char *const dt_update_orders[] = {"synchronous", "sequential", NULL};

const dt_optimizer_def *dt_optimizer_find(const char *name) {
  for (int i = 0; dt_optimizers[i] != NULL; i++) {
    const dt_plugin *d = &dt_optimizers[i]->plugin;
    if (strcmp(d->name, name) == 0) return dt_optimizers[i];
    for (int a = 0; d->aliases != NULL && d->aliases[a] != NULL; a++)
      if (strcmp(d->aliases[a], name) == 0) return dt_optimizers[i];
  }
  return NULL;
}
