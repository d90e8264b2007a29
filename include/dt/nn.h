/* Neural networks built from a layer list (the types of DT_LAYER_LIST: convolutions, pooling,
 * linear layers, activations, dropout, batch and group normalisation, residual blocks), closed by
 * log-softmax with the NLL loss.
 *
 * A dt_model is the architecture only: shapes and, per layer, its tensors' offsets in TWO
 * contiguous vectors per node: the parameters (trained, exchanged, counted in consensus; the
 * gradient has the same layout) and the buffers (normalisation's running statistics, updated by
 * training steps but not trained), in PyTorch's state_dict order. Every graph node owns its own
 * vectors (a row of a backend slab) and may share the model; scratch memory lives in a
 * dt_workspace in backend memory, so training allocates nothing. The forward/backward here is the
 * CPU backend's per-node executor (src/backend/cpu/net.c), run on its threads; the node-batched
 * calls the rest of dtrun uses are backend ops (dt/backend.h). */
#ifndef DT_NN_H
#define DT_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dt/backend.h"
#include "dt/rng.h"
#include "dt/status.h"

/* The layer types, in one list: each row names the type (enum suffix, config name). A type's
 * definition (config keys and checks, output shape, parameter and buffer tensors with their
 * initialisation, FLOPs) is `dt_layer_<name>` in src/nn/layers/<name>.c; each backend's forward
 * and backward for it is in that backend's own file per type (src/backend/cpu/layer_<name>.c).
 * A new type is one row here, one file per level, and the meson lines that compile them; a
 * backend without the type's file does not link. The config types are DT_LAYER_CONFIG_LIST's;
 * residual_end is internal: the end of a residual block (the skip path and the sum), placed
 * after the block's layers by the model. */
#define DT_LAYER_CONFIG_LIST(X)                                                                           \
  X(CONV2D, conv2d) X(MAXPOOL2D, maxpool2d) X(LINEAR, linear) X(RELU, relu) X(FLATTEN, flatten)           \
  X(DROPOUT, dropout) X(BATCHNORM2D, batchnorm2d) X(GROUPNORM, groupnorm) X(AVGPOOL2D, avgpool2d)         \
  X(GLOBAL_AVGPOOL, global_avgpool) X(RESIDUAL, residual)
#define DT_LAYER_LIST(X) DT_LAYER_CONFIG_LIST(X) X(RESIDUAL_END, residual_end)

typedef enum dt_layer_kind {
#define DT_LAYER_ENUM(upper, lower) DT_LAYER_##upper,
  DT_LAYER_LIST(DT_LAYER_ENUM)
#undef DT_LAYER_ENUM
  DT_LAYER_KIND_COUNT
} dt_layer_kind;

const char *dt_layer_kind_name(dt_layer_kind k);

/* One entry of a model's layer list, as the config gives it (unused fields 0). A residual entry
 * is followed by its block: the next `children` entries, in order (nested blocks included). */
typedef struct dt_layer_spec {
  dt_layer_kind kind;
  int out_channels; /* conv2d */
  int kernel_size;  /* conv2d, maxpool2d, avgpool2d */
  int stride;       /* conv2d (default 1), maxpool2d and avgpool2d (0 = kernel_size) */
  int padding;      /* conv2d */
  int out_features; /* linear */
  int no_bias;      /* conv2d, linear: 1 = no bias term (config `bias: false`) */
  int groups;       /* groupnorm: number of groups */
  int children;     /* residual: entries in its block, nested blocks' entries included */
  double p;         /* dropout probability */
  double eps;       /* batchnorm2d, groupnorm: 0 = PyTorch's 1e-5 */
  double momentum;  /* batchnorm2d: running-statistics momentum, 0 = PyTorch's 0.1 */
  char name[32];    /* the module name in the saved model's manifest ("" = by position) */
} dt_layer_spec;

/* Entries of a layer list (nested blocks' entries included), of a compiled model (each residual
 * block adds its residual_end), and tensors per compiled layer. */
enum { DT_MAX_LAYERS = 128, DT_MAX_COMPILED = 2 * DT_MAX_LAYERS, DT_LAYER_MAX_TENSORS = 6 };
/* The largest activation per sample (floats: shapes are 32-bit ints) and the largest parameter
 * (or buffer) vector of a node, 2^36 floats (256 GiB): counts beyond are refused as config errors
 * before anything is sized from them (no product of shapes can wrap). */
#define DT_MAX_ACTIVATION 2147483647
#define DT_MAX_PARAMS ((size_t)1 << 36)

typedef struct dt_model_spec {
  int in_channels, in_height, in_width; /* e.g. 1 x 28 x 28 */
  int num_classes;                      /* the last linear layer's width */
  int num_layers;
  dt_layer_spec layers[DT_MAX_LAYERS];
} dt_model_spec;

