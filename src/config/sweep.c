/* Sweep axes from the experiment file's `sweep:` key and from --sweep (see dt/sweep.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"
#include "dt/sweep.h"

DT_MUST_USE static dt_status sweep_error(const dt_sweep *sw, const dt_ynode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static dt_status sweep_error(const dt_sweep *sw, const dt_ynode *n, const char *fmt, ...) {
  char msg[1024], where[DT_PATH_MAX + 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dt_ynode_where(n, sw->source, where, sizeof where);
  return dt_ynode_locate(dt_error_set_key(DT_ERROR(DT_ERR_CONFIG, "%s: sweep: %s", where, msg), "sweep"), n, sw->source);
}

static char *dup_or_null(const char *s) { return s != NULL ? strdup(s) : NULL; }

/* One override of a value: "path=text", with where it came from. */
static dt_status add_set(dt_sweep_value *v, const char *path, const char *text, const char *origin) {
  DT_CHECK(v->num_sets < DT_SWEEP_MAX_SETS, DT_ERR_CONFIG, "%s: a sweep value may set at most %d keys", origin, DT_SWEEP_MAX_SETS);
  char *set = NULL;
  DT_CHECK(asprintf(&set, "%s=%s", path, text) >= 0, DT_ERR_MEMORY, "out of memory");
  v->sets[v->num_sets] = set;
  v->origins[v->num_sets] = dup_or_null(origin);
  v->num_sets++;
  DT_CHECK(v->origins[v->num_sets - 1] != NULL, DT_ERR_MEMORY, "out of memory");
  return DT_OK;
}

static int is_path(const char *key) { return strchr(key, '.') != NULL; }

#define RANGE_FORM "range(START, STOP) or range(START, STOP, STEP) of integers (STEP not 0), as Python's"
#define RANGE_EMPTY "has no value: STOP is not included, and a falling range needs a negative STEP"

/* Whether text is range(...): 0 not at all; 1 a valid range of *n values (Python's semantics:
 * START, START + STEP, ... before STOP), first in *start, step in *step; -1 malformed; -2 a range
 * with no value. */
static int parse_range(const char *text, long *start, long *step, int *n) {
  while (*text == ' ') text++;
  if (strncmp(text, "range(", 6) != 0) return 0;
  long v[3] = {0, 0, 1};
  int k = 0;
  const char *c = text + 6;
  for (;;) {
    char *end;
    while (*c == ' ') c++;
    if (k == 3 || !(*c == '-' || *c == '+' || (*c >= '0' && *c <= '9'))) return -1;
    errno = 0;
    v[k++] = strtol(c, &end, 10);
    if (errno != 0 || end == c) return -1;
    c = end;
    while (*c == ' ') c++;
    if (*c == ',') {
      c++;
      continue;
    }
    if (*c != ')') return -1;
    for (c++; *c == ' '; c++) {}
    break;
  }
  if (*c != '\0' || k < 2 || v[2] == 0) return -1;
  const double count = ceil(((double)v[1] - (double)v[0]) / (double)v[2]);
  if (count < 1) return -2;
  *start = v[0], *step = v[2];
  *n = count > DT_SWEEP_MAX_VALUES ? DT_SWEEP_MAX_VALUES + 1 : (int)count;
  return 1;
}

/* Axis ax (its key set): range(...)'s values, each set at `where`. */
static dt_status range_axis(long start, long step, int n, const char *where, dt_sweep_axis *ax) {
  DT_CHECK((ax->values = calloc((size_t)n, sizeof *ax->values)) != NULL, DT_ERR_MEMORY, "out of memory");
  for (int i = 0; i < n; i++) {
    char num[32];
    snprintf(num, sizeof num, "%ld", start + (long)i * step);
    ax->num_values = i + 1;
    DT_CHECK((ax->values[i].label = strdup(num)) != NULL, DT_ERR_MEMORY, "out of memory");
    DT_TRY(add_set(&ax->values[i], ax->key, num, where));
  }
  return DT_OK;
}

