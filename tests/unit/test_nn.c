/* Neural-network core: each CPU op against a naive loop, finite-difference gradient checks for
 * every layer kind and for whole models, the seed CNN's size and PyTorch-style initialisation,
 * and the optimizers against their formulas evaluated in double. */
#include <stdlib.h>

#include "dt/backend.h"
#include "dt_config.h"
#include "check.h"
#include "../../src/backend/cpu/cpu_impl.h" /* the CPU layer kernels, tested against naive loops */
#include "dt/nn.h"
#include "dt/local_opt.h"

static dt_rng rng;
static dt_backend *be; /* the CPU backend, the reference */

static void randu(float *v, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) v[i] = (2.0f * dt_rng_float(&rng) - 1.0f) * scale;
}

static float *fvec(size_t n) { return calloc(n + 1, sizeof(float)); }

/* ---- ops against naive loops ------------------------------------------------------------- */

static void test_conv_op_w(int c, int h, int width, int f, int k, int stride, int pad) {
  dt_conv_shape s = {.c = c, .h = h, .w = width, .f = f, .k = k, .stride = stride, .pad = pad};
  s.oh = (s.h + 2 * pad - k) / stride + 1;
  s.ow = (s.w + 2 * pad - k) / stride + 1;
  const int B = 3;
  size_t nin = (size_t)B * c * s.h * s.w, nout = (size_t)B * f * s.oh * s.ow, nw = (size_t)f * c * k * k;
  size_t ncol = (size_t)c * k * k * ((size_t)s.oh * s.ow + f); /* the layer's col_size */
  if (dt_conv_winograd(&s) && dt_conv_winograd_scratch(&s) > ncol) ncol = dt_conv_winograd_scratch(&s);
  float *x = fvec(nin), *w = fvec(nw), *b = fvec(f), *y = fvec(nout), *col = fvec(ncol);
  float *dcol = fvec(ncol), *dy = fvec(nout), *dw = fvec(nw), *db = fvec(f), *dx = fvec(nin);
  randu(x, nin, 1);
  randu(w, nw, 1);
  randu(b, f, 1);
  randu(dy, nout, 1);
  dt_cpu_conv2d_forward(&s, B, x, w, b, y, col);
  dt_cpu_conv2d_backward(&s, B, x, w, dy, dw, db, dx, col, dcol);
  /* each result against the double-precision loop, within 1e-5 of the sum of its terms' magnitudes
   * (a float sum's error bound is proportional to that sum; Winograd F(4×4, 3×3)'s transforms add
   * a constant factor: it measures up to 3.4e-6 of it) */
  double *rdw = calloc(nw, sizeof(double)), *rdx = calloc(nin, sizeof(double)), *rdb = calloc(f, sizeof(double));
  double *adw = calloc(nw, sizeof(double)), *adx = calloc(nin, sizeof(double));
  double worst = 0;
  for (int n = 0; n < B; n++)
    for (int o = 0; o < f; o++)
      for (int i = 0; i < s.oh; i++)
        for (int j = 0; j < s.ow; j++) {
          double acc = b[o], mag = fabs(b[o]);
          size_t yi = (((size_t)n * f + o) * s.oh + i) * s.ow + j;
          rdb[o] += dy[yi];
          for (int ci = 0; ci < c; ci++)
            for (int ki = 0; ki < k; ki++)
              for (int kj = 0; kj < k; kj++) {
                int ih = i * stride - pad + ki, iw = j * stride - pad + kj;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                size_t xi = (((size_t)n * c + ci) * s.h + ih) * s.w + iw, wi = (((size_t)o * c + ci) * k + ki) * k + kj;
                acc += (double)x[xi] * w[wi], mag += fabs((double)x[xi] * w[wi]);
                rdw[wi] += (double)dy[yi] * x[xi], adw[wi] += fabs((double)dy[yi] * x[xi]);
                rdx[xi] += (double)dy[yi] * w[wi], adx[xi] += fabs((double)dy[yi] * w[wi]);
              }
          worst = fmax(worst, fabs(acc - y[yi]) / (1e-5 * mag + 1e-6));
        }
  CHECK(worst <= 1, "conv forward c%d h%d f%d k%d s%d p%d: error %g of its bound", c, h, f, k, stride, pad, worst);
  double e_w = 0, e_x = 0, e_b = 0;
  for (size_t i = 0; i < nw; i++) e_w = fmax(e_w, fabs(rdw[i] - dw[i]) / (1e-5 * adw[i] + 1e-6));
  for (size_t i = 0; i < nin; i++) e_x = fmax(e_x, fabs(rdx[i] - dx[i]) / (1e-5 * adx[i] + 1e-6));
  for (int i = 0; i < f; i++) e_b = fmax(e_b, fabs(rdb[i] - db[i]));
  CHECK(e_w <= 1 && e_x <= 1 && e_b < 1e-4, "conv backward c%d k%d s%d p%d: dw %g dx %g of their bounds, db %g", c, k, stride, pad,
        e_w, e_x, e_b);
  free(x), free(w), free(b), free(y), free(col), free(dcol), free(dy), free(dw), free(db), free(dx);
  free(rdw), free(rdx), free(rdb), free(adw), free(adx);
}

static void test_conv_op(int c, int h, int f, int k, int stride, int pad) { test_conv_op_w(c, h, h + 1, f, k, stride, pad); }

