/* Splits of a training set over graph nodes. All are functions of (seed, N, labels) only, so
 * every rank computes the same split without communication.
 * - random: a seeded permutation cut into N blocks whose sizes differ by at most one;
 * - hetero: by class. N <= classes: contiguous groups of classes, sizes differing by at most
 *   one, so no class is dropped (the seed reference drops classes when 10 % N != 0). N > classes:
 *   node i takes class floor(i·C/N), and nodes sharing a class split its samples evenly;
 * - dirichlet: per class, proportions ~ Dir(alpha), redrawn until every node has min_per_node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dt/config.h"
#include "dt/data.h"
#include "dt/rng.h"

void dt_split_free(dt_split *s) {
  if (s == NULL) return;
  dt_free(s->start);
  dt_free(s->idx);
  s->start = NULL;
  s->idx = NULL;
}

/* Indices of each class, in increasing order, shuffled when rng is not NULL. */
static dt_status by_class(const dt_samples *t, dt_rng *rng, uint32_t **idx, size_t *cstart) {
  dt_status st = DT_OK;
  const int C = t->num_classes;
  size_t *fill = NULL;
  DT_ALLOC_GOTO(*idx, t->count, "split");
  DT_ALLOC_GOTO(fill, C + 1, "split");
  memset(cstart, 0, sizeof(size_t) * (size_t)(C + 1));
  for (size_t i = 0; i < t->count; i++) cstart[t->labels[i] + 1]++;
  for (int c = 0; c < C; c++) cstart[c + 1] += cstart[c];
  for (size_t i = 0; i < t->count; i++) (*idx)[cstart[t->labels[i]] + fill[t->labels[i]]++] = (uint32_t)i;
  if (rng != NULL)
    for (int c = 0; c < C; c++) dt_rng_shuffle_u32(rng, *idx + cstart[c], cstart[c + 1] - cstart[c]);
cleanup:
  dt_free(fill);
  return st;
}

static void split_random(const dt_samples *train, dt_rng *rng, int N, dt_split *out) {
  for (size_t i = 0; i < train->count; i++) out->idx[i] = (uint32_t)i;
  dt_rng_shuffle_u32(rng, out->idx, train->count);
  for (int i = 0; i <= N; i++) out->start[i] = train->count * (size_t)i / (size_t)N;
}

/* hetero: node i gets classes [C·i/N, C·(i+1)/N) when N <= C; else the nodes sharing a class
 * split its samples in contiguous shares. cls/cstart: sample ids grouped by class. */
static void split_hetero(const uint32_t *cls, const size_t *cstart, int C, int N, dt_split *out) {
  size_t pos = 0;
  for (int i = 0; i < N; i++) {
    out->start[i] = pos;
    if (N <= C) {
      int c0 = (int)((long)C * i / N), c1 = (int)((long)C * (i + 1) / N); /* classes [c0, c1) */
      size_t n = cstart[c1] - cstart[c0];
      memcpy(out->idx + pos, cls + cstart[c0], n * sizeof(uint32_t));
      pos += n;
    } else {
      int c = (int)((long)C * i / N);
      int first = 0, share = 0; /* nodes with class c: contiguous ids */
      while ((long)C * first / N < c) first++;
      for (int j = first; j < N && (long)C * j / N == c; j++) share++;
      size_t m = cstart[c + 1] - cstart[c];
      size_t a = cstart[c] + m * (size_t)(i - first) / (size_t)share, b = cstart[c] + m * (size_t)(i - first + 1) / (size_t)share;
      memcpy(out->idx + pos, cls + a, (b - a) * sizeof(uint32_t));
      pos += b - a;
    }
  }
  out->start[N] = pos;
}

/* dirichlet: per class, proportions over nodes from Dir(alpha) rounded to counts cnt[i·C + c];
 * redrawn (up to 1000 times) until every node holds at least min_per_node samples. */
