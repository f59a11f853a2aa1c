#pragma once
// The state of one sweep, shared by the local and the MPI drivers: the plan, the journal, the
// output files and the progress display.
#include <chrono>
#include <string>
#include <vector>

#include "sim/api/process_pool.h"
#include "sim/api/study.h"
#include "sim/api/sweep_plan.h"
#include "sim/api/sweep_results.h"

namespace archsim {

/// Options of a sweep (`archsim sweep`).
struct SweepArgs {
    std::string study;
    std::string out_dir = "out/sweep";
    int jobs = 0;                 ///< parallel simulations; 0 = one per core
    bool resume = false;          ///< skip points already in DIR's journal
    bool quiet = false;           ///< no progress lines or bar (--quiet); the summary line stays
    bool list = false;            ///< print the plan and run nothing
    std::string traces = "summary";  ///< none | summary (metrics.json kept; the default: rooflines need it) | full (trace.h5 kept too)
};

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
    /// The child `archsim run` of point `i` (sim/api/process_pool.h), its folder OUT/points/<id>/
    /// made fresh.
    ChildTask start(size_t i);
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
    std::string m_journal;
    std::vector<SweepRow> m_rows;  ///< every finished point (journal + this run)
    std::vector<bool> m_finished;
    size_t m_to_run = 0, m_done_now = 0;
    int m_journal_fd = -1;
    bool m_tty = false;
    std::chrono::steady_clock::time_point m_t0;
};

/// Runs the sweep on this machine with `a.jobs` child processes (one SystemC simulation each;
/// 0: one per core). Every finished point is appended to OUT/results.jsonl (the journal,
/// fsync'ed) and OUT/results.csv and OUT/results.h5 are rewritten (atomically) at once, so a kill
/// loses no finished point; a failing point is recorded with its error and the others go on.
/// Without `a.resume` an OUT that already has a journal is refused (UserError). Returns 1 if any
/// point failed, 0 otherwise.
int run_sweep_here(const SweepArgs& a);

}  // namespace archsim
