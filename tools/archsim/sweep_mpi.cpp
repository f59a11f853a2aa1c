// `archsim sweep` over MPI ranks (Open MPI): rank 0 hands out points and writes the results;
// every other rank runs the points it is given, one at a time, in child processes.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/base/error.h"
#include "sim/api/process_pool.h"
#include "tools/archsim/sweep.h"

namespace archsim::cli {

namespace {
constexpr int kTagRequest = 1;  ///< worker -> 0: "give me a point", with the previous point's journal line
constexpr int kTagAssign = 2;   ///< 0 -> worker: a point index, or -1 for "no more"
}  // namespace

int cmd_sweep_mpi(const SweepArgs& a, int rank, int size) {
    if (rank == 0) {
        SweepSession session(a, true);
        const std::vector<size_t> todo = session.todo();
        session.announce(1, size);
        size_t next = 0;
        int active = size - 1;
        while (active > 0) {
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &st);
            int len = 0;
            MPI_Get_count(&st, MPI_CHAR, &len);
            std::string line(static_cast<size_t>(len), '\0');
            MPI_Recv(line.data(), len, MPI_CHAR, st.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            SweepRow row;
            if (!line.empty() && parse_journal_line(line, row)) session.record(row);
            long long index = next < todo.size() ? static_cast<long long>(todo[next++]) : -1;
            if (index < 0) --active;
            MPI_Send(&index, 1, MPI_LONG_LONG, st.MPI_SOURCE, kTagAssign, MPI_COMM_WORLD);
        }
        return session.close();
    }
    SweepSession session(a, false);
    std::string line;  // the previous point's result
    while (true) {
        MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, kTagRequest, MPI_COMM_WORLD);
        long long index = -1;
        MPI_Recv(&index, 1, MPI_LONG_LONG, 0, kTagAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (index < 0) break;
        const int status = run_child(self_program(), session.start(static_cast<size_t>(index)));
        line = journal_line(session.finish(static_cast<size_t>(index), exited_ok(status)));
    }
    return 0;
}

int run_sweep(const SweepArgs& a) {
    const bool under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE");
    if (!under_mpirun) return cmd_sweep(a);
    MPI_Init(nullptr, nullptr);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = 0;
    try {
        rc = size > 1 ? cmd_sweep_mpi(a, rank, size) : cmd_sweep(a);
    } catch (const UserError& e) {
        if (rank == 0) std::fprintf(stderr, "archsim: error: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return rc;
}

}  // namespace archsim::cli
