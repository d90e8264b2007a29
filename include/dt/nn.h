/* Neural networks built from a layer list: conv2d, maxpool2d, linear, relu, flatten, dropout,
 * closed by log-softmax with the NLL loss.
 *
 * A dt_model is the architecture only: shapes and a per-layer offset table into ONE contiguous
 * parameter vector (and a gradient vector of the same layout), in PyTorch's parameter order.
 * Every graph node owns its own vectors (a row of a backend slab) and may share the model;
 * scratch memory lives in a dt_workspace in backend memory, so training allocates nothing.
 * The forward/backward here is the CPU backend's per-node executor (src/backend/cpu/net.c), run
 * on its threads; the node-batched calls the rest of dtrun uses are backend ops (dt/backend.h). */
#ifndef DT_NN_H
#define DT_NN_H

#include <stddef.h>
#include <stdint.h>

#include "dt/backend.h"
#include "dt/rng.h"
#include "dt/status.h"

typedef enum dt_layer_kind {
  DT_LAYER_CONV2D = 0,
  DT_LAYER_MAXPOOL2D,
  DT_LAYER_LINEAR,
  DT_LAYER_RELU,
  DT_LAYER_FLATTEN,
  DT_LAYER_DROPOUT,
  DT_LAYER_KIND_COUNT
} dt_layer_kind;

const char *dt_layer_kind_name(dt_layer_kind k);

typedef struct dt_layer_spec {
  dt_layer_kind kind;
  int out_channels; /* conv2d */
  int kernel_size;  /* conv2d, maxpool2d */
  int stride;       /* conv2d (default 1), maxpool2d (0 = kernel_size) */
  int padding;      /* conv2d */
  int out_features; /* linear */
  float p;          /* dropout probability */
} dt_layer_spec;

enum { DT_MAX_LAYERS = 32 };

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

typedef struct dt_workspace dt_workspace;

/* One layer as a backend's own executor sees it (a device backend batches nodes per layer). */
typedef struct dt_layer_info {
  dt_layer_kind kind;
  float p;                        /* dropout */
  size_t in_size, out_size;       /* floats per sample */
  size_t w_off, n_w, b_off, n_b;  /* weights and bias in the parameter vector */
  dt_conv_shape conv;             /* conv2d */
  dt_pool_shape pool;             /* maxpool2d */
} dt_layer_info;

/* Checks the layer list against the input shape and builds the offset table. Errors:
 * DT_ERR_CONFIG naming the layer (e.g. a kernel larger than its input, a linear layer before
 * flatten, a last layer whose width is not num_classes). */
DT_MUST_USE dt_status dt_model_create(const dt_model_spec *spec, dt_model **out);
void dt_model_free(dt_model *m);

size_t dt_model_num_params(const dt_model *m);
int dt_model_num_layers(const dt_model *m);
int dt_model_num_classes(const dt_model *m);
/* Scratch sizes an executor needs: the largest activation per sample (floats, the input
 * included) and the largest im2col matrix (floats, 0 without convolutions). */
size_t dt_model_max_activation(const dt_model *m);
size_t dt_model_col_size(const dt_model *m);
dt_layer_info dt_model_layer(const dt_model *m, int l);
/* Floats per input sample (C*H*W). */
size_t dt_model_input_size(const dt_model *m);
/* One line per layer with its output shape and parameter count, for `dtrun check`. */
void dt_model_describe(const dt_model *m, char *buf, size_t size);

/* PyTorch's default initialisation: weights Kaiming-uniform (a = √5), biases uniform in
 * ±1/√fan_in — both reduce to U(−1/√fan_in, 1/√fan_in) — drawn from the streams
 * (seed, DT_RNG_INIT, 2·layer) for weights and (seed, DT_RNG_INIT, 2·layer+1) for biases. */
void dt_model_init_params(const dt_model *m, uint64_t seed, float *params);

/* Scratch in be's memory for batches of up to max_batch samples. One per thread. */
DT_MUST_USE dt_status dt_workspace_create(dt_backend *be, const dt_model *m, int max_batch, dt_workspace **out);
void dt_workspace_free(dt_backend *be, dt_workspace *ws);
const dt_model *dt_workspace_model(const dt_workspace *ws);

/* One training step's worth of math: forward on x (batch × input_size floats) with labels y,
 * mean NLL loss into *loss, and its gradient with respect to params written (not added) to grad.
 * dropout draws from `dropout_rng` (may be NULL when the model has no dropout). batch must not
 * exceed the workspace's max_batch. */
DT_MUST_USE dt_status dt_model_forward_backward(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                                    const float *x, const int32_t *y, int batch, float *grad,
                                    float *loss, dt_rng *dropout_rng);

/* Forward only (dropout off) over n samples: adds the summed NLL to *loss_sum and the number of
 * correct top-1 predictions to *correct. x holds n samples; processed in workspace-sized chunks. */
DT_MUST_USE dt_status dt_model_evaluate(dt_backend *be, const dt_model *m, dt_workspace *ws, const float *params,
                            const float *x, const int32_t *y, int n, double *loss_sum,
                            long *correct);

#endif
