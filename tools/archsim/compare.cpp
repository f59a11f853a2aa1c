// `archsim compare`: runs every model of a study on every machine, each point in its own child
// process (one SystemC simulation per process), and tabulates the results.
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sim/common/error.h"
#include "sim/config/study.h"
#include "workloads/load_workload.h"
#include "tools/archsim/commands.h"
#include "tools/archsim/spawn.h"


namespace archsim::cli {

namespace fs = std::filesystem;

namespace {

struct Point {
    const StudyMachine* machine = nullptr;
    std::string model;
    std::string dir;
    bool reused = false;
    std::string error;
};

/// Starts `archsim run` for one point; stdout and stderr go to files in the point's folder.
pid_t spawn_point(const std::string& self, const Point& p) {
    std::vector<std::string> args = {"run", p.model, "--arch", p.machine->config, "--out", p.dir, "--format", "json"};
    for (const auto& s : p.machine->sets) {
        args.push_back("--set");
        args.push_back(s);
    }
    return spawn_self(self, args, p.dir + "/report.json", p.dir + "/stderr.log");
}

/// Doubles the quotes of a CSV field that is written between quotes.
std::string csv_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out;
}

/// The table row of one finished point, from its metrics.json.
struct Row {
    std::string model, machine, status, error, top_ops, main_stall;
    double peak_macs_per_cycle = 0, clock_mhz = 0, latency_ms = 0, inferences_per_s = 0, energy_mj = 0, tops_per_w = 0,
           achieved_tops = 0, utilization = 0, dram_mib = 0, stall_share = 0;
};

Row make_row(const Point& p) {
    Row r;
    r.model = workload_name(p.model);
    r.machine = p.machine->label;
    if (!p.error.empty()) {
        r.status = "failed";
        r.error = p.error;
        return r;
    }
    const auto m = nlohmann::json::parse(read_file(p.dir + "/metrics.json"));
    const auto& t = m["total"];
    r.status = "ok";
    r.peak_macs_per_cycle = t["peak_macs_per_cycle"].get<double>();
    r.clock_mhz = m["clock_hz"].get<double>() * 1e-6;
    const double latency_s = t["latency_s"].get<double>();
    const double energy_j = t["energy_j"].get<double>();
    const double ops = 2.0 * t["macs"].get<double>();
    r.latency_ms = latency_s * 1e3;
    r.inferences_per_s = latency_s > 0 ? 1.0 / latency_s : 0;
    r.energy_mj = energy_j * 1e3;
    r.achieved_tops = latency_s > 0 ? ops / latency_s * 1e-12 : 0;
    r.tops_per_w = energy_j > 0 ? ops / energy_j * 1e-12 : 0;
    r.utilization = t["utilization"].get<double>();
    r.dram_mib = t["traffic_bytes"].value("dram", 0.0) / (1024.0 * 1024.0);
    const double cycles = t["latency_cycles"].get<double>();
    r.stall_share = cycles > 0 ? t["stall_cycles"].get<double>() / cycles : 0;
    double worst = 0;
    for (const auto& [cause, v] : t["stall_cycles_by_cause"].items())
        if (v.get<double>() > worst) { worst = v.get<double>(); r.main_stall = cause; }
    std::map<std::string, double> by_type;
    for (const auto& o : m["ops"]) by_type[o["op_type"].get<std::string>()] += o["latency_s"].get<double>();
    std::vector<std::pair<double, std::string>> sorted;
    for (const auto& [k, v] : by_type) sorted.emplace_back(v, k);
    std::sort(sorted.rbegin(), sorted.rend());
    for (size_t i = 0; i < std::min<size_t>(2, sorted.size()); ++i)
        r.top_ops += (i ? " " : "") + fmt::format("{} {:.0f}%", sorted[i].second, latency_s > 0 ? 100 * sorted[i].first / latency_s : 0);
    return r;
}

}  // namespace

