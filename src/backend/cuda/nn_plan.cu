/* The CUDA backend's model plan (cu_plan in nn_impl.h): for one model and batch size, each
 * activation's layout and size, the group size G (from the model, the batch and the run's node
 * count, never from the rank's share; see nn.cu) and the device and pinned memory of a group. */
#include <string.h>

#include "nn_impl.h"

/* The group size G: the largest group whose scratch fits a share of the GPU's memory (its total,
 * the same on every rank: a sixteenth, so that several ranks and both of a task's plans fit on
 * one GPU), at most a quarter of the run's nodes unless that is under MIN_GROUP (so that ranks
 * sharing a GPU pad few idle slots: a rank computes whole groups), and never more than the run
 * has. Every input is the same on every rank of a run on one GPU model, so a node's arithmetic
 * (cuBLAS may pick another kernel for another batch count) does not depend on the placement. */
enum { MIN_GROUP = 64, GROUP_SHARE = 16, MAX_GROUPS = 4 };
/* a convolution runs directly (cu_plan.direct) with at most DIRECT_MAX_TAPS taps (c·k·k) and
 * either at most DIRECT_MAX_FILTERS filters or at most DIRECT_SHORT_TAPS taps */
enum { DIRECT_MAX_TAPS = 64, DIRECT_MAX_FILTERS = 16, DIRECT_SHORT_TAPS = 32 };

static void free_host(void *p) {
  if (p != NULL) (void)cudaFreeHost(p);
}

int cu_conv_direct(const dt_conv_shape *s) {
  const int ckk = s->c * s->k * s->k;
  return ckk <= DIRECT_MAX_TAPS && (s->f <= DIRECT_MAX_FILTERS || ckk <= DIRECT_SHORT_TAPS);
}

void cu_plan_free(dt_backend *be, void *p) {
  cu_plan *pl = (cu_plan *)p;
  if (pl == NULL) return;
  for (int e = 0; e < pl->ev_made; e++) (void)cudaEventDestroy(pl->ev[e / (pl->L + 1)][e % (pl->L + 1)]);
  for (int i = 0; i < CU_GRAPHS; i++)
    if (pl->graphs[i].exec != NULL) (void)cudaGraphExecDestroy(pl->graphs[i].exec);
  cu_free(be, pl->theta);
  cu_free(be, pl->grad);
  cu_free(be, pl->bufs);
  for (int l = 0; l <= CU_MAX_L; l++) cu_free(be, pl->act[l]);
  for (int l = 0; l < CU_MAX_L; l++) cu_free(be, pl->scr[l]);
  cu_free(be, pl->ga);
  cu_free(be, pl->gb);
  cu_free(be, pl->col);
  cu_free(be, pl->dcol);
  cu_free(be, pl->y);
  cu_free(be, pl->sample_loss);
  cu_free(be, pl->sample_hit);
  cu_free(be, pl->total);
  cu_free(be, pl->correct);
  cu_free(be, pl->batch_d);
  cu_free(be, pl->scale_d);
  cu_free(be, pl->states_d);
  free_host(pl->batch_h);
  free_host(pl->scale_h);
  free_host(pl->states_h);
  free_host(pl->total_h);
  free_host(pl->correct_h);
  dt_free(pl);
}

static dt_status host_alloc(size_t bytes, void **out) {
  CU_CALL(cudaMallocHost(out, bytes > 0 ? bytes : 1));
  memset(*out, 0, bytes);
  return DT_OK;
}

static size_t round64(size_t floats) { return (floats + 63) & ~(size_t)63; }

/* The model's shapes through the layer table: each activation's layout, (channels, plane) split
 * and node stride, which layers alias their input, each layer's scratch, the largest activation
 * (*max_act floats per sample) and im2col buffer (*max_cols floats per sample). */
