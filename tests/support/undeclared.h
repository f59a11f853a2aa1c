#pragma once
// Which numbers of a job's last_run.json or an llm workload's llm.json the metric catalogue does
// not declare (traces/metric_catalog.h: MetricScope::Job / Serving).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/metric_catalog.h"

namespace archsim::test {

/// The paths ("a.b", "a[].b") of the numbers in `j` that no declaration of `scope` matches; the
/// inputs a job echoes (model, parallelism, custom) are not metrics and are skipped.
inline std::vector<std::string> undeclared_numbers(const nlohmann::json& j, MetricScope scope, const std::string& path = "") {
    std::vector<std::string> out;
    if (j.is_object()) {
        for (const auto& [k, v] : j.items()) {
            if (k == "model" || k == "parallelism" || k == "custom") continue;
            for (auto& p : undeclared_numbers(v, scope, path.empty() ? k : path + "." + k)) out.push_back(std::move(p));
        }
    } else if (j.is_array()) {
        for (const auto& v : j)
            for (auto& p : undeclared_numbers(v, scope, path + "[]")) out.push_back(std::move(p));
    } else if (j.is_number() && !find_metric_path(scope, path)) {
        out.push_back(path);
    }
    return out;
}

}  // namespace archsim::test
