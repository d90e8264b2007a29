/* YAML text → a tree of nodes that remember their line and column, using libyaml's event
 * parser. Duplicate keys, aliases that expand past DT_YAML_MAX_NODES, documents deeper than
 * DT_YAML_MAX_DEPTH, files over DT_YAML_MAX_BYTES and more than one document are all errors with a
 * position, so no input can crash or exhaust the loader. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>
#include <yaml.h>

#include "config_impl.h"

typedef struct anchor {
  char *name;
  dt_ynode *node;
} anchor;

typedef struct builder {
  yaml_parser_t parser;
  const char *name;
  const char *text;
  size_t len;
  long nodes; /* nodes created, aliases expanded */
  anchor *anchors;
  int nanchors, capanchors;
} builder;

void dt_ynode_free(dt_ynode *n) {
  if (n == NULL) return;
  for (int i = 0; i < n->n; i++) {
    if (n->keys != NULL) dt_ynode_free(n->keys[i]);
    dt_ynode_free(n->items[i]);
  }
  free(n->keys);
  free(n->items);
  free(n->text);
  free(n);
}

DT_MUST_USE static dt_status fail_at(const builder *b, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static dt_status fail_at(const builder *b, int line, int col, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dt_error_set_where(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: %s", b->name, line, col, msg), b->name, line, col);
}

/* The encoding, checked before libyaml, whose reader errors carry no position: the first byte
 * that is not UTF-8, a control character (a binary file), or a byte-order mark after the start (a
 * file saved twice "with BOM"), at its line and column. UTF-16 and UTF-32 files (which begin with their BOM) are libyaml's to read. */
static dt_status check_encoding(const builder *b) {
  const uint8_t *u = (const uint8_t *)b->text, *end = u + b->len;
  if (b->len >= 2 && ((u[0] == 0xfe && u[1] == 0xff) || (u[0] == 0xff && u[1] == 0xfe))) return DT_OK;
  static const uint8_t bom[3] = {0xef, 0xbb, 0xbf};
  const uint8_t *start = b->len >= 3 && memcmp(u, bom, 3) == 0 ? u + 3 : u;
  const uint8_t *bad = u8_check(start, (size_t)(end - start)), *stray = NULL, *ctl = NULL;
  for (const uint8_t *p = start; p < (bad != NULL ? bad : end) && stray == NULL && ctl == NULL; p++) {
    if (end - p >= 3 && memcmp(p, bom, 3) == 0) stray = p;
    if ((*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') || *p == 0x7f) ctl = p;
  }
  const uint8_t *at = stray != NULL ? stray : ctl != NULL ? ctl : bad;
  if (at == NULL) return DT_OK;
  int line = 1, col = 1;
  for (const uint8_t *p = start; p < at; p++) {
    if (*p == '\n') line++, col = 1;
    else if ((*p & 0xc0) != 0x80) col++; /* a character's first byte */
  }
  if (ctl != NULL) return fail_at(b, line, col, "not a text file: control character 0x%02X", *ctl);
  if (stray != NULL)
    return fail_at(b, line, col, "a byte-order mark (U+FEFF) after the start of the file (saved twice as UTF-8 with BOM?); "
                                 "remove it");
  return fail_at(b, line, col, "byte 0x%02X is not UTF-8 (a Latin-1 or Windows-1252 file? save it as UTF-8)", *bad);
}

static dt_ynode *new_node(builder *b, dt_ynode_kind kind, const yaml_mark_t *m) {
  dt_ynode *n = calloc(1, sizeof *n);
  if (n == NULL) return NULL;
  n->kind = kind;
  n->line = (int)m->line + 1;
  n->col = (int)m->column + 1;
  b->nodes++;
  return n;
}

static int push(dt_ynode *parent, dt_ynode *key, dt_ynode *val) {
  if (parent->n == parent->cap) {
    int cap = parent->cap ? 2 * parent->cap : 8;
    dt_ynode **items = realloc(parent->items, sizeof(dt_ynode *) * (size_t)cap);
    if (items == NULL) return 0;
    parent->items = items;
    if (parent->kind == DT_YN_MAP) {
      dt_ynode **keys = realloc(parent->keys, sizeof(dt_ynode *) * (size_t)cap);
      if (keys == NULL) return 0;
      parent->keys = keys;
    }
    parent->cap = cap;
  }
  if (parent->kind == DT_YN_MAP) parent->keys[parent->n] = key;
  parent->items[parent->n++] = val;
  return 1;
}

static dt_ynode *copy_tree(builder *b, const dt_ynode *src) {
  if (b->nodes > DT_YAML_MAX_NODES) return NULL;
  dt_ynode *n = calloc(1, sizeof *n);
  if (n == NULL) return NULL;
  *n = *src;
  n->keys = n->items = NULL;
  n->n = n->cap = 0;
  n->text = src->text ? strdup(src->text) : NULL;
  b->nodes++;
  for (int i = 0; i < src->n; i++) {
    dt_ynode *k = src->kind == DT_YN_MAP ? copy_tree(b, src->keys[i]) : NULL;
    dt_ynode *v = copy_tree(b, src->items[i]);
    if (v == NULL || (src->kind == DT_YN_MAP && k == NULL) || !push(n, k, v)) {
      dt_ynode_free(k);
      dt_ynode_free(v);
      dt_ynode_free(n);
      return NULL;
    }
  }
  return n;
}

static dt_status remember_anchor(builder *b, const yaml_char_t *name, dt_ynode *node) {
  if (name == NULL) return DT_OK;
  if (b->nanchors == b->capanchors) {
    int cap = b->capanchors ? 2 * b->capanchors : 8;
    anchor *a = realloc(b->anchors, sizeof(anchor) * (size_t)cap);
    DT_CHECK(a != NULL, DT_ERR_MEMORY, "out of memory reading %s", b->name);
    b->anchors = a;
    b->capanchors = cap;
  }
  b->anchors[b->nanchors].name = strdup((const char *)name);
  b->anchors[b->nanchors++].node = node;
  return DT_OK;
}

static dt_status parser_error(builder *b) {
  yaml_parser_t *p = &b->parser;
  int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
  size_t at = p->problem_mark.index;
  if (p->error == YAML_MEMORY_ERROR) return DT_ERROR(DT_ERR_MEMORY, "out of memory parsing %s", b->name);
  if (at < b->len && b->text[at] == '\t')
    return fail_at(b, line, col, "a tab character: YAML indentation must use spaces");
  if (p->error == YAML_READER_ERROR)
    return fail_at(b, line, col, "not a text file: %s (byte 0x%02x at offset %zu)",
                   p->problem ? p->problem : "unreadable input", (unsigned)p->problem_value & 0xff,
                   p->problem_offset);
  return fail_at(b, line, col, "YAML syntax error: %s%s%s", p->problem ? p->problem : "unknown",
                 p->context ? " " : "", p->context ? p->context : "");
}

/* An error at event ev's position: the message starts with it, the context holds it. */
#define EVENT_AT(b, ev) (b)->name, (int)(ev)->start_mark.line + 1, (int)(ev)->start_mark.column + 1
static dt_status at_event(dt_status code, const builder *b, const yaml_event_t *ev) {
  return dt_error_set_where(code, b->name, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1);
}

DT_MUST_USE static dt_status parse_node(builder *b, yaml_event_t *ev, int depth, dt_ynode **out);

static dt_status parse_scalar(builder *b, const yaml_event_t *ev, dt_ynode **out) {
  dt_status st = DT_OK;
  dt_ynode *n = new_node(b, DT_YN_SCALAR, &ev->start_mark);
  DT_CHECK_GOTO(n != NULL, DT_ERR_MEMORY, "out of memory reading %s", b->name);
  n->text = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
  DT_CHECK_GOTO(n->text != NULL, DT_ERR_MEMORY, "out of memory reading %s", b->name);
  /* a NUL inside a scalar ("a\0b") would silently cut it short everywhere: refuse it */
  if (strlen(n->text) != ev->data.scalar.length) {
    st = at_event(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: a NUL character inside '%s...' is not supported in an experiment file", EVENT_AT(b, ev),
                           n->text),
                  b, ev);
    goto cleanup;
  }
  /* a plain scalar tagged !!str is a string as a quoted one is ("!!str true" is not a boolean) */
  const char *tag = (const char *)ev->data.scalar.tag;
  n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (tag == NULL || strcmp(tag, YAML_STR_TAG) != 0);
  DT_TRY_GOTO(remember_anchor(b, ev->data.scalar.anchor, n));
  *out = n;
  n = NULL;
cleanup:
  dt_ynode_free(n);
  return st;
}

/* *anchor: a copy of the anchored node, at the alias's position. */
static dt_status parse_alias(builder *b, const yaml_event_t *ev, dt_ynode **out) {
  const char *name = (const char *)ev->data.alias.anchor;
  const dt_ynode *target = NULL;
  for (int i = b->nanchors - 1; i >= 0 && target == NULL; i--)
    if (strcmp(b->anchors[i].name, name) == 0) target = b->anchors[i].node;
  if (target == NULL) return at_event(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: unknown alias *%s", EVENT_AT(b, ev), name), b, ev);
  dt_ynode *n = copy_tree(b, target);
  if (n == NULL)
    return at_event(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: alias *%s expands past %d nodes: refusing a 'billion laughs' document",
                             EVENT_AT(b, ev), name, DT_YAML_MAX_NODES),
                    b, ev);
  n->line = (int)ev->start_mark.line + 1;
  n->col = (int)ev->start_mark.column + 1;
  *out = n;
  return DT_OK;
}

/* A mapping's key, starting with event ev: a plain name, not a merge key, not given before in
 * map. */
static dt_status parse_key(builder *b, yaml_event_t *ev, int depth, const dt_ynode *map, dt_ynode **out) {
  dt_status st = DT_OK;
  dt_ynode *key = NULL;
  DT_TRY(parse_node(b, ev, depth, &key));
  if (key->kind != DT_YN_SCALAR) {
    st = fail_at(b, key->line, key->col, "mapping keys must be plain names, found a %s", key->kind == DT_YN_MAP ? "mapping" : "sequence");
  } else if (key->plain && strcmp(key->text, "<<") == 0) {
    st = fail_at(b, key->line, key->col, "YAML merge keys (<<: *anchor) are not supported; write the keys out, "
                 "or use an alias for a whole value (key: *anchor)");
  } else {
    for (int i = 0; i < map->n && st == DT_OK; i++)
      if (strcmp(map->keys[i]->text, key->text) == 0)
        st = fail_at(b, key->line, key->col, "duplicate key '%s' (first given at line %d)", key->text, map->keys[i]->line);
  }
  if (st != DT_OK) {
    dt_ynode_free(key);
    return st;
  }
  *out = key;
  return DT_OK;
}

/* One entry of collection n, starting with event *e (which it deletes, as every event it takes):
 * a key and its value in a mapping, an item in a sequence. */
static dt_status parse_entry(builder *b, yaml_event_t *e, int depth, dt_ynode *n) {
  dt_ynode *key = NULL, *val = NULL;
  dt_status st = DT_OK;
  if (n->kind == DT_YN_MAP) {
    st = parse_key(b, e, depth, n, &key);
    yaml_event_delete(e);
    DT_TRY(st);
    if (!yaml_parser_parse(&b->parser, e)) {
      dt_ynode_free(key);
      return parser_error(b);
    }
  }
  st = parse_node(b, e, depth, &val);
  yaml_event_delete(e);
  if (st != DT_OK) {
    dt_ynode_free(key);
    DT_TRY(st);
  }
  if (!push(n, key, val)) {
    dt_ynode_free(key);
    dt_ynode_free(val);
    return DT_ERROR(DT_ERR_MEMORY, "out of memory reading %s", b->name);
  }
  return DT_OK;
}

/* A mapping or a sequence: its entries up to the matching end event. */
static dt_status parse_collection(builder *b, const yaml_event_t *ev, int depth, dt_ynode **out) {
  dt_status st = DT_OK;
  const int is_map = ev->type == YAML_MAPPING_START_EVENT;
  dt_ynode *n = new_node(b, is_map ? DT_YN_MAP : DT_YN_SEQ, &ev->start_mark);
  DT_CHECK_GOTO(n != NULL, DT_ERR_MEMORY, "out of memory reading %s", b->name);
  DT_TRY_GOTO(remember_anchor(b, is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor, n));
  for (;;) {
    yaml_event_t e;
    if (!yaml_parser_parse(&b->parser, &e)) {
      st = parser_error(b);
      goto cleanup;
    }
    if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&e);
      break;
    }
    DT_TRY_GOTO(parse_entry(b, &e, depth + 1, n));
  }
  *out = n;
  n = NULL;
cleanup:
  dt_ynode_free(n);
  return st;
}

/* Parses the node starting with event ev (already taken from the parser; the caller deletes it). */
static dt_status parse_node(builder *b, yaml_event_t *ev, int depth, dt_ynode **out) {
  *out = NULL;
  if (depth > DT_YAML_MAX_DEPTH)
    return at_event(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: the document nests deeper than %d levels", EVENT_AT(b, ev), DT_YAML_MAX_DEPTH), b,
                    ev);
  if (b->nodes > DT_YAML_MAX_NODES)
    return at_event(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: more than %d YAML nodes (after expanding aliases); an experiment needs far fewer",
                             EVENT_AT(b, ev), DT_YAML_MAX_NODES),
                    b, ev);
  switch (ev->type) {
    case YAML_SCALAR_EVENT: return parse_scalar(b, ev, out);
    case YAML_ALIAS_EVENT: return parse_alias(b, ev, out);
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: return parse_collection(b, ev, depth, out);
    default: return at_event(DT_ERROR(DT_ERR_CONFIG, "%s:%d:%d: unexpected YAML structure", EVENT_AT(b, ev)), b, ev);
  }
}

