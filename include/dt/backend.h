/* The backend contract: who owns the memory of the round loop, and every op that touches it.
 *
 * A backend (ggml style: a table of function pointers behind a handle) allocates every per-node
 * array the round loop touches — parameters, gradients, local-optimizer and algorithm state,
 * exchange buffers, model scratch — and runs every op on them. Code above the backend never
 * dereferences that memory: it calls ops, and it crosses to the host only through upload and
 * download (writers, metrics, model files). Pointers are host pointers for the CPU backend and
 * device pointers for a device backend; pointer arithmetic on them (a node's slice of a slab,
 * a layer's weights in a parameter vector) is valid for both.
 *
 * The CPU backend (OpenBLAS) is always built and is the reference every other backend is tested
 * against, op by op. A new backend fills a dt_backend_ops table and a dt_backend_def, and is
 * listed in src/backend/registry.c; see README.md "Architecture" for what it must pass. */
#ifndef DT_BACKEND_H
#define DT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "dt/codec.h"
#include "dt/rng.h"
#include "dt/status.h"

typedef struct dt_backend dt_backend;
typedef struct dt_model dt_model;

typedef struct dt_conv_shape {
  int c, h, w;           /* input channels and size */
  int f, k, stride, pad; /* filters, square kernel, stride, zero padding */
  int oh, ow;            /* output size */
} dt_conv_shape;

typedef struct dt_pool_shape {
  int c, h, w, k, stride, oh, ow;
} dt_pool_shape;

/* ---- node-batched model calls -------------------------------------------------------------- */

/* One gradient call for `count` nodes: node l's parameters at theta + l·theta_stride, its
 * batch[l] samples at x + l·x_stride (floats) with labels y + l·y_stride, its gradient written
 * to grad + l·grad_stride and its mean loss to loss[l] (host). batch[l] == 0 skips node l. */
typedef struct dt_node_batch {
  int count;
  const float *theta;
  size_t theta_stride;
  float *grad;
  size_t grad_stride;
  const float *x;
  size_t x_stride;
  const int32_t *y;
  size_t y_stride;
  const int *batch; /* host, [count] */
  float *loss;      /* host, [count] */
  dt_rng *dropout;  /* host, [count]: each node's dropout stream, advanced by the call */
} dt_node_batch;

/* One evaluation call: every node's parameters on the same n samples (x, y); adds the summed NLL
 * to loss_sum[l] and the top-1 hits to correct[l] (host arrays). */
typedef struct dt_node_eval {
  int count;
  const float *theta;
  size_t theta_stride;
  const float *x;
  const int32_t *y;
  int n;
  double *loss_sum;
  long *correct;
} dt_node_eval;

/* ---- the op table -------------------------------------------------------------------------- */

/* Every op returns DT_OK or a status with a message (a device backend's launch and copy errors
 * come back here). Vector ops work on n consecutive floats: one node's slice, or a whole slab
 * (count·stride floats: padding between nodes is zero and stays finite). Scalars and results
 * (double *out) are host values. Sums run in index order, so results do not depend on threads. */
