/* The convex problem: multinomial logistic regression (a single linear layer under log-softmax
 * and NLL, plus the problem's L2 term), on synthetic data drawn here or on MNIST pixels. The data
 * come from a known logistic model, so the optimum is finite and unique (with L2 > 0, strictly). */
#include <math.h>

#include "dt/problem.h"
#include "dt/rng.h"

dt_status dt_synthetic_make(uint64_t seed, int n, int features, int classes, uint64_t stream,
                            float **x, uint8_t **labels) {
  dt_status st = DT_OK;
  double *w = NULL, *z = NULL;
  *x = NULL;
  *labels = NULL;
  DT_ALLOC_GOTO(w, (size_t)classes * features, "synthetic model");
  DT_ALLOC_GOTO(z, classes, "synthetic model");
  DT_ALLOC_GOTO(*x, (size_t)n * features, "synthetic data");
  DT_ALLOC_GOTO(*labels, n, "synthetic labels");
  dt_rng r;
  dt_rng_init(&r, seed, DT_RNG_DATA, 1000); /* the true model: the same for train and test */
  for (int i = 0; i < classes * features; i++) w[i] = dt_rng_normal(&r) / sqrt((double)features);
  dt_rng_init(&r, seed, DT_RNG_DATA, stream);
  for (int s = 0; s < n; s++) {
    float *xs = *x + (size_t)s * features;
    for (int f = 0; f < features; f++) xs[f] = (float)dt_rng_normal(&r);
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < classes; c++) {
      z[c] = 0;
      for (int f = 0; f < features; f++) z[c] += 3.0 * w[c * features + f] * xs[f];
      mx = z[c] > mx ? z[c] : mx;
    }
    for (int c = 0; c < classes; c++) sum += z[c] = exp(z[c] - mx);
    double u = dt_rng_double(&r) * sum, acc = 0;
    int label = classes - 1;
    for (int c = 0; c < classes; c++) {
      acc += z[c];
      if (u < acc) {
        label = c;
        break;
      }
    }
    (*labels)[s] = (uint8_t)label;
  }
cleanup:
  dt_free(w);
  dt_free(z);
  if (st != DT_OK) {
    dt_free(*x);
    dt_free(*labels);
    *x = NULL;
    *labels = NULL;
  }
  return st;
}
