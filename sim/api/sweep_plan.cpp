#include "workloads/load_workload.h"
#include "sim/api/sweep_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/base/error.h"
#include "sim/base/hash.h"
#include "arch/common/machine.h"
#include "sim/base/machine_file.h"
#include "sim/base/params.h"
#include "arch/common/machine.h"
#include "sim/engine/machine_setup.h"
#include "arch/common/registry.h"
#include "workloads/generators/llm.h"
#include "workloads/generators/workload_file.h"

namespace archsim {

namespace fs = std::filesystem;

namespace {

/// The model's identity for point ids: file name, size and the hash of its first MiB. For a
/// generated workload (FILE.toml#NAME) the whole workload file and the entry's name.
std::string model_identity(const std::string& model) {
    const WorkloadRef ref = parse_workload_ref(model);
    const std::string& path = ref.file;
    const std::string entry = ref.generated() ? "#" + ref.entry : "";
    std::ifstream in(path, std::ios::binary);
    std::string head(1 << 20, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    return fmt::format("{}{}:{}:{:016x}", fs::path(path).filename().string(), entry, fs::file_size(path), fnv1a64(head));
}

bool skipped(const StudySpec& s, const SweepPoint& p) {
    for (const auto& sk : s.skips) {
        bool all = true;
        for (const auto& [key, values] : sk.conditions) {
            std::string v;
            if (key == "machine") v = p.machine;
            else if (key == "model") v = workload_name(p.model);
            else {
                auto it = std::find_if(p.axes.begin(), p.axes.end(), [&](const auto& a) { return a.first == key; });
                if (it == p.axes.end()) { all = false; break; }
                v = it->second;
            }
            if (std::find(values.begin(), values.end(), v) == values.end()) { all = false; break; }
        }
        if (all) return true;
    }
    return false;
}

/// The prefix of an axis that sets a generated workload's field.
constexpr const char* kWorkloadAxis = "workload.";

/// Builds point `p`'s workload with its workload sets, so that a field the family does not have,
/// or a value it refuses, fails before anything runs.
void check_workload_sets(const StudySpec& study, const SweepPoint& p) {
    const WorkloadRef ref = parse_workload_ref(p.model);
    if (!ref.generated())
        throw UserError(study.file + ": axes." + kWorkloadAxis + p.workload_sets.front().substr(0, p.workload_sets.front().find('=')),
                        "sets a field of a generated workload, but model '" + p.model + "' is a file");
    ImportOptions opt;
    opt.workload_sets = p.workload_sets;
    if (p.batch > 0) opt.batch = p.batch;
    read_workload_run_fields(ref.file, ref.entry, p.workload_sets);
    LlmShape shape;  // an llm entry: its shape is read (a whole LLM is not built here)
    int64_t batch = 0;
    if (!read_llm_entry(ref.file, ref.entry, shape, batch, p.workload_sets)) generate_workload(ref.file, ref.entry, opt);
}

}  // namespace

/// A point that does not sweep axis `key` still has a value for it when its machine config has
/// the key: the published design point's own (T256's 16 tiles a side on the fabric-size axis).
/// Recorded among the point's axes so that tables and plots place it with the swept points; a
/// zipped key ("tiles.rows,tiles.cols") whose keys differ reads "32x24".
static void fill_own_axes(SweepPoint& p, const std::vector<std::string>& axis_keys, const MachineSetup& setup) {
    for (const auto& key : axis_keys) {
        if (key == "batch" || key.rfind(kWorkloadAxis, 0) == 0) continue;
        if (std::any_of(p.axes.begin(), p.axes.end(), [&](const auto& a) { return a.first == key; })) continue;
        std::vector<std::string> values;
        for (size_t from = 0, comma = 0; comma != std::string::npos; from = comma + 1) {
            comma = key.find(',', from);
            const std::string k = key.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
            const ParamDecl* d = setup.kind->schema().find(k);
            if (!d) return;
            switch (d->type) {  // as an axis value is written: 16, 1410, true, "os"
                case ParamType::Int: values.push_back(std::to_string(setup.params.get_int(k))); break;
                case ParamType::Real: values.push_back(fmt::format("{}", setup.params.get_real(k))); break;
                case ParamType::Bool: values.push_back(setup.params.get_bool(k) ? "true" : "false"); break;
                default: values.push_back(setup.params.get_string(k)); break;
            }
        }
        bool same = true;
        for (const auto& v : values) same = same && v == values[0];
        std::string text = values[0];
        if (!same)
            for (size_t i = 1; i < values.size(); ++i) text += "x" + values[i];
        p.axes.emplace_back(key, text);
    }
}

SweepPlan plan_sweep(const StudySpec& study) {
    SweepPlan plan;
    for (const auto& a : study.axes) plan.axis_keys.push_back(a.key);
    for (const auto& m : study.machines)
        for (const auto& a : m.axes)
            if (std::find(plan.axis_keys.begin(), plan.axis_keys.end(), a.key) == plan.axis_keys.end()) plan.axis_keys.push_back(a.key);
    std::vector<std::string> model_ids;
    std::vector<std::map<std::string, std::string>> model_tags;
    std::set<std::string> tag_keys;
    for (const auto& model : study.models) {
        model_ids.push_back(model_identity(model));
        const WorkloadRef ref = parse_workload_ref(model);
        model_tags.push_back(ref.generated() ? workload_tags(ref.file, ref.entry) : std::map<std::string, std::string>{});
        for (const auto& [k, v] : model_tags.back()) tag_keys.insert(k);
    }
    plan.tag_keys.assign(tag_keys.begin(), tag_keys.end());
    std::set<size_t> checked;  // models whose workload sets were checked

    for (const auto& m : study.machines) {
        const std::string where = study.file + ": machine " + m.label;
        const std::string kind_name = read_machine_kind(m.config);
        if (!find_machine(kind_name)) throw UserError(where, "unknown machine kind \"" + kind_name + "\" in " + m.config);
        std::vector<const StudyAxis*> axes;
        for (const auto& a : study.axes) axes.push_back(&a);
        for (const auto& a : m.axes) axes.push_back(&a);
        // combinations: indices into each axis' values
        std::vector<std::vector<size_t>> combos;
        if (axes.empty()) combos.push_back({});
        else if (study.mode == "zip") {
            for (size_t i = 0; i < axes[0]->values.size(); ++i) combos.push_back(std::vector<size_t>(axes.size(), i));
        } else {
            std::vector<size_t> idx(axes.size(), 0);
            while (true) {
                combos.push_back(idx);
                size_t d = axes.size();
                while (d > 0 && ++idx[d - 1] == axes[d - 1]->values.size()) idx[--d] = 0;
                if (d == 0) break;
            }
        }
        for (size_t mi = 0; mi < study.models.size(); ++mi)
            for (const auto& combo : combos) {
                SweepPoint p;
                p.machine = m.label;
                p.kind = kind_name;
                p.model = study.models[mi];
                p.tags = model_tags[mi];
                p.sets = m.sets;
                for (size_t a = 0; a < axes.size(); ++a) {
                    const std::string& v = axes[a]->values[combo[a]];
                    p.axes.emplace_back(axes[a]->key, v);
                    if (axes[a]->key == "batch") {
                        try {
                            p.batch = std::stoll(v);
                        } catch (...) {
                            p.batch = 0;
                        }
                        if (p.batch < 1) throw UserError(study.file + ": axes.batch", "'" + v + "' is not a positive integer");
                    } else {  // "a,b" sets every named key to the value (e.g. square arrays)
                        const std::string& keys = axes[a]->key;
                        for (size_t from = 0, comma = 0; comma != std::string::npos; from = comma + 1) {
                            comma = keys.find(',', from);
                            const std::string key = keys.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
                            if (key.rfind(kWorkloadAxis, 0) == 0) p.workload_sets.push_back(key.substr(std::string(kWorkloadAxis).size()) + "=" + v);
                            else p.sets.push_back(key + "=" + v);
                        }
                    }
                }
                if (skipped(study, p)) {
                    ++plan.skipped;
                    continue;
                }
                std::vector<KeyOverride> overrides;
                for (size_t si = 0; si < p.sets.size(); ++si)  // errors name where each came from: set = [...] or an axis
                    overrides.push_back({p.sets[si], where + ": " + (si < m.sets.size() ? "set" : "axis")});
                try {
                    const MachineSetup setup = load_machine(m.config, "", overrides);
                    p.resolved_config = setup.resolved_toml();
                    fill_own_axes(p, plan.axis_keys, setup);
                } catch (const UserError& e) {  // a cross-key check of this point's config: name the study too
                    if (std::string(e.what()).rfind(where, 0) == 0) throw;
                    throw UserError(where, e.what());
                }
                if (!p.workload_sets.empty() && checked.insert(mi).second) check_workload_sets(study, p);
                std::string identity = p.resolved_config + "\nmodel=" + model_ids[mi] + "\nbatch=" + std::to_string(p.batch);
                for (const auto& ws : p.workload_sets) identity += "\nworkload." + ws;
                const uint64_t h = fnv1a64(identity);
                p.id = fmt::format("{:016x}", mix_key(0, h));  // splitmix finalizer: neighbours look unrelated
                p.index = plan.points.size();
                plan.points.push_back(std::move(p));
            }
    }
    return plan;
}

}  // namespace archsim