typedef struct dt_backend_ops {
  /* memory: zeroed, 64-byte aligned; free accepts NULL */
  dt_status (*alloc)(dt_backend *be, size_t bytes, void **out);
  void (*free)(dt_backend *be, void *p);
  dt_status (*upload)(dt_backend *be, void *dst, const void *host_src, size_t bytes);
  dt_status (*download)(dt_backend *be, void *host_dst, const void *src, size_t bytes);

  /* vectors */
  dt_status (*fill)(dt_backend *be, size_t n, float a, float *y);
  dt_status (*copy)(dt_backend *be, size_t n, const float *x, float *y);
  dt_status (*scale)(dt_backend *be, size_t n, float a, float *y);                     /* y = a·y */
  dt_status (*axpy)(dt_backend *be, size_t n, float a, const float *x, float *y);      /* y += a·x */
  /* z = a·x + b·y (z may alias x or y) */
  dt_status (*axpby)(dt_backend *be, size_t n, float a, const float *x, float b, const float *y, float *z);
  dt_status (*dot)(dt_backend *be, size_t n, const float *x, const float *y, double *out); /* Σ x·y in double */
  dt_status (*nrm2)(dt_backend *be, size_t n, const float *x, double *out);              /* √Σ x² in double */
  dt_status (*div)(dt_backend *be, size_t n, const float *x, double d, float *y);        /* y = (float)(x / d) */
  /* The weighted sum of mixing: y = 0 + w[0]·x[0] + w[1]·x[1] + ... in that order (k vectors;
   * the arrays x and w are host arrays, x[j] backend pointers; y aliases no x[j]). */
  dt_status (*mix)(dt_backend *be, size_t n, int k, const float *const *x, const float *w, float *y);
  dt_status (*sqdist)(dt_backend *be, size_t n, const float *x, const float *y, double *out); /* Σ (x−y)² */
  /* Σ (x − sum/count)², sum a double vector in backend memory */
  dt_status (*sqdist_mean)(dt_backend *be, size_t n, const float *x, const double *sum, double count, double *out);
  /* y = (float)(sum / count), sum a double vector in backend memory */
  dt_status (*mean_of_sum)(dt_backend *be, size_t n, const double *sum, double count, float *y);

  /* Fused local-optimizer steps (formulas: dt/local_opt.h) with the extra-gradient hook
   * g + extra_alpha·p + extra_b (extra_b may be NULL); step is 1-based, after this step. */
  dt_status (*sgd_step)(dt_backend *be, size_t n, float *p, const float *g, float *buf, int first, float lr,
                        float momentum, float dampening, int nesterov, float wd, float extra_alpha,
                        const float *extra_b);
  dt_status (*adam_step)(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step,
                         float lr, float beta1, float beta2, float eps, float wd, int decoupled,
                         float extra_alpha, const float *extra_b);
  /* sq: the squared-gradient average; buf: the momentum buffer (NULL when momentum is 0) */
  dt_status (*rmsprop_step)(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *buf, float lr,
                            float alpha, float eps, float wd, float momentum, float extra_alpha, const float *extra_b);
  /* sq: the squared-gradient average; acc: the accumulated squared update */
  dt_status (*adadelta_step)(dt_backend *be, size_t n, float *p, const float *g, float *sq, float *acc, float lr,
                             float rho, float eps, float wd, float extra_alpha, const float *extra_b);
  /* mu, mu_next: the momentum schedule's μ_t and μ_{t+1}; mu_product: Π_t = μ_1⋯μ_t (the caller
   * keeps it, dt/local_opt.h) */
  dt_status (*nadam_step)(dt_backend *be, size_t n, float *p, const float *g, float *m, float *v, long step,
                          float lr, float beta1, float beta2, float eps, float wd, double mu, double mu_next,
                          double mu_product, float extra_alpha, const float *extra_b);

  /* NN layers on one node's batch. y (batch×f×oh×ow) = conv(x (batch×c×h×w), w (f×c×k×k)) + b;
   * col: c·k·k·oh·ow scratch. Backward: dw, db overwritten with batch sums; dx unless NULL. */
  dt_status (*conv2d_forward)(dt_backend *be, const dt_conv_shape *s, int batch, const float *x, const float *w,
                              const float *b, float *y, float *col);
  dt_status (*conv2d_backward)(dt_backend *be, const dt_conv_shape *s, int batch, const float *x,
                               const float *w, const float *dy, float *dw, float *db, float *dx, float *col,
                               float *dcol);
  /* y (batch×out) = x (batch×in) · wᵀ + b, w is out×in (PyTorch layout). */
  dt_status (*linear_forward)(dt_backend *be, int batch, int in, int out, const float *x, const float *w,
                              const float *b, float *y);
  dt_status (*linear_backward)(dt_backend *be, int batch, int in, int out, const float *x, const float *w,
                               const float *dy, float *dw, float *db, float *dx);
  dt_status (*maxpool_forward)(dt_backend *be, const dt_pool_shape *s, int batch, const float *x, float *y,
                               int32_t *argmax);
  dt_status (*maxpool_backward)(dt_backend *be, const dt_pool_shape *s, int batch, const float *dy,
                                const int32_t *argmax, float *dx); /* dx overwritten */
  dt_status (*relu_forward)(dt_backend *be, size_t n, const float *x, float *y);
  dt_status (*relu_backward)(dt_backend *be, size_t n, const float *y, const float *dy, float *dx); /* dx may alias dy */
  /* Inverted dropout: y = x·mask/(1−p); mask drawn from rng. */
  dt_status (*dropout_forward)(dt_backend *be, size_t n, float p, const float *x, float *y, uint8_t *mask,
                               dt_rng *rng);
  dt_status (*dropout_backward)(dt_backend *be, size_t n, float p, const uint8_t *mask, const float *dy, float *dx);
  /* Summed NLL of log_softmax(logits) at labels y into *total; adds top-1 hits to *correct (may
   * be NULL); when dlogits is not NULL writes scale·(softmax − onehot). */
  dt_status (*log_softmax_nll)(dt_backend *be, int batch, int classes, const float *logits, const int32_t *y,
                               float *dlogits, float scale, double *total, long *correct);

  /* Compressed messages (dt/codec.h): msg (backend memory, c->bytes) ← the message of x; and
   * y += a·Q(x) from such a message. Random choices come from (seed, DT_RNG_COMPRESS, id). */
  dt_status (*encode)(dt_backend *be, const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg);
  dt_status (*decode_axpy)(dt_backend *be, const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a,
                           float *y);

  /* Node-batched model calls. A plan holds the scratch for up to `nodes` nodes with batches of
   * up to max_batch samples; the CPU backend computes nodes on its threads, a device backend
   * runs one batched kernel per layer for a group of nodes. run_nodes is the run's node count
   * (the same on every rank): a device backend sizes its fixed node groups from it and from the
   * model alone, so that a node's arithmetic does not depend on how many nodes its rank holds. */
  dt_status (*plan_create)(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, void **plan);
  void (*plan_free)(dt_backend *be, void *plan);
  dt_status (*model_gradients)(dt_backend *be, void *plan, const dt_node_batch *nb);
  dt_status (*model_evaluate)(dt_backend *be, void *plan, const dt_node_eval *ne);
} dt_backend_ops;

