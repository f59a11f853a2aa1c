#pragma once
// `archsim sweep`: every point of a study, in parallel child processes or over MPI ranks,
// resumable, each finished point written at once.
#include <string>

namespace archsim::cli {

/// Options of `archsim sweep`.
struct SweepArgs {
    std::string study;
    std::string out_dir = "out/sweep";
    int jobs = 0;                 ///< parallel simulations; 0 = one per core
    bool resume = false;          ///< skip points already in DIR's journal
    bool quiet = false;           ///< no progress lines or bar (--quiet); the summary line stays
    bool list = false;            ///< print the plan and run nothing
    std::string traces = "summary";  ///< none | summary (metrics.json kept; the default: rooflines need it) | full (trace.h5 kept too)
};

/// Runs the sweep on this machine with `jobs` child processes (one SystemC simulation each).
/// Every finished point is appended to OUT/results.jsonl (the journal, fsync'ed) and OUT/results.csv
/// and OUT/results.h5 are rewritten (atomically) at once, so a kill loses no finished point; a
/// failing point is recorded with its error and the others go on. Without --resume an OUT that
/// already has a journal is refused. Returns 1 if any point failed, 0 otherwise.
int cmd_sweep(const SweepArgs& a);

/// The same under MPI (`mpirun -n N archsim sweep ...`, N >= 2): rank 0 hands out points and
/// writes every result; the other ranks run `jobs` points at a time (default 1). Returns as
/// cmd_sweep on rank 0, 0 on the others. Only built when Open MPI was found (see main.cpp).
int cmd_sweep_mpi(const SweepArgs& a, int rank, int size);

/// `archsim sweep`: cmd_sweep_mpi when started by mpirun with two or more ranks (and built with
/// MPI), cmd_sweep otherwise.
int run_sweep(const SweepArgs& a);

}  // namespace archsim::cli