static void test_linear_pool_loss_ops(void) {
  const int B = 5, in = 17, out = 7;
  float *x = fvec(B * in), *w = fvec(out * in), *b = fvec(out), *y = fvec(B * out), *dy = fvec(B * out);
  float *dw = fvec(out * in), *db = fvec(out), *dx = fvec(B * in);
  randu(x, B * in, 1), randu(w, out * in, 1), randu(b, out, 1), randu(dy, B * out, 1);
  dt_cpu_linear_forward(B, in, out, x, w, b, y);
  dt_cpu_linear_backward(B, in, out, x, w, dy, dw, db, dx);
  double e = 0, ew = 0, ex = 0, eb = 0;
  for (int n = 0; n < B; n++)
    for (int o = 0; o < out; o++) {
      double acc = b[o];
      for (int i = 0; i < in; i++) acc += (double)x[n * in + i] * w[o * in + i];
      e = fmax(e, fabs(acc - y[n * out + o]));
    }
  for (int o = 0; o < out; o++) {
    double sb = 0;
    for (int n = 0; n < B; n++) sb += dy[n * out + o];
    eb = fmax(eb, fabs(sb - db[o]));
    for (int i = 0; i < in; i++) {
      double s = 0;
      for (int n = 0; n < B; n++) s += (double)dy[n * out + o] * x[n * in + i];
      ew = fmax(ew, fabs(s - dw[o * in + i]));
    }
  }
  for (int n = 0; n < B; n++)
    for (int i = 0; i < in; i++) {
      double s = 0;
      for (int o = 0; o < out; o++) s += (double)dy[n * out + o] * w[o * in + i];
      ex = fmax(ex, fabs(s - dx[n * in + i]));
    }
  CHECK(e < 1e-5 && ew < 1e-5 && ex < 1e-5 && eb < 1e-5, "linear: y %g dw %g dx %g db %g", e, ew, ex, eb);

  /* maxpool 3x3 stride 2 on 7x8 (non-square, overlapping windows) */
  dt_pool_shape ps = {.c = 2, .h = 7, .w = 8, .k = 3, .stride = 2, .oh = 3, .ow = 3};
  size_t nin = 2 * 2 * 7 * 8, nout = 2 * 2 * 3 * 3;
  float *px = fvec(nin), *py = fvec(nout), *pdy = fvec(nout), *pdx = fvec(nin);
  int32_t *arg = calloc(nout, sizeof(int32_t));
  double *rdx = calloc(nin, sizeof(double));
  randu(px, nin, 1), randu(pdy, nout, 1);
  dt_cpu_maxpool_forward(&ps, 2, px, py, arg);
  dt_cpu_maxpool_backward(&ps, 2, pdy, arg, pdx);
  int bad = 0;
  for (int pl = 0; pl < 4; pl++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        float m = -INFINITY;
        int mi = 0;
        for (int a = 0; a < 3; a++)
          for (int c = 0; c < 3; c++) {
            int idx = (2 * i + a) * 8 + 2 * j + c;
            if (px[pl * 56 + idx] > m) m = px[pl * 56 + idx], mi = idx;
          }
        bad += py[pl * 9 + i * 3 + j] != m;
        rdx[pl * 56 + mi] += pdy[pl * 9 + i * 3 + j];
      }
  for (size_t i = 0; i < nin; i++) bad += fabs(rdx[i] - pdx[i]) > 1e-6;
  CHECK(bad == 0, "maxpool: %d mismatches", bad);

  /* maxpool 2x2 stride 2 (the vectorised path): rows of 13 and 5 outputs, ties and a NaN */
  for (int wide = 0; wide < 2; wide++) {
    dt_pool_shape q = {.c = 3, .h = 6, .w = wide ? 27 : 10, .k = 2, .stride = 2, .oh = 3, .ow = wide ? 13 : 5};
    size_t qi = (size_t)2 * 3 * 6 * q.w, qo = (size_t)2 * 3 * 3 * q.ow;
    float *qx = fvec(qi), *qy = fvec(qo);
    int32_t *qa = calloc(qo, sizeof(int32_t));
    randu(qx, qi, 1);
    for (size_t i = 0; i < qi; i += 7) qx[i] = 0.25f; /* ties */
    qx[q.w + 3] = NAN;
    dt_cpu_maxpool_forward(&q, 2, qx, qy, qa);
    int qbad = 0;
    for (int pl = 0; pl < 6; pl++)
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < q.ow; j++) {
          const float *xp = qx + (size_t)pl * 6 * q.w;
          int best = 2 * i * q.w + 2 * j;
          const int off[3] = {1, q.w, q.w + 1};
          for (int t = 0; t < 3; t++) {
            int idx = 2 * i * q.w + 2 * j + off[t];
            if (xp[idx] > xp[best] || isnan(xp[idx])) best = idx;
          }
          size_t o = ((size_t)pl * 3 + i) * q.ow + j;
          qbad += qa[o] != best || !(qy[o] == xp[best] || (isnan(qy[o]) && isnan(xp[best])));
        }
    CHECK(qbad == 0, "maxpool 2x2 (row of %d): %d mismatches", q.ow, qbad);
    free(qx), free(qy), free(qa);
  }

  /* log-softmax + NLL against the textbook formula in double */
  const int C = 10;
  float z[3 * 10], dz[3 * 10];
  int32_t lab[3] = {3, 0, 9};
  randu(z, 30, 5);
  long correct = 0;
  double loss = 0;
  loss = dt_cpu_log_softmax_nll(3, C, z, lab, dz, 0.5f, &correct);
  double ref = 0, ed = 0;
  long rc = 0;
  for (int n = 0; n < 3; n++) {
    double s = 0;
    int am = 0;
    for (int c = 0; c < C; c++) {
      s += exp(z[n * C + c]);
      if (z[n * C + c] > z[n * C + am]) am = c;
    }
    ref += log(s) - z[n * C + lab[n]];
    rc += am == lab[n];
    for (int c = 0; c < C; c++) ed = fmax(ed, fabs(0.5 * (exp(z[n * C + c]) / s - (c == lab[n])) - dz[n * C + c]));
  }
  CHECK_CLOSE(loss, ref, 1e-6, 1e-6);
  CHECK(rc == correct && ed < 1e-6, "log_softmax_nll: correct %ld vs %ld, grad error %g", correct, rc, ed);
  free(x), free(w), free(b), free(y), free(dy), free(dw), free(db), free(dx);
  free(px), free(py), free(pdy), free(pdx), free(arg), free(rdx);
}

/* ---- finite differences -------------------------------------------------------------------- */

static double loss_at(const dt_model *m, dt_workspace *ws, const float *p, const float *x, const int32_t *y, int B) {
  double s = 0;
  long c = 0;
  CHECK_OK(dt_model_evaluate(be, m, ws, p, NULL, x, y, B, &s, &c));
  return s / B;
}

