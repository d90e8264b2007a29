/* The CPU backend's ops, shared between its files and the table in cpu.c. */
#ifndef DT_CPU_IMPL_H
#define DT_CPU_IMPL_H

#include "dt/backend.h"

/* Hot loops are compiled for several x86-64 levels and the best one is picked at load time
 * (ifunc). The build's baseline is plain x86-64 (SSE2), which would leave AVX2/AVX-512 unused.
 * ISO C mode keeps floating-point contraction off, so every clone computes the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define DT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DT_CLONES
#endif

void dt_cpu_conv2d_forward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                           const float *b, float *y, float *col);
void dt_cpu_conv2d_backward(const dt_conv_shape *s, int batch, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx, float *col,
                            float *dcol);
void dt_cpu_linear_forward(int batch, int in, int out, const float *x, const float *w,
                           const float *b, float *y);
void dt_cpu_linear_backward(int batch, int in, int out, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx);

/* vec.c: memory and vector ops */
dt_status dt_cpu_alloc(dt_backend *be, size_t bytes, void **out);
void dt_cpu_free(dt_backend *be, void *p);
dt_status dt_cpu_upload(dt_backend *be, void *dst, const void *src, size_t bytes);
dt_status dt_cpu_download(dt_backend *be, void *dst, const void *src, size_t bytes);
dt_status dt_cpu_fill(dt_backend *be, size_t n, float a, float *y);
dt_status dt_cpu_copy(dt_backend *be, size_t n, const float *x, float *y);
dt_status dt_cpu_scale(dt_backend *be, size_t n, float a, float *y);
dt_status dt_cpu_axpy(dt_backend *be, size_t n, float a, const float *x, float *y);
dt_status dt_cpu_axpby(dt_backend *be, size_t n, float a, const float *x, float b, const float *y, float *z);
dt_status dt_cpu_dot(dt_backend *be, size_t n, const float *x, const float *y, double *out);
dt_status dt_cpu_nrm2(dt_backend *be, size_t n, const float *x, double *out);
dt_status dt_cpu_div(dt_backend *be, size_t n, const float *x, double d, float *y);
dt_status dt_cpu_mix(dt_backend *be, size_t n, int k, const float *const *x, const float *w, float *y);
dt_status dt_cpu_sqdist(dt_backend *be, size_t n, const float *x, const float *y, double *out);
dt_status dt_cpu_sqdist_mean(dt_backend *be, size_t n, const float *x, const double *sum, double count, double *out);
dt_status dt_cpu_mean_of_sum(dt_backend *be, size_t n, const double *sum, double count, float *y);

/* model.c: node-batched model calls on the backend's threads */
dt_status dt_cpu_plan_create(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, void **plan);
void dt_cpu_plan_free(dt_backend *be, void *plan);
dt_status dt_cpu_model_gradients(dt_backend *be, void *plan, const dt_node_batch *nb);
dt_status dt_cpu_model_evaluate(dt_backend *be, void *plan, const dt_node_eval *ne);

#endif
