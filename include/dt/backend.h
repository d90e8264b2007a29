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
#include "dt/formulas.h"
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

/* One gradient call for `count` nodes, in train mode: node l's parameters at theta +
 * l·theta_stride, its buffers (running statistics, moved by the call; NULL for a model without
 * any) at buffers + l·buffers_stride, its batch[l] samples at x + l·x_stride (floats) with labels
 * y + l·y_stride, its gradient written to grad + l·grad_stride and its mean loss to loss[l]
 * (host). batch[l] == 0 skips node l. */
typedef struct dt_node_batch {
  int count;
  const float *theta;
  size_t theta_stride;
  float *buffers;
  size_t buffers_stride;
  float *grad;
  size_t grad_stride;
  const float *x;
  size_t x_stride;
  const int32_t *y;
  size_t y_stride;
  const int *batch; /* host, [count] */
  float *loss;      /* host, [count] */
  dt_rng *dropout;  /* host, [count]: each node's dropout stream, advanced by the call */
  /* nonzero: every node with batch[l] > 0 has zeros (label 0) in its samples batch[l] .. the
   * plan's batch − 1 (a gather with pad wrote them), so a device may read x and y in place
   * instead of copying each batch and its zero padding into its own buffer */
  int x_padded;
} dt_node_batch;

/* One evaluation call, in eval mode: every node's parameters (and buffers, NULL for a model
 * without any) on the same n samples (x, y); adds the summed NLL to loss_sum[l] and the top-1
 * hits to correct[l] (host arrays). */
typedef struct dt_node_eval {
  int count;
  const float *theta;
  size_t theta_stride;
  const float *buffers;
  size_t buffers_stride;
  const float *x;
  const int32_t *y;
  int n;
  double *loss_sum;
  long *correct;
} dt_node_eval;

/* ---- resident sample sets and batch gathering ---------------------------------------------- */

typedef struct dt_samples dt_samples;

/* One gather call over `count` nodes: node l's n[l] samples idx[l][0..n[l]) of a resident set
 * (samples_create) as normalised float rows at x + l·x_stride and their labels at y + l·y_stride
 * (backend memory), exactly as dt_samples_rows builds them on the host. With aug, sample s of
 * node l is then cropped and flipped as dt_augment_image does with (dy, dx, flip) =
 * aug[l][3s], aug[l][3s+1], aug[l][3s+2], pixels from outside the image taking fill[channel].
 * n[l] == 0 skips node l; rows n[l] .. pad − 1 of the other nodes are written as zeros with
 * label 0 (a model call's padding, see dt_node_batch.x_padded), rows past them are left as they
 * were. n, idx, aug and fill are host arrays, read before the call returns. Augmentation needs a
 * set of images (u8). */
typedef struct dt_gather {
  int count;
  const int *n;
  const uint32_t *const *idx;
  const int16_t *const *aug; /* NULL: no augmentation */
  const float *fill;         /* [channels], with aug */
  float *x;
  size_t x_stride;
  int32_t *y;
  size_t y_stride;
  int pad; /* rows per node written (zeros past n[l]); 0: n[l] */
} dt_gather;

/* ---- profiling ------------------------------------------------------------------------------
 * `profile: true` splits a round's time into phases. The code marks where a phase ends
 * (dt_be_profile_mark(be, phase)): the backend waits for its queued work and charges the time
 * since the previous mark to that phase, so a device's asynchronous work lands in the phase that
 * queued it. Time between phases is marked DT_PHASE_OTHER. Without a profile (be->profile NULL)
 * a mark does nothing. */
#define DT_PHASES(X)                                                        \
  X(OTHER, "other", "optimizer steps and everything not in another phase") \
  X(BATCH, "batch", "minibatch indices, gather and upload")                \
  X(MODEL, "model", "forward and backward, where the backend does not split them") \
  X(FORWARD, "forward", "forward passes and the loss")                     \
  X(BACKWARD, "backward", "backward passes and the gradients' scatter")    \
  X(MIX, "mix", "the mixing sums of dt_mix_all (other mixing counts as other)") \
  X(EXCHANGE, "exchange", "the neighbourhood exchange and its staging")    \
  X(EVAL, "evaluation", "evaluations")
