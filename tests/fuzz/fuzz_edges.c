/* libFuzzer harness: the edge-file reader, through dt_graph_build as `graph.type: file` uses it.
 * The first byte picks the node count (1..32); the rest is the file. Any accepted graph must be
 * a valid graph: symmetric, no self-loops, doubly stochastic weights (dt_graph_build checks). */
#include <stdint.h>
#include <stdio.h>

#include "dt/graph.h"
#include "dt/log.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int quiet;
  if (!quiet) dt_log_init(0, 1, DT_LOG_ERROR), quiet = 1;
  if (size < 1) return 0;
  char path[64];
  const int fd = memfile(data + 1, size - 1, path, sizeof path);
  dt_graph_spec spec = {.type = DT_GRAPH_FILE, .num_nodes = 1 + data[0] % 32, .gen_attempts = 1, .edge_file = path};
  dt_graph *g = NULL;
  if (dt_graph_build(&spec, &g) == DT_OK) dt_graph_free(g);
  memfile_close(fd);
  return 0;
}
