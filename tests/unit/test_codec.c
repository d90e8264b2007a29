/* The compression operators of dt/codec.h: message sizes, what each operator keeps, that sender
 * and receiver agree through the seeded streams, qsgd's unbiasedness (up to its 1/τ scale), the
 * contraction ‖Q(x) − x‖² ≤ (1 − δ)‖x‖² Choco-SGD needs, and the CPU backend's ops. */
#include <stdlib.h>

#include "check.h"
#include "dt/backend.h"
#include "dt/codec.h"
#include "dt/rng.h"

enum { N = 1000 };

static void random_vector(float *x, size_t n, uint64_t id) {
  dt_rng r;
  dt_rng_init(&r, 7, DT_RNG_TEST, id);
  for (size_t i = 0; i < n; i++) x[i] = (float)dt_rng_normal(&r);
}

/* Q(x) decoded into q (zeroed first). */
static void roundtrip(const dt_codec *c, const float *x, uint64_t id, unsigned char *msg, float *q) {
  memset(q, 0, sizeof(float) * c->n);
  CHECK_OK(dt_codec_encode(c, x, 11, id, msg));
  dt_codec_decode_axpy(c, msg, 11, id, 1.0f, q);
}

static double sqnorm_diff(const float *a, const float *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += ((double)a[i] - (b ? b[i] : 0)) * ((double)a[i] - (b ? b[i] : 0));
  return s;
}

static void test_sizes(void) {
  dt_codec c;
  CHECK_OK(dt_codec_init(&c, DT_CODEC_TOP_K, N, 0.01, 0));
  CHECK(c.k == 10 && c.bytes == 80, "top_k 1%% of %d: k %zu, %zu bytes", N, c.k, c.bytes);
  CHECK_OK(dt_codec_init(&c, DT_CODEC_RANDOM_K, N, 0.01, 0));
  CHECK(c.k == 10 && c.bytes == 40, "random_k: k %zu, %zu bytes", c.k, c.bytes);
  CHECK_OK(dt_codec_init(&c, DT_CODEC_TOP_K, 3, 1e-9, 0));
  CHECK(c.k == 1, "at least one coordinate: k %zu", c.k);
  CHECK_OK(dt_codec_init(&c, DT_CODEC_SIGN, 1001, 0, 0));
  CHECK(c.bytes == 4 + 126, "sign of 1001: %zu bytes", c.bytes);
  CHECK_OK(dt_codec_init(&c, DT_CODEC_QSGD, N, 0, 16));
  CHECK(c.bits == 6 && c.bytes == 4 + 750, "qsgd 16 levels: %d bits, %zu bytes", c.bits, c.bytes);
  CHECK_CLOSE(c.tau, 1 + sqrt((double)N) / 16, 1e-15, 0);
  CHECK_OK(dt_codec_init(&c, DT_CODEC_QSGD, N, 0, 1));
  CHECK(c.bits == 2, "qsgd 1 level: %d bits", c.bits);
  CHECK_OK(dt_codec_init(&c, DT_CODEC_QSGD, N, 0, 15));
  CHECK(c.bits == 5, "qsgd 15 levels: %d bits", c.bits);
  CHECK(dt_codec_init(&c, DT_CODEC_TOP_K, N, 0, 0) == DT_ERR_CONFIG, "ratio 0 refused");
  CHECK(dt_codec_init(&c, DT_CODEC_QSGD, N, 0, 0) == DT_ERR_CONFIG, "levels 0 refused");
  dt_error_clear();
}

static void test_top_k(void) {
  float x[N], q[N];
  unsigned char msg[8 * N];
  random_vector(x, N, 1);
  x[17] = 100, x[900] = -100; /* a tie in |x|: both are kept, the lower index first */
  dt_codec c;
  CHECK_OK(dt_codec_init(&c, DT_CODEC_TOP_K, N, 0.05, 0));
  roundtrip(&c, x, 0, msg, q);
  /* kept = exactly the k largest |x|: every kept |x| >= every dropped |x| */
  float min_kept = INFINITY, max_dropped = 0;
  size_t kept = 0;
  for (size_t i = 0; i < N; i++) {
    if (q[i] != 0) {
      kept++;
      CHECK(q[i] == x[i], "top_k value %zu: %g, sent %g", i, x[i], q[i]);
      min_kept = fminf(min_kept, fabsf(x[i]));
    } else {
      max_dropped = fmaxf(max_dropped, fabsf(x[i]));
    }
  }
  CHECK(kept == c.k, "top_k kept %zu of %zu", kept, c.k);
  CHECK(min_kept >= max_dropped, "top_k kept %g but dropped %g", min_kept, max_dropped);
  CHECK(q[17] == 100 && q[900] == -100, "the largest are kept");
  const uint32_t *idx = (const uint32_t *)msg;
  for (size_t j = 1; j < c.k; j++) CHECK(idx[j - 1] < idx[j], "indices ascend at %zu", j);
  /* contraction with δ = k/d, deterministically */
  CHECK(sqnorm_diff(q, x, N) <= (1 - (double)c.k / N) * sqnorm_diff(x, NULL, N), "top_k is a δ-contraction");
  /* ties: of equal |x| the lower index wins */
  float t[8] = {1, -2, 2, 2, 0, -2, 1, 0};
  float tq[8];
  unsigned char tm[64];
  CHECK_OK(dt_codec_init(&c, DT_CODEC_TOP_K, 8, 0.25, 0));
  roundtrip(&c, t, 0, tm, tq);
  CHECK(tq[1] == -2 && tq[2] == 2 && tq[3] == 0 && tq[5] == 0, "ties go to the lower index: %g %g %g %g", tq[1], tq[2], tq[3],
        tq[5]);
}