/* The training loss (batch statistics) of a model with buffers, from fresh running statistics
 * each time; scratch takes the gradient. */
static double train_mode_loss(const dt_model *m, dt_workspace *ws, const float *p, const float *x, const int32_t *y, int B,
                              float *scratch, float *buffers) {
  float loss = 0;
  dt_model_init_buffers(m, buffers);
  CHECK_OK(dt_model_forward_backward(be, m, ws, p, buffers, x, y, B, scratch, &loss, NULL));
  return loss;
}

/* With dropout (drop != NULL): the training loss under one fixed mask, drawn from a copy of
 * *drop each time, so that every evaluation sees the mask the analytic gradient used. */
static double train_loss_at(const dt_model *m, dt_workspace *ws, const float *p, const float *x, const int32_t *y, int B,
                            float *scratch, const dt_rng *drop) {
  dt_rng r = *drop;
  float loss = 0;
  CHECK_OK(dt_model_forward_backward(be, m, ws, p, NULL, x, y, B, scratch, &loss, &r));
  return loss;
}

static void gradcheck_rng(const char *name, const dt_model_spec *spec, int samples_per_layer, const dt_rng *drop);
static void gradcheck(const char *name, const dt_model_spec *spec, int samples_per_layer) {
  gradcheck_rng(name, spec, samples_per_layer, NULL);
}

static void gradcheck_rng(const char *name, const dt_model_spec *spec, int samples_per_layer, const dt_rng *drop) {
  dt_model *m = NULL;
  dt_workspace *ws = NULL;
  CHECK_OK(dt_model_create(spec, &m));
  if (m == NULL) return;
  const int B = 4;
  size_t P = dt_model_num_params(m), D = dt_model_input_size(m);
  CHECK_OK(dt_workspace_create(be, m, B, &ws));
  const size_t NB = dt_model_num_buffers(m);
  float *p = fvec(P), *g = fvec(P), *x = fvec(B * D), *scratch = fvec(P), *buf = fvec(NB);
  int32_t y[4] = {1, 0, 3, 2};
  dt_model_init_params(m, 5, p);
  /* normalisation's weights and biases away from 1 and 0, so that their gradients matter */
  for (int l = 0; l < dt_model_num_layers(m); l++) {
    const dt_layer_info *li = dt_model_layer(m, l);
    const dt_norm_shape *ns = &li->norm;
    if (li->kind != DT_LAYER_BATCHNORM2D && li->kind != DT_LAYER_GROUPNORM && !(li->kind == DT_LAYER_RESIDUAL_END && li->projection &&
                                                                              ns->kind != DT_LAYER_KIND_COUNT))
      continue;
    randu(p + ns->w_off, (size_t)ns->c, 0.5f);
    randu(p + ns->b_off, (size_t)ns->c, 0.5f);
    for (int c = 0; c < ns->c; c++) p[ns->w_off + c] += 1.0f;
  }
  randu(x, B * D, 1.5f);
  float loss;
  dt_rng r;
  if (drop != NULL) r = *drop;
  dt_model_init_buffers(m, buf);
  CHECK_OK(dt_model_forward_backward(be, m, ws, p, NB ? buf : NULL, x, y, B, g, &loss, drop != NULL ? &r : NULL));
  if (drop == NULL && NB == 0) CHECK_CLOSE(loss, loss_at(m, ws, p, x, y, B), 1e-5, 1e-6);
  else if (drop != NULL) /* the mask does drop something: the training loss is not the evaluation loss */
    CHECK(fabs(loss - loss_at(m, ws, p, x, y, B)) > 1e-6, "%s: dropout changed nothing", name);
#define LOSS_AT(q)                                                      \
  (drop != NULL ? train_loss_at(m, ws, q, x, y, B, scratch, drop)       \
   : NB > 0     ? train_mode_loss(m, ws, q, x, y, B, scratch, buf)      \
                : loss_at(m, ws, q, x, y, B))
  int bad = 0, tried = 0;
  for (size_t i = 0; i < P; i += (P / (size_t)samples_per_layer) + 1) {
    const float h = 1e-3f; /* larger steps cross relu kinks too often */
    float keep = p[i];
    p[i] = keep + h;
    double lp = LOSS_AT(p);
    p[i] = keep - h;
    double lm = LOSS_AT(p);
    p[i] = keep;
    double fd = (lp - lm) / (2 * h);
    tried++;
    if (fabs(fd - g[i]) > 1e-3 + 2e-2 * fabs(fd)) {
      if (bad < 5) fprintf(stderr, "%s: param %zu: analytic %.6g, finite difference %.6g\n", name, i, g[i], fd);
      bad++;
    }
  }
  /* Kinks of relu/maxpool can spoil a difference now and then; a real bug spoils many. */
#undef LOSS_AT
  CHECK(bad <= tried / 50, "%s: %d of %d gradient entries disagree with finite differences", name, bad, tried);
  free(p), free(g), free(x), free(scratch), free(buf);
  dt_workspace_free(be, ws);
  dt_model_free(m);
}

/* The layers of CIFAR models, each through finite differences: convolutions without bias,
 * batch and group normalisation (train mode: the batch's statistics), average pooling, global
 * average pooling, and residual blocks with identity and projection skips, nested too. */
