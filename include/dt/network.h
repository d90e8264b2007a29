/* The simulated network (experiment.network): each node's compute speed and each link's latency
 * and bandwidth, drawn from the config and the seed alone, so every rank builds the same tables.
 *
 * A node's clock advances by the cost of each local step (its samples, or its training FLOPs =
 * 3 × the forward FLOPs per sample, divided by the node's speed, times a per-step jitter factor)
 * and waits for messages: a message leaves at the sender's clock and arrives latency +
 * bytes / bandwidth later. The runner applies these rules (optimizers/run_clock.c); this module
 * holds the numbers.
 *
 * Draws, each from its own stream (seed, DT_RNG_NETWORK, id):
 *   node speeds      id = node: speed · exp(speed_spread · z), z standard normal (median speed);
 *   stragglers       id = 2^62: round(stragglers · N) nodes, a uniform choice, slowed by `slowdown`;
 *   link factors     id = 2^61 + lo · 2^31 + hi: latency · exp(link_spread · z1), bandwidth ·
 *                    exp(−link_spread · z2) for the pair {lo, hi}, the same both ways;
 *   step jitter      id = 2^60 + node · 2^32 + step: exp(jitter · z). */
#ifndef DT_NETWORK_H
#define DT_NETWORK_H

#include <stddef.h>
#include <stdint.h>

#include "dt/status.h"

typedef enum dt_network_unit { DT_NETWORK_SAMPLES = 0, DT_NETWORK_FLOPS } dt_network_unit;

typedef struct dt_network_spec {
  double speed;          /* samples (or FLOPs) per simulated second of a node; 0: no simulated clock */
  int unit;              /* dt_network_unit */
  double speed_spread;   /* σ of the lognormal spread of node speeds (0: all equal) */
  double stragglers;     /* share of the nodes slowed, in [0, 1] */
  double slowdown;       /* the stragglers' factor (>= 1) */
  double jitter;         /* σ of the lognormal factor on every step's cost (0: none) */
  double latency;        /* seconds per message */
  double bandwidth;      /* bytes per second */
  double link_spread;    /* σ of the lognormal per-link factors (0: every link the same) */
  int nodes_per_host;    /* > 0: nodes in blocks of this size, links between blocks of the second class */
  double cross_latency, cross_bandwidth; /* the second class (between hosts) */
  /* faults (dt/faults.h): each on without the clock too */
  double loss;           /* a message's probability of being lost (the long-run rate) */
  double loss_burst;     /* mean length of a run of lost messages on a link: 1 independent, > 1 Gilbert-Elliott */
  double link_up_rounds, link_down_rounds; /* a link's mean rounds up between failures (0: never fails), and down */
  double node_up_rounds, node_down_rounds; /* a node's mean rounds online between absences (0: always on), and offline */
} dt_network_spec;

/* Whether spec turns the simulated clock on (speed > 0), and whether it has any fault. */
static inline int dt_network_has_clock(const dt_network_spec *s) { return s->speed > 0; }
static inline int dt_network_has_faults(const dt_network_spec *s) {
  return s->loss > 0 || s->link_up_rounds > 0 || s->node_up_rounds > 0;
}

typedef struct dt_network dt_network;

/* The tables for n nodes (speeds; links are computed on demand from the pair). Not collective. */
DT_MUST_USE dt_status dt_network_create(const dt_network_spec *spec, int n, uint64_t seed, double flops_per_sample,
                                        dt_network **out);
void dt_network_free(dt_network *net);
/* Node i's speed (after spread and stragglers), and whether it is a straggler. */
double dt_network_speed(const dt_network *net, int i);
int dt_network_is_straggler(const dt_network *net, int i);
/* The simulated seconds of node i's step number `step` (0, 1, ... counted per node) on `samples`. */
double dt_network_step_seconds(const dt_network *net, int i, uint64_t step, double samples);
/* The simulated seconds a node of the configured `speed` (no spread, no straggling, no jitter)
 * takes for a step of `samples`: an asynchronous algorithm's round. */
double dt_network_nominal_seconds(const dt_network *net, double samples);
/* The simulated seconds of a message of `bytes` from i to j (latency + bytes / bandwidth). */
double dt_network_message_seconds(const dt_network *net, int i, int j, double bytes);

#endif
