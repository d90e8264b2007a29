/* Messages for failed MPI and LAPACK calls (see core_impl.h). */
#include <mpi.h>

#include "core_impl.h"

dt_status dt_mpi_error(int rc, const char *file, int line, const char *func, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) text[0] = '\0';
  return dt_error_set(DT_ERR_MPI, file, line, func, "MPI call %s failed with code %d: %s", call,
                      rc, text[0] ? text : "(no description)");
}

dt_status dt_lapack_error(int info, const char *file, int line, const char *func,
                          const char *call) {
  if (info < 0)
    return dt_error_set(DT_ERR_BLAS, file, line, func,
                        "LAPACK call %s rejected argument %d (a bug in dtrun)", call, -info);
  return dt_error_set(DT_ERR_BLAS, file, line, func,
                      "LAPACK call %s failed to converge (info = %d)", call, info);
}
