/* mpi.h - the process level of hierarchical collectives: an rt_interprocess
 * over MPI (non-blocking collectives polled against a deadline, so a peer
 * that died or stopped makes the others fail instead of hang). */
#ifndef MGC_MPI_H
#define MGC_MPI_H

#include <stddef.h>

#include "backend.h"

/* Under mpirun with two or more processes: initializes MPI and returns the
 * process group (rank, size, all_reduce_sum, broadcast). Otherwise returns
 * NULL: with err "" when this is simply one process (not started by mpirun,
 * or -np 1), with a message when MPI failed or this build has no MPI.
 * When MPI_Init has not finished after timeout_s (a peer froze or never
 * started), prints a collective timeout message and ends the process with
 * status 1. */
rt_interprocess *rt_mpi_init(double timeout_s, char *err, size_t cap);

/* Ends MPI (NULL: no-op). After a collective across processes failed, a
 * peer may be gone and MPI_Finalize could wait for it forever: then only the
 * state is freed, and the caller should exit with a nonzero status (mpirun
 * then ends the job) or call rt_mpi_abort. */
void rt_mpi_finalize(rt_interprocess *ip);

/* Stops every process of the job with exit code `code` (never returns). */
void rt_mpi_abort(rt_interprocess *ip, int code);

#endif
