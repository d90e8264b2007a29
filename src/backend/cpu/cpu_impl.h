/* The CPU backend's ops, shared between its files and the table in cpu.c. */
#ifndef DT_CPU_IMPL_H
#define DT_CPU_IMPL_H

#include "../backend.h"

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

#endif
