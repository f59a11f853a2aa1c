#include "sim/api/study.h"

#include <filesystem>
#include <set>
#include <sstream>

#include "sim/base/error.h"
#include "workloads/load_workload.h"
#include "sim/base/toml_load.h"

namespace archsim {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> string_list(const toml::node* n, const std::string& where) {
    std::vector<std::string> out;
    if (!n) return out;
    const auto* arr = n->as_array();
    if (!arr) throw UserError(where, "must be a list of strings");
    for (const auto& e : *arr) {
        auto s = e.value<std::string>();
        if (!s) throw UserError(where, "must be a list of strings");
        out.push_back(*s);
    }
    return out;
}

void only_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) {
    for (const auto& [k, v] : t) {
        const std::string key(k.str());
        if (!allowed.count(key)) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
            throw UserError(where + key, "unknown key (expected one of " + list + ")");
        }
    }
}

/// A TOML scalar as text: strings as they are, numbers and booleans as TOML writes them.
std::string scalar_text(const toml::node& n, const std::string& where) {
    if (auto s = n.value<std::string>()) return *s;
    if (n.is_integer()) return std::to_string(*n.value<int64_t>());
    if (n.is_floating_point()) {
        std::ostringstream o;
        o << *n.value<double>();
        return o.str();
    }
    if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
    throw UserError(where, "values must be strings, numbers or booleans");
}

/// One value or a list of values.
std::vector<std::string> values_of(const toml::node& n, const std::string& where) {
    std::vector<std::string> out;
    if (const auto* arr = n.as_array()) {
        for (const auto& e : *arr) out.push_back(scalar_text(e, where));
        if (out.empty()) throw UserError(where, "must list at least one value");
    } else {
        out.push_back(scalar_text(n, where));
    }
    return out;
}

std::vector<StudyAxis> axes_of(const toml::node* n, const std::string& where) {
    std::vector<StudyAxis> out;
    if (!n) return out;
    const auto* t = n->as_table();
    if (!t) throw UserError(where, "must be a table of key = [values]");
    for (const auto& [k, v] : *t) {
        const std::string key(k.str());
        if (!v.as_array()) throw UserError(where + "." + key, "must be a list of values");
        out.push_back({key, values_of(v, where + "." + key)});
    }
    return out;
}

std::string resolve(const fs::path& base, const std::string& p) {
    fs::path q(p);
    return (q.is_absolute() ? q : base / q).lexically_normal().string();
}

}  // namespace

std::string study_name(const std::string& file) {
    if (!fs::is_regular_file(file)) throw UserError(file, "no such study file");
    const toml::table root = detail::parse_toml_file(file);
    return root["name"].value_or(fs::path(file).stem().string());
}

StudySpec load_study(const std::string& file) {
    if (!fs::is_regular_file(file)) throw UserError(file, "no such study file");
    const toml::table root = detail::parse_toml_file(file);
    only_keys(root, {"name", "description", "models", "machine", "mode", "axes", "skip", "workload"}, file + ": ");
    StudySpec s;
    s.file = file;
    const fs::path base = fs::path(file).parent_path();
    s.name = root["name"].value_or(fs::path(file).stem().string());
    s.description = root["description"].value_or(std::string());
    s.mode = root["mode"].value_or(std::string("product"));
    if (s.mode != "product" && s.mode != "zip") throw UserError(file + ": mode", "must be \"product\" or \"zip\", not \"" + s.mode + "\"");
    s.axes = axes_of(root.get("axes"), file + ": axes");
    std::set<std::string> stems;
    for (const auto& m : string_list(root.get("models"), file + ": models")) {
        // "#NAME" is a [workload.NAME] table of this study file
        const std::string path = !m.empty() && m[0] == '#' ? fs::path(file).lexically_normal().string() + m : resolve(base, m);
        // "FILE.toml#NAME" is a generated workload: the file must exist, NAME names the results
        const WorkloadRef ref = parse_workload_ref(path);
        if (!fs::is_regular_file(ref.file)) throw UserError(file + ": models", "no such model file '" + ref.file + "'");
        const std::string stem = ref.name();
        if (!stems.insert(stem).second)
            throw UserError(file + ": models", "two models named '" + stem + "' (results are filed by model name)");
        s.models.push_back(path);
    }
    if (s.models.empty()) throw UserError(file + ": models", "must name at least one model");
    const auto* machines = root.get("machine") ? root.get("machine")->as_array() : nullptr;
    if (!machines || machines->empty()) throw UserError(file + ": machine", "must have at least one [[machine]] table");
    std::set<std::string> labels;
    for (size_t i = 0; i < machines->size(); ++i) {
        const std::string where = file + ": machine[" + std::to_string(i) + "].";
        const auto* t = (*machines)[i].as_table();
        if (!t) throw UserError(where, "must be a table");
        only_keys(*t, {"label", "config", "set", "axes"}, where);
        StudyMachine m;
        auto label = (*t)["label"].value<std::string>();
        auto config = (*t)["config"].value<std::string>();
        if (!label || label->empty()) throw UserError(where + "label", "missing (a string naming the machine)");
        if (!config) throw UserError(where + "config", "missing (a machine TOML file)");
        if (label->find_first_of("/\\") != std::string::npos) throw UserError(where + "label", "must not contain '/'");
        if (!labels.insert(*label).second) throw UserError(where + "label", "duplicate label '" + *label + "'");
        m.label = *label;
        m.config = resolve(base, *config);
        if (!fs::is_regular_file(m.config)) throw UserError(where + "config", "no such config file '" + m.config + "'");
        m.sets = string_list(t->get("set"), where + "set");
        m.axes = axes_of(t->get("axes"), where + "axes");
        std::set<std::string> keys;
        size_t length = 0;
        for (const auto* list : {&s.axes, &m.axes})
            for (const auto& a : *list) {
                if (!keys.insert(a.key).second) throw UserError(where + "axes." + a.key, "swept twice (in [axes] and here)");
                if (s.mode == "zip" && length && a.values.size() != length)
                    throw UserError(where + "axes." + a.key, "mode = \"zip\" needs every axis to have " + std::to_string(length) +
                                                                " values, this one has " + std::to_string(a.values.size()));
                length = a.values.size();
            }
        s.machines.push_back(std::move(m));
    }
    if (const auto* skips = root.get("skip")) {
        const auto* arr = skips->as_array();
        if (!arr) throw UserError(file + ": skip", "must be [[skip]] tables");
        for (size_t i = 0; i < arr->size(); ++i) {
            const std::string where = file + ": skip[" + std::to_string(i) + "]";
            const auto* t = (*arr)[i].as_table();
            if (!t || t->empty()) throw UserError(where, "must be a table of conditions (machine, model or an axis key)");
            StudySkip sk;
            for (const auto& [k, v] : *t) sk.conditions.emplace_back(std::string(k.str()), values_of(v, where + "." + std::string(k.str())));
            s.skips.push_back(std::move(sk));
        }
    }
    return s;
}

}  // namespace archsim
