/* Models from a layer list: shape inference, the parameter offset table (PyTorch order: each
 * layer's weight, then its bias), description and initialisation. Executing a model is a
 * backend's: the CPU's per-node executor is src/backend/cpu/net.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dt/backend.h"
#include "dt/nn.h"

typedef struct layer {
  dt_layer_spec spec;
  int in_c, in_h, in_w, out_c, out_h, out_w;
  size_t in_size, out_size; /* floats per sample */
  size_t w_off, n_w, b_off, n_b;
  int fan_in;
  dt_conv_shape conv;
  dt_pool_shape pool;
} layer;

struct dt_model {
  dt_model_spec spec;
  int L;
  layer layers[DT_MAX_LAYERS];
  size_t num_params;
  size_t max_size; /* largest activation per sample, input included */
  size_t col_size; /* largest im2col matrix */
};

static const char *const kind_names[DT_LAYER_KIND_COUNT] = {
    [DT_LAYER_CONV2D] = "conv2d", [DT_LAYER_MAXPOOL2D] = "maxpool2d", [DT_LAYER_LINEAR] = "linear",
    [DT_LAYER_RELU] = "relu",     [DT_LAYER_FLATTEN] = "flatten",     [DT_LAYER_DROPOUT] = "dropout",
};

const char *dt_layer_kind_name(dt_layer_kind k) {
  return (unsigned)k < DT_LAYER_KIND_COUNT ? kind_names[k] : "unknown";
}

void dt_model_spec_seed_cnn(dt_model_spec *s, int num_filters, int kernel_size, int linear_width) {
  memset(s, 0, sizeof *s);
  s->in_channels = 1;
  s->in_height = s->in_width = 28;
  s->num_classes = 10;
  s->num_layers = 7;
  s->layers[0] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = num_filters, .kernel_size = kernel_size, .stride = 1};
  s->layers[1] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[2] = (dt_layer_spec){.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2, .stride = 2};
  s->layers[3] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s->layers[4] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = linear_width};
  s->layers[5] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[6] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 10};
}

void dt_model_spec_lenet5(dt_model_spec *s, int in_c, int in_h, int in_w, int classes) {
  memset(s, 0, sizeof *s);
  s->in_channels = in_c;
  s->in_height = in_h;
  s->in_width = in_w;
  s->num_classes = classes;
  const dt_layer_spec layers[] = {
      {.kind = DT_LAYER_CONV2D, .out_channels = 6, .kernel_size = 5, .stride = 1},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2, .stride = 2},
      {.kind = DT_LAYER_CONV2D, .out_channels = 16, .kernel_size = 5, .stride = 1},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2, .stride = 2},
      {.kind = DT_LAYER_FLATTEN},
      {.kind = DT_LAYER_LINEAR, .out_features = 120},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_LINEAR, .out_features = 84},
      {.kind = DT_LAYER_RELU},
      {.kind = DT_LAYER_LINEAR, .out_features = classes},
  };
  s->num_layers = (int)(sizeof layers / sizeof layers[0]);
  memcpy(s->layers, layers, sizeof layers);
}

/* The activation shape between layers while a model is built: channels, height, width, and
 * whether a flatten came before. */
typedef struct act_shape {
  int c, h, w, flat;
} act_shape;

/* A conv2d layer on input shape *s: its geometry and parameter counts; *s becomes its output. */
static dt_status conv_layer(dt_model *m, int l, layer *ly, act_shape *s) {
  const dt_layer_spec *ls = &ly->spec;
  const int c = s->c, h = s->h, w = s->w;
  DT_CHECK(!s->flat, DT_ERR_CONFIG, "model layer %d (conv2d) comes after flatten", l);
  DT_CHECK(ls->out_channels >= 1 && ls->kernel_size >= 1 && ls->stride >= 1 && ls->padding >= 0,
           DT_ERR_CONFIG, "model layer %d (conv2d) needs out_channels >= 1, kernel_size >= 1, "
           "stride >= 1 and padding >= 0", l);
  int oh = (h + 2 * ls->padding - ls->kernel_size) / ls->stride + 1;
  int ow = (w + 2 * ls->padding - ls->kernel_size) / ls->stride + 1;
  DT_CHECK(h + 2 * ls->padding >= ls->kernel_size && w + 2 * ls->padding >= ls->kernel_size,
           DT_ERR_CONFIG, "model layer %d (conv2d): kernel %dx%d is larger than its padded "
           "input %dx%d", l, ls->kernel_size, ls->kernel_size, h + 2 * ls->padding, w + 2 * ls->padding);
  ly->conv = (dt_conv_shape){.c = c, .h = h, .w = w, .f = ls->out_channels, .k = ls->kernel_size,
                             .stride = ls->stride, .pad = ls->padding, .oh = oh, .ow = ow};
  ly->fan_in = c * ls->kernel_size * ls->kernel_size;
  ly->n_w = (size_t)ls->out_channels * ly->fan_in;
  ly->n_b = (size_t)ls->out_channels;
  size_t col = (size_t)ly->fan_in * oh * ow;
  if (col > m->col_size) m->col_size = col;
  s->c = ls->out_channels;
  s->h = oh;
  s->w = ow;
  return DT_OK;
}

