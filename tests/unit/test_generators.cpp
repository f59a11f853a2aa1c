// Generated workloads: the MLP family builds exactly the graph of the equivalent ONNX export, and
// bad workload entries are one-line errors naming the file, the entry and the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/base/error.h"
#include "tests/support/temp_file.h"
#include "workloads/generators/llm.h"
#include "workloads/load_workload.h"

using namespace archsim;
namespace fs = std::filesystem;

namespace {
std::string write(const std::string& name, const std::string& text) { return test::write_temp(name, text); }
const char* kMlp = "[mlp]\nfamily = \"mlp\"\nlayers = 2\ninput = 1024\nwidth = 4096\noutput = 1024\nbatch = 64\nowner = \"a tag\"\n";
}  // namespace

TEST_CASE("the mlp generator equals shared/models/mlp.onnx operator by operator", "[import][generators]") {
    const std::string onnx = std::string(ARCHSIM_SHARED_DIR) + "/models/mlp.onnx";
    if (!fs::exists(onnx)) {
        WARN("shared/models not found; skipped");
        return;
    }
    const std::string file = write("archsim_gen_mlp.toml", kMlp);
    const ImportResult gen = load_workload(file + "#mlp", {});
    const ImportResult ref = load_workload(onnx, {});
    CHECK(gen.graph.model_name() == "mlp");
    REQUIRE(gen.graph.ops().size() == ref.graph.ops().size());
    CHECK(gen.graph.total_macs() == ref.graph.total_macs());
    CHECK(gen.graph.total_params() == ref.graph.total_params());
    for (size_t i = 0; i < ref.graph.ops().size(); ++i) {
        const auto& a = gen.graph.ops()[i];
        const auto& b = ref.graph.ops()[i];
        INFO(b.name);
        CHECK(a.name == b.name);
        CHECK(a.op_type == b.op_type);
        CHECK(a.cost.macs == b.cost.macs);
        CHECK(a.cost.params == b.cost.params);
        CHECK(a.cost.bytes_read == b.cost.bytes_read);
        CHECK(a.cost.bytes_written == b.cost.bytes_written);
        REQUIRE(a.inputs.size() == b.inputs.size());
        for (size_t k = 0; k < a.inputs.size(); ++k)
            CHECK(gen.graph.tensors()[a.inputs[k]].shape == ref.graph.tensors()[b.inputs[k]].shape);
    }
    // --batch overrides the entry's batch, like an ONNX file's dim 0
    ImportOptions opt;
    opt.batch = 8;
    CHECK(load_workload(file + "#mlp", opt).graph.total_macs() == ref.graph.total_macs() / 8);
    fs::remove(file);
}

/// The operators of `a` and `b` agree one by one: name, type, MACs, params and input shapes.
void same_ops(const OpGraph& a, const std::vector<const Operator*>& b, const OpGraph& bg) {
    REQUIRE(a.ops().size() == b.size());
    for (size_t i = 0; i < b.size(); ++i) {
        const auto& x = a.ops()[i];
        const auto& y = *b[i];
        INFO(y.name);
        CHECK(x.op_type == y.op_type);
        CHECK(x.cost.macs == y.cost.macs);
        CHECK(x.cost.params == y.cost.params);
        REQUIRE(x.inputs.size() == y.inputs.size());
        for (size_t k = 0; k < x.inputs.size(); ++k) CHECK(a.tensors()[x.inputs[k]].shape == bg.tensors()[y.inputs[k]].shape);
    }
}

