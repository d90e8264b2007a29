/* The experiment's graph and schedule from its config (experiment.graph): the spec the config
 * describes, edge files found relative to the config file, and graph errors positioned at their
 * key in that file (by the key path each error carries: dt_config_positioned). Here rather than
 * in each command so that run, check and sweep build the same graph with the same messages. */
#include <stdio.h>
#include <string.h>

#include "dt/config.h"
#include "dt/graph.h"
#include "dt/schedule.h"

static void graph_spec_from_config(const dt_config *cfg, dt_graph_spec *spec) {
  const dt_graph_config *g = &cfg->experiment.graph;
  memset(spec, 0, sizeof *spec);
  spec->type = (dt_graph_type)g->type;
  spec->num_nodes = g->num_nodes;
  spec->seed = cfg->experiment.seed;
  spec->p = g->p;
  spec->gen_attempts = g->gen_attempts;
  spec->rows = g->rows;
  spec->cols = g->cols;
  spec->degree = g->degree;
  spec->radius = g->radius;
  spec->fiedler = g->fiedler;
  spec->fiedler_tolerance = g->fiedler_tolerance;
  spec->mixing = (dt_mixing)g->mixing;
  spec->directed = g->directed;
  /* relative to the working directory: loading resolved it (src/config/load.c, resolve_input) */
  if (g->edge_file[0] != '\0') spec->edge_file = g->edge_file;
}

dt_status dt_graph_from_config(const dt_config *cfg, dt_graph **out) {
  dt_graph_spec gs;
  *out = NULL;
  graph_spec_from_config(cfg, &gs);
  if (gs.directed && cfg->experiment.graph.schedule != DT_SCHEDULE_STATIC) /* before resample's union is built */
    return dt_config_positioned(cfg, DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.graph.schedule", "graph.schedule: a directed graph is static; "
                                                  "one_peer_exponential is itself a directed schedule (of an undirected exponential graph)"));
  dt_status st = dt_graph_build(&gs, out);
  if (st == DT_OK && cfg->experiment.graph.schedule == DT_SCHEDULE_RESAMPLE) {
    /* the configured graph is round 0's (checked above); the exchange runs on the union of
     * every draw: the complete graph */
    dt_graph_free(*out);
    *out = NULL;
    gs.type = DT_GRAPH_COMPLETE;
    gs.edge_file = NULL;
    gs.fiedler = 0;
    st = dt_graph_build(&gs, out);
  }
  return st == DT_OK ? DT_OK : dt_config_positioned(cfg, st);
}

dt_status dt_schedule_from_config(const dt_config *cfg, const dt_graph *g, dt_schedule **out) {
  dt_graph_spec gs;
  *out = NULL;
  if (cfg->experiment.graph.schedule == DT_SCHEDULE_STATIC) return DT_OK;
  graph_spec_from_config(cfg, &gs);
  return dt_config_positioned(cfg, dt_schedule_create(g, &gs, cfg->experiment.graph.schedule, cfg->experiment.graph.resample_every, out));
}
