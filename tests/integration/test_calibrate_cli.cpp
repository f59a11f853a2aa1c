// archsim calibrate: the quick run produces its CSV and report, --apply writes a config the
// model accepts, and a second run resumes from the CSV instead of measuring again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
size_t count_lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }
}  // namespace

TEST_CASE("calibrate --quick writes its CSV and report and resumes", "[e2e][cpu][calibrate]") {
    const std::string dir = temp_dir("calibrate");
    fs::create_directories(dir);
    // a config of this machine (tools/cpu-config): a config written elsewhere is not calibrated here
    const std::string host = dir + "/host.toml";
    REQUIRE(std::system(("bash " + std::string(ARCHSIM_SOURCE_DIR) + "/tools/cpu-config " + host).c_str()) == 0);
    CliResult r = run_archsim("calibrate --arch " + host + " --quick --scenario l2_fit --apply --out " + dir);
    INFO(r.err);
    REQUIRE((r.exit_code == 0 || r.exit_code == 2));
    const std::string csv = slurp(dir + "/calibration.csv");
    CHECK(csv.rfind("id,scenario,kind,shape,bytes,flop_per_byte,measured_s,spread_pct,predicted_s,error_pct\n", 0) == 0);
    const size_t rows = count_lines(csv) - 1;
    CHECK(rows == 3);  // l2_fit, quick: a square matmul, a GEMV-like matmul, a 3x3 convolution
    // the cases are simulated as they are timed, oneDNN called directly (runtime none): the M = 1
    // matmul reads its weights in place; under the CPU's default runtime (torch-frozen) it went to
    // the BLAS, which packs the weights at every call (1.9-2.9x slower than oneDNN measured)
    int gemv = 0;
    for (const auto& e : fs::directory_iterator(dir + "/runs")) {
        const json m = json::parse(slurp((e.path() / "metrics.json").string()));
        CHECK(m["runtime"] == "none");
        if (e.path().filename().string().find("_matmul_1x") == std::string::npos) continue;
        ++gemv;
        // at most its input row is packed (a few KiB), never its weights (half the L2)
        for (const auto& op : m["ops"]) CHECK(op["traffic_bytes"].value("packing", 0.0) <= 8192.0);
    }
    CHECK(gemv == 1);
    const std::string md = slurp(dir + "/calibration.md");
    for (const char* s : {"MAPE", "R^2", "compute-bound", "Recommended coefficients", "efficiency.gemm", "clock_mhz"})
        CHECK(md.find(s) != std::string::npos);
    // the MAPE over all cases with the config as given, then with the fitted coefficients
    std::vector<double> mape;
    for (size_t at = md.find("| all | "); at != std::string::npos; at = md.find("| all | ", at + 1)) {
        const size_t col = md.find(" | ", at + 8) + 3;
        mape.push_back(std::stod(md.substr(col)));
    }
    REQUIRE(mape.size() == 2);
    const std::string applied = dir + "/host.calibrated.toml";
    if (mape[1] < mape[0]) {  // the fit improved: the calibrated copy is written, and a valid config
        CHECK(r.exit_code == 0);
        REQUIRE(fs::exists(applied));
        CliResult run = run_archsim("run " + std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx --arch " + applied +
                                    " --out " + dir + "/run");
        CHECK(run.exit_code == 0);
    } else {  // a fit that does not improve is never applied
        CHECK(r.exit_code == 2);
        CHECK_FALSE(fs::exists(applied));
        CHECK(r.err.find("not applied: the fitted coefficients make the fit worse") != std::string::npos);
    }
    // resume: nothing new measured, the CSV keeps its rows
    CliResult again = run_archsim("calibrate --arch " + host + " --quick --scenario l2_fit --out " + dir);
    CHECK(again.exit_code == 0);
    CHECK(count_lines(slurp(dir + "/calibration.csv")) - 1 == rows);
    // a bad scenario or a non-CPU config is one line
    CHECK(run_archsim("calibrate --arch " + host + " --scenario l9_fit").exit_code != 0);
    CliResult tpu = run_archsim("calibrate --arch " + std::string(ARCHSIM_SOURCE_DIR) + "/configs/tpu/tpu_v1.toml --out " + dir);
    CHECK(tpu.exit_code == 2);
    CHECK(tpu.err.find("kind = \"cpu\"") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("a CPU config written on another machine says so when run, and is not calibrated here", "[e2e][cpu][calibrate]") {
    const std::string dir = temp_dir("host_cpu");
    fs::create_directories(dir);
    const std::string foreign = dir + "/foreign.toml";
    std::ofstream(foreign) << std::regex_replace(slurp(std::string(ARCHSIM_SOURCE_DIR) + "/configs/cpu/host.toml"),
                                                 std::regex("host\\.cpu = [^\n]*"),
                                                 "host.cpu = \"Imaginary CPU, family 99 model 9, 1024 CPUs\"");
    const std::string model = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx";
    const CliResult run = run_archsim("run " + model + " --arch " + foreign + " --out " + dir + "/run --quiet");
    CHECK(run.exit_code == 0);
    CHECK(run.err.find("foreign.toml: host.cpu: this config describes 'Imaginary CPU, family 99 model 9, 1024 CPUs', not this machine") !=
          std::string::npos);
    const CliResult cal = run_archsim("calibrate --arch " + foreign + " --quick --scenario l1_fit --apply --out " + dir + "/cal");
    CHECK(cal.exit_code == 2);
    CHECK(cal.err.find("--apply: ") != std::string::npos);
    CHECK(cal.err.find("write a config for this machine with tools/cpu-config") != std::string::npos);
    // tools/cpu-config's config names this machine: no warning
    const std::string mine = dir + "/mine.toml";
    REQUIRE(std::system(("bash " + std::string(ARCHSIM_SOURCE_DIR) + "/tools/cpu-config " + mine).c_str()) == 0);
    CHECK(slurp(mine).find("host.cpu = \"") != std::string::npos);
    const CliResult here = run_archsim("run " + model + " --arch " + mine + " --out " + dir + "/run2 --quiet");
    CHECK(here.exit_code == 0);
    CHECK(here.err.find("host.cpu") == std::string::npos);
    fs::remove_all(dir);
}
