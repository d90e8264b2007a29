/* Table-driven reading of YAML mappings into structs (see dt_key in dt/config.h): type
 * conversion, ranges, enums with aliases, defaults, unknown keys with a suggestion, and the
 * formatting used to emit resolved values. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_impl.h"

dt_status schema_locate(dt_status code, const schema_ctx *ctx, const dt_ynode *n, const char *path) {
  const int names_key = path[0] != '\0' && path[0] != '(';
  return dt_ynode_locate(dt_error_set_key(code, "%s", names_key ? path : ""), n, ctx->file);
}

dt_status schema_error(const schema_ctx *ctx, const dt_ynode *n, const char *path, const char *fmt, ...) {
  char where[1200], msg[1500];
  dt_ynode_where(n, ctx->file, where, sizeof where);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return schema_locate(DT_ERROR(DT_ERR_CONFIG, "%s: %s: %s", where, path, msg), ctx, n, path);
}

static int edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 64 || lb > 64) return 99;
  int d[65][65];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
  return d[la][lb];
}

const char *dt_nearest(const char *word, const char *const *cands, int n) { return schema_nearest(word, cands, n); }

const char *schema_nearest(const char *word, const char *const *cands, int n) {
  const char *best = NULL;
  int bd = 1 << 30;
  for (int i = 0; i < n; i++) {
    int d = edit_distance(word, cands[i]);
    if (d < bd) bd = d, best = cands[i];
  }
  /* Close enough to be a typo: at most a third of the word, and at least one edit allowed. */
  int limit = (int)strlen(word) / 3 + 1;
  if (bd <= limit) return best;
  /* or an abbreviation: the only candidate that starts with the word */
  const char *prefix = NULL;
  size_t lw = strlen(word);
  for (int i = 0; i < n; i++)
    if (lw >= 3 && strncmp(cands[i], word, lw) == 0) {
      if (prefix != NULL) return NULL;
      prefix = cands[i];
    }
  return prefix;
}

static const char *describe(const dt_ynode *n, char *buf, size_t size) {
  if (n == NULL) return "nothing";
  if (n->kind == DT_YN_MAP) return "a mapping";
  if (n->kind == DT_YN_SEQ) return "a list";
  if (n->text[0] == '\0') return "an empty value";
  snprintf(buf, size, "'%.60s%s'", n->text, strlen(n->text) > 60 ? "..." : "");
  return buf;
}

static int parse_bool(const char *s, bool *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "On"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off", "Off"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    if (strcmp(s, yes[i]) == 0) return *out = true, 1;
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    if (strcmp(s, no[i]) == 0) return *out = false, 1;
  return 0;
}

static void range_text(const dt_key *k, char *buf, size_t size) {
  int lo = k->min > -1e300, hi = k->max < 1e300;
  if (k->type == DT_KEY_INT) {
    if (lo && hi) snprintf(buf, size, " in [%.0f, %.0f]", k->min, k->max);
    else if (lo) snprintf(buf, size, " >= %.0f", k->min);
    else buf[0] = '\0';
  } else {
    const int open = (k->flags & DT_KEY_MIN_OPEN) != 0;
    if (lo && hi) snprintf(buf, size, " in %c%g, %g]", open ? '(' : '[', k->min, k->max);
    else if (lo) snprintf(buf, size, " %s %g", open ? ">" : ">=", k->min);
    else buf[0] = '\0';
  }
}

static void enum_list(const dt_key *k, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; k->values[i] != NULL && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", k->values[i]);
}

/* Whether a decimal number's text ([sign] digits [. digits] [e [sign] digits]) has no nonzero
 * digit after its point once its exponent is applied. */
static int integral_text(const char *s) {
  const char *dot = strchr(s, '.'), *e = strpbrk(s, "eE");
  const long exp = e != NULL ? strtol(e + 1, NULL, 10) : 0;
  const char *frac_end = e != NULL ? e : s + strlen(s);
  if (dot == NULL || dot > frac_end) dot = frac_end;
  long place = 1; /* the fraction digit's place after the point, before the exponent */
  for (const char *c = dot + (dot < frac_end); c < frac_end; c++, place++)
    if (*c >= '1' && *c <= '9' && place > exp) return 0;
  return 1;
}

