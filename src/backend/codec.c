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

/* Key of coordinate i for top_k: larger |x| first, then the lower index. The bits of a
 * non-negative float order like the float. */
static uint64_t topk_key(const float *x, size_t i) {
  uint32_t b;
  memcpy(&b, &x[i], 4);
  return ((uint64_t)(b & 0x7fffffffu) << 32) | (uint64_t)(0xffffffffu - (uint32_t)i);
}

/* The k-th largest of v[0..n) (distinct keys), by quickselect with a median-of-three pivot. */
static uint64_t kth_largest(uint64_t *v, size_t n, size_t k) {
  size_t lo = 0, hi = n, want = k - 1; /* the element at sorted-descending position want */
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    uint64_t a = v[lo], b = v[mid], c = v[hi - 1];
    const uint64_t pivot = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
    /* three-way partition, descending: [> pivot][== pivot][< pivot] */
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (v[i] > pivot) {
        const uint64_t t = v[lt];
        v[lt++] = v[i];
        v[i++] = t;
      } else if (v[i] < pivot) {
        const uint64_t t = v[--gt];
        v[gt] = v[i];
        v[i] = t;
      } else {
        i++;
      }
    }
    if (want < lt) hi = lt;
    else if (want >= gt) lo = gt;
    else return pivot;
  }
  return v[lo];
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
  case DT_CODEC_TOP_K: {
    uint64_t *keys;
    DT_ALLOC(keys, n, "top_k selection");
    for (size_t i = 0; i < n; i++) keys[i] = topk_key(x, i);
    const uint64_t t = kth_largest(keys, n, c->k);
    dt_free(keys);
    uint32_t *idx = (uint32_t *)m;
    float *val = (float *)(m + 4 * c->k);
    size_t j = 0;
    for (size_t i = 0; i < n && j < c->k; i++)
      if (topk_key(x, i) >= t) idx[j] = (uint32_t)i, val[j++] = x[i];
    DT_ASSERT(j == c->k);
    break;
  }
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
