/* Normalisation layers, with affine parameters (weight 1, bias 0 at the start, as PyTorch):
 * batchnorm2d (train: the batch's statistics per channel, and running mean and variance moved
 * by `momentum`; eval: the running statistics) and groupnorm (each sample's statistics over its
 * channel groups, the same in train and eval). */
#include "layer_impl.h"

static const dt_key bn_keys[] = {
    LAYER_EPS_KEY,
    {.name = "momentum", .type = DT_KEY_FLOAT, .offset = LOFF(momentum), .def = "0.1", .min = 0, .max = 1,
     .flags = DT_KEY_EMIT_IF_SET | DT_KEY_MIN_OPEN, .help = "running-statistics update: r = (1 - momentum)·r + momentum·batch"},
    LAYER_NAME_KEY,
    {0},
};

static const dt_key gn_keys[] = {
    {.name = "groups", .type = DT_KEY_INT, .offset = LOFF(groups), .min = 1, .max = 65536, .flags = DT_KEY_REQUIRED,
     .help = "channel groups (dividing the channels)"},
    LAYER_EPS_KEY,
    LAYER_NAME_KEY,
    {0},
};

static dt_status build(dt_layer_build *b) {
  const dt_layer_spec *ls = b->spec;
  LAYER_CHECK(b, !b->in.flat, "comes after flatten; it normalises C×H×W activations");
  const int groups = ls->kind == DT_LAYER_GROUPNORM ? ls->groups : 1;
  LAYER_CHECK(b, groups >= 1 && b->in.c % groups == 0, "groups %d does not divide its %d channels", groups, b->in.c);
  dt_layer_norm_tensors(b, "", ls->kind, b->in.c, (size_t)b->in.h * b->in.w, groups, (float)ls->eps, (float)ls->momentum,
                        &b->info->norm);
  return dt_layer_build_same(b);
}

static double flops(const dt_layer_info *li) { return 4.0 * (double)li->out_size; }

const dt_layer_def dt_layer_batchnorm2d = {.name = "batchnorm2d", .help = "batch normalisation over N×H×W per channel",
                                           .keys = bn_keys, .build = build, .flops = flops};
const dt_layer_def dt_layer_groupnorm = {.name = "groupnorm", .help = "group normalisation over (C/G)×H×W per sample",
                                         .keys = gn_keys, .build = build, .flops = flops};