static dt_status parse_int(const schema_ctx *ctx, const dt_key *k, const dt_ynode *n, const char *path, int *dst) {
  char found[96], range[96], *end;
  const char *s = n->text;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  range_text(k, range, sizeof range);
  if (end == s || *end != '\0' || errno != 0) {
    /* 1e3 or 2.0 written for an integer: accept only texts of integral values (not 2.0000001, nor
     * 2.00000000000000001, which reads as the double 2) */
    double d = strtod(s, &end);
    if (end != s && *end == '\0' && d == floor(d) && fabs(d) < 2e9 && integral_text(s)) v = (long long)d;
    else return schema_error(ctx, n, path, "expected an integer%s, found %s", range, describe(n, found, sizeof found));
  }
  if ((double)v < k->min || (double)v > k->max) return schema_error(ctx, n, path, "expected an integer%s, found %lld", range, v);
  *dst = (int)v;
  return DT_OK;
}

static dt_status parse_float(const schema_ctx *ctx, const dt_key *k, const dt_ynode *n, const char *path, double *dst) {
  char found[96], range[96], *end;
  errno = 0;
  double v = strtod(n->text, &end);
  range_text(k, range, sizeof range);
  if (end == n->text || *end != '\0' || errno == ERANGE || !isfinite(v))
    return schema_error(ctx, n, path, "expected a finite number%s, found %s", range, describe(n, found, sizeof found));
  if (v < k->min || v > k->max || ((k->flags & DT_KEY_MIN_OPEN) && v == k->min))
    return schema_error(ctx, n, path, "expected a number%s, found %g", range, v);
  *dst = v;
  return DT_OK;
}

static dt_status parse_seed(const schema_ctx *ctx, const dt_ynode *n, const char *path, uint64_t *dst) {
  char found[96], *end;
  const char *s = n->text;
  errno = 0;
  /* strtoull would accept " -1" (as 2^64 - 1) and "+5": digits only */
  if (!isdigit((unsigned char)s[0]))
    return schema_error(ctx, n, path, "expected a non-negative integer, found %s", describe(n, found, sizeof found));
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0)
    return schema_error(ctx, n, path, "expected a non-negative integer below 2^64, found %s", describe(n, found, sizeof found));
  *dst = (uint64_t)v;
  return DT_OK;
}

/* A name of k->values, or an alias of one; otherwise the list, with the likely intended name. */
static dt_status parse_enum(const schema_ctx *ctx, const dt_key *k, const dt_ynode *n, const char *path, int *dst) {
  char found[96];
  const char *s = n->text;
  for (int i = 0; k->values[i] != NULL; i++)
    if (strcmp(s, k->values[i]) == 0) return *dst = i, DT_OK;
  for (int i = 0; k->value_aliases != NULL && k->value_aliases[i] != NULL; i += 2)
    if (strcmp(s, k->value_aliases[i]) == 0)
      for (int j = 0; k->values[j] != NULL; j++)
        if (strcmp(k->value_aliases[i + 1], k->values[j]) == 0) return *dst = j, DT_OK;
  /* case-insensitive match: tell the user the right spelling */
  int count = 0;
  while (k->values[count] != NULL) count++;
  char list[512];
  enum_list(k, list, sizeof list);
  const char *near = schema_nearest(s, k->values, count);
  for (int i = 0; k->values[i] != NULL && near == NULL; i++)
    if (strcasecmp(s, k->values[i]) == 0) near = k->values[i];
  if (near != NULL)
    return schema_error(ctx, n, path, "expected one of %s, found %s; did you mean '%s'?", list, describe(n, found, sizeof found), near);
  return schema_error(ctx, n, path, "expected one of %s, found %s", list, describe(n, found, sizeof found));
}

/* One number of a DT_KEY_FLOATS list (item i, 1-based) in range. */
static dt_status parse_floats_item(const schema_ctx *ctx, const dt_key *k, const dt_ynode *at, const char *path, const char *s,
                                   int i, double *v) {
  char range[96], *end;
  range_text(k, range, sizeof range);
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE || !isfinite(*v))
    return schema_error(ctx, at, path, "expected a list of finite numbers%s, found '%.60s' as item %d", range, s, i);
  if (*v < k->min || *v > k->max || ((k->flags & DT_KEY_MIN_OPEN) && *v == k->min))
    return schema_error(ctx, at, path, "expected numbers%s, found %g as item %d", range, *v, i);
  return DT_OK;
}

