/* The node-batched model calls' private declarations, shared by nn.cu (the executor and the entry
 * points), nn_plan.cu (the plan's shapes and memory), nn_kernels.cu (kernels several layers use)
 * and the layer files layer_<name>.cu (each type's forward and backward over a group, and its own
 * kernels): the plan, a layer call, the layer table, and the shared helpers. */
#ifndef DT_CUDA_NN_IMPL_H
#define DT_CUDA_NN_IMPL_H

#include "cuda_impl.h"

extern "C" {
#include "dt/rng.h"
}

enum { CU_MAX_L = DT_MAX_COMPILED, CU_GRAPHS = 8 };

/* ---- the plan: one model's shapes, group size and device memory -------------------------------
 * Activation l (l = 0: the input; l + 1: layer l's output) of slot g lies at a[l] + g·as[l]; its
 * element (c, s, p) (channel, sample, pixel of the plane) at c·cs + s·ss + p, where a channel-major
 * activation (cnhw[l]: C × S × plane, what convolutions write) has cs = S·plane, ss = plane, and a
 * sample-major one (S × C × plane, the input's and linear layers' layout) cs = plane, ss = C·plane.
 * Gradients of activations live in two buffers of node stride ns (the largest activation). */
/* A model call's key (its pointers, strides and node count) and, from its second call on, the
 * graph captured of its device work (nn.cu's run_captured). */
typedef struct cu_graph {
  cudaGraphExec_t exec;
  unsigned char key[96];
  size_t key_len;
  unsigned long long used; /* the plan's tick at its last call (0: an empty slot) */
} cu_graph;

typedef struct cu_plan {
  int L, classes, S, G, nodes;
  size_t P, ps;         /* parameters per node, and the group's node stride for them */
  size_t B, bs;         /* buffers (running statistics) per node, and their node stride (0: none) */
  size_t ns;            /* floats per node of the activation-gradient buffers */
  size_t cols;          /* floats per node of the im2col buffers (and of direct convolutions' partial sums) */
  size_t dw_part;       /* floats per node of direct convolutions' weight-gradient partial sums */
  size_t in_dim;        /* floats per input sample */
  int shared_input;     /* evaluation may read the one input for all nodes (stride 0) */
  dt_layer_info ly[CU_MAX_L];
  int cnhw[CU_MAX_L + 1];
  size_t chan[CU_MAX_L + 1], plane[CU_MAX_L + 1];
  size_t as[CU_MAX_L + 1];         /* node stride of activation l's buffer */
  int alias[CU_MAX_L];             /* layer l's output is its input (no buffer of its own) */
  float *theta, *grad, *bufs;      /* G × ps, G × ps, G × bs */
  float *act[CU_MAX_L + 1];        /* G × as[l] (NULL where layer l - 1 aliases) */
  void *scr[CU_MAX_L];             /* each layer's scratch: G × scr_stride[l] bytes */
  size_t scr_stride[CU_MAX_L];
  int drop_index[CU_MAX_L];        /* a dropout layer's place among the model's dropouts */
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
  cudaEvent_t ev[2][CU_MAX_L + 1];
  int ev_made; /* events made so far, in the order [0][0..L], [1][0..L] */
  /* per layer: convolution computed directly (no im2col; layer_conv2d.cu) instead of im2col +
   * GEMM, where the GEMM would be skinny (cu_conv_direct); for a residual_end, its projection's */
  uint8_t direct[CU_MAX_L];
  /* fusions, each giving the unfused bits: relu_after[l], the direct convolution l writes the
   * relu of its output (the relu layer l + 1 then aliases it and its forward is nothing);
   * relu_in_pool[l], the max pool l + 1's backward applies the gradient of the relu l before it
   * (whose backward is then nothing) */
  uint8_t relu_after[CU_MAX_L], relu_in_pool[CU_MAX_L];
  /* the calls captured as CUDA graphs (nn.cu's run_captured): the last CU_GRAPHS keys */
  cu_graph graphs[CU_GRAPHS];
  unsigned long long tick;
  int warm;       /* a call has run (directly) */
  int graphs_off; /* a capture failed: every call runs launch by launch */
} cu_plan;

/* A group's call state: activation pointers (an aliasing layer's output is its input) and their
 * node strides (0: the evaluation input, shared by all nodes). */
typedef struct cu_pass {
  int count, S, train, group; /* slots, samples, train mode, group index (its block of per-call arrays) */
  int dropout;                /* dropout draws (a training call given the nodes' streams) */
  int timed;                  /* a training call under a profile: layer events recorded */
  const int *batch;           /* device, [count]: each slot's samples (NULL: S for every slot) */
  const float *a[CU_MAX_L + 1];
  size_t as[CU_MAX_L + 1];
} cu_pass;

/* One layer's call over a group, as the executor (nn.cu) makes it. Forward reads x and writes y;
 * backward reads dy and writes dx (NULL: not wanted) and the layer's parameter gradients. A layer
 * that updates the gradient in place sets dx = dy (relu, dropout, a residual's two ends). */
