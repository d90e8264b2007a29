/* Cross-key checks: what no single key can tell, run once the whole experiment is read. Names
 * that would collide in the run folder, a graph type and its schedule, each algorithm and a
 * time-varying graph, the backends this build has, the metrics the problem can record. Each
 * error is positioned at the node that is most likely wrong. */
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

#include "config_impl.h"
#include "dt/graph.h"
#include "dt/schedule.h"
#include "dt_config.h"

bool dt_config_file_name_ok(const char *s) {
  if (s[0] == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return false;
  const uint8_t *u = (const uint8_t *)s;
  const size_t len = strlen(s);
  if (u8_check(u, len) != NULL) return false; /* not UTF-8 */
  for (const uint8_t *p = u; p < u + len;) {
    ucs4_t c;
    p += u8_mbtouc(&c, p, (size_t)(u + len - p));
    if (c == '/' || c == '\\' || uc_is_general_category(c, UC_CATEGORY_C) || uc_is_property_default_ignorable_code_point(c))
      return false; /* a separator, or a control, format (zero-width, bidi) or unassigned code point */
  }
  return true;
}

void config_name_shown(const char *s, char *out, size_t size) {
  const uint8_t *u = (const uint8_t *)s, *end = u + strlen(s);
  size_t used = 0;
  out[0] = '\0';
  while (u < end && used + 12 < size) {
    ucs4_t c;
    const int n = u8_mbtouc(&c, u, (size_t)(end - u));
    if (c == 0xfffd || uc_is_general_category(c, UC_CATEGORY_C) || uc_is_property_default_ignorable_code_point(c))
      used += (size_t)snprintf(out + used, size - used, "<U+%04X>", (unsigned)c);
    else
      used += (size_t)snprintf(out + used, size - used, "%.*s", n, (const char *)u);
    u += n;
  }
}

/* The name a case-insensitive, normalising file system sees: case folded, in NFKC. */
static bool file_name_key(const char *s, char *out, size_t size) {
  size_t len = size - 1;
  uint8_t *k = u8_casefold((const uint8_t *)s, strlen(s), NULL, UNINORM_NFKC, (uint8_t *)out, &len);
  if (k == NULL) return false;
  if (k != (uint8_t *)out) { /* longer than out: libunistring allocated it */
    free(k);
    return false;
  }
  out[len] = '\0';
  return true;
}

/* Every file name unique and usable in the run folder: problem names, the experiment's name,
 * and solo_results.csv, which individual_training writes. */
static dt_status check_names(const schema_ctx *ctx, const dt_ynode *exp, const dt_ynode *pcs, const dt_config *cfg) {
  char ki[4 * DT_NAME_MAX], kj[4 * DT_NAME_MAX];
  for (int i = 0; i < cfg->num_problems; i++)
    for (int j = 0; j < i; j++) {
      const char *a = cfg->problems[j].problem_name, *b = cfg->problems[i].problem_name;
      if (strcmp(a, b) == 0)
        return schema_error(ctx, pcs->items[i], "problem_configs", "problems '%s' and '%s' share problem_name '%s'; result files "
                            "would collide", cfg->problems[j].key, cfg->problems[i].key, b);
      if (file_name_key(a, kj, sizeof kj) && file_name_key(b, ki, sizeof ki) && strcmp(ki, kj) == 0)
        return schema_error(ctx, pcs->items[i], "problem_configs", "problems '%s' and '%s' have problem_names '%s' and '%s', which "
                            "differ only in case or Unicode form: their result files would collide on a file system that ignores "
                            "case (macOS, Windows) or normalises names", cfg->problems[j].key, cfg->problems[i].key, a, b);
    }
  const dt_experiment_config *e = &cfg->experiment;
  if (!dt_config_file_name_ok(e->name)) {
    const dt_ynode *at = dt_ynode_get(exp, "name");
    char shown[4 * DT_NAME_MAX];
    config_name_shown(e->name, shown, sizeof shown);
    return schema_error(ctx, at != NULL ? at : exp, "experiment.name",
                        "'%s' must be a file name: not empty, '.' or '..', UTF-8 without '/', '\\', control or invisible "
                        "characters (it names the output folder)", shown);
  }
  for (int i = 0; i < cfg->num_problems && e->individual_training.train_solo; i++)
    if (strcmp(cfg->problems[i].problem_name, "solo") == 0)
      return schema_error(ctx, pcs->items[i], "problem_configs", "problem '%s' is named solo, so its results would overwrite "
                          "solo_results.csv, which individual_training (train_solo: true) writes; give it another problem_name",
                          cfg->problems[i].key);
  return DT_OK;
}

/* The graph type against what it needs (an edge file) and against its schedule. */
static dt_status check_graph(const schema_ctx *ctx, const dt_ynode *exp, const dt_experiment_config *e) {
  const dt_ynode *graph = dt_ynode_get(exp, "graph");
  if (e->graph.type == DT_GRAPH_FILE && e->graph.edge_file[0] == '\0')
    return schema_error(ctx, graph, "experiment.graph.edge_file", "graph.type file needs an edge_file");
  if (e->graph.schedule == DT_SCHEDULE_ONE_PEER_EXPONENTIAL && e->graph.type != DT_GRAPH_EXPONENTIAL)
    return schema_error(ctx, dt_ynode_get(graph, "schedule"), "experiment.graph.schedule",
                        "one_peer_exponential runs on type exponential (the union of its round graphs), found type %s",
                        dt_graph_type_name(e->graph.type));
  if (e->graph.schedule == DT_SCHEDULE_RESAMPLE && e->graph.type != DT_GRAPH_RANDOM && e->graph.type != DT_GRAPH_REGULAR &&
      e->graph.type != DT_GRAPH_GEOMETRIC)
    return schema_error(ctx, dt_ynode_get(graph, "schedule"), "experiment.graph.schedule",
                        "resample draws new graphs of a random type (random, regular or geometric), found type %s",
                        dt_graph_type_name(e->graph.type));
  return DT_OK;
}

/* Every problem's metrics are ones the experiment's problem plug-in can record. */
static dt_status check_metrics(const schema_ctx *ctx, const dt_ynode *pcs, const dt_config *cfg) {
  const dt_problem_plugin *prob = ctx->reg->problems[cfg->experiment.problem_index];
  for (int i = 0; i < cfg->num_problems; i++) {
    const unsigned extra = cfg->problems[i].metrics & ~prob->metrics;
    if (extra == 0) continue;
    char sub[700];
    snprintf(sub, sizeof sub, "problem_configs.%s.metrics", cfg->problems[i].key);
    const dt_ynode *m = dt_ynode_get(pcs->items[i], "metrics");
    return schema_error(ctx, m != NULL ? m : pcs->items[i], sub, "the %s problem cannot record %s", prob->plugin.name,
                        config_metric_names[__builtin_ctz(extra)]);
  }
  return DT_OK;
}

/* evaluation.sample draws nodes of the graph: at most all of them. */
static dt_status check_evaluation(const schema_ctx *ctx, const dt_ynode *pcs, const dt_config *cfg) {
  const int n = cfg->experiment.graph.num_nodes;
  for (int i = 0; i < cfg->num_problems; i++) {
    const dt_eval_config *ev = &cfg->problems[i].evaluation;
    if (ev->sample == 0 || (ev->sample <= n && ev->nodes == DT_EVAL_ALL)) continue;
    char sub[700];
    snprintf(sub, sizeof sub, "problem_configs.%s.evaluation.sample", cfg->problems[i].key);
    const dt_ynode *at = dt_ynode_get(dt_ynode_get(pcs->items[i], "evaluation"), "sample");
    if (ev->nodes != DT_EVAL_ALL)
      return schema_error(ctx, at != NULL ? at : pcs->items[i], sub, "a sample of nodes, but nodes is mean (the average "
                          "model, evaluated once); keep one of the two");
    return schema_error(ctx, at != NULL ? at : pcs->items[i], sub, "expected at most the graph's %d nodes, found %d", n,
                        ev->sample);
  }
  return DT_OK;
}

/* experiment.network: written to turn the simulated clock (speed) or faults on. */
static dt_status check_network(const schema_ctx *ctx, const dt_ynode *exp, const dt_experiment_config *e) {
  const dt_ynode *net = dt_ynode_get(exp, "network");
  const dt_network_spec *s = &e->network;
  if (net == NULL) return DT_OK;
  /* speed: 0 written out turns the clock off on purpose (a sweep's point without it) */
  if (!dt_network_has_clock(s) && !dt_network_has_faults(s) && dt_ynode_get(net, "speed") == NULL)
    return schema_error(ctx, net, "experiment.network.speed",
                        "needs a speed (a node's samples per simulated second, > 0) to turn the simulated clock on, or a fault "
                        "(loss, link_up_rounds, node_up_rounds); without them the other network keys do nothing");
  /* a geometric number of rounds on {1, 2, ...} has a mean of at least 1 (0: the fault is off) */
  static const char *const up_keys[] = {"link_up_rounds", "node_up_rounds"};
  const double ups[] = {s->link_up_rounds, s->node_up_rounds};
  for (int i = 0; i < 2; i++)
    if (ups[i] > 0 && ups[i] < 1) {
      char sub[64];
      snprintf(sub, sizeof sub, "experiment.network.%s", up_keys[i]);
      return schema_error(ctx, dt_ynode_get(net, up_keys[i]) != NULL ? dt_ynode_get(net, up_keys[i]) : net, sub,
                          "expected 0 (off) or a mean of at least 1 round (a geometric number of rounds), found %g", ups[i]);
    }
  /* Gilbert-Elliott: entering the bad state with loss / ((1 - loss) burst) must be a probability */
  if (s->loss_burst > 1 && s->loss > s->loss_burst / (s->loss_burst + 1))
    return schema_error(ctx, dt_ynode_get(net, "loss") != NULL ? dt_ynode_get(net, "loss") : net, "experiment.network.loss",
                        "expected at most %g with loss_burst %g (bursts that long cannot average %g lost), found %g",
                        s->loss_burst / (s->loss_burst + 1), s->loss_burst, s->loss, s->loss);
  return DT_OK;
}

dt_status config_validate(const schema_ctx *ctx, const dt_ynode *root, const dt_config *cfg) {
  const dt_ynode *exp = dt_ynode_get(root, "experiment"), *pcs = dt_ynode_get(root, "problem_configs");
  DT_TRY(check_names(ctx, exp, pcs, cfg));
  DT_TRY(check_graph(ctx, exp, &cfg->experiment));
  DT_TRY(check_network(ctx, exp, &cfg->experiment));
  if (cfg->experiment.backend == DT_BACKEND_CUDA && !DT_HAVE_CUDA)
    return schema_error(ctx, dt_ynode_get(exp, "backend"), "experiment.backend",
                        "cuda, but this dtrun was built without the CUDA backend; use cpu or auto "
                        "(auto picks cuda only where it is built and a GPU is usable)");
  DT_TRY(check_evaluation(ctx, pcs, cfg));
  return check_metrics(ctx, pcs, cfg);
}
