/* conv2d: out_channels filters of kernel_size², stride and zero padding, with or without bias;
 * weight f×c×k×k (PyTorch's layout), Kaiming-uniform as PyTorch initialises it. */
#include "layer_impl.h"

static const dt_key keys[] = {
    {.name = "out_channels", .type = DT_KEY_INT, .offset = LOFF(out_channels), .min = 1, .max = 65536, .flags = DT_KEY_REQUIRED,
     .help = "filters"},
    {.name = "kernel_size", .type = DT_KEY_INT, .offset = LOFF(kernel_size), .min = 1, .max = 1024, .flags = DT_KEY_REQUIRED,
     .help = "window size"},
    {.name = "stride", .type = DT_KEY_INT, .offset = LOFF(stride), .def = "1", .min = 1, .max = 1024, .help = "step"},
    {.name = "padding", .type = DT_KEY_INT, .offset = LOFF(padding), .def = "0", .min = 0, .max = 1024, .help = "zero padding"},
    LAYER_BIAS_KEY,
    LAYER_NAME_KEY,
    {0},
};

static dt_status build(dt_layer_build *b) {
  const dt_layer_spec *ls = b->spec;
  dt_layer_info *li = b->info;
  LAYER_CHECK(b, !b->in.flat, "comes after flatten");
  LAYER_CHECK(b, ls->out_channels >= 1 && ls->kernel_size >= 1 && ls->stride >= 1 && ls->padding >= 0,
              "needs out_channels >= 1, kernel_size >= 1, stride >= 1 and padding >= 0");
  DT_TRY(dt_layer_conv_shape(b, &b->in, ls->out_channels, ls->kernel_size, ls->stride, ls->padding, b->where, &li->conv));
  const int dims[4] = {ls->out_channels, b->in.c, ls->kernel_size, ls->kernel_size};
  dt_layer_tensor(b, "weight", DT_TENSOR_PARAM, DT_INIT_UNIFORM, 4, dims);
  if (!ls->no_bias) dt_layer_tensor(b, "bias", DT_TENSOR_PARAM, DT_INIT_UNIFORM, 1, dims);
  b->out = (dt_act_shape){.c = ls->out_channels, .h = li->conv.oh, .w = li->conv.ow};
  return DT_OK;
}

static double flops(const dt_layer_info *li) {
  const dt_conv_shape *s = &li->conv;
  return 2.0 * s->f * s->c * s->k * s->k * s->oh * s->ow;
}

const dt_layer_def dt_layer_conv2d = {.name = "conv2d", .help = "2-D convolution", .keys = keys, .build = build, .flops = flops};