dt_status dt_yaml_parse(const char *text, size_t len, const char *name, dt_ynode **root) {
  dt_status st = DT_OK;
  builder b;
  dt_ynode *doc = NULL;
  memset(&b, 0, sizeof b);
  b.name = name;
  b.text = text;
  b.len = len;
  *root = NULL;
  yaml_event_t e;
  int have_e = 0, parser_ok = 0;
  DT_CHECK(len <= DT_YAML_MAX_BYTES, DT_ERR_CONFIG,
           "%s: the file is %zu bytes; an experiment file may hold at most %d bytes", name, len,
           DT_YAML_MAX_BYTES);
  DT_TRY(check_encoding(&b));
  DT_CHECK_GOTO(yaml_parser_initialize(&b.parser), DT_ERR_MEMORY, "cannot initialise the YAML parser");
  parser_ok = 1;
  yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
  int docs = 0;
  for (;;) {
    if (!yaml_parser_parse(&b.parser, &e)) {
      st = parser_error(&b);
      goto cleanup;
    }
    have_e = 1;
    if (e.type == YAML_STREAM_END_EVENT) break;
    if (e.type == YAML_DOCUMENT_START_EVENT) {
      docs++;
      if (docs > 1) {
        st = fail_at(&b, (int)e.start_mark.line + 1, (int)e.start_mark.column + 1,
                     "a second YAML document; an experiment file holds exactly one");
        goto cleanup;
      }
    } else if (e.type != YAML_DOCUMENT_END_EVENT && e.type != YAML_STREAM_START_EVENT) {
      dt_ynode *n = NULL;
      st = parse_node(&b, &e, 0, &n);
      if (st != DT_OK) goto cleanup;
      doc = n;
    }
    yaml_event_delete(&e);
    have_e = 0;
  }
  DT_CHECK_GOTO(doc != NULL && !(doc->kind == DT_YN_SCALAR && doc->plain && doc->text[0] == '\0'),
                DT_ERR_CONFIG,
                "%s: the file is empty; expected a mapping with 'experiment' and 'problem_configs'",
                name);
  *root = doc;
  doc = NULL;
cleanup:
  if (st != DT_OK) dt_ynode_free(doc);
  if (have_e) yaml_event_delete(&e);
  if (parser_ok) yaml_parser_delete(&b.parser);
  for (int i = 0; i < b.nanchors; i++) free(b.anchors[i].name);
  free(b.anchors);
  return st;
}

