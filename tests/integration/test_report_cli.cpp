// archsim report: table, Pareto front, plots and a report.html that headless Chromium renders.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

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
    CHECK(r.out.find("6 finished points (3 pass the filters, 0 failed), sorted by energy_j") != std::string::npos);
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
    CHECK(shown.out.find("(6 pass the filters, 0 failed)") != std::string::npos);
    const CliResult none = run_archsim("report " + dir + "/out --no-plots --where 'latency_ms<0'");
    CHECK(none.exit_code == 1);  // an empty answer is a warning and a non-zero exit, never silent
    CHECK(none.err.find("matches none of the 6 finished points") != std::string::npos);
    fs::remove_all(dir);
}

namespace {

/// The visible text of an SVG written with svg.fonttype = none: every <text> and <tspan> body.
std::string svg_text(const std::string& svg) {
    std::string out;
    const std::regex text(R"(<(?:text|tspan)[^>]*>([^<]*)<)");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) out += (*it)[1].str() + "\n";
    return out;
}

}  // namespace

TEST_CASE("every plot of the bundled KPU fabric study stands alone (title, units, legend) and report.html renders in Chromium",
          "[e2e][sweep][report][plots]") {
    if (!have_shared()) {
        WARN("../shared not present; skipped");
        return;
    }
    const std::string src = ARCHSIM_SOURCE_DIR;
    const std::string dir = temp_dir("gallery");
    const CliResult sw = run_archsim("sweep " + src + "/configs/studies/kpu_fabric_sizes.toml --out " + dir + "/fabric");
    INFO(sw.err);
    REQUIRE(sw.exit_code == 0);
    // the log names each point by its swept values, not its hash
    CHECK(sw.err.find("on fabric (tiles.rows,tiles.cols=16, power_mode=mid)") != std::string::npos);
    const CliResult rep = run_archsim("report " + dir + "/fabric");
    INFO(rep.err);
    REQUIRE(rep.exit_code == 0);
    // the published design points carry their own fabric size in the table
    CHECK(std::regex_search(rep.out, std::regex(R"(\nT256 +resnet50 +(low|mid|high) +16 )")));
    CHECK(std::regex_search(rep.out, std::regex(R"(\nT768 +resnet50 +(low|mid|high) +32x24 )")));
    // each published part in each of its power modes, every point inside its mode's envelope
    CHECK(std::regex_search(rep.out, std::regex(R"(\nT64 +resnet50 +low +8 )")));
    std::vector<std::string> svgs;
    for (const auto& e : fs::directory_iterator(dir + "/fabric/plots"))
        if (e.path().extension() == ".svg") svgs.push_back(e.path().string());
    std::sort(svgs.begin(), svgs.end());
    REQUIRE(svgs.size() >= 10);  // latency-energy, 4 metrics against the size, 4 rooflines, the energy split
    const std::regex unit(R"(\((s|ms|us|ns|ps|J|mJ|uJ|nJ|pJ|%|inferences/s|TOPS|GOPS|TFLOP/s|GFLOP/s)\))");
    std::string gallery = "<!DOCTYPE html><html><body>";
    for (const auto& svg : svgs) {
        INFO(svg);
        const std::string text = svg_text(slurp(svg));
        CHECK(text.find("kpu_fabric_sizes:") != std::string::npos);  // its title names the study
        CHECK(std::regex_search(text, unit));                         // an axis in a stated unit
        CHECK(text.find("TFLOP/s") == std::string::npos);             // an int8 machine's rate is TOPS
        // a legend naming the series: the models, or the components of the energy split
        CHECK((text.find("resnet50") != std::string::npos || text.find("component") != std::string::npos));
        gallery += "<img src='file://" + svg + "' width='900'>";
    }
    // the swept fabric against its size marks the design points, and the rooflines draw each size's roof
    CHECK(svg_text(slurp(dir + "/fabric/plots/latency_s_vs_tiles_rows_tiles_cols.svg")).find("design points: T256 at 16, T64 at 8") !=
          std::string::npos);
    CHECK(svg_text(slurp(dir + "/fabric/plots/roofline_fabric.svg")).find("tiles.rows = tiles.cols = 32") != std::string::npos);
    std::ofstream(dir + "/gallery.html") << gallery << "</body></html>";
    REQUIRE(std::system("command -v chromium > /dev/null 2>&1") == 0);
    for (const char* page : {"gallery.html", "fabric/report.html"}) {
        INFO(page);
        const std::string shot = dir + "/shot.png";
        fs::remove(shot);
        const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --allow-file-access-from-files "
                                "--hide-scrollbars --window-size=1000,4000 --screenshot=" + shot + " file://" + dir + "/" + page +
                                " > " + dir + "/chromium.log 2>&1";
        INFO(slurp(dir + "/chromium.log"));
        CHECK(std::system(cmd.c_str()) == 0);
        REQUIRE(fs::exists(shot));
        CHECK(fs::file_size(shot) > 50000);  // drawn plots, not a blank page
    }
    // the page as Chromium builds it: captions are the plots' titles, table headers carry units
    const std::string dom_cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom file://" + dir +
                                "/fabric/report.html > " + dir + "/dom.html 2> " + dir + "/chromium.log";
    CHECK(std::system(dom_cmd.c_str()) == 0);
    const std::string dom = slurp(dir + "/dom.html");
    CHECK(dom.find("<figcaption>kpu_fabric_sizes: latency against tiles.rows = tiles.cols") != std::string::npos);
    CHECK(std::regex_search(dom, std::regex(R"(<th>latency \((s|ms|us)\)</th>)")));
    CHECK(dom.find("<th>MAC utilization (%)</th>") != std::string::npos);
    // two studies side by side, with a study column
    REQUIRE(run_archsim("sweep " + src + "/configs/studies/kpu_fabric_sizes_ideal_dram.toml --out " + dir + "/ideal").exit_code == 0);
    CHECK(run_archsim("report " + dir + "/fabric " + dir + "/ideal --no-plots").out.find("kpu_fabric_sizes_ideal_dram ") != std::string::npos);
    CHECK(run_archsim("report " + dir + "/fabric " + dir + "/ideal").exit_code == 2);  // several: --out needed
    const CliResult both = run_archsim("report " + dir + "/fabric " + dir + "/ideal --out " + dir + "/both --where model=resnet50");
    INFO(both.err);
    CHECK(both.exit_code == 0);
    CHECK(fs::exists(dir + "/both/report.html"));
    CHECK(slurp(dir + "/both/report.html").find("<th>study</th>") != std::string::npos);
    fs::remove_all(dir);
}
