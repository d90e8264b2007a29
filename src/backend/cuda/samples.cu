/* The CUDA backend's resident sample sets and batch gathering: the training set is uploaded once
 * (bytes as they are stored, with the normalisation table dt_norm_lut computes on the host), and
 * each call uploads only the nodes' sample indices and augmentation, then one kernel writes every
 * node's batch. A float is only ever looked up in the table or copied, so the rows are the CPU
 * backend's bits (the gpu suite checks that with a tolerance of zero). */
#include <string.h>

#include "cuda_impl.h"

extern "C" {
#include "dt/data.h"
#include "dt/formulas.h"
}

typedef struct cu_samples {
  size_t count, dim;
  int C, h, w;
  uint8_t *u8;     /* count × dim bytes, or NULL */
  float *f32;      /* count × dim floats, or NULL */
  uint8_t *labels; /* count */
  float *lut;      /* C × 256 */
  cu_table call;   /* each call's counts, indices, augmentation and fill */
  unsigned char *host; /* the call's table, built here */
  size_t host_cap;
} cu_samples;

void cu_samples_free(dt_backend *be, void *res) {
  cu_samples *r = (cu_samples *)res;
  if (r == NULL) return;
  cu_table_free(be, &r->call);
  cu_free(be, r->u8);
  cu_free(be, r->f32);
  cu_free(be, r->labels);
  cu_free(be, r->lut);
  dt_free(r->host);
  dt_free(r);
}

static dt_status samples_fill(dt_backend *be, const dt_samples *s, cu_samples *r) {
  r->count = s->count;
  r->dim = s->dim;
  r->C = s->in_c > 0 ? s->in_c : 1;
  r->h = s->in_h;
  r->w = s->in_w;
  const size_t n = s->count * s->dim;
  if (s->u8 != NULL) {
    DT_TRY(cu_alloc(be, n, (void **)&r->u8));
    DT_TRY(cu_upload(be, r->u8, s->u8, n));
  } else {
    DT_TRY(cu_alloc(be, sizeof(float) * n, (void **)&r->f32));
    DT_TRY(cu_upload(be, r->f32, s->f32, sizeof(float) * n));
  }
  DT_TRY(cu_alloc(be, s->count, (void **)&r->labels));
  DT_TRY(cu_upload(be, r->labels, s->labels, s->count));
  if (s->u8 == NULL) return DT_OK; /* float rows are copied as they are */
  float lut[DT_MAX_CHANNELS * 256];
  DT_CHECK(r->C <= DT_MAX_CHANNELS, DT_ERR_INTERNAL, "%d channels, at most %d", r->C, DT_MAX_CHANNELS);
  dt_norm_lut(r->C, s->mean, s->std, lut);
  DT_TRY(cu_alloc(be, sizeof(float) * 256 * (size_t)r->C, (void **)&r->lut));
  DT_TRY(cu_upload(be, r->lut, lut, sizeof(float) * 256 * (size_t)r->C));
  return DT_OK;
}

dt_status cu_samples_create(dt_backend *be, const dt_samples *s, void **res) {
  dt_status st = DT_OK;
  cu_samples *r = NULL;
  *res = NULL;
  CU_HOST_NEW(r, "sample set");
  DT_TRY_GOTO(samples_fill(be, s, r));
  *res = r;
  r = NULL;
cleanup:
  cu_samples_free(be, r);
  return st;
}

/* The call's table on the device: per node its count, then S index slots per node, then (with
 * augmentation) S (dy, dx, flip) triples per node, then the fill per channel. */
struct gather_call {
  const int *n;
  const uint32_t *idx;
  const int16_t *aug; /* NULL: none */
  const float *fill;
};

/* Element e of sample s of node l: per = max(S, pad)·dim elements per node (S index slots per
 * node in the table; rows n[l] .. pad − 1 of a node with n[l] > 0 get zeros and label 0). */
