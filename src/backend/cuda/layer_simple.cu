/* The layers without tensors on the GPU: relu and dropout (elementwise, in either layout; their
 * backward updates the gradient in place) and flatten (to sample-major: a transpose of a
 * channel-major input, else the input itself). */
#include "nn_impl.h"

extern "C" {
#include "dt/formulas.h"
}

static size_t elements(const cu_call *c) { return (size_t)c->ps->S * c->li->out_size; }

/* A relu after a direct convolution is fused into it (the convolution writes the relu of its
 * output, which this layer then aliases), and a relu before a max pool into the pool's backward
 * (nn_plan.cu's plan_shapes sets relu_after and relu_in_pool): each part left here is then nothing. */
static int relu_aliases(const cu_plan *pl, int l) { return l > 0 && pl->relu_after[l - 1]; }

static dt_status relu_forward(cu_call *c) {
  if (c->pl->alias[c->l]) return DT_OK;
  NODE_KERNEL(k_relu, c->be, c->ps->count, elements(c), c->x, c->xs, c->y, c->ys);
  return DT_OK;
}

static dt_status relu_backward(cu_call *c) {
  if (!c->pl->relu_in_pool[c->l])
    NODE_KERNEL(k_relu_back, c->be, c->ps->count, elements(c), c->y, c->ys, (float *)c->dy, c->pl->ns);
  c->dx = (float *)c->dy;
  return DT_OK;
}

static size_t drop_scratch(const cu_plan *pl, int l) { return (size_t)pl->S * pl->ly[l].out_size; } /* the mask */

static int dropping(const cu_call *c) { return c->ps->train && c->ps->dropout && c->li->p > 0.0f; }

static dt_status drop_forward(cu_call *c) {
  cu_plan *pl = c->pl;
  const int S = c->ps->S;
  if (!dropping(c)) {
    CU_CALL(cudaMemcpy2DAsync(c->y, sizeof(float) * c->ys, c->x, sizeof(float) * c->xs, sizeof(float) * elements(c), c->ps->count,
                              cudaMemcpyDeviceToDevice, ctx_of(c->be)->stream));
    return DT_OK;
  }
  const size_t chan = pl->chan[c->l], plane = pl->plane[c->l];
  NODE_KERNEL(k_dropout, c->be, c->ps->count, elements(c), (int)chan, S, (unsigned)plane, c->xs, c->ys, c->scr_stride, c->xcs,
              c->xss, c->li->p, dt_f_dropout_scale(c->li->p),
              pl->states_d + ((size_t)c->ps->group * pl->dropouts + pl->drop_index[c->l]) * pl->G, c->ps->batch, c->x, c->y,
              (uint8_t *)c->scr);
  return DT_OK;
}

static dt_status drop_backward(cu_call *c) {
  if (dropping(c))
    NODE_KERNEL(k_dropout_back, c->be, c->ps->count, elements(c), dt_f_dropout_scale(c->li->p), (const uint8_t *)c->scr,
                c->scr_stride, (float *)c->dy, c->pl->ns);
  c->dx = (float *)c->dy;
  return DT_OK;
}

static int flat_out(const cu_plan *pl, int l) {
  (void)pl, (void)l;
  return 0;
}

static int flat_aliases(const cu_plan *pl, int l) { return !pl->cnhw[l]; }

static dt_status flat_forward(cu_call *c) {
  cu_plan *pl = c->pl;
  if (pl->alias[c->l]) return DT_OK;
  NODE_KERNEL(k_to_samples, c->be, c->ps->count, elements(c), (int)pl->chan[c->l], c->ps->S, (unsigned)pl->plane[c->l], c->x, c->xs,
              c->y, c->ys, 0);
  return DT_OK;
}

static dt_status flat_backward(cu_call *c) {
  cu_plan *pl = c->pl;
  if (pl->alias[c->l] || c->dx == NULL) {
    c->dx = (float *)c->dy;
    return DT_OK;
  }
  NODE_KERNEL(k_to_samples, c->be, c->ps->count, elements(c), (int)pl->chan[c->l], c->ps->S, (unsigned)pl->plane[c->l], c->dy, pl->ns,
              c->dx, pl->ns, 1);
  return DT_OK;
}

const cu_layer_ops cu_layer_relu = {.out_cnhw = NULL, .aliases = relu_aliases, .scratch = NULL,
                                    .forward = relu_forward, .backward = relu_backward};
const cu_layer_ops cu_layer_dropout = {.out_cnhw = NULL, .aliases = NULL, .scratch = drop_scratch,
                                       .forward = drop_forward, .backward = drop_backward};
const cu_layer_ops cu_layer_flatten = {.out_cnhw = flat_out, .aliases = flat_aliases, .scratch = NULL,
                                       .forward = flat_forward, .backward = flat_backward};
