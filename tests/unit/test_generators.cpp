// Generated workloads: the MLP family builds exactly the graph of the equivalent ONNX export, and
// bad workload entries are one-line errors naming the file, the entry and the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/common/error.h"
#include "workloads/load_workload.h"

using namespace archsim;
namespace fs = std::filesystem;

namespace {
std::string write(const std::string& name, const std::string& text) {
    const std::string path = (fs::temp_directory_path() / name).string();
    std::ofstream(path) << text;
    return path;
}
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
    CHECK(error("badfam") == file + ": [badfam].family: unknown family 'mlpp' (known: mlp)");
    CHECK(error("badwidth") == file + ": [badwidth].width: has 1 values, expected 2");
    CHECK(error("badact").find("[badact].activation: 'tanh' is not one of relu, gelu, sigmoid") != std::string::npos);
    CHECK(error("missing").find("no such workload in this file (it has: badact, badfam, badwidth, mlp, nolayers)") != std::string::npos);
    fs::remove(file);
}
