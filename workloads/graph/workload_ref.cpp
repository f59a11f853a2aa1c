#include "workloads/graph/workload_ref.h"

#include <filesystem>

namespace archsim {

WorkloadRef parse_workload_ref(const std::string& text) {
    const size_t hash = text.find(".toml#");
    if (hash == std::string::npos) return {text, text, ""};
    return {text, text.substr(0, hash + 5), text.substr(hash + 6)};
}

std::string WorkloadRef::name() const { return generated() ? entry : std::filesystem::path(file).stem().string(); }

std::string workload_name(const std::string& path) { return parse_workload_ref(path).name(); }

}  // namespace archsim
