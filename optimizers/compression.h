/* The compression section Choco-SGD and BEER share (optimizer_config.compression): the operator of
 * include/dt/codec.h and its parameters, as key rows. */
#ifndef DT_COMPRESSION_H
#define DT_COMPRESSION_H
#include "dt/config.h"

typedef struct dt_compression_opts {
  int op;       /* dt_codec_op */
  double ratio; /* top_k, random_k: share of coordinates sent */
  int levels;   /* qsgd: s */
} dt_compression_opts;

/* operator, ratio, levels: the rows of a DT_KEY_SECTION filling a dt_compression_opts. */
extern const dt_key dt_compression_keys[];
#endif
