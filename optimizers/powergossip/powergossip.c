/* PowerGossip (Vogels, Karimireddy, Jaggi, NeurIPS 2020): gossip of low-rank approximations of
 * the differences between neighbours' weight matrices, one warm-started power-iteration step per
 * round; vectors (biases, norm parameters) are gossiped uncompressed. Update equations: README.md
 * here.
 *
 * The factors are small (a rank-r factor of each weight matrix per edge) and their products are
 * matrix-vector work, so they run on the host, on per-node copies of the parameters downloaded
 * once per round (free on the CPU backend); the model's gradient and the local step stay on the
 * backend. Every product and Gram–Schmidt step runs in a fixed order, identically at both ends of
 * an edge, so the two copies of an edge's factors stay equal bit for bit on any rank count. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../local_step.h"
#include "../options_impl.h"
#include "dt/optimizer.h"

typedef struct dt_powergossip_opts {
  double lr, mu, gamma;
  int rank;
  int local_optimizer; /* dt_local_opt_kind */
  dt_sgd_extras x;
  dt_lr_schedule schedule;
} dt_powergossip_opts;

static const dt_key keys[] = {
    {.name = "lr", .type = DT_KEY_FLOAT, .offset = offsetof(dt_powergossip_opts, lr), .def = "0.01", .min = 0, .max = DT_INF,
     .help = "learning rate of the local step"},
    {.name = "mu", .type = DT_KEY_FLOAT, .offset = offsetof(dt_powergossip_opts, mu), .def = "0.0", .min = 0, .max = DT_INF,
     .help = "rate decay of the default lr_schedule: round k uses lr / (1 + mu k)"},
    {.name = "gamma", .type = DT_KEY_FLOAT, .offset = offsetof(dt_powergossip_opts, gamma), .def = "1.0", .min = 0, .max = 1,
     .flags = DT_KEY_MIN_OPEN, .help = "consensus step (the paper's diffusion rate) of the low-rank updates"},
    {.name = "rank", .type = DT_KEY_INT, .offset = offsetof(dt_powergossip_opts, rank), .def = "1", .min = 1, .max = 64,
     .help = "rank of each weight matrix's approximation (at most its smaller side)"},
    {.name = "local_optimizer", .type = DT_KEY_ENUM, .offset = offsetof(dt_powergossip_opts, local_optimizer), .def = "sgd",
     .values = dt_local_opt_names, .flags = DT_KEY_EMIT_IF_SET,
     .help = "the local step: sgd (the default), or adam, adamw, rmsprop, adadelta, nadam"},
    DT_SGD_EXTRAS_KEYS(dt_powergossip_opts, x),
    DT_LR_SCHEDULE_KEY(dt_powergossip_opts, schedule),
    {0},
};

/* A weight matrix: a parameter tensor of rank >= 2 seen as m x n (its first dimension by the
 * rest, PyTorch's view(shape[0], -1)), its factors' places in an edge's P (m x r) and Q (n x r),
 * each row-major. */
typedef struct pg_matrix {
  size_t off;
  int m, n, r;
  size_t p_at, q_at;
} pg_matrix;

/* The model's parameters as PowerGossip sees them: matrices, and the vectors (rank-1 tensors)
 * gossiped whole, packed at the start of every message. */
typedef struct pg_layout {
  int nmat, nvec;
  pg_matrix *mat;
  size_t *vec_off, *vec_n;
  size_t nv, np, nq; /* floats: every vector, every P, every Q */
} pg_layout;

typedef struct pg_state {
  dt_powergossip_opts o;
  pg_layout lay;
  int maxdeg;
  size_t edge_floats;  /* np + nq: one edge's factors */
  float *pq;           /* [count][maxdeg][np + nq]: each edge's P then Q (kept) */
  float *was;          /* under faults: pq as the round began, for the edges it leaves as they were */
  float *xh;           /* [count][dim]: host copies of the parameters */
  float *buf;          /* [count][2 · (nv + max(np, nq)) + nv]: a message out, a message in, the vectors' mix */
  size_t buf_floats;   /* one message's capacity */
  dt_learners local;
  int k;
  dt_optimizer_run *run;
} pg_state;

