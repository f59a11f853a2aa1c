// archsim report: table, Pareto front, plots and a report.html that headless Chromium renders.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

TEST_CASE("report prints the table and Pareto front and writes plots and report.html", "[e2e][sweep][report]") {
    const std::string src = ARCHSIM_SOURCE_DIR;
    const std::string dir = temp_dir("report");
    std::ofstream(dir + "/study.toml") << "name = \"r\"\nmodels = [\"" << src << "/workloads/models/resnet18.onnx\"]\n"
                                       << "[axes]\nsms = [27, 54, 108]\n[[machine]]\nlabel = \"a100\"\nconfig = \"" << src
                                       << "/configs/gpu/a100_sxm4_80gb.toml\"\n[[machine]]\nlabel = \"t4\"\nconfig = \"" << src
                                       << "/configs/gpu/t4.toml\"\n";
    REQUIRE(run_archsim("sweep " + dir + "/study.toml --out " + dir + "/out --traces summary").exit_code == 0);
    CliResult r = run_archsim("report " + dir + "/out --where machine=a100 --sort energy_j");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("6 finished points (3 shown, 0 failed), sorted by energy_j") != std::string::npos);
    CHECK(r.out.find("Pareto front") != std::string::npos);
    CHECK(r.out.find("t4 ") == std::string::npos);  // filtered out
    for (const char* f : {"plots/latency_energy.png", "plots/latency_energy.svg", "plots/roofline_a100.png",
                          "plots/energy_breakdown.svg", "plots/latency_s_vs_sms.png", "report.html"})
        CHECK(fs::exists(dir + "/out/" + f));
    const std::string page = slurp(dir + "/out/report.html");
    CHECK(page.find("data:image/png;base64,") != std::string::npos);  // self-contained
    CHECK(page.find("Pareto front") != std::string::npos);
    // the page loads in headless Chromium (Debian's chromium, installed by tools/install-deps)
    REQUIRE(std::system("command -v chromium > /dev/null 2>&1") == 0);
    const std::string shot = dir + "/shot.png";
    const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1600 "
                            "--screenshot=" + shot + " file://" + dir + "/out/report.html > " + dir + "/chromium.log 2>&1";
    INFO(slurp(dir + "/chromium.log"));
    CHECK(std::system(cmd.c_str()) == 0);
    REQUIRE(fs::exists(shot));
    CHECK(fs::file_size(shot) > 20000);  // a rendered page, not a blank one
    // bad filters and folders are one line
    CHECK(run_archsim("report " + dir + "/out --where 'latency_s<abc'").exit_code == 2);
    CHECK(run_archsim("report " + dir + "/nothing").exit_code == 2);
    // a misspelled key is an error naming it, not an empty table
    const CliResult typo = run_archsim("report " + dir + "/out --no-plots --where modle=resnet18");
    CHECK(typo.exit_code == 2);
    CHECK(typo.err.find("unknown column 'modle'") != std::string::npos);
    CHECK(run_archsim("report " + dir + "/out --no-plots --sort latncy_s").exit_code == 2);
    // the table's own headers are accepted, in the table's units (ms, mJ)
    const CliResult shown = run_archsim("report " + dir + "/out --no-plots --sort energy_mJ --where 'latency_ms>0'");
    INFO(shown.err);
    CHECK(shown.exit_code == 0);
    CHECK(shown.out.find("(6 shown, 0 failed)") != std::string::npos);
    const CliResult none = run_archsim("report " + dir + "/out --no-plots --where 'latency_ms<0'");
    CHECK(none.exit_code == 1);  // an empty answer is a warning and a non-zero exit, never silent
    CHECK(none.err.find("matches none of the 6 finished points") != std::string::npos);
    fs::remove_all(dir);
}
