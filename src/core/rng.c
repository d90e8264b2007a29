/* Philox4x32-10 streams (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
 * The key is a SplitMix64 hash of (seed, purpose); the stream id is the counter's high 64 bits
 * and the block index its low 64 bits, so streams are disjoint by construction. The bijection
 * itself is dt/formulas.h's, which the CUDA backend compiles too. */
#include "dt/rng.h"

#include "dt/formulas.h"

#include <math.h>

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void dt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  dt_philox4x32_10_block(ctr, key, out);
}

void dt_rng_init(dt_rng *r, uint64_t seed, uint32_t purpose, uint64_t id) {
  uint64_t k = splitmix64(splitmix64(seed) ^ ((uint64_t)purpose * 0xA24BAED4963EE407ull));
  r->key[0] = (uint32_t)k;
  r->key[1] = (uint32_t)(k >> 32);
  r->ctr[0] = 0;
  r->ctr[1] = 0;
  r->ctr[2] = (uint32_t)id;
  r->ctr[3] = (uint32_t)(id >> 32);
  r->used = 4;
}

uint32_t dt_rng_u32(dt_rng *r) {
  if (r->used == 4) {
    dt_philox4x32_10(r->ctr, r->key, r->buf);
    if (++r->ctr[0] == 0) ++r->ctr[1];
    r->used = 0;
  }
  return r->buf[r->used++];
}

void dt_rng_skip(dt_rng *r, uint64_t n) {
  const uint64_t avail = 4 - (uint64_t)r->used;
  if (n <= avail) {
    r->used += (int)n;
    return;
  }
  const uint64_t k = n - avail; /* words taken from fresh blocks, k >= 1 */
  uint64_t block = ((uint64_t)r->ctr[1] << 32 | r->ctr[0]) + (k - 1) / 4; /* the last block touched */
  r->ctr[0] = (uint32_t)block;
  r->ctr[1] = (uint32_t)(block >> 32);
  dt_philox4x32_10(r->ctr, r->key, r->buf);
  block++;
  r->ctr[0] = (uint32_t)block;
  r->ctr[1] = (uint32_t)(block >> 32);
  r->used = (int)((k - 1) % 4) + 1;
}

uint64_t dt_rng_u64(dt_rng *r) {
  uint64_t hi = dt_rng_u32(r);
  return (hi << 32) | dt_rng_u32(r);
}

uint32_t dt_rng_below(dt_rng *r, uint32_t n) {
  uint64_t m = (uint64_t)dt_rng_u32(r) * n;
  uint32_t low = (uint32_t)m;
  if (low < n) {
    uint32_t threshold = (uint32_t)(-n) % n;
    while (low < threshold) {
      m = (uint64_t)dt_rng_u32(r) * n;
      low = (uint32_t)m;
    }
  }
  return (uint32_t)(m >> 32);
}

float dt_rng_float(dt_rng *r) { return dt_f_word_float(dt_rng_u32(r)); }

double dt_rng_double(dt_rng *r) { return (double)(dt_rng_u64(r) >> 11) * 0x1.0p-53; }

double dt_rng_normal(dt_rng *r) {
  double u1 = 1.0 - dt_rng_double(r); /* (0, 1]: log is finite */
  double u2 = dt_rng_double(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double dt_rng_gamma(dt_rng *r, double shape) {
  if (shape < 1.0) {
    /* Boost to shape+1 and scale back: G(a) = G(a+1) * U^(1/a). */
    double u = 1.0 - dt_rng_double(r);
    return dt_rng_gamma(r, shape + 1.0) * pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0;
  double c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = dt_rng_normal(r);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = dt_rng_double(r);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
  }
}

void dt_rng_shuffle_u32(dt_rng *r, uint32_t *v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = dt_rng_below(r, (uint32_t)i);
    uint32_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}
