/* Network faults: the draws (see dt/faults.h). */
#include "dt/faults.h"

#include <math.h>
#include <string.h>

#include "../core/core_impl.h"
#include "dt/rng.h"

static const uint64_t ID_CENTRE_BURST = 1ull << 55, ID_CENTRE_LINKS = 1ull << 56, ID_CENTRE_LOSS = 1ull << 57, ID_ASYNC = 1ull << 58, ID_BURST = 1ull << 59, ID_NODES = 1ull << 60, ID_LINKS = 1ull << 61, ID_LOSS = 1ull << 62;

/* An alternating renewal process in rounds: up for a geometric length, then down, and so on. */
typedef struct interval {
  dt_rng r;
  int up;       /* state during rounds [.., until) */
  long until;   /* first round of the next state */
} interval;

struct dt_faults {
  dt_network_spec spec;
  const dt_graph *g;
  uint64_t seed;
  int k;              /* the last round asked (-1: none) */
  interval *nodes;    /* [n], or NULL without churn */
  interval *links;    /* [num_edges], or NULL without link failures */
  interval *centre;   /* [n] the nodes' links to a centre, or NULL without link failures */
  int kc;             /* the last round asked of the centre links (-1: none) */
  double p_enter;     /* Gilbert–Elliott: good → bad per message */
};

void dt_faults_free(dt_faults *f) {
  if (f == NULL) return;
  dt_free(f->nodes);
  dt_free(f->links);
  dt_free(f->centre);
  dt_free(f);
}

/* A geometric length on {1, 2, ...} with mean m >= 1. */
static long geometric(dt_rng *r, double m) {
  if (m <= 1.0) return 1;
  const double u = 1.0 - dt_rng_double(r); /* (0, 1] */
  const double len = 1.0 + floor(log(u) / log1p(-1.0 / m));
  return len < 1e15 ? (long)len : (long)1e15;
}

static void interval_start(interval *iv, uint64_t seed, uint64_t id, double up_mean) {
  dt_rng_init(&iv->r, seed, DT_RNG_FAULTS, id);
  iv->up = 1;
  iv->until = geometric(&iv->r, up_mean);
}

/* The state at round k (k at or after the last one asked). */
static int interval_at(interval *iv, long k, double up_mean, double down_mean) {
  while (k >= iv->until) {
    iv->up = !iv->up;
    iv->until += geometric(&iv->r, iv->up ? up_mean : down_mean);
  }
  return iv->up;
}

static void restart(dt_faults *f) {
  const dt_network_spec *s = &f->spec;
  for (int i = 0; f->nodes != NULL && i < f->g->n; i++) interval_start(&f->nodes[i], f->seed, ID_NODES + (uint64_t)i, s->node_up_rounds);
  for (int e = 0; f->links != NULL && e < f->g->num_edges; e++)
    interval_start(&f->links[e], f->seed, ID_LINKS + (uint64_t)e, s->link_up_rounds);
  f->k = -1;
}

static void centre_restart(dt_faults *f) {
  for (int i = 0; f->centre != NULL && i < f->g->n; i++)
    interval_start(&f->centre[i], f->seed, ID_CENTRE_LINKS + (uint64_t)i, f->spec.link_up_rounds);
  f->kc = -1;
}

dt_status dt_faults_create(const dt_network_spec *spec, const dt_graph *g, uint64_t seed, dt_faults **out) {
  dt_status st = DT_OK;
  dt_faults *f = NULL;
  *out = NULL;
  DT_CHECK(spec->loss >= 0 && spec->loss < 1 && spec->loss_burst >= 1, DT_ERR_INTERNAL, "faults: loss %g, burst %g", spec->loss,
           spec->loss_burst);
  DT_ALLOC_GOTO(f, 1, "faults");
  f->spec = *spec;
  f->g = g;
  f->seed = seed;
  f->p_enter = spec->loss_burst > 1 ? spec->loss / ((1.0 - spec->loss) * spec->loss_burst) : 0.0;
  if (f->p_enter > 1.0) f->p_enter = 1.0; /* rounding at the validated limit loss = b / (b + 1) */
  if (spec->node_up_rounds > 0) DT_ALLOC_GOTO(f->nodes, g->n > 0 ? g->n : 1, "faults");
  if (spec->link_up_rounds > 0) DT_ALLOC_GOTO(f->links, g->num_edges > 0 ? g->num_edges : 1, "faults");
  if (spec->link_up_rounds > 0) DT_ALLOC_GOTO(f->centre, g->n > 0 ? g->n : 1, "faults");
  restart(f);
  centre_restart(f);
  *out = f;
  f = NULL;
cleanup:
  dt_faults_free(f);
  return st;
}

