/* A model's initial weights from a file (dt_model_init_from_file, dt/nn.h): the file's tensors,
 * named as the model's manifest names them, matched one for one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/nn.h"
#include "dt/npz.h"

#define MAX_INIT_BYTES ((size_t)1 << 31)

/* A models file (.npy of rows, parameters then buffers) as named arrays: row `row` cut by the
 * manifest beside it (X.npy -> X.tsv). */
static dt_status read_models_file(const char *path, int row, const char *key, dt_arrays *out) {
  dt_arrays rows;
  char tsv[4200];
  FILE *f = NULL;
  dt_status st = DT_OK;
  memset(out, 0, sizeof *out);
  const size_t len = strlen(path);
  DT_CHECK_KEY(len > 4 && len < sizeof tsv, DT_ERR_CONFIG, key, "%s: %s: a path too long", key, path);
  snprintf(tsv, sizeof tsv, "%.*s.tsv", (int)(len - 4), path);
  DT_TRY(dt_npz_read(path, MAX_INIT_BYTES, &rows));
  const dt_array *a = &rows.a[0];
  memcpy(out->sha256, rows.sha256, sizeof out->sha256);
  DT_CHECK_KEY_GOTO(a->rank == 2 || a->rank == 1, DT_ERR_CONFIG, key,
                    "%s: %s: expected a models file (one row per node, as save_models writes), found %d dimensions", key, path, a->rank);
  const size_t nrows = a->rank == 2 ? (size_t)a->shape[0] : 1, width = (size_t)a->shape[a->rank - 1];
  DT_CHECK_KEY_GOTO((size_t)row < nrows, DT_ERR_CONFIG, "experiment.model.init_row", "experiment.model.init_row: %d, but %s has %zu row%s",
                    row, path, nrows, nrows == 1 ? "" : "s");
  f = fopen(tsv, "r");
  DT_CHECK_KEY_GOTO(f != NULL, DT_ERR_CONFIG, key, "%s: %s: a .npy needs its manifest %s beside it (save_models writes both)", key,
                    path, tsv);
  char line[1024];
  DT_CHECK_KEY_GOTO(fgets(line, sizeof line, f) != NULL && strncmp(line, "name\trole\toffset\tshape", 22) == 0, DT_ERR_CONFIG, key,
                    "%s: %s: not a models manifest (expected the header name, role, offset, shape)", key, tsv);
  DT_ALLOC_GOTO(out->a, DT_NPZ_MAX_ARRAYS, "init tensors");
  for (int ln = 2; fgets(line, sizeof line, f) != NULL; ln++) {
    char name[256], role[16], shape[128] = "";
    long long off = 0;
    const int got = sscanf(line, "%255[^\t]\t%15[^\t]\t%lld\t%127s", name, role, &off, shape);
    DT_CHECK_KEY_GOTO(got >= 3, DT_ERR_CONFIG, key, "%s: %s, line %d: expected name, role, offset and shape", key, tsv, ln);
    if (off < 0) continue; /* num_batches_tracked: not stored */
    DT_CHECK_KEY_GOTO(out->n < DT_NPZ_MAX_ARRAYS, DT_ERR_CONFIG, key, "%s: %s: more than %d tensors", key, tsv, DT_NPZ_MAX_ARRAYS);
    dt_array *t = &out->a[out->n];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = 'f';
    t->count = 1;
    for (char *p = shape; *p != '\0' && t->rank < DT_NPY_MAX_RANK;) {
      char *end = NULL;
      const long long d = strtoll(p, &end, 10);
      DT_CHECK_KEY_GOTO(end != p && d > 0 && d < (1LL << 31), DT_ERR_CONFIG, key, "%s: %s, line %d: shape '%s'", key, tsv, ln, shape);
      t->shape[t->rank++] = d;
      t->count *= (size_t)d;
      p = *end == 'x' ? end + 1 : end;
    }
    DT_CHECK_KEY_GOTO((size_t)off <= width && t->count <= width - (size_t)off, DT_ERR_CONFIG, key,
                      "%s: %s, line %d: %s lies past the end of a row of %s (%zu values)", key, tsv, ln, name, path, width);
    DT_ALLOC_GOTO(t->v, t->count + 1, "init tensor");
    memcpy(t->v, a->v + (size_t)row * width + (size_t)off, sizeof(double) * t->count);
    out->n++;
  }
cleanup:
  if (f != NULL) fclose(f);
  dt_arrays_free(&rows);
  if (st != DT_OK) dt_arrays_free(out);
  return st;
}

