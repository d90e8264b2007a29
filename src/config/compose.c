/* Config composition, on the YAML tree before the schema reads it (familiar to Hydra and
 * OmegaConf users):
 *   include: FILE or [FILE, ...]   at the top level: each file (relative to the including one,
 *                                   itself composed) merged in order, later wins, and the
 *                                   including file's own keys over them all;
 *   extends: OTHER                 in a problem: OTHER's mapping with this problem's keys over it;
 *   ${path.to.key}                 the value of that key (after includes and --set);
 *   ${oc.env:VAR} ${oc.env:VAR,d}  an environment variable (or d when it is not set);
 *   ???                            a value someone must give (an including file or --set).
 * Mappings merge key by key; anything else is replaced whole. Every node keeps the file it came
 * from, so a bad value in an included file is reported at that file's line and column. A run's
 * archived config.yaml is emitted from the resolved config: composed, it stands alone. */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

enum { MAX_INCLUDE_DEPTH = 8, MAX_FILES = 64, MAX_INTERP_DEPTH = 16 };

/* The included files' names, for the nodes' file pointers: kept for the process's life. */
static char *files[MAX_FILES];

static const char *intern_file(const char *path) {
  int i = 0;
  while (i < MAX_FILES && files[i] != NULL && strcmp(files[i], path) != 0) i++;
  if (i == MAX_FILES) return NULL;
  if (files[i] == NULL) files[i] = strdup(path);
  return files[i];
}

