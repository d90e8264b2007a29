/* Models from a layer list: each entry built by its type's definition (src/nn/layers/), in the
 * compiled order the executors run (a residual block's entries, then its residual_end), with
 * each layer's tensors placed in the parameter or the buffer vector in PyTorch's state_dict
 * order; description, FLOPs, manifest and initialisation. Executing a model is a backend's: the
 * CPU's per-node executor is src/backend/cpu/net.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dt/backend.h"
#include "dt/nn.h"

struct dt_model {
  dt_model_spec spec;
  int L;
  dt_layer_info layers[DT_MAX_COMPILED];
  size_t num_params, num_buffers;
  size_t max_size; /* largest activation per sample, input included */
  size_t col_size; /* largest im2col matrix */
};

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

/* The config key a model's errors are about (dt_config_positioned places them in the file). */
#define DT_MODEL_KEY "experiment.model.layers"

/* A count as digits (for messages). */
static const char *size_text(size_t n) {
  static _Thread_local char buf[32];
  snprintf(buf, sizeof buf, "%zu", n);
  return buf;
}

typedef struct builder {
  dt_model *m;
  size_t poff, boff;
} builder;

/* Compiles one entry with its type's definition on input *s; *s becomes its output. */
static dt_status add_entry(builder *bd, const dt_layer_spec *ls, dt_layer_kind kind, dt_act_shape *s, const char *key,
                           const char *where, const char *name, int pair) {
  dt_model *m = bd->m;
  const dt_layer_def *def = dt_layer_def_of(kind);
  DT_CHECK_KEY(m->L < DT_MAX_COMPILED, DT_ERR_CONFIG, key, "model: more than %d layers once blocks are counted",
               DT_MAX_COMPILED);
  DT_CHECK_KEY(def != NULL, DT_ERR_CONFIG, key, "model layer %s has unknown kind %d", where, (int)kind);
  dt_layer_info *li = &m->layers[m->L];
  memset(li, 0, sizeof *li);
  li->kind = kind;
  li->pair = pair;
  li->in_c = s->c, li->in_h = s->h, li->in_w = s->w;
  li->in_size = (size_t)s->c * s->h * s->w;
  snprintf(li->key, sizeof li->key, "%s", key);
  snprintf(li->name, sizeof li->name, "%s", name);
  dt_layer_build b = {.spec = ls, .info = li, .in = *s, .index = m->L, .where = where, .param_off = &bd->poff,
                      .buf_off = &bd->boff, .all = m->layers};
  dt_status st = def->build(&b);
  if (st == DT_ERR_CONFIG) st = dt_error_set_key(st, "%s", key); /* its layer's entry */
  DT_TRY(st);
  *s = b.out;
  const size_t out_size = (size_t)s->c * s->h * s->w;
  DT_CHECK_KEY(s->c > 0 && s->h > 0 && s->w > 0 && out_size <= DT_MAX_ACTIVATION, DT_ERR_CONFIG, key,
               "model layer %s (%s): its output, %dx%dx%d, is more than %d floats per sample", where, dt_layer_kind_name(kind),
               s->c, s->h, s->w, DT_MAX_ACTIVATION);
  DT_CHECK_KEY(bd->poff <= DT_MAX_PARAMS && bd->boff <= DT_MAX_PARAMS, DT_ERR_CONFIG, key,
               "model layer %s (%s): the model reaches %s%s floats of %s, more than a node can hold (at most %llu)", where,
               dt_layer_kind_name(kind), bd->poff == SIZE_MAX || bd->boff == SIZE_MAX ? "more than 2^64 " : "",
               bd->poff == SIZE_MAX || bd->boff == SIZE_MAX ? "" : size_text(bd->poff > bd->boff ? bd->poff : bd->boff),
               bd->poff > bd->boff ? "parameters" : "buffers", (unsigned long long)DT_MAX_PARAMS);
  li->out_c = s->c, li->out_h = s->h, li->out_w = s->w;
  li->out_size = out_size;
  if (li->out_size > m->max_size) m->max_size = li->out_size;
  if (b.col_size > m->col_size) m->col_size = b.col_size;
  m->L++;
  return DT_OK;
}

/* Compiles spec entries [first, end) — one list, nested blocks recursively — on input *s; key,
 * where and name are the list's config key, message position and module-path prefixes. */
