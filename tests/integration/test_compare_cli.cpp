// `archsim compare`: a study of models x machines in child processes, resumable, failures recorded.
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

TEST_CASE("compare runs every point, resumes finished ones, and records a failing one", "[e2e][compare]") {
    const std::string dir = temp_dir("study");
    const std::string src = ARCHSIM_SOURCE_DIR;
    std::ofstream(dir + "/layer.csv") << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                                         "Num Filter, Strides,\nconv,30,30,3,3,64,64,1,\n";
    std::ofstream(dir + "/study.toml") << "name = \"t\"\nmodels = [\"" << src << "/workloads/models/resnet18.onnx\", \"layer.csv\"]\n"
                                       << "[[machine]]\nlabel = \"small\"\nconfig = \"" << src
                                       << "/configs/kpu/t256.toml\"\nset = [\"tiles.rows=2\", \"tiles.cols=2\"]\n"
                                       << "[[machine]]\nlabel = \"tpu\"\nconfig = \"" << src << "/configs/tpu/tpu_32x32_ws.toml\"\n"
                                       << "[[machine]]\nlabel = \"broken\"\nconfig = \"" << src
                                       << "/configs/kpu/t256.toml\"\nset = [\"tiles.rows=0\"]\n";
    CliResult r = run_archsim("compare " + dir + "/study.toml --out " + dir + "/out --jobs 2");
    INFO(r.err);
    CHECK(r.exit_code == 1);  // one machine fails
    auto csv = lines(slurp(dir + "/out/results.csv"));
    REQUIRE(csv.size() == 1 + 3 * 2);
    int ok = 0, failed = 0;
    for (size_t i = 1; i < csv.size(); ++i) {
        if (csv[i].find(",ok,") != std::string::npos) ++ok;
        if (csv[i].find(",failed,") != std::string::npos) {
            ++failed;
            CHECK(csv[i].find("tiles.rows = 0: must be >= 1") != std::string::npos);
        }
    }
    CHECK(ok == 4);
    CHECK(failed == 2);
    CHECK(r.out.find("resnet18             small") != std::string::npos);
    // a second run reuses the finished points and only retries the failed ones
    CliResult again = run_archsim("compare " + dir + "/study.toml --out " + dir + "/out");
    CHECK(again.err.find("6 points (2 models x 3 machines), 2 to run") != std::string::npos);
    CHECK(lines(slurp(dir + "/out/results.csv")) == csv);
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