/* A maxpool2d layer on input shape *s (stride 0: the kernel size); *s becomes its output. */
static dt_status pool_layer(int l, layer *ly, act_shape *s) {
  const dt_layer_spec *ls = &ly->spec;
  const int c = s->c, h = s->h, w = s->w;
  DT_CHECK(!s->flat, DT_ERR_CONFIG, "model layer %d (maxpool2d) comes after flatten", l);
  int stride = ls->stride > 0 ? ls->stride : ls->kernel_size;
  DT_CHECK(ls->kernel_size >= 1 && ls->kernel_size <= h && ls->kernel_size <= w, DT_ERR_CONFIG,
           "model layer %d (maxpool2d): kernel_size %d does not fit its %dx%d input", l,
           ls->kernel_size, h, w);
  int oh = (h - ls->kernel_size) / stride + 1, ow = (w - ls->kernel_size) / stride + 1;
  ly->pool = (dt_pool_shape){.c = c, .h = h, .w = w, .k = ls->kernel_size, .stride = stride, .oh = oh, .ow = ow};
  s->h = oh;
  s->w = ow;
  return DT_OK;
}

/* A linear layer on a flat input *s: its parameter counts; *s becomes its output. */
static dt_status linear_layer(int l, layer *ly, act_shape *s) {
  const dt_layer_spec *ls = &ly->spec;
  DT_CHECK(s->flat || (s->h == 1 && s->w == 1), DT_ERR_CONFIG,
           "model layer %d (linear) receives a %dx%dx%d input; put a flatten layer before it",
           l, s->c, s->h, s->w);
  DT_CHECK(ls->out_features >= 1, DT_ERR_CONFIG, "model layer %d (linear) needs out_features >= 1", l);
  ly->fan_in = s->c;
  ly->n_w = (size_t)ls->out_features * s->c;
  ly->n_b = (size_t)ls->out_features;
  s->c = ls->out_features;
  return DT_OK;
}

/* Layer l of the spec on input shape *s: its shapes, and its parameters from offset *off (weight,
 * then bias) on; *s and *off move past it. */
static dt_status add_layer(dt_model *m, int l, act_shape *s, size_t *off) {
  layer *ly = &m->layers[l];
  const dt_layer_spec *ls = &m->spec.layers[l];
  ly->spec = *ls;
  ly->in_c = s->c;
  ly->in_h = s->h;
  ly->in_w = s->w;
  ly->in_size = (size_t)s->c * s->h * s->w;
  switch (ls->kind) {
    case DT_LAYER_CONV2D: DT_TRY(conv_layer(m, l, ly, s)); break;
    case DT_LAYER_MAXPOOL2D: DT_TRY(pool_layer(l, ly, s)); break;
    case DT_LAYER_FLATTEN:
      s->c = s->c * s->h * s->w;
      s->h = s->w = 1;
      s->flat = 1;
      break;
    case DT_LAYER_LINEAR: DT_TRY(linear_layer(l, ly, s)); break;
    case DT_LAYER_RELU: break;
    case DT_LAYER_DROPOUT:
      DT_CHECK(ls->p >= 0.0f && ls->p < 1.0f, DT_ERR_CONFIG,
               "model layer %d (dropout): p must lie in [0, 1), found %g", l, ls->p);
      break;
    default: DT_CHECK(0, DT_ERR_CONFIG, "model layer %d has unknown kind %d", l, (int)ls->kind);
  }
  ly->out_c = s->c;
  ly->out_h = s->h;
  ly->out_w = s->w;
  ly->out_size = (size_t)s->c * s->h * s->w;
  ly->w_off = *off;
  *off += ly->n_w;
  ly->b_off = *off;
  *off += ly->n_b;
  if (ly->out_size > m->max_size) m->max_size = ly->out_size;
  return DT_OK;
}