dt_ynode *dt_ynode_get(const dt_ynode *map, const char *key) {
  if (map == NULL || map->kind != DT_YN_MAP) return NULL;
  for (int i = 0; i < map->n; i++)
    if (strcmp(map->keys[i]->text, key) == 0) return map->items[i];
  return NULL;
}

void dt_ynode_where(const dt_ynode *n, const char *file, char *buf, size_t size) {
  if (n != NULL && n->origin != NULL) snprintf(buf, size, "%s", n->origin);
  else if (n != NULL) snprintf(buf, size, "%s:%d:%d", n->file != NULL ? n->file : file, n->line, n->col);
  else snprintf(buf, size, "%s", file);
}

dt_status dt_ynode_locate(dt_status code, const dt_ynode *n, const char *file) {
  if (n != NULL && n->origin != NULL) return dt_error_set_where(code, n->origin, 0, 0);
  if (n != NULL) return dt_error_set_where(code, n->file != NULL ? n->file : file, n->line, n->col);
  return dt_error_set_where(code, file, 0, 0);
}

static void mark_origin(dt_ynode *n, const char *origin) {
  if (n == NULL) return;
  n->origin = origin;
  for (int i = 0; i < n->n; i++) {
    if (n->kind == DT_YN_MAP) mark_origin(n->keys[i], origin);
    mark_origin(n->items[i], origin);
  }
}

