/* The compression section's key rows (compression.h). */
#include <stddef.h>
#include <string.h>

#include "compression.h"
#include "dt/codec.h"

const dt_key dt_compression_keys[] = {
    {.name = "operator", .type = DT_KEY_ENUM, .offset = offsetof(dt_compression_opts, op), .def = "top_k",
     .values = dt_codec_names, .help = "top_k, random_k (seeded), sign (scaled by the mean |x|) or qsgd (levels)"},
    {.name = "ratio", .applies = "operator=top_k|random_k", .type = DT_KEY_FLOAT, .offset = offsetof(dt_compression_opts, ratio), .def = "0.01", .min = 0, .max = 1,
     .flags = DT_KEY_MIN_OPEN, .help = "top_k, random_k: share of the coordinates sent (k = ceil(ratio d))"},
    {.name = "levels", .applies = "operator=qsgd", .type = DT_KEY_INT, .offset = offsetof(dt_compression_opts, levels), .def = "16", .min = 1, .max = 1 << 20,
     .help = "qsgd: quantization levels s"},
    {0},
};

size_t dt_compression_msg_len(const dt_compression_opts *c, size_t dim) {
  dt_codec codec;
  if (dt_codec_init(&codec, c->op, dim, c->ratio, c->levels) != DT_OK) { /* the config's checks refuse these first */
    dt_error_clear();
    return 0;
  }
  return (codec.bytes + sizeof(float) - 1) / sizeof(float);
}

dt_status dt_compression_trace(dt_optimizer_run *run, const dt_codec *c, int l, const char *tag, const void *msg,
                               uint64_t id, float *scratch) {
  float *q = scratch, *bytes = scratch + dt_run_dim(run);
  if (!dt_run_backend(run)->host_memory) {
    DT_TRY(dt_be_download(dt_run_backend(run), bytes, msg, c->bytes));
    msg = bytes;
  }
  memset(q, 0, sizeof(float) * dt_run_dim(run));
  dt_codec_decode_axpy(c, msg, dt_run_seed(run), id, 1.0f, q);
  return dt_run_trace_f32(run, l, tag, q, dt_run_dim(run));
}