__global__ void k_gather_samples(int count, unsigned per, int S, int pad, unsigned dim, int C, int h, int w, const uint8_t *u8,
                                 const float *f32, const uint8_t *labels, const float *lut, gather_call g, float *x,
                                 size_t x_stride, int32_t *y, size_t y_stride) {
  const unsigned plane = dim / (unsigned)C;
  NODE_LOOP(l, i, count, per) {
    const unsigned s = i / dim, e = i % dim;
    if ((int)s >= g.n[l]) {
      if (g.n[l] > 0 && (int)s < pad) {
        x[l * x_stride + i] = 0.0f;
        if (e == 0) y[l * y_stride + s] = 0;
      }
      continue;
    }
    const size_t sample = g.idx[l * S + s];
    const unsigned c = e / plane;
    float v;
    if (f32 != NULL) {
      v = f32[sample * dim + e];
    } else if (g.aug != NULL) { /* dt_augment_image on the normalised image */
      const int16_t *a = g.aug + 3 * (l * S + s);
      const int p = (int)(e % plane);
      int sy, sx;
      v = dt_f_augment_source(p / w, p % w, h, w, a[0], a[1], a[2], &sy, &sx)
              ? lut[c * 256 + u8[sample * dim + (size_t)c * plane + (size_t)sy * w + sx]]
              : g.fill[c];
    } else {
      v = lut[c * 256 + u8[sample * dim + e]];
    }
    x[l * x_stride + i] = v;
    if (e == 0) y[l * y_stride + s] = labels[sample];
  }
}

static size_t align8(size_t b) { return (b + 7) & ~(size_t)7; }

dt_status cu_samples_gather(dt_backend *be, const void *res, const dt_gather *g) {
  cu_samples *r = (cu_samples *)res;
  int S = 0;
  for (int l = 0; l < g->count; l++) S = g->n[l] > S ? g->n[l] : S;
  if (S == 0) return DT_OK;
  DT_CHECK(g->aug == NULL || r->u8 != NULL, DT_ERR_INTERNAL, "augmentation of float feature rows");
  DT_CHECK((size_t)(g->pad > S ? g->pad : S) * r->dim < ((size_t)1 << 31), DT_ERR_UNSUPPORTED,
           "a batch of %d samples of %zu floats is over 2^31 floats", g->pad > S ? g->pad : S, r->dim);
  const size_t slots = (size_t)g->count * (size_t)S;
  const size_t o_idx = align8(sizeof(int) * (size_t)g->count), o_aug = align8(o_idx + sizeof(uint32_t) * slots);
  const size_t o_fill = align8(o_aug + (g->aug != NULL ? sizeof(int16_t) * 3 * slots : 0));
  const size_t bytes = o_fill + sizeof(float) * (size_t)r->C;
  if (bytes > r->host_cap) {
    dt_free(r->host);
    r->host = (unsigned char *)dt_calloc_(bytes, 1);
    r->host_cap = r->host != NULL ? bytes : 0;
    if (r->host == NULL) return DT_ERROR(DT_ERR_MEMORY, "out of memory for the gather table of %d nodes", g->count);
  }
  unsigned char *h = r->host;
  memcpy(h, g->n, sizeof(int) * (size_t)g->count);
  for (int l = 0; l < g->count; l++)
    if (g->n[l] > 0) {
      memcpy(h + o_idx + sizeof(uint32_t) * (size_t)l * S, g->idx[l], sizeof(uint32_t) * (size_t)g->n[l]);
      if (g->aug != NULL) memcpy(h + o_aug + sizeof(int16_t) * 3 * (size_t)l * S, g->aug[l], sizeof(int16_t) * 3 * (size_t)g->n[l]);
    }
  if (g->aug != NULL) memcpy(h + o_fill, g->fill, sizeof(float) * (size_t)r->C);
  void *dev = NULL;
  DT_TRY(cu_table_put(be, &r->call, h, bytes, 0, &dev));
  unsigned char *d = (unsigned char *)dev;
  gather_call call;
  call.n = (const int *)d;
  call.idx = (const uint32_t *)(d + o_idx);
  call.aug = g->aug != NULL ? (const int16_t *)(d + o_aug) : NULL;
  call.fill = (const float *)(d + o_fill);
  const int rows = g->pad > S ? g->pad : S;
  NODE_KERNEL(k_gather_samples, be, g->count, (size_t)rows * r->dim, S, g->pad, (unsigned)r->dim, r->C, r->h, r->w, r->u8,
              r->f32, r->labels, r->lut, call, g->x, g->x_stride, g->y, g->y_stride);
  return DT_OK;
}
