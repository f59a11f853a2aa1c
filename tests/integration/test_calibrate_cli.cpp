// archsim calibrate: the quick run produces its CSV and report, --apply writes a config the
// model accepts, and a second run resumes from the CSV instead of measuring again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

namespace {
size_t count_lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }
}  // namespace

TEST_CASE("calibrate --quick writes its CSV and report and resumes", "[e2e][cpu][calibrate]") {
    const std::string dir = temp_dir("calibrate");
    const std::string host = std::string(ARCHSIM_SOURCE_DIR) + "/configs/cpu/host.toml";
    CliResult r = run_archsim("calibrate --arch " + host + " --quick --scenario l2_fit --apply --out " + dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string csv = slurp(dir + "/calibration.csv");
    CHECK(csv.rfind("id,scenario,kind,shape,bytes,flop_per_byte,measured_s,spread_pct,predicted_s,error_pct\n", 0) == 0);
    const size_t rows = count_lines(csv) - 1;
    CHECK(rows == 3);  // l2_fit, quick: a square matmul, a GEMV-like matmul, a 3x3 convolution
    const std::string md = slurp(dir + "/calibration.md");
    for (const char* s : {"MAPE", "R^2", "compute-bound", "Recommended coefficients", "efficiency.gemm", "clock_mhz"})
        CHECK(md.find(s) != std::string::npos);
    // the calibrated copy is a valid config
    const std::string applied = dir + "/host.calibrated.toml";
    REQUIRE(fs::exists(applied));
    CliResult run = run_archsim("run " + std::string(ARCHSIM_SOURCE_DIR) + "/workloads/models/resnet18.onnx --arch " + applied +
                                " --out " + dir + "/run");
    CHECK(run.exit_code == 0);
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