static void plan_shapes(const dt_model *m, int max_batch, int nodes, cu_plan *pl, size_t *max_act, size_t *max_cols) {
  pl->L = dt_model_num_layers(m);
  pl->classes = dt_model_num_classes(m);
  pl->S = max_batch;
  pl->nodes = nodes > 0 ? nodes : 1;
  pl->P = dt_model_num_params(m);
  pl->ps = dt_slab_stride(pl->P);
  pl->B = dt_model_num_buffers(m);
  pl->bs = pl->B > 0 ? dt_slab_stride(pl->B) : 0;
  pl->in_dim = dt_model_input_size(m);
  const size_t S = (size_t)max_batch;
  size_t maxs = pl->in_dim, cols = 0;
  const dt_layer_info *l0 = dt_model_layer(m, 0);
  pl->cnhw[0] = 0, pl->chan[0] = (size_t)l0->in_c, pl->plane[0] = (size_t)l0->in_h * l0->in_w;
  pl->as[0] = round64(S * pl->in_dim);
  for (int l = 0; l < pl->L; l++) pl->ly[l] = *dt_model_layer(m, l); /* a layer's layout may look at the next */
  for (int l = 0; l < pl->L; l++) {
    const dt_layer_info li = pl->ly[l];
    const cu_layer_ops *ops = cu_layer_ops_of(li.kind);
    if (li.out_size > maxs) maxs = li.out_size;
    const dt_conv_shape *conv = li.kind == DT_LAYER_CONV2D || (li.kind == DT_LAYER_RESIDUAL_END && li.projection) ? &li.conv : NULL;
    if (conv != NULL) {
      const size_t ckk = (size_t)conv->c * conv->k * conv->k, c = ckk * conv->oh * conv->ow;
      pl->direct[l] = (uint8_t)cu_conv_direct(conv);
      /* a relu right after a direct convolution: the convolution writes it (the relu aliases) */
      pl->relu_after[l] = li.kind == DT_LAYER_CONV2D && pl->direct[l] && l + 1 < pl->L && dt_model_layer(m, l + 1)->kind == DT_LAYER_RELU;
      cols = c > cols ? c : cols;
      if (pl->direct[l]) { /* the weight gradient's partial sums, in dcol (layer_conv2d.cu) */
        const size_t part = (size_t)conv->f * cu_conv_dw_chunks(S * conv->oh * conv->ow) * ckk;
        pl->dw_part = part > pl->dw_part ? part : pl->dw_part;
      }
    }
    if (li.kind == DT_LAYER_DROPOUT) pl->drop_index[l] = pl->dropouts++;
    pl->cnhw[l + 1] = ops->out_cnhw != NULL ? ops->out_cnhw(pl, l) : pl->cnhw[l];
    pl->chan[l + 1] = (size_t)li.out_c, pl->plane[l + 1] = (size_t)li.out_h * li.out_w;
    pl->alias[l] = ops->aliases != NULL && ops->aliases(pl, l);
    pl->as[l + 1] = pl->alias[l] ? 0 : round64(S * li.out_size);
    pl->scr_stride[l] = ops->scratch != NULL ? cu_round256(ops->scratch(pl, l)) : 0;
  }
  /* a relu right before a max pool: the pool's backward applies its gradient (nothing else reads
   * the relu's output: a residual block's skip reads the input of its own start layer) */
  for (int l = 0; l + 1 < pl->L; l++) pl->relu_in_pool[l] = pl->ly[l].kind == DT_LAYER_RELU && pl->ly[l + 1].kind == DT_LAYER_MAXPOOL2D;
  *max_act = maxs;
  *max_cols = cols;
}

/* Gradient and im2col strides and the group size G (see MIN_GROUP), from the model, the batch,
 * the run's node count and the GPU's total memory. */
static void plan_group(cu_plan *pl, size_t maxs, size_t cols, int run_nodes, size_t device_bytes) {
  const dt_layer_kind k0 = pl->ly[0].kind;
  pl->shared_input = k0 == DT_LAYER_CONV2D || k0 == DT_LAYER_LINEAR ||
                     (k0 == DT_LAYER_FLATTEN && pl->L > 1 && pl->ly[1].kind == DT_LAYER_LINEAR);
  const size_t S = (size_t)pl->S;
  pl->ns = round64(S * maxs);
  pl->cols = round64(S * cols > pl->dw_part ? S * cols : pl->dw_part);
  /* per node: every activation and scratch, two gradient buffers, two im2col buffers,
   * parameters, gradient and buffers */
  size_t per_node = sizeof(float) * (2 * pl->ns + 2 * pl->cols + 2 * pl->ps + pl->bs);
  for (int l = 0; l <= pl->L; l++) per_node += sizeof(float) * pl->as[l];
  for (int l = 0; l < pl->L; l++) per_node += pl->scr_stride[l];
  size_t g = device_bytes / GROUP_SHARE / (per_node > 0 ? per_node : 1);
  const size_t run = (size_t)(run_nodes > 0 ? run_nodes : 1);
  const size_t quarter = (run + MAX_GROUPS - 1) / MAX_GROUPS, most = quarter > (size_t)MIN_GROUP ? quarter : (size_t)MIN_GROUP;
  g = g < 1 ? 1 : g > most ? most : g;
  pl->G = (int)(g > run ? run : g);
  pl->groups_cap = (pl->nodes + pl->G - 1) / pl->G;
}