#define L_(...) ((dt_layer_spec){__VA_ARGS__})
static void test_layer_gradients(void) {
  dt_model_spec s = {.in_channels = 3, .in_height = 8, .in_width = 8, .num_classes = 4};
  const dt_layer_spec bn_net[] = {
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .stride = 2, .padding = 1, .no_bias = 1),
      L_(.kind = DT_LAYER_BATCHNORM2D), L_(.kind = DT_LAYER_RELU), L_(.kind = DT_LAYER_AVGPOOL2D, .kernel_size = 2),
      L_(.kind = DT_LAYER_FLATTEN), L_(.kind = DT_LAYER_LINEAR, .out_features = 4),
  };
  s.num_layers = 6;
  memcpy(s.layers, bn_net, sizeof bn_net);
  gradcheck("conv(no bias)-batchnorm-avgpool", &s, 300);
  const dt_layer_spec gn_net[] = {
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 6, .kernel_size = 3, .padding = 1, .stride = 1),
      L_(.kind = DT_LAYER_GROUPNORM, .groups = 3), L_(.kind = DT_LAYER_RELU), L_(.kind = DT_LAYER_AVGPOOL2D, .kernel_size = 3, .stride = 2),
      L_(.kind = DT_LAYER_GLOBAL_AVGPOOL), L_(.kind = DT_LAYER_LINEAR, .out_features = 4, .no_bias = 1),
  };
  memcpy(s.layers, gn_net, sizeof gn_net);
  gradcheck("conv-groupnorm-overlapping avgpool-global avgpool", &s, 300);
  /* a ResNet's stem and two basic blocks: identity skip, then a projection (stride 2, 4 → 8).
   * Without the relus: after a normalisation half of a relu's inputs sit near its kink, and
   * finite differences across kinks are noise (the PyTorch cross-check, test_torch, runs the
   * same blocks with them). */
  const dt_layer_spec res_net[] = {
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .padding = 1, .stride = 1, .no_bias = 1),
      L_(.kind = DT_LAYER_BATCHNORM2D),
      L_(.kind = DT_LAYER_RESIDUAL, .children = 4),
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .padding = 1, .stride = 1, .no_bias = 1),
      L_(.kind = DT_LAYER_BATCHNORM2D),
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .padding = 1, .stride = 1, .no_bias = 1),
      L_(.kind = DT_LAYER_BATCHNORM2D),
      L_(.kind = DT_LAYER_RESIDUAL, .children = 4),
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 8, .kernel_size = 3, .padding = 1, .stride = 2, .no_bias = 1),
      L_(.kind = DT_LAYER_BATCHNORM2D),
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 8, .kernel_size = 3, .padding = 1, .stride = 1, .no_bias = 1),
      L_(.kind = DT_LAYER_BATCHNORM2D),
      L_(.kind = DT_LAYER_GLOBAL_AVGPOOL), L_(.kind = DT_LAYER_LINEAR, .out_features = 4),
  };
  s.num_layers = (int)(sizeof res_net / sizeof res_net[0]);
  memcpy(s.layers, res_net, sizeof res_net);
  gradcheck("resnet blocks (batchnorm; identity and projection skips)", &s, 600);
  for (int i = 0; i < s.num_layers; i++)
    if (s.layers[i].kind == DT_LAYER_BATCHNORM2D) s.layers[i] = L_(.kind = DT_LAYER_GROUPNORM, .groups = 2);
  gradcheck("resnet blocks (groupnorm)", &s, 600);
  /* a block inside a block, without norms: the projection is a bare 1×1 convolution */
  const dt_layer_spec nested[] = {
      L_(.kind = DT_LAYER_RESIDUAL, .children = 4),
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 5, .kernel_size = 3, .padding = 1, .stride = 1),
      L_(.kind = DT_LAYER_RESIDUAL, .children = 2),
      L_(.kind = DT_LAYER_RELU),
      L_(.kind = DT_LAYER_CONV2D, .out_channels = 5, .kernel_size = 3, .padding = 1, .stride = 1),
      L_(.kind = DT_LAYER_FLATTEN), L_(.kind = DT_LAYER_LINEAR, .out_features = 4),
  };
  s.num_layers = (int)(sizeof nested / sizeof nested[0]);
  memcpy(s.layers, nested, sizeof nested);
  gradcheck("nested residual blocks", &s, 600);
}

static void test_gradients(void) {
  dt_model_spec s = {.in_channels = 2, .in_height = 9, .in_width = 8, .num_classes = 4};
  /* conv with stride and padding → relu → maxpool → flatten → dropout(0) → linear */
  s.num_layers = 6;
  s.layers[0] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 3, .kernel_size = 3, .stride = 2, .padding = 1};
  s.layers[1] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s.layers[2] = (dt_layer_spec){.kind = DT_LAYER_MAXPOOL2D, .kernel_size = 2};
  s.layers[3] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s.layers[4] = (dt_layer_spec){.kind = DT_LAYER_DROPOUT, .p = 0.0f};
  s.layers[5] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 4};
  gradcheck("conv-pool-linear", &s, 400);
  /* dropout at work (p = 0.5, one fixed mask): its backward must scale by the same mask */
  s.layers[4].p = 0.5f;
  dt_rng drop;
  dt_rng_init(&drop, 11, 0, 0);
  gradcheck_rng("conv-pool-dropout(0.5)-linear", &s, 400, &drop);
  s.layers[4].p = 0.0f;
  /* two convolutions (the second needs its input gradient), then two linears */
  s.num_layers = 7;
  s.layers[0] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 4, .kernel_size = 3, .stride = 1};
  s.layers[1] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s.layers[2] = (dt_layer_spec){.kind = DT_LAYER_CONV2D, .out_channels = 3, .kernel_size = 2, .stride = 1, .padding = 1};
  s.layers[3] = (dt_layer_spec){.kind = DT_LAYER_FLATTEN};
  s.layers[4] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 6};
  s.layers[5] = (dt_layer_spec){.kind = DT_LAYER_RELU};
  s.layers[6] = (dt_layer_spec){.kind = DT_LAYER_LINEAR, .out_features = 4};
  gradcheck("conv-conv-linear-linear", &s, 600);
  dt_model_spec seed;
  dt_model_spec_seed_cnn(&seed, 3, 5, 64);
  gradcheck("seed CNN", &seed, 600);
}