static void layout_free(pg_layout *lay) {
  dt_free(lay->mat);
  dt_free(lay->vec_off);
  dt_free(lay->vec_n);
}

/* The matrices and vectors of model m in parameter order; every parameter belongs to exactly one
 * (checked against dim). */
static dt_status layout_make(const dt_model *m, size_t dim, int rank, pg_layout *lay) {
  dt_status st = DT_OK;
  int cap = 0;
  memset(lay, 0, sizeof *lay);
  DT_CHECK(m != NULL, DT_ERR_CONFIG, "powergossip needs a model whose weight matrices it can see");
  for (int l = 0; l < dt_model_num_layers(m); l++) cap += dt_model_layer(m, l)->ntensors;
  DT_ALLOC_GOTO(lay->mat, cap + 1, "powergossip layout");
  DT_ALLOC_GOTO(lay->vec_off, cap + 1, "powergossip layout");
  DT_ALLOC_GOTO(lay->vec_n, cap + 1, "powergossip layout");
  size_t covered = 0;
  for (int l = 0; l < dt_model_num_layers(m); l++) {
    const dt_layer_info *li = dt_model_layer(m, l);
    for (int t = 0; t < li->ntensors; t++) {
      const dt_tensor_info *ti = &li->tensors[t];
      if (ti->role != DT_TENSOR_PARAM) continue;
      covered += ti->n;
      if (ti->rank < 2) { /* a vector (the authors' OnlyOnLargeParameters: ndim > 1 is a matrix) */
        lay->vec_off[lay->nvec] = ti->off, lay->vec_n[lay->nvec++] = ti->n;
        lay->nv += ti->n;
        continue;
      }
      pg_matrix *x = &lay->mat[lay->nmat++];
      x->off = ti->off;
      x->m = ti->dims[0];
      x->n = (int)(ti->n / (size_t)x->m);
      x->r = rank < x->m ? rank : x->m;
      x->r = x->r < x->n ? x->r : x->n;
      x->p_at = lay->np, x->q_at = lay->nq;
      lay->np += (size_t)x->m * x->r;
      lay->nq += (size_t)x->n * x->r;
    }
  }
  DT_CHECK_GOTO(covered == dim, DT_ERR_INTERNAL, "powergossip: the model's parameter tensors cover %zu of %zu parameters", covered,
                dim);
cleanup:
  if (st != DT_OK) layout_free(lay);
  return st;
}

static float *edge_pq(const pg_state *s, int l, int t) { return s->pq + ((size_t)l * s->maxdeg + t) * s->edge_floats; }
static float *buf_out(const pg_state *s, int l) { return s->buf + (size_t)l * (2 * s->buf_floats + s->lay.nv); }
static float *buf_in(const pg_state *s, int l) { return buf_out(s, l) + s->buf_floats; }
static float *buf_mix(const pg_state *s, int l) { return buf_in(s, l) + s->buf_floats; }

/* No slots: the factors' layout comes from the model, and the checkpoint keeps "pq" before the
 * learners, as it always has. */