/* An axis of the file: `path: [v, ...]` or `name: [{path: v, ..., label: L}, ...]`. */
static dt_status file_axis(dt_sweep *sw, const dt_ynode *key, const dt_ynode *vals, dt_sweep_axis *ax) {
  char where[DT_PATH_MAX + 64];
  long start, step;
  int n, r;
  if (vals->kind == DT_YN_SCALAR && (r = parse_range(vals->text, &start, &step, &n)) != 0) { /* path: range(a, b) */
    if (r == -1) return sweep_error(sw, vals, "%s: expected %s, found '%s'", key->text, RANGE_FORM, vals->text);
    if (r == -2) return sweep_error(sw, vals, "%s: %s " RANGE_EMPTY, key->text, vals->text);
    if (!is_path(key->text)) return sweep_error(sw, key, "%s: a range sweeps a key path (experiment.seed, ...)", key->text);
    if (n > DT_SWEEP_MAX_VALUES) return sweep_error(sw, vals, "%s: %s has more than %d values", key->text, vals->text, DT_SWEEP_MAX_VALUES);
    snprintf(where, sizeof where, "%s:%d:%d (sweep)", sw->source, vals->line, vals->col);
    DT_CHECK((ax->key = strdup(key->text)) != NULL, DT_ERR_MEMORY, "out of memory");
    return range_axis(start, step, n, where, ax);
  }
  if (vals->kind != DT_YN_SEQ || vals->n == 0)
    return sweep_error(sw, vals, "%s: expected a list of values ([a, b, ...]), found %s", key->text,
                       vals->kind == DT_YN_SEQ ? "an empty list" : vals->kind == DT_YN_MAP ? "a mapping" : "a single value");
  if (vals->n > DT_SWEEP_MAX_VALUES) return sweep_error(sw, vals, "%s: %d values; at most %d", key->text, vals->n, DT_SWEEP_MAX_VALUES);
  const int named = vals->items[0]->kind == DT_YN_MAP;
  if (!named && !is_path(key->text))
    return sweep_error(sw, key, "'%s' is neither a key path (experiment.seed, problem_configs.NAME.optimizer_config.lr, ...) nor a "
                                "named axis whose values are mappings of key paths", key->text);
  DT_CHECK((ax->key = strdup(key->text)) != NULL, DT_ERR_MEMORY, "out of memory");
  DT_CHECK((ax->values = calloc((size_t)vals->n, sizeof *ax->values)) != NULL, DT_ERR_MEMORY, "out of memory");
  ax->num_values = vals->n;
  for (int i = 0; i < vals->n; i++) {
    const dt_ynode *it = vals->items[i];
    dt_sweep_value *v = &ax->values[i];
    if ((it->kind == DT_YN_MAP) != named || (!named && it->kind != DT_YN_SCALAR))
      return sweep_error(sw, it, "%s: %s", key->text,
                         named ? "every value of a named axis is a mapping of key paths to values"
                               : "every value of a key path's axis is a single value (a list or mapping is not swept)");
    if (!named) {
      snprintf(where, sizeof where, "%s:%d:%d (sweep)", sw->source, it->line, it->col);
      DT_TRY(add_set(v, key->text, it->text, where));
      DT_CHECK((v->label = strdup(it->text)) != NULL, DT_ERR_MEMORY, "out of memory");
      continue;
    }
    char label[512] = "";
    for (int j = 0; j < it->n; j++) {
      const dt_ynode *k = it->keys[j], *val = it->items[j];
      if (strcmp(k->text, "label") == 0) {
        if (val->kind != DT_YN_SCALAR || val->text[0] == '\0') return sweep_error(sw, val, "%s: label: expected a name", key->text);
        continue;
      }
      if (!is_path(k->text))
        return sweep_error(sw, k, "%s: '%s' is not a key path (experiment.graph.type, ...) or 'label'", key->text, k->text);
      if (val->kind != DT_YN_SCALAR) return sweep_error(sw, val, "%s: %s: expected a single value", key->text, k->text);
      snprintf(where, sizeof where, "%s:%d:%d (sweep %s)", sw->source, val->line, val->col, key->text);
      DT_TRY(add_set(v, k->text, val->text, where));
      snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s", label[0] ? "," : "", val->text);
    }
    if (v->num_sets == 0) return sweep_error(sw, it, "%s: the value sets no key", key->text);
    const dt_ynode *lab = dt_ynode_get(it, "label");
    DT_CHECK((v->label = strdup(lab != NULL ? lab->text : label)) != NULL, DT_ERR_MEMORY, "out of memory");
  }
  for (int i = 0; i < ax->num_values; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(ax->values[i].label, ax->values[j].label) == 0)
        return sweep_error(sw, vals->items[i], "%s: the value '%s' is given twice%s", key->text, ax->values[i].label,
                           named ? " (give each a distinct label:)" : "");
  return DT_OK;
}

