/* The seed reference's ways that dtrun reads but does not write: evaluate_frequency spelled
 * inside metrics_config, and the note a seed-layout file gets when its algorithm runs the
 * synchronous update where the seed swept nodes in place. The other seed spellings are rows of
 * the key tables (aliases such as ring or persistant_primal_opt). */
#include <string.h>

#include "config_impl.h"

dt_status config_read_metrics_config(const schema_ctx *ctx, const dt_ynode *problem, const char *path, dt_problem_config *pc) {
  static const dt_key mc_keys[] = {
      {.name = "evaluate_frequency", .type = DT_KEY_INT, .offset = offsetof(dt_problem_config, evaluate_frequency), .min = 1, .max = 1e9,
       .help = "evaluate every this many rounds"},
      {0},
  };
  const dt_ynode *mc = dt_ynode_get(problem, "metrics_config");
  if (mc == NULL) return DT_OK;
  char sub[700];
  snprintf(sub, sizeof sub, "%s.metrics_config", path);
  const dt_ynode *top = dt_ynode_get(problem, "evaluate_frequency"), *inner = dt_ynode_get(mc, "evaluate_frequency");
  /* an override in either spelling replaces the file's value in the other */
  const int top_wins = top != NULL && inner != NULL && top->origin != NULL && inner->origin == NULL;
  const int inner_wins = top != NULL && inner != NULL && inner->origin != NULL && top->origin == NULL;
  if (top != NULL && inner != NULL && !top_wins && !inner_wins)
    return schema_error(ctx, top, path, "evaluate_frequency is given twice, here and in metrics_config; keep one");
  const int keep = pc->evaluate_frequency; /* read from `top` (or the default) */
  DT_TRY(schema_read(ctx, mc_keys, mc, sub, pc)); /* checked even when the override replaces it */
  if (top_wins) pc->evaluate_frequency = keep;
  return DT_OK;
}

void config_mark_seed_order(const schema_ctx *ctx, const dt_ynode *problem, dt_problem_config *pc) {
  const dt_plugin *def = config_optimizer_named(ctx->reg, pc->alg_name);
  bool has_order = false;
  for (int i = 0; def != NULL && def->keys[i].name; i++) has_order |= strcmp(def->keys[i].name, "update_order") == 0;
  /* only a file in the seed's layout is a seed config; dtrun's own (and archived) files are not */
  const bool seed_layout = dt_ynode_get(problem, "metrics_config") != NULL || dt_ynode_get(problem, "problem_name") != NULL;
  pc->seed_order_defaulted = has_order && seed_layout && dt_ynode_get(dt_ynode_get(problem, "optimizer_config"), "update_order") == NULL;
}

bool dt_config_order_note(const dt_config *cfg, const char *prefix, char *buf, size_t size) {
  size_t used = 0;
  int k = 0;
  buf[0] = '\0';
  used += (size_t)snprintf(buf, size, "%snote: ", prefix);
  for (int p = 0; p < cfg->num_problems; p++) {
    if (!cfg->problems[p].seed_order_defaulted) continue;
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s (%s)", k++ ? ", " : "", cfg->problems[p].problem_name,
                             cfg->problems[p].alg_name);
  }
  if (k == 0) {
    buf[0] = '\0';
    return false;
  }
  snprintf(buf + used, used < size ? size - used : 0,
           " run%s the synchronous update: every node mixes the round's values.\n"
           "%s  The seed reference swept the nodes in place, one after another; update_order: sequential\n"
           "%s  in optimizer_config reproduces it.\n",
           k > 1 ? "" : "s", prefix, prefix);
  return true;
}