TEST_CASE("the resnet_block generator equals the torchvision exports", "[import][generators]") {
    const std::string shared = std::string(ARCHSIM_SHARED_DIR) + "/models/";
    if (!fs::exists(shared + "resnet_basic_block.onnx")) {
        WARN("shared/models not found; skipped");
        return;
    }
    const std::string file = write("archsim_gen_rb.toml",
                                   "[basic]\nfamily = \"resnet_block\"\nin_channels = 64\nchannels = 128\nstride = 2\nsize = 56\nbatch = 32\n"
                                   "[bottleneck]\nfamily = \"resnet_block\"\nblock = \"bottleneck\"\nin_channels = 256\nchannels = 512\n"
                                   "stride = 2\nsize = 56\n");
    // BasicBlock(64 -> 128, stride 2) = resnet_basic_block.onnx, names included
    const ImportResult basic = load_workload(file + "#basic", {});
    const ImportResult ref = load_workload(shared + "resnet_basic_block.onnx", {});
    std::vector<const Operator*> ref_ops;
    for (const auto& o : ref.graph.ops()) ref_ops.push_back(&o);
    same_ops(basic.graph, ref_ops, ref.graph);
    for (size_t i = 0; i < ref_ops.size(); ++i) CHECK(basic.graph.ops()[i].name == ref_ops[i]->name);
    CHECK(basic.graph.total_params() == ref.graph.total_params());
    // Bottleneck(256 -> 512, stride 2) = resnet50's layer2[0], in the export's order
    const ImportResult bott = load_workload(file + "#bottleneck", {});
    const ImportResult r50 = load_workload(shared + "resnet50.onnx", {});
    std::vector<const Operator*> layer;
    for (const auto& o : r50.graph.ops())
        if (o.name.find("/layer2/layer2.0/") == 0) layer.push_back(&o);
    same_ops(bott.graph, layer, r50.graph);
    fs::remove(file);
}

TEST_CASE("the transformer_encoder generator equals shared/models/bert_like_encoder.onnx", "[import][generators]") {
    const std::string onnx = std::string(ARCHSIM_SHARED_DIR) + "/models/bert_like_encoder.onnx";
    if (!fs::exists(onnx)) {
        WARN("shared/models not found; skipped");
        return;
    }
    const std::string file = write("archsim_gen_bert.toml", "[bert]\nfamily = \"transformer_encoder\"\nlayers = 6\nd_model = 512\n"
                                                            "heads = 8\nffn = 2048\nsequence = 128\n");
    const ImportResult gen = load_workload(file + "#bert", {});
    const ImportResult ref = load_workload(onnx, {});
    std::vector<const Operator*> ref_ops;
    for (const auto& o : ref.graph.ops()) ref_ops.push_back(&o);
    same_ops(gen.graph, ref_ops, ref.graph);
    CHECK(gen.graph.total_macs() == ref.graph.total_macs());
    CHECK(gen.graph.total_params() == ref.graph.total_params());
    CHECK(gen.graph.total_flops() == ref.graph.total_flops());
    fs::remove(file);
}

TEST_CASE("the transformer_encoder gpt2 style equals shared/models/gpt2_small_stack.onnx", "[import][generators]") {
    const std::string onnx = std::string(ARCHSIM_SHARED_DIR) + "/models/gpt2_small_stack.onnx";
    if (!fs::exists(onnx)) {
        WARN("shared/models not found; skipped");
        return;
    }
    const std::string file = write("archsim_gen_gpt2.toml", "[gpt2]\nfamily = \"transformer_encoder\"\nstyle = \"gpt2\"\nlayers = 12\n"
                                                            "d_model = 768\nheads = 12\nffn = 3072\nsequence = 256\n");
    const ImportResult gen = load_workload(file + "#gpt2", {});
    const ImportResult ref = load_workload(onnx, {});
    // the export's causal-mask Constant keeps its data in the stripped external weights file, so
    // it stays an (empty) operator there while ours folds away: compare all the others
    std::vector<const Operator*> ref_ops;
    for (const auto& o : ref.graph.ops())
        if (o.op_type != "Constant") ref_ops.push_back(&o);
    same_ops(gen.graph, ref_ops, ref.graph);
    for (size_t i = 0; i < ref_ops.size(); ++i) CHECK(gen.graph.ops()[i].name == ref_ops[i]->name);
    CHECK(gen.graph.total_macs() == ref.graph.total_macs());
    CHECK(gen.graph.total_params() == ref.graph.total_params());
    CHECK(gen.graph.total_flops() == ref.graph.total_flops());
    fs::remove(file);
}

