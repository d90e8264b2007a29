/* The CPU backend's ops and layer kernels, shared between its files and the table in cpu.c. */
#ifndef DT_CPU_IMPL_H
#define DT_CPU_IMPL_H

#include "dt/backend.h"

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
 * scratch. Backward: dw, db overwritten with batch sums; dx unless NULL. */
void dt_cpu_conv2d_forward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                           const float *b, float *y, float *col);
void dt_cpu_conv2d_backward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx, float *col,
                            float *dcol);
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