/* The node an override sets: a plain scalar, or a YAML flow list or mapping ("[a, b]"). */
static dt_status make_value(const char *value, const char *origin, dt_ynode **out) {
  *out = NULL;
  if (value[0] == '[' || value[0] == '{') {
    dt_ynode *v = NULL;
    DT_TRY(dt_yaml_parse(value, strlen(value), origin, &v));
    mark_origin(v, origin);
    *out = v;
    return DT_OK;
  }
  dt_ynode *val = calloc(1, sizeof *val);
  DT_CHECK(val != NULL, DT_ERR_MEMORY, "out of memory");
  val->kind = DT_YN_SCALAR;
  val->text = strdup(value);
  val->plain = 1;
  val->origin = origin;
  if (val->text == NULL) {
    free(val);
    return DT_ERROR(DT_ERR_MEMORY, "out of memory");
  }
  *out = val;
  return DT_OK;
}

/* Sets parts[0..n) under cur; "*" stands for every key of the mapping at its level. */
static dt_status set_parts(dt_ynode *cur, char **parts, int n, const char *path, const char *value, const char *origin) {
  if (cur->kind != DT_YN_MAP)
    return dt_error_set_where(DT_ERROR_KEY(DT_ERR_CONFIG, path, "%s: '%s' is not a mapping in the config, so it has no key '%s'", origin,
                                           path, parts[0]),
                              origin, 0, 0);
  if (strcmp(parts[0], "*") == 0) {
    if (cur->n == 0)
      return dt_error_set_where(DT_ERROR_KEY(DT_ERR_CONFIG, path, "%s: '*' in '%s' stands for no key: the mapping there is empty", origin, path),
                                origin, 0, 0);
    for (int i = 0; i < cur->n; i++) {
      if (n == 1) {
        dt_ynode *val = NULL;
        DT_TRY(make_value(value, origin, &val));
        dt_ynode_free(cur->items[i]);
        cur->items[i] = val;
      } else {
        DT_TRY(set_parts(cur->items[i], parts + 1, n - 1, path, value, origin));
      }
    }
    return DT_OK;
  }
  int idx = -1;
  for (int i = 0; i < cur->n; i++)
    if (strcmp(cur->keys[i]->text, parts[0]) == 0) idx = i;
  if (n == 1) {
    dt_ynode *val = NULL;
    DT_TRY(make_value(value, origin, &val));
    if (idx >= 0) {
      dt_ynode_free(cur->items[idx]);
      cur->items[idx] = val;
      return DT_OK;
    }
    dt_ynode *key = calloc(1, sizeof *key);
    if (key == NULL || (key->text = strdup(parts[0])) == NULL || !push(cur, key, val)) {
      dt_ynode_free(key);
      dt_ynode_free(val);
      return DT_ERROR(DT_ERR_MEMORY, "out of memory");
    }
    key->kind = DT_YN_SCALAR;
    key->origin = origin;
    return DT_OK;
  }
  if (idx < 0) {
    dt_ynode *key = calloc(1, sizeof *key), *map = calloc(1, sizeof *map);
    if (key == NULL || map == NULL || (key->text = strdup(parts[0])) == NULL || !push(cur, key, map)) {
      dt_ynode_free(key);
      dt_ynode_free(map);
      return DT_ERROR(DT_ERR_MEMORY, "out of memory");
    }
    key->kind = DT_YN_SCALAR;
    key->origin = origin;
    map->kind = DT_YN_MAP;
    map->origin = origin;
    idx = cur->n - 1;
  }
  return set_parts(cur->items[idx], parts + 1, n - 1, path, value, origin);
}