TEST_CASE("the conv generator's MACs and shapes follow the convolution formulas", "[import][generators]") {
    const std::string file = write("archsim_gen_conv.toml",
                                   "[c]\nfamily = \"conv\"\nlayers = 2\nin_channels = 3\ninput = [32, 16]\nchannels = [8, 16]\n"
                                   "kernel = [3, 1]\nstride = [2, 1]\ngroups = [1, 2]\nbatch_norm = true\nbatch = 2\n");
    const ImportResult r = load_workload(file + "#c", {});
    // layer 0: 3 -> 8, 3x3 stride 2 pad 1: 16 x 8 outputs; layer 1: 8 -> 16, 1x1, 2 groups
    const int64_t l0 = 2 * 8 * 16 * 8 * 3 * 3 * 3, l1 = 2 * 16 * 16 * 8 * (8 / 2) * 1 * 1;
    CHECK(r.graph.total_macs() == l0 + l1);
    CHECK(r.graph.ops().size() == 2 * 3);  // conv, batch norm, relu per layer
    CHECK(r.graph.tensors()[r.graph.ops().back().outputs[0]].shape == std::vector<int64_t>{2, 16, 16, 8});
    fs::remove(file);
}

TEST_CASE("bad workload entries are one line naming the entry and the field", "[import][generators]") {
    const std::string file = write("archsim_gen_bad.toml",
                                   std::string(kMlp) + "[nolayers]\nfamily = \"mlp\"\ninput = 4\noutput = 4\n"
                                                       "[badfam]\nfamily = \"mlpp\"\n[badwidth]\nfamily = \"mlp\"\nlayers = 3\n"
                                                       "input = 4\noutput = 4\nwidth = [8]\n[badact]\nfamily = \"mlp\"\nlayers = 1\n"
                                                       "input = 4\noutput = 4\nactivation = \"tanh\"\n");
    auto error = [&](const std::string& name) {
        try {
            load_workload(file + "#" + name, {});
        } catch (const UserError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(error("nolayers") == file + ": [nolayers].layers: missing (required)");
    CHECK(error("badfam") == file + ": [badfam].family: unknown family 'mlpp' (known: mlp, conv, resnet_block, transformer_encoder, llm, rnn, seq_autoencoder, conv_autoencoder, separable_cnn, tcn, moe_mlp, rotary_encoder, kernel)");
    CHECK(error("badwidth") == file + ": [badwidth].width: has 1 values, expected 2");
    CHECK(error("badact").find("[badact].activation: 'tanh' is not one of relu, gelu, sigmoid") != std::string::npos);
    CHECK(error("missing").find("no such workload in this file (it has: badact, badfam, badwidth, mlp, nolayers)") != std::string::npos);
    fs::remove(file);
}

TEST_CASE("llm presets have their published parameter counts", "[import][generators][llm]") {
    const std::string file = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/llm_presets.toml";
    // published: GPT-2 124 M and 355 M (Radford et al. 2019), Llama-2-7B 6.74 B (Touvron et al.
    // 2023), Llama-3-8B 8.03 B (Meta model card), Mixtral-8x7B 46.7 B (Jiang et al. 2024)
    const std::vector<std::pair<std::string, double>> published = {
        {"gpt2_small", 124e6}, {"gpt2_medium", 355e6}, {"llama2_7b", 6.74e9}, {"llama3_8b", 8.03e9}, {"mixtral_8x7b", 46.7e9}};
    for (const auto& [name, params] : published) {
        INFO(name);
        const ImportResult r = load_workload(file + "#" + name + "@decode=64", {});
        CHECK(double(r.graph.total_params()) == Approx(params).epsilon(0.01));
    }
}

TEST_CASE("llm decode costs about 2 FLOPs per active parameter per token", "[import][generators][llm]") {
    const std::string file = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/llm_presets.toml";
    // dense: every weight once per token (attention over 64 cached tokens adds < 1%)
    const ImportResult llama = load_workload(file + "#llama2_7b@decode=64", {});
    const double embed = 32000.0 * 4096;  // a Gather, not a matmul
    CHECK(2.0 * llama.graph.total_macs() == Approx(2.0 * (llama.graph.total_params() - embed)).epsilon(0.01));
    // MoE: only the top-2 of 8 experts run for one token
    const ImportResult moe = load_workload(file + "#mixtral_8x7b@decode=64", {});
    const double expert = 3.0 * 4096 * 14336, layers = 32;
    const double active = moe.graph.total_params() - layers * 6 * expert - 32000.0 * 4096;
    CHECK(double(moe.graph.total_macs()) == Approx(active).epsilon(0.01));
    // prefill of P tokens: P times the per-token matmul work, plus attention (quadratic in P)
    const ImportResult pre = load_workload(file + "#llama2_7b@prefill", {});
    CHECK(pre.graph.total_macs() > 500 * (llama.graph.total_macs() - 32 * 64 * 4096 * 2));
    // bad phases
    CHECK_THROWS_AS(load_workload(file + "#llama2_7b@decode=0", {}), UserError);
    CHECK_THROWS_AS(load_workload(file + "#llama2_7b@bogus", {}), UserError);
}

TEST_CASE("an llm shard splits every contraction over tensor-parallel ranks and keeps only its chunk", "[import][generators][llm]") {
    const std::string file = std::string(ARCHSIM_SOURCE_DIR) + "/workloads/llm_presets.toml#llama2_7b@prefill";
    auto macs = [&](const std::vector<std::string>& sets) {
        ImportOptions o;
        o.workload_sets = sets;
        return load_workload(file, o).graph.total_macs();
    };
    const int64_t whole = macs({});
    // Megatron's column/row splits: heads, FFN and vocabulary over tp, so every MAC halves
    CHECK(macs({"shard.tp=2"}) * 2 == whole);
    // at tp = 4 Megatron pads the 32,000-word vocabulary to 32,256 (a multiple of 128 x 4): the
    // prefill's LM head (one token) does 4096 x 256 more MACs
    CHECK(macs({"shard.tp=4"}) * 4 == whole + 4096 * 256);
    // a middle pipeline chunk: its layers only (no embedding, no LM head); the 32 layers are equal
    const int64_t half = macs({"shard.layers=16", "shard.embedding=false", "shard.head=false"});
    const int64_t head = macs({"shard.layers=0", "shard.embedding=false", "shard.head=true"});
    CHECK(2 * half + head == whole);
    CHECK(padded_vocab(50257, 1) == 50304);  // GPT-2's vocabulary as Megatron pads it
    CHECK(padded_vocab(51200, 8) == 51200);
    CHECK_THROWS_WITH(macs({"shard.tp=5"}), Catch::Contains("shard.tp = 5") && Catch::Contains("does not divide heads"));
    CHECK_THROWS_WITH(macs({"shard.layers=33"}), Catch::Contains("more than the model's 32 layers"));
}

TEST_CASE("a request's decode steps are priced by four sampled steps, each once", "[import][generators]") {
    using V = std::vector<int64_t>;
    CHECK(decode_step_samples(0) == V{});
    CHECK(decode_step_samples(1) == V{0});
    CHECK(decode_step_samples(2) == V{0, 1});
    CHECK(decode_step_samples(4) == V{0, 1, 2, 3});
    CHECK(decode_step_samples(7) == V{0, 2, 4, 6});
    CHECK(decode_step_samples(512) == V{0, 170, 340, 511});
}
