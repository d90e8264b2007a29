/* Compression operators (see dt/codec.h). Plain host code, shared by every backend: the CPU
 * backend calls it on its memory, a device backend on host copies. */
#include "dt/codec.h"

#include <math.h>
#include <string.h>

#include "../core/core_impl.h"
#include "dt/rng.h"

const char *const dt_codec_names[] = {"top_k", "random_k", "sign", "qsgd", NULL};

dt_status dt_codec_init(dt_codec *c, int op, size_t n, double ratio, int levels) {
  memset(c, 0, sizeof *c);
  DT_CHECK(op >= 0 && op < DT_CODEC_COUNT, DT_ERR_CONFIG, "unknown compression operator %d", op);
  DT_CHECK(n >= 1 && n < ((size_t)1 << 32), DT_ERR_CONFIG, "compression of %zu floats is not supported", n);
  c->op = op;
  c->n = n;
  switch (op) {
  case DT_CODEC_TOP_K:
  case DT_CODEC_RANDOM_K:
    DT_CHECK(ratio > 0 && ratio <= 1, DT_ERR_CONFIG, "compression.ratio must be in (0, 1], found %g", ratio);
    c->k = (size_t)ceil(ratio * (double)n);
    if (c->k < 1) c->k = 1;
    if (c->k > n) c->k = n;
    c->bytes = (op == DT_CODEC_TOP_K ? 8 : 4) * c->k;
    break;
  case DT_CODEC_SIGN:
    c->bytes = 4 + (n + 7) / 8;
    break;
  case DT_CODEC_QSGD: {
    DT_CHECK(levels >= 1 && levels <= (1 << 20), DT_ERR_CONFIG, "compression.levels must be in [1, 1048576], found %d", levels);
    c->levels = levels;
    int lb = 0;
    while ((1l << lb) < (long)levels + 1) lb++;
    c->bits = lb + 1;
    const double s = levels;
    c->tau = 1.0 + fmin((double)n / (s * s), sqrt((double)n) / s);
    c->bytes = 4 + (n * (size_t)c->bits + 7) / 8;
    break;
  }
  }
  return DT_OK;
}

/* The bits of |x|, which order like |x| (NaN above infinity). */
static uint32_t abs_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return b & 0x7fffffffu;
}

/* top_k's selection: the k coordinates of largest |x|, ties to the lower index, in increasing
 * index. The k-th largest |x| (T) is found by radix selection on abs_bits, three digits of 11, 11
 * and 9 bits from the top, each a pass over x with a histogram of the digit among the values
 * whose higher digits match; then one pass takes every coordinate above T and the first `need`
 * equal to it. O(n), no allocation: a quickselect over an n-key copy cost the copy's allocation
 * (page faults once it passes malloc's mmap threshold) and most of a BEER round (issue 61). */
static void topk_select(const float *x, size_t n, size_t k, uint32_t *idx, float *val) {
  static const int shift[3] = {20, 9, 0}, width[3] = {11, 11, 9};
  uint32_t prefix = 0, mask = 0, hist[1 << 11];
  size_t need = k; /* how many of those matching the prefix still have to be taken */
  for (int d = 0; d < 3; d++) {
    const uint32_t digits = 1u << width[d];
    memset(hist, 0, sizeof(uint32_t) * digits);
    for (size_t i = 0; i < n; i++) {
      const uint32_t b = abs_bits(x[i]);
      if ((b & mask) == prefix) hist[(b >> shift[d]) & (digits - 1)]++;
    }
    uint32_t top = digits - 1; /* from the largest digit down, the one holding the need-th value */
    while (hist[top] < need) need -= hist[top--];
    prefix |= top << shift[d];
    mask |= (digits - 1) << shift[d];
  }
  size_t j = 0;
  for (size_t i = 0; i < n && j < k; i++) {
    const uint32_t b = abs_bits(x[i]);
    if (b > prefix || (b == prefix && need > 0 && need--)) idx[j] = (uint32_t)i, val[j++] = x[i];
  }
}

/* Selection sampling (Knuth's Algorithm S): calls take(ctx, i, t) for the t-th of k coordinates
 * drawn uniformly without replacement from n, in increasing i. */