static dt_status dirichlet_counts(const dt_experiment_config *e, dt_rng *rng, const size_t *cstart, int C, int N, size_t *cnt) {
  dt_status st = DT_OK;
  double *prop = NULL;
  DT_ALLOC_GOTO(prop, (size_t)N, "split");
  int ok = 0;
  for (int attempt = 0; attempt < 1000 && !ok; attempt++) {
    memset(cnt, 0, sizeof(size_t) * (size_t)N * C);
    for (int c = 0; c < C; c++) {
      double sum = 0;
      for (int i = 0; i < N; i++) sum += prop[i] = dt_rng_gamma(rng, e->dirichlet_alpha);
      size_t m = cstart[c + 1] - cstart[c], given = 0;
      double acc = 0;
      for (int i = 0; i < N; i++) {
        acc += prop[i] / sum;
        size_t upto = i == N - 1 ? m : (size_t)floor(acc * (double)m + 0.5);
        if (upto > m) upto = m;
        if (upto < given) upto = given;
        cnt[(size_t)i * C + c] = upto - given;
        given = upto;
      }
    }
    ok = 1;
    for (int i = 0; i < N && ok; i++) {
      size_t tot = 0;
      for (int c = 0; c < C; c++) tot += cnt[(size_t)i * C + c];
      ok = tot >= (size_t)e->min_per_node;
    }
  }
  DT_CHECK_KEY_GOTO(ok, DT_ERR_CONFIG, "experiment.split",
                    "experiment.split: no dirichlet split with alpha = %g gave every one of %d nodes at least %d samples "
                    "in 1000 draws; raise split.alpha or lower split.min_per_node", e->dirichlet_alpha, N, e->min_per_node);
cleanup:
  dt_free(prop);
  return st;
}

static dt_status split_dirichlet(const dt_experiment_config *e, dt_rng *rng, const uint32_t *cls, const size_t *cstart, int C, int N,
                                 dt_split *out) {
  dt_status st = DT_OK;
  size_t *cnt = NULL, *taken = NULL, pos = 0;
  DT_ALLOC_GOTO(cnt, (size_t)N * C, "split");
  DT_ALLOC_GOTO(taken, C + 1, "split");
  DT_TRY_GOTO(dirichlet_counts(e, rng, cstart, C, N, cnt));
  for (int i = 0; i < N; i++) {
    out->start[i] = pos;
    for (int c = 0; c < C; c++) {
      size_t n = cnt[(size_t)i * C + c];
      memcpy(out->idx + pos, cls + cstart[c] + taken[c], n * sizeof(uint32_t));
      taken[c] += n;
      pos += n;
    }
  }
  out->start[N] = pos;
cleanup:
  dt_free(cnt);
  dt_free(taken);
  return st;
}

dt_status dt_split_make(const dt_samples *train, const dt_experiment_config *e, dt_split *out) {
  dt_status st = DT_OK;
  const int N = e->graph.num_nodes, C = train->num_classes;
  uint32_t *cls = NULL;
  size_t cstart[257];
  memset(out, 0, sizeof *out);
  out->num_nodes = N;
  DT_CHECK(C <= 256, DT_ERR_INTERNAL, "too many classes");
  DT_CHECK_KEY((size_t)N <= train->count, DT_ERR_CONFIG, "experiment.graph.num_nodes",
               "experiment.graph.num_nodes: %d nodes but only %zu training samples; every node needs one", N, train->count);
  DT_ALLOC_GOTO(out->start, N + 1, "split");
  DT_ALLOC_GOTO(out->idx, train->count, "split");
  dt_rng rng;
  dt_rng_init(&rng, e->seed, DT_RNG_SPLIT, 0);
  if (e->data_split_type == DT_SPLIT_RANDOM) {
    split_random(train, &rng, N, out);
  } else {
    DT_TRY_GOTO(by_class(train, &rng, &cls, cstart));
    if (e->data_split_type == DT_SPLIT_HETERO) split_hetero(cls, cstart, C, N, out);
    else DT_TRY_GOTO(split_dirichlet(e, &rng, cls, cstart, C, N, out));
  }
  for (int i = 0; i < N; i++)
    DT_CHECK_KEY_GOTO(out->start[i + 1] > out->start[i], DT_ERR_CONFIG, "experiment.data_split_type",
                      "experiment.data_split_type: node %d receives no training sample with %d nodes; use fewer nodes or "
                      "another split", i, N);
cleanup:
  dt_free(cls);
  if (st != DT_OK) dt_split_free(out);
  return st;
}
