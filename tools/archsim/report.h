#pragma once
// `archsim report DIR`: the results of a sweep as a table, its Pareto front, plots and report.html.
#include <string>
#include <vector>

namespace archsim::cli {

/// Options of `archsim report`.
struct ReportArgs {
    std::string dir;                  ///< a sweep's --out folder
    std::vector<std::string> where;   ///< filters: KEY=VALUE, KEY!=VALUE, KEY<NUMBER, KEY>NUMBER
    std::string sort = "latency_s";   ///< column to sort the table by (ascending)
    bool plots = true;                ///< run tools/plot_sweep.py for the plots and report.html
};

/// Prints the finished points of DIR (from its journal) that pass every filter, sorted, and, per
/// model, the Pareto front of latency vs energy among them; then writes DIR/plots/ and DIR/report.html with
/// tools/plot_sweep.py (Debian's python3-matplotlib and python3-h5py). Keys are model, machine,
/// kind, status, any axis key and the numeric totals (latency_s, energy_j, throughput_per_s,
/// utilization, macs). Throws UserError for a folder without results, a malformed filter or an
/// unknown sort key; returns 1 if the plotting script fails.
int cmd_report(const ReportArgs& a);

}  // namespace archsim::cli
