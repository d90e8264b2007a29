/* The backend registry and selection, and the slab helpers every level above uses. A backend
 * built into dtrun is one line in dt_backends[]. */
#include <stdio.h>
#include <string.h>

#include "dt/backend.h"
#include "dt/timer.h"
#include "dt_config.h"

extern const dt_backend_def dt_backend_cpu_def;
#if DT_HAVE_CUDA
extern const dt_backend_def dt_backend_cuda_def;
#endif

const dt_backend_def *const dt_backends[] = {
    &dt_backend_cpu_def,
#if DT_HAVE_CUDA
    &dt_backend_cuda_def,
#endif
    NULL,
};

dt_status dt_backend_unsupported(const dt_backend *be, const char *op) {
  return DT_ERROR(DT_ERR_UNSUPPORTED, "the %s backend does not support the op '%s'", be->name, op);
}

const dt_backend_def *dt_backend_find(const char *name) {
  for (int i = 0; dt_backends[i] != NULL; i++)
    if (strcmp(dt_backends[i]->name, name) == 0) return dt_backends[i];
  return NULL;
}

const char *dt_backend_list(void) {
  static char list[128];
  if (list[0] == '\0')
    for (int i = 0; dt_backends[i] != NULL; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", dt_backends[i]->name);
  return list;
}

const dt_backend_def *dt_backend_auto(char *note, size_t note_size) {
  char why[256] = "";
  if (note_size > 0) note[0] = '\0';
  for (int i = 1; dt_backends[i] != NULL; i++) { /* device backends first; the CPU is [0] */
    if (dt_backends[i]->usable(why, sizeof why)) return dt_backends[i];
    snprintf(note, note_size, "backend auto: %s is built but not usable here (%s); running on the CPU", dt_backends[i]->name, why);
  }
  return dt_backends[0];
}

dt_status dt_backend_select(const char *name, int threads, char *note, size_t note_size, dt_backend **out) {
  char why[256] = "";
  *out = NULL;
  if (note_size > 0) note[0] = '\0';
  if (strcmp(name, "auto") == 0) return dt_backend_auto(note, note_size)->create(threads, out);
  const dt_backend_def *def = dt_backend_find(name);
  DT_CHECK(def != NULL, DT_ERR_CONFIG, "experiment.backend: %s is not built into this dtrun (built: %s)", name, dt_backend_list());
  DT_CHECK(def->usable(why, sizeof why), DT_ERR_CONFIG, "experiment.backend: %s cannot run here: %s; use backend: cpu or auto", name, why);
  return def->create(threads, out);
}

const char *const dt_phase_names[DT_PHASE_COUNT] = {
#define DT_PHASE_NAME(id, name, what) name,
    DT_PHASES(DT_PHASE_NAME)
#undef DT_PHASE_NAME
};

void dt_backend_profile(dt_backend *be, dt_profile *p) {
  be->profile = p;
  if (p == NULL) return;
  memset(p, 0, sizeof *p);
  p->last = dt_time_now();
}

void dt_profile_charge(dt_backend *be, int phase) {
  dt_profile *p = be->profile;
  if (p == NULL || phase < 0 || phase >= DT_PHASE_COUNT) return;
  const double now = dt_time_now();
  p->seconds[phase] += now - p->last;
  p->last = now;
}

void dt_backend_free(dt_backend *be) {
  if (be == NULL) return;
  const dt_backend_def *def = dt_backend_find(be->name);
  if (def != NULL) def->destroy(be);
}

dt_status dt_slab_create(dt_backend *be, int count, size_t dim, dt_slab *out) {
  memset(out, 0, sizeof *out);
  const size_t stride = dt_slab_stride(dim);
  void *p = NULL;
  DT_TRY(dt_be_alloc(be, sizeof(float) * stride * (size_t)(count > 0 ? count : 1), &p));
  *out = (dt_slab){.data = p, .count = count, .dim = dim, .stride = stride};
  return DT_OK;
}

void dt_slab_free(dt_backend *be, dt_slab *s) {
  if (s->data != NULL) dt_be_free(be, s->data);
  memset(s, 0, sizeof *s);
}

/* Slabs whose nodes lie at the same stride are one contiguous op; others go node by node. */
static int same_layout(const dt_slab *a, const dt_slab *b) { return a->stride == b->stride && a->count == b->count; }
static size_t span(const dt_slab *s) { return s->count > 0 ? (size_t)(s->count - 1) * s->stride + s->dim : 0; }

/* Slabs of different strides: one rows op (one launch on a device, not one per node). */
static dt_rows slab_rows(dt_rows_kind kind, const dt_slab *x, const dt_slab *y, dt_slab *z) {
  return (dt_rows){.kind = kind, .n = z->dim, .count = z->count, .x = x != NULL ? x->data : NULL, .y = y != NULL ? y->data : NULL,
                   .z = z->data, .xs = x != NULL ? x->stride : 0, .ys = y != NULL ? y->stride : 0, .zs = z->stride};
}

dt_status dt_slab_copy(dt_backend *be, const dt_slab *src, dt_slab *dst) {
  DT_ASSERT(src->dim == dst->dim && src->count == dst->count);
  if (same_layout(src, dst)) return dt_be_copy(be, span(src), src->data, dst->data);
  const dt_rows r = slab_rows(DT_ROWS_COPY, src, NULL, dst);
  return dt_be_rows(be, &r);
}

dt_status dt_slab_fill(dt_backend *be, dt_slab *s, float a) {
  if (s->stride == s->dim) return dt_be_fill(be, span(s), a, s->data);
  dt_rows r = slab_rows(DT_ROWS_FILL, NULL, NULL, s);
  r.a = a;
  return dt_be_rows(be, &r);
}

dt_status dt_slab_axpby(dt_backend *be, float a, const dt_slab *x, float b, const dt_slab *y, dt_slab *dst) {
  DT_ASSERT(x->dim == dst->dim && y->dim == dst->dim && x->count == dst->count && y->count == dst->count);
  if (same_layout(x, dst) && same_layout(y, dst)) return dt_be_axpby(be, span(dst), a, x->data, b, y->data, dst->data);
  dt_rows r = slab_rows(DT_ROWS_AXPBY, x, y, dst);
  r.a = a, r.b = b;
  return dt_be_rows(be, &r);
}

dt_status dt_slab_add_compensated(dt_backend *be, float c, dt_slab *t, dt_slab *hi, dt_slab *lo) {
  /* Kahan: y = c·t − lo; sum = hi + y; lo = (sum − hi) − y; hi = sum. Coefficients ±1 after the
   * first op: each op one exact product and one rounding, on every backend alike. */
  DT_TRY(dt_slab_axpby(be, c, t, -1.0f, lo, t));      /* y */
  DT_TRY(dt_slab_axpby(be, 1.0f, hi, 1.0f, t, lo));   /* sum, into lo */
  DT_TRY(dt_slab_axpby(be, 1.0f, lo, -1.0f, hi, hi)); /* sum − hi, into hi */
  DT_TRY(dt_slab_axpby(be, 1.0f, hi, -1.0f, t, hi));  /* (sum − hi) − y: the new lo, in hi */
  const dt_slab sum = *lo; /* hi ← sum, lo ← the compensation: the two trade their memory */
  *lo = *hi;
  *hi = sum;
  return DT_OK;
}

dt_status dt_slab_axpby_nodes(dt_backend *be, const float *a, const dt_slab *x, float b, const dt_slab *y, dt_slab *dst) {
  DT_ASSERT(x->dim == dst->dim && y->dim == dst->dim && x->count == dst->count && y->count == dst->count);
  dt_rows r = slab_rows(DT_ROWS_AXPBY, x, y, dst);
  r.av = a, r.b = b;
  return dt_be_rows(be, &r);
}

dt_status dt_slab_axpy(dt_backend *be, float a, const dt_slab *x, dt_slab *y) {
  DT_ASSERT(x->dim == y->dim && x->count == y->count);
  if (same_layout(x, y)) return dt_be_axpy(be, span(y), a, x->data, y->data);
  dt_rows r = slab_rows(DT_ROWS_AXPY, x, NULL, y);
  r.a = a;
  return dt_be_rows(be, &r);
}

dt_status dt_rows_row(dt_backend *be, const dt_rows *r, int l) {
  const float a = dt_rows_a(r, l), b = dt_rows_b(r, l);
  const float *x = r->x != NULL ? r->x + (size_t)l * r->xs : NULL, *y = r->y != NULL ? r->y + (size_t)l * r->ys : NULL;
  float *z = r->z + (size_t)l * r->zs;
  switch (r->kind) {
    case DT_ROWS_COPY: return dt_be_copy(be, r->n, x, z);
    case DT_ROWS_FILL: return dt_be_fill(be, r->n, a, z);
    case DT_ROWS_SCALE: return dt_be_scale(be, r->n, a, z);
    case DT_ROWS_AXPY: return dt_be_axpy(be, r->n, a, x, z);
    case DT_ROWS_AXPBY: return dt_be_axpby(be, r->n, a, x, b, y, z);
    case DT_ROWS_DIV: return dt_be_div(be, r->n, x, r->dv[l], z);
  }
  return DT_ERROR(DT_ERR_INTERNAL, "unknown rows op %d", (int)r->kind);
}

dt_status dt_slab_broadcast_host(dt_backend *be, const float *host, dt_slab *dst) {
  for (int l = 0; l < dst->count; l++) DT_TRY(dt_be_upload(be, dt_slab_node(dst, l), host, sizeof(float) * dst->dim));
  return DT_OK;
}

dt_status dt_slab_download_node(dt_backend *be, const dt_slab *s, int l, float *host) {
  return dt_be_download(be, host, dt_slab_node(s, l), sizeof(float) * s->dim);
}

dt_status dt_slab_upload_node(dt_backend *be, dt_slab *s, int l, const float *host) {
  return dt_be_upload(be, dt_slab_node(s, l), host, sizeof(float) * s->dim);
}

dt_status dt_backend_host_view(dt_backend *be, const void *src, size_t bytes, void **scratch, const void **view) {
  if (be->host_memory) {
    *view = src;
    return DT_OK;
  }
  if (*scratch == NULL) {
    *scratch = dt_calloc_(bytes > 0 ? bytes : 1, 1);
    DT_CHECK(*scratch != NULL, DT_ERR_MEMORY, "out of memory allocating %zu bytes for a host copy", bytes);
  }
  DT_TRY(dt_be_download(be, *scratch, src, bytes));
  *view = *scratch;
  return DT_OK;
}