/* --sweep KEY=V1,V2,... */
static dt_status cli_axis(const char *arg, dt_sweep_axis *ax) {
  const char *eq = strchr(arg, '=');
  DT_CHECK(eq != NULL && eq != arg && eq[1] != '\0', DT_ERR_USAGE, "--sweep %s: expected key.path=value,value,...", arg);
  DT_CHECK((ax->key = strndup(arg, (size_t)(eq - arg))) != NULL, DT_ERR_MEMORY, "out of memory");
  DT_CHECK(is_path(ax->key), DT_ERR_USAGE, "--sweep %s: '%s' is not a key path (e.g. experiment.seed)", arg, ax->key);
  long start, step;
  int n = 1;
  const int r = parse_range(eq + 1, &start, &step, &n);
  DT_CHECK(r != -1, DT_ERR_USAGE, "--sweep %s: expected %s", arg, RANGE_FORM);
  DT_CHECK(r != -2, DT_ERR_USAGE, "--sweep %s: the range " RANGE_EMPTY, arg);
  DT_CHECK(r == 0 || n <= DT_SWEEP_MAX_VALUES, DT_ERR_USAGE, "--sweep %s: more than %d values", arg, DT_SWEEP_MAX_VALUES);
  char origin[1200];
  snprintf(origin, sizeof origin, "--sweep %.1100s", arg);
  if (r == 1) return range_axis(start, step, n, origin, ax);
  n = 1;
  for (const char *c = eq + 1; *c; c++) n += *c == ',';
  DT_CHECK(n <= DT_SWEEP_MAX_VALUES, DT_ERR_USAGE, "--sweep %s: %d values; at most %d", ax->key, n, DT_SWEEP_MAX_VALUES);
  DT_CHECK((ax->values = calloc((size_t)n, sizeof *ax->values)) != NULL, DT_ERR_MEMORY, "out of memory");
  const char *at = eq + 1;
  for (int i = 0; i < n; i++) {
    const char *end = strchr(at, ',');
    const size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
    char *val = strndup(at, len);
    DT_CHECK(val != NULL, DT_ERR_MEMORY, "out of memory");
    ax->num_values = i + 1;
    ax->values[i].label = val;
    DT_CHECK(len > 0, DT_ERR_USAGE, "--sweep %s: value %d is empty", arg, i + 1);
    for (int j = 0; j < i; j++) DT_CHECK(strcmp(ax->values[j].label, val) != 0, DT_ERR_USAGE, "--sweep %s: '%s' is given twice", arg, val);
    DT_TRY(add_set(&ax->values[i], ax->key, val, origin));
    at = end != NULL ? end + 1 : at + len;
  }
  return DT_OK;
}

static void axis_free(dt_sweep_axis *ax) {
  for (int i = 0; i < ax->num_values; i++) {
    free(ax->values[i].label);
    for (int j = 0; j < ax->values[i].num_sets; j++) {
      free(ax->values[i].sets[j]);
      free(ax->values[i].origins[j]);
    }
  }
  free(ax->values);
  free(ax->key);
  memset(ax, 0, sizeof *ax);
}

/* "1000 x 1000 x ..." for the first n axes' value counts (a static buffer: one message's). */
static const char *axes_values(const dt_sweep *sw, int n) {
  static char buf[256];
  size_t used = 0;
  buf[0] = '\0';
  for (int a = 0; a < n && used < sizeof buf; a++)
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%d", a ? " x " : "", sw->axes[a].num_values);
  return buf;
}

void dt_sweep_free(dt_sweep *sw) {
  for (int a = 0; a < sw->num_axes; a++) axis_free(&sw->axes[a]);
  free(sw->text);
  memset(sw, 0, sizeof *sw);
}