/* The seed reference's CNN: conv(1→F, k×k) → relu → maxpool 2 → flatten → linear(→H) → relu →
 * linear(→10); 28,440 parameters for F=3, k=5, H=64 on 28×28 inputs. */
void dt_model_spec_seed_cnn(dt_model_spec *spec, int num_filters, int kernel_size,
                            int linear_width);

/* LeNet-5 as the CIFAR literature uses it: conv(C→6, 5×5) → relu → maxpool 2 → conv(6→16, 5×5)
 * → relu → maxpool 2 → flatten → linear(→120) → relu → linear(→84) → relu → linear(→classes);
 * 62,006 parameters on 3×32×32 inputs with 10 classes. */
void dt_model_spec_lenet5(dt_model_spec *spec, int in_c, int in_h, int in_w, int classes);

/* Models by name (src/nn/zoo.c; README "Models"), with the norm after each convolution. */
typedef enum dt_model_name { DT_MODEL_DEFAULT = 0, DT_MODEL_RESNET20, DT_MODEL_VGG11, DT_MODEL_LENET5, DT_MODEL_MLP } dt_model_name;
typedef enum dt_model_norm { DT_NORM_BATCH = 0, DT_NORM_GROUP, DT_NORM_NONE } dt_model_norm;
extern const char *const dt_model_names[]; /* by dt_model_name, NULL-terminated */
extern const char *const dt_model_norms[]; /* by dt_model_norm */
/* resnet20, vgg11, lenet5 or mlp (width: its hidden layer) on C×H×W inputs; groups: groupnorm's. */
void dt_model_spec_named(dt_model_spec *spec, dt_model_name name, dt_model_norm norm, int groups, int width, int in_c, int in_h,
                         int in_w, int classes);

typedef struct dt_workspace dt_workspace;

/* Normalisation as a layer (batchnorm2d, groupnorm) or a residual projection applies it: kind
 * DT_LAYER_BATCHNORM2D, DT_LAYER_GROUPNORM, or DT_LAYER_KIND_COUNT for none; c channels of
 * plane = h·w; gamma and beta at w_off and b_off of the parameters, running mean and variance at
 * buf_off and buf_off + c of the buffers (batchnorm2d). */
typedef struct dt_norm_shape {
  dt_layer_kind kind;
  int c, groups;
  size_t plane;
  float eps, momentum;
  size_t w_off, b_off, buf_off;
} dt_norm_shape;

/* A tensor of the model state: a parameter (trained, exchanged) or a buffer (running
 * statistics: kept, saved, not trained), with its PyTorch name and shape. */
typedef enum dt_tensor_role { DT_TENSOR_PARAM = 0, DT_TENSOR_BUFFER } dt_tensor_role;
typedef enum dt_tensor_init { DT_INIT_UNIFORM = 0, DT_INIT_ONES, DT_INIT_ZEROS } dt_tensor_init;
typedef struct dt_tensor_info {
  char suffix[32];    /* "weight", "bias", "running_mean", "downsample.1.weight", ... */
  dt_tensor_role role;
  dt_tensor_init init; /* DT_INIT_UNIFORM: U(±1/√fan_in) from stream (seed, DT_RNG_INIT, 2·layer + the
                          tensor's place among the layer's uniform tensors) */
  size_t off, n;       /* in the parameter or the buffer vector */
  int fan_in;          /* DT_INIT_UNIFORM: the bound is 1/√fan_in */
  int rank, dims[4];
} dt_tensor_info;

/* One layer as the backends' executors see it (the model's compiled list: a residual entry is
 * followed by its block and then a residual_end entry). */
typedef struct dt_layer_info {
  dt_layer_kind kind;
  float p;                        /* dropout */
  int in_c, in_h, in_w, out_c, out_h, out_w;
  size_t in_size, out_size;       /* floats per sample */
  size_t w_off, n_w, b_off, n_b;  /* the first two parameter tensors (weight, bias; n_b 0: none) */
  size_t buf_off, n_buf;          /* buffers */
  dt_conv_shape conv;             /* conv2d; residual_end: its 1×1 projection */
  dt_pool_shape pool;             /* maxpool2d, avgpool2d, global_avgpool */
  dt_norm_shape norm;             /* batchnorm2d, groupnorm; residual_end: the projection's */
  int pair;                       /* residual ↔ residual_end: the other end's index */
  int projection;                 /* residual_end: 1 = 1×1 conv (+ norm) skip, 0 = identity */
  int ntensors;
  dt_tensor_info tensors[DT_LAYER_MAX_TENSORS];
  char key[96];                   /* its config entry, "experiment.model.layers[3].layers[0]" */
  char name[64];                  /* its module path in the manifest ("layer1.0.conv1", "3") */
} dt_layer_info;