/* A DT_KEY_FLOATS value: a list of scalars, or one scalar "a, b, c" (empty: the empty list). */
static dt_status parse_floats(const schema_ctx *ctx, const dt_key *k, const dt_ynode *n, const char *path, dt_floats *dst) {
  char found[96], item[64];
  const int most = k->size > 0 && k->size < DT_FLOATS_MAX ? (int)k->size : DT_FLOATS_MAX;
  dt_floats out = {0};
  if (n->kind == DT_YN_MAP) return schema_error(ctx, n, path, "expected a list of numbers, found a mapping");
  if (n->kind == DT_YN_SEQ) {
    for (int i = 0; i < n->n; i++) {
      const dt_ynode *at = n->items[i];
      if (at->kind != DT_YN_SCALAR)
        return schema_error(ctx, at, path, "expected a list of numbers, found %s as item %d", describe(at, found, sizeof found), i + 1);
      if (out.n == most) return schema_error(ctx, at, path, "expected at most %d numbers, found %d", most, n->n);
      DT_TRY(parse_floats_item(ctx, k, at, path, at->text, i + 1, &out.v[out.n++]));
    }
  } else {
    const char *p = n->text;
    while (*p == ' ') p++;
    while (*p != '\0') {
      const char *comma = strchr(p, ',');
      size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
      while (len > 0 && p[len - 1] == ' ') len--;
      if (out.n == most) return schema_error(ctx, n, path, "expected at most %d numbers, found more", most);
      snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
      DT_TRY(parse_floats_item(ctx, k, n, path, item, out.n + 1, &out.v[out.n]));
      out.n++;
      if (comma == NULL) break;
      for (p = comma + 1; *p == ' ';) p++;
      if (*p == '\0') return schema_error(ctx, n, path, "expected a number after the last comma, found nothing");
    }
  }
  *dst = out;
  return DT_OK;
}

dt_status schema_parse_scalar(const schema_ctx *ctx, const dt_key *k, const dt_ynode *n, const char *path, void *base) {
  char found[96];
  void *dst = (char *)base + k->offset;
  if (n->kind != DT_YN_SCALAR || (n->plain && (strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 || n->text[0] == '\0'))) {
    const char *what = k->type == DT_KEY_BOOL ? "true or false" : k->type == DT_KEY_INT ? "an integer"
                     : k->type == DT_KEY_FLOAT ? "a number" : k->type == DT_KEY_SEED ? "a non-negative integer"
                     : k->type == DT_KEY_ENUM ? "one of the names listed" : "a string";
    return schema_error(ctx, n, path, "expected %s, found %s", what,
                        n->kind == DT_YN_SCALAR && n->text[0] != '\0' ? "null" : describe(n, found, sizeof found));
  }
  switch (k->type) {
    case DT_KEY_BOOL: {
      bool v;
      if (!parse_bool(n->text, &v)) return schema_error(ctx, n, path, "expected true or false, found %s", describe(n, found, sizeof found));
      if (!n->plain)
        return schema_error(ctx, n, path, "expected true or false, found the string %s (quoted or tagged !!str: write it plain)",
                            describe(n, found, sizeof found));
      *(bool *)dst = v;
      return DT_OK;
    }
    case DT_KEY_INT: return parse_int(ctx, k, n, path, dst);
    case DT_KEY_FLOAT: return parse_float(ctx, k, n, path, dst);
    case DT_KEY_SEED: return parse_seed(ctx, n, path, dst);
    case DT_KEY_STRING:
      if (strlen(n->text) >= k->size)
        return schema_error(ctx, n, path, "expected a string of at most %zu characters, found one of %zu", k->size - 1, strlen(n->text));
      snprintf((char *)dst, k->size, "%s", n->text);
      return DT_OK;
    case DT_KEY_ENUM: return parse_enum(ctx, k, n, path, dst);
    default: return DT_ERROR(DT_ERR_INTERNAL, "schema row %s has no scalar type", k->name);
  }
}

