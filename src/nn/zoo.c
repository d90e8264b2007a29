/* Models by name, built from the layer table with PyTorch's module names, so that a saved
 * model's manifest reads as the state_dict of the usual PyTorch definition:
 * - resnet20: He et al.'s CIFAR ResNet (3 stages of 3 basic blocks, 16/32/64 channels), with
 *   torchvision's names (conv1, bn1, layer1.0.conv1, ..., layerN.0.downsample.0/1, fc) and
 *   1×1-projection shortcuts (option B) where the shape changes; 0.27 M parameters;
 * - vgg11: the CIFAR variant (features.N: 3×3 convolutions of 64..512 channels, each followed by
 *   its norm and relu, five 2×2 max pools; classifier: one linear layer on the 512 features);
 * - lenet5 and mlp (fc1, fc2: flatten → linear(width) → relu → linear(classes)).
 * norm: batchnorm2d, groupnorm (with `groups` groups) or none after every convolution. */
#include <stdio.h>
#include <string.h>

#include "dt/nn.h"

typedef struct zoo {
  dt_model_spec *s;
  dt_layer_kind norm;
  int groups;
} zoo;

static dt_layer_spec *add(zoo *z, dt_layer_spec l, const char *name) {
  dt_layer_spec *at = &z->s->layers[z->s->num_layers++];
  *at = l;
  if (name != NULL) snprintf(at->name, sizeof at->name, "%s", name);
  return at;
}

static void add_norm(zoo *z, const char *name) {
  if (z->norm == DT_LAYER_KIND_COUNT) return;
  add(z, (dt_layer_spec){.kind = z->norm, .groups = z->norm == DT_LAYER_GROUPNORM ? z->groups : 0}, name);
}

static void conv3x3(zoo *z, int f, int stride, int bias, const char *name) {
  add(z, (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = f, .kernel_size = 3, .stride = stride, .padding = 1,
                         .no_bias = !bias},
      name);
}

static void basic_block(zoo *z, int f, int stride, const char *name) {
  const int at = z->s->num_layers;
  add(z, (dt_layer_spec){.kind = DT_LAYER_RESIDUAL}, name);
  conv3x3(z, f, stride, 0, "conv1");
  add_norm(z, "bn1");
  add(z, (dt_layer_spec){.kind = DT_LAYER_RELU}, NULL);
  conv3x3(z, f, 1, 0, "conv2");
  add_norm(z, "bn2");
  z->s->layers[at].children = z->s->num_layers - at - 1;
  add(z, (dt_layer_spec){.kind = DT_LAYER_RELU}, NULL);
}

static void resnet20(zoo *z) {
  conv3x3(z, 16, 1, 0, "conv1");
  add_norm(z, "bn1");
  add(z, (dt_layer_spec){.kind = DT_LAYER_RELU}, NULL);
  for (int stage = 0; stage < 3; stage++)
    for (int b = 0; b < 3; b++) {
      char name[32];
      snprintf(name, sizeof name, "layer%d.%d", stage + 1, b);
      basic_block(z, 16 << stage, stage > 0 && b == 0 ? 2 : 1, name);
    }
  add(z, (dt_layer_spec){.kind = DT_LAYER_GLOBAL_AVGPOOL}, NULL);
  add(z, (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 0 /* classes */}, "fc");
}

/* features.N numbered as PyTorch's nn.Sequential numbers them */
static void vgg11(zoo *z) {
  static const int cfg[] = {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0}; /* 0: max pool */
  int index = 0;
  char name[32];
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
    snprintf(name, sizeof name, "features.%d", index++);
    if (cfg[i] == 0) {
      add(z, (dt_layer_spec){.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2, .stride = 2}, name);
      continue;
    }
    conv3x3(z, cfg[i], 1, 1, name);
    if (z->norm != DT_LAYER_KIND_COUNT) {
      snprintf(name, sizeof name, "features.%d", index++);
      add_norm(z, name);
    }
    snprintf(name, sizeof name, "features.%d", index++);
    add(z, (dt_layer_spec){.kind = DT_LAYER_RELU}, name);
  }
  add(z, (dt_layer_spec){.kind = DT_LAYER_FLATTEN}, NULL);
  add(z, (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 0}, "classifier");
}

static void mlp(zoo *z, int width) {
  add(z, (dt_layer_spec){.kind = DT_LAYER_FLATTEN}, NULL);
  add(z, (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = width}, "fc1");
  add(z, (dt_layer_spec){.kind = DT_LAYER_RELU}, NULL);
  add(z, (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 0}, "fc2");
}

const char *const dt_model_names[] = {"default", "resnet20", "vgg11", "lenet5", "mlp", NULL};
const char *const dt_model_norms[] = {"batch", "group", "none", NULL};

void dt_model_spec_named(dt_model_spec *spec, dt_model_name name, dt_model_norm norm, int groups, int width, int in_c, int in_h,
                         int in_w, int classes) {
  if (name == DT_MODEL_LENET5) {
    dt_model_spec_lenet5(spec, in_c, in_h, in_w, classes);
    return;
  }
  memset(spec, 0, sizeof *spec);
  *spec = (dt_model_spec){.in_channels = in_c, .in_height = in_h, .in_width = in_w, .num_classes = classes};
  zoo z = {.s = spec, .groups = groups,
           .norm = norm == DT_NORM_BATCH ? DT_LAYER_BATCHNORM2D : norm == DT_NORM_GROUP ? DT_LAYER_GROUPNORM : DT_LAYER_KIND_COUNT};
  if (name == DT_MODEL_RESNET20) resnet20(&z);
  else if (name == DT_MODEL_VGG11) vgg11(&z);
  else mlp(&z, width);
  spec->layers[spec->num_layers - 1].out_features = classes;
}
