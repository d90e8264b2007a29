/* The dt_comm structure, shared by comm.c and exchange.c (both include <mpi.h>). */
#ifndef DT_EXCHANGE_IMPL_H
#define DT_EXCHANGE_IMPL_H

#include <mpi.h>

#include "dt/exchange.h"

struct dt_comm {
  MPI_Comm comm;
  int rank, size;
  int host_size; /* ranks on this rank's host (MPI_COMM_TYPE_SHARED) */
  int num_hosts;
  int owns_mpi;
  int mpi; /* 0: one process started without a launcher; MPI was never initialised */
};

#endif
