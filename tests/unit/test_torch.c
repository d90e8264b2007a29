/* Cross-check against PyTorch 1.13 (Debian python3-torch): the same weights and batch through
 * dtrun's model and PyTorch's give the same loss, gradients and parameters after one Adam step,
 * to 1e-5 relative, for the seed CNN and the larger two-convolution CNN. Skipped (77) when
 * /usr/bin/python3 has no torch. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "dt/nn.h"
#include "models.h"
#include "dt/local_opt.h"

static int have_torch(void) {
  return system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

/* max |a-b| / (max|b| over the vector): relative to the vector's scale, as llm.c's checks. */
static double rel_err(const float *a, const float *b, size_t n) {
  double scale = 0, err = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
  for (size_t i = 0; i < n; i++) err = fmax(err, fabs((double)a[i] - b[i]));
  return err / fmax(scale, 1e-30);
}

static void crosscheck(const char *arch) {
  dt_model_spec spec;
  if (strcmp(arch, "seed") == 0) dt_model_spec_seed_cnn(&spec, 3, 5, 64);
  else large_cnn(&spec);
  dt_model *m = NULL;
  dt_workspace *ws = NULL;
  dt_local_opt *opt = NULL;
  dt_backend *be = NULL;
  CHECK_OK(dt_backend_cpu_create(1, &be));
  CHECK_OK(dt_model_create(&spec, &m));
  const int B = 16;
  CHECK_OK(dt_workspace_create(be, m, B, &ws));
  const size_t P = dt_model_num_params(m);
  float *p = calloc(P, 4), *g = calloc(P, 4), *tg = calloc(P, 4), *tp = calloc(P, 4), *x = calloc(B * 784, 4);
  int32_t y[16];
  dt_rng r;
  dt_rng_init(&r, 3, DT_RNG_TEST, 0);
  dt_model_init_params(m, 11, p);
  for (int i = 0; i < B * 784; i++) x[i] = (float)dt_rng_normal(&r);
  for (int i = 0; i < B; i++) y[i] = (int32_t)dt_rng_below(&r, 10);
  const double lr = 0.01;

  char in[] = "/tmp/dt_torch_in_XXXXXX", out[] = "/tmp/dt_torch_out_XXXXXX";
  int fi = mkstemp(in), fo = mkstemp(out);
  FILE *f = fdopen(fi, "wb");
  int64_t hdr[2] = {(int64_t)P, B};
  fwrite(hdr, 8, 2, f);
  fwrite(&lr, 8, 1, f);
  fwrite(p, 4, P, f);
  fwrite(x, 4, (size_t)B * 784, f);
  fwrite(y, 4, B, f);
  fclose(f);
  close(fo);
  char cmd[1024];
  const char *root = getenv("DT_SOURCE_ROOT");
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/unit/torch_crosscheck.py %s %s %s", root ? root : ".", in, out, arch);
  CHECK(system(cmd) == 0, "%s failed", cmd);

  float loss;
  CHECK_OK(dt_model_forward_backward(be, m, ws, p, NULL, x, y, B, g, &loss, NULL));
  dt_local_opt_spec os = dt_local_opt_spec_default(DT_LOCAL_ADAM);
  os.lr = (float)lr;
  CHECK_OK(dt_local_opt_create(be, &os, 1, P, &opt));

  double tloss = 0;
  f = fopen(out, "rb");
  int ok = f && fread(&tloss, 8, 1, f) == 1 && fread(tg, 4, P, f) == P && fread(tp, 4, P, f) == P;
  if (f) fclose(f);
  CHECK(ok, "could not read PyTorch's results");
  if (ok) {
    CHECK(fabs(loss - tloss) <= 1e-5 * fabs(tloss), "%s loss: dtrun %.9g, PyTorch %.9g", arch, loss, tloss);
    /* Adam's first step is about lr·g/(|g|+eps): entries of g near zero turn float noise of
     * the gradient into different updates. The step is checked on PyTorch's own gradient, which
     * tests the optimizer exactly; the gradient check above tests the model. */
    if (opt != NULL) CHECK_OK(dt_local_opt_step(opt, 0, p, tg, -1.0f, NULL));
    double eg = rel_err(g, tg, P), ep = rel_err(p, tp, P);
    CHECK(eg <= 1e-5, "%s gradient: relative error %g", arch, eg);
    CHECK(ep <= 1e-5, "%s parameters after one Adam step: relative error %g", arch, ep);
    printf("%s CNN (%zu params): loss %.7f vs %.7f, gradient error %.2e, Adam step error %.2e\n", arch, P, loss, tloss, eg, ep);
  }
  unlink(in);
  unlink(out);
  free(p), free(g), free(tg), free(tp), free(x);
  dt_local_opt_free(opt);
  dt_workspace_free(be, ws);
  dt_model_free(m);
  dt_backend_free(be);
}

