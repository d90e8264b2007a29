/* Services the layer definitions build with: registering tensors, a convolution's geometry, a
 * normalisation's tensors, messages, and the definitions by kind and by name. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "layer_impl.h"

const char *const dt_layer_bias_values[] = {"true", "false", NULL};

static const dt_layer_def *const defs[DT_LAYER_KIND_COUNT] = {
#define DEF_ENTRY(upper, lower) [DT_LAYER_##upper] = &dt_layer_##lower,
    DT_LAYER_LIST(DEF_ENTRY)
#undef DEF_ENTRY
};

const dt_layer_def *dt_layer_def_of(dt_layer_kind k) { return (unsigned)k < DT_LAYER_KIND_COUNT ? defs[k] : NULL; }

const dt_layer_def *dt_layer_def_named(const char *name) {
  for (int k = 0; k < DT_LAYER_KIND_COUNT; k++)
    if (!defs[k]->internal && strcmp(defs[k]->name, name) == 0) return defs[k];
  return NULL;
}

const char *dt_layer_kind_name(dt_layer_kind k) {
  return (unsigned)k < DT_LAYER_KIND_COUNT ? defs[k]->name : "unknown";
}

const char *dt_layer_msg(const char *fmt, ...) {
  static _Thread_local char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

size_t dt_layer_tensor(dt_layer_build *b, const char *suffix, dt_tensor_role role, dt_tensor_init init, int rank,
                       const int *dims) {
  dt_layer_info *li = b->info;
  dt_tensor_info *t = &li->tensors[li->ntensors++];
  memset(t, 0, sizeof *t);
  snprintf(t->suffix, sizeof t->suffix, "%s", suffix);
  t->role = role;
  t->init = init;
  t->rank = rank;
  /* sizes saturate at SIZE_MAX (fan-ins at INT_MAX) instead of wrapping: the model then refuses
   * the count (DT_MAX_PARAMS) */
  t->n = 1;
  for (int d = 0; d < rank; d++) {
    t->dims[d] = dims[d];
    if (__builtin_mul_overflow(t->n, (size_t)dims[d], &t->n)) t->n = SIZE_MAX;
  }
  /* a weight's fan-in: every dimension but the first (a bias shares its weight's) */
  t->fan_in = 1;
  for (int d = 1; d < rank; d++)
    if (__builtin_mul_overflow(t->fan_in, dims[d], &t->fan_in)) t->fan_in = INT_MAX;
  if (rank == 1 && li->ntensors > 1) t->fan_in = li->tensors[li->ntensors - 2].fan_in;
  size_t *off = role == DT_TENSOR_PARAM ? b->param_off : b->buf_off;
  t->off = *off;
  if (__builtin_add_overflow(*off, t->n, off)) *off = SIZE_MAX;
  if (role == DT_TENSOR_PARAM) { /* the first two parameter tensors: weight and bias */
    if (li->n_w == 0) li->w_off = t->off, li->n_w = t->n;
    else if (li->n_b == 0) li->b_off = t->off, li->n_b = t->n;
  } else {
    if (li->n_buf == 0) li->buf_off = t->off;
    li->n_buf += t->n;
  }
  return t->off;
}

dt_status dt_layer_conv_shape(dt_layer_build *b, const dt_act_shape *in, int filters, int k, int stride, int pad,
                              const char *what, dt_conv_shape *out) {
  const int h = in->h, w = in->w;
  DT_CHECK(h + 2 * pad >= k && w + 2 * pad >= k, DT_ERR_CONFIG,
           "model layer %s (conv2d): kernel %dx%d is larger than its padded input %dx%d", what, k, k, h + 2 * pad, w + 2 * pad);
  *out = (dt_conv_shape){.c = in->c, .h = h, .w = w, .f = filters, .k = k, .stride = stride, .pad = pad,
                         .oh = (h + 2 * pad - k) / stride + 1, .ow = (w + 2 * pad - k) / stride + 1};
  /* the im2col matrix, and after it (in the CPU backend's dcol) the transposed weight gradient
   * its backward accumulates over the batch */
  size_t col = (size_t)in->c * k * k * ((size_t)out->oh * out->ow + (size_t)filters);
  if (dt_conv_winograd(out) && dt_conv_winograd_scratch(out) > col) col = dt_conv_winograd_scratch(out);
  if (col > b->col_size) b->col_size = col;
  return DT_OK;
}

void dt_layer_norm_tensors(dt_layer_build *b, const char *prefix, dt_layer_kind kind, int c, size_t plane, int groups, float eps,
                           float momentum, dt_norm_shape *out) {
  char name[32];
  const int dims[1] = {c};
  *out = (dt_norm_shape){.kind = kind, .c = c, .groups = groups, .plane = plane, .eps = eps > 0 ? eps : 1e-5f,
                         .momentum = momentum > 0 ? momentum : 0.1f};
  snprintf(name, sizeof name, "%sweight", prefix);
  out->w_off = dt_layer_tensor(b, name, DT_TENSOR_PARAM, DT_INIT_ONES, 1, dims);
  snprintf(name, sizeof name, "%sbias", prefix);
  out->b_off = dt_layer_tensor(b, name, DT_TENSOR_PARAM, DT_INIT_ZEROS, 1, dims);
  if (kind != DT_LAYER_BATCHNORM2D) return;
  snprintf(name, sizeof name, "%srunning_mean", prefix);
  out->buf_off = dt_layer_tensor(b, name, DT_TENSOR_BUFFER, DT_INIT_ZEROS, 1, dims);
  snprintf(name, sizeof name, "%srunning_var", prefix);
  dt_layer_tensor(b, name, DT_TENSOR_BUFFER, DT_INIT_ONES, 1, dims);
}

dt_status dt_layer_build_same(dt_layer_build *b) {
  b->out = b->in;
  return DT_OK;
}

double dt_layer_flops_elementwise(const dt_layer_info *li) { return (double)li->out_size; }
double dt_layer_flops_none(const dt_layer_info *li) {
  (void)li;
  return 0.0;
}