static void destroy(dt_optimizer_run *run, void *state) {
  pg_state *s = state;
  dt_learners_free(run, &s->local);
  layout_free(&s->lay);
  dt_free(s->pq);
  dt_free(s->was);
  dt_free(s->xh);
  dt_free(s->buf);
}

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  pg_state *s = state;
  dt_exchange *ex;
  const dt_powergossip_opts *o = opts;
  const dt_graph *g = dt_run_graph(run);
  DT_TRY(layout_make(dt_task_model(dt_run_task(run)), dt_run_dim(run), o->rank, &s->lay));
  for (int i = 0; i < g->n; i++) s->maxdeg = dt_graph_degree(g, i) > s->maxdeg ? dt_graph_degree(g, i) : s->maxdeg;
  s->edge_floats = s->lay.np + s->lay.nq;
  s->buf_floats = s->lay.nv + (s->lay.np > s->lay.nq ? s->lay.np : s->lay.nq);
  DT_ALLOC(s->pq, (size_t)dt_run_count(run) * s->maxdeg * s->edge_floats + 1, "powergossip factors");
  if (dt_run_faulty(run)) DT_ALLOC(s->was, (size_t)dt_run_count(run) * s->maxdeg * s->edge_floats + 1, "powergossip factors");
  DT_ALLOC(s->xh, (size_t)dt_run_count(run) * dt_run_dim(run) + 1, "powergossip parameters");
  DT_ALLOC(s->buf, (size_t)dt_run_count(run) * (2 * s->buf_floats + s->lay.nv) + 1, "powergossip messages");
  /* each edge's starting P and Q: standard normal draws from the stream both ends share */
  for (int l = 0; l < dt_run_count(run); l++) {
    const int i = dt_run_first(run) + l;
    for (int t = 0; t < dt_graph_degree(g, i); t++) {
      const int j = g->nbr[g->nbr_start[i] + t], lo = i < j ? i : j, hi = i < j ? j : i;
      dt_rng r;
      dt_rng_init(&r, dt_run_seed(run), DT_RNG_POWERGOSSIP, ((uint64_t)lo << 32) | (uint64_t)hi);
      float *pq = edge_pq(s, l, t);
      for (size_t a = 0; a < s->edge_floats; a++) pq[a] = (float)dt_rng_normal(&r);
    }
  }
  DT_TRY(dt_run_keep_nodes(run, "pq", s->pq, sizeof(float) * s->maxdeg * s->edge_floats));
  const dt_local_opt_spec spec = dt_local_step_spec(o->local_optimizer, o->lr, &o->x);
  DT_TRY(dt_learners_create_spec(run, "local", &spec, &s->local));
  return dt_run_exchange_edges(run, s->buf_floats, &ex);
}

/* Gram–Schmidt on the r columns of the rows x r row-major matrix a, as the authors'
 * orthogonalize: each column divided by its norm + 1e-8, then removed from the later ones. A
 * column that is exactly 0 (a difference that was 0, as when no node has moved yet) would stay 0
 * for good, and the matrix never be gossiped again; it is redrawn instead, standard normal from
 * r (both ends of the edge draw the same). */
static void orthogonalize(float *a, int rows, int r, dt_rng *redraw) {
  for (int c = 0; c < r; c++) {
    double ss = 0.0;
    for (int q = 0; q < rows; q++) ss += (double)a[(size_t)q * r + c] * a[(size_t)q * r + c];
    if (ss == 0.0) {
      for (int q = 0; q < rows; q++) a[(size_t)q * r + c] = (float)dt_rng_normal(redraw);
      for (int q = 0; q < rows; q++) ss += (double)a[(size_t)q * r + c] * a[(size_t)q * r + c];
    }
    const float norm = (float)sqrt(ss) + 1e-8f;
    for (int q = 0; q < rows; q++) a[(size_t)q * r + c] /= norm;
    for (int c2 = c + 1; c2 < r; c2++) {
      double dot = 0.0;
      for (int q = 0; q < rows; q++) dot += (double)a[(size_t)q * r + c] * a[(size_t)q * r + c2];
      for (int q = 0; q < rows; q++) a[(size_t)q * r + c2] -= (float)dot * a[(size_t)q * r + c];
    }
  }
}

/* out (m x r) = M in (n x r), or (transpose) out (n x r) = Mᵀ in (m x r); sums in double. */
static void product(const float *mat, int m, int n, int r, int transpose, const float *in, float *out) {
  const int rows = transpose ? n : m, inner = transpose ? m : n;
  for (int a = 0; a < rows; a++)
    for (int c = 0; c < r; c++) {
      double acc = 0.0;
      for (int b = 0; b < inner; b++)
        acc += (double)(transpose ? mat[(size_t)b * n + a] : mat[(size_t)a * n + b]) * in[(size_t)b * r + c];
      out[(size_t)a * r + c] = (float)acc;
    }
}

/* Round k's side: odd rounds send P = M Q̂ (Q orthogonalized), even rounds Q = Mᵀ P̂; round 0
 * none (every node starts at θ0: nothing differs yet). */
static int side(int k) { return k == 0 ? 0 : (k % 2 == 1 ? 1 : 2); }
/* Floats of factors a message of side sd carries after the vectors: every P, every Q, or none. */
static size_t factor_floats(const pg_layout *lay, int sd) { return sd == 0 ? 0 : sd == 1 ? lay->np : lay->nq; }

