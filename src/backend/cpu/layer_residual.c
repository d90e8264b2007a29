/* Residual blocks on the CPU. The start (residual) passes its input on unchanged; the end
 * (residual_end) adds the skip — the block's input itself, or its 1×1 projection and norm — to
 * the block's output. Backward, the end hands dy on to the block unchanged and computes the skip
 * path's input gradient into its scratch; the start adds that to what the block gives back.
 *
 * The end's scratch, in floats: with a projection, a zero bias and a bias-gradient sink for the
 * convolution (f each; the zero bias is never written), then the skip's input gradient (the
 * block input's size), the convolution's output, the norm's output (forward) or input gradient
 * (backward), and the norm's statistics. */
#include <string.h>

#include "cpu_impl.h"

typedef struct end_scratch {
  float *zero_bias, *db_sink, *skip_grad, *conv_out, *tmp, *stats;
} end_scratch;

/* The regions' offsets in floats for a batch of `batch` samples: [0] zero bias, [1] bias sink,
 * [2] skip gradient, [3] convolution output, [4] norm buffer, [5] statistics, [6] the end. */
static void layout(const dt_layer_info *li, int batch, size_t off[7]) {
  const size_t B = (size_t)batch, f = li->projection ? (size_t)li->conv.f : 0;
  const size_t block_in = li->projection ? (size_t)li->conv.c * li->conv.h * li->conv.w : li->out_size;
  const size_t proj = li->projection ? B * li->out_size : 0;
  off[0] = 0;
  off[1] = f;
  off[2] = 2 * f;
  off[3] = off[2] + B * block_in;
  off[4] = off[3] + proj;
  off[5] = off[4] + proj;
  off[6] = off[5] + (li->projection && li->norm.kind != DT_LAYER_KIND_COUNT ? dt_cpu_norm_stats(&li->norm, batch) : 0);
}

static end_scratch carve(const dt_layer_info *li, int batch, void *base) {
  size_t off[7];
  layout(li, batch, off);
  float *p = base;
  return (end_scratch){.zero_bias = p + off[0], .db_sink = p + off[1], .skip_grad = p + off[2], .conv_out = p + off[3],
                       .tmp = p + off[4], .stats = p + off[5]};
}

static size_t end_scratch_bytes(const dt_layer_info *li, int max_batch) {
  size_t off[7];
  layout(li, max_batch, off);
  return sizeof(float) * off[6];
}

static void begin_forward(const cpu_layer_call *c) { (void)c; }

/* dx (== dy) += the skip path's gradient, which the end left in its scratch */
static void begin_backward(const cpu_layer_call *c) {
  const int e = c->li->pair;
  const float *skip_grad = carve(&c->layers[e], c->batch, c->scratch_of[e]).skip_grad;
  const size_t n = (size_t)c->batch * c->li->in_size;
  for (size_t i = 0; i < n; i++) c->dx[i] += skip_grad[i];
}

static int has_norm(const dt_layer_info *li) { return li->norm.kind != DT_LAYER_KIND_COUNT; }

static void end_forward(const cpu_layer_call *c) {
  const dt_layer_info *li = c->li;
  const size_t n = (size_t)c->batch * li->out_size;
  const float *skip = c->act[li->pair]; /* the block's input */
  if (li->projection) {
    const end_scratch e = carve(li, c->batch, c->scratch);
    dt_cpu_conv2d_forward(&li->conv, c->batch, skip, c->params + li->w_off, e.zero_bias, e.conv_out, c->col);
    skip = e.conv_out;
    if (has_norm(li)) {
      dt_cpu_norm_forward(&li->norm, c->batch, c->train, e.conv_out, e.tmp, c->params, c->buffers, e.stats);
      skip = e.tmp;
    }
  }
  for (size_t i = 0; i < n; i++) c->y[i] = c->x[i] + skip[i];
}

/* The block's gradient is dy itself (dx == dy); the skip's goes to the scratch for the start. */
static void end_backward(const cpu_layer_call *c) {
  const dt_layer_info *li = c->li;
  const end_scratch e = carve(li, c->batch, c->scratch);
  if (!li->projection) {
    memcpy(e.skip_grad, c->dy, sizeof(float) * (size_t)c->batch * li->out_size);
    return;
  }
  const float *dconv = c->dy;
  if (has_norm(li)) {
    dt_cpu_norm_backward(&li->norm, c->batch, e.conv_out, c->dy, c->params, c->grad, e.stats, e.tmp);
    dconv = e.tmp;
  }
  dt_cpu_conv2d_backward(&li->conv, c->batch, c->act[li->pair], c->params + li->w_off, dconv, c->grad + li->w_off, e.db_sink,
                         e.skip_grad, c->col, c->dcol);
}

const cpu_layer_ops dt_cpu_layer_residual = {.forward = begin_forward, .backward = begin_backward, .forward_alias = 1,
                                             .backward_in_place = 1};
const cpu_layer_ops dt_cpu_layer_residual_end = {.scratch = end_scratch_bytes, .forward = end_forward, .backward = end_backward,
                                                 .backward_in_place = 1};