/* A backend instance. */
struct dt_backend {
  const dt_backend_ops *ops;
  const char *name;
  int host_memory; /* its pointers are host memory: upload/download to the same address are no-ops */
  int threads;     /* CPU: threads computing local nodes in parallel */
  void *ctx;       /* the backend's own state */
};

/* A registered backend. */
typedef struct dt_backend_def {
  const char *name;
  /* 1 when it can run here; otherwise 0 and the reason in why. */
  int (*usable)(char *why, size_t size);
  dt_status (*create)(int threads, dt_backend **out);
  void (*destroy)(dt_backend *be);
} dt_backend_def;

/* Backends built into this dtrun, the CPU first; ended by NULL. */
extern const dt_backend_def *const dt_backends[];
const dt_backend_def *dt_backend_find(const char *name);

/* Selection as the config says (dt_backend_kind of dt/config.h: cpu, cuda, auto): cpu is always
 * there; a named backend that is not usable here is DT_ERR_CONFIG (exit 2); auto takes the first
 * usable device backend, else the CPU, and writes a one-line note to note (empty when there is
 * nothing to say). threads: for the CPU backend. */
DT_MUST_USE dt_status dt_backend_select(const char *name, int threads, char *note, size_t note_size, dt_backend **out);
/* The CPU backend, for host-side math on host memory (tests, rank-0 writers). */
DT_MUST_USE dt_status dt_backend_cpu_create(int threads, dt_backend **out);
void dt_backend_free(dt_backend *be);
/* "cpu" or "cpu, cuda": what this dtrun can run. */
const char *dt_backend_list(void);

/* ---- the CPU backend's BLAS --------------------------------------------------------------- */

/* Makes OpenBLAS use the best kernels this CPU has. Where OpenBLAS runs AVX2 (Haswell/Zen)
 * kernels on an AVX-512 CPU — Zen 4 mis-detected, or OPENBLAS_CORETYPE=Haswell pinned in the
 * environment — re-executes the program once with OPENBLAS_CORETYPE=SKYLAKEX; so it must be
 * called first in main(), before MPI or threads start, with main's argv. DT_BLAS_KERNELS=keep
 * disables it. Returns only when no restart was needed or possible. */
void dt_cpu_select_kernels(char **argv);
/* The OpenBLAS kernel family in use ("SkylakeX", "Haswell", ...). */
const char *dt_cpu_kernel_name(void);

/* ---- slabs: one array per kind for all local nodes ----------------------------------------- */

/* count nodes × dim floats, node l at data + l·stride (stride = dim rounded up to 16 floats, or
 * a view's own stride; a read-only view of stride 0 gives every node the same vector). Backend
 * memory. */
typedef struct dt_slab {
  float *data;
  int count;
  size_t dim, stride;
} dt_slab;

static inline float *dt_slab_node(const dt_slab *s, int l) { return s->data + (size_t)l * s->stride; }
/* Floats between nodes of a fresh slab of dim-float vectors. */
static inline size_t dt_slab_stride(size_t dim) { return (dim + 15) & ~(size_t)15; }

DT_MUST_USE dt_status dt_slab_create(dt_backend *be, int count, size_t dim, dt_slab *out); /* zeroed */
void dt_slab_free(dt_backend *be, dt_slab *s); /* a zeroed slab is fine */
/* Whole-slab forms of the vector ops; slabs of different strides are handled node by node. */
DT_MUST_USE dt_status dt_slab_copy(dt_backend *be, const dt_slab *src, dt_slab *dst);
DT_MUST_USE dt_status dt_slab_fill(dt_backend *be, dt_slab *s, float a);
/* dst = a·x + b·y */
DT_MUST_USE dt_status dt_slab_axpby(dt_backend *be, float a, const dt_slab *x, float b, const dt_slab *y, dt_slab *dst);
/* Every node of dst gets the same host vector (dim floats). */
DT_MUST_USE dt_status dt_slab_broadcast_host(dt_backend *be, const float *host, dt_slab *dst);
/* Node l to the host (dim floats), or from it. */
DT_MUST_USE dt_status dt_slab_download_node(dt_backend *be, const dt_slab *s, int l, float *host);
DT_MUST_USE dt_status dt_slab_upload_node(dt_backend *be, dt_slab *s, int l, const float *host);

/* Host view of backend memory for reading: the memory itself on a host-memory backend, else a
 * copy into *scratch (allocated on first use, bytes long; free with dt_free). */
DT_MUST_USE dt_status dt_backend_host_view(dt_backend *be, const void *src, size_t bytes, void **scratch, const void **view);

#endif