/* Node l's messages: its vectors, then per edge its half of this round's power step. */
static dt_status node_send(void *p, int l) {
  pg_state *s = p;
  dt_optimizer_run *run = s->run;
  const dt_graph *g = dt_run_graph(run);
  const pg_layout *lay = &s->lay;
  const int i = dt_run_first(run) + l, sd = side(s->k);
  const float *x = s->xh + (size_t)l * dt_run_dim(run);
  float *msg = buf_out(s, l);
  size_t at = 0;
  for (int v = 0; v < lay->nvec; v++) {
    memcpy(msg + at, x + lay->vec_off[v], sizeof(float) * lay->vec_n[v]);
    at += lay->vec_n[v];
  }
  const size_t floats = lay->nv + factor_floats(lay, sd);
  for (int t = 0; t < dt_graph_degree(g, i); t++) {
    float *pq = edge_pq(s, l, t), *P = pq, *Q = pq + lay->np;
    const int j = g->nbr[g->nbr_start[i] + t], lo = i < j ? i : j, hi = i < j ? j : i;
    dt_rng redraw; /* (seed, powergossip, 2^63 + round · 2^24 + lo · 2^12 + hi): the edge's redraws this round */
    dt_rng_init(&redraw, dt_run_seed(run), DT_RNG_POWERGOSSIP, (1ull << 63) | ((uint64_t)s->k << 24) | ((uint64_t)lo << 12) | (uint64_t)hi);
    for (int a = 0; a < lay->nmat && sd != 0; a++) {
      const pg_matrix *mx = &lay->mat[a];
      if (sd == 1) {
        orthogonalize(Q + mx->q_at, mx->n, mx->r, &redraw);
        product(x + mx->off, mx->m, mx->n, mx->r, 0, Q + mx->q_at, P + mx->p_at);
      } else {
        orthogonalize(P + mx->p_at, mx->m, mx->r, &redraw);
        product(x + mx->off, mx->m, mx->n, mx->r, 1, P + mx->p_at, Q + mx->q_at);
      }
    }
    if (sd != 0) memcpy(msg + lay->nv, sd == 1 ? P : Q, sizeof(float) * (floats - lay->nv));
    DT_TRY(dt_be_upload(dt_run_backend(run), dt_exchange_edge_buffer(dt_run_the_exchange(run), i, t), msg, sizeof(float) * floats));
  }
  return DT_OK;
}

/* out[a] = out[a] + w · v[a] in float, dt_be_mix's order of operations */
static void add_scaled(float *out, float w, const float *v, size_t n) {
  for (size_t a = 0; a < n; a++) out[a] = out[a] + w * v[a];
}

/* Node l after the exchange: its vectors mixed with W (0 + Σ_j W_ij v_j in increasing id, self at
 * its place); and for each neighbour j in increasing id, the difference both ends now share
 * ((M_hi − M_lo) Q̂ into P, or (M_hi − M_lo)ᵀ P̂ into Q, hi the larger id: hi computes own − in,
 * lo in − own, the same floats) and the step M_i += ±γ W_ij P Qᵀ (+ at the smaller id). */
