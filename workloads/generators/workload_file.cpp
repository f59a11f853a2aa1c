#include "workloads/generators/workload_file.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <set>

#include "sim/base/precision.h"
#include "sim/base/error.h"
#include "sim/base/toml_load.h"
#include "workloads/generators/generator_args.h"
#include "workloads/generators/cnn.h"
#include "workloads/generators/conv_nets.h"
#include "workloads/generators/llm.h"
#include "workloads/generators/mlp.h"
#include "workloads/generators/moe.h"
#include "workloads/generators/recurrent.h"
#include "workloads/generators/rotary.h"
#include "workloads/generators/single_kernel.h"
#include "workloads/generators/transformer.h"
#include "workloads/training/training_step.h"

namespace archsim {

const std::vector<WorkloadFamily>& workload_families() {
    static const std::vector<WorkloadFamily> families = {
        {"mlp", "multilayer perceptron: layers, input, output, width, activation, bias, batch", &build_mlp},
        {"conv", "a stack of convolutions: layers, in_channels, input, channels, kernel, stride, padding, groups, batch_norm, "
                 "activation, bias, batch", &build_conv},
        {"resnet_block", "a ResNet basic or bottleneck block: block, in_channels, channels, stride, size, batch", &build_resnet_block},
        {"transformer_encoder", "post-LN transformer encoder layers: layers, d_model, heads, ffn, sequence, activation, batch",
         &build_transformer_encoder},
        {"llm", "decoder-only LLM (gpt, llama, moe) in phases @prefill and @decode=L: preset or hidden, layers, heads, kv_heads, "
                "ffn, vocab, experts, top_k, sequence.prompt, sequence.generate, precision.weights, precision.activations, batch",
         &build_llm},
        {"rnn", "a stack of LSTM or GRU layers: cell, layers, input, hidden, sequence, bidirectional, classes, batch", &build_rnn},
        {"seq_autoencoder", "a recurrent sequence autoencoder: cell, layers, features, hidden, sequence, batch", &build_seq_autoencoder},
        {"conv_autoencoder", "a convolutional autoencoder with skip connections (U-Net): in_channels, size, channels, depth, skip, "
                             "batch_norm, batch", &build_conv_autoencoder},
        {"separable_cnn", "a depthwise-separable CNN with squeeze-excite: in_channels, size, stem, blocks, channels, stride, se_ratio, "
                          "batch_norm, activation, classes, batch", &build_separable_cnn},
        {"tcn", "a dilated causal temporal CNN: in_channels, levels, channels, kernel, sequence, classes, batch", &build_tcn},
        {"moe_mlp", "a mixture-of-experts MLP with top-k gating: input, width, layers, experts, top_k, ffn, activation, output, batch",
         &build_moe_mlp},
        {"rotary_encoder", "a pre-LN transformer encoder with rotary positions: layers, d_model, heads, ffn, sequence, activation, "
                           "classes, batch", &build_rotary_encoder},
        {"kernel", "one operator alone, as a kernel microbenchmark times it: op (matmul | softmax | layernorm | gelu | attention), m, n, k, "
                   "hidden, heads, sequence, causal, batch", &build_single_kernel},
    };
    return families;
}

namespace {
/// The workload table `name`: a top-level [name] with a family, or [workload.name]; nullptr if none.
const toml::table* find_entry(const toml::table& root, const std::string& name) {
    const toml::table* entry = root[name].as_table();
    if (entry && !entry->contains("family")) entry = nullptr;  // a table, not a workload
    if (!entry) entry = root["workload"][name].as_table();
    return entry;
}

/// The fields every entry may hold besides its family's: how it is run (WorkloadRunFields).
const std::set<std::string>& run_field_keys() {
    static const std::set<std::string> keys = {"mode", "optimizer", "loss", "recompute", "microbatches", "setup", "precision"};
    return keys;
}

/// `entry` with each "KEY=VALUE" of `sets` written into it (KEY dotted into sub-tables, made
/// when missing; VALUE parsed as a TOML value, else taken as a string). Throws UserError naming
/// `where` and the set for one without '=' or one that changes the family.
toml::table with_sets(const toml::table& entry, const std::vector<std::string>& sets, const std::string& where) {
    toml::table out = entry;
    for (const std::string& set : sets) {
        const size_t eq = set.find('=');
        const std::string key = set.substr(0, eq);
        if (eq == std::string::npos || key.empty() || eq + 1 == set.size())
            throw UserError(where, "workload set '" + set + "' is not KEY=VALUE");
        if (key == "family") throw UserError(where + ".family", "a workload set cannot change the family");
        const std::string text = set.substr(eq + 1);
        toml::table parsed;
        try {
            parsed = toml::parse("v = " + text);
        } catch (const toml::parse_error&) {
            parsed.insert("v", text);  // a bare word: a string
        }
        toml::table* at = &out;
        size_t from = 0;
        for (size_t dot; (dot = key.find('.', from)) != std::string::npos; from = dot + 1) {
            const std::string part = key.substr(from, dot - from);
            if (!at->contains(part)) at->insert(part, toml::table{});
            at = (*at)[part].as_table();
            if (!at) throw UserError(where + "." + key, "'" + part + "' is not a table of this entry");
        }
        at->insert_or_assign(key.substr(from), *parsed.get("v"));
    }
    return out;
}

/// Throws UserError if a key of `sets` is neither read by the family (`args`) nor a run field.
void check_sets_used(const std::vector<std::string>& sets, const GeneratorArgs& args, const std::string& family) {
    for (const std::string& set : sets) {
        const std::string key = set.substr(0, set.find('='));
        if (!args.used().count(key) && !run_field_keys().count(key) && key != "batch")
            throw UserError(args.where() + "." + key, "not a field of the " + family + " family (workload set '" + set + "')");
    }
}
}  // namespace

bool read_llm_entry(const std::string& file, const std::string& name, LlmShape& shape, int64_t& batch,
                    const std::vector<std::string>& sets) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such workload file");
    const toml::table root = detail::parse_toml_file(file);
    const toml::table* found = find_entry(root, name);
    if (!found || (*found)["family"].value_or(std::string()) != "llm") return false;
    const std::string where = file + ": [" + name + "]";
    const toml::table entry = with_sets(*found, sets, where);
    const GeneratorArgs args(entry, where);
    shape = read_llm_shape(args);
    batch = args.integer_or("batch", 1);
    return true;
}

