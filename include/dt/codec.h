/* Compression operators for compressed communication (Choco-SGD, Koloskova, Stich & Jaggi 2019).
 *
 * A codec turns a vector of n floats into a message of a fixed number of bytes — what would
 * travel on a wire: indices and values, or packed bits and a scale — and adds a decoded message
 * into a vector. Random choices (random_k's coordinates, qsgd's rounding) come from the stream
 * (seed, DT_RNG_COMPRESS, id), so sender and receiver agree without sending them, and the bytes
 * depend on the inputs and that stream only (never on threads, ranks or the backend).
 *
 * Operators (Q(x) as decoded; all are the contractive forms Choco-SGD needs):
 *   top_k     the k = ⌈ratio·n⌉ largest |x_i| (ties: the lower index), unscaled.
 *             Message: k uint32 indices (ascending), then k float values: 8k bytes.
 *   random_k  k coordinates drawn uniformly without replacement (selection sampling), unscaled.
 *             Message: the k float values; the receiver redraws the indices: 4k bytes.
 *   sign      (‖x‖₁/n)·sign(x), sign(0) = +1.
 *             Message: the float scale, then one bit per coordinate (1: negative): 4 + ⌈n/8⌉.
 *   qsgd      ‖x‖₂/(s·τ)·sign(x_i)·ξ_i, ξ_i = ⌊s|x_i|/‖x‖₂⌋ rounded up with probability equal to
 *             the remainder, s = levels, τ = 1 + min(n/s², √n/s).
 *             Message: the float norm, then per coordinate a level (⌈log2(s+1)⌉ bits) and a
 *             sign bit, packed least significant bit first: 4 + ⌈n·bits/8⌉ bytes. */
#ifndef DT_CODEC_H
#define DT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "dt/status.h"

typedef enum dt_codec_op { DT_CODEC_TOP_K = 0, DT_CODEC_RANDOM_K, DT_CODEC_SIGN, DT_CODEC_QSGD, DT_CODEC_COUNT } dt_codec_op;

/* "top_k", "random_k", "sign", "qsgd", NULL: the config's names, in dt_codec_op order. */
extern const char *const dt_codec_names[];

typedef struct dt_codec {
  int op;       /* dt_codec_op */
  size_t n;     /* vector length */
  size_t k;     /* top_k, random_k: coordinates kept */
  int levels;   /* qsgd: s */
  int bits;     /* qsgd: bits per coordinate, the sign bit included */
  double tau;   /* qsgd: 1 + min(n/s², √n/s) */
  size_t bytes; /* the message size */
} dt_codec;

/* The codec of op for vectors of n floats: ratio in (0, 1] (top_k, random_k), levels in
 * [1, 2^20] (qsgd). DT_ERR_CONFIG for values out of range. */
DT_MUST_USE dt_status dt_codec_init(dt_codec *c, int op, size_t n, double ratio, int levels);

/* msg (c->bytes bytes, 4-byte aligned) ← the message of x. Host memory. */
DT_MUST_USE dt_status dt_codec_encode(const dt_codec *c, const float *x, uint64_t seed, uint64_t id, void *msg);

/* y += a·Q(x) for the message msg of x (made with the same seed and id). Host memory. */
void dt_codec_decode_axpy(const dt_codec *c, const void *msg, uint64_t seed, uint64_t id, float a, float *y);

#endif