typedef enum dt_phase {
#define DT_PHASE_ENUM(id, name, what) DT_PHASE_##id,
  DT_PHASES(DT_PHASE_ENUM)
#undef DT_PHASE_ENUM
  DT_PHASE_COUNT
} dt_phase;
extern const char *const dt_phase_names[DT_PHASE_COUNT];

enum { DT_PROFILE_LAYERS = 128 }; /* DT_MAX_LAYERS of dt/nn.h */
typedef struct dt_profile {
  double seconds[DT_PHASE_COUNT];
  double last; /* dt_time_now() at the previous mark */
  /* training calls' forward ([0]) and backward ([1]) seconds by layer, where the backend times
   * its layers (the CUDA backend, with events); zero elsewhere */
  double layer_seconds[2][DT_PROFILE_LAYERS];
} dt_profile;

/* Starts (or restarts) profile p on be: zeroed, the clock at now. NULL stops profiling. */
void dt_backend_profile(dt_backend *be, dt_profile *p);
/* For backends: charges the time since the previous mark to `phase` (after the backend waited
 * for its queued work). */
void dt_profile_charge(dt_backend *be, int phase);

/* ---- the op list ---------------------------------------------------------------------------
 * Every op, declared once (PETSc's VecAXPY discipline, ggml's op list): each row gives the op's
 * name, its parameters after the backend, and their names. From it come the table a backend
 * fills (dt_backend_ops), the checked wrappers every caller uses (dt_be_<op>(be, ...): each
 * returns a status that must be used, and is the one place for argument checks and timing), and
 * the cases the gpu suite's op test must define, one per op (tests/gpu/test_gpu_ops.c; an op
 * without one does not build). A backend may leave an op NULL: the wrapper then fails with
 * DT_ERR_UNSUPPORTED naming the backend and the op.
 *
 * Every op returns DT_OK or a status with a message (a device backend's launch and copy errors
 * come back here). Vector ops work on n consecutive floats: one node's slice, or a whole slab
 * (count·stride floats: padding between nodes is zero and stays finite). Scalars and results
 * (double *out) are host values. Sums run in index order, so results do not depend on threads.
 * Per-element formulas are dt/formulas.h's.
 *
 *   alloc        zeroed, 64-byte aligned backend memory
 *   upload       host → backend; download: backend → host
 *   fill         y = a;  copy: y = x;  scale: y = a·y;  axpy: y += a·x
 *   axpby        z = a·x + b·y (z may alias x or y)
 *   dot, nrm2    Σ x·y and √Σ x², in double
 *   div          y = (float)(x / d)
 *   mix          the weighted sum of mixing: y = 0 + w[0]·x[0] + w[1]·x[1] + ... in that order (k
 *                vectors; x and w are host arrays, x[j] backend pointers; y aliases no x[j])
 *   sqdist       Σ (x − y)²;  sqdist_mean: Σ (x − sum/count)², sum a double vector in backend memory
 *   mean_of_sum  y = (float)(sum / count), sum a double vector in backend memory
 *   local_step   one fused local-optimizer step of kind s->kind on n elements (dt/formulas.h;
 *                m and v: the kind's state arrays; extra_b may be NULL)
 *   encode       msg (backend memory, c->bytes) ← the compressed message of x (dt/codec.h)
 *   decode_axpy  y += a·Q(x) from such a message; random choices from (seed, DT_RNG_COMPRESS, id)
 *   plan_create  scratch for node-batched model calls: up to `nodes` nodes with batches of up to
 *                max_batch samples. run_nodes is the run's node count (the same on every rank): a
 *                device backend sizes its fixed node groups from it and the model alone, so that
 *                a node's arithmetic does not depend on how many nodes its rank holds.
 *   model_gradients, model_evaluate   node-batched model calls on a plan (dt_node_batch,
 *                dt_node_eval); the CPU computes nodes on its threads, a device backend runs one
 *                batched kernel per layer for a group of nodes.
 *   mix_nodes    mix for `count` outputs at once: y[c] = the mix of its k[c] terms, which follow
 *                those of outputs 0..c−1 in x and w (host arrays; x[j] and y[c] backend
 *                pointers; no y[c] is any output's term): one launch on a device, not one per node
 *   samples_create  a resident copy of a sample set for gathering (a device uploads it once;
 *                the CPU keeps a view: s must outlive it); samples_free releases it
 *   samples_gather  minibatches of many nodes from a resident set (dt_gather)
 *   profile_mark the end of a profiled phase (see "profiling" above)
 *   rows         an elementwise op (copy, fill, scale, axpy, axpby, div) over many rows in one
 *                call (dt_rows; one launch on a device where the rows' scalars fit its parameters)
 *   reduce_rows  nrm2 or sqdist_mean of each of `count` rows into out[count] (host), with one wait
 *   local_step_rows  local_step on each of `count` rows with that row's dt_step s[l] (host array):
 *                p, g, m, v (the last two at the same stride mvs; NULL where the kind keeps none)
 *                and extra_b (may be NULL) at their row strides
 * The two ops that cannot fail, free (accepts NULL) and plan_free, are listed apart. */