typedef struct cu_call {
  dt_backend *be;
  cu_plan *pl;
  cu_pass *ps;
  const dt_layer_info *li;
  int l;
  const float *x;
  size_t xs, xcs, xss;   /* x's node, channel and sample strides */
  float *y;
  size_t ys, ycs, yss;   /* y's (layer l's output buffer) */
  void *scr;             /* the layer's scratch, node stride scr_stride */
  size_t scr_stride;
  const float *dy;       /* backward: node stride ns, the output's layout */
  float *dx;             /* backward: node stride ns, the input's layout */
} cu_call;

/* A layer type on the GPU (src/backend/cuda/layer_<name>.cu). */
typedef struct cu_layer_ops {
  /* the output's layout (1: channel-major) from the plan so far; NULL: the input's */
  int (*out_cnhw)(const cu_plan *pl, int l);
  /* 1: the output is the input itself (no buffer); NULL: never */
  int (*aliases)(const cu_plan *pl, int l);
  /* bytes of scratch per node; NULL: none */
  size_t (*scratch)(const cu_plan *pl, int l);
  dt_status (*forward)(cu_call *c);
  dt_status (*backward)(cu_call *c);
} cu_layer_ops;

#define CU_LAYER_DECLARE(upper, lower) extern const cu_layer_ops cu_layer_##lower;
DT_LAYER_LIST(CU_LAYER_DECLARE)
#undef CU_LAYER_DECLARE
const cu_layer_ops *cu_layer_ops_of(dt_layer_kind k);

/* (cs, ss) of activation l with S samples (see cu_plan). */
static inline void cu_act_strides(const cu_plan *pl, int l, int S, size_t *cs, size_t *ss) {
  if (pl->cnhw[l]) *cs = (size_t)S * pl->plane[l], *ss = pl->plane[l];
  else *cs = pl->plane[l], *ss = pl->chan[l] * pl->plane[l];
}
/* Bytes rounded up to 256, the alignment of every scratch region. */
static inline size_t cu_round256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* ---- helpers the layers share ------------------------------------------------------------------ */

/* C = op(A)·op(B) (+ beta·C) for `count` nodes, strided batched (column-major cuBLAS on row-major
 * data); tf32 on tensor cores where the run asks (nn.cu). */
DT_MUST_USE dt_status cu_gemm(dt_backend *be, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *A, int lda,
                              long long sa, const float *B, int ldb, long long sb, float beta, float *C, int ldc, long long sc,
                              int count);
/* Convolution of `count` nodes, S samples each (layer_conv2d.cu): input (cs, ss) layout at
 * x + g·xs (xs 0: shared), output CNHW (f × S·ohw) at y + g·ys; b NULL: no bias; col scratch per
 * node at col + g·cols. Backward writes dw (and db unless NULL) at node stride gs, and dx (unless
 * NULL) in the input's layout at node stride dxs. With relu (direct only), the forward writes
 * relu(y): the relu after the layer, fused by the plan. */
DT_MUST_USE dt_status cu_conv_forward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                                      size_t ss, const float *w, const float *b, size_t ps, float *y, size_t ys, float *col,
                                      size_t cols, int direct, int relu);
DT_MUST_USE dt_status cu_conv_backward(dt_backend *be, int count, int S, const dt_conv_shape *s, const float *x, size_t xs, size_t cs,
                                       size_t ss, const float *w, size_t ps, const float *dy, size_t ys, float *dw, float *db,
                                       size_t gs, float *dx, size_t dxs, float *col, float *dcol, size_t cols, int direct);
/* Whether a convolution runs directly (nn_plan.cu's rule), and the chunks its weight gradient's
 * first pass splits n output positions into (layer_conv2d.cu). */
int cu_conv_direct(const dt_conv_shape *s);
size_t cu_conv_dw_chunks(size_t n);
/* Normalisation over a group (layer_norm.cu): x and y (and dy, dx) in one layout (cs, ss) with
 * node strides; stats: 2 floats per statistic group and node at node stride sts (train mode: the
 * forward writes them for the backward). Only each slot's first batch[g] samples (all S where
 * batch is NULL) enter the statistics; the others' outputs and input gradients are 0. Train mode
 * moves batchnorm2d's running statistics in bufs (node stride bs); eval mode uses them. */
size_t cu_norm_stats(const dt_norm_shape *s, int S); /* floats per node */
DT_MUST_USE dt_status cu_norm_forward(dt_backend *be, const dt_norm_shape *s, int count, int S, const int *batch, int train,
                                      const float *x, size_t xs, size_t cs, size_t ss, float *y, size_t ys, const float *theta,
                                      size_t ps, float *bufs, size_t bs, float *stats, size_t sts);