/* An error at node n (file: the loaded file, for nodes of its own): "file:line:col: message". */
DT_MUST_USE static dt_status located(const dt_ynode *n, const char *file, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static dt_status located(const dt_ynode *n, const char *file, const char *fmt, ...) {
  char where[1200], msg[1500];
  dt_ynode_where(n, file, where, sizeof where);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dt_ynode_locate(DT_ERROR(DT_ERR_CONFIG, "%s: %s", where, msg), n, file);
}

static void mark_file(dt_ynode *n, const char *file) {
  if (n == NULL) return;
  n->file = file;
  for (int i = 0; i < n->n; i++) {
    if (n->kind == DT_YN_MAP) mark_file(n->keys[i], file);
    mark_file(n->items[i], file);
  }
}

static dt_ynode *copy_node(const dt_ynode *s) {
  dt_ynode *d = calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  *d = *s;
  d->keys = NULL, d->items = NULL, d->text = NULL, d->n = d->cap = 0;
  if (s->text != NULL && (d->text = strdup(s->text)) == NULL) goto fail;
  if (s->n > 0) {
    d->items = calloc((size_t)s->n, sizeof *d->items);
    d->keys = s->kind == DT_YN_MAP ? calloc((size_t)s->n, sizeof *d->keys) : NULL;
    if (d->items == NULL || (s->kind == DT_YN_MAP && d->keys == NULL)) goto fail;
    d->cap = s->n;
    for (int i = 0; i < s->n; i++, d->n++) {
      if (s->kind == DT_YN_MAP && (d->keys[i] = copy_node(s->keys[i])) == NULL) goto fail;
      if ((d->items[i] = copy_node(s->items[i])) == NULL) {
        if (d->keys != NULL) dt_ynode_free(d->keys[i]);
        goto fail;
      }
    }
  }
  return d;
fail:
  dt_ynode_free(d);
  return NULL;
}

/* Appends key: val (both owned from now on) to map. */
static int append(dt_ynode *map, dt_ynode *key, dt_ynode *val) {
  if (map->n == map->cap) {
    const int cap = map->cap ? 2 * map->cap : 8;
    dt_ynode **k = realloc(map->keys, sizeof *k * (size_t)cap), **v = NULL;
    if (k != NULL) map->keys = k;
    v = k != NULL ? realloc(map->items, sizeof *v * (size_t)cap) : NULL;
    if (v == NULL) return 0;
    map->items = v;
    map->cap = cap;
  }
  map->keys[map->n] = key, map->items[map->n++] = val;
  return 1;
}

/* Merges src over dst (both mappings): src's keys win; a mapping under both merges the same way.
 * src's nodes move into dst; src is freed. */
static dt_status merge(dt_ynode *dst, dt_ynode *src) {
  dt_status st = DT_OK;
  for (int i = 0; i < src->n; i++) {
    dt_ynode *key = src->keys[i], *val = src->items[i];
    src->keys[i] = src->items[i] = NULL;
    int k = 0;
    while (k < dst->n && strcmp(dst->keys[k]->text, key->text) != 0) k++;
    if (k < dst->n && dst->items[k]->kind == DT_YN_MAP && val->kind == DT_YN_MAP) {
      dt_ynode_free(key);
      if (st == DT_OK) st = merge(dst->items[k], val);
      else dt_ynode_free(val);
    } else if (k < dst->n) {
      dt_ynode_free(key);
      dt_ynode_free(dst->items[k]);
      dst->items[k] = val;
    } else if (!append(dst, key, val)) {
      dt_ynode_free(key), dt_ynode_free(val);
      st = DT_ERROR(DT_ERR_MEMORY, "out of memory composing the config");
    }
  }
  src->n = 0;
  dt_ynode_free(src);
  return st;
}

/* Removes key from map and returns its value (the caller's), or NULL. */
static dt_ynode *take(dt_ynode *map, const char *key, dt_ynode **key_node) {
  for (int i = 0; map->kind == DT_YN_MAP && i < map->n; i++) {
    if (strcmp(map->keys[i]->text, key) != 0) continue;
    dt_ynode *v = map->items[i];
    *key_node = map->keys[i];
    memmove(map->keys + i, map->keys + i + 1, sizeof *map->keys * (size_t)(map->n - i - 1));
    memmove(map->items + i, map->items + i + 1, sizeof *map->items * (size_t)(map->n - i - 1));
    map->n--;
    return v;
  }
  return NULL;
}

/* Exchanges the contents (children, text) of a and b, each keeping its own place and file. */
static void swap_contents(dt_ynode *a, dt_ynode *b) {
  dt_ynode t = *a;
  a->kind = b->kind, a->text = b->text, a->plain = b->plain, a->n = b->n, a->cap = b->cap, a->keys = b->keys, a->items = b->items;
  b->kind = t.kind, b->text = t.text, b->plain = t.plain, b->n = t.n, b->cap = t.cap, b->keys = t.keys, b->items = t.items;
}

/* ---- include -------------------------------------------------------------------------------- */

static dt_status compose_includes(dt_ynode *root, const char *file, int depth, char (*stack)[PATH_MAX]);

/* FILE relative to the folder of the file that names it. */
static void relative_to(const char *from, const char *name, char *out, size_t size) {
  const char *slash = strrchr(from, '/');
  if (name[0] == '/' || slash == NULL) snprintf(out, size, "%s", name);
  else snprintf(out, size, "%.*s/%s", (int)(slash - from), from, name);
}

/* One included file, read and composed: into *out. */
static dt_status load_include(const dt_ynode *at, const char *from, const char *name, int depth, char (*stack)[PATH_MAX], dt_ynode **out) {
  char path[PATH_MAX], real[PATH_MAX];
  *out = NULL;
  relative_to(from, name, path, sizeof path);
  if (realpath(path, real) == NULL)
    return located(at, from, "include: %s: %s", path, strerror(errno));
  for (int d = 0; d < depth; d++)
    if (strcmp(stack[d], real) == 0)
      return located(at, from, "include: %s includes itself (through the files that include it)", path);
  if (depth >= MAX_INCLUDE_DEPTH)
    return located(at, from, "include: %s: includes nest deeper than %d files", path, MAX_INCLUDE_DEPTH);
  const char *interned = intern_file(path);
  if (interned == NULL) return located(at, from, "include: more than %d files", MAX_FILES);
  char *text = NULL;
  size_t len = 0;
  const dt_status read = config_read_file(interned, &text, &len);
  if (read == DT_ERR_CONFIG) { /* not a file, unreadable, too large: said at the include line */
    char msg[1500];
    snprintf(msg, sizeof msg, "%s", dt_error_message());
    return located(at, from, "include: %s", msg);
  }
  DT_TRY(read);
  dt_ynode *tree = NULL;
  dt_status st = dt_yaml_parse(text, len, interned, &tree);
  free(text);
  DT_TRY(st);
  if (tree->kind != DT_YN_MAP) {
    st = located(tree, interned, "%s: an included file holds a mapping of keys", interned);
    dt_ynode_free(tree);
    return st;
  }
  mark_file(tree, interned);
  snprintf(stack[depth], PATH_MAX, "%s", real);
  if ((st = compose_includes(tree, interned, depth + 1, stack)) != DT_OK) {
    dt_ynode_free(tree);
    return st;
  }
  *out = tree;
  return DT_OK;
}

static dt_status compose_includes(dt_ynode *root, const char *file, int depth, char (*stack)[PATH_MAX]) {
  dt_ynode *key = NULL, *inc = take(root, "include", &key);
  if (inc == NULL) return DT_OK;
  dt_status st = DT_OK;
  dt_ynode *acc = NULL;
  const int many = inc->kind == DT_YN_SEQ;
  const int n = many ? inc->n : 1;
  if (inc->kind == DT_YN_MAP || (many && inc->n == 0))
    st = located(inc, file, "include: expected a file or a list of files");
  for (int i = 0; st == DT_OK && i < n; i++) {
    const dt_ynode *item = many ? inc->items[i] : inc;
    if (item->kind != DT_YN_SCALAR || item->text[0] == '\0') {
      st = located(item, file, "include: expected a file name");
      break;
    }
    dt_ynode *tree = NULL;
    st = load_include(item, item->file != NULL ? item->file : file, item->text, depth, stack, &tree);
    if (st == DT_OK && acc == NULL) acc = tree;
    else if (st == DT_OK) st = merge(acc, tree);
  }
  dt_ynode_free(key);
  dt_ynode_free(inc);
  if (st != DT_OK) {
    dt_ynode_free(acc);
    return st;
  }
  /* the including file's keys over its includes: root takes acc's keys, then its own over them */
  swap_contents(root, acc);
  return merge(root, acc);
}

dt_status config_compose_includes(dt_ynode *root, const char *file) {
  if (root->kind != DT_YN_MAP) return DT_OK;
  static char stack[MAX_INCLUDE_DEPTH][PATH_MAX];
  if (realpath(file, stack[0]) == NULL) snprintf(stack[0], PATH_MAX, "%s", file);
  return compose_includes(root, file, 1, stack);
}

/* ---- extends -------------------------------------------------------------------------------- */

/* Resolves problem i's extends: (state[k]: 0 not yet, 1 being resolved, 2 done), its base's first. */
static dt_status extend_problem(dt_ynode *pcs, int i, const char *file, char *state) {
  dt_ynode *pc = pcs->items[i], *key = NULL;
  if (state[i] == 2 || pc->kind != DT_YN_MAP) return DT_OK;
  if (state[i] == 1) return located(pc, file, "extends: problem %s extends itself (through the problems it extends)", pcs->keys[i]->text);
  state[i] = 1;
  dt_ynode *ext = take(pc, "extends", &key);
  if (ext == NULL) {
    state[i] = 2;
    return DT_OK;
  }
  dt_status st = DT_OK;
  int b = 0;
  if (ext->kind == DT_YN_SCALAR)
    while (b < pcs->n && strcmp(pcs->keys[b]->text, ext->text) != 0) b++;
  if (ext->kind != DT_YN_SCALAR || b == pcs->n) {
    const char *names[256];
    int n = 0;
    for (int k = 0; k < pcs->n && n < 256; k++)
      if (k != i) names[n++] = pcs->keys[k]->text;
    const char *near = ext->kind == DT_YN_SCALAR ? dt_nearest(ext->text, names, n) : NULL;
    st = located(ext, file, "extends: expected the name of another problem%s%s%s", near ? "; did you mean " : "",
                                  near ? near : "", near ? "?" : "");
  } else if (b == i) {
    st = located(ext, file, "extends: problem %s extends itself", pcs->keys[i]->text);
  } else if ((st = extend_problem(pcs, b, file, state)) == DT_OK) {
    dt_ynode *base = copy_node(pcs->items[b]);
    if (base == NULL) st = DT_ERROR(DT_ERR_MEMORY, "out of memory composing the config");
    else if (base->kind != DT_YN_MAP) {
      dt_ynode_free(base);
      st = located(ext, file, "extends: problem %s is not a mapping", ext->text);
    } else { /* base with this problem's own keys over it */
      swap_contents(pc, base);
      st = merge(pc, base);
    }
  }
  dt_ynode_free(key);
  dt_ynode_free(ext);
  state[i] = 2;
  return st;
}

dt_status config_compose_extends(dt_ynode *root, const char *file) {
  dt_ynode *pcs = root->kind == DT_YN_MAP ? dt_ynode_get(root, "problem_configs") : NULL;
  if (pcs == NULL || pcs->kind != DT_YN_MAP || pcs->n == 0) return DT_OK;
  char *state = calloc((size_t)pcs->n, 1);
  DT_CHECK(state != NULL, DT_ERR_MEMORY, "out of memory");
  dt_status st = DT_OK;
  for (int i = 0; st == DT_OK && i < pcs->n; i++) st = extend_problem(pcs, i, file, state);
  free(state);
  return st;
}

/* ---- ${...} and ??? ------------------------------------------------------------------------- */

/* The node at a dotted path from root, or NULL. */
static dt_ynode *at_path(dt_ynode *root, const char *path) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", path);
  dt_ynode *n = root;
  char *save = NULL;
  for (char *part = strtok_r(buf, ".", &save); n != NULL && part != NULL; part = strtok_r(NULL, ".", &save)) n = dt_ynode_get(n, part);
  return n;
}