/* Ten steps of each local optimizer on the same start and gradients as torch.optim's, to 1e-5
 * of the vector's scale. NAdam is not here: Debian's torch 1.13 multiplies μ_t twice into its
 * second term (fixed in PyTorch 2.0); test_nn checks NAdam against PyTorch 2's formula. */
static void optimizer_crosscheck(void) {
  enum { N = 1000, STEPS = 10 };
  static const struct {
    const char *name;
    dt_local_opt_kind kind;
    float wd, momentum;
    int nesterov;
  } cases[] = {
      {"sgd-nesterov", DT_LOCAL_SGD, 0.01f, 0.9f, 1}, {"adam", DT_LOCAL_ADAM, 0.01f, 0, 0},
      {"adamw", DT_LOCAL_ADAMW, 0.01f, 0, 0},         {"rmsprop", DT_LOCAL_RMSPROP, 0.01f, 0, 0},
      {"rmsprop-momentum", DT_LOCAL_RMSPROP, 0, 0.5f, 0}, {"adadelta", DT_LOCAL_ADADELTA, 0.01f, 0, 0},
  };
  dt_backend *be = NULL;
  CHECK_OK(dt_backend_cpu_create(1, &be));
  float *x = malloc(4 * N), *g = malloc(4 * (size_t)N * STEPS), *tx = malloc(4 * N);
  dt_rng r;
  dt_rng_init(&r, 5, DT_RNG_TEST, 1);
  for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
    for (int i = 0; i < N; i++) x[i] = (float)dt_rng_normal(&r);
    for (int i = 0; i < N * STEPS; i++) g[i] = (float)dt_rng_normal(&r);
    char in[] = "/tmp/dt_torch_in_XXXXXX", out[] = "/tmp/dt_torch_out_XXXXXX";
    int fi = mkstemp(in), fo = mkstemp(out);
    FILE *f = fdopen(fi, "wb");
    const int64_t hdr[2] = {N, STEPS};
    fwrite(hdr, 8, 2, f);
    fwrite(x, 4, N, f);
    fwrite(g, 4, (size_t)N * STEPS, f);
    fclose(f);
    close(fo);
    char cmd[1024];
    const char *root = getenv("DT_SOURCE_ROOT");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/unit/torch_optim.py %s %s %s", root ? root : ".", in, out, cases[c].name);
    CHECK(system(cmd) == 0, "%s failed", cmd);
    f = fopen(out, "rb");
    const int ok = f != NULL && fread(tx, 4, N, f) == N;
    if (f) fclose(f);
    unlink(in);
    unlink(out);
    CHECK(ok, "could not read PyTorch's %s result", cases[c].name);
    dt_local_opt_spec s = dt_local_opt_spec_default(cases[c].kind);
    if (cases[c].kind == DT_LOCAL_SGD) s.lr = 0.01f;
    if (cases[c].kind != DT_LOCAL_ADAMW) s.weight_decay = cases[c].wd;
    s.momentum = cases[c].momentum;
    s.nesterov = cases[c].nesterov;
    dt_local_opt *o = NULL;
    CHECK_OK(dt_local_opt_create(be, &s, 1, N, &o));
    for (int t = 0; t < STEPS && o != NULL; t++) CHECK_OK(dt_local_opt_step(o, 0, x, g + (size_t)t * N, -1.0f, NULL));
    dt_local_opt_free(o);
    const double e = rel_err(x, tx, N);
    CHECK(ok && e <= 1e-5, "%s: relative error %g after %d steps", cases[c].name, e, STEPS);
    printf("%-17s %d steps: relative error %.2e vs torch.optim\n", cases[c].name, STEPS, e);
  }
  free(x), free(g), free(tx);
  dt_backend_free(be);
}

int main(void) {
  if (!have_torch()) {
    fprintf(stderr, "skipping: /usr/bin/python3 has no torch (scripts/setup.sh --with-torch)\n");
    return 77;
  }
  crosscheck("seed");
  crosscheck("large");
  optimizer_crosscheck();
  return check_report("test_torch");
}
