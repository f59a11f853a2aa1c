// archsim sweep: point ids, resume after a kill, identical results for any number of jobs or MPI
// ranks, failing points recorded.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;

/// A 12-point study: resnet18 on the A100 config, sms x batch x precision (3 x 2 x 2).
std::string write_study(const std::string& dir, const std::string& extra = "", const std::string& sms = "[54, 108, 27]") {
    const std::string path = dir + "/study.toml";
    std::ofstream(path) << "name = \"t\"\nmodels = [\"" << kSrc << "/workloads/models/resnet18.onnx\"]\n" << extra
                        << "[axes]\nsms = " << sms << "\nbatch = [1, 2]\nprecision = [\"fp16\", \"int8\"]\n"
                        << "[[machine]]\nlabel = \"a100\"\nconfig = \"" << kSrc << "/configs/gpu/a100_sxm4_80gb.toml\"\n";
    return path;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string l; std::getline(ss, l);)
        if (!l.empty()) out.push_back(l);
    return out;
}

/// results.csv without its trace column values (paths differ between output folders).
std::string results(const std::string& out) { return slurp(out + "/results.csv"); }
}  // namespace

TEST_CASE("sweep point ids are stable and survive extending the study", "[e2e][sweep]") {
    const std::string dir = temp_dir("sweep_ids");
    const std::string study = write_study(dir);
    CliResult a = run_archsim("sweep " + study + " --list");
    CliResult b = run_archsim("sweep " + study + " --list");
    REQUIRE(a.exit_code == 0);
    CHECK(a.out == b.out);
    const auto rows = lines_of(a.out);
    REQUIRE(rows.size() == 1 + 12);
    std::set<std::string> ids;
    for (size_t i = 1; i < rows.size(); ++i) ids.insert(rows[i].substr(rows[i].find(',') + 1, 16));
    CHECK(ids.size() == 12);
    // one more sms value: 4 new points, the 12 old ids unchanged
    const std::string dir2 = temp_dir("sweep_ids2");
    const std::string bigger = write_study(dir2, "", "[54, 108, 27, 80]");
    CliResult c = run_archsim("sweep " + bigger + " --list");
    std::set<std::string> ids2;
    for (const auto& l : lines_of(c.out)) ids2.insert(l.substr(l.find(',') + 1, 16));
    for (const auto& id : ids) CHECK(ids2.count(id) == 1);
    CHECK(lines_of(c.out).size() == 1 + 16);
    fs::remove_all(dir);
    fs::remove_all(dir2);
}

