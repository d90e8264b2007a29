/* libFuzzer harness: the CIFAR binary reader on arbitrary bytes, as CIFAR-10 records (one label
 * byte) and as CIFAR-100 records (two, fine labels), each appended to a set that already holds
 * a record (the append path). The input is written to an in-memory file whose /proc/self/fd
 * path the reader opens, exactly as it opens data files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/data.h"
#include "dt/log.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int quiet;
  if (!quiet) dt_log_init(0, 1, DT_LOG_ERROR), quiet = 1;
  char path[64];
  const int fd = memfile(data, size, path, sizeof path);
  for (int prefix = 1; prefix <= 2; prefix++) {
    dt_image_set set;
    char hex[65];
    memset(&set, 0, sizeof set);
    if (dt_cifar_read(path, prefix, prefix - 1, prefix == 1 ? 10 : 100, &set, hex) == DT_OK) {
      dt_ignore(dt_cifar_read(path, prefix, prefix - 1, prefix == 1 ? 10 : 100, &set, hex)); /* append */
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < set.count * 3072; i += 4096) sink ^= set.pixels[i]; /* every page is really there */
      for (size_t i = 0; i < set.count; i++) sink ^= set.labels[i];
      (void)sink;
    }
    dt_image_set_free(&set);
  }
  memfile_close(fd);
  return 0;
}
