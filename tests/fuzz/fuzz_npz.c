/* libFuzzer harness: NumPy's .npy and .npz reader (dt_npz_read) on arbitrary bytes — the zip
 * walk, zip64 records, deflate, CRC-32 and the .npy headers — and the model-init and
 * minibatch-order checks on whatever it accepts. The input is written to an in-memory file
 * whose /proc/self/fd path the reader opens, as it opens the files a config names. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dt/data.h"
#include "dt/log.h"
#include "dt/npz.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int quiet;
  if (!quiet) dt_log_init(0, 1, DT_LOG_ERROR), quiet = 1;
  char path[64];
  const int fd = memfile(data, size, path, sizeof path);
  dt_arrays a;
  if (dt_npz_read(path, (size_t)1 << 26, &a) == DT_OK) {
    volatile double sink = 0;
    for (int i = 0; i < a.n; i++)
      for (size_t k = 0; k < a.a[i].count; k += 512) sink += a.a[i].v[k]; /* every value is really there */
    (void)sink;
    dt_arrays_free(&a);
  }
  /* a minibatch order over a split of 64 samples on 4 nodes (node i: samples 16i .. 16i+15) */
  size_t start[5] = {0, 16, 32, 48, 64};
  uint32_t idx[64];
  for (uint32_t k = 0; k < 64; k++) idx[k] = k;
  const dt_split split = {.num_nodes = 4, .start = start, .idx = idx};
  dt_batch_order o;
  if (dt_batch_order_read(path, &split, 64, "experiment.batch_order", &o) == DT_OK) dt_batch_order_free(&o);
  memfile_close(fd);
  return 0;
}
