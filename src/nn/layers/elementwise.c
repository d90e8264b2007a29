/* The layers without tensors that keep their input's shape or only flatten it: relu, dropout,
 * flatten. */
#include "layer_impl.h"

static const dt_key no_keys[] = {{0}};
static const dt_key dropout_keys[] = {
    {.name = "p", .type = DT_KEY_FLOAT, .offset = LOFF(p), .min = 0, .max = 0.999999, .flags = DT_KEY_REQUIRED,
     .help = "probability of zeroing an element"},
    {0},
};

static dt_status build_dropout(dt_layer_build *b) {
  LAYER_CHECK(b, b->spec->p >= 0.0 && b->spec->p < 1.0, "p must lie in [0, 1), found %g", b->spec->p);
  b->info->p = (float)b->spec->p;
  return dt_layer_build_same(b);
}

static dt_status build_flatten(dt_layer_build *b) {
  const size_t n = (size_t)b->in.c * b->in.h * b->in.w;
  LAYER_CHECK(b, n <= DT_MAX_ACTIVATION, "its input, %dx%dx%d, is more than %d floats per sample", b->in.c, b->in.h, b->in.w,
              DT_MAX_ACTIVATION);
  b->out = (dt_act_shape){.c = (int)n, .h = 1, .w = 1, .flat = 1};
  return DT_OK;
}

const dt_layer_def dt_layer_relu = {.name = "relu", .help = "max(x, 0)", .keys = no_keys, .build = dt_layer_build_same,
                                    .flops = dt_layer_flops_elementwise};
const dt_layer_def dt_layer_dropout = {.name = "dropout", .help = "inverted dropout in train mode", .keys = dropout_keys,
                                       .build = build_dropout, .flops = dt_layer_flops_elementwise};
const dt_layer_def dt_layer_flatten = {.name = "flatten", .help = "C×H×W to a vector", .keys = no_keys, .build = build_flatten,
                                       .flops = dt_layer_flops_none};
