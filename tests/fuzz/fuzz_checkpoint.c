/* libFuzzer harness: the reader of a run's checkpoint (run.ckpt), through
 * runner_checkpoint_decode as `dtrun resume` calls it, after the file is read. The first byte
 * chooses how: bit 0, a checksummed file (format 3: the trailer is verified first); bit 1, the
 * config hash expected is the one the file holds (so that decoding goes past the hash). The rest
 * is the file. Whatever it holds, the decoder returns a status; an accepted file points at a
 * problem and round the config has. The corpus (fuzz/corpus/checkpoint) starts from checkpoints
 * of tests/fuzz/checkpoint.yaml, the config below. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/config.h"
#include "dt/log.h"
#include "dt/run.h"
#include "runner_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char config_text[] =
    "experiment: {name: ck, seed: 3, checkpoint_every: 5, graph: {num_nodes: 4, type: cycle}}\n"
    "problem_configs:\n"
    "  a: {evaluate_frequency: 10, optimizer_config: {alg_name: dsgd, outer_iterations: 40}}\n"
    "  b: {evaluate_frequency: 10, optimizer_config: {alg_name: dsgt, outer_iterations: 40}}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static dt_config cfg;
  static int ready;
  if (!ready) {
    dt_log_init(0, 1, DT_LOG_ERROR);
    if (dt_config_load_string(config_text, strlen(config_text), "checkpoint.yaml", &dt_builtin, NULL, 0, &cfg) != DT_OK) {
      fprintf(stderr, "%s\n", dt_error_message());
      abort();
    }
    ready = 1;
  }
  if (size < 1) return 0;
  const int checked = data[0] & 1;
  ckpt_expect x = {.config_hash = 1, .n = cfg.experiment.graph.num_nodes, .cfg = &cfg, .outdir = "fuzz"};
  if ((data[0] & 2) && size >= 17) memcpy(&x.config_hash, data + 1 + 8, 8);
  unsigned char *file = malloc(size > 1 ? size - 1 : 1); /* its own allocation: a read past its end is caught */
  if (file == NULL) abort();
  memcpy(file, data + 1, size - 1);
  static problem_result res[DT_MAX_PROBLEMS];
  resume_point rp;
  memset(&rp, 0, sizeof rp);
  if (runner_checkpoint_decode("fuzz/run.ckpt", file, size - 1, checked, &x, res, &rp) == DT_OK &&
      (rp.problem > cfg.num_problems || rp.round < 0 ||
       (rp.problem < cfg.num_problems && rp.round > cfg.problems[rp.problem].outer_iterations)))
    abort();
  runner_resume_point_free(&rp);
  free(file);
  return 0;
}