static dt_status node_mix(void *p, int l) {
  pg_state *s = p;
  dt_optimizer_run *run = s->run;
  const dt_graph *g = dt_run_graph(run);
  const pg_layout *lay = &s->lay;
  const int i = dt_run_first(run) + l, sd = side(s->k);
  float *x = s->xh + (size_t)l * dt_run_dim(run), *own = buf_out(s, l), *in = buf_in(s, l), *mix = buf_mix(s, l);
  const size_t nf = factor_floats(lay, sd);
  memset(mix, 0, sizeof(float) * lay->nv);
  /* under faults: the vectors' weights renormalised over what arrived, self included */
  double total = dt_run_this_round(run)->w_self[i];
  for (int t = 0; dt_run_faulty(run) && t < dt_graph_degree(g, i); t++)
    if (dt_exchange_recv(dt_run_the_exchange(run), i, g->nbr[g->nbr_start[i] + t], 0) != NULL)
      total += dt_run_this_round(run)->w_nbr[g->nbr_start[i] + t];
  const double norm = dt_run_faulty(run) ? total : 1.0;
  int self_done = 0;
  for (int t = 0; t < dt_graph_degree(g, i); t++) {
    const int e = g->nbr_start[i] + t, j = g->nbr[e];
    if (!self_done && j > i) add_scaled(mix, (float)(dt_run_this_round(run)->w_self[i] / norm), own, lay->nv), self_done = 1;
    const float *recv = dt_exchange_recv(dt_run_the_exchange(run), i, j, 0);
    DT_CHECK(recv != NULL || dt_run_faulty(run), DT_ERR_INTERNAL, "powergossip: no message from node %d to node %d", j, i);
    /* an edge that did not carry both messages is left as it was by both ends (every rank knows) */
    const int both = !dt_run_faulty(run) || (dt_run_delivered(run, NULL, e) &&
                                             dt_run_delivered(run, NULL, g->nbr_start[j] + dt_graph_nbr_index(g, j, i)));
    if (!both) memcpy(edge_pq(s, l, t), s->was + (edge_pq(s, l, t) - s->pq), sizeof(float) * s->edge_floats);
    if (recv == NULL) continue;
    DT_TRY(dt_be_download(dt_run_backend(run), in, recv, sizeof(float) * (lay->nv + nf)));
    const float w = (float)(dt_run_this_round(run)->w_nbr[e] / norm);
    add_scaled(mix, w, in, lay->nv);
    if (sd == 0 || !both) continue;
    float *P = edge_pq(s, l, t), *Q = P + lay->np, *d = sd == 1 ? P : Q;
    const float *theirs = in + lay->nv;
    for (size_t a = 0; a < nf; a++) d[a] = i > j ? d[a] - theirs[a] : theirs[a] - d[a];
    const float coef = (i > j ? -1.0f : 1.0f) * w * (float)s->o.gamma;
    for (int m = 0; m < lay->nmat; m++) {
      const pg_matrix *mx = &lay->mat[m];
      const float *pm = P + mx->p_at, *qm = Q + mx->q_at;
      float *xm = x + mx->off;
      for (int a = 0; a < mx->m; a++)
        for (int b = 0; b < mx->n; b++) {
          float pq = 0.0f;
          for (int c = 0; c < mx->r; c++) pq += pm[(size_t)a * mx->r + c] * qm[(size_t)b * mx->r + c];
          xm[(size_t)a * mx->n + b] += coef * pq;
        }
    }
  }
  if (!self_done) add_scaled(mix, (float)(dt_run_this_round(run)->w_self[i] / norm), own, lay->nv);
  size_t at = 0;
  for (int v = 0; v < lay->nvec; v++) {
    memcpy(x + lay->vec_off[v], mix + at, sizeof(float) * lay->vec_n[v]);
    at += lay->vec_n[v];
  }
  return DT_OK;
}

