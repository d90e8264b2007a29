/* Placing a config error found after loading (a graph, split, model or output folder the keys make
 * impossible) at its key in the config file. The error names its key as data (dt_error_where);
 * the file is read again to find that key's line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

/* The node at `path` ("experiment.model.layers[2].kernel_size") under root, or the deepest node
 * on the way; *exact says whether the whole path was found. */
static const dt_ynode *walk(const dt_ynode *root, const char *path, int *exact) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", path);
  const dt_ynode *cur = root;
  *exact = 0;
  char *save = NULL;
  for (char *part = strtok_r(buf, ".", &save); part != NULL; part = strtok_r(NULL, ".", &save)) {
    char *bracket = strchr(part, '[');
    int index = -1;
    if (bracket != NULL) {
      index = atoi(bracket + 1);
      *bracket = '\0';
    }
    const dt_ynode *next = cur->kind == DT_YN_MAP ? dt_ynode_get(cur, part) : NULL;
    if (next == NULL) return cur;
    cur = next;
    if (index >= 0) {
      if (cur->kind != DT_YN_SEQ || index >= cur->n) return cur;
      cur = cur->items[index];
    }
  }
  *exact = 1;
  return cur;
}

/* cfg's file read again and composed as the loader composed it (includes, extends), so that a
 * key from an included file is found there; a composition that fails leaves the tree as far as
 * it composed. NULL when the file cannot be read or parsed. Keeps the current error. */
static dt_ynode *composed_tree(const dt_config *cfg) {
  char *text = NULL;
  dt_ynode *root = NULL;
  size_t len = 0;
  FILE *f = fopen(cfg->source, "rb");
  if (f != NULL) {
    text = malloc(DT_YAML_MAX_BYTES + 1);
    if (text != NULL) len = fread(text, 1, DT_YAML_MAX_BYTES, f);
    fclose(f);
  }
  if (text == NULL || dt_yaml_parse(text, len, cfg->source, &root) != DT_OK) {
    free(text);
    return NULL;
  }
  free(text);
  dt_status composed = config_compose_includes(root, cfg->source);
  if (composed == DT_OK) composed = config_compose_extends(root, cfg->source);
  (void)composed;
  return root;
}

void dt_config_key_where(const dt_config *cfg, const char *path, char *buf, size_t size) {
  char msg[2048];
  dt_error_context ctx = *dt_error_where();
  const dt_status code = dt_error_code();
  snprintf(msg, sizeof msg, "%s", dt_error_message());
  dt_ynode *root = composed_tree(cfg);
  if (root == NULL) {
    snprintf(buf, size, "%s", cfg->source);
  } else {
    int exact;
    const dt_ynode *n = walk(root, path, &exact);
    char where[DT_PATH_MAX + 64];
    dt_ynode_where(n, cfg->source, where, sizeof where);
    if (exact) snprintf(buf, size, "%s", where);
    else snprintf(buf, size, "%s (%s is not in the file: its default)", where, path);
    dt_ynode_free(root);
  }
  /* the caller's error, if any, as it was */
  if (code != DT_OK) {
    const dt_status kept = dt_error_set_where(dt_error_set_key(DT_ERROR(code, "%s", msg), "%s", ctx.key), ctx.file, ctx.line, ctx.column);
    (void)kept;
  } else {
    dt_error_clear();
  }
}

dt_status dt_config_error_at(const dt_config *cfg, dt_status code, const char *path) {
  char msg[2048], key[sizeof dt_error_where()->key];
  snprintf(msg, sizeof msg, "%s", dt_error_message());
  snprintf(key, sizeof key, "%s", path); /* path may be the current error's own key, which DT_ERROR clears */
  dt_ynode *root = composed_tree(cfg);
  if (root == NULL) {
    const dt_status st = dt_error_set_key(DT_ERROR(code, "%s: %s", cfg->source, msg), "%s", key);
    return dt_error_set_where(st, cfg->source, 0, 0);
  }
  int exact;
  const dt_ynode *n = walk(root, key, &exact);
  char where[DT_PATH_MAX + 64];
  dt_ynode_where(n, cfg->source, where, sizeof where);
  dt_status st = exact ? DT_ERROR(code, "%s: %s", where, msg) : DT_ERROR(code, "%s: %s (%s is not in the file: its default)", where, msg, key);
  st = dt_ynode_locate(dt_error_set_key(st, "%s", key), n, cfg->source);
  dt_ynode_free(root);
  return st;
}

void dt_warning_add(char *lines, size_t size, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  const size_t used = strlen(lines), len = strlen(line);
  for (const char *p = lines; (p = strstr(p, line)) != NULL; p++)
    if ((p == lines || p[-1] == '\n') && p[len] == '\n') return; /* said already */
  static const char more[] = "(more warnings than fit here)\n";
  if (strstr(lines, more) != NULL) return;
  if (used + len + 1 + sizeof more < size) snprintf(lines + used, size - used, "%s\n", line);
  else snprintf(lines + used, size - used, "%s", more);
}

dt_status dt_config_positioned(const dt_config *cfg, dt_status st) {
  const dt_error_context *c = dt_error_where();
  if (st != DT_ERR_CONFIG || c->file[0] != '\0') return st; /* not a config error, or placed already */
  if (c->key[0] == '\0') return st; /* about no key: nothing to place */
  char key[sizeof c->key];
  snprintf(key, sizeof key, "%s", c->key);
  return dt_config_error_at(cfg, st, key);
}
