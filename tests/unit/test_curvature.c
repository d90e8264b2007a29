/* dt_problem_lipschitz (problems/curvature.c), the bound behind check's 2/L warning, against
 * LAPACK's eigenvalues of each node's Gram matrix X̃ᵀX̃/n computed here in double: the power
 * iteration must come within 0.1% of the top eigenvalue and never above it (beyond float
 * rounding), for data with a dominant mean direction (like pixels) and for centred data. */
#include <stdlib.h>

#include "check.h"
#include "dt/problem.h"
#include "dt/rng.h"

/* LAPACK (in OpenBLAS): eigenvalues of a symmetric matrix, ascending */
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w, double *work, const int *lwork,
            int *info);

static double top_half_eigenvalue(const float *x, const dt_split *split, int cols) {
  const int m = cols + 1, lwork = 64 * m;
  double *g = calloc((size_t)m * m, sizeof(double)), *w = calloc((size_t)m, sizeof(double)), *work = calloc((size_t)lwork, sizeof(double));
  double best = 0;
  for (int i = 0; i < split->num_nodes; i++) {
    const size_t n = dt_split_size(split, i);
    memset(g, 0, sizeof(double) * (size_t)m * m);
    for (size_t r = 0; r < n; r++) {
      const float *row = x + (size_t)split->idx[split->start[i] + r] * cols;
      for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++) g[a * m + b] += (a < cols ? row[a] : 1.0) * (b < cols ? row[b] : 1.0) / (double)n;
    }
    int info = 0;
    dsyev_("N", "U", &m, g, &m, w, work, &lwork, &info);
    CHECK(info == 0, "dsyev info %d", info);
    if (0.5 * w[m - 1] > best) best = 0.5 * w[m - 1];
  }
  free(g), free(w), free(work);
  return best;
}

static void case_of(double offset, const char *what) {
  enum { COUNT = 400, COLS = 12 };
  float *x = malloc(sizeof(float) * COUNT * COLS);
  uint8_t labels[COUNT] = {0};
  dt_rng r;
  dt_rng_init(&r, 5, DT_RNG_TEST, (uint64_t)(offset * 10));
  for (int s = 0; s < COUNT; s++)
    for (int c = 0; c < COLS; c++) x[s * COLS + c] = (float)(offset * (1 + c % 3) + dt_rng_normal(&r));
  dt_samples train = {.count = COUNT, .dim = COLS, .f32 = x, .labels = labels, .in_c = 1, .in_h = 1, .in_w = COLS, .num_classes = 3};
  /* three nodes of different sizes, samples interleaved */
  size_t start[4] = {0, 90, 250, COUNT};
  uint32_t idx[COUNT];
  for (int s = 0; s < COUNT; s++) idx[s] = (uint32_t)((s * 7) % COUNT);
  dt_split split = {.num_nodes = 3, .start = start, .idx = idx};
  dt_model_spec spec = {.in_channels = 1, .in_height = 1, .in_width = COLS, .num_classes = 3, .num_layers = 2};
  spec.layers[0].kind = DT_LAYER_FLATTEN;
  spec.layers[1].kind = DT_LAYER_LINEAR;
  spec.layers[1].out_features = 3;
  double got = -1;
  CHECK(dt_problem_lipschitz(&train, &split, &spec, &got) == DT_OK, "%s: %s", what, dt_error_message());
  const double want = top_half_eigenvalue(x, &split, COLS);
  printf("%s: power iteration %.9g, LAPACK %.9g\n", what, got, want);
  CHECK(got <= want * (1 + 1e-6) && got >= want * (1 - 1e-3), "%s: %.9g against the top eigenvalue's half %.9g", what, got, want);
  /* a model that is not softmax regression: no bound */
  spec.num_layers = 3;
  spec.layers[2] = spec.layers[1];
  spec.layers[1].kind = DT_LAYER_RELU;
  CHECK(dt_problem_lipschitz(&train, &split, &spec, &got) == DT_OK && got == 0, "%s: a model with a relu got a bound %g", what, got);
  free(x);
}

int main(void) {
  case_of(2.0, "offset data");
  case_of(0.0, "centred data");
  return check_report("test_curvature");
}