static dt_status round_k(void *p, dt_optimizer_run *run, int k) {
  pg_state *s = p;
  const pg_layout *lay = &s->lay;
  const float lr = (float)dt_run_rate(run, &s->o.schedule, s->o.lr, s->o.mu, k, 1);
  s->k = k;
  /* the gradient at x_i before the gossip (the authors' DPSGD with overlapping = True) */
  DT_TRY(dt_run_gradients(run, dt_run_theta(run), &s->local.grad, NULL));
  for (int l = 0; l < dt_run_count(run); l++)
    DT_TRY(dt_slab_download_node(dt_run_backend(run), dt_run_theta(run), l, s->xh + (size_t)l * dt_run_dim(run)));
  if (k == 0 && dt_run_tracing(run)) /* the edges' starting factors, for the twin */
    for (int l = 0; l < dt_run_count(run); l++)
      for (int t = 0; t < dt_graph_degree(dt_run_graph(run), dt_run_first(run) + l); t++)
        DT_TRY(dt_run_trace_f32(run, l, "PGPQ", edge_pq(s, l, t), s->edge_floats));
  if (s->was != NULL) memcpy(s->was, s->pq, sizeof(float) * (size_t)dt_run_count(run) * s->maxdeg * s->edge_floats);
  DT_TRY(dt_run_for_nodes(run, node_send, s));
  const int sd = side(k);
  if (sd != 0 && dt_run_tracing(run)) /* each edge's orthogonalized factor (Q̂ or P̂), for the twin */
    for (int l = 0; l < dt_run_count(run); l++)
      for (int t = 0; t < dt_graph_degree(dt_run_graph(run), dt_run_first(run) + l); t++) {
        float *pq = edge_pq(s, l, t);
        DT_TRY(dt_run_trace_f32(run, l, "PGDR", sd == 1 ? pq + lay->np : pq, sd == 1 ? lay->nq : lay->np));
      }
  const size_t floats = lay->nv + factor_floats(lay, sd);
  if (floats > 0) DT_TRY(dt_run_exchange_go_sized(run, NULL, sizeof(float) * floats));
  DT_TRY(dt_run_for_nodes(run, node_mix, s));
  for (int l = 0; l < dt_run_count(run); l++)
    DT_TRY(dt_slab_upload_node(dt_run_backend(run), dt_run_theta(run), l, s->xh + (size_t)l * dt_run_dim(run)));
  /* then the local step at the gossiped point with that gradient */
  return dt_local_opt_step_all(s->local.opt, dt_run_theta(run), &s->local.grad, lr);
}

/* Without the model: every parameter sent whole (an upper bound). */
static double bytes_per_round(const dt_graph *g, size_t dim, const void *opts) {
  (void)opts;
  return 2.0 * g->num_edges * (double)dim * sizeof(float);
}

/* The mean over an odd and an even round: the vectors, and P or Q of every matrix (round 0
 * sends the vectors alone). */
static double bytes_per_round_model(const dt_graph *g, const dt_model *m, const void *opts) {
  const dt_powergossip_opts *o = opts;
  pg_layout lay;
  if (layout_make(m, dt_model_num_params(m), o->rank, &lay) != DT_OK) return bytes_per_round(g, dt_model_num_params(m), opts);
  const double floats = (double)lay.nv + 0.5 * ((double)lay.np + (double)lay.nq);
  layout_free(&lay);
  return 2.0 * g->num_edges * floats * sizeof(float);
}

static double gradient_step(const void *opts) {
  const dt_powergossip_opts *o = opts;
  return dt_local_step_stable(o->lr, o->local_optimizer, &o->x);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  const dt_powergossip_opts *o = opts;
  return dt_local_step_check(&o->schedule, o->mu, o->local_optimizer, &o->x, rounds, err, err_size);
}

static const char *const aliases[] = {"power_gossip", NULL};

/* Per node: the learners' grad and moments; per out-edge: the per-edge exchange's send message of
 * buf_floats = nv + max(np, nq), which only the model's shapes give (create's layout). Estimated
 * here as 2 rank sqrt(dim) floats (a weight matrix's larger factor), never above dim. */
static dt_state_size state_extra(const void *opts, size_t dim) {
  const dt_powergossip_opts *o = opts;
  const double msg = 2.0 * o->rank * sqrt((double)dim) / (double)dim;
  return (dt_state_size){.per_node = 1 + dt_local_opt_state_vectors((dt_local_opt_kind)o->local_optimizer, (float)o->x.momentum),
                         .per_edge = msg < 1 ? msg : 1};
}

const dt_optimizer_def dt_optimizer_powergossip = {
    .plugin =
        {
            .name = "powergossip",
            .aliases = aliases,
            .summary = "PowerGossip: rank-r power-iteration approximations of neighbours' weight-matrix differences",
            .keys = keys,
            .opts_size = sizeof(dt_powergossip_opts),
            .finalize = finalize,
        },
    DT_STATE(pg_state, o, run),
    .create = create,
    .destroy = destroy,
    .round = round_k,
    .bytes_per_round = bytes_per_round,
    .bytes_per_round_model = bytes_per_round_model,
    .traffic_per_edge = 1,
    .gradient_step = gradient_step,
    .on_missing = DT_MISSING_RENORMALISE, /* the vectors; an edge's factors wait for both its messages (node_mix) */
    .state_extra = state_extra,
};