static dt_status interpolate(dt_ynode *root, dt_ynode *n, const char *file, int depth);

/* One ${...} body: its text into out (size bytes). */
static dt_status resolve_ref(dt_ynode *root, const dt_ynode *at, const char *body, const char *file, int depth, char *out, size_t size) {
  if (strncmp(body, "oc.env:", 7) == 0) {
    char var[256];
    const char *comma = strchr(body + 7, ',');
    snprintf(var, sizeof var, "%.*s", (int)(comma != NULL ? comma - body - 7 : (long)strlen(body + 7)), body + 7);
    const char *v = getenv(var);
    if (v == NULL && comma == NULL)
      return located(at, file, "${%s}: the environment variable %s is not set (give a default: ${oc.env:%s,VALUE})",
                                      body, var, var);
    if ((size_t)snprintf(out, size, "%s", v != NULL ? v : comma + 1) >= size)
      return located(at, file, "${%s}: the value is longer than %zu characters", body, size - 1);
    return DT_OK;
  }
  dt_ynode *ref = at_path(root, body);
  if (ref == NULL || ref->kind != DT_YN_SCALAR)
    return located(at, file, "${%s}: %s", body, ref == NULL ? "no such key in the config" : "not a single value");
  if (depth >= MAX_INTERP_DEPTH)
    return located(at, file, "${%s}: the references go round in a circle", body);
  DT_TRY(interpolate(root, ref, file, depth + 1));
  if ((size_t)snprintf(out, size, "%s", ref->text) >= size)
    return located(at, file, "${%s}: the value is longer than %zu characters", body, size - 1);
  return DT_OK;
}

