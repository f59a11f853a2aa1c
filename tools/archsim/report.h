#pragma once
// `archsim report DIR`: the results of a sweep as a table, its Pareto front, plots and report.html.
#include <string>
#include <vector>

namespace archsim::cli {

/// Options of `archsim report`.
struct ReportArgs {
    std::vector<std::string> dirs;    ///< sweeps' --out folders: one study, or several side by side
    std::string out_dir;              ///< where plots/ and report.html go: the folder itself for one
                                      ///< study; required for several
    std::vector<std::string> where;   ///< filters: KEY=VALUE, KEY!=VALUE, KEY<NUMBER, KEY>NUMBER
    std::string sort = "latency_s";   ///< column to sort the table by (ascending)
    bool plots = true;                ///< run tools/plot_sweep.py for the plots and report.html
    int64_t limit = 40;               ///< rows a table prints (the first, sorted); a line counts the rest
    bool all = false;                 ///< print every row, whatever `limit`
};

/// Prints the finished points of each folder (from its journal) that pass every filter, sorted
/// (inferences and training steps in tables of their own, each with its own metrics; each table
/// its first `limit` rows and a count of the rest unless `all`), and, per model, the Pareto
/// front of latency vs energy among them; with several folders each
/// row names its study (the study file's `name`) in a `study` column. Then writes plots/ and
/// report.html under the folder (or --out for several) with tools/plot_sweep.py (Debian's
/// python3-matplotlib and python3-h5py). Keys are model, machine, kind, study, any axis key, the
/// results columns and the table's own headers in its units (latency_ms). Throws UserError for a
/// folder without results, a malformed filter, an unknown column or several folders without
/// --out; returns 1 when the filters leave nothing of finished points, or the plotting fails.
int cmd_report(const ReportArgs& a);

/// Whether `dir` is a serving job's output (last_run.json with mode "serving", no sweep journal).
bool is_serving_output(const std::string& dir);

/// `archsim report OUT` on a serving job's output: its figures as `run` prints them and, with
/// `plots`, OUT/plots/ and OUT/report.html from tools/plot_serving.py (latency percentiles per
/// phase and pooled; queue, KV cache, power and energy per token over time). Throws UserError
/// for an unreadable last_run.json; returns 1 when the plotting fails.
int report_serving(const std::string& dir, bool plots);

}  // namespace archsim::cli
