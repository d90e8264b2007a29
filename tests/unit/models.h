/* Model specs shared by tests and benchmarks. */
#ifndef DT_TEST_MODELS_H
#define DT_TEST_MODELS_H

#include <string.h>

#include "dt/nn.h"

/* The larger CNN of the benchmarks: conv(1→32, 3×3) → relu → conv(32→64, 3×3) → relu →
 * maxpool 2 → flatten → linear(9216→128) → relu → linear(→10); 1,199,882 parameters. */
static inline void large_cnn(dt_model_spec *s) {
  memset(s, 0, sizeof *s);
  *s = (dt_model_spec){.in_channels = 1, .in_height = 28, .in_width = 28, .num_classes = 10, .num_layers = 9};
  s->layers[0] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 32, .kernel_size = 3, .stride = 1};
  s->layers[1] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[2] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 64, .kernel_size = 3, .stride = 1};
  s->layers[3] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[4] = (dt_layer_spec){.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2};
  s->layers[5] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s->layers[6] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 128};
  s->layers[7] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s->layers[8] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 10};
}

#endif
