/* The optimizer registry: one line per plug-in in DT_OPTIMIZER_LIST. Adding an optimizer = its
 * folder, a line here, a line in meson.build, a test. */
#include <stdio.h>

#include "dt/optimizer.h"

#define DT_OPTIMIZER_LIST(X) \
  X(cadmm)                   \
  X(dsgd)                    \
  X(local_dsgd)              \
  X(dsgdm)                   \
  X(qg_dsgdm)                \
  X(dsgt)                    \
  X(extra)                   \
  X(nids)                    \
  X(d2)                      \
  X(gossip)                  \
  X(adpsgd)                  \
  X(relaysgd)                \
  X(sgp)                     \
  X(choco)                   \
  X(beer)                    \
  X(powergossip)             \
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

double dt_optimizer_bytes_per_round(const dt_optimizer_def *def, const dt_graph *g, const dt_model *m, size_t dim, const void *opts) {
  if (def->bytes_per_round_model != NULL && m != NULL) return def->bytes_per_round_model(g, m, opts);
  return def->bytes_per_round(g, dim, opts);
}

dt_status dt_optimizers_graph_check(const dt_config *cfg, const dt_graph *g) {
  for (int i = 0; i < cfg->num_problems; i++) {
    const dt_optimizer_def *def = dt_optimizer_find(cfg->problems[i].alg_name);
    char err[512] = "", key[256];
    if (def == NULL) continue;
    if (g->directed && cfg->problems[i].buffers == DT_BUFFERS_MIX) { /* W b with push weights would scale the statistics */
      snprintf(key, sizeof key, "problem_configs.%s.buffers", cfg->problems[i].key);
      const dt_status st = DT_ERROR(DT_ERR_CONFIG, "buffers: mix averages the model buffers with W, whose push weights on a directed "
                                    "graph are not row-stochastic (the running statistics would drift); use buffers: local");
      return dt_config_error_at(cfg, st, key);
    }
    if (g->directed && !def->directed_ok)
      snprintf(err, sizeof err,
               "%s mixes with a symmetric, doubly stochastic W and cannot run on a directed graph (experiment.graph.directed); "
               "push-sum (sgp) can", def->plugin.name);
    else if (dt_optimizer_asynchronous(def, cfg->problems[i].alg_opts) && !dt_network_has_clock(&cfg->experiment.network))
      snprintf(err, sizeof err,
               "%s is asynchronous: its nodes act when their own steps end and messages arrive, on the simulated clock, so "
               "it needs experiment.network with a speed (for example network: {speed: 2000})", def->plugin.name);
    else if (dt_optimizer_asynchronous(def, cfg->problems[i].alg_opts) && cfg->problems[i].buffers == DT_BUFFERS_MIX)
      snprintf(err, sizeof err, "%s is asynchronous: its nodes have no common rounds in which to mix model buffers "
               "(buffers: mix); use buffers: local", def->plugin.name);
    else if (dt_network_has_faults(&cfg->experiment.network) && def->on_missing == DT_MISSING_REFUSED)
      snprintf(err, sizeof err,
               "%s has no rule for a message that does not arrive, so it cannot run under experiment.network's faults "
               "(loss, link_up_rounds, node_up_rounds); configs/README.md lists the algorithms that can", def->plugin.name);
    else if (dt_network_has_faults(&cfg->experiment.network) && def->faults_ok != NULL &&
             !def->faults_ok(cfg->problems[i].alg_opts, err, sizeof err))
      ;
    else if (def->graph_ok == NULL || def->graph_ok(cfg->problems[i].alg_opts, g, err, sizeof err)) continue;
    snprintf(key, sizeof key, "problem_configs.%s.optimizer_config.alg_name", cfg->problems[i].key);
    const dt_status st = DT_ERROR(DT_ERR_CONFIG, "%s", err);
    return dt_config_error_at(cfg, st, key);
  }
  return DT_OK;
}
