/* Prints every config key as a Markdown table row (path, type, default, range, description):
 * the key table of configs/README.md is generated with it, and test_config checks the README
 * still lists every key. */
#include <stdio.h>
#include <string.h>

#include "dt/config.h"
#include "dt/run.h"

static void row(const char *path, const dt_key *k, void *ctx) {
  (void)ctx;
  static const char *const types[] = {"bool", "int", "float", "seed", "string", "enum", "section", "special",
                                       "numbers"};
  char range[128] = "";
  if (k->type == DT_KEY_INT || k->type == DT_KEY_FLOAT || k->type == DT_KEY_FLOATS) {
    const int open = (k->flags & DT_KEY_MIN_OPEN) != 0;
    if (k->max < 1e300) snprintf(range, sizeof range, "%c%g, %g]", open ? '(' : '[', k->min, k->max);
    else if (k->min > -1e300) snprintf(range, sizeof range, "%s %g", open ? ">" : ">=", k->min);
  } else if (k->type == DT_KEY_ENUM) {
    size_t used = 0;
    for (int i = 0; k->values[i] && used < sizeof range; i++)
      used += (size_t)snprintf(range + used, sizeof range - used, "%s%s", i ? ", " : "", k->values[i]);
  }
  const char *def = k->def ? k->def : (k->flags & DT_KEY_REQUIRED) ? "required" : "-";
  if (k->type == DT_KEY_SECTION || k->type == DT_KEY_SPECIAL) def = k->flags & DT_KEY_REQUIRED ? "required" : "-";
  if (k->type == DT_KEY_FLOATS) def = "[]";
  char when[256] = "", cond[224];
  dt_key_applies_text(k->applies, cond, sizeof cond);
  if (cond[0] != '\0') snprintf(when, sizeof when, "; has an effect only when %s", cond);
  printf("| `%s` | %s | %s%s%s | %s | %s%s%s%s |\n", path, types[k->type], def[0] ? "" : "", def[0] ? def : "(empty)", "", range,
         k->help ? k->help : "", k->alias_of ? "; alias of " : "", k->alias_of ? k->alias_of : "", when);
}

int main(void) {
  printf("| key | type | default | range / values | meaning |\n|---|---|---|---|---|\n");
  dt_config_visit_keys(&dt_builtin, row, NULL);
  return 0;
}
