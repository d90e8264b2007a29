/* The layers without tensors on the CPU: relu, dropout (its mask in the scratch; off in eval
 * mode or without a stream) and flatten (the output is the input). */
#include <string.h>

#include "cpu_impl.h"

static void relu_forward(const cpu_layer_call *c) {
  dt_cpu_relu_forward((size_t)c->batch * c->li->out_size, c->x, c->y);
}

/* in place, from the relu's own output */
static void relu_backward(const cpu_layer_call *c) { dt_cpu_relu_backward((size_t)c->batch * c->li->out_size, c->y, c->dy, c->dx); }

static size_t dropout_scratch(const dt_layer_info *li, int max_batch) { return (size_t)max_batch * li->out_size; }

static int dropout_on(const cpu_layer_call *c) { return c->train && c->li->p > 0.0f && c->rng != NULL; }

static void dropout_forward(const cpu_layer_call *c) {
  const size_t n = (size_t)c->batch * c->li->out_size;
  if (dropout_on(c)) dt_cpu_dropout_forward(n, c->li->p, c->x, c->y, (uint8_t *)c->scratch, c->rng);
  else memcpy(c->y, c->x, sizeof(float) * n);
}

static void dropout_backward(const cpu_layer_call *c) {
  if (dropout_on(c)) dt_cpu_dropout_backward((size_t)c->batch * c->li->out_size, c->li->p, (const uint8_t *)c->scratch, c->dy, c->dx);
}

static void nothing(const cpu_layer_call *c) { (void)c; }

const cpu_layer_ops dt_cpu_layer_relu = {.forward = relu_forward, .backward = relu_backward, .backward_in_place = 1};
const cpu_layer_ops dt_cpu_layer_dropout = {.scratch = dropout_scratch, .forward = dropout_forward, .backward = dropout_backward,
                                            .backward_in_place = 1};
const cpu_layer_ops dt_cpu_layer_flatten = {.forward = nothing, .backward = nothing, .forward_alias = 1, .backward_in_place = 1};
