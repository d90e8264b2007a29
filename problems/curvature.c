/* A cheap bound on the curvature of convex problems, for `dtrun check`'s step-size warning.
 *
 * Softmax regression (a model that is one linear layer, after an optional flatten) with mean
 * NLL over n samples x̃ = (x, 1) has the Hessian H ⪯ ½ (I − 11ᵀ/K) ⊗ X̃ᵀX̃/n (Böhning 1992),
 * so its gradient is L-Lipschitz with L = ½ λmax(X̃ᵀX̃/n), plus l2 for the L2 term. λmax comes from power
 * iteration, which approaches it from below; the bound is therefore never overstated. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "dt/problem.h"

/* Whether spec is softmax regression: [flatten,] linear. */
static int is_softmax_regression(const dt_model_spec *spec) {
  int linear = 0;
  for (int i = 0; i < spec->num_layers; i++) {
    if (spec->layers[i].kind == DT_LAYER_LINEAR) linear++;
    else if (spec->layers[i].kind != DT_LAYER_FLATTEN) return 0;
  }
  return linear == 1;
}

/* λmax(X̃ᵀX̃/n) of the n rows of x (cols floats each, bias column implied) by power iteration. */
static dt_status top_eigenvalue(const float *x, size_t n, size_t cols, double *out) {
  dt_status st = DT_OK;
  float *v = NULL, *w = NULL, *u = NULL, *ones = NULL;
  DT_ALLOC_GOTO(v, cols + 1, "curvature");
  DT_ALLOC_GOTO(w, cols + 1, "curvature");
  DT_ALLOC_GOTO(u, n, "curvature");
  DT_ALLOC_GOTO(ones, n, "curvature");
  for (size_t r = 0; r < n; r++) ones[r] = 1.0f;
  for (size_t c = 0; c <= cols; c++) v[c] = 1.0f / sqrtf((float)(cols + 1));
  double lambda = 0;
  for (int it = 0; it < 300; it++) {
    /* u = X̃v = X v[0..cols) + v[cols]; w = X̃ᵀu / n */
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)cols, 1.0f, x, (int)cols, v, 1, 0.0f, u, 1);
    cblas_saxpy((int)n, v[cols], ones, 1, u, 1);
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)n, (int)cols, 1.0f / (float)n, x, (int)cols, u, 1, 0.0f, w, 1);
    w[cols] = cblas_sdot((int)n, u, 1, ones, 1) / (float)n;
    const double next = cblas_snrm2((int)cols + 1, w, 1); /* ‖X̃ᵀX̃v‖/n with ‖v‖ = 1 */
    if (next == 0) break;
    cblas_scopy((int)cols + 1, w, 1, v, 1);
    cblas_sscal((int)cols + 1, (float)(1.0 / next), v, 1);
    const int done = fabs(next - lambda) <= 1e-6 * next;
    lambda = next;
    if (done) break;
  }
  *out = lambda;
cleanup:
  dt_free(v), dt_free(w), dt_free(u), dt_free(ones);
  return st;
}

dt_status dt_problem_lipschitz(const dt_samples *train, const dt_split *split, const dt_model_spec *spec, double *out) {
  dt_status st = DT_OK;
  float *x = NULL;
  int32_t *y = NULL;
  *out = 0;
  if (!is_softmax_regression(spec)) return DT_OK;
  size_t most = 0;
  for (int i = 0; i < split->num_nodes; i++)
    if (dt_split_size(split, i) > most) most = dt_split_size(split, i);
  DT_ALLOC_GOTO(x, most * train->dim, "curvature");
  DT_ALLOC_GOTO(y, most, "curvature");
  for (int i = 0; i < split->num_nodes; i++) {
    const size_t n = dt_split_size(split, i);
    double lambda = 0;
    dt_samples_rows(train, split->idx + split->start[i], n, x, y);
    DT_TRY_GOTO(top_eigenvalue(x, n, train->dim, &lambda));
    if (0.5 * lambda > *out) *out = 0.5 * lambda;
  }
cleanup:
  dt_free(x);
  dt_free(y);
  return st;
}