int dt_faults_churn(const dt_faults *f) { return f != NULL && f->nodes != NULL; }

void dt_faults_round(dt_faults *f, int k, uint8_t *online, uint8_t *up) {
  const dt_graph *g = f->g;
  const dt_network_spec *s = &f->spec;
  if (k < f->k) restart(f);
  f->k = k;
  for (int i = 0; i < g->n; i++) online[i] = f->nodes == NULL || interval_at(&f->nodes[i], k, s->node_up_rounds, s->node_down_rounds);
  for (int i = 0; i < g->n; i++)
    for (int e = g->nbr_start[i]; e < g->nbr_start[i + 1]; e++) up[e] = 1;
  if (f->links == NULL) return;
  for (int u = 0; u < g->num_edges; u++) {
    const int a = g->edges[2 * u], b = g->edges[2 * u + 1];
    const uint8_t ok = (uint8_t)interval_at(&f->links[u], k, s->link_up_rounds, s->link_down_rounds);
    up[g->nbr_start[a] + dt_graph_nbr_index(g, a, b)] = ok;
    up[g->nbr_start[b] + dt_graph_nbr_index(g, b, a)] = ok;
  }
}

/* Each chain's state before its first message: the long-run share in the bad state. */
static void burst_start(const dt_faults *f, uint64_t id, size_t m, uint8_t *state) {
  memset(state, 0, m);
  if (f->spec.loss_burst <= 1) return;
  dt_rng r;
  dt_rng_init(&r, f->seed, DT_RNG_FAULTS, id);
  for (size_t e = 0; e < m; e++) state[e] = dt_rng_double(&r) < f->spec.loss;
}

void dt_faults_burst_start(const dt_faults *f, uint8_t *state) { burst_start(f, ID_BURST, 2 * (size_t)f->g->num_edges, state); }

/* Whether a message with uniform draw u is lost: independently, or moving its chain's state. */
static int lose(const dt_faults *f, double u, uint8_t *state) {
  if (f->spec.loss_burst <= 1) return u < f->spec.loss;
  *state = *state ? !(u < 1.0 / f->spec.loss_burst) : u < f->p_enter;
  return *state;
}

/* m messages' fates from the stream id, one draw per message sent. */
static void loss_draws(const dt_faults *f, uint64_t id, size_t m, const uint8_t *sent, uint8_t *state, uint8_t *lost) {
  dt_rng r;
  dt_rng_init(&r, f->seed, DT_RNG_FAULTS, id);
  for (size_t e = 0; e < m; e++) lost[e] = sent[e] && f->spec.loss > 0 && lose(f, dt_rng_double(&r), &state[e]);
}

void dt_faults_loss(const dt_faults *f, uint64_t x, const uint8_t *sent, uint8_t *state, uint8_t *lost) {
  loss_draws(f, ID_LOSS + x, 2 * (size_t)f->g->num_edges, sent, state, lost);
}

void dt_faults_centre_round(dt_faults *f, int k, uint8_t *up) {
  if (k < f->kc) centre_restart(f);
  f->kc = k;
  for (int i = 0; i < f->g->n; i++)
    up[i] = f->centre == NULL || interval_at(&f->centre[i], k, f->spec.link_up_rounds, f->spec.link_down_rounds);
}

void dt_faults_centre_burst_start(const dt_faults *f, uint8_t *state) { burst_start(f, ID_CENTRE_BURST, 2 * (size_t)f->g->n, state); }

void dt_faults_centre_loss(const dt_faults *f, uint64_t x, const uint8_t *sent, uint8_t *state, uint8_t *lost) {
  loss_draws(f, ID_CENTRE_LOSS + x, (size_t)f->g->n, sent, state, lost);
}

int dt_faults_lose_one(const dt_faults *f, uint64_t msg, int e, uint8_t *state) {
  if (f->spec.loss <= 0) return 0;
  dt_rng r;
  dt_rng_init(&r, f->seed, DT_RNG_FAULTS, ID_ASYNC + msg);
  return lose(f, dt_rng_double(&r), &state[e]);
}