static void test_seed_cnn(void) {
  dt_model_spec s;
  dt_model_spec_seed_cnn(&s, 3, 5, 64);
  dt_model *m = NULL;
  CHECK_OK(dt_model_create(&s, &m));
  CHECK(m && dt_model_num_params(m) == 28440, "seed CNN has %zu parameters", m ? dt_model_num_params(m) : 0);
  float *p = fvec(28440), *q = fvec(28440);
  dt_model_init_params(m, 0, p);
  dt_model_init_params(m, 0, q);
  CHECK(memcmp(p, q, 28440 * sizeof(float)) == 0, "init not reproducible");
  /* PyTorch order: conv.weight (75), conv.bias (3), fc1.weight (27648), fc1.bias (64), fc2... */
  const float conv_bound = 1.0f / 5.0f, fc1_bound = 1.0f / sqrtf(432.0f), fc2_bound = 1.0f / 8.0f;
  float mx[3] = {0};
  for (int i = 0; i < 78; i++) mx[0] = fmaxf(mx[0], fabsf(p[i]));
  for (int i = 78; i < 78 + 27712; i++) mx[1] = fmaxf(mx[1], fabsf(p[i]));
  for (int i = 78 + 27712; i < 28440; i++) mx[2] = fmaxf(mx[2], fabsf(p[i]));
  CHECK(mx[0] <= conv_bound && mx[0] > 0.9f * conv_bound, "conv init bound %g", mx[0]);
  CHECK(mx[1] <= fc1_bound && mx[1] > 0.99f * fc1_bound, "fc1 init bound %g", mx[1]);
  CHECK(mx[2] <= fc2_bound && mx[2] > 0.9f * fc2_bound, "fc2 init bound %g", mx[2]);
  dt_model_init_params(m, 1, q);
  CHECK(memcmp(p, q, 28440 * sizeof(float)) != 0, "seed ignored by init");
  free(p), free(q);
  dt_model_free(m);

  s.layers[4].out_features = 10;
  s.layers[6].out_features = 7;
  CHECK_FAILS(dt_model_create(&s, &m), DT_ERR_CONFIG, "the last layer must be linear with out_features = 10");
  dt_model_spec_seed_cnn(&s, 3, 30, 64);
  CHECK_FAILS(dt_model_create(&s, &m), DT_ERR_CONFIG, "kernel 30x30 is larger than its padded input 28x28");
  dt_model_spec_seed_cnn(&s, 3, 5, 64);
  s.layers[3].kind = DT_LAYER_RELU;
  CHECK_FAILS(dt_model_create(&s, &m), DT_ERR_CONFIG, "put a flatten layer before it");
}

/* ---- optimizers ------------------------------------------------------------------------------ */

static void test_optimizers(void) {
  enum { N = 37, STEPS = 5 };
  float p[N], g[N], b[N];
  double rp[N], rm[N], rv[N], rbuf[N];
  for (int variant = 0; variant < 9; variant++) {
    dt_local_opt_spec s;
    const char *name;
    switch (variant) {
      case 0: s = dt_local_opt_spec_default(DT_LOCAL_ADAM); s.weight_decay = 0.01f; name = "adam+wd"; break;
      case 1: s = dt_local_opt_spec_default(DT_LOCAL_ADAMW); s.lr = 0.01f; name = "adamw"; break;
      case 2: s = dt_local_opt_spec_default(DT_LOCAL_SGD); s.momentum = 0.9f; s.dampening = 0.1f; s.weight_decay = 0.001f; name = "sgd momentum"; break;
      case 3: s = dt_local_opt_spec_default(DT_LOCAL_SGD); s.momentum = 0.9f; s.nesterov = 1; name = "sgd nesterov"; break;
      case 5: s = dt_local_opt_spec_default(DT_LOCAL_RMSPROP); s.weight_decay = 0.01f; name = "rmsprop"; break;
      case 6: s = dt_local_opt_spec_default(DT_LOCAL_RMSPROP); s.momentum = 0.5f; name = "rmsprop momentum"; break;
      case 7: s = dt_local_opt_spec_default(DT_LOCAL_ADADELTA); s.weight_decay = 0.01f; name = "adadelta"; break;
      case 8: s = dt_local_opt_spec_default(DT_LOCAL_NADAM); s.weight_decay = 0.01f; name = "nadam"; break;
      default: s = dt_local_opt_spec_default(DT_LOCAL_SGD); name = "sgd plain"; break;
    }
    dt_local_opt *o = NULL;
    CHECK_OK(dt_local_opt_create(be, &s, 1, N, &o));
    randu(p, N, 1);
    randu(b, N, 0.1f);
    for (int i = 0; i < N; i++) rp[i] = p[i], rm[i] = rv[i] = rbuf[i] = 0;
    dt_grad_extra extra = {.alpha = 0.3f, .b = b};
    double err = 0, prod = 1; /* NAdam's product of μ */
    for (int t = 1; t <= STEPS; t++) {
      randu(g, N, 1);
      CHECK_OK(dt_local_opt_step(o, 0, p, g, -1.0f, variant == 0 ? &extra : NULL));
      for (int i = 0; i < N; i++) {
        double d = g[i] + (variant == 0 ? 0.3 * rp[i] + b[i] : 0.0);
        if (s.kind == DT_LOCAL_SGD) {
          d += s.weight_decay * rp[i];
          if (s.momentum != 0) {
            rbuf[i] = t == 1 ? d : s.momentum * rbuf[i] + (1 - s.dampening) * d;
            d = s.nesterov ? d + s.momentum * rbuf[i] : rbuf[i];
          }
          rp[i] -= s.lr * d;
        } else if (s.kind == DT_LOCAL_RMSPROP) { /* torch.optim.RMSprop, centered=False */
          d += s.weight_decay * rp[i];
          rv[i] = s.alpha * rv[i] + (1 - s.alpha) * d * d;
          double u = d / (sqrt(rv[i]) + s.eps);
          if (s.momentum != 0) u = rbuf[i] = s.momentum * rbuf[i] + u;
          rp[i] -= s.lr * u;
        } else if (s.kind == DT_LOCAL_ADADELTA) { /* torch.optim.Adadelta */
          d += s.weight_decay * rp[i];
          rv[i] = s.rho * rv[i] + (1 - s.rho) * d * d;
          const double delta = sqrt(rm[i] + s.eps) / sqrt(rv[i] + s.eps) * d;
          rm[i] = s.rho * rm[i] + (1 - s.rho) * delta * delta;
          rp[i] -= s.lr * delta;
        } else if (s.kind == DT_LOCAL_NADAM) { /* torch.optim.NAdam (PyTorch 2) */
          d += s.weight_decay * rp[i];
          const double mu = s.beta1 * (1 - 0.5 * pow(0.96, t * (double)s.momentum_decay));
          const double mu_next = s.beta1 * (1 - 0.5 * pow(0.96, (t + 1) * (double)s.momentum_decay));
          const double pr = i == 0 ? (prod *= mu) : prod;
          rm[i] = s.beta1 * rm[i] + (1 - s.beta1) * d;
          rv[i] = s.beta2 * rv[i] + (1 - s.beta2) * d * d;
          const double denom = sqrt(rv[i] / (1 - pow(s.beta2, t))) + s.eps;
          rp[i] -= s.lr * (1 - mu) / (1 - pr) * d / denom + s.lr * mu_next / (1 - pr * mu_next) * rm[i] / denom;
        } else {
          if (s.kind == DT_LOCAL_ADAMW) rp[i] *= 1 - s.lr * s.weight_decay;
          else d += s.weight_decay * rp[i];
          rm[i] = s.beta1 * rm[i] + (1 - s.beta1) * d;
          rv[i] = s.beta2 * rv[i] + (1 - s.beta2) * d * d;
          double mh = rm[i] / (1 - pow(s.beta1, t)), vh = rv[i] / (1 - pow(s.beta2, t));
          rp[i] -= s.lr * mh / (sqrt(vh) + s.eps);
        }
        err = fmax(err, fabs(rp[i] - p[i]) / fmax(1e-3, fabs(rp[i])));
      }
    }
    CHECK(err < 2e-5, "%s: relative error %g after %d steps", name, err, STEPS);
    CHECK(dt_local_opt_steps(o, 0) == STEPS, "%s steps", name);
    CHECK_OK(dt_local_opt_reset(o));
    CHECK(dt_local_opt_steps(o, 0) == 0, "reset");
    dt_local_opt_free(o);
  }
}