void schema_format(const dt_key *k, const void *base, char *buf, size_t size) {
  const void *src = (const char *)base + k->offset;
  switch (k->type) {
    case DT_KEY_BOOL: snprintf(buf, size, "%s", *(const bool *)src ? "true" : "false"); break;
    case DT_KEY_INT: snprintf(buf, size, "%d", *(const int *)src); break;
    case DT_KEY_FLOAT: {
      /* the shortest text that reads back to the same double */
      const double v = *(const double *)src;
      for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
      }
      if (strchr(buf, '.') == NULL && strchr(buf, 'e') == NULL && strchr(buf, 'n') == NULL && strlen(buf) + 2 < size)
        strcat(buf, ".0");
      break;
    }
    case DT_KEY_SEED: snprintf(buf, size, "%" PRIu64, *(const uint64_t *)src); break;
    case DT_KEY_STRING: snprintf(buf, size, "%s", (const char *)src); break;
    case DT_KEY_ENUM: snprintf(buf, size, "%s", k->values[*(const int *)src]); break;
    case DT_KEY_FLOATS: { /* "a, b, c": the item texts the emitter writes as a flow list */
      const dt_floats *f = src;
      size_t used = 0;
      buf[0] = '\0';
      for (int i = 0; i < f->n && used < size; i++) {
        char one[40];
        const dt_key item = {.type = DT_KEY_FLOAT};
        schema_format(&item, &f->v[i], one, sizeof one);
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", one);
      }
      break;
    }
    default: buf[0] = '\0';
  }
}

/* ---- applies: keys without effect ---------------------------------------------------------- */

/* The row at dotted `path` under `keys` (sections descended), and the base its offset is from. */
static const dt_key *find_row(const dt_key *keys, const void *base, const char *path, const void **row_base) {
  const char *dot = strchr(path, '.');
  const size_t len = dot != NULL ? (size_t)(dot - path) : strlen(path);
  for (const dt_key *k = keys; k != NULL && k->name != NULL; k++) {
    if (strlen(k->name) != len || strncmp(k->name, path, len) != 0 || k->alias_of != NULL) continue;
    if (dot == NULL) {
      *row_base = base;
      return k;
    }
    return k->type == DT_KEY_SECTION ? find_row(k->sub, (const char *)base + k->offset, dot + 1, row_base) : NULL;
  }
  return NULL;
}

/* Whether the value of row k (in base) differs from its default. */
static int off_default(const dt_key *k, const void *base) {
  const void *v = (const char *)base + k->offset;
  const char *d = k->def != NULL ? k->def : "";
  switch (k->type) {
    case DT_KEY_BOOL: return *(const bool *)v != (strcmp(d, "true") == 0);
    case DT_KEY_INT: return *(const int *)v != (int)strtol(d, NULL, 10);
    case DT_KEY_FLOAT: return *(const double *)v != strtod(d, NULL);
    case DT_KEY_SEED: return *(const uint64_t *)v != strtoull(d, NULL, 10);
    case DT_KEY_STRING: return strcmp((const char *)v, d) != 0;
    case DT_KEY_ENUM: return k->def != NULL && strcmp(k->values[*(const int *)v], d) != 0;
    case DT_KEY_FLOATS: return ((const dt_floats *)v)->n > 0;
    default: return 0;
  }
}

/* One term of an applies condition ("^dataset!=a|b") as text ("dataset is not a or b") at buf;
 * its length. */
static size_t term_text(const char *term, size_t term_len, char *buf, size_t size) {
  const size_t name_len = strcspn(term, "=!>");
  const char op = term[name_len];
  const int outer = term[0] == '^';
  const char *vals = term + name_len + (op == '!' ? 2 : 1), *end = term + term_len;
  size_t used = (size_t)snprintf(buf, size, "%.*s %s ", (int)(name_len - outer), term + outer,
                                 op == '>' ? "is above" : op == '!' ? "is not" : "is");
  for (const char *v = vals; v < end;) { /* a|b|c: a, b or c (a table cell cannot hold '|') */
    const size_t n = strcspn(v, "|,");
    const int last = v + n >= end;
    used += (size_t)snprintf(buf + (used < size ? used : size), used < size ? size - used : 0, "%s%.*s",
                             v == vals ? "" : last ? " or " : ", ", (int)n, v);
    v += n + 1;
  }
  return used;
}

