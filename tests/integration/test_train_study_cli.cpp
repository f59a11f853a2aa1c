// Training in workloads and studies: an entry's mode = "train" and its run fields, fields set
// from the command line (--workload-set) and by a study's workload.KEY axes, the setup phase, and
// the training columns of a sweep's results.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/cli.h"
#include "tests/support/temp_file.h"
#include "traces/metric_catalog.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;
const std::string kA100 = kSrc + "/configs/gpu/a100_sxm4_80gb.toml";
const std::string kEntry =
    "[mlp]\nfamily = \"mlp\"\nlayers = 2\nwidth = 128\nactivation = \"sigmoid\"\nmode = \"train\"\noptimizer = \"momentum\"\nsetup = true\n";

/// results.csv as rows of column -> text.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    auto split = [](const std::string& l) {
        std::vector<std::string> out;
        std::string cell;
        bool quoted = false;
        for (const char c : l) {
            if (c == '"') quoted = !quoted;
            else if (c == ',' && !quoted) out.push_back(cell), cell.clear();
            else cell += c;
        }
        out.push_back(cell);
        return out;
    };
    std::getline(in, line);
    const std::vector<std::string> head = split(line);
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
        const std::vector<std::string> cells = split(line);
        std::map<std::string, std::string> row;
        for (size_t i = 0; i < head.size() && i < cells.size(); ++i) row[head[i]] = cells[i];
        rows.push_back(row);
    }
    return rows;
}
}  // namespace

TEST_CASE("a workload entry with mode = \"train\" runs a training step with its own fields, the flags winning", "[e2e][training]") {
    const std::string file = write_temp("archsim_study_mlp.toml", kEntry);
    const std::string out = temp_dir("train_entry");
    const CliResult r = run_archsim("run " + file + "#mlp --batch 16 --arch " + kA100 + " --detail kernel --format json --out " + out);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const json m = json::parse(slurp(out + "/metrics.json"));
    REQUIRE(m.contains("training"));
    const json& t = m["training"];
    CHECK(t["optimizer"] == "momentum");
    CHECK(t["setup_included"] == true);
    // the setup is a phase of its own: the run's latency covers it, the step time does not
    const double setup_s = t["phases"]["setup"]["latency_s"].get<double>();
    CHECK(setup_s > 0);
    CHECK(t["step_time_s"].get<double>() == Approx(m["total"]["latency_s"].get<double>() - setup_s));
    CHECK(t["samples_per_s"].get<double>() == Approx(16 / t["step_time_s"].get<double>()));
    // its floating-point operations: 2 per parameter drawn, 6 per input element, none for the labels
    // and the momentum zeroed (fp16 on the A100: mixed precision, an fp32 master copy converted)
    const int64_t params = 2 * (128 * 128 + 128);
    CHECK(t["phases"]["setup"]["flops"].get<int64_t>() == 2 * params + params + 6 * 16 * 128);
    CHECK(t["phases"]["setup"]["macs"] == 0);
    // every declared training metric is where its name says (a "*" stands for each phase)
    for (const archsim::MetricDecl* d : archsim::metrics_of(archsim::MetricScope::Training)) {
        INFO(d->name);
        const size_t star = d->name.find(".*.");
        auto pointer = [](std::string path) {
            for (char& c : path) c = c == '.' ? '/' : c;
            return json::json_pointer("/" + path);
        };
        if (star == std::string::npos) {
            CHECK(t.contains(pointer(d->name)));
            continue;
        }
        const json& keyed = t.at(pointer(d->name.substr(0, star)));
        REQUIRE(keyed.size() == 5);  // setup, forward, loss, backward, optimizer
        for (const auto& [phase, v] : keyed.items()) CHECK(v.contains(pointer(d->name.substr(star + 3))));
    }
    // a flag given on the command line wins over the entry's field
    const CliResult sgd = run_archsim("run " + file + "#mlp --optimizer sgd --batch 16 --arch " + kA100 + " --detail kernel --format json --out " + out);
    REQUIRE(sgd.exit_code == 0);
    CHECK(json::parse(slurp(out + "/metrics.json"))["training"]["optimizer"] == "sgd");
    // --workload-set changes a field: a wider MLP has (d'/d)^2 the MACs
    const CliResult wide = run_archsim("run " + file + "#mlp --workload-set width=256 --workload-set mode=infer --batch 16 --arch " + kA100 +
                                       " --detail kernel --format json --out " + out);
    INFO(wide.err);
    REQUIRE(wide.exit_code == 0);
    const json w = json::parse(slurp(out + "/metrics.json"));
    CHECK_FALSE(w.contains("training"));
    CHECK(w["total"]["macs"].get<int64_t>() == 16 * 2 * 256 * 256);
    fs::remove_all(out);
}

