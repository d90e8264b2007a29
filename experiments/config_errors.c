/* Config errors found after loading, by the modules the runner builds from the config (the
 * model, the data and its split, the output folder), positioned at their key in the config file
 * so that run, check and sweep report them as the loader reports its own. Graph errors are
 * positioned where the graph is built from the config (src/graph/from_config.c). */
#include <stdio.h>
#include <string.h>

#include "dt/run.h"

dt_status dt_config_positioned(const dt_config *cfg, dt_status st) {
  if (st != DT_ERR_CONFIG) return st;
  const char *m = dt_error_message();
  char path[256] = "";
  int layer = -1;
  if (sscanf(m, "model layer %d", &layer) == 1) {
    snprintf(path, sizeof path, "experiment.model.layers[%d]", layer);
  } else if (strncmp(m, "model", 5) == 0) {
    snprintf(path, sizeof path, "experiment.model.layers");
  } else if (strncmp(m, "experiment.", 11) == 0) {
    const size_t n = strcspn(m, ": ");
    snprintf(path, sizeof path, "%.*s", (int)n, m);
    if (strchr(path, '.') == NULL) path[0] = '\0';
  }
  if (path[0] == '\0') return st;
  return dt_config_error_at(cfg, st, path);
}