static int key_desc(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

static int u32_asc(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* top_k's radix selection against the definition, by sorting: the k largest of the key
 * (|x|'s bits, then the lower index), sent in increasing index, with their values. Vectors with
 * many ties (a few distinct magnitudes, ±0, infinities), and k from 1 to n. */
static void test_top_k_exact(void) {
  enum { M = 3000 };
  static float x[M];
  static uint64_t keys[M];
  static uint32_t want[M];
  static unsigned char msg[8 * M];
  dt_rng r;
  dt_rng_init(&r, 3, DT_RNG_TEST, 99);
  for (int trial = 0; trial < 200; trial++) {
    const size_t n = 1 + dt_rng_below(&r, M), distinct = trial % 3 == 0 ? 2 + dt_rng_below(&r, 5) : 0;
    for (size_t i = 0; i < n; i++) {
      x[i] = distinct > 0 ? (float)dt_rng_below(&r, distinct) * (dt_rng_below(&r, 2) ? -0.5f : 0.5f) : (float)dt_rng_normal(&r);
      if (dt_rng_below(&r, 50) == 0) x[i] = dt_rng_below(&r, 2) ? -0.0f : INFINITY;
    }
    const size_t k = trial < 10 ? (trial % 2 ? n : 1) : 1 + dt_rng_below(&r, n);
    dt_codec c;
    CHECK_OK(dt_codec_init(&c, DT_CODEC_TOP_K, n, (double)k / (double)n, 0));
    CHECK(c.k == k || c.k == k + 1, "trial %d: k %zu for %zu", trial, c.k, k); /* ceil of a rounded ratio */
    for (size_t i = 0; i < n; i++) {
      uint32_t b;
      memcpy(&b, &x[i], 4);
      keys[i] = (uint64_t)(b & 0x7fffffffu) << 32 | (0xffffffffu - (uint32_t)i);
    }
    qsort(keys, n, sizeof *keys, key_desc);
    for (size_t j = 0; j < c.k; j++) want[j] = 0xffffffffu - (uint32_t)keys[j];
    qsort(want, c.k, sizeof *want, u32_asc);
    CHECK_OK(dt_codec_encode(&c, x, 11, 0, msg));
    const uint32_t *idx = (const uint32_t *)msg;
    const float *val = (const float *)(msg + 4 * c.k);
    for (size_t j = 0; j < c.k; j++) {
      CHECK(idx[j] == want[j], "trial %d (n %zu, k %zu): coordinate %zu is %u, the definition's %u", trial, n, c.k, j, idx[j], want[j]);
      CHECK(memcmp(&val[j], &x[idx[j]], 4) == 0, "trial %d: value %zu", trial, j);
      if (idx[j] != want[j]) break;
    }
  }
}

static void test_random_k(void) {
  float x[N], q[N], q2[N];
  unsigned char msg[4 * N];
  random_vector(x, N, 2);
  dt_codec c;
  CHECK_OK(dt_codec_init(&c, DT_CODEC_RANDOM_K, N, 0.1, 0));
  roundtrip(&c, x, 5, msg, q);
  size_t kept = 0;
  for (size_t i = 0; i < N; i++) {
    if (q[i] != 0) kept++;
    CHECK(q[i] == 0 || q[i] == x[i], "random_k value %zu", i);
  }
  CHECK(kept == c.k, "random_k kept %zu of %zu", kept, c.k);
  roundtrip(&c, x, 6, msg, q2);
  CHECK(memcmp(q, q2, sizeof q) != 0, "another id draws other coordinates");
  roundtrip(&c, x, 5, msg, q2);
  CHECK(memcmp(q, q2, sizeof q) == 0, "the same id draws the same coordinates");
  /* every coordinate equally likely: over 2000 ids each is kept ~200 times */
  static int hits[N];
  for (uint64_t id = 0; id < 2000; id++) {
    roundtrip(&c, x, id, msg, q);
    for (size_t i = 0; i < N; i++) hits[i] += q[i] != 0;
  }
  int lo = 1 << 30, hi = 0;
  for (size_t i = 0; i < N; i++) lo = hits[i] < lo ? hits[i] : lo, hi = hits[i] > hi ? hits[i] : hi;
  CHECK(lo > 140 && hi < 260, "random_k coverage over 2000 draws: %d..%d, expected about 200", lo, hi);
}

static void test_sign(void) {
  float x[N], q[N];
  unsigned char msg[4 + N / 8 + 1];
  random_vector(x, N, 3);
  x[3] = 0;
  dt_codec c;
  CHECK_OK(dt_codec_init(&c, DT_CODEC_SIGN, N, 0, 0));
  roundtrip(&c, x, 0, msg, q);
  double l1 = 0;
  for (size_t i = 0; i < N; i++) l1 += fabs(x[i]);
  const float scale = (float)(l1 / N);
  for (size_t i = 0; i < N; i++) CHECK(q[i] == (x[i] < 0 ? -scale : scale), "sign %zu: %g for %g", i, q[i], x[i]);
  CHECK(sqnorm_diff(q, x, N) < sqnorm_diff(x, NULL, N), "sign contracts");
}

static void test_qsgd(void) {
  static float x[N], q[N], mean[N];
  static unsigned char msg[8 * N];
  random_vector(x, N, 4);
  dt_codec c;
  CHECK_OK(dt_codec_init(&c, DT_CODEC_QSGD, N, 0, 4));
  double norm = sqrt(sqnorm_diff(x, NULL, N)), err = 0;
  const int R = 400;
  for (int r = 0; r < R; r++) {
    roundtrip(&c, x, (uint64_t)r, msg, q);
    for (size_t i = 0; i < N; i++) {
      mean[i] += q[i] / R;
      /* a level times norm/(sτ), with x's sign */
      const double lev = fabs(q[i]) * c.levels * c.tau / norm;
      CHECK(fabs(lev - round(lev)) < 1e-3 && round(lev) <= c.levels, "qsgd %zu: level %g", i, lev);
      CHECK(q[i] == 0 || (q[i] < 0) == (x[i] < 0), "qsgd %zu keeps the sign", i);
    }
    err += sqnorm_diff(q, x, N) / R;
  }
  /* E[Q(x)]·τ = x: one draw's τ·Q(x_i) has standard deviation at most norm/(2s), so the mean of
   * R draws stays within 5 standard errors everywhere, and the magnitude bias averaged over the
   * coordinates (what rounding down instead of stochastic rounding would give: about
   * -norm/(2s) = -4) is near 0 */
  const double se = norm / (2.0 * c.levels) / sqrt((double)R);
  double dev = 0, bias = 0;
  for (size_t i = 0; i < N; i++) {
    dev = fmax(dev, fabs(mean[i] * c.tau - x[i]) / se);
    bias += (mean[i] * c.tau - x[i]) * (x[i] < 0 ? -1 : 1) / N;
  }
  CHECK(dev < 5, "qsgd mean·τ deviates from x by %g standard errors", dev);
  CHECK(fabs(bias) < 5 * se / sqrt((double)N) + 1e-3, "qsgd magnitude bias %g", bias);
  CHECK(err < sqnorm_diff(x, NULL, N), "qsgd contracts in expectation: %g vs %g", err, sqnorm_diff(x, NULL, N));
}

/* The CPU backend's ops are the codec; decode_axpy scales and adds. */
static void test_backend(void) {
  dt_backend *be;
  CHECK_OK(dt_backend_cpu_create(1, &be));
  float x[N], y[N], ref[N];
  unsigned char a[8 * N], b[8 * N];
  random_vector(x, N, 5);
  for (int op = 0; op < DT_CODEC_COUNT; op++) {
    dt_codec c;
    CHECK_OK(dt_codec_init(&c, op, N, 0.1, 8));
    CHECK_OK(dt_be_encode(be, &c, x, 3, 9, a));
    CHECK_OK(dt_codec_encode(&c, x, 3, 9, b));
    CHECK(memcmp(a, b, c.bytes) == 0, "%s: backend encode = codec", dt_codec_names[op]);
    for (size_t i = 0; i < N; i++) y[i] = ref[i] = 1.0f;
    CHECK_OK(dt_be_decode_axpy(be, &c, a, 3, 9, -0.5f, y));
    dt_codec_decode_axpy(&c, b, 3, 9, -0.5f, ref);
    CHECK(memcmp(y, ref, sizeof y) == 0, "%s: backend decode_axpy = codec", dt_codec_names[op]);
  }
  dt_backend_free(be);
}

int main(void) {
  test_sizes();
  test_top_k();
  test_top_k_exact();
  test_random_k();
  test_sign();
  test_qsgd();
  test_backend();
  printf("test_codec: %d checks, %d failed\n", check_count, check_failures);
  return check_failures != 0;
}