/* The config key a model's errors are about (dt_config_positioned places them in the file). */
#define DT_MODEL_KEY "experiment.model.layers"

dt_status dt_model_create(const dt_model_spec *spec, dt_model **out) {
  dt_status st = DT_OK;
  dt_model *m = NULL;
  *out = NULL;
  DT_CHECK_KEY(spec->num_layers >= 1 && spec->num_layers <= DT_MAX_LAYERS, DT_ERR_CONFIG, DT_MODEL_KEY,
           "model: %d layers; a model needs 1 to %d", spec->num_layers, DT_MAX_LAYERS);
  DT_CHECK_KEY(spec->in_channels >= 1 && spec->in_height >= 1 && spec->in_width >= 1, DT_ERR_CONFIG, DT_MODEL_KEY,
           "model: input shape %dx%dx%d is empty", spec->in_channels, spec->in_height, spec->in_width);
  DT_ALLOC_GOTO(m, 1, "model");
  m->spec = *spec;
  m->L = spec->num_layers;
  act_shape s = {.c = spec->in_channels, .h = spec->in_height, .w = spec->in_width, .flat = 0};
  size_t off = 0;
  m->max_size = (size_t)s.c * s.h * s.w;
  for (int l = 0; l < m->L; l++) {
    st = add_layer(m, l, &s, &off);
    if (st == DT_ERR_CONFIG) st = dt_error_set_key(st, DT_MODEL_KEY "[%d]", l); /* its layer's entry */
    if (st != DT_OK) goto cleanup;
  }
  m->num_params = off;
  const layer *last = &m->layers[m->L - 1];
  DT_CHECK_KEY_GOTO(last->spec.kind == DT_LAYER_LINEAR && last->out_size == (size_t)spec->num_classes,
                    DT_ERR_CONFIG, DT_MODEL_KEY,
                "model: the last layer must be linear with out_features = %d (the number of "
                "classes), found %s with %zu outputs",
                spec->num_classes, dt_layer_kind_name(last->spec.kind), last->out_size);
  *out = m;
  m = NULL;
cleanup:
  dt_free(m);
  return st;
}

void dt_model_free(dt_model *m) { dt_free(m); }
size_t dt_model_num_params(const dt_model *m) { return m->num_params; }
size_t dt_model_input_size(const dt_model *m) { return m->layers[0].in_size; }
int dt_model_num_layers(const dt_model *m) { return m->L; }
int dt_model_num_classes(const dt_model *m) { return m->spec.num_classes; }
size_t dt_model_max_activation(const dt_model *m) { return m->max_size; }
size_t dt_model_col_size(const dt_model *m) { return m->col_size; }

dt_layer_info dt_model_layer(const dt_model *m, int l) {
  const layer *ly = &m->layers[l];
  return (dt_layer_info){.kind = ly->spec.kind, .p = ly->spec.p, .in_size = ly->in_size, .out_size = ly->out_size,
                         .w_off = ly->w_off, .n_w = ly->n_w, .b_off = ly->b_off, .n_b = ly->n_b,
                         .conv = ly->conv, .pool = ly->pool};
}

void dt_model_describe(const dt_model *m, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "input %dx%dx%d\n", m->spec.in_channels,
                                 m->spec.in_height, m->spec.in_width);
  for (int l = 0; l < m->L && used < size; l++) {
    const layer *ly = &m->layers[l];
    used += (size_t)snprintf(buf + used, size - used, "%2d %-9s -> %dx%dx%d  %zu params\n", l,
                             dt_layer_kind_name(ly->spec.kind), ly->out_c, ly->out_h, ly->out_w,
                             ly->n_w + ly->n_b);
  }
  if (used < size) snprintf(buf + used, size - used, "total %zu parameters\n", m->num_params);
}

void dt_model_init_params(const dt_model *m, uint64_t seed, float *params) {
  for (int l = 0; l < m->L; l++) {
    const layer *ly = &m->layers[l];
    if (ly->n_w == 0) continue;
    const float bound = 1.0f / sqrtf((float)ly->fan_in);
    dt_rng r;
    dt_rng_init(&r, seed, DT_RNG_INIT, 2 * (uint64_t)l);
    for (size_t i = 0; i < ly->n_w; i++) params[ly->w_off + i] = (2.0f * dt_rng_float(&r) - 1.0f) * bound;
    dt_rng_init(&r, seed, DT_RNG_INIT, 2 * (uint64_t)l + 1);
    for (size_t i = 0; i < ly->n_b; i++) params[ly->b_off + i] = (2.0f * dt_rng_float(&r) - 1.0f) * bound;
  }
}