dt_status dt_sweep_load(const char *path, const char *const *cli, int num_cli, dt_sweep *out) {
  dt_status st = DT_OK;
  dt_ynode *root = NULL;
  memset(out, 0, sizeof *out);
  snprintf(out->source, sizeof out->source, "%s", path);
  DT_TRY_GOTO(config_read_file(path, &out->text, &out->len));
  DT_TRY_GOTO(dt_yaml_parse(out->text, out->len, path, &root));
  const dt_ynode *sweep = dt_ynode_get(root, "sweep");
  if (sweep != NULL) {
    if (sweep->kind != DT_YN_MAP || sweep->n == 0) {
      st = sweep_error(out, sweep, "expected a mapping of axes (experiment.seed: [0, 1, 2], ...), found %s",
                       sweep->kind == DT_YN_MAP ? "an empty mapping" : sweep->kind == DT_YN_SEQ ? "a list" : "a single value");
      goto cleanup;
    }
    if (sweep->n > DT_SWEEP_MAX_AXES) {
      st = sweep_error(out, sweep, "%d axes; at most %d", sweep->n, DT_SWEEP_MAX_AXES);
      goto cleanup;
    }
    for (int i = 0; i < sweep->n; i++) {
      out->num_axes++; /* counted first: dt_sweep_free releases a half-read axis too */
      DT_TRY_GOTO(file_axis(out, sweep->keys[i], sweep->items[i], &out->axes[out->num_axes - 1]));
    }
  }
  for (int c = 0; c < num_cli; c++) {
    dt_sweep_axis ax;
    memset(&ax, 0, sizeof ax);
    st = cli_axis(cli[c], &ax);
    if (st != DT_OK) {
      axis_free(&ax);
      goto cleanup;
    }
    int a = 0;
    while (a < out->num_axes && strcmp(out->axes[a].key, ax.key) != 0) a++;
    if (a == out->num_axes) {
      if (a == DT_SWEEP_MAX_AXES) {
        axis_free(&ax);
        st = DT_ERROR(DT_ERR_USAGE, "--sweep %s: at most %d axes", cli[c], DT_SWEEP_MAX_AXES);
        goto cleanup;
      }
      out->num_axes++;
    } else {
      axis_free(&out->axes[a]); /* the command line's values replace the file's */
    }
    out->axes[a] = ax;
  }
  /* a key swept twice (by two named axes, or by one and a path axis) has no one value */
  for (int a = 0; a < out->num_axes; a++)
    for (int b = 0; b < a; b++)
      for (int i = 0; i < out->axes[a].values[0].num_sets; i++)
        for (int j = 0; j < out->axes[b].values[0].num_sets; j++) {
          const char *x = out->axes[a].values[0].sets[i], *y = out->axes[b].values[0].sets[j];
          const size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
          DT_CHECK_GOTO(lx != ly || strncmp(x, y, lx) != 0, DT_ERR_CONFIG, "%s: %.*s is swept by two axes, %s and %s",
                        out->axes[a].values[0].origins[i], (int)lx, x, out->axes[b].key, out->axes[a].key);
        }
  long points = out->num_axes > 0 ? 1 : 0;
  for (int a = 0; a < out->num_axes; a++) {
    points *= out->axes[a].num_values;
    if (points <= DT_SWEEP_MAX_POINTS) continue;
    /* at the file's sweep: when it has one (its axes, or some of them, are there); else --sweep's */
    st = sweep != NULL ? sweep_error(out, sweep, "%d axes of %s values give more than %d points", out->num_axes,
                                     axes_values(out, a + 1), DT_SWEEP_MAX_POINTS)
                       : DT_ERROR(DT_ERR_USAGE, "--sweep: %d axes of %s values give more than %d points", out->num_axes,
                                  axes_values(out, a + 1), DT_SWEEP_MAX_POINTS);
    goto cleanup;
  }
  out->num_points = (int)points;
cleanup:
  dt_ynode_free(root);
  if (st != DT_OK) dt_sweep_free(out);
  return st;
}

void dt_sweep_point_index(const dt_sweep *sw, int p, int *idx) {
  for (int a = sw->num_axes - 1; a >= 0; a--) {
    idx[a] = p % sw->axes[a].num_values;
    p /= sw->axes[a].num_values;
  }
}

dt_status dt_sweep_point_config(const dt_sweep *sw, int p, const dt_registry *reg, const char *const *sets, int num_sets,
                                dt_config *cfg) {
  enum { MAX = 64 + DT_SWEEP_MAX_AXES * DT_SWEEP_MAX_SETS };
  const char *ov[MAX], *origins[MAX];
  int n = 0, idx[DT_SWEEP_MAX_AXES];
  DT_CHECK(num_sets <= 64, DT_ERR_USAGE, "at most 64 --set options");
  for (int i = 0; i < num_sets; i++) ov[n] = sets[i], origins[n++] = NULL;
  dt_sweep_point_index(sw, p, idx);
  for (int a = 0; a < sw->num_axes; a++) {
    const dt_sweep_value *v = &sw->axes[a].values[idx[a]];
    for (int j = 0; j < v->num_sets; j++) ov[n] = v->sets[j], origins[n++] = v->origins[j];
  }
  return dt_config_load_overrides(sw->text, sw->len, sw->source, reg, ov, origins, n, cfg);
}