/* A layer type's definition (src/nn/layers/<name>.c). build checks layer *b->spec on the input
 * shape and fills b->info's shapes and sizes, registering tensors with dt_layer_tensor; the
 * output shape is left in b->out. */
typedef struct dt_layer_build dt_layer_build;
struct dt_key;
typedef struct dt_layer_def {
  const char *name;
  const char *help;
  const struct dt_key *keys; /* the config keys it takes besides `type`, ended by {0}; required ones
                                flagged DT_KEY_REQUIRED */
  int internal;              /* not a config type */
  dt_status (*build)(dt_layer_build *b);
  double (*flops)(const dt_layer_info *li); /* forward multiply-adds ×2 per sample */
} dt_layer_def;

#define DT_LAYER_DEF_DECLARE(upper, lower) extern const dt_layer_def dt_layer_##lower;
DT_LAYER_LIST(DT_LAYER_DEF_DECLARE)
#undef DT_LAYER_DEF_DECLARE
/* By kind; and by config name (NULL: none, or internal). */
const dt_layer_def *dt_layer_def_of(dt_layer_kind k);
const dt_layer_def *dt_layer_def_named(const char *name);

/* The activation between layers while a model is built: channels, height, width, and whether
 * it has been flattened. */
typedef struct dt_act_shape {
  int c, h, w, flat;
} dt_act_shape;

struct dt_layer_build {
  const dt_layer_spec *spec;
  dt_layer_info *info;
  dt_act_shape in, out;
  int index;        /* in the compiled list */
  const char *where; /* its position for messages: "3", or "3.1" inside a block */
  size_t col_size;  /* floats of the im2col scratch the layer needs (a convolution sets it: c·k·k·(oh·ow + f)) */
  size_t *param_off, *buf_off;
  const dt_layer_info *all; /* the compiled list so far (residual_end reads its block) */
};

/* Adds a tensor to the layer being built: dims (rank ≤ 4) give its shape; returns its offset. */
size_t dt_layer_tensor(dt_layer_build *b, const char *suffix, dt_tensor_role role, dt_tensor_init init, int rank,
                       const int *dims);
/* A conv2d's geometry on input shape in (shared with residual_end's projection): fills *out and
 * raises b->col_size to its im2col matrix; DT_ERR_CONFIG when it does not fit. */
DT_MUST_USE dt_status dt_layer_conv_shape(dt_layer_build *b, const dt_act_shape *in, int filters, int k, int stride, int pad, const char *what,
                              dt_conv_shape *out);
/* The CPU backend's choice for a convolution (src/backend/cpu/winograd.c): Winograd F(4×4, 3×3)
 * for 3×3 kernels at stride 1 with padding ≤ 2 and more than 64 taps per filter (smaller ones take
 * the direct loops when unpadded, else im2col); its scratch in floats, which the layer's col_size
 * covers. */
int dt_conv_winograd(const dt_conv_shape *s);
size_t dt_conv_winograd_scratch(const dt_conv_shape *s);
/* Registers a norm's tensors (gamma, beta; running mean and variance for batchnorm2d), their
 * names after prefix ("" or "downsample.1."), and fills *out. */
void dt_layer_norm_tensors(dt_layer_build *b, const char *prefix, dt_layer_kind kind, int c, size_t plane, int groups, float eps, float momentum,
                           dt_norm_shape *out);

/* Checks the layer list against the input shape and builds the offset table. Errors:
 * DT_ERR_CONFIG naming the layer (e.g. a kernel larger than its input, a linear layer before
 * flatten, a last layer whose width is not num_classes). */
DT_MUST_USE dt_status dt_model_create(const dt_model_spec *spec, dt_model **out);
void dt_model_free(dt_model *m);

/* Floats of the parameter vector (trained, exchanged) and of the buffer vector (running
 * statistics; 0 for a model without batchnorm2d). */
size_t dt_model_num_params(const dt_model *m);
size_t dt_model_num_buffers(const dt_model *m);
/* Layers of the compiled list (a residual block adds its residual_end entry). */
int dt_model_num_layers(const dt_model *m);
int dt_model_num_classes(const dt_model *m);
/* Scratch sizes an executor needs: the largest activation per sample (floats, the input
 * included) and the largest im2col matrix (floats, 0 without convolutions). */
size_t dt_model_max_activation(const dt_model *m);
size_t dt_model_col_size(const dt_model *m);
const dt_layer_info *dt_model_layer(const dt_model *m, int l);
/* Floats per input sample (C*H*W). */
size_t dt_model_input_size(const dt_model *m);
/* Forward FLOPs per sample (2 per multiply-add; normalisation and pooling counted per element). */
double dt_model_flops(const dt_model *m);
/* One line per layer with its output shape and parameter count, for `dtrun check`. */
void dt_model_describe(const dt_model *m, char *buf, size_t size);

