/* The compression section Choco-SGD and BEER share (optimizer_config.compression): the operator of
 * include/dt/codec.h and its parameters, as key rows. */
#ifndef DT_COMPRESSION_H
#define DT_COMPRESSION_H
#include "dt/codec.h"
#include "dt/config.h"
#include "dt/optimizer.h"

typedef struct dt_compression_opts {
  int op;       /* dt_codec_op */
  double ratio; /* top_k, random_k: share of coordinates sent */
  int levels;   /* qsgd: s */
} dt_compression_opts;

/* operator, ratio, levels: the rows of a DT_KEY_SECTION filling a dt_compression_opts. */
extern const dt_key dt_compression_keys[];

/* A message's capacity in floats for dim-float vectors, ⌈codec bytes / 4⌉ (what Choco and BEER
 * give dt_run_exchange_len); 0 for options the codec refuses. */
size_t dt_compression_msg_len(const dt_compression_opts *c, size_t dim);

/* --dump-trace: local node l's message msg (made with id) as decoded, under tag (Choco's QMSG,
 * BEER's QMSH and QMSV): the outcome of the codec's draws. scratch: dim + ⌈bytes/4⌉ floats. */
DT_MUST_USE dt_status dt_compression_trace(dt_optimizer_run *run, const dt_codec *c, int l, const char *tag,
                                           const void *msg, uint64_t id, float *scratch);
#endif