DT_MUST_USE dt_status cu_norm_backward(dt_backend *be, const dt_norm_shape *s, int count, int S, const int *batch, const float *x,
                                       size_t xs, size_t cs, size_t ss, const float *dy, size_t dys, const float *theta, size_t ps,
                                       float *grad, const float *stats, size_t sts, float *dx, size_t dxs);
/* y (its layout) = x (its layout) element by element over C × S × plane of each node, or
 * y += x with accumulate (nn_kernels.cu). */
DT_MUST_USE dt_status cu_relayout(dt_backend *be, int count, int C, int S, size_t plane, const float *x, size_t xs, size_t xcs,
                                  size_t xss, float *y, size_t ys, size_t ycs, size_t yss, int accumulate);

/* ---- kernels several layers use (nn_kernels.cu) -------------------------------------------------
 * Most are launched with NODE_KERNEL (cuda_impl.h); their first two parameters are (count, per). */

/* convolution: im2col and its adjoint, bias rows, bias gradient (one block per row, fixed tree) */
__global__ void k_im2col(int count, unsigned per, dt_conv_shape sh, int S, const float *x, size_t xns, size_t cs, size_t ss,
                         float *col, size_t colns);
__global__ void k_col2im(int count, unsigned per, dt_conv_shape sh, int S, const float *dcol, size_t colns, float *dx, size_t xns,
                         size_t cs, size_t ss);
__global__ void k_bias_rows(int count, unsigned per, unsigned N, const float *b, size_t bns, float *y, size_t yns);
__global__ void k_row_sums(int f, size_t N, const float *dy, size_t yns, float *db, size_t bns);

/* linear layers: bias columns and their gradient */
__global__ void k_bias_cols(int count, unsigned per, unsigned out, const float *b, size_t bns, float *y, size_t yns);
__global__ void k_col_sums(size_t n, int out, int S, const float *dy, size_t yns, float *db, size_t bns);

/* A pool's output plane for its input plane pp: the same (tS 0), or, where the pool writes a
 * channel-major input's output sample-major for the flatten after it (tS: the call's samples
 * per node, C its channels), plane c·tS + s goes to s·C + c. */
static __device__ __forceinline__ unsigned cu_pool_plane(unsigned pp, int tS, int C) {
  return tS == 0 ? pp : (pp % (unsigned)tS) * (unsigned)C + pp / (unsigned)tS;
}

/* max pooling and its gradient (argmax at node stride yns, as the output, in the input's plane
 * order; y and dy in plane order cu_pool_plane(tS); with relu, the gradient of a relu before the
 * pool too, from the pool's input x) */
__global__ void k_maxpool(int count, unsigned per, dt_pool_shape sh, int tS, const float *x, size_t xns, float *y, size_t yns,
                          int32_t *argmax);
__global__ void k_maxpool_back(int count, unsigned per, dt_pool_shape sh, int tS, const float *dy, size_t dyns,
                               const int32_t *argmax, size_t ans, float *dx, size_t dxns, const float *x, size_t xns, int relu);
__global__ void k_maxpool_back_tiled(int count, unsigned per, dt_pool_shape sh, int tS, const float *dy, size_t dyns,
                                     const int32_t *argmax, size_t ans, float *dx, size_t dxns, const float *x, size_t xns,
                                     int relu);

/* relu and dropout, and their gradients (per node: `per` floats at the given node strides) */
__global__ void k_relu(int count, unsigned per, const float *x, size_t xns, float *y, size_t yns);
__global__ void k_relu_back(int count, unsigned per, const float *y, size_t yns, float *d, size_t dns);
__global__ void k_dropout(int count, unsigned per, int C, int S, unsigned plane, size_t xns, size_t yns, size_t mns, size_t cs,
                          size_t ss, float p, float scale, const dt_rng *st, const int *batch, const float *x, float *y,
                          uint8_t *mask);
__global__ void k_dropout_back(int count, unsigned per, float scale, const uint8_t *mask, size_t mns, float *d, size_t dns);

/* the loss: log-softmax + NLL per sample, sums per node */
__global__ void k_softmax_nll(size_t n, int classes, int S, const float *z, size_t zns, const int32_t *y, size_t yns,
                              const int *batch, const float *scale, float *dz, size_t dzns, double *loss, int *hit);
__global__ void k_node_totals(size_t n, int S, const double *loss, const int *hit, double *total, long long *correct);

/* layouts and batches: CNHW ↔ sample-major, a group's inputs, evaluation inputs, gradients out */
__global__ void k_to_samples(int count, unsigned per, int C, int S, unsigned plane, const float *x, size_t xns, float *y, size_t yns, int back);
__global__ void k_gather_batch(int count, unsigned per, int S, unsigned dim, const float *x, size_t xs, const int32_t *y, size_t ys,
                               const int *batch, float *gx, size_t gxs, int32_t *gy);
__global__ void k_broadcast(int count, unsigned per, const float *x, float *y, size_t yns);
__global__ void k_scatter_grad(int count, unsigned per, const float *src, size_t ss, const int *batch, float *dst, size_t ds);

#endif
