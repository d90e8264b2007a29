/* The backend table: every numerical op the models and optimizers need, as function pointers
 * (ggml style). The CPU table (OpenBLAS) is always built and is the reference that any faster
 * backend is tested against op by op. Pointers are host pointers for the CPU backend and device
 * pointers for a device backend. */
#ifndef DT_BACKEND_H
#define DT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "dt/rng.h"

typedef struct dt_conv_shape {
  int c, h, w;          /* input channels and size */
  int f, k, stride, pad; /* filters, square kernel, stride, zero padding */
  int oh, ow;           /* output size */
} dt_conv_shape;

typedef struct dt_pool_shape {
  int c, h, w, k, stride, oh, ow;
} dt_pool_shape;

typedef struct dt_backend_ops {
  const char *name;
  /* y (batch×f×oh×ow) = conv(x (batch×c×h×w), w (f×c×k×k)) + b. col: c·k·k·oh·ow scratch. */
  void (*conv2d_forward)(const dt_conv_shape *s, int batch, const float *x, const float *w,
                         const float *b, float *y, float *col);
  /* dw, db overwritten with the batch sums; dx overwritten unless NULL (first layer). */
  void (*conv2d_backward)(const dt_conv_shape *s, int batch, const float *x, const float *w,
                          const float *dy, float *dw, float *db, float *dx, float *col,
                          float *dcol);
  /* y (batch×out) = x (batch×in) · wᵀ + b, w is out×in (PyTorch layout). */
  void (*linear_forward)(int batch, int in, int out, const float *x, const float *w,
                         const float *b, float *y);
  /* dw, db overwritten; dx overwritten unless NULL. */
  void (*linear_backward)(int batch, int in, int out, const float *x, const float *w,
                          const float *dy, float *dw, float *db, float *dx);
  void (*maxpool_forward)(const dt_pool_shape *s, int batch, const float *x, float *y,
                          int32_t *argmax);
  /* dx overwritten (zero where no maximum came from). */
  void (*maxpool_backward)(const dt_pool_shape *s, int batch, const float *dy,
                           const int32_t *argmax, float *dx);
  void (*relu_forward)(size_t n, const float *x, float *y);
  /* dx = dy where y > 0, else 0 (dx may alias dy). */
  void (*relu_backward)(size_t n, const float *y, const float *dy, float *dx);
  /* Inverted dropout: y = x·mask/(1−p); mask drawn from rng. */
  void (*dropout_forward)(size_t n, float p, const float *x, float *y, uint8_t *mask,
                          dt_rng *rng);
  void (*dropout_backward)(size_t n, float p, const uint8_t *mask, const float *dy, float *dx);
  /* Summed NLL of log_softmax(logits) at labels y; adds top-1 hits to *correct (may be NULL);
   * when dlogits is not NULL writes scale·(softmax − onehot). */
  double (*log_softmax_nll)(int batch, int classes, const float *logits, const int32_t *y,
                            float *dlogits, float scale, long *correct);
  /* Fused optimizer steps over n parameters (see dt/optim.h for the formulas). extra_b may be
   * NULL; step is the 1-based step count after this step. */
  void (*sgd_step)(size_t n, float *p, const float *g, float *buf, int first, float lr,
                   float momentum, float dampening, int nesterov, float wd, float extra_alpha,
                   const float *extra_b);
  void (*adam_step)(size_t n, float *p, const float *g, float *m, float *v, long step,
                    float lr, float beta1, float beta2, float eps, float wd, int decoupled,
                    float extra_alpha, const float *extra_b);
} dt_backend_ops;

extern const dt_backend_ops dt_backend_cpu;

/* Sets OpenBLAS to one thread (ranks and node threads provide the parallelism). Idempotent. */
void dt_backend_cpu_single_thread(void);

#endif
