/* The pooling layers: maxpool2d and avgpool2d (kernel_size, stride; no padding, floor mode) and
 * global_avgpool (each channel's mean, C×1×1). */
#include "layer_impl.h"

static const dt_key keys[] = {
    {.name = "kernel_size", .type = DT_KEY_INT, .offset = LOFF(kernel_size), .min = 1, .max = 1024, .flags = DT_KEY_REQUIRED,
     .help = "window size"},
    {.name = "stride", .type = DT_KEY_INT, .offset = LOFF(stride), .def = "0", .min = 0, .max = 1024,
     .help = "step (default: kernel_size)"},
    {0},
};

static dt_status build(dt_layer_build *b) {
  const dt_layer_spec *ls = b->spec;
  const int c = b->in.c, h = b->in.h, w = b->in.w;
  LAYER_CHECK(b, !b->in.flat, "comes after flatten");
  const int stride = ls->stride > 0 ? ls->stride : ls->kernel_size;
  DT_CHECK(ls->kernel_size >= 1 && ls->kernel_size <= h && ls->kernel_size <= w, DT_ERR_CONFIG,
           "model layer %s (%s): kernel_size %d does not fit its %dx%d input", b->where, dt_layer_kind_name(ls->kind),
           ls->kernel_size, h, w);
  const int oh = (h - ls->kernel_size) / stride + 1, ow = (w - ls->kernel_size) / stride + 1;
  b->info->pool = (dt_pool_shape){.c = c, .h = h, .w = w, .k = ls->kernel_size, .stride = stride, .oh = oh, .ow = ow};
  b->out = (dt_act_shape){.c = c, .h = oh, .w = ow};
  return DT_OK;
}

static double flops(const dt_layer_info *li) {
  const dt_pool_shape *s = &li->pool;
  return (double)s->c * s->oh * s->ow * s->k * s->k;
}

const dt_layer_def dt_layer_maxpool2d = {.name = "maxpool2d", .help = "max pooling", .keys = keys, .build = build, .flops = flops};
const dt_layer_def dt_layer_avgpool2d = {.name = "avgpool2d", .help = "average pooling", .keys = keys, .build = build, .flops = flops};

static dt_status build_global(dt_layer_build *b) {
  LAYER_CHECK(b, !b->in.flat, "comes after flatten");
  b->info->pool = (dt_pool_shape){.c = b->in.c, .h = b->in.h, .w = b->in.w, .k = 0, .stride = 1, .oh = 1, .ow = 1};
  b->out = (dt_act_shape){.c = b->in.c, .h = 1, .w = 1};
  return DT_OK;
}

static double flops_global(const dt_layer_info *li) { return (double)li->in_size; }

static const dt_key no_keys[] = {{0}};
const dt_layer_def dt_layer_global_avgpool = {.name = "global_avgpool", .help = "each channel's mean (C×1×1)", .keys = no_keys,
                                              .build = build_global, .flops = flops_global};