/* Many rows at once (ops rows, reduce_rows, local_step_rows): `count` rows of n floats, row l of
 * an operand at its pointer + l·(its stride), each row computed exactly as the single-row op
 * computes it, so a batched call gives the bits of a loop of single calls. */
typedef enum dt_rows_kind {
  DT_ROWS_COPY,  /* z = x */
  DT_ROWS_FILL,  /* z = a */
  DT_ROWS_SCALE, /* z = a·z */
  DT_ROWS_AXPY,  /* z = z + a·x */
  DT_ROWS_AXPBY, /* z = a·x + b·y (z may alias x or y) */
  DT_ROWS_DIV,   /* z = (float)(x / d) */
} dt_rows_kind;
typedef struct dt_rows {
  dt_rows_kind kind;
  size_t n;
  int count;
  const float *x, *y;
  float *z;
  size_t xs, ys, zs;   /* the operands' row strides (floats) */
  float a, b;          /* every row's scalars, */
  const float *av, *bv; /* or each row's (host arrays of count; NULL: a, b) */
  const double *dv;    /* DIV: each row's divisor (host, count) */
} dt_rows;
/* Row l's scalars of a rows op. */
static inline float dt_rows_a(const dt_rows *r, int l) { return r->av != NULL ? r->av[l] : r->a; }
static inline float dt_rows_b(const dt_rows *r, int l) { return r->bv != NULL ? r->bv[l] : r->b; }
typedef enum dt_reduce_kind {
  DT_REDUCE_NRM2,        /* out[l] = √Σ x² (nrm2) */
  DT_REDUCE_SQDIST_MEAN, /* out[l] = Σ (x − sum/div)² (sqdist_mean; sum: one double vector for every row) */
} dt_reduce_kind;

#define DT_BACKEND_OPS(X)                                                                                        \
  X(alloc, (size_t bytes, void **out), (bytes, out))                                                             \
  X(upload, (void *dst, const void *host_src, size_t bytes), (dst, host_src, bytes))                             \
  X(download, (void *host_dst, const void *src, size_t bytes), (host_dst, src, bytes))                           \
  X(fill, (size_t n, float a, float *y), (n, a, y))                                                              \
  X(copy, (size_t n, const float *x, float *y), (n, x, y))                                                       \
  X(scale, (size_t n, float a, float *y), (n, a, y))                                                             \
  X(axpy, (size_t n, float a, const float *x, float *y), (n, a, x, y))                                           \
  X(axpby, (size_t n, float a, const float *x, float b, const float *y, float *z), (n, a, x, b, y, z))           \
  X(dot, (size_t n, const float *x, const float *y, double *out), (n, x, y, out))                                \
  X(nrm2, (size_t n, const float *x, double *out), (n, x, out))                                                  \
  X(div, (size_t n, const float *x, double d, float *y), (n, x, d, y))                                           \
  X(mix, (size_t n, int k, const float *const *x, const float *w, float *y), (n, k, x, w, y))                    \
  X(sqdist, (size_t n, const float *x, const float *y, double *out), (n, x, y, out))                             \
  X(sqdist_mean, (size_t n, const float *x, const double *sum, double count, double *out),                       \
    (n, x, sum, count, out))                                                                                     \
  X(mean_of_sum, (size_t n, const double *sum, double count, float *y), (n, sum, count, y))                      \
  X(local_step, (size_t n, const dt_step *s, float *p, const float *g, float *m, float *v, const float *extra_b), \
    (n, s, p, g, m, v, extra_b))                                                                                 \
  X(encode, (const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg), (c, x, seed, id, msg))    \
  X(decode_axpy, (const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a, float *y),            \
    (c, msg, seed, id, a, y))                                                                                    \
  X(plan_create, (const dt_model *m, int max_batch, int nodes, int run_nodes, void **plan),                      \
    (m, max_batch, nodes, run_nodes, plan))                                                                      \
  X(model_gradients, (void *plan, const dt_node_batch *nb), (plan, nb))                                          \
  X(model_evaluate, (void *plan, const dt_node_eval *ne), (plan, ne))                                            \
  X(mix_nodes, (size_t n, int count, const int *k, const float *const *x, const float *w, float *const *y),      \
    (n, count, k, x, w, y))                                                                                      \
  X(samples_create, (const dt_samples *s, void **res), (s, res))                                                 \
  X(samples_gather, (const void *res, const dt_gather *g), (res, g))                                             \
  X(profile_mark, (int phase), (phase))                                                                          \
  X(rows, (const dt_rows *r), (r))                                                                               \
  X(reduce_rows, (dt_reduce_kind kind, size_t n, int count, const float *x, size_t xs, const double *sum,         \
                  double div, double *out), (kind, n, count, x, xs, sum, div, out))                              \
  X(local_step_rows, (size_t n, int count, const dt_step *s, float *p, size_t ps, const float *g, size_t gs,      \
                      float *m, float *v, size_t mvs, const float *extra_b, size_t ebs),                         \
    (n, count, s, p, ps, g, gs, m, v, mvs, extra_b, ebs))
