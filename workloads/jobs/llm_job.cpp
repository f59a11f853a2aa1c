#include "workloads/jobs/llm_job.h"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <limits>
#include <regex>
#include <set>

#include "sim/base/did_you_mean.h"
#include "sim/base/error.h"
#include "workloads/generators/workload_file.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

namespace {

/// Why key `k` is refused in a block whose keys are `known`: the nearest of them, and all of them.
std::string unknown_key_reason(const std::string& k, const std::vector<std::string>& known) {
    const std::string near = nearest_name(k, known);
    std::string list;
    for (const auto& o : known) list += (list.empty() ? "" : ", ") + o;
    return "not a key of this block" + (near.empty() ? std::string() : " (did you mean '" + near + "'?)") + "; its keys: " + list;
}

/// Typed access to one YAML mapping, naming "where.key" in its errors.
class YamlFields {
public:
    YamlFields(const YAML::Node& n, std::string where) : m_n(n), m_where(std::move(where)) {}
    bool has(const std::string& k) const { return m_n.IsMap() && m_n[k] && !m_n[k].IsNull(); }
    YAML::Node node(const std::string& k) const {
        if (!has(k)) throw UserError(m_where + "." + k, "missing (a required field)");
        return m_n[k];
    }
    YamlFields map(const std::string& k) const {
        const YAML::Node n = node(k);
        if (!n.IsMap()) throw UserError(m_where + "." + k, "must be a mapping of keys");
        return {n, m_where + "." + k};
    }
    std::string str(const std::string& k) const {
        const YAML::Node n = node(k);
        if (!n.IsScalar()) throw UserError(m_where + "." + k, "must be a string");
        return n.as<std::string>();
    }
    std::string str_or(const std::string& k, const std::string& def) const { return has(k) ? str(k) : def; }
    std::string choice(const std::string& k, const std::vector<std::string>& ok) const { return check(k, str(k), ok); }
    std::string choice_or(const std::string& k, const std::string& def, const std::vector<std::string>& ok) const {
        return has(k) ? choice(k, ok) : def;
    }
    int64_t integer(const std::string& k, int64_t min = 1) const {
        const YAML::Node n = node(k);
        int64_t v = 0;
        try {
            v = n.as<int64_t>();
        } catch (const YAML::Exception&) {
            throw UserError(m_where + "." + k + " = " + scalar(n), "must be an integer");
        }
        if (v < min) throw UserError(m_where + "." + k + " = " + std::to_string(v), "must be >= " + std::to_string(min));
        return v;
    }
    int64_t integer_or(const std::string& k, int64_t def, int64_t min = 1) const { return has(k) ? integer(k, min) : def; }
    double real(const std::string& k, double min = 0) const {
        const YAML::Node n = node(k);
        double v = 0;
        try {
            v = n.as<double>();
        } catch (const YAML::Exception&) {
            throw UserError(m_where + "." + k + " = " + scalar(n), "must be a number");
        }
        if (v < min) throw UserError(m_where + "." + k + " = " + scalar(n), fmt::format("must be >= {:g}", min));
        return v;
    }
    bool boolean_or(const std::string& k, bool def) const {
        if (!has(k)) return def;
        try {
            return m_n[k].as<bool>();
        } catch (const YAML::Exception&) {
            throw UserError(m_where + "." + k + " = " + scalar(m_n[k]), "must be true or false");
        }
    }
    const std::string& where() const { return m_where; }
    const YAML::Node& raw() const { return m_n; }
    /// Throws UserError "where.KEY: not a key of this block (did you mean ...?; its keys: ...)"
    /// for the first key of the block that `known` does not list.
    void only(const std::vector<std::string>& known) const {
        for (const auto& kv : m_n) {
            const std::string k = kv.first.as<std::string>();
            if (std::find(known.begin(), known.end(), k) == known.end()) throw UserError(m_where + "." + k, unknown_key_reason(k, known));
        }
    }

private:
    static std::string scalar(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : "(not a scalar)"; }
    std::string check(const std::string& k, std::string v, const std::vector<std::string>& ok) const {
        std::string low = v;
        std::transform(low.begin(), low.end(), low.begin(), ::tolower);
        for (const auto& o : ok) {
            std::string ol = o;
            std::transform(ol.begin(), ol.end(), ol.begin(), ::tolower);
            if (ol == low) return o;
        }
        std::string list;
        for (const auto& o : ok) list += (list.empty() ? "" : ", ") + o;
        throw UserError(m_where + "." + k + " = " + v, "must be one of " + list);
    }
    YAML::Node m_n;
    std::string m_where;
};

const std::vector<std::string> kPrecisions = {"fp32", "bf16", "fp16", "fp8"};

/// The keys of the format's blocks with a fixed vocabulary (the document's and archsim's own):
/// any other key there is a misspelling, refused with the nearest of these.
const std::map<std::string, std::vector<std::string>>& block_keys() {
    static const std::map<std::string, std::vector<std::string>> keys = {
        {"params", {"hidden_size", "n_layers", "vocab_size", "n_heads", "n_kv_heads", "ffn_hidden_size", "n_experts", "top_k",
                    "max_position_embeddings", "dropout"}},
        {"parallelism", {"tp", "pp", "dp", "ep", "virtual_stages", "schedule", "sequence_parallel", "zero_stage", "dp_overlap"}},
        {"sequence", {"prompt", "generate"}},
        {"precision", {"weights", "activations"}},
        {"runtime_tuning", {"microbatch", "cuda_graphs", "gpudirect_rdma", "virt", "fabric"}},
        {"training", {"optimizer", "recompute"}},
        {"serving", {"arrival_rate_per_s", "requests", "arrival", "seed", "policy", "scheduler", "max_batch", "max_num_tokens",
                     "kv_block_tokens", "chunked_prefill", "kv_cache_fraction", "replay_file", "lengths", "length_cv", "preemption", "swap_space_gib",
                     "slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms", "prefill_replicas"}},
        {"schedule", {"phases"}}};
    return keys;
}

/// An entry's own keys (the document's, then archsim's global_batch and training); any other key
/// is a custom key, kept with its YAML type.
const std::vector<std::string> kEntryKeys = {"name", "framework", "model_family", "params", "parallelism", "sequence", "precision",
                                             "dataloader", "duration_minutes", "track", "runtime_tuning", "schedule", "notes",
                                             "global_batch", "training", "serving"};

/// A phase's own keys; any other key of a phase is a custom key of that phase.
const std::vector<std::string> kPhaseKeys = {"name", "duration_minutes", "tokens_scale", "autoscale_factor", "request_profile", "overrides"};

/// The JSON text of YAML value `n` with the types YAML's core schema gives its scalars (a
/// quoted scalar is a string; null, true/false, integers and floats as such; .inf and .nan,
/// which JSON cannot hold, as text), maps and lists recursively.
nlohmann::json yaml_to_json(const YAML::Node& n) {
    if (n.IsMap()) {
        nlohmann::json o = nlohmann::json::object();
        for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
        return o;
    }
    if (n.IsSequence()) {
        nlohmann::json a = nlohmann::json::array();
        for (const auto& e : n) a.push_back(yaml_to_json(e));
        return a;
    }
    if (!n.IsScalar()) return nullptr;
    const std::string& s = n.Scalar();
    if (n.Tag() != "?") return s;  // quoted, or tagged explicitly: kept as written
    static const std::regex null_re("~|null|Null|NULL"), true_re("true|True|TRUE"), false_re("false|False|FALSE");
    static const std::regex int_re("[-+]?[0-9]+"), float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
    if (s.empty() || std::regex_match(s, null_re)) return nullptr;
    if (std::regex_match(s, true_re)) return true;
    if (std::regex_match(s, false_re)) return false;
    try {
        if (std::regex_match(s, int_re)) return std::stoll(s);
        if (std::regex_match(s, float_re)) return std::stod(s);
    } catch (const std::out_of_range&) {
        // beyond a 64-bit integer or a double: kept as text
    }
    return s;
}

/// Llama's feed-forward width for hidden h: 2/3 of 4h rounded up to a multiple of 256
/// (Meta's llama/model.py, FeedForward: multiple_of = 256).
int64_t llama_ffn(int64_t h) { return ((8 * h / 3 + 255) / 256) * 256; }

/// The parallelism block shared by both formats' readers.
void read_parallelism(const YamlFields& p, ParallelismSpec& s) {
    p.only(block_keys().at("parallelism"));
    s.tp = p.integer("tp"), s.pp = p.integer("pp"), s.dp = p.integer("dp");
    s.ep = p.integer_or("ep", 1);
    s.virtual_stages = p.integer_or("virtual_stages", 1);
    s.schedule = p.choice_or("schedule", s.virtual_stages > 1 ? "interleaved" : "1f1b", pipeline_schedule_names());
    s.sequence_parallel = p.boolean_or("sequence_parallel", false);
    s.zero_stage = p.integer_or("zero_stage", 0, 0);
    s.dp_overlap = p.boolean_or("dp_overlap", true);
}

void read_tuning(const YamlFields& t, RuntimeTuning& r) {
    t.only(block_keys().at("runtime_tuning"));
    r.microbatch = t.integer_or("microbatch", 0);
    r.cuda_graphs = t.boolean_or("cuda_graphs", false);
    r.gpudirect_rdma = t.boolean_or("gpudirect_rdma", true);
    r.virt = t.choice_or("virt", "bare", {"bare", "sriov"});
    r.fabric = t.choice_or("fabric", "", {"IB", "RoCE", "Vendor"});
}

void read_training(const YamlFields& t, ParallelismSpec& s) {
    t.only(block_keys().at("training"));
    s.optimizer = t.choice_or("optimizer", s.optimizer, {"sgd", "momentum", "adam", "adamw"});
    s.recompute = t.choice_or("recompute", s.recompute, {"none", "selective", "full"});
}

void read_serving(const YamlFields& v, ServingSpec& s) {
    v.only(block_keys().at("serving"));
    s.given = true;
    s.replay_file = v.str_or("replay_file", "");
    const std::string rate = v.raw()["arrival_rate_per_s"] && v.raw()["arrival_rate_per_s"].IsScalar() ? v.raw()["arrival_rate_per_s"].Scalar() : "";
    if (rate == "inf" || rate == ".inf" || rate == "INF") s.arrival_rate_per_s = std::numeric_limits<double>::infinity();
    else if (!s.replay_file.empty() && !v.has("arrival_rate_per_s")) s.arrival_rate_per_s = 0;  // the file's arrivals
    else s.arrival_rate_per_s = v.real("arrival_rate_per_s");
    if (s.replay_file.empty() && !(s.arrival_rate_per_s > 0))
        throw UserError(v.where() + ".arrival_rate_per_s", "must be above 0 (or inf: every request at once)");
    s.requests = v.integer_or("requests", 0, 1);
    s.arrival = v.choice_or("arrival", "poisson", {"poisson", "uniform", "bursty"});
    s.seed = v.integer_or("seed", 1, 0);
    s.lengths = v.choice_or("lengths", "fixed", {"fixed", "uniform", "exponential", "lognormal"});
    if (v.has("length_cv")) {
        if (s.lengths != "lognormal") throw UserError(v.where() + ".length_cv", "is read with lengths: lognormal only (this block's is " + s.lengths + ")");
        s.length_cv = v.real("length_cv");
        if (!(s.length_cv > 0)) throw UserError(v.where() + ".length_cv", "must be above 0");
    }
    if (v.has("lengths") && !s.replay_file.empty()) throw UserError(v.where() + ".lengths", "a replay file gives every request's lengths");
    if (v.has("policy")) s.policy = v.choice("policy", {"continuous", "static"});
    if (v.has("scheduler")) s.scheduler = v.choice("scheduler", {"guaranteed_no_evict", "max_utilization"});
    if (v.has("max_batch")) s.max_batch = v.integer("max_batch");
    if (v.has("max_num_tokens")) s.max_num_tokens = v.integer("max_num_tokens");
    if (v.has("kv_block_tokens")) s.kv_block_tokens = v.integer("kv_block_tokens");
    if (v.has("chunked_prefill")) s.chunked_prefill = v.boolean_or("chunked_prefill", false);
    for (auto [key, field] : {std::pair{"slo_ttft_ms", &s.slo_ttft_ms}, std::pair{"slo_tpot_ms", &s.slo_tpot_ms}, std::pair{"slo_e2e_ms", &s.slo_e2e_ms}})
        if (v.has(key)) {
            *field = v.real(key);
            if (!(*field > 0)) throw UserError(v.where() + "." + key, "must be above 0 ms");
        }
    s.prefill_replicas = v.integer_or("prefill_replicas", 0, 1);
    if (v.has("preemption")) s.preemption = v.choice("preemption", {"recompute", "swap"});
    if (v.has("swap_space_gib")) {
        s.swap_space_gib = v.real("swap_space_gib");
        if (!(*s.swap_space_gib >= 0)) throw UserError(v.where() + ".swap_space_gib", "must be at least 0");
    }
    if (v.has("kv_cache_fraction")) {
        s.kv_cache_fraction = v.real("kv_cache_fraction");
        if (!(*s.kv_cache_fraction > 0 && *s.kv_cache_fraction <= 1)) throw UserError(v.where() + ".kv_cache_fraction", "must be in (0, 1]");
    }
}

std::string dump(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    YAML::Emitter e;
    e << YAML::Flow << n;
    return e.c_str();
}

YAML::Node load_yaml(const std::string& file) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such file");
    try {
        return YAML::LoadFile(file);
    } catch (const YAML::ParserException& e) {
        throw UserError(file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1), e.msg);
    } catch (const YAML::Exception& e) {
        throw UserError(file, e.what());
    }
}

}  // namespace