/* The plan's device buffers (a group's worth, and per-call blocks for every group) and the
 * pinned host sources of its uploads. Scratch is zeroed once. */
static dt_status plan_alloc(dt_backend *be, cu_plan *pl) {
  const size_t G = (size_t)pl->G, S = (size_t)pl->S, slots = (size_t)pl->groups_cap * G;
#define PL_ALLOC(p, count) DT_TRY(cu_alloc(be, sizeof(*(p)) * (size_t)(count), (void **)&(p)))
#define PL_HOST(p, count) DT_TRY(host_alloc(sizeof(*(p)) * (size_t)(count), (void **)&(p)))
  PL_ALLOC(pl->theta, G * pl->ps);
  PL_ALLOC(pl->grad, G * pl->ps);
  if (pl->B > 0) PL_ALLOC(pl->bufs, G * pl->bs);
  for (int l = 0; l <= pl->L; l++)
    if (pl->as[l] > 0) PL_ALLOC(pl->act[l], G * pl->as[l]);
  for (int l = 0; l < pl->L; l++)
    if (pl->scr_stride[l] > 0) {
      DT_TRY(cu_alloc(be, G * pl->scr_stride[l], &pl->scr[l]));
      CU_CALL(cudaMemsetAsync(pl->scr[l], 0, G * pl->scr_stride[l], ctx_of(be)->stream));
    }
  PL_ALLOC(pl->ga, G * pl->ns);
  PL_ALLOC(pl->gb, G * pl->ns);
  if (pl->cols > 0) {
    PL_ALLOC(pl->col, G * pl->cols);
    PL_ALLOC(pl->dcol, G * pl->cols);
  }
  PL_ALLOC(pl->y, G * S);
  PL_ALLOC(pl->sample_loss, G * S);
  PL_ALLOC(pl->sample_hit, G * S);
  PL_ALLOC(pl->total, slots);
  PL_ALLOC(pl->correct, slots);
  PL_ALLOC(pl->batch_d, slots);
  PL_ALLOC(pl->scale_d, slots);
  PL_ALLOC(pl->states_d, slots * (size_t)(pl->dropouts > 0 ? pl->dropouts : 1));
  PL_HOST(pl->batch_h, slots);
  PL_HOST(pl->scale_h, slots);
  PL_HOST(pl->states_h, slots * (size_t)(pl->dropouts > 0 ? pl->dropouts : 1));
  PL_HOST(pl->total_h, slots);
  PL_HOST(pl->correct_h, slots);
#undef PL_ALLOC
#undef PL_HOST
  return DT_OK;
}

/* Shapes, the group size, and the plan's memory. */
static dt_status plan_fill(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, cu_plan *pl) {
  size_t maxs, cols;
  DT_CHECK(dt_model_num_layers(m) <= CU_MAX_L, DT_ERR_INTERNAL, "a model of %d compiled layers", dt_model_num_layers(m));
  plan_shapes(m, max_batch, nodes, pl, &maxs, &cols);
  plan_group(pl, maxs, cols, run_nodes, ctx_of(be)->prop.totalGlobalMem);
  const size_t most = pl->ns > pl->cols ? pl->ns : pl->cols;
  DT_CHECK(most < ((size_t)1 << 31) && pl->ps < ((size_t)1 << 31), DT_ERR_UNSUPPORTED,
           "the cuda backend keeps a node's activations and parameters under 2^31 floats; this model with batches of %d "
           "needs %zu; use a smaller batch or backend: cpu", max_batch, most > pl->ps ? most : pl->ps);
  return plan_alloc(be, pl);
}

dt_status cu_plan_create(dt_backend *be, const dt_model *m, int max_batch, int nodes, int run_nodes, void **out) {
  dt_status st = DT_OK;
  cu_plan *pl = NULL;
  *out = NULL;
  DT_CHECK(max_batch >= 1, DT_ERR_CONFIG, "batch size must be at least 1, found %d", max_batch);
  CU_HOST_NEW(pl, "model plan");
  DT_TRY_GOTO(plan_fill(be, m, max_batch, nodes, run_nodes, pl));
  *out = pl;
  pl = NULL;
cleanup:
  cu_plan_free(be, pl);
  return st;
}