static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

dt_status dt_model_init_from_file(const dt_model *m, const char *path, int row, const char *key, float *params, float *buffers,
                                  char sha256[65]) {
  dt_arrays a;
  dt_status st = DT_OK;
  if (ends_with(path, ".npy")) {
    st = read_models_file(path, row, key, &a);
  } else {
    st = dt_npz_read(path, MAX_INIT_BYTES, &a);
    if (st == DT_OK && a.n == 1 && a.a[0].name[0] == '\0') {
      dt_arrays_free(&a);
      st = DT_ERROR(DT_ERR_CONFIG, "%s: a lone array; expected named tensors (.npz) or a models file ending in .npy", path);
    }
  }
  if (st != DT_OK) {
    char why[1024];
    snprintf(why, sizeof why, "%s", dt_error_message());
    return DT_ERROR_KEY(DT_ERR_CONFIG, key, "%s: %s", key, why);
  }
  memcpy(sha256, a.sha256, 65);
  unsigned char *used = NULL;
  DT_ALLOC_GOTO(used, (size_t)a.n + 1, "init tensors");
  for (int l = 0; l < dt_model_num_layers(m); l++) {
    const dt_layer_info *li = dt_model_layer(m, l);
    for (int t = 0; t < li->ntensors; t++) {
      const dt_tensor_info *ti = &li->tensors[t];
      char name[300], want[96] = "", have[96];
      snprintf(name, sizeof name, "%s%s%s", li->name, li->name[0] ? "." : "", ti->suffix);
      for (int d = 0; d < ti->rank; d++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", d ? "x" : "", ti->dims[d]);
      const dt_array *x = dt_arrays_find(&a, name);
      if (x == NULL) { /* a common slip: a prefix from the module that held the model ("seq.", "module.") */
        for (int k = 0; k < a.n && x == NULL; k++) {
          const size_t n = strlen(a.a[k].name), w = strlen(name);
          if (n > w + 1 && a.a[k].name[n - w - 1] == '.' && strcmp(a.a[k].name + n - w, name) == 0)
            DT_CHECK_KEY_GOTO(0, DT_ERR_CONFIG, key, "%s: %s has no tensor '%s' but has '%s': drop the prefix '%.*s' from its names", key,
                              path, name, a.a[k].name, (int)(n - w), a.a[k].name);
        }
        DT_CHECK_KEY_GOTO(0, DT_ERR_CONFIG, key, "%s: %s has no tensor '%s' (%s %s); the model's names are in `dtrun check`'s manifest",
                          key, path, name, ti->role == DT_TENSOR_PARAM ? "parameter" : "buffer", want);
      }
      used[x - a.a] = 1;
      dt_array_shape_text(x, have, sizeof have);
      DT_CHECK_KEY_GOTO(strcmp(have, want) == 0, DT_ERR_CONFIG, key, "%s: %s: tensor '%s' has shape %s; the model's is %s", key, path, name,
                        have, want);
      DT_CHECK_KEY_GOTO(x->kind == 'f', DT_ERR_CONFIG, key, "%s: %s: tensor '%s' holds integers; expected floats", key, path, name);
      float *dst = ti->role == DT_TENSOR_PARAM ? params + ti->off : buffers + (ti->off);
      for (size_t i = 0; i < ti->n; i++) {
        DT_CHECK_KEY_GOTO(isfinite(x->v[i]) && fabs(x->v[i]) <= 3.4028234663852886e38, DT_ERR_CONFIG, key,
                          "%s: %s: tensor '%s', value %zu is %g; expected a finite float32", key, path, name, i, x->v[i]);
        dst[i] = (float)x->v[i];
      }
    }
  }
  for (int k = 0; k < a.n; k++)
    DT_CHECK_KEY_GOTO(used[k] || ends_with(a.a[k].name, "num_batches_tracked"), DT_ERR_CONFIG, key,
                      "%s: %s: tensor '%s' is not one of the model's (a different architecture, or a name to fix)", key, path,
                      a.a[k].name);
cleanup:
  dt_free(used);
  dt_arrays_free(&a);
  return st;
}
