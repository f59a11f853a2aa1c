#pragma once
// `archsim sweep`: every point of a study, in parallel child processes or over MPI ranks,
// resumable, each finished point written at once.
#include "sim/api/sweep_session.h"

namespace archsim::cli {

/// `archsim sweep` on this machine: with `a.list` prints the plan as CSV and runs nothing, else
/// run_sweep_here (sim/api/sweep_session.h). Returns 1 if any point failed, 0 otherwise.
int cmd_sweep(const SweepArgs& a);

/// The same under MPI (`mpirun -n N archsim sweep ...`, N >= 2): rank 0 hands out points and
/// writes every result; the other ranks run `jobs` points at a time (default 1). Returns as
/// cmd_sweep on rank 0, 0 on the others. Only built when Open MPI was found (see main.cpp).
int cmd_sweep_mpi(const SweepArgs& a, int rank, int size);

/// `archsim sweep`: cmd_sweep_mpi when started by mpirun with two or more ranks (and built with
/// MPI), cmd_sweep otherwise.
int run_sweep(const SweepArgs& a);

}  // namespace archsim::cli
