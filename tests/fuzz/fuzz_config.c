/* libFuzzer harness: the config loader on arbitrary text, and for every text it accepts, the
 * emit → reload round trip: the emitted config must load again and emit the same bytes (what
 * `dtrun config.yaml` of an archived run relies on). A mismatch aborts, so the fuzzer reports
 * it. Built with libFuzzer under clang (meson -Dfuzz=enabled), or as a corpus replay. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/config.h"
#include "dt/log.h"
#include "dt/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *emit(const dt_config *cfg, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  if (f == NULL) abort();
  if (dt_config_emit(cfg, &dt_builtin, f) != DT_OK) {
    fprintf(stderr, "emit failed: %s\n", dt_error_message());
    abort();
  }
  fclose(f);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static dt_config cfg, again;
  static int quiet;
  if (!quiet) dt_log_init(0, 1, DT_LOG_ERROR), quiet = 1;
  if (dt_config_load_string((const char *)data, size, "fuzz.yaml", &dt_builtin, NULL, 0, &cfg) != DT_OK) return 0;
  size_t len1, len2;
  char *first = emit(&cfg, &len1);
  if (dt_config_load_string(first, len1, "emitted.yaml", &dt_builtin, NULL, 0, &again) != DT_OK) {
    fprintf(stderr, "an emitted config does not load again: %s\n--- emitted:\n%s", dt_error_message(), first);
    abort();
  }
  char *second = emit(&again, &len2);
  if (len1 != len2 || memcmp(first, second, len1) != 0) {
    fprintf(stderr, "emit -> load -> emit changed the config\n--- first:\n%s--- second:\n%s", first, second);
    abort();
  }
  free(first);
  free(second);
  return 0;
}
