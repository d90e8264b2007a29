/* linear: out_features outputs from a flat input (or a 1×1 one), weight out×in. */
#include "layer_impl.h"

static const dt_key keys[] = {
    {.name = "out_features", .type = DT_KEY_INT, .offset = LOFF(out_features), .min = 1, .max = 1 << 24, .flags = DT_KEY_REQUIRED,
     .help = "outputs"},
    LAYER_BIAS_KEY,
    LAYER_NAME_KEY,
    {0},
};

static dt_status build(dt_layer_build *b) {
  const dt_layer_spec *ls = b->spec;
  const dt_act_shape *s = &b->in;
  DT_CHECK(s->flat || (s->h == 1 && s->w == 1), DT_ERR_CONFIG,
           "model layer %s (linear) receives a %dx%dx%d input; put a flatten layer before it", b->where, s->c, s->h, s->w);
  LAYER_CHECK(b, ls->out_features >= 1, "needs out_features >= 1");
  const int dims[2] = {ls->out_features, s->c};
  dt_layer_tensor(b, "weight", DT_TENSOR_PARAM, DT_INIT_UNIFORM, 2, dims);
  if (!ls->no_bias) dt_layer_tensor(b, "bias", DT_TENSOR_PARAM, DT_INIT_UNIFORM, 1, dims);
  b->out = (dt_act_shape){.c = ls->out_features, .h = 1, .w = 1, .flat = s->flat};
  return DT_OK;
}

static double flops(const dt_layer_info *li) { return 2.0 * (double)li->in_size * (double)li->out_size; }

const dt_layer_def dt_layer_linear = {.name = "linear", .help = "fully connected", .keys = keys, .build = build, .flops = flops};
