// `archsim report OUT` on a serving job's output folder: its figures as `run` prints them, and
// the plots and report.html of tools/plot_serving.py.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/api/process_pool.h"
#include "sim/base/error.h"
#include "tools/archsim/report.h"
#include "tools/archsim/run_print.h"

namespace archsim::cli {

namespace fs = std::filesystem;

bool is_serving_output(const std::string& dir) {
    if (fs::exists(fs::path(dir) / "results.jsonl") || !fs::exists(fs::path(dir) / "last_run.json")) return false;
    std::ifstream in(fs::path(dir) / "last_run.json");
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    return !j.is_discarded() && j.value("mode", std::string()) == "serving";
}

int report_serving(const std::string& dir, bool plots) {
    std::ifstream in(fs::path(dir) / "last_run.json");
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) throw UserError(dir + "/last_run.json", "not JSON (an interrupted run? run it again)");
    print_job(j, "table", dir);
    if (!plots) return 0;
    if (!exited_ok(run_program("/usr/bin/python3", {std::string(ARCHSIM_SOURCE_DIR) + "/tools/plot_serving.py", dir}))) {
        std::fprintf(stderr, "archsim report: the plots failed (tools/plot_serving.py; needs python3-matplotlib)\n");
        return 1;
    }
    std::fprintf(stderr, "archsim report: wrote %s/report.html and its plots/\n", dir.c_str());
    return 0;
}

}  // namespace archsim::cli
