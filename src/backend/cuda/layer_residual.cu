/* Residual blocks on the GPU. The start (residual) passes its input on (its output is its input);
 * the end (residual_end) adds the skip — the block's input itself, or its 1×1 projection and
 * norm — to the block's output, in the block output's layout (the block's input may be in the
 * other one: the skip is read with its own strides). Backward, the end hands dy on to the block
 * unchanged and leaves the skip path's input gradient in its scratch, in the block input's layout;
 * the start adds it to what the block gives back.
 *
 * The end's scratch per node, in floats: the skip's input gradient (S × the block input), then
 * with a projection the convolution's output, the norm's output (forward) or input gradient
 * (backward), dy in channel-major layout (where the block's output is sample-major), and the
 * norm's statistics; each region at a multiple of 64 floats. */
#include "nn_impl.h"

typedef struct end_regions {
  size_t skip_grad, conv_out, tmp, dyc, stats, end; /* offsets in floats */
} end_regions;

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static end_regions regions(const cu_plan *pl, int l) {
  const dt_layer_info *li = &pl->ly[l];
  const size_t S = (size_t)pl->S, out = li->projection ? up64(S * li->out_size) : 0;
  end_regions r;
  r.skip_grad = 0;
  r.conv_out = up64(S * pl->ly[li->pair].in_size);
  r.tmp = r.conv_out + out;
  r.dyc = r.tmp + out;
  r.stats = r.dyc + out;
  r.end = r.stats + (li->projection && li->norm.kind != DT_LAYER_KIND_COUNT ? up64(cu_norm_stats(&li->norm, pl->S)) : 0);
  return r;
}

/* y = x + skip, element (c, s, p) of each node, y in x's layout. */
static __global__ void k_residual_add(int count, unsigned per, int S, unsigned plane, const float *x, size_t xs, size_t xcs, size_t xss,
                                      const float *k, size_t ks, size_t kcs, size_t kss, float *y, size_t ys) {
  NODE_LOOP(g, i, count, per) {
    const unsigned c = i / ((unsigned)S * plane), s = i / plane % (unsigned)S, q = i % plane;
    const size_t at = (size_t)c * xcs + (size_t)s * xss + q;
    y[g * ys + at] = x[g * xs + at] + k[g * ks + (size_t)c * kcs + (size_t)s * kss + q];
  }
}

static int begin_aliases(const cu_plan *pl, int l) {
  (void)pl, (void)l;
  return 1;
}

static dt_status begin_forward(cu_call *c) {
  (void)c;
  return DT_OK;
}

/* dx (== dy) += the skip path's gradient, which the end left in its scratch */
static dt_status begin_backward(cu_call *c) {
  cu_plan *pl = c->pl;
  const int e = c->li->pair, S = c->ps->S;
  const float *skip_grad = (const float *)pl->scr[e] + regions(pl, e).skip_grad;
  c->dx = (float *)c->dy;
  return cu_relayout(c->be, c->ps->count, (int)pl->chan[c->l], S, pl->plane[c->l], skip_grad, pl->scr_stride[e] / sizeof(float), c->xcs,
                     c->xss, c->dx, pl->ns, c->xcs, c->xss, 1);
}

static size_t end_scratch(const cu_plan *pl, int l) { return sizeof(float) * regions(pl, l).end; }

static int has_norm(const dt_layer_info *li) { return li->norm.kind != DT_LAYER_KIND_COUNT; }

static dt_status end_forward(cu_call *c) {
  cu_plan *pl = c->pl;
  const dt_layer_info *li = c->li;
  const int count = c->ps->count, S = c->ps->S, start = li->pair;
  const float *skip = c->ps->a[start];
  size_t ks = c->ps->as[start], kcs, kss;
  cu_act_strides(pl, start, S, &kcs, &kss);
  if (li->projection) {
    const end_regions r = regions(pl, c->l);
    float *base = (float *)c->scr;
    const size_t st = c->scr_stride / sizeof(float), plane = (size_t)li->conv.oh * li->conv.ow;
    DT_TRY(cu_conv_forward(c->be, count, S, &li->conv, skip, ks, kcs, kss, pl->theta + li->w_off, NULL, pl->ps, base + r.conv_out, st,
                           pl->col, ks == 0 ? 0 : pl->cols, pl->direct[c->l], 0));
    skip = base + r.conv_out;
    if (has_norm(li)) {
      DT_TRY(cu_norm_forward(c->be, &li->norm, count, S, c->ps->batch, c->ps->train, base + r.conv_out, st, (size_t)S * plane, plane,
                             base + r.tmp, st, pl->theta, pl->ps, pl->bufs, pl->bs, base + r.stats, st));
      skip = base + r.tmp;
    }
    ks = st, kcs = (size_t)S * plane, kss = plane;
  }
  NODE_KERNEL(k_residual_add, c->be, count, (size_t)S * li->out_size, S, (unsigned)pl->plane[c->l + 1], c->x, c->xs, c->xcs, c->xss,
              skip, ks, kcs, kss, c->y, c->ys);
  return DT_OK;
}

/* The block's gradient is dy itself (dx == dy); the skip's goes to the scratch for the start. */
static dt_status end_backward(cu_call *c) {
  cu_plan *pl = c->pl;
  const dt_layer_info *li = c->li;
  const int count = c->ps->count, S = c->ps->S, start = li->pair;
  const end_regions r = regions(pl, c->l);
  float *base = (float *)c->scr;
  const size_t st = c->scr_stride / sizeof(float);
  size_t kcs, kss; /* the block input's layout */
  cu_act_strides(pl, start, S, &kcs, &kss);
  c->dx = (float *)c->dy;
  if (!li->projection)
    return cu_relayout(c->be, count, (int)pl->chan[c->l + 1], S, pl->plane[c->l + 1], c->dy, pl->ns, c->xcs, c->xss,
                       base + r.skip_grad, st, kcs, kss, 0);
  const size_t plane = (size_t)li->conv.oh * li->conv.ow, ccs = (size_t)S * plane;
  const float *dconv = c->dy;
  size_t dconv_s = pl->ns;
  if (!pl->cnhw[c->l + 1]) { /* to channel-major, the convolution's layout */
    DT_TRY(cu_relayout(c->be, count, li->conv.f, S, plane, c->dy, pl->ns, c->xcs, c->xss, base + r.dyc, st, ccs, plane, 0));
    dconv = base + r.dyc, dconv_s = st;
  }
  if (has_norm(li)) {
    DT_TRY(cu_norm_backward(c->be, &li->norm, count, S, c->ps->batch, base + r.conv_out, st, ccs, plane, dconv, dconv_s, pl->theta,
                            pl->ps, pl->grad, base + r.stats, st, base + r.tmp, st));
    dconv = base + r.tmp, dconv_s = st;
  }
  return cu_conv_backward(c->be, count, S, &li->conv, c->ps->a[start], c->ps->as[start], kcs, kss, pl->theta + li->w_off, pl->ps, dconv,
                          dconv_s, pl->grad + li->w_off, NULL, pl->ps, base + r.skip_grad, st, pl->col, pl->dcol, pl->cols,
                          pl->direct[c->l]);
}

const cu_layer_ops cu_layer_residual = {.out_cnhw = NULL, .aliases = begin_aliases, .scratch = NULL,
                                        .forward = begin_forward, .backward = begin_backward};
const cu_layer_ops cu_layer_residual_end = {.out_cnhw = NULL, .aliases = NULL, .scratch = end_scratch,
                                            .forward = end_forward, .backward = end_backward};
