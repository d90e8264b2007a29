/* Time-varying graphs (see dt/schedule.h). */
#include "dt/yaml.h"
#include "dt/schedule.h"

#include <string.h>

#include "../core/core_impl.h"
#include "dt/rng.h"

const char *const dt_schedule_names[] = {"static", "one_peer_exponential", "random_matching", "resample", NULL};

struct dt_schedule {
  const dt_graph *g;
  dt_graph_spec spec;
  int kind, every;
  int period;       /* one_peer_exponential: T = ⌈log2 N⌉ */
  int epoch;        /* resample: the epoch whose graph is in mask/w (-1: none) */
  uint8_t *mask;    /* [2E] */
  double *w_nbr;    /* [2E] */
  double *w_self;   /* [N] */
  int *partner;     /* random_matching: [N] */
  uint32_t *order;  /* random_matching: [E] */
};

int dt_schedule_kind_of(const dt_schedule *s) { return s->kind; }

void dt_schedule_free(dt_schedule *s) {
  if (s == NULL) return;
  dt_free(s->mask);
  dt_free(s->w_nbr);
  dt_free(s->w_self);
  dt_free(s->partner);
  dt_free(s->order);
  dt_free(s);
}

dt_status dt_schedule_create(const dt_graph *g, const dt_graph_spec *spec, int kind, int every, dt_schedule **out) {
  dt_status st = DT_OK;
  dt_schedule *s = NULL;
  *out = NULL;
  DT_CHECK_KEY(kind >= 0 && kind < DT_SCHEDULE_COUNT, DT_ERR_CONFIG, "experiment.graph.schedule", "graph.schedule: unknown schedule %d",
               kind);
  DT_CHECK_KEY(!g->directed, DT_ERR_CONFIG, "experiment.graph.schedule",
               "graph.schedule: a directed graph is static; one_peer_exponential is itself a directed schedule (of an undirected "
               "exponential graph)");
  DT_CHECK_KEY(kind != DT_SCHEDULE_ONE_PEER_EXPONENTIAL || g->type == DT_GRAPH_EXPONENTIAL, DT_ERR_CONFIG, "experiment.graph.schedule",
               "graph.schedule: one_peer_exponential runs on type exponential (the union of its round graphs), found %s",
               dt_graph_type_name(g->type));
  DT_CHECK(kind != DT_SCHEDULE_RESAMPLE || g->type == DT_GRAPH_COMPLETE, DT_ERR_INTERNAL,
           "graph.schedule: resample needs the complete graph as its union, found %s", dt_graph_type_name(g->type));
  DT_CHECK_KEY(kind != DT_SCHEDULE_RESAMPLE || every >= 1, DT_ERR_CONFIG, "experiment.graph.resample_every",
               "graph.resample_every must be >= 1, found %d", every);
  DT_ALLOC_GOTO(s, 1, "schedule");
  s->g = g;
  s->spec = *spec;
  s->spec.edge_file = NULL; /* resample draws random types only */
  s->kind = kind;
  s->every = every;
  s->epoch = -1;
  while ((1l << s->period) < g->n) s->period++;
  DT_ALLOC_GOTO(s->mask, 2 * (size_t)g->num_edges + 1, "schedule");
  DT_ALLOC_GOTO(s->w_nbr, 2 * (size_t)g->num_edges + 1, "schedule");
  DT_ALLOC_GOTO(s->w_self, (size_t)g->n, "schedule");
  DT_ALLOC_GOTO(s->partner, (size_t)g->n, "schedule");
  DT_ALLOC_GOTO(s->order, (size_t)g->num_edges + 1, "schedule");
  *out = s;
  s = NULL;
cleanup:
  dt_schedule_free(s);
  return st;
}

static void clear(dt_schedule *s, double self) {
  const dt_graph *g = s->g;
  memset(s->mask, 0, 2 * (size_t)g->num_edges);
  for (int e = 0; e < 2 * g->num_edges; e++) s->w_nbr[e] = 0;
  for (int i = 0; i < g->n; i++) s->w_self[i] = self;
}

/* The directed edge from → to of the union is active, and `to` gives `from` weight w. */
static dt_status link(dt_schedule *s, int from, int to, double w) {
  const dt_graph *g = s->g;
  const int a = dt_graph_nbr_index(g, from, to), b = dt_graph_nbr_index(g, to, from);
  DT_ASSERT(a >= 0 && b >= 0);
  s->mask[g->nbr_start[from] + a] = 1;
  s->w_nbr[g->nbr_start[to] + b] = w;
  return DT_OK;
}

static dt_status one_peer(dt_schedule *s, int k) {
  const int n = s->g->n;
  clear(s, n > 1 ? 0.5 : 1.0);
  if (n < 2) return DT_OK;
  const int d = (int)((1l << (k % s->period)) % n);
  for (int i = 0; i < n; i++) DT_TRY(link(s, i, (i + d) % n, 0.5));
  return DT_OK;
}

void dt_graph_random_matching(const dt_graph *g, dt_rng *r, const uint8_t *live, uint32_t *order, int *partner) {
  for (int e = 0; e < g->num_edges; e++) order[e] = (uint32_t)e;
  dt_rng_shuffle_u32(r, order, (size_t)g->num_edges);
  for (int i = 0; i < g->n; i++) partner[i] = -1;
  for (int t = 0; t < g->num_edges; t++) {
    const int u = g->edges[2 * order[t]], v = g->edges[2 * order[t] + 1];
    if (partner[u] >= 0 || partner[v] >= 0) continue;
    if (live != NULL && !live[g->nbr_start[u] + dt_graph_nbr_index(g, u, v)] && !live[g->nbr_start[v] + dt_graph_nbr_index(g, v, u)])
      continue;
    partner[u] = v, partner[v] = u;
  }
}