TEST_CASE("workload sets and run fields are checked: a typo, a bad value, a set on a model file", "[e2e][training]") {
    const std::string file = write_temp("archsim_study_mlp_bad.toml", kEntry);
    const CliResult typo = run_archsim("graph " + file + "#mlp --workload-set widht=256");
    CHECK(typo.exit_code != 0);
    CHECK(typo.err.find("[mlp].widht: not a field of the mlp family") != std::string::npos);
    const CliResult mode = run_archsim("graph " + file + "#mlp --workload-set mode=learn");
    CHECK(mode.exit_code != 0);
    CHECK(mode.err.find("[mlp].mode: 'learn' is not one of infer, train") != std::string::npos);
    const CliResult opt = run_archsim("graph " + file + "#mlp --workload-set optimizer=lamb");
    CHECK(opt.exit_code != 0);
    CHECK(opt.err.find("[mlp].optimizer: 'lamb' is not one of sgd, momentum, adam, adamw") != std::string::npos);
    const CliResult onnx = run_archsim("graph " + kSrc + "/workloads/models/resnet18.onnx --workload-set width=3");
    CHECK(onnx.exit_code != 0);
    CHECK(onnx.err.find("apply to a generated workload") != std::string::npos);
}

TEST_CASE("a study sweeps workload fields and writes the training phases as columns, resumably", "[e2e][training]") {
    const std::string dir = temp_dir("train_study");
    fs::create_directories(dir);
    std::ofstream(dir + "/study.toml") << "name = \"surface\"\nmodels = [\"#mlp\"]\n[workload.mlp]\n" << kEntry.substr(kEntry.find('\n') + 1)
                                       << "[axes]\n\"workload.layers\" = [2, 4]\n\"workload.width\" = [64, 128]\nbatch = [16]\n"
                                       << "[[machine]]\nlabel = \"a100\"\nconfig = \"" << kA100 << "\"\n";
    const CliResult r = run_archsim("sweep " + dir + "/study.toml --out " + dir + "/out --jobs 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rows = read_csv(dir + "/out/results.csv");
    REQUIRE(rows.size() == 4);
    std::map<std::pair<int, int>, double> forward_flops;
    for (const auto& row : rows) {
        CHECK(row.at("status") == "ok");
        const int n = std::stoi(row.at("workload.layers")), d = std::stoi(row.at("workload.width"));
        // the phase columns, and the step time = the run's latency less the setup's
        for (const char* col : {"phase_setup_s", "phase_forward_s", "phase_backward_s", "phase_optimizer_s", "phase_forward_flops",
                                "phase_forward_utilization", "train_step_s", "train_mfu", "train_model_flops"})
            CHECK_FALSE(row.at(col).empty());
        CHECK(std::stod(row.at("train_step_s")) == Approx(std::stod(row.at("latency_s")) - std::stod(row.at("phase_setup_s"))));
        // n square layers of width d at batch 16: the forward's GEMMs are exactly n 16 d^2 MACs
        CHECK(std::stod(row.at("train_model_flops")) == 2.0 * (3 * n - 1) * 16 * d * d);
        forward_flops[{n, d}] = std::stod(row.at("phase_forward_flops"));
    }
    CHECK(forward_flops[{4, 128}] > 3.9 * forward_flops[{2, 64}]);
    // report: a training study's table has the step's own columns, not an inference's
    const CliResult rep = run_archsim("report " + dir + "/out --no-plots");
    REQUIRE(rep.exit_code == 0);
    for (const char* col : {"training steps (4 points", "step_us", "samples/s", "MFU%", "HFU%", "mem_kB", "forward_us", "backward_us",
                            "optimizer_us", "energy_"})
        CHECK(rep.out.find(col) != std::string::npos);
    for (const char* col : {"inf/s", "mJ/inf", "latency_us", "latency_ms"}) CHECK(rep.out.find(col) == std::string::npos);
    // a long table prints its first rows and counts the rest; --all prints them all
    const CliResult two = run_archsim("report " + dir + "/out --no-plots --limit 2");
    CHECK(two.out.find("... and 2 more (the first 2 by latency_s shown; --all prints every row") != std::string::npos);
    const CliResult all = run_archsim("report " + dir + "/out --no-plots --limit 2 --all");
    CHECK(all.out.find("... and") == std::string::npos);
    CHECK(run_archsim("report " + dir + "/out --no-plots --limit 0").exit_code == 2);
    // the point ids depend on the workload fields; a second run finds every point finished
    const CliResult again = run_archsim("sweep " + dir + "/study.toml --out " + dir + "/out --resume");
    CHECK(again.exit_code == 0);
    CHECK(again.err.find("4 finished earlier, 0 to run") != std::string::npos);
    // a workload axis on a model file is an error before anything runs
    std::ofstream(dir + "/bad.toml") << "name = \"bad\"\nmodels = [\"" << kSrc << "/workloads/models/resnet18.onnx\"]\n"
                                     << "[axes]\n\"workload.width\" = [64]\n[[machine]]\nlabel = \"a100\"\nconfig = \"" << kA100 << "\"\n";
    const CliResult bad = run_archsim("sweep " + dir + "/bad.toml --out " + dir + "/bad --list");
    CHECK(bad.exit_code != 0);
    CHECK(bad.err.find("axes.workload.width: sets a field of a generated workload") != std::string::npos);
    fs::remove_all(dir);
}
