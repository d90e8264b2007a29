/* The CPU backend's ops, shared between its files and the table in cpu.c. */
#ifndef DT_CPU_IMPL_H
#define DT_CPU_IMPL_H

#include "../backend.h"

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
