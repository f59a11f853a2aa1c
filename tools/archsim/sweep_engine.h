#pragma once
// The state of one sweep, shared by the local and the MPI drivers: the plan, the journal, the
// output files and the progress display.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tools/archsim/study.h"
#include "tools/archsim/sweep.h"
#include "tools/archsim/sweep_plan.h"
#include "tools/archsim/sweep_results.h"

namespace archsim::cli {

/// A sweep in OUT: loads and expands the study, reads OUT/results.jsonl (refusing an existing
/// one unless --resume), and knows which points are left. `writer` false (MPI workers) opens
/// nothing for writing but the point folders. Throws UserError on a bad study, OUT or option.
class SweepSession {
public:
    explicit SweepSession(const SweepArgs& a, bool writer = true);

    /// Indices of the points not finished yet, in plan order.
    std::vector<size_t> todo() const;
    /// Prints the plan's size and what will run to stderr.
    void announce(int jobs, int ranks) const;
    /// Starts point `i` in a child process (OUT/points/<id>/); returns its pid.
    pid_t start(size_t i);
    /// The row of point `i` after its child exited (`exited_ok`: exit status 0); applies the
    /// --traces policy to the point's folder.
    SweepRow finish(size_t i, bool exited_ok);
    /// Appends `row` to the journal (fsync'ed), rewrites results.csv and results.h5, and advances
    /// the progress display.
    void record(const SweepRow& row);
    /// Final results files and the summary line; returns 1 if a point failed, else 0.
    int close();

    const SweepPlan& plan() const { return m_plan; }

private:
    void progress(const SweepRow& row);

    SweepArgs m_args;
    StudySpec m_study;
    SweepPlan m_plan;
    std::string m_self, m_journal;
    std::vector<SweepRow> m_rows;  ///< every finished point (journal + this run)
    std::vector<bool> m_finished;
    size_t m_to_run = 0, m_done_now = 0;
    int m_journal_fd = -1;
    bool m_tty = false;
    std::chrono::steady_clock::time_point m_t0;
};

}  // namespace archsim::cli