/* PyTorch's default initialisation: conv and linear weights Kaiming-uniform (a = √5), biases
 * uniform in ±1/√fan_in — both reduce to U(−1/√fan_in, 1/√fan_in) — drawn from the streams
 * (seed, DT_RNG_INIT, 2·layer) for weights and (seed, DT_RNG_INIT, 2·layer+1) for biases;
 * normalisation weights 1 and biases 0. */
void dt_model_init_params(const dt_model *m, uint64_t seed, float *params);
/* Buffers as PyTorch starts them: running means 0, running variances 1. */
void dt_model_init_buffers(const dt_model *m, float *buffers);

/* The saved model's manifest: every tensor, parameters and buffers, in PyTorch's state_dict
 * order for the same architecture, as tab-separated lines "name role offset shape" after a
 * header line (role param or buffer; offset into a saved row, the parameters followed by the
 * buffers; shape d0xd1...; batch norm's num_batches_tracked as role count, offset -1, not
 * stored). Returns the length it needed, as snprintf (buf may be NULL with size 0). */
size_t dt_model_manifest(const dt_model *m, char *buf, size_t size);
/* Initial weights from a file (experiment.model.init_file, whose position errors take from key):
 * a .npz of named tensors (a PyTorch state_dict saved with numpy.savez) or a models file that
 * save_models wrote (<problem>_models.npy with the manifest <problem>_models.tsv beside it; its
 * row `row`, one node's model). Every parameter and buffer of the model must be there under its
 * manifest name with its shape, finite, and nothing else (PyTorch's num_batches_tracked
 * excepted); float64 values are rounded to float32. Fills params, buffers (NULL without
 * buffers) and the SHA-256 of the file's bytes. */
DT_MUST_USE dt_status dt_model_init_from_file(const dt_model *m, const char *path, int row, const char *key, float *params,
                                              float *buffers, char sha256[65]);
/* The layer list of spec as JSON: one object per layer with its type and the keys it sets
 * (out_channels, kernel_size, stride, padding, out_features, groups, bias, p, eps, momentum; a
 * residual block's own list as "layers"), what tests/unit/torch_layers.py builds torch.nn
 * modules from. Returns the length it needed, as snprintf. */
size_t dt_model_spec_json(const dt_model_spec *spec, char *buf, size_t size);
/* The spec m was made from. */
const dt_model_spec *dt_model_spec_of(const dt_model *m);

/* Scratch in be's memory for batches of up to max_batch samples. One per thread. */
DT_MUST_USE dt_status dt_workspace_create(dt_backend *be, const dt_model *m, int max_batch, dt_workspace **out);
/* The same for evaluation and logits only (no training step): layers' outputs share buffers once
 * nothing reads them any more, so it holds a few activations instead of every layer's. */
DT_MUST_USE dt_status dt_workspace_create_eval(dt_backend *be, const dt_model *m, int max_batch, dt_workspace **out);
void dt_workspace_free(dt_backend *be, dt_workspace *ws);
/* The bytes dt_workspace_create (or, with eval, dt_workspace_create_eval) allocates on the CPU
 * backend for this model and batch, counted without allocating (the memory estimate). */
size_t dt_workspace_bytes(const dt_model *m, int max_batch, int eval);
const dt_model *dt_workspace_model(const dt_workspace *ws);

/* One training step's worth of math, in train mode: forward on x (batch × input_size floats)
 * with labels y, mean NLL loss into *loss, and its gradient with respect to params written (not
 * added) to grad. Normalisation uses the batch's statistics and moves the running statistics in
 * buffers (may be NULL for a model without buffers). dropout draws from `dropout_rng` (may be
 * NULL: no dropout). batch must not exceed the workspace's max_batch. */
DT_MUST_USE dt_status dt_model_forward_backward(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                                    float *buffers, const float *x, const int32_t *y, int batch, float *grad,
                                    float *loss, dt_rng *dropout_rng);

/* Forward only, in eval mode (dropout off, running statistics) over n samples: adds the summed
 * NLL to *loss_sum and the number of correct top-1 predictions to *correct. x holds n samples;
 * processed in workspace-sized chunks. */
DT_MUST_USE dt_status dt_model_evaluate(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                            const float *buffers, const float *x, const int32_t *y, int n, double *loss_sum,
                            long *correct);

/* The logits of n samples in eval mode (n × classes floats into out, backend memory), for
 * cross-checks against other frameworks. */
DT_MUST_USE dt_status dt_model_logits(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                          const float *buffers, const float *x, int n, float *out);

#endif
