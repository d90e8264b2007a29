/* The state a run keeps for checkpoints (dt_run_keep_* in dt/optimizer.h): the items optimizers
 * register, and their node and shared records as bytes (dt_run_save_*) and back (dt_run_load_*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/optimizer.h"
#include "run_impl.h"

enum { ITEM_SLAB, ITEM_EDGE_SLAB, ITEM_NODES, ITEM_SHARED, ITEM_SHARED_VEC, ITEM_NAME_MAX = 32 };

struct dt_run_item {
  char name[ITEM_NAME_MAX];
  int kind;
  dt_slab *slab;
  void *base;
  size_t elem; /* bytes per node, or all bytes (shared) */
};

static const char node_magic[8] = {'D', 'T', 'N', 'O', 'D', 'E', '0', '1'};
static const char shared_magic[8] = {'D', 'T', 'S', 'H', 'A', 'R', '0', '1'};
static const uint32_t byte_order = 0x01020304u;

static dt_status keep(dt_optimizer_run *run, const char *name, int kind, dt_slab *slab, void *base, size_t elem) {
  DT_CHECK(strlen(name) < ITEM_NAME_MAX, DT_ERR_INTERNAL, "state item name '%s' is longer than %d bytes", name, ITEM_NAME_MAX - 1);
  for (int i = 0; i < run->num_items; i++)
    DT_CHECK(strcmp(run->items[i].name, name) != 0, DT_ERR_INTERNAL, "state item '%s' is registered twice", name);
  struct dt_run_item *grown = realloc(run->items, sizeof *grown * (size_t)(run->num_items + 1));
  DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory registering state '%s'", name);
  run->items = grown;
  struct dt_run_item *it = &run->items[run->num_items++];
  memset(it, 0, sizeof *it);
  snprintf(it->name, sizeof it->name, "%s", name);
  it->kind = kind;
  it->slab = slab;
  it->base = base;
  it->elem = elem;
  return DT_OK;
}

dt_status dt_run_keep_slab(dt_optimizer_run *run, const char *name, dt_slab *s) { return keep(run, name, ITEM_SLAB, s, NULL, 0); }
dt_status dt_run_keep_edge_slab(dt_optimizer_run *run, const char *name, dt_slab *s) {
  return keep(run, name, ITEM_EDGE_SLAB, s, NULL, 0);
}
dt_status dt_run_keep_nodes(dt_optimizer_run *run, const char *name, void *base, size_t elem) {
  return keep(run, name, ITEM_NODES, NULL, base, elem);
}
dt_status dt_run_keep_shared(dt_optimizer_run *run, const char *name, void *data, size_t bytes) {
  return keep(run, name, ITEM_SHARED, NULL, data, bytes);
}
dt_status dt_run_keep_shared_vec(dt_optimizer_run *run, const char *name, float *vec) {
  return keep(run, name, ITEM_SHARED_VEC, NULL, vec, sizeof(float) * run->dim);
}

dt_status dt_run_server_create(dt_optimizer_run *run, const char *name, const dt_local_opt_spec *spec, float **model,
                               dt_local_opt **opt) {
  char key[64];
  DT_TRY(dt_local_opt_create(run->be, spec, 1, run->dim, opt));
  DT_TRY(dt_be_alloc(run->be, sizeof(float) * run->dim, (void **)model));
  DT_TRY(dt_run_mean_uncounted(run, &run->theta, *model)); /* the common start: every rank knows it */
  DT_TRY(dt_run_keep_shared_vec(run, name, *model));
  dt_slab *m, *v;
  long *steps;
  dt_local_opt_state(*opt, &m, &v, &steps);
  snprintf(key, sizeof key, "%s.steps", name);
  DT_TRY(dt_run_keep_shared(run, key, steps, sizeof(long)));
  snprintf(key, sizeof key, "%s.m", name);
  if (m->data != NULL) DT_TRY(dt_run_keep_shared_vec(run, key, m->data));
  snprintf(key, sizeof key, "%s.v", name);
  if (v->data != NULL) DT_TRY(dt_run_keep_shared_vec(run, key, v->data));
  return DT_OK;
}

static int is_shared(const struct dt_run_item *it) { return it->kind == ITEM_SHARED || it->kind == ITEM_SHARED_VEC; }

/* The rows of local node l in a kept slab: its own row, or (edge slab) one per neighbour. */
static void item_rows(const dt_optimizer_run *run, const struct dt_run_item *it, int l, int *row, int *rows) {
  const dt_graph *g = run->graph;
  *row = l;
  *rows = 1;
  if (it->kind != ITEM_EDGE_SLAB) return;
  *row = g->nbr_start[run->first + l] - g->nbr_start[run->first];
  *rows = dt_graph_degree(g, run->first + l);
}

/* Bytes of node l's record of a per-node item. */
static size_t item_bytes(const dt_optimizer_run *run, const struct dt_run_item *it, int l) {
  int row, rows;
  if (it->kind == ITEM_NODES) return it->elem;
  item_rows(run, it, l, &row, &rows);
  return sizeof(float) * it->slab->dim * (size_t)rows; /* a slab's rows may be longer than dim (a payload with its weight) */
}