/* ---- vector ops, slabs, backend selection --------------------------------------------------- */

/* Every vector op against the naive loop it stands for, bit for bit (same expressions, and
 * reductions in index order), on the whole-slab size that splits over threads too. */
static void test_vector_ops(void) {
  enum { N = 70001 };
  dt_backend *be2 = NULL;
  CHECK_OK(dt_backend_cpu_create(2, &be2));
  float *x = fvec(N), *y = fvec(N), *z = fvec(N), *r = fvec(N), *x2 = fvec(N);
  double *sum = calloc(N, sizeof(double));
  randu(x, N, 1);
  randu(y, N, 1);
  randu(x2, N, 1);
  for (int i = 0; i < N; i++) sum[i] = 3.0 * x2[i];
  for (int pass = 0; pass < 2; pass++) {
    dt_backend *b = pass ? be2 : be;
    int bad = 0;
    CHECK_OK(dt_be_fill(b, N, 0.25f, z));
    for (int i = 0; i < N; i++) bad += z[i] != 0.25f;
    CHECK_OK(dt_be_copy(b, N, x, z));
    bad += memcmp(z, x, sizeof(float) * N) != 0;
    CHECK_OK(dt_be_scale(b, N, -1.5f, z));
    for (int i = 0; i < N; i++) bad += z[i] != -1.5f * x[i];
    memcpy(z, y, sizeof(float) * N);
    CHECK_OK(dt_be_axpy(b, N, 0.3f, x, z));
    for (int i = 0; i < N; i++) bad += z[i] != y[i] + 0.3f * x[i];
    CHECK_OK(dt_be_axpby(b, N, 0.7f, x, -2.0f, y, z));
    for (int i = 0; i < N; i++) bad += z[i] != 0.7f * x[i] + -2.0f * y[i];
    const float *xs[3] = {x, y, x2};
    const float w[3] = {0.2f, 0.5f, 0.3f};
    CHECK_OK(dt_be_mix(b, N, 3, xs, w, z));
    for (int i = 0; i < N; i++) {
      float acc = 0.0f;
      for (int j = 0; j < 3; j++) acc += w[j] * xs[j][i];
      bad += z[i] != acc;
    }
    CHECK_OK(dt_be_div(b, N, x, 3.0, z));
    for (int i = 0; i < N; i++) bad += z[i] != (float)(x[i] / 3.0);
    CHECK_OK(dt_be_mean_of_sum(b, N, sum, 3.0, z));
    for (int i = 0; i < N; i++) bad += z[i] != (float)(sum[i] / 3.0);
    double dot, nrm, sq, sqm, rdot = 0, rsq = 0, rsqm = 0;
    CHECK_OK(dt_be_dot(b, N, x, y, &dot));
    CHECK_OK(dt_be_nrm2(b, N, x, &nrm));
    CHECK_OK(dt_be_sqdist(b, N, x, y, &sq));
    CHECK_OK(dt_be_sqdist_mean(b, N, x, sum, 3.0, &sqm));
    for (int i = 0; i < N; i++) {
      rdot += (double)x[i] * y[i];
      rsq += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
      rsqm += (x[i] - sum[i] / 3.0) * (x[i] - sum[i] / 3.0);
    }
    double rn = 0;
    for (int i = 0; i < N; i++) rn += (double)x[i] * x[i];
    bad += dot != rdot || nrm != sqrt(rn) || sq != rsq || sqm != rsqm;
    CHECK(bad == 0, "vector ops (%d threads): %d mismatches against the naive loops", b->threads, bad);
  }
  free(x), free(y), free(z), free(r), free(x2), free(sum);
  dt_backend_free(be2);

#if DT_HAVE_CUDA
  { /* cuBLAS is not linked (nothing maps it until a CUDA backend is created), and it opens */
    char why[320] = "", line[512];
    int mapped = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    while (maps != NULL && fgets(line, sizeof line, maps) != NULL) mapped |= strstr(line, "libcublas") != NULL;
    if (maps != NULL) fclose(maps);
    CHECK(!mapped, "cuBLAS is mapped before any CUDA backend was created");
    CHECK(dt_cuda_blas_open(why, sizeof why), "cuBLAS does not open: %s", why);
  }
#endif
  /* selection: cpu always; auto falls back to the CPU; an unknown or unbuilt backend is a config error */
  dt_backend *sel = NULL;
  char note[256];
  CHECK_OK(dt_backend_select("auto", 1, note, sizeof note, &sel));
  CHECK((sel != NULL && strcmp(sel->name, "cpu") == 0) || DT_HAVE_CUDA, "auto without a GPU: cpu");
  dt_backend_free(sel);
  if (!DT_HAVE_CUDA) CHECK_FAILS(dt_backend_select("cuda", 1, note, sizeof note, &sel), DT_ERR_CONFIG, "not built into this dtrun");
  CHECK(strncmp(dt_backend_list(), "cpu", 3) == 0, "backend list starts with cpu: %s", dt_backend_list());
}