static dt_status build_list(builder *bd, int first, int end, dt_act_shape *s, const char *key, const char *where,
                            const char *name) {
  const dt_model_spec *spec = &bd->m->spec;
  for (int i = first, pos = 0; i < end; pos++) {
    const dt_layer_spec *ls = &spec->layers[i];
    char k[96], w[48], n[64];
    snprintf(k, sizeof k, "%s[%d]", key, pos);
    snprintf(w, sizeof w, "%s%d", where, pos);
    if (ls->name[0] != '\0') snprintf(n, sizeof n, "%s%s", name, ls->name);
    else snprintf(n, sizeof n, "%s%d", name, pos);
    const int span = 1 + (ls->kind == DT_LAYER_RESIDUAL ? ls->children : 0);
    DT_CHECK_KEY(span >= 1 && i + span <= end, DT_ERR_CONFIG, k, "model layer %s (residual) claims %d layers, more than its list holds",
                 w, span - 1);
    const int at = bd->m->L;
    DT_TRY(add_entry(bd, ls, ls->kind, s, k, w, n, -1));
    if (ls->kind == DT_LAYER_RESIDUAL) {
      char ck[96], cw[48], cn[64];
      snprintf(ck, sizeof ck, "%s.layers", k);
      snprintf(cw, sizeof cw, "%s.", w);
      snprintf(cn, sizeof cn, "%s.", n);
      DT_TRY(build_list(bd, i + 1, i + span, s, ck, cw, cn));
      bd->m->layers[at].pair = bd->m->L;
      DT_TRY(add_entry(bd, ls, DT_LAYER_RESIDUAL_END, s, k, w, n, at));
    }
    i += span;
  }
  return DT_OK;
}

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
  dt_act_shape s = {.c = spec->in_channels, .h = spec->in_height, .w = spec->in_width, .flat = 0};
  m->max_size = (size_t)s.c * s.h * s.w;
  builder bd = {.m = m};
  DT_TRY_GOTO(build_list(&bd, 0, spec->num_layers, &s, DT_MODEL_KEY, "", ""));
  m->num_params = bd.poff;
  m->num_buffers = bd.boff;
  const dt_layer_info *last = &m->layers[m->L - 1];
  DT_CHECK_KEY_GOTO(last->kind == DT_LAYER_LINEAR && last->out_size == (size_t)spec->num_classes,
                    DT_ERR_CONFIG, DT_MODEL_KEY,
                "model: the last layer must be linear with out_features = %d (the number of "
                "classes), found %s with %zu outputs",
                spec->num_classes, dt_layer_kind_name(last->kind), last->out_size);
  *out = m;
  m = NULL;
cleanup:
  dt_free(m);
  return st;
}

void dt_model_free(dt_model *m) { dt_free(m); }
size_t dt_model_num_params(const dt_model *m) { return m->num_params; }
size_t dt_model_num_buffers(const dt_model *m) { return m->num_buffers; }
size_t dt_model_input_size(const dt_model *m) { return m->layers[0].in_size; }
int dt_model_num_layers(const dt_model *m) { return m->L; }
int dt_model_num_classes(const dt_model *m) { return m->spec.num_classes; }
size_t dt_model_max_activation(const dt_model *m) { return m->max_size; }
size_t dt_model_col_size(const dt_model *m) { return m->col_size; }
const dt_layer_info *dt_model_layer(const dt_model *m, int l) { return &m->layers[l]; }

double dt_model_flops(const dt_model *m) {
  double f = 0;
  for (int l = 0; l < m->L; l++) f += dt_layer_def_of(m->layers[l].kind)->flops(&m->layers[l]);
  return f;
}

static size_t layer_params(const dt_layer_info *li) {
  size_t n = 0;
  for (int t = 0; t < li->ntensors; t++) n += li->tensors[t].role == DT_TENSOR_PARAM ? li->tensors[t].n : 0;
  return n;
}

void dt_model_describe(const dt_model *m, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "input %dx%dx%d\n", m->spec.in_channels,
                                 m->spec.in_height, m->spec.in_width);
  int depth = 0;
  for (int l = 0; l < m->L && used < size; l++) {
    const dt_layer_info *li = &m->layers[l];
    if (li->kind == DT_LAYER_RESIDUAL_END) depth--;
    const char *label = li->kind != DT_LAYER_RESIDUAL_END ? dt_layer_kind_name(li->kind) : li->projection ? "+ projection" : "+ identity";
    used += (size_t)snprintf(buf + used, size - used, "%2d %*s%-*s -> %dx%dx%d  %zu params", l, 2 * depth, "",
                             14 - 2 * depth > 0 ? 14 - 2 * depth : 0, label, li->out_c, li->out_h, li->out_w, layer_params(li));
    if (li->n_buf > 0 && used < size) used += (size_t)snprintf(buf + used, size - used, ", %zu buffer floats", li->n_buf);
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "\n");
    if (li->kind == DT_LAYER_RESIDUAL) depth++;
  }
  if (used < size) used += (size_t)snprintf(buf + used, size - used, "total %zu parameters\n", m->num_params);
  if (m->num_buffers > 0 && used < size)
    used += (size_t)snprintf(buf + used, size - used, "buffers: %zu floats (running statistics)\n", m->num_buffers);
  if (used < size) snprintf(buf + used, size - used, "forward: %.3g MFLOP per sample\n", dt_model_flops(m) / 1e6);
}

