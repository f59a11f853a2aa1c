// `archsim compare`: a study run by the sweep engine, resumable, failures recorded, then its table.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string l;
    while (std::getline(ss, l)) out.push_back(l);
    return out;
}
}  // namespace

TEST_CASE("compare runs a study as a sweep: every point, resumed, a failing one recorded", "[e2e][compare]") {
    const std::string dir = temp_dir("study");
    const std::string src = ARCHSIM_SOURCE_DIR;
    std::ofstream(dir + "/layer.csv") << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                         "Num Filter, Strides,\nconv,30,30,3,3,64,64,1,\n";
    std::ofstream(dir + "/broken.onnx") << "this is not a protobuf";
    std::ofstream(dir + "/study.toml") << "name = \"t\"\nmodels = [\"" << src << "/workloads/models/resnet18.onnx\", \"layer.csv\", "
                                       << "\"broken.onnx\"]\n"
                                       << "[[machine]]\nlabel = \"small\"\nconfig = \"" << src
                                       << "/configs/kpu/t256.toml\"\nset = [\"tiles.rows=2\", \"tiles.cols=2\"]\n"
                                       << "[[machine]]\nlabel = \"tpu\"\nconfig = \"" << src << "/configs/tpu/tpu_32x32_ws.toml\"\n";
    CliResult r = run_archsim("compare " + dir + "/study.toml --out " + dir + "/out --jobs 2");
    INFO(r.err);
    CHECK(r.exit_code == 1);  // one model fails on both machines
    auto csv = lines(slurp(dir + "/out/results.csv"));
    REQUIRE(csv.size() == 1 + 2 * 3);
    int ok = 0, failed = 0;
    for (size_t i = 1; i < csv.size(); ++i) {
        if (csv[i].find(",ok,") != std::string::npos) ++ok;
        if (csv[i].find(",failed,") != std::string::npos) {
            ++failed;
            CHECK(csv[i].find("broken.onnx") != std::string::npos);  // the error names the file
        }
    }
    CHECK(ok == 4);
    CHECK(failed == 2);
    CHECK(r.out.find("resnet18") != std::string::npos);  // the table report prints
    CHECK(r.out.find("small") != std::string::npos);
    // a second run resumes: every point is in the journal, nothing runs again
    CliResult again = run_archsim("compare " + dir + "/study.toml --out " + dir + "/out");
    CHECK(again.err.find("6 finished earlier, 0 to run") != std::string::npos);
    CHECK(lines(slurp(dir + "/out/results.csv")) == csv);
    // --force starts over
    CliResult forced = run_archsim("compare " + dir + "/study.toml --out " + dir + "/out --force");
    CHECK(forced.err.find("0 finished earlier, 6 to run") != std::string::npos);
    // a bad override fails before anything runs, naming the study, the machine and the key
    std::ofstream(dir + "/bad.toml") << "name = \"b\"\nmodels = [\"layer.csv\"]\n[[machine]]\nlabel = \"broken\"\nconfig = \"" << src
                                     << "/configs/kpu/t256.toml\"\nset = [\"tiles.rows=0\"]\n";
    CliResult bad = run_archsim("compare " + dir + "/bad.toml --out " + dir + "/bad");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("bad.toml: machine broken: set tiles.rows=0") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("a bad study file is one line naming the file and key", "[e2e][compare]") {
    const std::string dir = temp_dir("badstudy");
    std::ofstream(dir + "/a.toml") << "models = []\n";
    std::ofstream(dir + "/b.toml") << "modles = [\"x.onnx\"]\n";
    std::ofstream(dir + "/c.toml") << "models = [\"missing.onnx\"]\n";
    std::ofstream(dir + "/x.onnx") << "x";
    std::ofstream(dir + "/d.toml") << "models = [\"x.onnx\", \"./x.onnx\"]\n";
    CliResult a = run_archsim("compare " + dir + "/a.toml --out " + dir + "/o");
    CliResult b = run_archsim("compare " + dir + "/b.toml --out " + dir + "/o");
    CliResult c = run_archsim("compare " + dir + "/c.toml --out " + dir + "/o");
    CHECK(a.exit_code == 2);
    CHECK(a.err == "archsim: error: " + dir + "/a.toml: models: must name at least one model\n");
    CHECK(b.err == "archsim: error: " + dir + "/b.toml: modles: unknown key (expected one of axes, description, machine, mode, models, name, skip, workload)\n");
    CHECK(c.err == "archsim: error: " + dir + "/c.toml: models: no such model file '" + dir + "/missing.onnx'\n");
    CliResult d = run_archsim("compare " + dir + "/d.toml --out " + dir + "/o");
    CHECK(d.err == "archsim: error: " + dir + "/d.toml: models: two models named 'x' (results are filed by model name)\n");
    fs::remove_all(dir);
}