static dt_status matching(dt_schedule *s, int k) {
  const dt_graph *g = s->g;
  clear(s, 1.0);
  dt_rng r;
  dt_rng_init(&r, s->spec.seed, DT_RNG_SCHEDULE, (uint64_t)k);
  dt_graph_random_matching(g, &r, NULL, s->order, s->partner);
  for (int u = 0; u < g->n; u++) {
    if (s->partner[u] < 0) continue;
    s->w_self[u] = 0.5;
    DT_TRY(link(s, s->partner[u], u, 0.5));
  }
  return DT_OK;
}

static dt_status resample(dt_schedule *s, int k) {
  const int epoch = k / s->every;
  if (epoch == s->epoch) return DT_OK;
  dt_graph_spec spec = s->spec;
  if (epoch > 0) {
    dt_rng r;
    dt_rng_init(&r, s->spec.seed, DT_RNG_SCHEDULE, (uint64_t)epoch);
    spec.seed = dt_rng_u64(&r);
  }
  dt_graph *h = NULL;
  dt_status st = dt_graph_build(&spec, &h);
  if (st != DT_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", dt_error_message());
    return DT_ERROR_KEY(st, "experiment.graph.schedule", "graph.schedule: resample: the graph of rounds %d..%d: %s", epoch * s->every,
                        epoch * s->every + s->every - 1, why);
  }
  clear(s, 0);
  for (int i = 0; i < h->n; i++) {
    s->w_self[i] = h->w_self[i];
    for (int e = h->nbr_start[i]; e < h->nbr_start[i + 1]; e++) {
      st = link(s, h->nbr[e], i, h->w_nbr[e]);
      if (st != DT_OK) break;
    }
  }
  dt_graph_free(h);
  DT_TRY(st);
  s->epoch = epoch;
  return DT_OK;
}

dt_status dt_schedule_round(dt_schedule *s, int k, dt_round_graph *out) {
  switch (s->kind) {
  case DT_SCHEDULE_STATIC:
    *out = (dt_round_graph){.mask = NULL, .w_nbr = s->g->w_nbr, .w_self = s->g->w_self};
    return DT_OK;
  case DT_SCHEDULE_ONE_PEER_EXPONENTIAL: DT_TRY(one_peer(s, k)); break;
  case DT_SCHEDULE_RANDOM_MATCHING: DT_TRY(matching(s, k)); break;
  case DT_SCHEDULE_RESAMPLE: DT_TRY(resample(s, k)); break;
  default: DT_ASSERT(0);
  }
  *out = (dt_round_graph){.mask = s->mask, .w_nbr = s->w_nbr, .w_self = s->w_self};
  return DT_OK;
}

dt_status dt_schedule_active_edges(dt_schedule *s, int rounds, double *out) {
  const int m = 2 * s->g->num_edges;
  *out = 0;
  if (s->kind == DT_SCHEDULE_STATIC) {
    *out = (double)rounds * m;
    return DT_OK;
  }
  for (int k = 0; k < rounds; k++) {
    dt_round_graph rg;
    DT_TRY(dt_schedule_round(s, k, &rg));
    for (int e = 0; e < m; e++) *out += rg.mask[e] != 0;
  }
  return DT_OK;
}

void dt_schedule_emit_yaml(const dt_schedule *s, dt_yemit *y) {
  char rule[512];
  rule[0] = '\0';
  dt_yemit_scalar(y, "schedule", 0);
  dt_yemit_map(y, 0);
  dt_yemit_scalar(y, "kind", 0), dt_yemit_str(y, dt_schedule_names[s->kind]);
  switch (s->kind) {
  case DT_SCHEDULE_ONE_PEER_EXPONENTIAL:
    dt_yemit_scalar(y, "period", 0), dt_yemit_int(y, s->period);
    snprintf(rule, sizeof rule, "round k: node i sends to (i + 2^(k mod period)) mod N; W_ii = W_i,i-d = 1/2");
    break;
  case DT_SCHEDULE_RANDOM_MATCHING:
    snprintf(rule, sizeof rule, "round k: a random maximal matching of the edges below (stream seed, schedule, k); matched pairs "
                                "average, W = 1/2");
    break;
  case DT_SCHEDULE_RESAMPLE:
    dt_yemit_scalar(y, "every", 0), dt_yemit_int(y, s->every);
    dt_yemit_scalar(y, "draws", 0), dt_yemit_str(y, dt_graph_type_name(s->spec.type));
    snprintf(rule, sizeof rule, "rounds [eR, eR+R): a new %s graph (epoch 0: the configured one, then seed drawn from (seed, "
             "schedule, e)) with %s weights; edges below: the union", dt_graph_type_name(s->spec.type), dt_mixing_name(s->spec.mixing));
    break;
  default:
    break;
  }
  if (rule[0] != '\0') dt_yemit_scalar(y, "rule", 0), dt_yemit_scalar(y, rule, 1);
  dt_yemit_end(y);
}