void dt_key_applies_text(const char *applies, char *buf, size_t size) {
  size_t used = 0;
  if (size > 0) buf[0] = '\0';
  for (const char *t = applies; t != NULL && *t != '\0' && used < size;) {
    const size_t n = strcspn(t, ",");
    if (t != applies) used += (size_t)snprintf(buf + used, size - used, " and ");
    if (used < size) used += term_text(t, n, buf + used, size - used);
    t += n + (t[n] == ',');
  }
}

/* Whether one term of an applies condition ("type=random|geometric", "speed>0", "^dataset!=mnist")
 * holds; its text for a message into why ("type is random or geometric (here: cycle)"). */
static int term_holds(const schema_ctx *ctx, const dt_key *keys, const void *base, const char *term, char *why, size_t size) {
  char name[128], want[256];
  const char *op = strpbrk(term, "=!>");
  if (op == NULL || (size_t)(op - term) >= sizeof name) return 1; /* a table's typo: tests/unit/test_config checks every condition */
  snprintf(name, sizeof name, "%.*s", (int)(op - term), term);
  const int ne = op[0] == '!', gt = op[0] == '>';
  snprintf(want, sizeof want, "%s", op + (ne ? 2 : 1));
  const int outer = name[0] == '^';
  const void *row_base = NULL;
  const dt_key *k = outer ? find_row(ctx->outer_keys, ctx->outer_base, name + 1, &row_base) : find_row(keys, base, name, &row_base);
  if (k == NULL) return 1;
  char have[256];
  schema_format(k, row_base, have, sizeof have);
  int holds;
  if (gt) {
    holds = strtod(have, NULL) > strtod(want, NULL);
  } else {
    holds = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", want);
    char *save = NULL;
    const int number = k->type == DT_KEY_INT || k->type == DT_KEY_FLOAT;
    for (char *v = strtok_r(list, "|", &save); v != NULL && !holds; v = strtok_r(NULL, "|", &save))
      holds = number ? strtod(v, NULL) == strtod(have, NULL) : strcmp(v, have) == 0;
    if (ne) holds = !holds;
  }
  const size_t used = term_text(term, strlen(term), why, size);
  if (used < size) snprintf(why + used, size - used, " (here: %s)", have);
  return holds;
}

/* Warnings for the keys of `keys` given in map (their values off their defaults) where their
 * applies condition does not hold. */
static void warn_inert(const schema_ctx *ctx, const dt_key *keys, const dt_ynode *map, const char *path, const void *base) {
  for (const dt_key *k = keys; ctx->warn != NULL && map != NULL && map->kind == DT_YN_MAP && k->name != NULL; k++) {
    const dt_ynode *v = dt_ynode_get(map, k->name);
    if (k->type == DT_KEY_SECTION && v != NULL) {
      schema_ctx inner = *ctx;
      inner.outer_keys = keys;
      inner.outer_base = base;
      char sub[512];
      snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", k->name);
      warn_inert(&inner, k->sub, v, sub, (const char *)base + k->offset);
    }
    if (k->applies == NULL || k->alias_of != NULL) continue;
    if (v == NULL || !off_default(k, base)) continue;
    char terms[256], why[512] = "";
    snprintf(terms, sizeof terms, "%s", k->applies);
    char *save = NULL;
    int holds = 1;
    for (char *t = strtok_r(terms, ",", &save); t != NULL && holds; t = strtok_r(NULL, ",", &save))
      holds = term_holds(ctx, keys, base, t, why, sizeof why);
    if (holds) continue;
    char where[1200];
    dt_ynode_where(v, ctx->file, where, sizeof where);
    dt_warning_add(ctx->warn->warnings, sizeof ctx->warn->warnings, "%s: %s%s%s: has no effect: it applies when %s", where, path,
                   path[0] ? "." : "", k->name, why);
  }
}

static void key_names(const dt_key *keys, const char **names, int *n) {
  *n = 0;
  for (int i = 0; keys[i].name != NULL; i++)
    if (!(keys[i].flags & DT_KEY_NO_EMIT) || keys[i].alias_of != NULL) names[(*n)++] = keys[i].name;
}

