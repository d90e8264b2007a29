/* Seeded streams: Philox known answers, reproducibility, independence of streams, and the
 * distribution helpers' basic statistics. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "dt/rng.h"

static void test_known_answers(void) {
  /* Known-answer vectors of Random123's kat_vectors for philox4x32_10. */
  static const struct {
    uint32_t ctr[4], key[2], out[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (size_t t = 0; t < sizeof kat / sizeof kat[0]; t++) {
    uint32_t out[4];
    dt_philox4x32_10(kat[t].ctr, kat[t].key, out);
    for (int i = 0; i < 4; i++)
      CHECK(out[i] == kat[t].out[i], "kat %zu word %d: got %08x, expected %08x", t, i, out[i],
            kat[t].out[i]);
  }
}

static void test_reproducible(void) {
  dt_rng a, b;
  dt_rng_init(&a, 42, DT_RNG_BATCH, 3);
  dt_rng_init(&b, 42, DT_RNG_BATCH, 3);
  int same = 1;
  for (int i = 0; i < 10000; i++) same &= dt_rng_u32(&a) == dt_rng_u32(&b);
  CHECK(same, "two streams with the same (seed, purpose, id) differ");

  /* Creating other streams in between must not disturb a stream (no hidden global state). */
  dt_rng_init(&a, 7, DT_RNG_INIT, 0);
  uint32_t first[8];
  for (int i = 0; i < 8; i++) first[i] = dt_rng_u32(&a);
  dt_rng other;
  dt_rng_init(&other, 7, DT_RNG_INIT, 1);
  for (int i = 0; i < 100; i++) (void)dt_rng_u32(&other);
  dt_rng_init(&b, 7, DT_RNG_INIT, 0);
  for (int i = 0; i < 8; i++) CHECK(dt_rng_u32(&b) == first[i], "stream disturbed at %d", i);
}

/* Fraction of equal words between two streams; independent streams agree ~2^-32 of the time,
 * and their uniform draws are uncorrelated. */
static void check_independent(uint64_t s1, uint32_t p1, uint64_t i1, uint64_t s2, uint32_t p2,
                              uint64_t i2) {
  dt_rng a, b;
  dt_rng_init(&a, s1, p1, i1);
  dt_rng_init(&b, s2, p2, i2);
  const int n = 20000;
  int equal = 0;
  double sab = 0, sa = 0, sb = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) {
    uint32_t x = dt_rng_u32(&a), y = dt_rng_u32(&b);
    equal += x == y;
    double u = x * 0x1p-32, v = y * 0x1p-32;
    sa += u;
    sb += v;
    sab += u * v;
    saa += u * u;
    sbb += v * v;
  }
  double cov = sab / n - (sa / n) * (sb / n);
  double corr = cov / sqrt((saa / n - (sa / n) * (sa / n)) * (sbb / n - (sb / n) * (sb / n)));
  CHECK(equal <= 1, "streams (%llu,%u,%llu) and (%llu,%u,%llu) share %d words",
        (unsigned long long)s1, p1, (unsigned long long)i1, (unsigned long long)s2, p2,
        (unsigned long long)i2, equal);
  /* 5 sigma for n = 20000 is 0.035 */
  CHECK(fabs(corr) < 0.035, "streams correlated: %g", corr);
}

static void test_independence(void) {
  check_independent(0, DT_RNG_BATCH, 0, 0, DT_RNG_BATCH, 1);           /* neighbouring ids */
  check_independent(0, DT_RNG_BATCH, 0, 1, DT_RNG_BATCH, 0);           /* neighbouring seeds */
  check_independent(0, DT_RNG_BATCH, 0, 0, DT_RNG_INIT, 0);            /* purposes */
  check_independent(0, DT_RNG_GOSSIP, 1ull << 32, 0, DT_RNG_GOSSIP, 0); /* high id bits */
}

static void test_distributions(void) {
  dt_rng r;
  dt_rng_init(&r, 1, DT_RNG_TEST, 0);
  const int n = 200000;
  double s = 0, s2 = 0;
  float fmin = 1, fmax = 0;
  for (int i = 0; i < n; i++) {
    float f = dt_rng_float(&r);
    fmin = f < fmin ? f : fmin;
    fmax = f > fmax ? f : fmax;
    double z = dt_rng_normal(&r);
    s += z;
    s2 += z * z;
  }
  CHECK(fmin >= 0.0f && fmax < 1.0f, "float out of [0,1): %g %g", fmin, fmax);
  CHECK(fabs(s / n) < 0.015, "normal mean %g", s / n);
  CHECK(fabs(s2 / n - 1.0) < 0.02, "normal variance %g", s2 / n);

  int hist[7] = {0};
  for (int i = 0; i < 70000; i++) hist[dt_rng_below(&r, 7)]++;
  for (int k = 0; k < 7; k++) CHECK(abs(hist[k] - 10000) < 500, "below(7) bin %d: %d", k, hist[k]);

  const double shapes[] = {0.3, 1.0, 4.5};
  for (int k = 0; k < 3; k++) {
    double g = 0;
    for (int i = 0; i < 50000; i++) g += dt_rng_gamma(&r, shapes[k]);
    CHECK_CLOSE(g / 50000, shapes[k], 0.03, 0.0);
  }

  uint32_t v[100];
  for (uint32_t i = 0; i < 100; i++) v[i] = i;
  dt_rng_shuffle_u32(&r, v, 100);
  int seen[100] = {0}, moved = 0;
  for (int i = 0; i < 100; i++) {
    seen[v[i]]++;
    moved += v[i] != (uint32_t)i;
  }
  for (int i = 0; i < 100; i++) CHECK(seen[i] == 1, "shuffle lost or duplicated %d", i);
  CHECK(moved > 80, "shuffle moved only %d of 100", moved);
}

/* dt_rng_skip(n) lands where n calls of dt_rng_u32 land, from every starting offset in a block. */
static void test_skip(void) {
  for (int pre = 0; pre < 6; pre++)
    for (uint64_t n = 0; n < 40; n++) {
      dt_rng a, b;
      dt_rng_init(&a, 11, DT_RNG_TEST, 3);
      for (int i = 0; i < pre; i++) (void)dt_rng_u32(&a);
      b = a;
      for (uint64_t i = 0; i < n; i++) (void)dt_rng_u32(&a);
      dt_rng_skip(&b, n);
      int same = 1;
      for (int i = 0; i < 9; i++) same &= dt_rng_u32(&a) == dt_rng_u32(&b);
      CHECK(same, "skip %llu after %d words differs from %llu draws", (unsigned long long)n, pre, (unsigned long long)n);
    }
}

int main(void) {
  test_known_answers();
  test_skip();
  test_reproducible();
  test_independence();
  test_distributions();
  return check_report("test_rng");
}