dt_status dt_ynode_set_path(dt_ynode *root, const char *path, const char *value, const char *origin) {
  char buf[1024];
  DT_CHECK(strlen(path) < sizeof buf, DT_ERR_USAGE, "%.80s...: the key path is longer than %zu characters", origin, sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", path);
  /* every part named: ".", "a..b", ".a" and "a." name nothing */
  DT_CHECK(path[0] != '\0' && path[0] != '.' && path[strlen(path) - 1] != '.' && strstr(path, "..") == NULL, DT_ERR_USAGE,
           "%s: '%s' is not a key path (expected names joined by '.', e.g. experiment.graph.num_nodes)", origin, path);
  char *parts[64];
  int n = 0;
  char *save = NULL;
  for (char *part = strtok_r(buf, ".", &save); part != NULL; part = strtok_r(NULL, ".", &save)) {
    DT_CHECK(n < 64, DT_ERR_USAGE, "%s: the key path has more than 64 parts", origin);
    parts[n++] = part;
  }
  return set_parts(root, parts, n, path, value, origin);
}

/* The text of v, found the slow way (17 formats and reads). */
static void yaml_double_text(double v, char *buf, size_t size) {
  if (isnan(v)) snprintf(buf, size, ".nan");
  else if (isinf(v)) snprintf(buf, size, "%s", v > 0 ? ".inf" : "-.inf");
  else { /* of the texts %.Ng gives that read back to v, the shortest (7680, not 7.68e+03) */
    char best[40] = "", t[40];
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(t, sizeof t, "%.*g", prec, v);
      if (strtod(t, NULL) == v && (best[0] == '\0' || strlen(t) < strlen(best))) snprintf(best, sizeof best, "%s", t);
    }
    /* YAML 1.1 readers (PyYAML) take a float only with a '.': 1e-05 is written 1.0e-05; -0 is -0.0 */
    char *e = strchr(best, 'e');
    if (e != NULL && strchr(best, '.') == NULL) {
      char mant[40];
      snprintf(mant, sizeof mant, "%.*s", (int)(e - best), best);
      snprintf(buf, size, "%s.0%s", mant, e);
    } else if (strcmp(best, "-0") == 0) {
      snprintf(buf, size, "-0.0");
    } else {
      snprintf(buf, size, "%s", best);
    }
  }
}

/* Files repeat a few values many times (graph.yaml's mixing weights: 1/n for each of a complete
 * graph's n² entries), so the last texts are kept, by the value's bits (per thread). */
const char *dt_yaml_double(double v, char *buf, size_t size) {
  enum { SLOTS = 64 };
  static _Thread_local struct { uint64_t bits; int used; char text[40]; } cache[SLOTS];
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  const size_t slot = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 58);
  if (!cache[slot].used || cache[slot].bits != bits) {
    yaml_double_text(v, cache[slot].text, sizeof cache[slot].text);
    cache[slot].bits = bits;
    cache[slot].used = 1;
  }
  if (size == 0) return buf;
  const size_t len = strlen(cache[slot].text), n = len < size ? len : size - 1;
  memcpy(buf, cache[slot].text, n);
  buf[n] = '\0';
  return buf;
}
