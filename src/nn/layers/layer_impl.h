/* What the layer definitions (src/nn/layers/<name>.c) share: their key rows and messages. */
#ifndef DT_NN_LAYER_IMPL_H
#define DT_NN_LAYER_IMPL_H

#include <stddef.h>

#include "dt/config.h"
#include "dt/nn.h"

#define LOFF(field) offsetof(dt_layer_spec, field)

/* bias: true|false, read into no_bias (0 = true) */
extern const char *const dt_layer_bias_values[];
#define LAYER_BIAS_KEY                                                                                    \
  {.name = "bias", .type = DT_KEY_ENUM, .offset = LOFF(no_bias), .def = "true", .values = dt_layer_bias_values, \
   .flags = DT_KEY_EMIT_IF_SET, .help = "with a bias term (true) or without (false)"}
#define LAYER_NAME_KEY                                                                                    \
  {.name = "name", .type = DT_KEY_STRING, .offset = LOFF(name), .size = sizeof(((dt_layer_spec *)0)->name), \
   .def = "", .flags = DT_KEY_EMIT_IF_SET, .help = "its module name in the saved model's manifest (default: its position)"}
#define LAYER_EPS_KEY                                                                                     \
  {.name = "eps", .type = DT_KEY_FLOAT, .offset = LOFF(eps), .def = "1e-05", .min = 0, .max = 1,            \
   .flags = DT_KEY_EMIT_IF_SET | DT_KEY_MIN_OPEN, .help = "added to the variance"}

/* A config error about the layer being built: "model layer 3 (conv2d): ..." */
#define LAYER_CHECK(b, cond, ...) \
  DT_CHECK(cond, DT_ERR_CONFIG, "model layer %s (%s): %s", (b)->where, dt_layer_kind_name((b)->spec->kind), \
           dt_layer_msg(__VA_ARGS__))

/* printf into a per-thread buffer, for LAYER_CHECK's message */
const char *dt_layer_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A layer that keeps its input's shape and has no tensors (relu, dropout). */
DT_MUST_USE dt_status dt_layer_build_same(dt_layer_build *b);
/* Forward FLOPs of an elementwise layer: one per output element. */
double dt_layer_flops_elementwise(const dt_layer_info *li);
double dt_layer_flops_none(const dt_layer_info *li);

#endif
