/* The node-batched model calls' private declarations, shared by nn.cu (forward, backward and the
 * entry points), nn_plan.cu (the plan's shapes and memory) and nn_kernels.cu (the kernels, launched
 * from nn.cu): the plan, and the kernels with what each computes described at its definition. */
#ifndef DT_CUDA_NN_IMPL_H
#define DT_CUDA_NN_IMPL_H

#include "cuda_impl.h"

extern "C" {
#include "dt/rng.h"
}

/* ---- the plan: one model's shapes, group size and device memory ------------------------------- */

typedef struct cu_plan {
  int L, classes, S, G, nodes;
  size_t P, ps;         /* parameters per node, and the group's node stride for them */
  size_t ns;            /* floats per node in every activation and gradient buffer */
  size_t cols;          /* floats per node of the im2col buffers */
  size_t in_dim;        /* floats per input sample */
  int shared_input;     /* evaluation may read the one input for all nodes (stride 0) */
  dt_layer_info ly[DT_MAX_LAYERS];
  /* activation l: channel-major or sample-major, and its (channels, plane) split */
  int cnhw[DT_MAX_LAYERS + 1];
  size_t chan[DT_MAX_LAYERS + 1], plane[DT_MAX_LAYERS + 1];
  float *theta, *grad;  /* G × ps */
  float *buf[DT_MAX_LAYERS + 1], *tin[DT_MAX_LAYERS];
  int32_t *argmax[DT_MAX_LAYERS];
  uint8_t *mask[DT_MAX_LAYERS];
  float *ga, *gb, *col, *dcol;
  int32_t *y;           /* G × S labels */
  double *sample_loss;  /* G × S */
  int *sample_hit;      /* G × S */
  double *total;        /* G */
  long long *correct;   /* G */
  int dropouts;
  /* per call, one G-slot block per group: batch sizes, loss scales, dropout stream states;
   * device copies and pinned host sources (asynchronous uploads need a source nobody rewrites
   * before the call ends) */
  int groups_cap;
  int *batch_d, *batch_h;
  float *scale_d, *scale_h;
  dt_rng *states_d, *states_h;
  double *total_h;
  long long *correct_h;
  /* profile: events before and after each layer of a training call's forward ([0], in layer
   * order) and backward ([1], in reverse), made at the first profiled call */
  cudaEvent_t ev[2][DT_MAX_LAYERS + 1];
  int ev_made; /* events made so far, in the order [0][0..L], [1][0..L] */
  /* per layer: convolution computed directly (one thread per output, dW by a block reduction)
   * instead of im2col + GEMM, where the GEMM would be skinny (see nn_plan.cu) */
  uint8_t direct[DT_MAX_LAYERS];
} cu_plan;

/* ---- layout-generic kernels over G nodes (nn_kernels.cu) --------------------------------------
 * Most are launched with NODE_KERNEL (cuda_impl.h); their first two parameters are (count, per). */

/* convolution: im2col and its adjoint, bias rows, bias gradient (one block per row, fixed tree) */
__global__ void k_im2col(int count, unsigned per, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss,
                         float *col, size_t colns);
__global__ void k_col2im(int count, unsigned per, dt_conv_shape sh, int S, const float *dcol, size_t colns, float *dx, size_t xns,
                         size_t cs, size_t ss);
__global__ void k_bias_rows(int count, unsigned per, unsigned N, const float *b, size_t bns, float *y, size_t yns);
__global__ void k_row_sums(int f, size_t N, const float *dy, size_t yns, float *db, size_t bns);

/* direct convolution (few filters or short filters): forward, and dW in CONV_RB taps per block */
enum { CONV_RB = 8 };
__global__ void k_conv_direct(int count, unsigned per, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss,
                              const float *w, const float *b, size_t pns, float *y, size_t yns);
__global__ void k_conv_dw(dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss, const float *dy,
                          size_t yns, float *dw, size_t gns);

/* linear layers: bias columns and their gradient */
__global__ void k_bias_cols(int count, unsigned per, unsigned out, const float *b, size_t bns, float *y, size_t yns);
__global__ void k_col_sums(size_t n, int out, int S, const float *dy, size_t yns, float *db, size_t bns);

/* max pooling and its gradient */
__global__ void k_maxpool(int count, unsigned per, dt_pool_shape sh, const float *x, size_t xns, float *y, size_t yns,
                          int32_t *argmax);
__global__ void k_maxpool_back(int count, unsigned per, dt_pool_shape sh, const float *dy, const int32_t *argmax, size_t yns,
                               float *dx, size_t xns);

/* relu and dropout, and their gradients */
__global__ void k_relu(size_t n, const float *x, float *y);
__global__ void k_relu_back(size_t n, const float *y, const float *dy, float *dx);
__global__ void k_dropout(int count, unsigned per, int C, int S, unsigned plane, size_t ns, size_t cs, size_t ss, float p, float scale,
                          const dt_rng *st, const int *batch, const float *x, float *y, uint8_t *mask);
__global__ void k_dropout_back(size_t n, float scale, const uint8_t *mask, const float *dy, float *dx);

/* the loss: log-softmax + NLL per sample, sums per node */
__global__ void k_softmax_nll(size_t n, int classes, int S, const float *z, size_t zns, const int32_t *y, size_t yns,
                              const int *batch, const float *scale, float *dz, double *loss, int *hit);
__global__ void k_node_totals(size_t n, int S, const double *loss, const int *hit, double *total, long long *correct);

/* layouts and batches: CNHW ↔ sample-major, a group's inputs, evaluation inputs, gradients out */
__global__ void k_to_samples(int count, unsigned per, int C, int S, unsigned plane, const float *x, size_t xns, float *y, size_t yns, int back);
__global__ void k_gather_batch(int count, unsigned per, int S, unsigned dim, const float *x, size_t xs, const int32_t *y, size_t ys,
                               const int *batch, float *gx, size_t gxs, int32_t *gy);
__global__ void k_broadcast(int count, unsigned per, const float *x, float *y, size_t yns);
__global__ void k_scatter_grad(int count, unsigned per, const float *src, size_t ss, const int *batch, float *dst, size_t ds);

#endif
