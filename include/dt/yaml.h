/* A YAML document as a tree of nodes that remember their position (file, line, column), for
 * messages that point at the offending text. The config loader reads through it; `dtrun
 * compare` reads summary.yaml with it. Parsing is libyaml's; duplicate keys are errors, and
 * alias expansion, node count and depth are bounded (DT_YAML_MAX_*). */
#ifndef DT_YAML_H
#define DT_YAML_H

#include <stddef.h>
#include <stdio.h>

#include "dt/status.h"

typedef enum dt_ynode_kind { DT_YN_SCALAR, DT_YN_MAP, DT_YN_SEQ } dt_ynode_kind;

typedef struct dt_ynode {
  dt_ynode_kind kind;
  int line, col;         /* 1-based position in the file */
  const char *origin;    /* NULL: from the file; else the --set override that made it */
  const char *file;      /* NULL: the file being loaded; else the included file it came from */
  char *text;            /* scalar text */
  int plain;             /* scalar was unquoted (so true/123 keep YAML meaning) */
  int n, cap;
  struct dt_ynode **keys;   /* DT_YN_MAP: key scalars */
  struct dt_ynode **items;  /* DT_YN_MAP: values; DT_YN_SEQ: items */
  int used;              /* the schema consumed this node */
} dt_ynode;

/* Limits that keep hostile input harmless. */
enum { DT_YAML_MAX_BYTES = 1 << 20, DT_YAML_MAX_NODES = 100000, DT_YAML_MAX_DEPTH = 64 };

/* Parses one YAML document. `name` is used in messages. Errors: DT_ERR_CONFIG with
 * name:line:col. The root may be any kind (the caller checks it is a mapping). */
DT_MUST_USE dt_status dt_yaml_parse(const char *text, size_t len, const char *name, dt_ynode **root);
void dt_ynode_free(dt_ynode *n);
dt_ynode *dt_ynode_get(const dt_ynode *map, const char *key);
/* Adds (or replaces) key in map with a new scalar made by an override. */
DT_MUST_USE dt_status dt_ynode_set_path(dt_ynode *root, const char *path, const char *value, const char *origin);

/* Position prefix for messages about node n: "file:line:col" or "--set a.b=c". */
void dt_ynode_where(const dt_ynode *n, const char *file, char *buf, size_t size);
/* The same position as the current error's context (dt_error_set_where): file, line, column;
 * the override's text for a node an override made; file alone for NULL. Returns code. */
DT_MUST_USE dt_status dt_ynode_locate(dt_status code, const dt_ynode *n, const char *file);

/* v as the shortest text that reads back to the same double (YAML's .nan, .inf and -.inf for
 * those; an exponent form gets its '.', 1.0e-05, so YAML 1.1 readers take a float), into buf;
 * returns buf. dt_yemit_double writes numbers with it. */
const char *dt_yaml_double(double v, char *buf, size_t size);

/* ---- writing: libyaml's emitter, for every YAML file dtrun writes (src/config/yemit.c) ------ */

/* An emitter writing one YAML document to a FILE. Calls after a failure do nothing;
 * dt_yemit_finish reports it. Every value is one event: a mapping's keys and values alternate. */
typedef struct dt_yemit dt_yemit;

/* Starts the stream and the document (header comments, if any, go to f before this). */
DT_MUST_USE dt_status dt_yemit_begin(FILE *f, dt_yemit **out);
/* A mapping or sequence (flow: on one line, {a: 1} or [1, 2]), closed by dt_yemit_end. */
void dt_yemit_map(dt_yemit *y, int flow);
void dt_yemit_seq(dt_yemit *y, int flow);
void dt_yemit_end(dt_yemit *y);
/* text as a plain scalar (quoted = 0; libyaml quotes it where plain cannot hold it) or a
 * double-quoted one: for keys and words (status: completed). */
void dt_yemit_scalar(dt_yemit *y, const char *text, int quoted);
/* A string that reads back as that string: plain where it would, double-quoted where a reader
 * would take it for a number, boolean or null ("1", "yes", ""). */
void dt_yemit_str(dt_yemit *y, const char *text);
void dt_yemit_int(dt_yemit *y, long long v);
/* The shortest text that reads back to v exactly (dt_yaml_double). */
void dt_yemit_double(dt_yemit *y, double v);
/* v with a fixed number of decimals (measured seconds: %.3f). */
void dt_yemit_fixed(dt_yemit *y, double v, int decimals);
/* Closes open collections, the document and the stream, flushes and frees y. Errors: DT_ERR_IO
 * naming what ("summary.yaml") when anything failed. */
DT_MUST_USE dt_status dt_yemit_finish(dt_yemit *y, const char *what);

#endif
