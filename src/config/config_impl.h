/* Internal interface of the config module: the table-driven schema walker. */
#ifndef DT_CONFIG_IMPL_H
#define DT_CONFIG_IMPL_H

#include "dt/config.h"
#include "dt/yaml.h"

/* An experiment file's text, NUL-terminated (free() it); DT_ERR_CONFIG naming the file when it
 * is missing, not a regular file or larger than DT_YAML_MAX_BYTES. */
dt_status config_read_file(const char *path, char **text, size_t *len);

/* ---- schema walker ---------------------------------------------------------------------- */

typedef struct schema_ctx {
  const char *file;
  const dt_registry *reg; /* the plug-ins whose keys the config may use */
} schema_ctx;

/* Reads mapping `map` (may be NULL: all defaults) into `base` according to rows `keys`; `path`
 * is the key path of the map ("experiment.graph"). Keys of type DT_KEY_SPECIAL are left to the
 * caller (their nodes are marked used by it). Unknown keys fail with a suggestion. */
dt_status schema_read(const schema_ctx *ctx, const dt_key *keys, const dt_ynode *map,
                      const char *path, void *base);
/* Gives the current error the context of node n at key `path` (dt_error_where: the key, and
 * where n was read; "(top level)" names no key). Returns code. */
DT_MUST_USE dt_status schema_locate(dt_status code, const schema_ctx *ctx, const dt_ynode *n, const char *path);
/* Error for node n at `path`: "file:line:col: path: message", with that context as data.
 * Returns DT_ERR_CONFIG. */
dt_status schema_error(const schema_ctx *ctx, const dt_ynode *n, const char *path,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The closest of `n` candidates to `word` (edit distance), or NULL when none is close. */
const char *schema_nearest(const char *word, const char *const *cands, int n);
/* Parses scalar text as the row's type into dst (used for defaults and values). */
dt_status schema_parse_scalar(const schema_ctx *ctx, const dt_key *key, const dt_ynode *n,
                              const char *path, void *base);
/* Formats the value of row `key` in `base` as YAML scalar text. */
void schema_format(const dt_key *key, const void *base, char *buf, size_t size);

#endif
