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

dt_run_env dt_run_env_of(const dt_config *cfg, int p, const dt_graph *g) {
  return (dt_run_env){.graph = g,
                      .directed = g->directed,
                      .schedule = (int)cfg->experiment.graph.schedule,
                      .clock = dt_network_has_clock(&cfg->experiment.network),
                      .faults = dt_network_has_faults(&cfg->experiment.network),
                      .buffers_mix = cfg->problems[p].buffers == DT_BUFFERS_MIX};
}

void dt_optimizers_running_on(unsigned flag, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; dt_optimizers[i] != NULL && used < size; i++)
    if (dt_optimizers[i]->runs_on & flag)
      used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", dt_optimizers[i]->plugin.name);
}

int dt_optimizer_accepts(const dt_optimizer_def *def, const void *opts, const dt_run_env *env, dt_refusal *why) {
  const char *name = def->plugin.name;
  const int async = dt_optimizer_asynchronous(def, opts);
  if (env->directed && env->buffers_mix) { /* W b with push weights would scale the statistics */
    dt_refuse(why, NULL, "buffers: mix averages the model buffers with W, whose push weights on a directed graph are not "
              "row-stochastic (the running statistics would drift); use buffers: local");
    snprintf(why->key, sizeof why->key, "buffers");
    return 0;
  }
  if (env->directed && !(def->runs_on & DT_RUNS_DIRECTED))
    return dt_refuse(why, NULL, "%s mixes with a symmetric, doubly stochastic W and cannot run on a directed graph "
                     "(experiment.graph.directed); push-sum (sgp) can", name);
  if (env->schedule != DT_SCHEDULE_STATIC && !(def->runs_on & DT_RUNS_TIME_VARYING)) {
    char list[512];
    dt_optimizers_running_on(DT_RUNS_TIME_VARYING, list, sizeof list);
    dt_refuse(why, NULL, "%s needs a static graph, and experiment.graph.schedule is %s (time-varying graphs run %s)", name,
              dt_schedule_names[env->schedule], list);
    snprintf(why->key, sizeof why->key, "optimizer_config");
    return 0;
  }
  if (async && !env->clock)
    return dt_refuse(why, NULL, "%s is asynchronous: its nodes act when their own steps end and messages arrive, on the "
                     "simulated clock, so it needs experiment.network with a speed (for example network: {speed: 2000})", name);
  if (async && env->buffers_mix)
    return dt_refuse(why, NULL, "%s is asynchronous: its nodes have no common rounds in which to mix model buffers "
                     "(buffers: mix); use buffers: local", name);
  if (env->faults && def->on_missing == DT_MISSING_REFUSED)
    return dt_refuse(why, NULL, "%s has no rule for a message that does not arrive, so it cannot run under "
                     "experiment.network's faults (loss, link_up_rounds, node_up_rounds); configs/README.md lists the "
                     "algorithms that can", name);
  return def->accepts == NULL || def->accepts(opts, env, why);
}

dt_status dt_optimizers_admit(const dt_config *cfg, const dt_graph *g) {
  for (int i = 0; i < cfg->num_problems; i++) {
    const dt_optimizer_def *def = dt_optimizer_find(cfg->problems[i].alg_name);
    if (def == NULL) continue;
    const dt_run_env env = dt_run_env_of(cfg, i, g);
    dt_refusal why = {.key = "optimizer_config.alg_name"};
    if (dt_optimizer_accepts(def, cfg->problems[i].alg_opts, &env, &why)) continue;
    char key[256];
    snprintf(key, sizeof key, "problem_configs.%s.%s", cfg->problems[i].key, why.key);
    return dt_config_error_at(cfg, DT_ERROR(DT_ERR_CONFIG, "%s", why.msg), key);
  }
  return DT_OK;
}
