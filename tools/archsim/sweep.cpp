#include "workloads/load_workload.h"
#include "tools/archsim/sweep.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "sim/base/error.h"
#include "tools/archsim/study.h"
#include "tools/archsim/spawn.h"
#include "tools/archsim/sweep_engine.h"
#include "tools/archsim/sweep_plan.h"
#include "tools/archsim/sweep_results.h"

namespace archsim::cli {

namespace fs = std::filesystem;

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
    SweepSession session(a);
    const int jobs = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<size_t> todo = session.todo();
    session.announce(jobs, 1);
    std::map<pid_t, size_t> running;
    size_t next = 0;
    while (next < todo.size() || !running.empty()) {
        while (next < todo.size() && static_cast<int>(running.size()) < jobs) {
            const size_t i = todo[next++];
            running[session.start(i)] = i;
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) break;
        auto it = running.find(pid);
        if (it == running.end()) continue;
        const size_t i = it->second;
        running.erase(it);
        session.record(session.finish(i, WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    return session.close();
}

}  // namespace archsim::cli

#ifndef ARCHSIM_HAVE_MPI
namespace archsim::cli {
int run_sweep(const SweepArgs& a) { return cmd_sweep(a); }
}  // namespace archsim::cli
#endif