int cmd_compare(const std::string& study_file, const std::string& out_dir, int jobs, bool force) {
    const StudySpec study = load_study(study_file);
    bool has_axes = !study.axes.empty() || !study.skips.empty();
    for (const auto& m : study.machines) has_axes = has_axes || !m.axes.empty();
    if (has_axes) throw UserError(study_file, "has axes or skip rules: run it with `archsim sweep` (compare takes models x machines only)");
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec || !fs::is_directory(out_dir)) throw UserError(out_dir, "cannot create the output directory: " + ec.message());
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    if (jobs < 1) jobs = std::max(1u, std::thread::hardware_concurrency());

    std::vector<Point> points;
    for (const auto& m : study.machines)
        for (const auto& model : study.models) {
            Point p;
            p.machine = &m;
            p.model = model;
            p.dir = (fs::path(out_dir) / "points" / m.label / workload_name(model)).string();
            points.push_back(p);
        }
    // A point whose metrics.json exists finished earlier: an interrupted study resumes.
    std::vector<size_t> todo;
    for (size_t i = 0; i < points.size(); ++i) {
        if (!force && fs::exists(points[i].dir + "/metrics.json")) points[i].reused = true;
        else todo.push_back(i);
    }
    std::fprintf(stderr, "archsim compare: %zu points (%zu models x %zu machines), %zu to run, %d jobs\n", points.size(),
                 study.models.size(), study.machines.size(), todo.size(), jobs);
    std::map<pid_t, size_t> running;
    size_t next = 0, done = 0;
    while (next < todo.size() || !running.empty()) {
        while (next < todo.size() && static_cast<int>(running.size()) < jobs) {
            Point& p = points[todo[next++]];
            fs::create_directories(p.dir);
            fs::remove(p.dir + "/metrics.json");
            running[spawn_point(self, p)] = static_cast<size_t>(&p - points.data());
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) break;
        auto it = running.find(pid);
        if (it == running.end()) continue;
        Point& p = points[it->second];
        running.erase(it);
        ++done;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && fs::exists(p.dir + "/metrics.json");
        if (!ok) p.error = last_line(read_file(p.dir + "/stderr.log"));
        std::fprintf(stderr, "[%zu/%zu] %s on %s: %s\n", done, todo.size(), workload_name(p.model).c_str(),
                     p.machine->label.c_str(), ok ? "ok" : ("FAILED: " + p.error).c_str());
    }

    std::vector<Row> rows;
    for (const auto& p : points) rows.push_back(make_row(p));
    std::string csv =
        "model,machine,status,peak_macs_per_cycle,clock_mhz,latency_ms,inferences_per_s,energy_mj,achieved_tops,"
        "tops_per_w,utilization,dram_mib,stall_share,main_stall,top_ops,error\n";
    for (const auto& r : rows)
        csv += fmt::format("{},{},{},{},{},{:.6f},{:.3f},{:.6f},{:.4f},{:.4f},{:.6f},{:.3f},{:.4f},{},{},\"{}\"\n", r.model,
                           r.machine, r.status, r.peak_macs_per_cycle, r.clock_mhz, r.latency_ms, r.inferences_per_s,
                           r.energy_mj, r.achieved_tops, r.tops_per_w, r.utilization, r.dram_mib, r.stall_share,
                           r.main_stall, r.top_ops, csv_escape(r.error));
    const std::string csv_path = (fs::path(out_dir) / "results.csv").string();
    {
        std::ofstream o(csv_path + ".tmp");
        o << csv;
        if (!o) throw UserError(csv_path, "cannot write");
    }
    fs::rename(csv_path + ".tmp", csv_path);

    std::string out = fmt::format("{}: {}\n\n", study.name, study.description);
    out += fmt::format("{:<20} {:<7} {:>9} {:>11} {:>10} {:>10} {:>8} {:>7} {:>9} {:>7}  {}\n", "model", "machine",
                       "MACs/cyc", "latency_ms", "inf/s", "energy_mJ", "TOPS/W", "util%", "DRAM_MiB", "stall%",
                       "dominant operators");
    int failed = 0;
    for (const auto& r : rows) {
        if (r.status != "ok") {
            ++failed;
            out += fmt::format("{:<20} {:<7} FAILED: {}\n", r.model, r.machine, r.error);
            continue;
        }
        out += fmt::format("{:<20} {:<7} {:>9.0f} {:>11.4f} {:>10.1f} {:>10.4f} {:>8.2f} {:>7.1f} {:>9.2f} {:>7.1f}  {}\n",
                           r.model, r.machine, r.peak_macs_per_cycle, r.latency_ms, r.inferences_per_s, r.energy_mj,
                           r.tops_per_w, 100 * r.utilization, r.dram_mib, 100 * r.stall_share, r.top_ops);
    }
    out += fmt::format("\nwrote {}\n", csv_path);
    std::fputs(out.c_str(), stdout);
    return failed ? 1 : 0;
}

}  // namespace archsim::cli
