#include "tools/archsim/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "sim/api/study.h"
#include "sim/api/sweep_plan.h"
#include "workloads/graph/workload_ref.h"

namespace archsim::cli {

int cmd_sweep(const SweepArgs& a) {
    if (a.list) {
        const SweepPlan plan = plan_sweep(load_study(a.study));
        std::string out = "index,id,machine,model";
        for (const auto& k : plan.axis_keys) out += "," + (k.find(',') == std::string::npos ? k : "\"" + k + "\"");
        out += "\n";
        for (const auto& p : plan.points) {
            out += fmt::format("{},{},{},{}", p.index, p.id, p.machine, workload_name(p.model));
            for (const auto& k : plan.axis_keys) {
                auto it = std::find_if(p.axes.begin(), p.axes.end(), [&](const auto& x) { return x.first == k; });
                out += "," + (it == p.axes.end() ? std::string() : it->second);
            }
            out += "\n";
        }
        std::fputs(out.c_str(), stdout);
        std::fprintf(stderr, "archsim sweep: %zu points, %zu skipped by rules\n", plan.points.size(), plan.skipped);
        return 0;
    }
    return run_sweep_here(a);
}

}  // namespace archsim::cli

#ifndef ARCHSIM_HAVE_MPI
namespace archsim::cli {
int run_sweep(const SweepArgs& a) { return cmd_sweep(a); }
}  // namespace archsim::cli
#endif