static dt_status read_map(const schema_ctx *ctx, const dt_key *keys, const dt_ynode *map, const char *path, void *base) {
  char sub[512];
  if (map != NULL && map->kind != DT_YN_MAP) {
    char found[96];
    return schema_error(ctx, map, path, "expected a mapping of keys, found %s", describe(map, found, sizeof found));
  }
  /* Unknown keys first: a typo should be reported as a typo, not as a missing key. */
  for (int i = 0; map != NULL && i < map->n; i++) {
    const char *name = map->keys[i]->text;
    int known = 0;
    for (int r = 0; keys[r].name != NULL && !known; r++) known = strcmp(keys[r].name, name) == 0;
    if (!known) {
      const char *names[128] = {0};
      int nn;
      key_names(keys, names, &nn);
      const char *near = schema_nearest(name, names, nn);
      char list[1024] = "";
      size_t used = 0;
      for (int r = 0; r < nn && used < sizeof list; r++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", r ? ", " : "", names[r]);
      snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", name);
      if (near != NULL) return schema_error(ctx, map->keys[i], sub, "unknown key; did you mean '%s'?", near);
      return schema_error(ctx, map->keys[i], sub, "unknown key; valid keys here: %s", list);
    }
  }
  for (int r = 0; keys[r].name != NULL; r++) {
    const dt_key *k = &keys[r];
    if (k->alias_of != NULL) continue; /* read together with its canonical row */
    snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", k->name);
    const dt_ynode *v = dt_ynode_get(map, k->name);
    /* an alias spelling of this key */
    for (int a = 0; keys[a].name != NULL; a++) {
      if (keys[a].alias_of == NULL || strcmp(keys[a].alias_of, k->name) != 0) continue;
      const dt_ynode *av = dt_ynode_get(map, keys[a].name);
      if (av == NULL) continue;
      if (v != NULL)
        return schema_error(ctx, av, sub, "given twice, as '%s' and as '%s'; keep one", k->name, keys[a].name);
      v = av;
    }
    for (int e = 0; v != NULL && k->excludes != NULL && k->excludes[e] != NULL; e++) {
      const dt_ynode *other = dt_ynode_get(map, k->excludes[e]);
      if (other != NULL)
        return schema_error(ctx, other, sub, "'%s' cannot be combined with '%s' (%s)", k->excludes[e], k->name, k->help);
    }
    if (v == NULL && (k->flags & DT_KEY_REQUIRED)) {
      char where[1200];
      dt_ynode_where(map, ctx->file, where, sizeof where);
      return schema_locate(DT_ERROR(DT_ERR_CONFIG, "%s: %s: missing required key (%s)", where, sub, k->help), ctx, map, sub);
    }
    if (k->type == DT_KEY_SPECIAL) continue;
    if (k->type == DT_KEY_FLOATS) {
      if (v == NULL) memset((char *)base + k->offset, 0, sizeof(dt_floats));
      else DT_TRY(parse_floats(ctx, k, v, sub, (dt_floats *)((char *)base + k->offset)));
      continue;
    }
    if (k->type == DT_KEY_SECTION) {
      DT_TRY(read_map(ctx, k->sub, v, sub, (char *)base + k->offset));
      continue;
    }
    if (v == NULL) {
      if (k->def == NULL) continue; /* optional, no default: left as the caller initialised it */
      /* defaults are YAML text; strings count as quoted so that "" is an empty string */
      dt_ynode d = {.kind = DT_YN_SCALAR, .text = (char *)k->def, .plain = k->type != DT_KEY_STRING};
      schema_ctx dctx = {.file = "built-in default"};
      DT_TRY(schema_parse_scalar(&dctx, k, &d, sub, base));
      continue;
    }
    DT_TRY(schema_parse_scalar(ctx, k, v, sub, base));
  }
  return DT_OK;
}

dt_status schema_read(const schema_ctx *ctx, const dt_key *keys, const dt_ynode *map, const char *path, void *base) {
  DT_TRY(read_map(ctx, keys, map, path, base));
  warn_inert(ctx, keys, map, path, base); /* once the whole table is read: a condition may name a key after it */
  return DT_OK;
}