/* The blob buffer with room for n more bytes at *used. */
static dt_status blob_room(dt_optimizer_run *run, size_t used, size_t n) {
  if (used + n <= run->blob_cap) return DT_OK;
  size_t cap = run->blob_cap ? run->blob_cap : 4096;
  while (cap < used + n) cap *= 2;
  unsigned char *grown = realloc(run->blob, cap);
  DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory for a %zu-byte checkpoint record", cap);
  run->blob = grown;
  run->blob_cap = cap;
  return DT_OK;
}

static dt_status put(dt_optimizer_run *run, size_t *used, const void *data, size_t n) {
  DT_TRY(blob_room(run, *used, n));
  if (n > 0) memcpy(run->blob + *used, data, n);
  *used += n;
  return DT_OK;
}

/* A record: name length (1 byte), name, size (8 bytes), then the bytes (left for the caller to
 * fill at the returned offset). */
static dt_status put_record(dt_optimizer_run *run, size_t *used, const char *name, uint64_t size, size_t *at) {
  const uint8_t len = (uint8_t)strlen(name);
  DT_TRY(put(run, used, &len, 1));
  DT_TRY(put(run, used, name, len));
  DT_TRY(put(run, used, &size, 8));
  DT_TRY(blob_room(run, *used, (size_t)size));
  *at = *used;
  *used += (size_t)size;
  return DT_OK;
}

static dt_status put_header(dt_optimizer_run *run, size_t *used, const char magic[8], uint32_t id, uint32_t records) {
  const uint64_t dim = run->dim;
  DT_TRY(put(run, used, magic, 8));
  DT_TRY(put(run, used, &byte_order, 4));
  DT_TRY(put(run, used, &id, 4));
  DT_TRY(put(run, used, &dim, 8));
  return put(run, used, &records, 4);
}

static uint32_t count_items(const dt_optimizer_run *run, int shared) {
  uint32_t n = 0;
  for (int i = 0; i < run->num_items; i++) n += is_shared(&run->items[i]) == shared;
  return n;
}

dt_status dt_run_save_node(dt_optimizer_run *run, int l, const void **data, size_t *size) {
  size_t used = 0, at;
  DT_TRY(put_header(run, &used, node_magic, (uint32_t)(run->first + l), count_items(run, 0) + 1));
  for (int i = 0; i < run->num_items; i++) {
    const struct dt_run_item *it = &run->items[i];
    if (is_shared(it)) continue;
    const size_t n = item_bytes(run, it, l);
    DT_TRY(put_record(run, &used, it->name, n, &at));
    if (it->kind == ITEM_NODES) {
      memcpy(run->blob + at, (const unsigned char *)it->base + (size_t)l * it->elem, n);
      continue;
    }
    int row, rows;
    item_rows(run, it, l, &row, &rows);
    for (int t = 0; t < rows; t++)
      DT_TRY(dt_slab_download_node(run->be, it->slab, row + t, (float *)(void *)(run->blob + at) + (size_t)t * it->slab->dim));
  }
  DT_TRY(put_record(run, &used, "task", dt_task_node_state_size(run->task, l), &at));
  DT_TRY(dt_task_node_state_save(run->task, l, run->blob + at));
  *data = run->blob;
  *size = used;
  return DT_OK;
}

size_t dt_run_node_record_size(const dt_optimizer_run *run, int node) {
  size_t n = 8 + 4 + 4 + 8 + 4; /* put_header */
  for (int i = 0; i < run->num_items; i++) {
    const struct dt_run_item *it = &run->items[i];
    if (is_shared(it)) continue;
    const size_t rows = it->kind == ITEM_EDGE_SLAB ? (size_t)dt_graph_degree(run->graph, node) : 1;
    n += 1 + strlen(it->name) + 8 + (it->kind == ITEM_NODES ? it->elem : sizeof(float) * it->slab->dim * rows);
  }
  return n + 1 + strlen("task") + 8 + dt_task_node_state_size(run->task, node - run->first);
}

dt_status dt_run_save_shared(dt_optimizer_run *run, const void **data, size_t *size) {
  size_t used = 0, at;
  DT_TRY(put_header(run, &used, shared_magic, 0, count_items(run, 1)));
  for (int i = 0; i < run->num_items; i++) {
    const struct dt_run_item *it = &run->items[i];
    if (!is_shared(it)) continue;
    DT_TRY(put_record(run, &used, it->name, it->elem, &at));
    if (it->kind == ITEM_SHARED_VEC) DT_TRY(dt_be_download(run->be, run->blob + at, it->base, it->elem));
    else memcpy(run->blob + at, it->base, it->elem);
  }
  *data = run->blob;
  *size = used;
  return DT_OK;
}

/* A reader over a record stream, with messages naming `what`. */
typedef struct reader {
  const unsigned char *p, *end;
  const char *what;
} reader;

