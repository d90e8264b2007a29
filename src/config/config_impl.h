/* Internal interfaces of the config module: the YAML node tree with positions, and the
 * table-driven schema walker. */
#ifndef DT_CONFIG_IMPL_H
#define DT_CONFIG_IMPL_H

#include "dt/config.h"

typedef enum ynode_kind { YN_SCALAR, YN_MAP, YN_SEQ } ynode_kind;

typedef struct ynode {
  ynode_kind kind;
  int line, col;         /* 1-based position in the file */
  const char *origin;    /* NULL: from the file; else the --set override that made it */
  char *text;            /* scalar text */
  int plain;             /* scalar was unquoted (so true/123 keep YAML meaning) */
  int n, cap;
  struct ynode **keys;   /* YN_MAP: key scalars */
  struct ynode **items;  /* YN_MAP: values; YN_SEQ: items */
  int used;              /* the schema consumed this node */
} ynode;

/* Limits that keep hostile input harmless. */
enum { YAML_MAX_BYTES = 1 << 20, YAML_MAX_NODES = 100000, YAML_MAX_DEPTH = 64 };

/* Parses one YAML document. `name` is used in messages. Errors: DT_ERR_CONFIG with
 * name:line:col. The root may be any kind (the caller checks it is a mapping). */
dt_status yaml_tree_parse(const char *text, size_t len, const char *name, ynode **root);
void ynode_free(ynode *n);
ynode *ynode_get(const ynode *map, const char *key);
/* Adds (or replaces) key in map with a new scalar made by an override. */
dt_status ynode_set_path(ynode *root, const char *path, const char *value, const char *origin);

/* Position prefix for messages about node n: "file:line:col" or "--set a.b=c". */
void ynode_where(const ynode *n, const char *file, char *buf, size_t size);

/* ---- schema walker ---------------------------------------------------------------------- */

typedef struct schema_ctx {
  const char *file;
} schema_ctx;

/* Reads mapping `map` (may be NULL: all defaults) into `base` according to rows `keys`; `path`
 * is the key path of the map ("experiment.graph"). Keys of type DT_KEY_SPECIAL are left to the
 * caller (their nodes are marked used by it). Unknown keys fail with a suggestion. */
dt_status schema_read(const schema_ctx *ctx, const dt_key *keys, const ynode *map,
                      const char *path, void *base);
/* Error for node n at `path`: "file:line:col: path: message". Returns DT_ERR_CONFIG. */
dt_status schema_error(const schema_ctx *ctx, const ynode *n, const char *path,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The closest of `n` candidates to `word` (edit distance), or NULL when none is close. */
const char *schema_nearest(const char *word, const char *const *cands, int n);
/* Parses scalar text as the row's type into dst (used for defaults and values). */
dt_status schema_parse_scalar(const schema_ctx *ctx, const dt_key *key, const ynode *n,
                              const char *path, void *base);
/* Formats the value of row `key` in `base` as YAML scalar text. */
void schema_format(const dt_key *key, const void *base, char *buf, size_t size);

#endif
