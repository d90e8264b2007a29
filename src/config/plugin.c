/* Plug-in helpers: the list of registered names as messages print it, and a plug-in's options
 * struct built in code from its own key table (every key at its default, then single keys set by
 * name), for code that runs a plug-in the config file did not name (the runner's individual
 * training runs the solo optimizer) without ever seeing the plug-in's private struct. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/config.h"

static dt_status set_default(const dt_key *k, unsigned char *base) {
  void *field = base + k->offset;
  const char *d = k->def;
  switch (k->type) {
    case DT_KEY_BOOL: *(bool *)field = d != NULL && strcmp(d, "true") == 0; return DT_OK;
    case DT_KEY_INT: *(int *)field = d != NULL ? (int)strtol(d, NULL, 10) : 0; return DT_OK;
    case DT_KEY_FLOAT: *(double *)field = d != NULL ? strtod(d, NULL) : 0.0; return DT_OK;
    case DT_KEY_SEED: *(uint64_t *)field = d != NULL ? strtoull(d, NULL, 10) : 0; return DT_OK;
    case DT_KEY_STRING:
      if (d != NULL) snprintf((char *)field, k->size, "%s", d);
      return DT_OK;
    case DT_KEY_ENUM:
      for (int i = 0; d != NULL && k->values[i] != NULL; i++)
        if (strcmp(k->values[i], d) == 0) {
          *(int *)field = i;
          return DT_OK;
        }
      return d == NULL ? DT_OK : DT_ERROR(DT_ERR_INTERNAL, "key %s: default '%s' is not one of its values", k->name, d);
    case DT_KEY_FLOATS: memset(field, 0, sizeof(dt_floats)); return DT_OK; /* the empty list */
    case DT_KEY_SECTION:
      for (const dt_key *s = k->sub; s->name != NULL; s++)
        if (s->alias_of == NULL) DT_TRY(set_default(s, (unsigned char *)field));
      return DT_OK;
    default: return DT_ERROR(DT_ERR_INTERNAL, "key %s: no default can be set in code for its type", k->name);
  }
}

dt_status dt_plugin_opts_init(const dt_plugin *p, void *opts, size_t size) {
  DT_CHECK(p->opts_size <= size, DT_ERR_INTERNAL, "%s: its options (%zu bytes) do not fit in %zu", p->name,
           p->opts_size, size);
  memset(opts, 0, size);
  for (const dt_key *k = p->keys; k != NULL && k->name != NULL; k++)
    if (k->alias_of == NULL) DT_TRY(set_default(k, opts));
  return DT_OK;
}

dt_status dt_plugin_opts_set(const dt_plugin *p, void *opts, const char *key, double value) {
  for (const dt_key *k = p->keys; k != NULL && k->name != NULL; k++) {
    if (strcmp(k->name, key) != 0 || k->alias_of != NULL) continue;
    void *field = (unsigned char *)opts + k->offset;
    switch (k->type) {
      case DT_KEY_BOOL: *(bool *)field = value != 0.0; return DT_OK;
      case DT_KEY_INT:
      case DT_KEY_ENUM: *(int *)field = (int)value; return DT_OK;
      case DT_KEY_FLOAT: *(double *)field = value; return DT_OK;
      default: return DT_ERROR(DT_ERR_INTERNAL, "%s.%s is not a number", p->name, key);
    }
  }
  return DT_ERROR(DT_ERR_INTERNAL, "%s has no key %s", p->name, key);
}

void dt_plugin_list(const dt_plugin *const *plugins, char *buf, size_t size) {
  size_t used = 0;
  if (size > 0) buf[0] = '\0';
  for (int i = 0; plugins[i] != NULL; i++) {
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", i ? ", " : "", plugins[i]->name);
    for (int a = 0; plugins[i]->aliases != NULL && plugins[i]->aliases[a] != NULL; a++)
      used += (size_t)snprintf(buf + used, used < size ? size - used : 0, " (%s)", plugins[i]->aliases[a]);
  }
}
