/* NumPy's files, read: a .npy array, or a .npz archive of named arrays (numpy.savez and
 * savez_compressed: a zip of .npy members, stored or deflated, zip64 headers included). They carry
 * what other tools hand dtrun — a PyTorch state_dict as initial weights, a minibatch order — so
 * every malformed byte is an error naming the file, the member and what was wrong.
 *
 * Supported element types: little-endian floats (f4, f8), signed and unsigned integers (1 to 8
 * bytes) and booleans, C order (or Fortran order for rank <= 1). Values are converted to double,
 * which holds every float32 and every integer below 2^53 exactly. */
#ifndef DT_NPZ_H
#define DT_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "dt/status.h"

enum { DT_NPY_MAX_RANK = 8, DT_NPZ_MAX_ARRAYS = 4096 };

typedef struct dt_array {
  char name[256];  /* the member's name without ".npy" ("" for a lone .npy file) */
  int rank;
  int64_t shape[DT_NPY_MAX_RANK];
  size_t count;    /* product of the shape */
  char kind;       /* 'f' float, 'i' signed, 'u' unsigned, 'b' bool */
  double *v;       /* count values, C order; owned */
} dt_array;

typedef struct dt_arrays {
  int n;
  dt_array *a;     /* [n], in the archive's order */
  char sha256[65]; /* of the file's bytes */
} dt_arrays;

/* Reads path: a zip archive (.npz, by its first bytes) or one .npy array. max_bytes bounds the
 * file and each member's uncompressed size. Errors: DT_ERR_DATA or DT_ERR_IO naming the file (and
 * member), e.g. "w.npz: member 'fc.weight.npy': truncated: its header says 2560 bytes, 812 follow". */
DT_MUST_USE dt_status dt_npz_read(const char *path, size_t max_bytes, dt_arrays *out);
void dt_arrays_free(dt_arrays *a);
/* The array named name, or NULL. */
const dt_array *dt_arrays_find(const dt_arrays *a, const char *name);
/* "64x432" (rank 0: "scalar") into buf. */
void dt_array_shape_text(const dt_array *a, char *buf, size_t size);

#endif