void dt_model_init_params(const dt_model *m, uint64_t seed, float *params) {
  for (int l = 0; l < m->L; l++) {
    const dt_layer_info *li = &m->layers[l];
    uint64_t stream = 2 * (uint64_t)l;
    for (int t = 0; t < li->ntensors; t++) {
      const dt_tensor_info *ti = &li->tensors[t];
      if (ti->role != DT_TENSOR_PARAM) continue;
      float *p = params + ti->off;
      if (ti->init == DT_INIT_UNIFORM) {
        const float bound = 1.0f / sqrtf((float)ti->fan_in);
        dt_rng r;
        dt_rng_init(&r, seed, DT_RNG_INIT, stream++);
        for (size_t i = 0; i < ti->n; i++) p[i] = (2.0f * dt_rng_float(&r) - 1.0f) * bound;
      } else {
        for (size_t i = 0; i < ti->n; i++) p[i] = ti->init == DT_INIT_ONES ? 1.0f : 0.0f;
      }
    }
  }
}

void dt_model_init_buffers(const dt_model *m, float *buffers) {
  for (int l = 0; l < m->L; l++)
    for (int t = 0; t < m->layers[l].ntensors; t++) {
      const dt_tensor_info *ti = &m->layers[l].tensors[t];
      if (ti->role != DT_TENSOR_BUFFER) continue;
      for (size_t i = 0; i < ti->n; i++) buffers[ti->off + i] = ti->init == DT_INIT_ONES ? 1.0f : 0.0f;
    }
}

/* Spec entries [first, end) as a JSON list. */
static size_t spec_json(const dt_model_spec *s, int first, int end, char *buf, size_t size) {
  size_t u = 0;
#define PUT(...) u += (size_t)snprintf(buf + (u < size ? u : size), u < size ? size - u : 0, __VA_ARGS__)
  PUT("[");
  for (int i = first; i < end;) {
    const dt_layer_spec *l = &s->layers[i];
    PUT("%s{\"type\": \"%s\"", i > first ? ", " : "", dt_layer_kind_name(l->kind));
    const struct { const char *k; int v; } ints[] = {{"out_channels", l->out_channels}, {"kernel_size", l->kernel_size},
        {"stride", l->stride}, {"padding", l->padding}, {"out_features", l->out_features}, {"groups", l->groups}};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
      if (ints[k].v != 0) PUT(", \"%s\": %d", ints[k].k, ints[k].v);
    if (l->no_bias) PUT(", \"bias\": false");
    if (l->p > 0) PUT(", \"p\": %.17g", l->p);
    if (l->eps > 0) PUT(", \"eps\": %.17g", l->eps);
    if (l->momentum > 0) PUT(", \"momentum\": %.17g", l->momentum);
    const int span = 1 + (l->kind == DT_LAYER_RESIDUAL ? l->children : 0);
    if (l->kind == DT_LAYER_RESIDUAL) {
      PUT(", \"layers\": ");
      u += spec_json(s, i + 1, i + span, buf + (u < size ? u : size), u < size ? size - u : 0);
    }
    PUT("}");
    i += span;
  }
  PUT("]");
#undef PUT
  return u;
}

const dt_model_spec *dt_model_spec_of(const dt_model *m) { return &m->spec; }

size_t dt_model_spec_json(const dt_model_spec *s, char *buf, size_t size) { return spec_json(s, 0, s->num_layers, buf, size); }

size_t dt_model_manifest(const dt_model *m, char *buf, size_t size) {
  size_t used = 0;
#define OUT(...)                                                                        \
  do {                                                                                  \
    const int n_ = snprintf(size > used ? buf + used : NULL, size > used ? size - used : 0, __VA_ARGS__); \
    used += n_ > 0 ? (size_t)n_ : 0;                                                   \
  } while (0)
  OUT("name\trole\toffset\tshape\n");
  for (int l = 0; l < m->L; l++) {
    const dt_layer_info *li = &m->layers[l];
    for (int t = 0; t < li->ntensors; t++) {
      const dt_tensor_info *ti = &li->tensors[t];
      const int param = ti->role == DT_TENSOR_PARAM;
      OUT("%s%s%s\t%s\t%zu\t", li->name, li->name[0] ? "." : "", ti->suffix, param ? "param" : "buffer",
          param ? ti->off : m->num_params + ti->off);
      for (int d = 0; d < ti->rank; d++) OUT("%s%d", d ? "x" : "", ti->dims[d]);
      OUT("\n");
      /* PyTorch's batch norm keeps a step counter after its running variance; dtrun does not
       * use it (momentum is fixed), and the manifest lists it (offset -1: not stored) so that
       * the names match. */
      if (strstr(ti->suffix, "running_var") != NULL) {
        const size_t cut = strlen(ti->suffix) - strlen("running_var");
        OUT("%s%s%.*snum_batches_tracked\tcount\t-1\t\n", li->name, li->name[0] ? "." : "", (int)cut, ti->suffix);
      }
    }
  }
#undef OUT
  return used;
}
