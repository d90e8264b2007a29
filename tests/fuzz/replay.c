/* Runs a fuzz harness over files and folders of inputs (the checked-in corpora), for builds
 * without libFuzzer: every corpus input stays a regression test in the unit suite. Exits non-zero
 * when the harness aborts, like libFuzzer would. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 4096;
      buf = realloc(buf, cap);
      if (buf == NULL) abort();
    }
    const size_t got = fread(buf + len, 1, cap - len, f);
    if (got == 0) break;
    len += got;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int runs = 0, bad = 0;
  for (int a = 1; a < argc; a++) {
    struct stat sb;
    if (stat(argv[a], &sb) != 0) {
      fprintf(stderr, "replay: no such file or folder: %s\n", argv[a]);
      return 1;
    }
    if (!S_ISDIR(sb.st_mode)) {
      bad += run_file(argv[a]), runs++;
      continue;
    }
    struct dirent **names;
    const int n = scandir(argv[a], &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
      if (names[i]->d_name[0] != '.') {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[a], names[i]->d_name);
        bad += run_file(path), runs++;
      }
      free(names[i]);
    }
    free(names);
  }
  printf("replayed %d inputs\n", runs);
  return bad != 0 || runs == 0;
}