/* A whole-slab step equals the node-by-node steps, and slab helpers move the right rows. */
static void test_slab_step(void) {
  enum { COUNT = 3, DIM = 37 };
  dt_slab p1, p2, g, tmp;
  CHECK_OK(dt_slab_create(be, COUNT, DIM, &p1));
  CHECK_OK(dt_slab_create(be, COUNT, DIM, &p2));
  CHECK_OK(dt_slab_create(be, COUNT, DIM, &g));
  CHECK_OK(dt_slab_create(be, COUNT, DIM, &tmp));
  CHECK(p1.stride == 48 && p1.stride % 16 == 0, "stride %zu", p1.stride);
  float h[DIM];
  for (int l = 0; l < COUNT; l++) {
    randu(h, DIM, 1);
    CHECK_OK(dt_slab_upload_node(be, &p1, l, h));
    randu(h, DIM, 1);
    CHECK_OK(dt_slab_upload_node(be, &g, l, h));
  }
  CHECK_OK(dt_slab_copy(be, &p1, &p2));
  const dt_local_opt_spec spec = dt_local_opt_spec_default(DT_LOCAL_ADAM);
  dt_local_opt *a = NULL, *b = NULL;
  CHECK_OK(dt_local_opt_create(be, &spec, COUNT, DIM, &a));
  CHECK_OK(dt_local_opt_create(be, &spec, COUNT, DIM, &b));
  for (int t = 0; t < 3; t++) {
    CHECK_OK(dt_local_opt_step_all(a, &p1, &g, -1.0f));
    for (int l = 0; l < COUNT; l++) CHECK_OK(dt_local_opt_step(b, l, dt_slab_node(&p2, l), dt_slab_node(&g, l), -1.0f, NULL));
  }
  CHECK(memcmp(p1.data, p2.data, sizeof(float) * p1.stride * COUNT) == 0, "slab step differs from node steps");
  CHECK(dt_local_opt_steps(a, 2) == 3, "steps");
  /* a strided view (as the exchange's send buffers) copies row by row */
  dt_slab view = {.data = tmp.data, .count = 2, .dim = DIM, .stride = 2 * tmp.stride / 2 + 16};
  dt_slab two = p1;
  two.count = 2;
  CHECK_OK(dt_slab_copy(be, &two, &view));
  CHECK(memcmp(dt_slab_node(&view, 1), dt_slab_node(&p1, 1), sizeof(float) * DIM) == 0, "strided copy");
  dt_local_opt_free(a);
  dt_local_opt_free(b);
  dt_slab_free(be, &p1);
  dt_slab_free(be, &p2);
  dt_slab_free(be, &g);
  dt_slab_free(be, &tmp);
}

/* An evaluation workspace (outputs sharing buffers once dead) gives the bits of a training
 * workspace (every output kept): loss, hits and logits, for the seed CNN, ResNet-20 with batch
 * and group norm (residual ends read their block's input many layers later) and VGG-11. */
static void test_eval_workspace(void) {
  enum { N = 130, B = 50 };
  dt_model_spec specs[4];
  dt_model_spec_seed_cnn(&specs[0], 3, 5, 16);
  dt_model_spec_named(&specs[1], DT_MODEL_RESNET20, DT_NORM_BATCH, 2, 0, 3, 16, 16, 10);
  dt_model_spec_named(&specs[2], DT_MODEL_RESNET20, DT_NORM_GROUP, 2, 0, 3, 16, 16, 10);
  dt_model_spec_named(&specs[3], DT_MODEL_VGG11, DT_NORM_BATCH, 2, 0, 3, 32, 32, 10);
  for (int k = 0; k < 4; k++) {
    dt_model *m = NULL;
    dt_workspace *tw = NULL, *ew = NULL;
    CHECK_OK(dt_model_create(&specs[k], &m));
    if (m == NULL) continue;
    CHECK_OK(dt_workspace_create(be, m, B, &tw));
    CHECK_OK(dt_workspace_create_eval(be, m, B, &ew));
    const size_t P = dt_model_num_params(m), NB = dt_model_num_buffers(m), D = dt_model_input_size(m), C = 10;
    float *p = fvec(P), *buf = fvec(NB), *x = fvec((size_t)N * D), *la = fvec((size_t)N * C), *lb = fvec((size_t)N * C);
    int32_t y[N];
    dt_model_init_params(m, 7, p);
    dt_model_init_buffers(m, buf);
    randu(buf, NB, 0.1f); /* running statistics away from their start */
    for (size_t i = 0; i < NB; i++) buf[i] = fabsf(buf[i]) + 0.5f;
    randu(x, (size_t)N * D, 1.0f);
    for (int i = 0; i < N; i++) y[i] = i % 10;
    double lt = 0, le = 0;
    long ht = 0, he = 0;
    CHECK_OK(dt_model_evaluate(be, m, tw, p, NB ? buf : NULL, x, y, N, &lt, &ht));
    CHECK_OK(dt_model_evaluate(be, m, ew, p, NB ? buf : NULL, x, y, N, &le, &he));
    CHECK_OK(dt_model_logits(be, m, tw, p, NB ? buf : NULL, x, N, la));
    CHECK_OK(dt_model_logits(be, m, ew, p, NB ? buf : NULL, x, N, lb));
    CHECK(memcmp(&lt, &le, sizeof lt) == 0 && ht == he, "model %d: evaluation workspace loss %.17g, hits %ld; training "
          "workspace %.17g, %ld", k, le, he, lt, ht);
    CHECK(memcmp(la, lb, sizeof(float) * (size_t)N * C) == 0, "model %d: logits differ between the workspaces", k);
    float loss;
    CHECK(dt_model_forward_backward(be, m, ew, p, NB ? buf : NULL, x, y, B, p, &loss, NULL) == DT_ERR_INTERNAL,
          "a training step on an evaluation workspace should be refused");
    free(p), free(buf), free(x), free(la), free(lb);
    dt_workspace_free(be, tw);
    dt_workspace_free(be, ew);
    dt_model_free(m);
  }
}

