// `archsim compare`: a study run as a sweep (the one study engine), then its table.
#include <filesystem>

#include "tools/archsim/commands.h"
#include "tools/archsim/report.h"
#include "tools/archsim/sweep.h"

namespace archsim::cli {

namespace fs = std::filesystem;

int cmd_compare(const std::string& study_file, const std::string& out_dir, int jobs, bool force) {
    SweepArgs a;
    a.study = study_file;
    a.out_dir = out_dir;
    a.jobs = jobs;
    a.traces = "summary";  // each point keeps its metrics.json
    const fs::path journal = fs::path(out_dir) / "results.jsonl";
    if (force) {  // start over: the sweep refuses a folder with a journal unless it resumes
        std::error_code ec;
        for (const char* f : {"results.jsonl", "results.csv", "results.h5"}) fs::remove(fs::path(out_dir) / f, ec);
    }
    a.resume = fs::exists(journal);  // an interrupted (or finished) study resumes: its points are reused
    const int rc = run_sweep(a);
    ReportArgs r;
    r.dirs = {out_dir};
    r.plots = false;
    const int shown = cmd_report(r);
    return rc ? rc : shown;
}

}  // namespace archsim::cli