WorkloadRunFields read_workload_run_fields(const std::string& file, const std::string& name, const std::vector<std::string>& sets) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such workload file");
    const toml::table root = detail::parse_toml_file(file);
    const std::string entry_name = name.substr(0, name.find('@'));
    const std::string where = file + ": [" + entry_name + "]";
    const toml::table* found = find_entry(root, entry_name);
    if (!found) return {};  // generate_workload names the missing entry
    const toml::table entry = with_sets(*found, sets, where);
    const GeneratorArgs args(entry, where);
    WorkloadRunFields f;
    f.train = args.choice_or("mode", "infer", {"infer", "train"}) == "train";
    // the training fields are checked in either mode and apply in training (a study's
    // workload.mode axis may run the same entry both ways)
    if (args.has("optimizer")) f.optimizer = args.choice_or("optimizer", "", optimizer_names());
    if (args.has("loss")) f.loss = args.choice_or("loss", "", loss_names());
    if (args.has("recompute")) f.recompute = args.choice_or("recompute", "", recompute_names());
    if (args.has("microbatches")) f.microbatches = args.integer("microbatches");
    if (args.has("setup")) f.setup = args.boolean_or("setup", false);
    // the precision the entry runs at: an llm entry's weights, or any entry's `precision`
    if (args.has("precision.weights")) f.precision = args.choice_or("precision.weights", "", precision_names());
    else if (args.has("precision") && !entry["precision"].is_table()) f.precision = args.choice_or("precision", "", precision_names());
    return f;
}

namespace {

/// Builds the ONNX model of workload `name` of `file` (see generate_workload) and its tags.
onnx::ModelProto build_workload(const std::string& file, const std::string& name, const ImportOptions& options,
                                std::map<std::string, std::string>* tags) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such workload file");
    const toml::table root = detail::parse_toml_file(file);
    const size_t at = name.find('@');
    const std::string entry_name = name.substr(0, at), phase = at == std::string::npos ? "" : name.substr(at + 1);
    const std::string where = file + ": [" + entry_name + "]";
    const toml::table* found = find_entry(root, entry_name);
    if (!found) {
        std::string names;
        for (const auto& [k, v] : root)
            if (v.is_table() && v.as_table()->contains("family")) names += (names.empty() ? "" : ", ") + std::string(k.str());
        if (const auto* w = root["workload"].as_table())
            for (const auto& [k, v] : *w) names += (names.empty() ? "" : ", ") + std::string(k.str());
        throw UserError(where, "no such workload in this file (it has: " + (names.empty() ? std::string("none") : names) + ")");
    }
    const toml::table edited = with_sets(*found, options.workload_sets, where);
    const toml::table* entry = &edited;
    const auto family = (*entry)["family"].value<std::string>();
    if (!family) throw UserError(where + ".family", "missing (required: the generator to use)");
    const WorkloadFamily* f = nullptr;
    std::string known;
    for (const auto& fam : workload_families()) {
        known += (known.empty() ? "" : ", ") + std::string(fam.name);
        if (*family == fam.name) f = &fam;
    }
    if (!f) throw UserError(where + ".family", "unknown family '" + *family + "' (known: " + known + ")");
    if (!phase.empty() && *family != "llm") throw UserError(where + "@" + phase, "only llm workloads have phases");
    const GeneratorArgs args(*entry, where, phase);
    const int64_t batch = options.batch ? *options.batch : args.integer_or("batch", 1);
    onnx::ModelProto model;
    f->build(args, batch, model);
    check_sets_used(options.workload_sets, args, *family);
    if (tags) {
        tags->clear();
        for (const auto& [k, v] : *entry) {
            const std::string key(k.str());
            if (key == "family" || key == "batch" || args.used().count(key) || run_field_keys().count(key)) continue;
            if (v.is_table()) continue;  // sub-tables (sequence, precision) belong to the family
            if (auto str = v.value<std::string>()) (*tags)[key] = *str;
            else if (v.is_integer()) (*tags)[key] = std::to_string(*v.value<int64_t>());
            else if (v.is_floating_point()) (*tags)[key] = std::to_string(*v.value<double>());
            else if (v.is_boolean()) (*tags)[key] = *v.value<bool>() ? "true" : "false";
        }
    }
    return model;
}

}  // namespace

ImportResult generate_workload(const std::string& file, const std::string& name, const ImportOptions& options,
                               std::map<std::string, std::string>* tags) {
    onnx::ModelProto model = build_workload(file, name, options, tags);
    ImportOptions opt = options;
    opt.batch.reset();  // the generator built the batch in
    return import_onnx_model(std::move(model), file + "#" + name, opt);
}

std::map<std::string, std::string> workload_tags(const std::string& file, const std::string& name) {
    std::map<std::string, std::string> tags;
    build_workload(file, name, {}, &tags);
    return tags;
}

}  // namespace archsim
