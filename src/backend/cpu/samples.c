/* The CPU backend's resident sample sets (a view of the host data: nothing to copy) and batch
 * gathering, which builds each node's rows with dt_samples_rows and augments them with
 * dt_augment_image, nodes in parallel; and its profile marks (no queued work to wait for). */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_impl.h"
#include "dt/data.h"

typedef struct cpu_samples {
  const dt_samples *s;
  int threads;
  float *tmp; /* threads × dim: one augmented image per thread */
} cpu_samples;

dt_status dt_cpu_samples_create(dt_backend *be, const dt_samples *s, void **res) {
  dt_status st = DT_OK;
  cpu_samples *r = NULL;
  *res = NULL;
  DT_ALLOC_GOTO(r, 1, "sample set");
  r->s = s;
  r->threads = be->threads > 1 ? be->threads : 1;
  DT_ALLOC_GOTO(r->tmp, (size_t)r->threads * (s->dim > 0 ? s->dim : 1), "augmentation scratch");
  *res = r;
  r = NULL;
cleanup:
  dt_cpu_samples_free(be, r);
  return st;
}

void dt_cpu_samples_free(dt_backend *be, void *res) {
  (void)be;
  cpu_samples *r = res;
  if (r == NULL) return;
  dt_free(r->tmp);
  dt_free(r);
}

static int thread_num(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* Node l's rows of a gather; scratch row `tn` for augmentation. */
static void gather_node(const cpu_samples *r, const dt_gather *g, int l, int tn) {
  const dt_samples *s = r->s;
  if (g->n[l] <= 0) return;
  float *x = g->x + (size_t)l * g->x_stride;
  dt_samples_rows(s, g->idx[l], (size_t)g->n[l], x, g->y + (size_t)l * g->y_stride);
  if (g->pad > g->n[l]) {
    memset(x + (size_t)g->n[l] * s->dim, 0, sizeof(float) * (size_t)(g->pad - g->n[l]) * s->dim);
    memset(g->y + (size_t)l * g->y_stride + g->n[l], 0, sizeof(int32_t) * (size_t)(g->pad - g->n[l]));
  }
  if (g->aug == NULL) return;
  float *tmp = r->tmp + (size_t)tn * s->dim;
  for (int b = 0; b < g->n[l]; b++) {
    const int16_t *a = g->aug[l] + 3 * (size_t)b;
    float *img = x + (size_t)b * s->dim;
    dt_augment_image(img, tmp, s->in_c, s->in_h, s->in_w, a[1], a[0], a[2], g->fill);
    memcpy(img, tmp, sizeof(float) * s->dim);
  }
}

dt_status dt_cpu_samples_gather(dt_backend *be, const void *res, const dt_gather *g) {
  (void)be;
  const cpu_samples *r = res;
  DT_CHECK(g->aug == NULL || r->s->u8 != NULL, DT_ERR_INTERNAL, "augmentation of float feature rows");
  if (r->threads > 1 && g->count > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(r->threads)
    for (int l = 0; l < g->count; l++) gather_node(r, g, l, thread_num());
  } else { /* without entering OpenMP (vec.c, FOR_CHUNKS); scratch row 0 */
    for (int l = 0; l < g->count; l++) gather_node(r, g, l, 0);
  }
  return DT_OK;
}

dt_status dt_cpu_profile_mark(dt_backend *be, int phase) {
  dt_profile_charge(be, phase);
  return DT_OK;
}