static dt_status get(reader *r, void *out, size_t n) {
  DT_CHECK((size_t)(r->end - r->p) >= n, DT_ERR_DATA, "%s: truncated checkpoint record", r->what);
  memcpy(out, r->p, n);
  r->p += n;
  return DT_OK;
}

static dt_status get_header(const dt_optimizer_run *run, reader *r, const char magic[8], uint32_t id, uint32_t records) {
  char m[8];
  uint32_t order = 0, got_id = 0, got_records = 0;
  uint64_t dim = 0;
  DT_TRY(get(r, m, 8));
  DT_CHECK(memcmp(m, magic, 8) == 0, DT_ERR_DATA, "%s: not a dtrun checkpoint of this kind (wrong magic)", r->what);
  DT_TRY(get(r, &order, 4));
  DT_CHECK(order == byte_order, DT_ERR_DATA, "%s: written on a machine of the other byte order", r->what);
  DT_TRY(get(r, &got_id, 4));
  DT_CHECK(got_id == id, DT_ERR_DATA, "%s: holds node %u, expected node %u", r->what, got_id, id);
  DT_TRY(get(r, &dim, 8));
  DT_CHECK(dim == run->dim, DT_ERR_DATA, "%s: models of %llu parameters, this run's have %zu (another config?)", r->what,
           (unsigned long long)dim, run->dim);
  DT_TRY(get(r, &got_records, 4));
  DT_CHECK(got_records == records, DT_ERR_DATA, "%s: %u state items, this optimizer keeps %u (another algorithm?)", r->what,
           got_records, records);
  return DT_OK;
}

/* The next record, which must be `name` of `size` bytes; *data points at its bytes. */
static dt_status get_record(reader *r, const char *name, size_t size, const unsigned char **data) {
  uint8_t len = 0;
  char got[256];
  uint64_t n = 0;
  DT_TRY(get(r, &len, 1));
  DT_TRY(get(r, got, len));
  got[len] = '\0';
  DT_CHECK(strcmp(got, name) == 0, DT_ERR_DATA, "%s: found state item '%s' where '%s' was expected (another algorithm?)", r->what, got,
           name);
  DT_TRY(get(r, &n, 8));
  DT_CHECK(n == size, DT_ERR_DATA, "%s: state item '%s' has %llu bytes, expected %zu", r->what, name, (unsigned long long)n, size);
  DT_CHECK((size_t)(r->end - r->p) >= size, DT_ERR_DATA, "%s: truncated in state item '%s'", r->what, name);
  *data = r->p;
  r->p += size;
  return DT_OK;
}

dt_status dt_run_load_node(dt_optimizer_run *run, int l, const void *data, size_t size, const char *what) {
  reader r = {.p = data, .end = (const unsigned char *)data + size, .what = what};
  const unsigned char *bytes;
  DT_TRY(get_header(run, &r, node_magic, (uint32_t)(run->first + l), count_items(run, 0) + 1));
  for (int i = 0; i < run->num_items; i++) {
    const struct dt_run_item *it = &run->items[i];
    if (is_shared(it)) continue;
    const size_t n = item_bytes(run, it, l);
    DT_TRY(get_record(&r, it->name, n, &bytes));
    if (it->kind == ITEM_NODES) {
      memcpy((unsigned char *)it->base + (size_t)l * it->elem, bytes, n);
      continue;
    }
    /* the record may sit unaligned in the file buffer: stage it */
    DT_TRY(blob_room(run, 0, n));
    memcpy(run->blob, bytes, n);
    int row, rows;
    item_rows(run, it, l, &row, &rows);
    for (int t = 0; t < rows; t++)
      DT_TRY(dt_slab_upload_node(run->be, it->slab, row + t, (const float *)(void *)run->blob + (size_t)t * it->slab->dim));
  }
  DT_TRY(get_record(&r, "task", dt_task_node_state_size(run->task, l), &bytes));
  DT_TRY(dt_task_node_state_load(run->task, l, bytes, dt_task_node_state_size(run->task, l)));
  DT_CHECK(r.p == r.end, DT_ERR_DATA, "%s: %zu unexpected bytes at the end", what, (size_t)(r.end - r.p));
  return DT_OK;
}

dt_status dt_run_load_shared(dt_optimizer_run *run, const void *data, size_t size, const char *what) {
  reader r = {.p = data, .end = (const unsigned char *)data + size, .what = what};
  const unsigned char *bytes;
  DT_TRY(get_header(run, &r, shared_magic, 0, count_items(run, 1)));
  for (int i = 0; i < run->num_items; i++) {
    const struct dt_run_item *it = &run->items[i];
    if (!is_shared(it)) continue;
    DT_TRY(get_record(&r, it->name, it->elem, &bytes));
    if (it->kind == ITEM_SHARED_VEC) DT_TRY(dt_be_upload(run->be, it->base, bytes, it->elem));
    else memcpy(it->base, bytes, it->elem);
  }
  DT_CHECK(r.p == r.end, DT_ERR_DATA, "%s: %zu unexpected bytes at the end", what, (size_t)(r.end - r.p));
  return DT_OK;
}
