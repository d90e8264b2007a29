/* residual: a block of layers (its `layers:` list) whose output is added to the block's input.
 * The skip is the identity when the block keeps the shape; otherwise a 1×1 convolution without
 * bias at the stride that matches the block's output size, followed by the block's first
 * normalisation layer's kind (batchnorm2d or groupnorm with the same groups; none when the block
 * has none) — He et al.'s projection shortcut (option B), torchvision's `downsample`. The model
 * places an internal residual_end entry after the block: it computes the skip and the sum, and
 * holds the projection's tensors. */
#include "layer_impl.h"

static const dt_key keys[] = {
    {.name = "layers", .type = DT_KEY_SPECIAL, .flags = DT_KEY_REQUIRED, .help = "the block: a list of layers"},
    LAYER_NAME_KEY,
    {0},
};

static dt_status build_begin(dt_layer_build *b) {
  LAYER_CHECK(b, b->spec->children >= 1, "needs a non-empty `layers:` block");
  b->out = b->in;
  return DT_OK;
}

/* The block's first normalisation layer, or NULL. */
static const dt_layer_info *first_norm(const dt_layer_build *b, int begin) {
  for (int l = begin + 1; l < b->index; l++) {
    const dt_layer_info *li = &b->all[l];
    if (li->kind == DT_LAYER_BATCHNORM2D || li->kind == DT_LAYER_GROUPNORM) return li;
  }
  return NULL;
}

static dt_status build_end(dt_layer_build *b) {
  dt_layer_info *li = b->info;
  const dt_layer_info *begin = &b->all[li->pair];
  const dt_act_shape in = {.c = begin->in_c, .h = begin->in_h, .w = begin->in_w}, out = b->in;
  b->out = out;
  LAYER_CHECK(b, !out.flat, "its block flattens; a block must end with a C×H×W activation");
  if (in.c == out.c && in.h == out.h && in.w == out.w) return DT_OK; /* identity */
  int stride = 0;
  for (int s = 1; s <= in.h && stride == 0; s++)
    if ((in.h - 1) / s + 1 == out.h && (in.w - 1) / s + 1 == out.w) stride = s;
  DT_CHECK(stride > 0, DT_ERR_CONFIG, "model layer %s (residual): its block maps %dx%dx%d to %dx%dx%d, which no 1x1 "
           "projection with a stride gives", b->where, in.c, in.h, in.w, out.c, out.h, out.w);
  li->projection = 1;
  DT_TRY(dt_layer_conv_shape(b, &in, out.c, 1, stride, 0, b->where, &li->conv));
  const int dims[4] = {out.c, in.c, 1, 1};
  dt_layer_tensor(b, "downsample.0.weight", DT_TENSOR_PARAM, DT_INIT_UNIFORM, 4, dims);
  const dt_layer_info *n = first_norm(b, li->pair);
  li->norm.kind = DT_LAYER_KIND_COUNT;
  if (n != NULL)
    dt_layer_norm_tensors(b, "downsample.1.", n->kind, out.c, (size_t)out.h * out.w, n->norm.groups, n->norm.eps, n->norm.momentum, &li->norm);
  return DT_OK;
}

static double flops_end(const dt_layer_info *li) {
  double f = (double)li->out_size; /* the sum */
  if (li->projection) f += 2.0 * li->conv.f * li->conv.c * li->conv.oh * li->conv.ow;
  if (li->projection && li->norm.kind != DT_LAYER_KIND_COUNT) f += 4.0 * (double)li->out_size;
  return f;
}

static const dt_key no_keys[] = {{0}};
const dt_layer_def dt_layer_residual = {.name = "residual", .help = "a block with a skip connection", .keys = keys,
                                        .build = build_begin, .flops = dt_layer_flops_none};
const dt_layer_def dt_layer_residual_end = {.name = "residual_end", .help = "the skip and the sum (internal)", .keys = no_keys,
                                            .internal = 1, .build = build_end, .flops = flops_end};
