/* The simulated network's numbers (see dt/network.h). */
#include "dt/network.h"

#include <math.h>
#include <stdlib.h>

#include "../core/core_impl.h"
#include "dt/rng.h"

struct dt_network {
  dt_network_spec spec;
  int n;
  uint64_t seed;
  double step_scale; /* 1 (samples) or 3 × forward FLOPs per sample */
  double *speed;     /* [n] */
  uint8_t *slow;     /* [n] */
};

static const uint64_t ID_STRAGGLERS = 1ull << 62, ID_LINKS = 1ull << 61, ID_JITTER = 1ull << 60;

void dt_network_free(dt_network *net) {
  if (net == NULL) return;
  dt_free(net->speed);
  dt_free(net->slow);
  dt_free(net);
}

dt_status dt_network_create(const dt_network_spec *spec, int n, uint64_t seed, double flops_per_sample, dt_network **out) {
  dt_status st = DT_OK;
  dt_network *net = NULL;
  int *order = NULL;
  *out = NULL;
  DT_CHECK(spec->speed > 0 && n >= 1, DT_ERR_INTERNAL, "network: speed %g for %d nodes", spec->speed, n);
  DT_ALLOC_GOTO(net, 1, "network");
  net->spec = *spec;
  net->n = n;
  net->seed = seed;
  net->step_scale = spec->unit == DT_NETWORK_FLOPS ? 3.0 * flops_per_sample : 1.0;
  DT_ALLOC_GOTO(net->speed, n, "network");
  DT_ALLOC_GOTO(net->slow, n, "network");
  for (int i = 0; i < n; i++) {
    dt_rng r;
    dt_rng_init(&r, seed, DT_RNG_NETWORK, (uint64_t)i);
    net->speed[i] = spec->speed * (spec->speed_spread > 0 ? exp(spec->speed_spread * dt_rng_normal(&r)) : 1.0);
  }
  /* exactly round(share · n) stragglers: the first of a uniform shuffle (Fisher–Yates) */
  const int k = (int)floor(spec->stragglers * n + 0.5);
  if (k > 0) {
    dt_rng r;
    dt_rng_init(&r, seed, DT_RNG_NETWORK, ID_STRAGGLERS);
    DT_ALLOC_GOTO(order, n, "network");
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
      const int j = (int)dt_rng_below(&r, (uint32_t)i + 1), t = order[i];
      order[i] = order[j], order[j] = t;
    }
    for (int i = 0; i < k && i < n; i++) net->slow[order[i]] = 1, net->speed[order[i]] /= spec->slowdown;
  }
  *out = net;
  net = NULL;
cleanup:
  dt_free(order);
  dt_network_free(net);
  return st;
}

double dt_network_speed(const dt_network *net, int i) { return net->speed[i]; }
int dt_network_is_straggler(const dt_network *net, int i) { return net->slow[i]; }

double dt_network_step_seconds(const dt_network *net, int i, uint64_t step, double samples) {
  double factor = 1.0;
  if (net->spec.jitter > 0) {
    dt_rng r;
    dt_rng_init(&r, net->seed, DT_RNG_NETWORK, ID_JITTER + ((uint64_t)i << 32) + (step & 0xffffffffu));
    factor = exp(net->spec.jitter * dt_rng_normal(&r));
  }
  return samples * net->step_scale / net->speed[i] * factor;
}

double dt_network_nominal_seconds(const dt_network *net, double samples) { return samples * net->step_scale / net->spec.speed; }

double dt_network_message_seconds(const dt_network *net, int i, int j, double bytes) {
  const dt_network_spec *s = &net->spec;
  const int lo = i < j ? i : j, hi = i < j ? j : i;
  const int cross = s->nodes_per_host > 0 && lo / s->nodes_per_host != hi / s->nodes_per_host;
  double latency = cross ? s->cross_latency : s->latency, bandwidth = cross ? s->cross_bandwidth : s->bandwidth;
  if (s->link_spread > 0) {
    dt_rng r;
    dt_rng_init(&r, net->seed, DT_RNG_NETWORK, ID_LINKS + ((uint64_t)lo << 31) + (uint64_t)hi);
    latency *= exp(s->link_spread * dt_rng_normal(&r));
    bandwidth *= exp(-s->link_spread * dt_rng_normal(&r));
  }
  return latency + bytes / bandwidth;
}
