/* The pooling layers on the GPU: maxpool2d (each window's argmax kept in the scratch), avgpool2d
 * and global_avgpool (the window of the whole plane). A plane is contiguous in both layouts, so
 * the kernels walk a node's planes in storage order and keep the input's layout, except before a
 * flatten: there a channel-major input's output is written sample-major (the flatten then aliases
 * it, one transpose pass fewer each way; the same values, so the same bits). */
#include "nn_impl.h"

/* Average pooling: each window's mean, summed in window order as the CPU does (k 0: the whole
 * plane). */
static __global__ void k_avgpool(int count, unsigned per, dt_pool_shape sh, int tS, const float *x, size_t xns, float *y,
                                 size_t yns) {
  const unsigned outp = (unsigned)(sh.oh * sh.ow), inp = (unsigned)(sh.h * sh.w);
  const int kh = sh.k > 0 ? sh.k : sh.h, kw = sh.k > 0 ? sh.k : sh.w;
  const float inv = 1.0f / (float)(kh * kw);
  NODE_LOOP(g, i, count, per) {
    const unsigned pp = i / outp, o = i % outp;
    const int oh = (int)(o / sh.ow), ow = (int)(o % sh.ow);
    const float *xp = x + g * xns + (size_t)pp * inp;
    float sum = 0.0f;
    for (int a = 0; a < kh; a++)
      for (int b = 0; b < kw; b++) sum += xp[(oh * sh.stride + a) * sh.w + ow * sh.stride + b];
    y[g * yns + (size_t)cu_pool_plane(pp, tS, sh.c) * outp + o] = sum * inv;
  }
}

/* dx of one input element: dy/k² of every window holding it, windows in order (the CPU adds them
 * in the same order). */
static __global__ void k_avgpool_back(int count, unsigned per, dt_pool_shape sh, int tS, const float *dy, size_t dyns,
                                      float *dx, size_t xns) {
  const unsigned inp = (unsigned)(sh.h * sh.w), outp = (unsigned)(sh.oh * sh.ow);
  const int kh = sh.k > 0 ? sh.k : sh.h, kw = sh.k > 0 ? sh.k : sh.w, st = sh.k > 0 ? sh.stride : 1;
  const float inv = 1.0f / (float)(kh * kw);
  NODE_LOOP(g, i, count, per) {
    const unsigned pp = i / inp;
    const int p = (int)(i % inp), ih = p / sh.w, iw = p % sh.w;
    const int oh0 = ih >= kh ? (ih - kh) / st + 1 : 0, ow0 = iw >= kw ? (iw - kw) / st + 1 : 0;
    const float *d = dy + g * dyns + (size_t)cu_pool_plane(pp, tS, sh.c) * outp;
    float acc = 0.0f;
    for (int oh = oh0; oh <= ih / st && oh < sh.oh; oh++)
      for (int ow = ow0; ow <= iw / st && ow < sh.ow; ow++) acc += d[oh * sh.ow + ow] * inv;
    dx[g * xns + i] = acc;
  }
}

static size_t planes(const cu_call *c) { return (size_t)c->li->pool.c * c->ps->S; }

/* channel-major in, sample-major out: the pool before a flatten (cu_pool_plane) */
static int pool_out(const cu_plan *pl, int l) {
  return pl->cnhw[l] && !(l + 1 < pl->L && pl->ly[l + 1].kind == DT_LAYER_FLATTEN);
}

/* cu_pool_plane's tS for the call: its samples per node where the pool changes the layout */
static int transposing(const cu_call *c) { return c->pl->cnhw[c->l] && !c->pl->cnhw[c->l + 1] ? c->ps->S : 0; }

static size_t max_scratch(const cu_plan *pl, int l) { return sizeof(int32_t) * (size_t)pl->S * pl->ly[l].out_size; }

static dt_status max_forward(cu_call *c) {
  const dt_pool_shape *s = &c->li->pool;
  NODE_KERNEL(k_maxpool, c->be, c->ps->count, planes(c) * s->oh * s->ow, *s, transposing(c), c->x, c->xs, c->y, c->ys,
              (int32_t *)c->scr);
  return DT_OK;
}

static dt_status max_backward(cu_call *c) {
  const dt_pool_shape *s = &c->li->pool;
  if (c->dx == NULL) return DT_OK;
  const int relu = c->l > 0 && c->pl->relu_in_pool[c->l - 1];
  if (s->stride == s->k && s->h == s->oh * s->k && s->w == s->ow * s->k)
    NODE_KERNEL(k_maxpool_back_tiled, c->be, c->ps->count, planes(c) * s->oh * s->ow, *s, transposing(c), c->dy, c->pl->ns,
                (const int32_t *)c->scr, c->scr_stride / sizeof(int32_t), c->dx, c->pl->ns, c->x, c->xs, relu);
  else
    NODE_KERNEL(k_maxpool_back, c->be, c->ps->count, planes(c) * s->h * s->w, *s, transposing(c), c->dy, c->pl->ns,
                (const int32_t *)c->scr, c->scr_stride / sizeof(int32_t), c->dx, c->pl->ns, c->x, c->xs, relu);
  return DT_OK;
}

static dt_status avg_forward(cu_call *c) {
  const dt_pool_shape *s = &c->li->pool;
  NODE_KERNEL(k_avgpool, c->be, c->ps->count, planes(c) * s->oh * s->ow, *s, transposing(c), c->x, c->xs, c->y, c->ys);
  return DT_OK;
}

static dt_status avg_backward(cu_call *c) {
  const dt_pool_shape *s = &c->li->pool;
  if (c->dx != NULL)
    NODE_KERNEL(k_avgpool_back, c->be, c->ps->count, planes(c) * s->h * s->w, *s, transposing(c), c->dy, c->pl->ns, c->dx,
                c->pl->ns);
  return DT_OK;
}

const cu_layer_ops cu_layer_maxpool2d = {.out_cnhw = pool_out, .aliases = NULL, .scratch = max_scratch,
                                         .forward = max_forward, .backward = max_backward};
const cu_layer_ops cu_layer_avgpool2d = {.out_cnhw = pool_out, .aliases = NULL, .scratch = NULL,
                                         .forward = avg_forward, .backward = avg_backward};
const cu_layer_ops cu_layer_global_avgpool = {.out_cnhw = NULL, .aliases = NULL, .scratch = NULL,
                                              .forward = avg_forward, .backward = avg_backward};