#define DT_BACKEND_VOID_OPS(X)           \
  X(free, (void *p), (p))                \
  X(plan_free, (void *plan), (plan))     \
  X(samples_free, (void *res), (res))

/* An op row's parameter and argument lists with the backend put first. */
#define DT_OP_PARAMS(...) (dt_backend * be, __VA_ARGS__)
#define DT_OP_ARGS(...) (be, __VA_ARGS__)

typedef struct dt_backend_ops {
#define DT_OP_MEMBER(name, params, args) dt_status(*name) DT_OP_PARAMS params;
#define DT_VOID_OP_MEMBER(name, params, args) void(*name) DT_OP_PARAMS params;
  DT_BACKEND_OPS(DT_OP_MEMBER)
  DT_BACKEND_VOID_OPS(DT_VOID_OP_MEMBER)
#undef DT_OP_MEMBER
#undef DT_VOID_OP_MEMBER
} dt_backend_ops;

/* A backend instance. */
struct dt_backend {
  const dt_backend_ops *ops;
  const char *name;
  int host_memory; /* its pointers are host memory: upload/download to the same address are no-ops */
  /* A device backend: its device's memory in bytes (0: not known) and how many devices this host
   * has (the ranks on a host share them, local rank mod count): what the memory estimate holds
   * the state and workspaces against. */
  size_t device_memory;
  int device_count;
  int threads;     /* CPU: threads computing local nodes in parallel */
  int tf32;        /* a device backend's matrix products may round inputs to TF32 (experiment.tf32) */
  void *ctx;       /* the backend's own state */
  dt_profile *profile; /* profile: true: where phases are charged (dt_backend_profile), else NULL */
  /* The bytes its alloc holds now and the most it has held (the CPU backend counts them; 0 where
   * a backend does not): what `dtrun check`'s memory estimate is tested against. */
  size_t mem_live, mem_peak;
};

/* DT_ERR_UNSUPPORTED: backend be does not have op `op` (its table entry is NULL). */
DT_MUST_USE dt_status dt_backend_unsupported(const dt_backend *be, const char *op);

/* The checked wrappers: dt_be_<op>(be, ...) for every op of the list. */
#define DT_OP_WRAPPER(name, params, args)                                                 \
  DT_MUST_USE static inline dt_status dt_be_##name DT_OP_PARAMS params {                  \
    if (be->ops->name == NULL) return dt_backend_unsupported(be, #name);                  \
    return be->ops->name DT_OP_ARGS args;                                                 \
  }
#define DT_VOID_OP_WRAPPER(name, params, args) \
  static inline void dt_be_##name DT_OP_PARAMS params { be->ops->name DT_OP_ARGS args; }
