// The layers depend only downward (tools/check_layers.py): every include between source folders
// and every link between archsim's libraries points to a lower layer.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

namespace {
/// Runs tools/check_layers.py on `repo`; returns (exit code, what it printed: the violations on
/// stdout, then its summary from stderr).
std::pair<int, std::string> check_layers(const std::string& repo) {
    const CliResult r = run_command("/usr/bin/python3 " + std::string(ARCHSIM_SOURCE_DIR) + "/tools/check_layers.py " + repo);
    return {r.exit_code, r.out + r.err};
}

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}
}  // namespace

TEST_CASE("every include and library link of the repository points down the layers", "[e2e][layers]") {
    const auto [code, out] = check_layers(ARCHSIM_SOURCE_DIR);
    INFO(out);
    CHECK(code == 0);
}

TEST_CASE("the layer check fails on an upward include, a sibling include, an unplaced folder and an upward link",
          "[e2e][layers]") {
    const fs::path repo = temp_dir("layers_repo");
    write(repo / "sim/base/error.h", "#pragma once\n");
    write(repo / "sim/engine/simulate.h", "#pragma once\n#include \"sim/base/error.h\"\n");
    write(repo / "arch/tpu/tpu.h", "#pragma once\n");
    {
        const auto [code, out] = check_layers(repo.string());
        INFO(out);
        CHECK(code == 0);  // the clean tree passes
    }
    write(repo / "sim/base/units.h", "#pragma once\n#include \"sim/engine/simulate.h\"\n");  // base -> engine
    write(repo / "arch/gpu/gpu.h", "#pragma once\n#include \"arch/tpu/tpu.h\"\n");          // sibling machines
    write(repo / "workloads/newfolder/x.h", "#pragma once\n");                           // in no layer
    write(repo / "arch/CMakeLists.txt", "target_link_libraries(archsim_machines PUBLIC archsim_engine)\n");
    const auto [code, out] = check_layers(repo.string());
    INFO(out);
    CHECK(code == 1);
    CHECK(out.find("sim/base/units.h:2: sim/base (base) includes sim/engine/simulate.h (engine): a higher layer") != std::string::npos);
    CHECK(out.find("arch/gpu/gpu.h:2: arch/gpu (machines) includes arch/tpu/tpu.h (machines): a sibling") != std::string::npos);
    CHECK(out.find("workloads/newfolder/x.h:1: folder workloads/newfolder is in no layer") != std::string::npos);
    CHECK(out.find("arch/CMakeLists.txt:1: archsim_machines (machines) links archsim_engine (engine): a higher layer") != std::string::npos);
    fs::remove_all(repo);
}