/* A node-batched evaluation (dt_be_model_evaluate) splits the nodes' test sets into chunks over
 * the threads and adds each node's chunk sums in order: the bits of dt_model_evaluate over the
 * node's whole set on one workspace, at 1 and 4 threads, for 1, 2 and 3 nodes (a partial last
 * chunk), summing onto a loss that is not 0. (What this checks is the samples each chunk covers:
 * the batches' sums are float values, which a double adds exactly in any order here.) */
static void test_plan_evaluate_threads(void) {
  enum { N = 1234, MAXB = 7, NODES = 3 }; /* 177 chunks a node, the last of 2 samples */
  dt_model_spec spec;
  dt_model_spec_seed_cnn(&spec, 3, 5, 16);
  dt_model *m = NULL;
  CHECK_OK(dt_model_create(&spec, &m));
  if (m == NULL) return;
  const size_t P = dt_model_num_params(m), D = dt_model_input_size(m);
  float *theta = fvec(P * NODES), *x = fvec((size_t)N * D);
  int32_t *y = calloc(N, sizeof *y);
  for (int l = 0; l < NODES; l++) dt_model_init_params(m, 7 + (uint64_t)l, theta + (size_t)l * P);
  randu(x, (size_t)N * D, 1.0f);
  for (int i = 0; i < N; i++) y[i] = i * 7 % 10;
  double want[NODES];
  long want_hits[NODES];
  dt_workspace *ws = NULL;
  CHECK_OK(dt_workspace_create_eval(be, m, MAXB, &ws));
  for (int l = 0; l < NODES && ws != NULL; l++) {
    want[l] = 0.1 * (l + 1), want_hits[l] = 0;
    CHECK_OK(dt_model_evaluate(be, m, ws, theta + (size_t)l * P, NULL, x, y, N, &want[l], &want_hits[l]));
  }
  dt_workspace_free(be, ws);
  for (int count = 1; count <= NODES; count++) {
    double loss[2][NODES];
    long hits[2][NODES] = {{0}};
    for (int t = 0; t < 2; t++) {
      for (int l = 0; l < NODES; l++) loss[t][l] = 0.1 * (l + 1);
      dt_backend *b = NULL;
      void *plan = NULL;
      CHECK_OK(dt_backend_cpu_create(t == 0 ? 1 : 4, &b));
      CHECK_OK(dt_be_plan_create(b, m, MAXB, count, count, &plan));
      const dt_node_eval ne = {.count = count, .theta = theta, .theta_stride = P, .x = x, .y = y, .n = N,
                               .loss_sum = loss[t], .correct = hits[t]};
      CHECK_OK(dt_be_model_evaluate(b, plan, &ne));
      dt_be_plan_free(b, plan);
      dt_backend_free(b);
    }
    for (int t = 0; t < 2; t++)
      for (int l = 0; l < count; l++)
        CHECK(memcmp(&loss[t][l], &want[l], sizeof(double)) == 0 && hits[t][l] == want_hits[l],
              "%d node(s), node %d, %d thread(s): loss %.17g and %ld hits, one workspace over the whole set %.17g and %ld", count, l,
              t == 0 ? 1 : 4, loss[t][l], hits[t][l], want[l], want_hits[l]);
  }
  free(theta), free(x), free(y);
  dt_model_free(m);
}

int main(void) {
  dt_rng_init(&rng, 1, DT_RNG_TEST, 42);
  if (dt_backend_cpu_create(1, &be) != DT_OK) return 1;
  test_conv_op(1, 8, 3, 5, 1, 0);
  test_conv_op(3, 9, 4, 3, 2, 1);
  test_conv_op(2, 6, 5, 2, 1, 2);
  test_conv_op(4, 7, 2, 3, 3, 0);
  /* the im2col margins: ResNet's 3×3 pad 1 (stride 1 and 2), its 1×1 stride-2 projection, and
   * padding wider than the kernel reaches (rows and columns of zeros only); on their own stream,
   * so that the finite-difference checks below draw what they always drew */
  const dt_rng shared = rng;
  dt_rng_init(&rng, 3, DT_RNG_TEST, 77);
  test_conv_op(16, 10, 16, 3, 1, 1);
  /* Winograd F(4×4, 3×3): odd and even sizes, padding 0..2, channel counts off the kernels'
   * register blocks, and blocks of one tile row (600 channels) up to several samples */
  test_conv_op(9, 7, 7, 3, 1, 1);
  test_conv_op(13, 9, 11, 3, 1, 0);
  test_conv_op(10, 5, 5, 3, 1, 2);
  test_conv_op(64, 8, 64, 3, 1, 1);
  test_conv_op(600, 9, 5, 3, 1, 1);
  test_conv_op_w(16, 16, 16, 8, 3, 1, 1); /* ResNet-20's shapes: no padding tiles, whole tile pairs */
  test_conv_op_w(32, 8, 8, 32, 3, 1, 1);
  test_conv_op_w(16, 4, 4, 16, 3, 1, 1);    /* one tile per tile row: pairs across tile rows */
  test_conv_op_w(130, 6, 6, 140, 3, 1, 1);  /* channels enough for OpenBLAS's products */
  test_conv_op(17, 3, 1, 3, 1, 0);
  test_conv_op(8, 8, 16, 3, 2, 1);
  test_conv_op(4, 9, 8, 1, 2, 0);
  test_conv_op(2, 4, 3, 3, 2, 3);
  test_conv_op(3, 5, 2, 2, 3, 4);
  test_eval_workspace();
  rng = shared;
  test_linear_pool_loss_ops();
  test_gradients();
  test_layer_gradients();
  test_seed_cnn();
  test_optimizers();
  test_vector_ops();
  test_slab_step();
  test_plan_evaluate_threads();
  dt_backend_free(be);
  return check_report("test_nn");
}
