// The bad-input catalogue (tests/bad_inputs/catalogue.toml): every case ends with its exit code
// and exactly one error line, the one the catalogue gives. And the fuzzers' reproducers
// (tests/fuzz_regressions/) import or fail cleanly, in a child process each.
#include <catch2/catch.hpp>

#include <toml++/toml.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "tests/support/cli.h"

using namespace archsim::test;
namespace fs = std::filesystem;

namespace {
std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
    return s;
}
std::vector<std::string> nonempty_lines(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string l; std::getline(ss, l);)
        if (!l.empty()) out.push_back(l);
    return out;
}
}  // namespace

TEST_CASE("every case of the bad-input catalogue gives its own one-line error", "[e2e][bad]") {
    const std::string src = ARCHSIM_SOURCE_DIR, dir = src + "/tests/bad_inputs";
    const toml::table cat = toml::parse_file(dir + "/catalogue.toml");
    const auto* cases = cat["case"].as_array();
    REQUIRE(cases);
    REQUIRE(cases->size() >= 40);
    std::set<std::string> errors;
    for (const auto& c : *cases) {
        const auto& t = *c.as_table();
        const std::string name = t["name"].value_or(std::string());
        INFO(name);
        const std::string tmp = temp_dir("bad_" + name);
        auto fill = [&](const std::string& s) { return replace_all(replace_all(replace_all(s, "{dir}", dir), "{src}", src), "{tmp}", tmp); };
        CliResult r = run_archsim(fill(t["args"].value_or(std::string())));
        CHECK(r.exit_code == t["exit"].value_or(-1));
        const auto lines = nonempty_lines(r.err);
        REQUIRE(!lines.empty());
        CHECK(lines.back() == fill(t["error"].value_or(std::string())));
        size_t error_lines = 0;
        for (const auto& l : lines) error_lines += l.rfind("archsim: error:", 0) == 0;
        CHECK(error_lines == 1);
        // a bad input writes no metrics (nothing half-read is reported)
        CHECK_FALSE(fs::exists(tmp + "/metrics.json"));
        errors.insert(lines.back());
        fs::remove_all(tmp);
    }
    // distinct failures get distinct messages (two inputs that are both "not protobuf" share one)
    CHECK(errors.size() >= cases->size() - 1);
}

TEST_CASE("the fuzzers' reproducers import or fail cleanly", "[e2e][bad][fuzz]") {
    const std::string dir = std::string(ARCHSIM_SOURCE_DIR) + "/tests/fuzz_regressions";
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir + "/onnx")) {
        INFO(e.path());
        const std::string copy = temp_dir("fuzzrepro") + "/model.onnx";
        fs::copy_file(e.path(), copy);
        CliResult r = run_archsim("graph " + copy);
        CHECK((r.exit_code == 0 || r.exit_code == 2));
        if (r.exit_code == 2) CHECK(nonempty_lines(r.err).size() == 1);
        fs::remove_all(fs::path(copy).parent_path());
        ++n;
    }
    for (const auto& e : fs::directory_iterator(dir + "/config")) {
        INFO(e.path());
        const std::string copy = temp_dir("fuzzrepro") + "/machine.toml";
        fs::copy_file(e.path(), copy);
        CliResult r = run_archsim("run " + std::string(ARCHSIM_SOURCE_DIR) + "/tests/bad_inputs/../../workloads/models/resnet18.onnx --arch " +
                                  copy + " --out " + fs::path(copy).parent_path().string() + "/out --max-events 1");
        CHECK((r.exit_code == 0 || r.exit_code == 2 || r.exit_code == 4));
        fs::remove_all(fs::path(copy).parent_path());
        ++n;
    }
    CHECK(n >= 1);
}
