/* Wrappers that turn MPI and LAPACK return codes into dt_status with a readable message.
 * Internal: only .c files that already include <mpi.h> use DT_MPI, so no MPI type reaches
 * include/dt/. */
#ifndef DT_CORE_IMPL_H
#define DT_CORE_IMPL_H

#include "dt/status.h"

/* Records an MPI failure: the call's text and MPI_Error_string(rc). Returns DT_ERR_MPI. */
DT_MUST_USE dt_status dt_mpi_error(int rc, const char *file, int line, const char *func, const char *call);

/* Records a LAPACK failure (info != 0). Returns DT_ERR_BLAS. */
DT_MUST_USE dt_status dt_lapack_error(int info, const char *file, int line, const char *func,
                                      const char *call);

#define DT_MPI(call)                                                       \
  do {                                                                     \
    int dt_mpi_rc_ = (call);                                               \
    if (dt_mpi_rc_ != 0) return dt_mpi_error(dt_mpi_rc_, __FILE__, __LINE__, __func__, #call); \
  } while (0)

#define DT_MPI_GOTO(call)                                                 \
  do {                                                                    \
    int dt_mpi_rc_ = (call);                                              \
    if (dt_mpi_rc_ != 0) {                                                \
      st = dt_mpi_error(dt_mpi_rc_, __FILE__, __LINE__, __func__, #call); \
      goto cleanup;                                                       \
    }                                                                     \
  } while (0)

#define DT_LAPACK_GOTO(call)                                                     \
  do {                                                                           \
    int dt_lapack_info_ = (call);                                                \
    if (dt_lapack_info_ != 0) {                                                  \
      st = dt_lapack_error(dt_lapack_info_, __FILE__, __LINE__, __func__, #call); \
      goto cleanup;                                                              \
    }                                                                            \
  } while (0)

#endif