static dt_status interpolate(dt_ynode *root, dt_ynode *n, const char *file, int depth) {
  if (n->kind != DT_YN_SCALAR) {
    for (int i = 0; i < n->n; i++) DT_TRY(interpolate(root, n->items[i], file, depth));
    return DT_OK;
  }
  if (strstr(n->text, "${") == NULL) return DT_OK;
  char out[4096] = "";
  size_t used = 0;
  for (const char *p = n->text; *p;) {
    const char *open = strstr(p, "${");
    if (open == NULL) {
      if (used < sizeof out) used += (size_t)snprintf(out + used, sizeof out - used, "%s", p);
      break;
    }
    const char *close = strchr(open, '}');
    if (close == NULL) return located(n, file, "'%s': a ${ without its }", n->text);
    if (used < sizeof out) used += (size_t)snprintf(out + used, sizeof out - used, "%.*s", (int)(open - p), p);
    char body[512], val[2048];
    if (close - open - 2 >= (long)sizeof body) return located(n, file, "a ${...} reference longer than %zu characters", sizeof body - 1);
    if (close == open + 2) return located(n, file, "'%s': an empty ${}", n->text);
    snprintf(body, sizeof body, "%.*s", (int)(close - open - 2), open + 2);
    DT_TRY(resolve_ref(root, n, body, file, depth, val, sizeof val));
    if (used < sizeof out) used += (size_t)snprintf(out + used, sizeof out - used, "%s", val);
    p = close + 1;
  }
  if (used >= sizeof out) return located(n, file, "'%s': longer than %zu characters once resolved", n->text, sizeof out - 1);
  char *text = strdup(out);
  DT_CHECK(text != NULL, DT_ERR_MEMORY, "out of memory");
  free(n->text);
  n->text = text;
  n->plain = 1; /* the value reads as YAML would read it written there: 10 a number, true a boolean */
  return DT_OK;
}

/* The first ??? left, as an error naming its key path. */
static dt_status required(const dt_ynode *n, const char *path, const char *file) {
  if (n->kind == DT_YN_SCALAR) {
    if (!n->plain || strcmp(n->text, "???") != 0) return DT_OK;
    return located(n, file, "%s: a required value (?\?\?) that neither a file nor --set gives: --set %s=VALUE", path,
                                    path);
  }
  for (int i = 0; i < n->n; i++) {
    char sub[512];
    if (n->kind == DT_YN_MAP) snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", n->keys[i]->text);
    else snprintf(sub, sizeof sub, "%s[%d]", path, i);
    DT_TRY(required(n->items[i], sub, file));
  }
  return DT_OK;
}

dt_status config_compose_finish(dt_ynode *root, const char *file) {
  if (root->kind != DT_YN_MAP) return DT_OK;
  DT_TRY(config_compose_extends(root, file));
  DT_TRY(interpolate(root, root, file, 0));
  return required(root, "", file);
}