namespace {

/// Sets `value` (YAML text) at dotted `key` of mapping `entry`, creating blocks on the way.
/// Finds the mapping of sequence `list` whose `name` is `name` into `found`, and lists every
/// entry's name, comma-separated, in `known`. Returns whether one matched. Throws UserError at
/// `where` when two entries have that name (which one runs would be a guess).
bool find_named(const YAML::Node& list, const std::string& name, YAML::Node& found, std::string& known, const std::string& where) {
    bool have = false;
    if (!list.IsSequence()) return false;
    for (const auto& e : list) {
        if (!e.IsMap() || !e["name"]) continue;
        const std::string n = e["name"].as<std::string>();
        known += (known.empty() ? "" : ", ") + n;
        if (n != name) continue;
        if (have) throw UserError(where, "two entries are named '" + name + "': names must be unique");
        found.reset(YAML::Node(e)), have = true;  // rebind: operator= would overwrite
    }
    return have;
}

/// Whether `name` can name a folder of its own under an output directory: letters, digits, '_',
/// '-' and '.', not "." or ".." (a phase's results go to OUT/phases/<name>).
bool is_folder_name(const std::string& name) {
    if (name.empty() || name == "." || name == "..") return false;
    for (const char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
    return true;
}

void set_dotted(YAML::Node entry, const std::string& key, const std::string& value, const std::string& where) {
    YAML::Node n = entry;
    size_t start = 0;
    while (true) {
        const size_t dot = key.find('.', start);
        const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (dot == std::string::npos) {
            n[part] = YAML::Load(value);
            return;
        }
        if (n[part] && !n[part].IsMap()) throw UserError(where + "." + key, "'" + part + "' is not a block of keys");
        YAML::Node child = n[part];
        n.reset(child);  // rebind (operator= would overwrite n's contents)
        start = dot + 1;
    }
}

/// A custom key `key` at `where` (an entry's or a phase's, whose own keys are `own`) one or two
/// edits from one of them: probably a misspelling, so a warning naming it (kept all the same, as
/// the format keeps custom keys). "" otherwise.
std::string near_miss_warning(const std::string& where, const std::string& key, const std::vector<std::string>& own) {
    const std::string near = nearest_name(key, own);
    if (near.empty()) return "";
    return where + "." + key + ": not a key of the format, kept as a custom key; did you mean '" + near + "'?";
}

/// Checks the dotted keys of a phase's `overrides` (at `where`) against the entry's blocks: a key
/// into a block with a fixed vocabulary must name one of its keys (UserError with the nearest
/// otherwise), the schedule cannot be overridden, and any other key overrides (or adds) a custom
/// key, with a warning in `warnings` when it is one or two edits from an entry key.
void check_override_keys(const YamlFields& ov, std::vector<std::string>& warnings) {
    for (const auto& kv : ov.raw()) {
        const std::string key = kv.first.as<std::string>();
        const size_t dot = key.find('.');
        const std::string head = key.substr(0, dot);
        const auto block = block_keys().find(head);
        if (head == "schedule" || head == "name") throw UserError(ov.where() + "." + key, "a phase cannot override its entry's " + head);
        if (block != block_keys().end()) {
            if (dot == std::string::npos) continue;  // a whole block, read (and checked) when the phase runs
            const std::string rest = key.substr(dot + 1);
            const auto& known = block->second;
            if (std::find(known.begin(), known.end(), rest) == known.end())
                throw UserError(ov.where() + "." + key, unknown_key_reason(rest, known) + " (of " + head + ")");
        } else if (std::find(kEntryKeys.begin(), kEntryKeys.end(), head) == kEntryKeys.end()) {
            if (const std::string w = near_miss_warning(ov.where(), head, kEntryKeys); !w.empty()) warnings.push_back(w);
        }
    }
}

}  // namespace

double request_profile_rate(const std::string& profile) {
    return profile == "peak" ? 2.0 : profile == "low" ? 0.25 : 1.0;
}

LlmJob read_llm_job_yaml(const std::string& file, const std::string& name, const std::string& phase) {
    const YAML::Node root = load_yaml(file);
    const YAML::Node list = root.IsMap() && root["workloads"] ? root["workloads"] : root;
    if (!list.IsSequence()) throw UserError(file, "expected a list of workloads (a top-level `workloads:` list)");
    YAML::Node entry;
    std::string names;
    if (!find_named(list, name, entry, names, file + "#" + name)) throw UserError(file + "#" + name, "no such workload (the file has: " + names + ")");
    LlmJob j;
    j.file = file, j.name = name;
    double phase_scale = 1.0, phase_minutes = -1, replicas_scale = 1.0;
    std::string profile = "steady_state";
    bool tokens_scale_given = false;
    if (!phase.empty()) {  // the phase's overrides on a copy of the entry
        entry.reset(YAML::Clone(entry));
        const YAML::Node phases = entry["schedule"] && entry["schedule"]["phases"] ? entry["schedule"]["phases"] : YAML::Node();
        std::string listed;
        YAML::Node ph;
        if (!find_named(phases, phase, ph, listed, j.where() + ".schedule.phases")) throw UserError(j.where() + "@" + phase, "no such phase in schedule.phases (" + (listed.empty() ? "none" : listed) + ")");
        const YamlFields pf(ph, j.where() + ".schedule.phases." + phase);
        phase_scale = pf.has("tokens_scale") ? pf.real("tokens_scale") : 1.0;
        tokens_scale_given = pf.has("tokens_scale");
        if (pf.has("autoscale_factor")) replicas_scale = pf.real("autoscale_factor");
        if (!(phase_scale > 0)) throw UserError(pf.where() + ".tokens_scale", "must be above 0");
        if (!(replicas_scale > 0)) throw UserError(pf.where() + ".autoscale_factor", "must be above 0");
        profile = pf.choice_or("request_profile", "steady_state", {"steady_state", "peak", "spike", "low"});
        phase_minutes = pf.real("duration_minutes");
        if (pf.has("overrides")) {
            const YamlFields ov = pf.map("overrides");  // kept: raw() refers into it
            for (const auto& kv : ov.raw()) set_dotted(entry, kv.first.as<std::string>(), dump(kv.second), pf.where() + ".overrides");
        }
    }
    const YamlFields f(entry, j.where());
    j.framework = f.str("framework");
    LlmShape& m = j.model;
    m.model_family = f.choice("model_family", {"gpt", "llama", "moe"});
    const YamlFields p = f.map("params");
    p.only(block_keys().at("params"));
    m.hidden = p.integer("hidden_size"), m.layers = p.integer("n_layers"), m.vocab = p.integer("vocab_size"), m.heads = p.integer("n_heads");
    m.kv_heads = p.integer_or("n_kv_heads", m.heads);
    m.ffn = p.integer_or("ffn_hidden_size", m.model_family == "gpt" ? 4 * m.hidden : llama_ffn(m.hidden));
    if (m.model_family == "moe") m.experts = p.integer("n_experts"), m.top_k = p.integer("top_k");
    if (m.hidden % m.heads != 0) throw UserError(p.where() + ".n_heads = " + std::to_string(m.heads), "does not divide hidden_size " + std::to_string(m.hidden));
    if (m.heads % m.kv_heads != 0) throw UserError(p.where() + ".n_kv_heads = " + std::to_string(m.kv_heads), "does not divide n_heads");
    const YamlFields seq = f.map("sequence");
    seq.only(block_keys().at("sequence"));
    m.prompt = seq.integer("prompt"), m.generate = seq.integer("generate", 0);
    m.max_positions = p.integer_or("max_position_embeddings", std::max<int64_t>(m.prompt + m.generate, 1));
    const YamlFields pr = f.map("precision");
    pr.only(block_keys().at("precision"));
    m.weights_precision = pr.choice("weights", kPrecisions);
    m.activations_precision = pr.choice("activations", kPrecisions);
    m.dropout = p.has("dropout") ? p.real("dropout") : (m.model_family == "gpt" ? 0.1 : 0.0);
    read_parallelism(f.map("parallelism"), j.parallel);
    j.dataloader = f.choice("dataloader", {"streaming", "synthetic", "replay"});
    j.duration_minutes = f.real("duration_minutes");
    j.track = f.choice("track", {"parity", "best"});
    j.notes = f.str_or("notes", "");
    if (f.has("runtime_tuning")) read_tuning(f.map("runtime_tuning"), j.tuning);
    if (f.has("training")) read_training(f.map("training"), j.parallel);
    if (f.has("serving")) {
        read_serving(f.map("serving"), j.serving);
        std::string& replay = j.serving.replay_file;
        if (!replay.empty() && std::filesystem::path(replay).is_relative())
            replay = (std::filesystem::path(file).parent_path() / replay).string();
        if (j.dataloader == "replay" && replay.empty())
            throw UserError(j.where() + ".serving.replay_file", "dataloader: replay needs the CSV of requests to replay");
        if (j.dataloader != "replay" && !replay.empty())
            throw UserError(j.where() + ".serving.replay_file", "is read with dataloader: replay only (this job's is " + j.dataloader + ")");
    }
    j.parallel.microbatch = j.tuning.microbatch > 0 ? j.tuning.microbatch : 1;
    if (f.has("global_batch")) j.parallel.global_batch = f.integer("global_batch");
    if (f.has("schedule")) {
        const YamlFields sch = f.map("schedule");
        sch.only(block_keys().at("schedule"));
        const YAML::Node phases = sch.node("phases");
        if (!phases.IsSequence()) throw UserError(sch.where() + ".phases", "must be a list");
        double minutes = 0;
        for (size_t i = 0; i < phases.size(); ++i) {
            const YamlFields ph(phases[i], sch.where() + ".phases[" + std::to_string(i) + "]");
            JobPhase x;
            x.name = ph.str("name");
            if (!is_folder_name(x.name))
                throw UserError(ph.where() + ".name", "'" + x.name + "': a phase name is a folder under the output directory: letters, "
                                                      "digits, '_', '-' and '.' only, not '.' or '..'");
            for (const JobPhase& earlier : j.phases)
                if (earlier.name == x.name) throw UserError(ph.where() + ".name", "'" + x.name + "' names two phases: names must be unique");
            x.duration_minutes = ph.real("duration_minutes");
            if (!(x.duration_minutes >= 0)) throw UserError(ph.where() + ".duration_minutes", "must be >= 0");
            minutes += x.duration_minutes;
            x.tokens_scale = ph.has("tokens_scale") ? ph.real("tokens_scale") : ph.has("autoscale_factor") ? ph.real("autoscale_factor") : 1.0;
            x.request_profile = ph.choice_or("request_profile", "steady_state", {"steady_state", "peak", "spike", "low"});
            if (ph.has("overrides")) {
                const YamlFields ov = ph.map("overrides");  // kept: raw() refers into it
                check_override_keys(ov, j.warnings);
                for (const auto& kv : ov.raw()) x.overrides[kv.first.as<std::string>()] = dump(kv.second);
            }
            for (const auto& kv : ph.raw()) {
                const std::string k = kv.first.as<std::string>();
                if (std::find(kPhaseKeys.begin(), kPhaseKeys.end(), k) != kPhaseKeys.end()) continue;
                x.custom[k] = yaml_to_json(kv.second).dump();
                if (const std::string w = near_miss_warning(ph.where(), k, kPhaseKeys); !w.empty()) j.warnings.push_back(w);
            }
            j.phases.push_back(x);
        }
        if (phases.size() > 0 && !(minutes > 0))
            throw UserError(sch.where() + ".phases", "every duration_minutes is 0: the phases' weights would be undefined");
    }
    for (const auto& kv : entry) {
        const std::string k = kv.first.as<std::string>();
        const bool own = std::find(kEntryKeys.begin(), kEntryKeys.end(), k) != kEntryKeys.end();
        if (!own || k == "global_batch" || k == "training") j.custom[k] = yaml_to_json(kv.second).dump();
        if (!own)
            if (const std::string w = near_miss_warning(j.where(), k, kEntryKeys); !w.empty()) j.warnings.push_back(w);
    }
    if (!phase.empty() && j.serving.given) {
        // a serving job's phase: requests arrive over the phase's minutes at the entry's rate times
        // its request_profile's multiplier (request_profile_rate) and its tokens_scale, on dp x
        // autoscale_factor replicas
        ServingSpec& v = j.serving;
        v.profile = profile;
        v.arrival_rate_per_s *= request_profile_rate(profile) * (tokens_scale_given ? phase_scale : 1.0);
        if (profile == "spike") v.arrival = "bursty";
        j.duration_minutes = phase_minutes;
        if (replicas_scale != 1.0) j.parallel.dp = std::max<int64_t>(1, int64_t(std::llround(double(j.parallel.dp) * replicas_scale)));
        return j;
    }
    // a phase run as one batch (no serving block): tokens_scale and, for inference, the
    // request_profile's multiplier scale the sequences at once; autoscale_factor the replicas
    if (!phase.empty() && j.training() && profile != "steady_state")
        throw UserError(j.where() + ".schedule.phases." + phase + ".request_profile = " + profile,
                        "shapes an inference load; a training job's phase scales its global batch by tokens_scale");
    if (!phase.empty() && profile == "spike")
        throw UserError(j.where() + ".schedule.phases." + phase + ".request_profile = spike",
                        "means bursty arrivals, which a phase run as one batch has none of: give the entry a serving block");
    if (!phase.empty() && !j.training()) phase_scale *= request_profile_rate(profile);
    if (!phase.empty()) j.duration_minutes = phase_minutes;  // a phase lasts its own minutes
    if (replicas_scale != 1.0) {
        ParallelismSpec& s = j.parallel;
        const int64_t dp = std::max<int64_t>(1, int64_t(std::llround(double(s.dp) * replicas_scale)));
        if (j.training() && s.global_batch > 0) s.global_batch = s.global_batch / s.dp * dp;  // each replica's share kept
        s.dp = dp;
    }
    if (phase_scale != 1.0) {  // the phase's load: more (or fewer) sequences at once
        ParallelismSpec& s = j.parallel;
        if (j.training()) {
            const int64_t unit = s.dp * s.microbatch, base = s.global_batch > 0 ? s.global_batch : unit;
            s.global_batch = std::max<int64_t>(unit, int64_t(std::llround(double(base) * phase_scale / double(unit))) * unit);
        } else {
            s.microbatch = std::max<int64_t>(1, int64_t(std::llround(double(s.microbatch) * phase_scale)));
            j.tuning.microbatch = s.microbatch;
        }
    }
    return j;
}

LlmJob read_llm_job_toml(const std::string& file, const std::string& name) {
    LlmJob j;
    j.file = file, j.name = name;
    int64_t batch = 0;
    if (!read_llm_entry(file, name, j.model, batch)) throw UserError(file + "#" + name, "not an llm entry: only llm entries run as parallel jobs");
    toml::table t;
    try {
        t = toml::parse_file(file);
    } catch (const toml::parse_error& e) {
        throw UserError(file, std::string(e.description()));
    }
    const toml::table* e = t[name].as_table();
    if (!e) e = t["workload"][name].as_table();
    // the TOML tables seen through the same typed reader as the YAML's
    auto to_yaml = [](const toml::table& tb) {
        YAML::Node n(YAML::NodeType::Map);
        for (const auto& [k, v] : tb) {
            if (v.is_integer()) n[std::string(k.str())] = v.value<int64_t>().value();
            else if (v.is_floating_point()) n[std::string(k.str())] = v.value<double>().value();
            else if (v.is_boolean()) n[std::string(k.str())] = v.value<bool>().value();
            else if (v.is_string()) n[std::string(k.str())] = v.value<std::string>().value();
        }
        return n;
    };
    const YamlFields f(to_yaml(*e), j.where());
    if (!(*e)["parallelism"].is_table()) throw UserError(j.where() + ".parallelism", "missing (a table {tp, pp, dp, ...})");
    auto block = [&](const std::string& key) { return YamlFields(to_yaml(*(*e)[key].as_table()), j.where() + "." + key); };
    read_parallelism(block("parallelism"), j.parallel);
    if ((*e)["runtime_tuning"].is_table()) read_tuning(block("runtime_tuning"), j.tuning);
    if ((*e)["training"].is_table()) read_training(block("training"), j.parallel);
    j.framework = f.str_or("framework", "megatron");
    j.track = "parity", j.dataloader = "synthetic";
    j.parallel.microbatch = j.tuning.microbatch > 0 ? j.tuning.microbatch : batch > 0 ? batch : 1;
    if (f.has("global_batch")) j.parallel.global_batch = f.integer("global_batch");
    return j;
}

bool is_llm_job(const std::string& ref) {
    const auto hash = ref.find('#');
    if (hash == std::string::npos) return false;
    const std::string file = ref.substr(0, hash), ext = std::filesystem::path(file).extension().string();
    if (ext == ".yaml" || ext == ".yml") return true;
    if (ext != ".toml" || !std::filesystem::is_regular_file(file)) return false;
    try {
        const toml::table t = toml::parse_file(file);
        const std::string name = ref.substr(hash + 1);
        const toml::node_view<const toml::node> e = t[name].is_table() ? t[name] : t["workload"][name];
        return e["parallelism"].is_table();
    } catch (const toml::parse_error&) {
        return false;
    }
}

namespace {

/// One KEY=VALUE of a command-line flag (`--parallel`, `--serving`), its value read as the key
/// needs; a bad one is a UserError naming the flag and the assignment.
struct Assignment {
    std::string flag, text, key, value;
    Assignment(const std::string& flag_name, const std::string& assignment) : flag(flag_name), text(assignment) {
        const auto eq = assignment.find('=');
        if (eq == std::string::npos) throw bad("must be KEY=VALUE");
        key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
    }
    UserError bad(const std::string& why) const { return UserError(flag + " " + text, why); }
    int64_t integer(int64_t min) const {
        size_t used = 0;
        int64_t v = 0;
        try {
            v = std::stoll(value, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != value.size() || v < min) throw bad("must be an integer >= " + std::to_string(min));
        return v;
    }
    bool boolean() const {
        if (value == "true") return true;
        if (value == "false") return false;
        throw bad("must be true or false");
    }
    std::string choice(const std::vector<std::string>& names) const {
        if (std::find(names.begin(), names.end(), value) == names.end()) {
            std::string list;
            for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
            throw bad("must be one of " + list);
        }
        return value;
    }
};

}  // namespace

void set_parallel_field(ParallelismSpec& s, const std::string& assignment) {
    const Assignment a("--parallel", assignment);
    const std::string& key = a.key;
    if (key == "tp") s.tp = a.integer(1);
    else if (key == "pp") s.pp = a.integer(1);
    else if (key == "dp") s.dp = a.integer(1);
    else if (key == "ep") s.ep = a.integer(1);
    else if (key == "virtual_stages") s.virtual_stages = a.integer(1);
    else if (key == "microbatch") s.microbatch = a.integer(1);
    else if (key == "global_batch") s.global_batch = a.integer(1);
    else if (key == "zero_stage") s.zero_stage = a.integer(0);
    else if (key == "sequence_parallel") s.sequence_parallel = a.boolean();
    else if (key == "dp_overlap") s.dp_overlap = a.boolean();
    else if (key == "schedule") s.schedule = a.choice(pipeline_schedule_names());
    else if (key == "recompute") s.recompute = a.choice({"none", "selective", "full"});
    else
        throw a.bad("unknown key (tp, pp, dp, ep, virtual_stages, microbatch, global_batch, zero_stage, sequence_parallel, dp_overlap, schedule, "
                    "recompute)");
}

void set_serving_field(ServingSpec& s, const std::string& assignment) {
    const Assignment a("--serving", assignment);
    const std::string& key = a.key;
    if (key == "max_batch") s.max_batch = a.integer(1);
    else if (key == "max_num_tokens") s.max_num_tokens = a.integer(1);
    else if (key == "policy") s.policy = a.choice({"continuous", "static"});
    else if (key == "scheduler") s.scheduler = a.choice({"guaranteed_no_evict", "max_utilization"});
    else if (key == "chunked_prefill") s.chunked_prefill = a.boolean();
    else if (key == "prefill_replicas") s.prefill_replicas = a.integer(0);
    else throw a.bad("unknown key (max_batch, max_num_tokens, policy, scheduler, chunked_prefill, prefill_replicas)");
}

}  // namespace archsim