#define SELECT_K(rng, n, k, BODY)                                       \
  do {                                                                  \
    size_t sel_ = 0;                                                    \
    for (size_t i = 0; i < (n) && sel_ < (k); i++)                      \
      if ((double)((n) - i) * dt_rng_double(rng) < (double)((k) - sel_)) { \
        const size_t t = sel_++;                                        \
        BODY;                                                           \
      }                                                                 \
  } while (0)

dt_status dt_codec_encode(const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg) {
  const size_t n = c->n;
  unsigned char *m = msg;
  dt_rng r;
  dt_rng_init(&r, seed, DT_RNG_COMPRESS, id);
  switch (c->op) {
  case DT_CODEC_TOP_K:
    topk_select(x, n, c->k, (uint32_t *)m, (float *)(m + 4 * c->k));
    break;
  case DT_CODEC_RANDOM_K: {
    float *val = (float *)m;
    SELECT_K(&r, n, c->k, val[t] = x[i]);
    break;
  }
  case DT_CODEC_SIGN: {
    double l1 = 0;
    for (size_t i = 0; i < n; i++) l1 += fabs((double)x[i]);
    const float scale = (float)(l1 / (double)n);
    memcpy(m, &scale, 4);
    unsigned char *bits = m + 4;
    memset(bits, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; i++)
      if (x[i] < 0) bits[i / 8] |= (unsigned char)(1u << (i % 8));
    break;
  }
  case DT_CODEC_QSGD: {
    double sq = 0;
    for (size_t i = 0; i < n; i++) sq += (double)x[i] * x[i];
    const double norm = sqrt(sq);
    const float fnorm = (float)norm;
    memcpy(m, &fnorm, 4);
    unsigned char *out = m + 4;
    const size_t nbytes = (n * (size_t)c->bits + 7) / 8;
    const int lb = c->bits - 1;
    uint64_t acc = 0; /* bits not yet written, least significant first */
    int have = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t level = 0;
      const double u = dt_rng_double(&r); /* drawn for every coordinate: the stream stays aligned */
      if (norm > 0) {
        const double v = fabs((double)x[i]) / norm * c->levels;
        const double fl = floor(v);
        level = (uint64_t)fl + (u < v - fl);
        if (level > (uint64_t)c->levels) level = (uint64_t)c->levels;
      }
      acc |= (level | ((uint64_t)(x[i] < 0 && level > 0) << lb)) << have;
      have += c->bits;
      while (have >= 8) {
        out[o++] = (unsigned char)acc;
        acc >>= 8;
        have -= 8;
      }
    }
    if (have > 0) out[o++] = (unsigned char)acc;
    DT_ASSERT(o == nbytes);
    break;
  }
  default:
    DT_ASSERT(0);
  }
  return DT_OK;
}

void dt_codec_decode_axpy(const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a, float *y) {
  const size_t n = c->n;
  const unsigned char *m = msg;
  dt_rng r;
  dt_rng_init(&r, seed, DT_RNG_COMPRESS, id);
  switch (c->op) {
  case DT_CODEC_TOP_K: {
    const uint32_t *idx = (const uint32_t *)m;
    const float *val = (const float *)(m + 4 * c->k);
    for (size_t j = 0; j < c->k; j++)
      if (idx[j] < n) y[idx[j]] += a * val[j];
    break;
  }
  case DT_CODEC_RANDOM_K: {
    const float *val = (const float *)m;
    SELECT_K(&r, n, c->k, y[i] += a * val[t]);
    break;
  }
  case DT_CODEC_SIGN: {
    float scale;
    memcpy(&scale, m, 4);
    const unsigned char *bits = m + 4;
    const float as = a * scale;
    for (size_t i = 0; i < n; i++) y[i] += (bits[i / 8] >> (i % 8) & 1) ? -as : as;
    break;
  }
  case DT_CODEC_QSGD: {
    float fnorm;
    memcpy(&fnorm, m, 4);
    const unsigned char *in = m + 4;
    const float unit = (float)((double)fnorm / (c->levels * c->tau));
    const int lb = c->bits - 1;
    const uint64_t field = (1ull << c->bits) - 1, lmask = (1ull << lb) - 1;
    uint64_t acc = 0;
    int have = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
      while (have < c->bits) {
        acc |= (uint64_t)in[o++] << have;
        have += 8;
      }
      const uint64_t word = acc & field;
      acc >>= c->bits;
      have -= c->bits;
      const float q = unit * (float)(word & lmask);
      y[i] += a * ((word >> lb & 1) ? -q : q);
    }
    break;
  }
  default:
    break;
  }
}
