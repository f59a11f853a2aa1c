// The one Catch2 main shared by every test executable, with a listener that removes the folders
// this process made under the system temp dir (tests/support: temp_dir, write_temp) when its
// tests passed; a failed run keeps them to look at.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace {

/// Removes /tmp/archsim_test_<pid> and /tmp/archsim_test_<tag>_<pid>_<n> of this process after a
/// run with no failed assertion.
struct TempDirCleanup : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testRunEnded(const Catch::TestRunStats& stats) override {
        if (stats.totals.assertions.failed > 0 || stats.aborting) return;
        namespace fs = std::filesystem;
        const std::string pid = std::to_string(::getpid());
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
            const std::string name = e.path().filename().string();
            if (name.rfind("archsim_test_", 0) != 0) continue;
            if (name == "archsim_test_" + pid || name.find("_" + pid + "_") != std::string::npos) fs::remove_all(e.path(), ec);
        }
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(TempDirCleanup)