TEST_CASE("a sweep killed with SIGKILL resumes and runs every point exactly once", "[e2e][sweep]") {
    const std::string dir = temp_dir("sweep_kill");
    const std::string study = write_study(dir);
    const std::string out = dir + "/out";
    const std::string cmd = std::string(ARCHSIM_BIN) + " sweep " + study + " --out " + out + " --jobs 1";
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > /dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    // wait for at least two finished points, then kill the sweep mid-run
    for (int i = 0; i < 600 && lines_of(slurp(out + "/results.jsonl")).size() < 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    const size_t before = lines_of(slurp(out + "/results.jsonl")).size();
    CHECK(before >= 2);
    CHECK(before < 12);
    // without --resume the folder is refused; with it the rest runs
    CHECK(run_archsim("sweep " + study + " --out " + out).exit_code == 2);
    CliResult r = run_archsim("sweep " + study + " --out " + out + " --resume --jobs 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto journal = lines_of(slurp(out + "/results.jsonl"));
    std::set<std::string> ids;
    for (const auto& l : journal) ids.insert(l.substr(l.find("\"id\":\"") + 6, 16));
    CHECK(journal.size() == 12);  // every point exactly once
    CHECK(ids.size() == 12);
    CHECK(lines_of(results(out)).size() == 1 + 12);
    CHECK(fs::exists(out + "/results.h5"));
    // the same study from scratch gives the same results
    CliResult fresh = run_archsim("sweep " + study + " --out " + dir + "/fresh --jobs 1");
    REQUIRE(fresh.exit_code == 0);
    CHECK(results(dir + "/fresh") == results(out));
    fs::remove_all(dir);
}

TEST_CASE("sweep results are identical for 1 and 2 jobs and for 1 and 3 MPI ranks", "[e2e][sweep][mpi]") {
    const std::string dir = temp_dir("sweep_jobs");
    const std::string study = write_study(dir);
    REQUIRE(run_archsim("sweep " + study + " --out " + dir + "/j1 --jobs 1").exit_code == 0);
    REQUIRE(run_archsim("sweep " + study + " --out " + dir + "/j2 --jobs 2").exit_code == 0);
    CHECK(results(dir + "/j1") == results(dir + "/j2"));
    CHECK(lines_of(results(dir + "/j1")).size() == 1 + 12);
    if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
        WARN("mpirun not installed; MPI part skipped");
    } else {
        for (int ranks : {1, 3}) {
            const std::string out = dir + "/mpi" + std::to_string(ranks);
            const std::string cmd = "mpirun --allow-run-as-root --oversubscribe -n " + std::to_string(ranks) + " " + ARCHSIM_BIN +
                                    " sweep " + study + " --out " + out + " > " + dir + "/mpi.log 2>&1";
            INFO(slurp(dir + "/mpi.log"));
            REQUIRE(std::system(cmd.c_str()) == 0);
            CHECK(results(out) == results(dir + "/j1"));
        }
    }
    fs::remove_all(dir);
}

TEST_CASE("a failing point is recorded and the others finish", "[e2e][sweep]") {
    const std::string dir = temp_dir("sweep_fail");
    std::ofstream(dir + "/broken.onnx") << "this is not a protobuf";
    const std::string study = dir + "/study.toml";
    std::ofstream(study) << "name = \"f\"\nmodels = [\"" << kSrc << "/workloads/models/resnet18.onnx\", \"broken.onnx\"]\n"
                         << "[[machine]]\nlabel = \"a100\"\nconfig = \"" << kSrc << "/configs/gpu/a100_sxm4_80gb.toml\"\n"
                         << "axes = { sms = [54, 108] }\n";
    CliResult r = run_archsim("sweep " + study + " --out " + dir + "/out --traces summary");
    CHECK(r.exit_code == 1);
    const auto rows = lines_of(results(dir + "/out"));
    REQUIRE(rows.size() == 1 + 4);
    int ok = 0, failed = 0;
    for (size_t i = 1; i < rows.size(); ++i) {
        if (rows[i].find(",ok,") != std::string::npos) ++ok;
        if (rows[i].find(",failed,") != std::string::npos) {
            ++failed;
            CHECK(rows[i].find("broken.onnx") != std::string::npos);  // the error names the file
        }
    }
    CHECK(ok == 2);
    CHECK(failed == 2);
    // --traces summary keeps metrics.json and no trace
    size_t metrics = 0, traces = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir + "/out/points")) {
        metrics += e.path().filename() == "metrics.json";
        traces += e.path().filename() == "trace.h5";
    }
    CHECK(metrics == 2);
    CHECK(traces == 0);
    // a bad axis key fails before anything runs, naming the study and the key
    std::ofstream(dir + "/bad.toml") << "name = \"b\"\nmodels = [\"" << kSrc << "/workloads/models/resnet18.onnx\"]\n"
                                     << "[axes]\n\"array.rowz\" = [1]\n[[machine]]\nlabel = \"m\"\nconfig = \"" << kSrc
                                     << "/configs/tpu/tpu_v1.toml\"\n";
    CliResult bad = run_archsim("sweep " + dir + "/bad.toml --out " + dir + "/bad");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("bad.toml: machine m") != std::string::npos);
    CHECK(bad.err.find("array.rowz") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("a study holds its own generated workloads and their tags reach the results", "[e2e][sweep][generators]") {
    const std::string dir = temp_dir("sweep_wl");
    const std::string study = dir + "/study.toml";
    std::ofstream(study) << "name = \"w\"\nmodels = [\"#small\", \"#large\"]\n"
                         << "[workload.small]\nfamily = \"mlp\"\nlayers = 2\ninput = 256\nwidth = 256\noutput = 256\nowner = \"ana\"\n"
                         << "[workload.large]\nfamily = \"mlp\"\nlayers = 2\ninput = 2048\nwidth = 2048\noutput = 2048\nowner = \"bo\"\n"
                         << "[[machine]]\nlabel = \"a100\"\nconfig = \"" << kSrc << "/configs/gpu/a100_sxm4_80gb.toml\"\n";
    CliResult r = run_archsim("sweep " + study + " --out " + dir + "/out");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rows = lines_of(results(dir + "/out"));
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].find("tag.owner") != std::string::npos);
    CHECK(rows[1].find(",small,") != std::string::npos);
    CHECK(rows[1].find(",ana,") != std::string::npos);
    CHECK(rows[2].find(",bo,") != std::string::npos);
    CliResult rep = run_archsim("report " + dir + "/out --no-plots --where tag.owner=bo");
    CHECK(rep.out.find("(1 pass the filters") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("the runtime is a results column, and an axis like any key", "[e2e][sweep][runtime]") {
    const std::string dir = temp_dir("sweep_runtime");
    const std::string path = dir + "/study.toml";
    std::ofstream(path) << "name = \"rt\"\nmodels = [\"" << kSrc << "/workloads/models/resnet18.onnx\"]\n"
                        << "[[machine]]\nlabel = \"a100\"\nconfig = \"" << kSrc << "/configs/gpu/a100_sxm4_80gb.toml\"\n"
                        << "axes = { runtime = [\"none\", \"tensorrt\"] }\n"
                        << "[[machine]]\nlabel = \"tpu\"\nconfig = \"" << kSrc << "/configs/tpu/tpu_128x128_ws.toml\"\n";
    const std::string out = dir + "/out";
    REQUIRE(run_archsim("sweep " + path + " --out " + out + " --traces none").exit_code == 0);
    const auto rows = lines_of(results(out));
    REQUIRE(rows.size() == 1 + 3);
    // header: index,id,model,machine,kind,runtime,precision,status,... (the swept runtime is that one column)
    CHECK(rows[0].rfind("index,id,model,machine,kind,runtime,precision,status,", 0) == 0);
    std::multiset<std::string> ran;
    for (size_t i = 1; i < rows.size(); ++i) {
        std::vector<std::string> f;
        std::stringstream ss(rows[i]);
        for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
        REQUIRE(f.size() > 7);
        CHECK(f[6] == (f[4] == "gpu" ? "fp16" : "int8"));  // each config's precision
        CHECK(f[7] == "ok");
        ran.insert(f[4] + ":" + f[5]);
    }
    CHECK(ran == std::multiset<std::string>{"gpu:none", "gpu:tensorrt", "tpu:xla"});  // the TPU's default
    CliResult rep = run_archsim("report " + out + " --where runtime=tensorrt --no-plots");
    REQUIRE(rep.exit_code == 0);
    CHECK(rep.out.find("3 finished points (1 pass the filters, 0 failed)") != std::string::npos);
    fs::remove_all(dir);
}