DT_BACKEND_OPS(DT_OP_WRAPPER)
DT_BACKEND_VOID_OPS(DT_VOID_OP_WRAPPER)
#undef DT_OP_WRAPPER
#undef DT_VOID_OP_WRAPPER

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

/* The backend `auto` takes: the first usable device backend, else the CPU, with the one-line note
 * into note (empty when there is nothing to say). Creates nothing. */
const dt_backend_def *dt_backend_auto(char *note, size_t note_size);
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

/* Chooses OpenBLAS's kernels, in this process (no restart), before any BLAS call: the core that
 * DT_BLAS_KERNELS names (Haswell, Prescott, ...: pinned kernels, the same bits on every machine
 * that runs them); else OPENBLAS_CORETYPE, when the environment sets it, as OpenBLAS read it; else
 * OpenBLAS's own choice, except on an AVX-512 CPU that it takes for Haswell or Zen (Zen 4), which
 * gets SkylakeX kernels. DT_BLAS_KERNELS=keep leaves OpenBLAS's choice. Returns 0 with the reason in
 * why when DT_BLAS_KERNELS names kernels this OpenBLAS cannot run. */
int dt_cpu_select_kernels(char *why, size_t why_size);
/* Why OpenBLAS runs the kernels dt_cpu_kernel_name names: its own choice, DT_BLAS_KERNELS, the
 * environment's OPENBLAS_CORETYPE, or dtrun's choice for an AVX-512 CPU (summary.yaml's
 * blas_kernels_why). */
const char *dt_cpu_kernel_reason(void);
/* A build with the CUDA backend: opens cuBLAS, as the backend does when it is first created (it is
 * not linked, so a dtrun that does not use the GPU never maps it); 0 with the reason in why where
 * it cannot. */
int dt_cuda_blas_open(char *why, size_t size);
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
/* dst_l = a[l]·x_l + b·y_l, each node its own a (a host array of count), every node in one call;
 * y += a·x over every node. */
DT_MUST_USE dt_status dt_slab_axpby_nodes(dt_backend *be, const float *a, const dt_slab *x, float b, const dt_slab *y,
                                          dt_slab *dst);
DT_MUST_USE dt_status dt_slab_axpy(dt_backend *be, float a, const dt_slab *x, dt_slab *y);
/* Row l of a rows op through be's single-row ops: what a batched rows op must equal, and how a
 * backend computes a row it does not batch. */
DT_MUST_USE dt_status dt_rows_row(dt_backend *be, const dt_rows *r, int l);
DT_MUST_USE dt_status dt_slab_fill(dt_backend *be, dt_slab *s, float a);
/* dst = a·x + b·y */
DT_MUST_USE dt_status dt_slab_axpby(dt_backend *be, float a, const dt_slab *x, float b, const dt_slab *y, dt_slab *dst);
/* hi + lo ← hi + lo + c·t by compensated (Kahan) summation: lo carries what rounding hi loses, so
 * a vector grown this way over many rounds gains ~ε² of its size per round, not ε (the exact
 * methods' dual). t is scratch (overwritten); the three slabs share a shape. Four vector ops:
 * *hi and *lo trade their memory, so hold them by these structs (as dt_run_keep_slab does), not
 * by their data pointers. */
DT_MUST_USE dt_status dt_slab_add_compensated(dt_backend *be, float c, dt_slab *t, dt_slab *hi, dt_slab *lo);
/* Every node of dst gets the same host vector (dim floats). */
DT_MUST_USE dt_status dt_slab_broadcast_host(dt_backend *be, const float *host, dt_slab *dst);
/* Node l to the host (dim floats), or from it. */
DT_MUST_USE dt_status dt_slab_download_node(dt_backend *be, const dt_slab *s, int l, float *host);
DT_MUST_USE dt_status dt_slab_upload_node(dt_backend *be, dt_slab *s, int l, const float *host);

/* Host view of backend memory for reading: the memory itself on a host-memory backend, else a
 * copy into *scratch (allocated on first use, bytes long; free with dt_free). */
DT_MUST_USE dt_status dt_backend_host_view(dt_backend *be, const void *src, size_t bytes, void **scratch, const void **view);

#endif
