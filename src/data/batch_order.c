/* experiment.batch_order: every node's minibatches from a .npz file (dt/data.h), checked against
 * the split before anything runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/data.h"
#include "dt/npz.h"

void dt_batch_order_free(dt_batch_order *o) {
  if (o == NULL) return;
  for (int i = 0; i < o->num_nodes && o->start != NULL; i++) {
    dt_free(o->start[i]);
    dt_free(o->idx[i]);
  }
  dt_free(o->steps);
  dt_free(o->start);
  dt_free(o->idx);
  memset(o, 0, sizeof *o);
}

/* Node i's array into o: rows of indices of the node's own samples (owner[index] == i), each
 * followed only by -1s. */
static dt_status take_node(const char *path, const char *key, const dt_array *a, int i, const int32_t *owner, size_t train_count,
                           dt_batch_order *o) {
  char shape[96];
  dt_array_shape_text(a, shape, sizeof shape);
  DT_CHECK_KEY(a->kind == 'i' || a->kind == 'u', DT_ERR_CONFIG, key, "%s: %s: node_%d holds %s values; expected integers", key, path, i,
               a->kind == 'f' ? "float" : "bool");
  DT_CHECK_KEY(a->rank == 2 && a->shape[0] >= 1 && a->shape[1] >= 1, DT_ERR_CONFIG, key,
               "%s: %s: node_%d has shape %s; expected steps x batch (2 dimensions, neither 0)", key, path, i, shape);
  const size_t rows = (size_t)a->shape[0], width = (size_t)a->shape[1];
  DT_CHECK_KEY(width <= (1u << 20), DT_ERR_CONFIG, key, "%s: %s: node_%d: minibatches of %zu samples; at most %u", key, path, i, width,
               1u << 20);
  DT_ALLOC(o->start[i], rows + 1, "minibatch order");
  DT_ALLOC(o->idx[i], a->count + 1, "minibatch order");
  size_t n = 0;
  for (size_t s = 0; s < rows; s++) {
    const double *r = a->v + s * width;
    size_t b = 0;
    while (b < width && r[b] != -1) b++;
    DT_CHECK_KEY(b > 0, DT_ERR_CONFIG, key, "%s: %s: node_%d, step %zu: no sample (the row is all -1)", key, path, i, s);
    for (size_t k = b; k < width; k++)
      DT_CHECK_KEY(r[k] == -1, DT_ERR_CONFIG, key, "%s: %s: node_%d, step %zu, column %zu: %.17g after a -1 (padding ends a row)",
                   key, path, i, s, k, r[k]);
    for (size_t k = 0; k < b; k++) {
      DT_CHECK_KEY(r[k] >= 0 && r[k] < (double)train_count, DT_ERR_CONFIG, key,
                   "%s: %s: node_%d, step %zu: sample %.17g is not a training sample (0 to %zu)", key, path, i, s, r[k],
                   train_count - 1);
      const size_t x = (size_t)r[k];
      DT_CHECK_KEY(owner[x] >= 0, DT_ERR_CONFIG, key, "%s: %s: node_%d, step %zu: sample %zu belongs to no node in this split", key,
                   path, i, s, x);
      DT_CHECK_KEY(owner[x] == i, DT_ERR_CONFIG, key, "%s: %s: node_%d, step %zu: sample %zu belongs to node %d in this split", key,
                   path, i, s, x, owner[x]);
      o->idx[i][n++] = (uint32_t)x;
    }
    o->start[i][s] = n - b;
    o->start[i][s + 1] = n;
    if ((int)b > o->widest) o->widest = (int)b;
  }
  o->steps[i] = rows;
  return DT_OK;
}

dt_status dt_batch_order_read(const char *path, const dt_split *split, size_t train_count, const char *key, dt_batch_order *out) {
  dt_arrays a;
  int32_t *owner = NULL;
  dt_status st = DT_OK;
  memset(out, 0, sizeof *out);
  st = dt_npz_read(path, (size_t)1 << 32, &a);
  if (st != DT_OK) {
    char why[1024];
    snprintf(why, sizeof why, "%s", dt_error_message());
    return DT_ERROR_KEY(DT_ERR_CONFIG, key, "%s: %s", key, why);
  }
  const int n = split->num_nodes;
  DT_ALLOC_GOTO(owner, train_count + 1, "minibatch order");
  for (size_t x = 0; x < train_count; x++) owner[x] = -1;
  for (int i = 0; i < n; i++)
    for (size_t k = split->start[i]; k < split->start[i + 1]; k++) owner[split->idx[k]] = i;
  for (int k = 0; k < a.n; k++) {
    int i = -1, used = 0;
    DT_CHECK_KEY_GOTO(sscanf(a.a[k].name, "node_%d%n", &i, &used) == 1 && a.a[k].name[used] == '\0' && i >= 0 && i < n, DT_ERR_CONFIG,
                      key, "%s: %s: an array named '%s'; expected node_0 to node_%d, one per node of this graph", key, path, a.a[k].name,
                      n - 1);
  }
  out->num_nodes = n;
  DT_ALLOC_GOTO(out->steps, n, "minibatch order");
  DT_ALLOC_GOTO(out->start, n, "minibatch order");
  DT_ALLOC_GOTO(out->idx, n, "minibatch order");
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "node_%d", i);
    const dt_array *arr = dt_arrays_find(&a, name);
    DT_CHECK_KEY_GOTO(arr != NULL, DT_ERR_CONFIG, key, "%s: %s has no array node_%d (one per node: node_0 to node_%d)", key, path,
                      i, n - 1);
    DT_TRY_GOTO(take_node(path, key, arr, i, owner, train_count, out));
  }
  memcpy(out->sha256, a.sha256, sizeof out->sha256);
cleanup:
  dt_free(owner);
  dt_arrays_free(&a);
  if (st != DT_OK) dt_batch_order_free(out);
  return st;
}
