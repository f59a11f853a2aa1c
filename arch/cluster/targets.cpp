#include "arch/cluster/targets.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>

#include "sim/base/error.h"

namespace archsim {

Target read_target_yaml(const std::string& file, const std::string& name) {
    namespace fs = std::filesystem;
    if (!fs::is_regular_file(file)) throw UserError(file, "no such file");
    YAML::Node root;
    try {
        root = YAML::LoadFile(file);
    } catch (const YAML::ParserException& e) {
        throw UserError(file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1), e.msg);
    }
    const YAML::Node list = root.IsMap() && root["targets"] ? root["targets"] : root;
    if (!list.IsSequence()) throw UserError(file, "expected a list of targets (a top-level `targets:` list)");
    std::string known;
    for (const auto& e : list) {
        if (!e.IsMap() || !e["name"]) continue;
        const std::string n = e["name"].as<std::string>();
        known += (known.empty() ? "" : ", ") + n;
        if (n != name) continue;
        Target t;
        t.file = file, t.name = name;
        const std::string where = file + "#" + name;
        if (!e["cluster"] || !e["cluster"].IsScalar()) throw UserError(where + ".cluster", "missing: the cluster description (configs/clusters/*.toml)");
        fs::path c = e["cluster"].as<std::string>();
        if (c.is_relative()) c = fs::path(file).parent_path() / c;
        if (!fs::is_regular_file(c)) throw UserError(where + ".cluster = " + e["cluster"].as<std::string>(), "no such file (" + c.string() + ")");
        t.cluster = c.lexically_normal().string();
        if (e["nodes"]) {
            try {
                t.nodes = e["nodes"].as<int64_t>();
            } catch (const YAML::Exception&) {
                t.nodes = -1;
            }
            if (t.nodes < 1) throw UserError(where + ".nodes", "must be an integer >= 1");
        }
        if (e["description"]) t.description = e["description"].as<std::string>();
        if (e["vendor_fabric"]) {
            if (!e["vendor_fabric"].IsMap()) throw UserError(where + ".vendor_fabric", "must be a mapping of the cluster's network keys");
            for (const auto& kv : e["vendor_fabric"]) {
                if (!kv.second.IsScalar()) throw UserError(where + ".vendor_fabric." + kv.first.as<std::string>(), "must be a number or a word");
                const std::string v = kv.second.Scalar();
                char* end = nullptr;
                std::strtod(v.c_str(), &end);
                const bool number = !v.empty() && end && *end == '\0';
                t.vendor_fabric.push_back("network." + kv.first.as<std::string>() + "=" + (number ? v : "\"" + v + "\""));
            }
        }
        for (const auto& kv : e) {
            const std::string k = kv.first.as<std::string>();
            if (k != "name" && k != "cluster" && k != "nodes" && k != "description" && k != "vendor_fabric")
                t.custom[k] = kv.second.IsScalar() ? kv.second.Scalar() : YAML::Dump(kv.second);
        }
        return t;
    }
    throw UserError(file + "#" + name, "no such target (the file has: " + known + ")");
}

}  // namespace archsim
