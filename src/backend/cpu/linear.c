/* Fully connected layers on the CPU: one sgemm over the whole batch in each direction. */
#include <cblas.h>
#include <string.h>

#include "cpu_impl.h"

void dt_cpu_linear_forward(int batch, int in, int out, const float *x, const float *w,
                           const float *b, float *y) {
  for (int n = 0; n < batch; n++) memcpy(y + (size_t)n * out, b, sizeof(float) * (size_t)out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out, in, 1.0f, x, in, w, in, 1.0f,
              y, out);
}

void dt_cpu_linear_backward(int batch, int in, int out, const float *x, const float *w,
                            const float *dy, float *dw, float *db, float *dx) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, batch, 1.0f, dy, out, x, in,
              0.0f, dw, in);
  for (int o = 0; o < out; o++) db[o] = 0.0f;
  for (int n = 0; n < batch; n++)
    for (int o = 0; o < out; o++) db[o] += dy[(size_t)n * out + o];
  if (dx != NULL)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in, out, 1.0f, dy, out, w, in,
                0.0f, dx, in);
}
