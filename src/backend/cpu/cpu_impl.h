/* The CPU backend's ops and layer kernels, shared between its files and the table in cpu.c. */
#ifndef DT_CPU_IMPL_H
#define DT_CPU_IMPL_H

#include "dt/backend.h"
#include "dt/nn.h"

/* Hot loops are compiled for several x86-64 levels and the best one is picked at load time
 * (ifunc). The build's baseline is plain x86-64 (SSE2), which would leave AVX2/AVX-512 unused.
 * ISO C mode keeps floating-point contraction off, so every clone computes the same bits.
 * gcc only: clang 14 names the dispatcher `f.ifunc` and leaves calls from other files, which
 * see a plain declaration, unresolved (the clang build is the sanitizer and fuzz build). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define DT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DT_CLONES
#endif

/* The layer kernels on one node's batch (the per-node executor, net.c, calls them).
 * conv2d.c: y (batch×f×oh×ow) = conv(x (batch×c×h×w), w (f×c×k×k)) + b; col: c·k·k·oh·ow
 * scratch. Backward: dw, db overwritten with batch sums; dx unless NULL; dcol: c·k·k·(oh·ow + f)
 * scratch. */
void dt_cpu_conv2d_forward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                           const float *b, float *y, float *col);
void dt_cpu_conv2d_backward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx, float *col,
                            float *dcol);
/* winograd.c: the same for convolutions that dt_conv_winograd accepts (col and dcol hold
 * dt_conv_winograd_scratch floats each); the bias gradient is the caller's. dx must not alias dy
 * or x: its blocks write rows of dx that later blocks still read from dy. */
void dt_cpu_winograd_forward(const dt_conv_shape *s, int batch, const float *x, const float *w, const float *b, float *y,
                             float *col);
void dt_cpu_winograd_backward(const dt_conv_shape *s, int batch, const float *x, const float *w, const float *dy,
                              float *dw, float *dx, float *col, float *dcol);
/* linear.c: y (batch×out) = x (batch×in) · wᵀ + b, w is out×in (PyTorch layout). */
void dt_cpu_linear_forward(int batch, int in, int out, const float *x, const float *w,
                           const float *b, float *y);
void dt_cpu_linear_backward(int batch, int in, int out, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx);
/* layers.c. Max pooling keeps each window's argmax; backward overwrites dx. */
void dt_cpu_maxpool_forward(const dt_pool_shape *s, int batch, const float *x, float *y, int32_t *argmax);
void dt_cpu_maxpool_backward(const dt_pool_shape *s, int batch, const float *dy, const int32_t *argmax, float *dx);
void dt_cpu_relu_forward(size_t n, const float *x, float *y);
void dt_cpu_relu_backward(size_t n, const float *y, const float *dy, float *dx); /* dx may alias dy */
/* Inverted dropout: y = x·mask/(1−p); mask drawn from rng. */
void dt_cpu_dropout_forward(size_t n, float p, const float *x, float *y, uint8_t *mask, dt_rng *rng);
void dt_cpu_dropout_backward(size_t n, float p, const uint8_t *mask, const float *dy, float *dx);
/* The summed NLL of log_softmax(logits) at labels y; adds top-1 hits to *correct (may be NULL);
 * when dlogits is not NULL writes scale·(softmax − onehot). */
double dt_cpu_log_softmax_nll(int batch, int classes, const float *logits, const int32_t *y, float *dlogits,
                              float scale, long *correct);

/* Average pooling (avgpool2d; global_avgpool is the window of the whole plane, pool->k 0). */
void dt_cpu_avgpool_forward(const dt_pool_shape *s, int batch, const float *x, float *y);
void dt_cpu_avgpool_backward(const dt_pool_shape *s, int batch, const float *dy, float *dx);
/* Normalisation over one node's batch (norm.c). params and buffers are the node's whole vectors
 * (s holds the offsets); stats: dt_cpu_norm_stats floats of scratch, written in train mode by the
 * forward and read by the backward. Train mode uses the batch's statistics (batchnorm2d: over
 * batch × plane per channel, and moves the running ones); eval mode the running ones. groupnorm
 * is the same in both. Backward overwrites dx and the norm's gamma and beta gradients. */
size_t dt_cpu_norm_stats(const dt_norm_shape *s, int batch);
void dt_cpu_norm_forward(const dt_norm_shape *s, int batch, int train, const float *x, float *y, const float *params,
                         float *buffers, float *stats);
void dt_cpu_norm_backward(const dt_norm_shape *s, int batch, const float *x, const float *dy, const float *params, float *grad,
                          const float *stats, float *dx);

/* ---- the layer table ------------------------------------------------------------------------
 * One layer's call on one node's batch, as the per-node executor (net.c) makes it. */
typedef struct cpu_layer_call {
  const dt_layer_info *li;   /* the layer: layers[l] */
  const dt_layer_info *layers;
  int l, batch, train;
  const float *x;            /* the layer's input */
  float *y;                  /* its output (backward: as the forward left it) */
  const float *params;       /* the node's whole parameter vector (li holds the offsets) */
  float *grad;               /* backward: the node's gradient vector */
  float *buffers;            /* the node's buffers (NULL: the model has none); train mode moves them */
  void *scratch;             /* the layer's scratch: ops->scratch(li, max_batch) bytes, zeroed once */
  float *col, *dcol;         /* the workspace's im2col matrices */
  dt_rng *rng;               /* dropout's stream (NULL: no dropout) */
  const float *dy;           /* backward: the output's gradient */
  float *dx;                 /* backward: the input's gradient (NULL: not wanted); == dy for in-place ops */
  const float *const *act;   /* every activation: act[l] is layer l's input */
  void *const *scratch_of;   /* every layer's scratch (a residual's two ends share the end's) */
} cpu_layer_call;

/* A layer type on the CPU (src/backend/cpu/layer_*.c): its scratch, forward and backward. */
typedef struct cpu_layer_ops {
  size_t (*scratch)(const dt_layer_info *li, int max_batch); /* bytes; NULL: none */
  void (*forward)(const cpu_layer_call *c);
  void (*backward)(const cpu_layer_call *c);
  int forward_alias;     /* the output is the input itself (flatten, a residual's start) */
  int backward_in_place; /* dx is dy, updated in place (relu, dropout, flatten, the residual ends) */
} cpu_layer_ops;

#define CPU_LAYER_DECLARE(upper, lower) extern const cpu_layer_ops dt_cpu_layer_##lower;
DT_LAYER_LIST(CPU_LAYER_DECLARE)
#undef CPU_LAYER_DECLARE

/* Every op of the list (dt/backend.h), defined in vec.c (memory and vectors), step.c (the fused
 * local-optimizer step), cpu.c (compressed messages: the host codec in place) and model.c
 * (node-batched model calls on the backend's threads). */
#define CPU_DECLARE(name, params, args) DT_MUST_USE dt_status dt_cpu_##name DT_OP_PARAMS params;
#define CPU_DECLARE_VOID(name, params, args) void dt_cpu_##name DT_OP_PARAMS params;
DT_BACKEND_OPS(CPU_DECLARE)
DT_BACKEND_VOID_OPS(CPU_DECLARE_VOID)
#undef CPU_DECLARE
#undef CPU_DECLARE_VOID

#endif
