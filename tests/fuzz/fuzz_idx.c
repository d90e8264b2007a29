/* libFuzzer harness: the IDX reader (raw or gzip) on arbitrary bytes, as a label file (1
 * dimension) and as an image file (3). The input is written to an in-memory file whose
 * /proc/self/fd path the reader opens, exactly as it opens data files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dt/data.h"
#include "dt/log.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int quiet;
  if (!quiet) dt_log_init(0, 1, DT_LOG_ERROR), quiet = 1;
  char path[64];
  const int fd = memfile(data, size, path, sizeof path);
  for (int ndims = 1; ndims <= 3; ndims += 2) {
    uint32_t dims[3];
    uint8_t *bytes = NULL;
    if (dt_idx_read(path, ndims, dims, &bytes) == DT_OK) {
      size_t total = 1;
      for (int i = 0; i < ndims; i++) total *= dims[i];
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < total; i += 4096) sink ^= bytes[i]; /* every page is really there */
      (void)sink;
    }
    free(bytes);
  }
  memfile_close(fd);
  return 0;
}
