/* Splits: random (any N, sizes within one), hetero (N <= classes: contiguous class groups, no
 * class dropped; N > classes: classes shared evenly), dirichlet (minimum per node), all
 * deterministic in the seed and covering every sample exactly once (random, hetero). */
#include <stdlib.h>

#include "check.h"
#include "dt/problem.h"

enum { M = 1000, C = 10 };
static uint8_t labels[M];

static dt_split make(int n, int type, uint64_t seed) {
  dt_samples s = {.count = M, .dim = 1, .labels = labels, .num_classes = C};
  dt_experiment_config e;
  memset(&e, 0, sizeof e);
  e.graph.num_nodes = n;
  e.data_split_type = type;
  e.seed = seed;
  e.dirichlet_alpha = 0.3;
  e.min_per_node = 20;
  dt_split sp;
  CHECK_OK(dt_split_make(&s, &e, &sp));
  return sp;
}

static int classes_of(const dt_split *sp, int node, int *hist) {
  memset(hist, 0, sizeof(int) * C);
  int k = 0;
  for (size_t s = sp->start[node]; s < sp->start[node + 1]; s++) hist[labels[sp->idx[s]]]++;
  for (int c = 0; c < C; c++) k += hist[c] > 0;
  return k;
}

static void covers_all(const dt_split *sp, const char *what) {
  char *seen = calloc(M, 1);
  int dup = 0;
  for (size_t s = 0; s < sp->start[sp->num_nodes]; s++) dup += seen[sp->idx[s]]++ > 0;
  size_t total = sp->start[sp->num_nodes];
  CHECK(dup == 0 && total == M, "%s: %zu samples assigned, %d duplicates", what, total, dup);
  free(seen);
}

int main(void) {
  for (int i = 0; i < M; i++) labels[i] = (uint8_t)((i * 7) % C); /* 100 per class */
  for (int n = 1; n <= 13; n += 3) {
    dt_split sp = make(n, DT_SPLIT_RANDOM, 1);
    covers_all(&sp, "random");
    for (int i = 0; i < n; i++) CHECK(dt_split_size(&sp, i) == (size_t)M / n || dt_split_size(&sp, i) == (size_t)M / n + 1, "random sizes");
    dt_split again = make(n, DT_SPLIT_RANDOM, 1), other = make(n, DT_SPLIT_RANDOM, 2);
    CHECK(memcmp(sp.idx, again.idx, sizeof(uint32_t) * M) == 0, "random split not deterministic");
    CHECK(n == 1 || memcmp(sp.idx, other.idx, sizeof(uint32_t) * M) != 0, "seed ignored");
    dt_split_free(&sp), dt_split_free(&again), dt_split_free(&other);
  }
  int hist[C];
  /* N = 3: classes {0,1,2}, {3,4,5}, {6,7,8,9}: every class used, contiguous groups */
  dt_split sp = make(3, DT_SPLIT_HETERO, 1);
  covers_all(&sp, "hetero N=3");
  CHECK(classes_of(&sp, 0, hist) == 3 && hist[0] == 100 && hist[2] == 100, "hetero node 0");
  CHECK(classes_of(&sp, 2, hist) == 4 && hist[9] == 100, "hetero node 2 keeps class 9");
  dt_split_free(&sp);
  sp = make(5, DT_SPLIT_HETERO, 1);
  for (int i = 0; i < 5; i++) CHECK(classes_of(&sp, i, hist) == 2 && hist[2 * i] == 100 && hist[2 * i + 1] == 100, "hetero N=5 node %d", i);
  dt_split_free(&sp);
  /* N = 20: every class on two nodes, 50 samples each */
  sp = make(20, DT_SPLIT_HETERO, 1);
  covers_all(&sp, "hetero N=20");
  for (int i = 0; i < 20; i++) CHECK(classes_of(&sp, i, hist) == 1 && hist[i / 2] == 50, "hetero N=20 node %d", i);
  dt_split_free(&sp);
  /* dirichlet: every node at least min_per_node, skewed class mixes */
  sp = make(6, DT_SPLIT_DIRICHLET, 4);
  covers_all(&sp, "dirichlet");
  int skewed = 0;
  for (int i = 0; i < 6; i++) {
    CHECK(dt_split_size(&sp, i) >= 20, "dirichlet node %d has %zu", i, dt_split_size(&sp, i));
    classes_of(&sp, i, hist);
    int mx = 0;
    for (int c = 0; c < C; c++) mx = hist[c] > mx ? hist[c] : mx;
    skewed += mx > 0.3 * (double)dt_split_size(&sp, i);
  }
  CHECK(skewed >= 3, "alpha 0.3 should skew most nodes (%d)", skewed);
  dt_split_free(&sp);
  /* more nodes than samples: an error, not a crash */
  dt_samples tiny = {.count = 3, .dim = 1, .labels = labels, .num_classes = C};
  dt_experiment_config e;
  memset(&e, 0, sizeof e);
  e.graph.num_nodes = 5;
  CHECK_FAILS(dt_split_make(&tiny, &e, &sp), DT_ERR_CONFIG, "5 nodes but only 3 training samples");
  return check_report("test_split");
}
