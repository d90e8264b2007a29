/* Seeded, counter-based random streams (Philox4x32-10).
 *
 * A stream is named by (seed, purpose, id): the key comes from (seed, purpose) and the id sits in
 * the counter's high half, so any stream can be created anywhere, in any order, on any rank, and
 * yields the same numbers. This is what makes results independent of the node→rank placement. */
#ifndef DT_RNG_H
#define DT_RNG_H

#include <stddef.h>
#include <stdint.h>

/* What a stream is used for. Values are part of the reproducibility contract: never renumber. */
typedef enum dt_rng_purpose {
  DT_RNG_GRAPH = 1,   /* graph generation; id = attempt */
  DT_RNG_SPLIT = 2,   /* data split; id = 0 */
  DT_RNG_INIT = 3,    /* initial weights; id = layer */
  DT_RNG_BATCH = 4,   /* minibatch order; id = node */
  DT_RNG_GOSSIP = 5,  /* gossip pairings; id = round */
  DT_RNG_DROPOUT = 6, /* dropout masks; id = node */
  DT_RNG_DATA = 7,    /* synthetic data; id = sample block */
  DT_RNG_STALENESS = 8, /* Downpour push delays; id = node·2^32 + round */
  DT_RNG_COMPRESS = 9, /* compression choices (random_k, qsgd); id = node·2^32 + round */
  DT_RNG_SCHEDULE = 10, /* time-varying graphs; id = round (matching) or epoch (resample) */
  DT_RNG_EVAL = 11,     /* the evaluation's test subset (evaluation.test_samples); id = 0 */
  DT_RNG_AUGMENT = 12,  /* training-image augmentation (crop offsets, flips); id = node */
  DT_RNG_EVAL_NODES = 13, /* the nodes evaluation.sample evaluates; id = 0 */
  DT_RNG_POWERGOSSIP = 14, /* PowerGossip's starting factors of an edge; id = lower id · 2^32 + higher id */
  DT_RNG_NETWORK = 15,  /* the simulated network (dt/network.h lists the ids) */
  DT_RNG_FAULTS = 16,   /* the network's faults (dt/faults.h lists the ids) */
  DT_RNG_ASYNC = 17,    /* asynchronous algorithms' random neighbours; id = node·2^32 + draw */
  DT_RNG_TEST = 99,   /* tests only */
} dt_rng_purpose;

typedef struct dt_rng {
  uint32_t key[2];
  uint32_t ctr[4]; /* ctr[0..1]: block index; ctr[2..3]: stream id */
  uint32_t buf[4]; /* output of the current block */
  int used;        /* words of buf already consumed (4 = empty) */
} dt_rng;

/* Creates the stream (seed, purpose, id), positioned at its start. */
void dt_rng_init(dt_rng *r, uint64_t seed, uint32_t purpose, uint64_t id);

/* The raw Philox4x32-10 bijection, exposed for known-answer tests. */
void dt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

uint32_t dt_rng_u32(dt_rng *r);
/* Moves the stream on by n 32-bit words, as n calls of dt_rng_u32 would (a device backend draws
 * the words of one call in parallel, at their positions, and then skips the host stream). */
void dt_rng_skip(dt_rng *r, uint64_t n);
uint64_t dt_rng_u64(dt_rng *r);
/* Uniform integer in [0, n), unbiased (Lemire's method); n must be > 0. */
uint32_t dt_rng_below(dt_rng *r, uint32_t n);
/* Uniform in [0, 1) with 24 (float) or 53 (double) random bits. */
float dt_rng_float(dt_rng *r);
double dt_rng_double(dt_rng *r);
/* Standard normal (Box–Muller; one value per call, keeping the stream stateless). */
double dt_rng_normal(dt_rng *r);
/* Gamma(shape, 1) for shape > 0 (Marsaglia–Tsang), for Dirichlet splits. */
double dt_rng_gamma(dt_rng *r, double shape);
/* Fisher–Yates shuffle of n 32-bit values. */
void dt_rng_shuffle_u32(dt_rng *r, uint32_t *v, size_t n);

#endif
