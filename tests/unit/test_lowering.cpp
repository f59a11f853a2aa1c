// Runtime lowering (workloads/lowering): each pattern on a small hand-built graph, the invariants
// on every shared model (MACs unchanged, every operator in exactly one kernel), and pattern
// counts on a real export.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "workloads/generators/onnx_builder.h"
#include "workloads/lowering/lower.h"
#include "workloads/onnx/causal_mask.h"
#include "workloads/onnx/importer.h"

using namespace archsim;
namespace fs = std::filesystem;

namespace {

std::string shared_path(const std::string& rel) { return std::string(ARCHSIM_SHARED_DIR) + "/" + rel; }
bool have_shared() { return fs::is_directory(shared_path("models")); }

/// Imports the graph `body` writes (x: float input of `x_dims`, output "y" of `y_dims`).
OpGraph build(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& y_dims,
              const std::function<std::string(gen::Emitter&)>& body) {
    onnx::ModelProto model;
    onnx::GraphProto& g = gen::start_model(model, "hand");
    gen::add_input(g, "x", x_dims);
    gen::Emitter e(g, "/h");
    const std::string out = body(e);
    gen::add_node(g, "Identity", "/h/out", {out}, {"y"});
    gen::add_output(g, "y", y_dims);
    return import_onnx_model(model, "hand.onnx").graph;
}

RuntimeProfile profile(bool epilogues, bool vector_regions, bool layouts) {
    RuntimeProfile p;
    p.name = "test";
    p.epilogues = epilogues;
    p.vector_regions = vector_regions;
    p.layouts = layouts;
    return p;
}

/// The kernels that do work (views left out).
std::vector<const Operator*> kernels(const OpGraph& plan) {
    std::vector<const Operator*> out;
    for (const auto& k : plan.ops())
        if (k.cost.cls != OpClass::ShapeOnly) out.push_back(&k);
    return out;
}

const Tensor& tensor(const OpGraph& g, const std::string& name) {
    for (const auto& t : g.tensors())
        if (t.name == name) return t;
    FAIL("no tensor " << name);
    return g.tensors()[0];
}

std::string layer_norm(gen::Emitter& e, const std::string& x) {
    onnx::NodeProto* rm = nullptr;
    const std::string mean = e.node("ReduceMean", {x}, &rm);
    gen::set_ints(*rm, "axes", {-1});
    const std::string c = e.node("Sub", {x, mean});
    onnx::NodeProto* rm2 = nullptr;
    const std::string var = e.node("ReduceMean", {e.node("Pow", {c, e.scalar(2.0f)})}, &rm2);
    gen::set_ints(*rm2, "axes", {-1});
    return e.node("Div", {c, e.node("Sqrt", {e.node("Add", {var, e.scalar(1e-5f)})})});
}

}  // namespace

TEST_CASE("a GEMM takes its bias and erf GELU into its epilogue", "[unit][lowering]") {
    OpGraph g = build({4, 8, 16}, {4, 8, 32}, [](gen::Emitter& e) {
        gen::add_weight(e.graph(), "w", {16, 32});
        gen::add_weight(e.graph(), "b", {32});
        return gen::activation(e.graph(), "/h/act", "gelu", e.node("Add", {e.node("MatMul", {"x", "w"}), "b"}));
    });
    const OpGraph plan = lower(g, profile(true, false, false));
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0]->op_type == "MatMul+Bias+GELU");
    CHECK(ks[0]->members.size() == 7);  // MatMul, Add, Div, Erf, Add, Mul, Mul
    CHECK(ks[0]->cost.macs == g.total_macs());
    CHECK(ks[0]->cost.flops == g.total_flops());
    // reads x, w and b, writes only the activation's output
    CHECK(ks[0]->cost.bytes_read == tensor(g, "x").bytes() + tensor(g, "w").bytes() + tensor(g, "b").bytes() + 3 * 4);  // + the GELU scalars
    REQUIRE(ks[0]->outputs.size() == 1);
    CHECK(ks[0]->cost.bytes_written == 4 * 8 * 32 * 4);
    REQUIRE(ks[0]->cost.gemms.size() == 1);
    CHECK(ks[0]->cost.gemms[0].c.tensor == ks[0]->outputs[0]);  // the epilogue writes C
}

TEST_CASE("an epilogue never takes an operator that depends on the contraction another way", "[unit][lowering]") {
    // y = x W; z = y - mean(y): the Sub needs the reduction of the whole row first
    OpGraph g = build({8, 16}, {8, 32}, [](gen::Emitter& e) {
        gen::add_weight(e.graph(), "w", {16, 32});
        const std::string y = e.node("MatMul", {"x", "w"});
        onnx::NodeProto* rm = nullptr;
        const std::string m = e.node("ReduceMean", {y}, &rm);
        gen::set_ints(*rm, "axes", {-1});
        return e.node("Sub", {y, m});
    });
    const OpGraph plan = lower(g, profile(true, false, false));
    CHECK(kernels(plan).size() == 3);
    for (const Operator* k : kernels(plan))
        if (k->cost.cls == OpClass::Contraction) CHECK(k->members.size() == 1);
}

TEST_CASE("decomposed LayerNorm, RMSNorm and scaled masked softmax each become one kernel", "[unit][lowering]") {
    SECTION("LayerNorm") {
        OpGraph g = build({2, 8, 64}, {2, 8, 64}, [](gen::Emitter& e) { return layer_norm(e, "x"); });
        const auto plan = lower(g, profile(false, true, false));
        REQUIRE(kernels(plan).size() == 1);
        CHECK(kernels(plan)[0]->op_type == "LayerNorm");
        CHECK(kernels(plan)[0]->cost.bytes_read == tensor(g, "x").bytes() + 2 * 4);  // x and the two scalars
        CHECK(kernels(plan)[0]->cost.flops == g.total_flops());
    }
    SECTION("RMSNorm") {
        OpGraph g = build({2, 8, 64}, {2, 8, 64}, [](gen::Emitter& e) {
            onnx::NodeProto* rm = nullptr;
            const std::string ms = e.node("ReduceMean", {e.node("Mul", {"x", "x"})}, &rm);
            gen::set_ints(*rm, "axes", {-1});
            return e.node("Mul", {"x", e.node("Reciprocal", {e.node("Sqrt", {e.node("Add", {ms, e.scalar(1e-6f)})})})});
        });
        const auto plan = lower(g, profile(false, true, false));
        REQUIRE(kernels(plan).size() == 1);
        CHECK(kernels(plan)[0]->op_type == "RMSNorm");
    }
    SECTION("softmax with scale and mask") {
        OpGraph g = build({2, 16, 16}, {2, 16, 16}, [](gen::Emitter& e) {
            gen::add_weight(e.graph(), "mask", {16, 16});
            onnx::NodeProto* sm = nullptr;
            const std::string p = e.node("Softmax", {e.node("Add", {e.node("Mul", {"x", e.scalar(0.125f)}), "mask"})}, &sm);
            gen::set_int(*sm, "axis", -1);
            return p;
        });
        const auto plan = lower(g, profile(false, true, false));
        REQUIRE(kernels(plan).size() == 1);
        CHECK(kernels(plan)[0]->op_type == "Softmax+Scale+Mask");
    }
}

TEST_CASE("a transpose feeding a GEMM folds into its operand layout", "[unit][lowering]") {
    OpGraph g = build({16, 8}, {8, 4}, [](gen::Emitter& e) {
        gen::add_weight(e.graph(), "w", {16, 4});
        return e.node("MatMul", {e.transpose("x", {1, 0}), "w"});
    });
    const auto plan = lower(g, profile(false, false, true));
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0]->op_type == "MatMul");
    CHECK(ks[0]->members.size() == 2);
    REQUIRE(ks[0]->cost.gemms.size() == 1);
    CHECK(plan.tensors()[static_cast<size_t>(ks[0]->cost.gemms[0].a.tensor)].name == "x");  // read where it lies
    CHECK(ks[0]->cost.bytes_read == tensor(g, "x").bytes() + tensor(g, "w").bytes());
}

TEST_CASE("a transpose feeding a residual add and its LayerNorm folds into that kernel's index map", "[unit][lowering]") {
    OpGraph g = build({8, 2, 64}, {2, 8, 64}, [](gen::Emitter& e) {
        gen::add_input(e.graph(), "r", {2, 8, 64});  // the residual stream
        return layer_norm(e, e.node("Add", {e.transpose("x", {1, 0, 2}), "r"}));
    });
    const auto plan = lower(g, profile(false, true, true));
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0]->op_type == "Residual+LayerNorm");
    CHECK(ks[0]->name.find("Add") != std::string::npos);  // named after its first computing operator, not the view
    CHECK(ks[0]->cost.bytes_read == tensor(g, "x").bytes() + tensor(g, "r").bytes() + 2 * 4);  // no copy of x
    // without the layout pass the transpose stays a copy kernel of its own
    CHECK(kernels(lower(g, profile(false, true, false))).size() == 2);
}

TEST_CASE("a decomposed activation of one tensor becomes one kernel, a product of two tensors does not", "[unit][lowering]") {
    // silu(conv(x)) * sigmoid(y): SiLU is x * sigmoid(x) (one kernel); the gate multiplies two tensors
    OpGraph g = build({1, 8, 6, 6}, {1, 8, 6, 6}, [](gen::Emitter& e) {
        gen::add_input(e.graph(), "gate", {1, 8, 6, 6});
        const std::string c = gen::conv(e.graph(), "/h/conv", "x", "w", {8, 8, 3, 3}, 1, 1, 1, true);
        const std::string act = gen::activation(e.graph(), "/h/act", "silu", c);
        return e.node("Mul", {act, e.node("Sigmoid", {"gate"})});
    });
    RuntimeProfile rt = profile(false, false, false);
    rt.activations = true;
    const OpGraph plan = lower(g, rt);
    const auto ks = kernels(plan);
    std::map<std::string, int> n;
    for (const Operator* k : ks) ++n[k->op_type];
    CHECK(n["SiLU"] == 1);
    CHECK(n["Sigmoid"] == 1);  // the gate's sigmoid stays on its own
    CHECK(n["Mul"] == 1);      // and so does the product of the two
    CHECK(ks.size() == 4);
}

TEST_CASE("a framework's library layout is entered and left by one conversion per tensor and direction", "[unit][lowering]") {
    // conv -> relu -> sigmoid -> conv -> (output): the convolutions and the ReLU are the library's
    OpGraph g = build({1, 8, 6, 6}, {1, 8, 6, 6}, [](gen::Emitter& e) {
        const std::string a = gen::conv(e.graph(), "/h/c1", "x", "w1", {8, 8, 3, 3}, 1, 1, 1, true);
        const std::string s = e.node("Sigmoid", {e.node("Relu", {a})});
        return gen::conv(e.graph(), "/h/c2", s, "w2", {8, 8, 3, 3}, 1, 1, 1, true);
    });
    RuntimeProfile rt = profile(false, false, false);
    rt.conversions = true;
    rt.library_ops = {"Conv", "Relu"};
    const OpGraph plan = lower(g, rt);
    std::vector<std::string> order;
    for (const Operator* k : kernels(plan)) order.push_back(k->op_type);
    // in, to blocked; conv; relu; to plain for the sigmoid; back to blocked; conv; out, to plain
    CHECK(order == std::vector<std::string>{"Reorder", "Conv", "Relu", "Reorder", "Sigmoid", "Reorder", "Conv", "Reorder"});
    for (const Operator* k : kernels(plan))
        if (k->op_type == "Reorder") {
            CHECK(k->members.empty());
            CHECK(k->cost.bytes_read == k->cost.bytes_written);
            CHECK(k->cost.bytes_read == tensor(g, "x").bytes());  // every tensor here is 1 x 8 x 6 x 6
        }
    CHECK(plan.total_macs() == g.total_macs());
}

TEST_CASE("a runtime's BLAS kernels carry its thread count, and its library's kernels never go to the BLAS", "[unit][lowering]") {
    // conv -> flatten -> MatMul: the convolution is the library's, the MatMul goes to the BLAS
    OpGraph g = build({1, 8, 4, 4}, {1, 16}, [](gen::Emitter& e) {
        const std::string a = gen::conv(e.graph(), "/h/c1", "x", "w1", {8, 8, 3, 3}, 1, 1, 1, true);
        const std::string f = e.node("Flatten", {a});
        gen::add_weight(e.graph(), "w2", {128, 16});
        return e.node("MatMul", {f, "w2"});
    });
    RuntimeProfile rt = profile(false, false, false);
    rt.library_ops = {"Conv"};
    rt.blas_ops = {"Gemm", "MatMul"};
    rt.blas_threads = 1;
    int blas = 0;
    const OpGraph plan = lower(g, rt);
    for (const Operator* k : kernels(plan)) {
        CHECK((k->path == KernelPath::Blas) == (k->op_type == "MatMul"));
        CHECK(k->threads == ((k->path == KernelPath::Blas) ? 1 : 0));
        blas += k->path == KernelPath::Blas;
    }
    CHECK(blas == 1);
    rt.blas_precisions = {"fp32"};  // PyTorch: bf16 matmuls take oneDNN, not the BLAS
    const OpGraph bf16 = lower(g, rt, "bf16");
    for (const Operator* k : kernels(bf16)) CHECK_FALSE((k->path == KernelPath::Blas));
    rt.blas_precisions.clear();
    rt.library_ops = {"Conv", "MatMul"};  // a library that takes the MatMul keeps it
    const OpGraph library = lower(g, rt);
    for (const Operator* k : kernels(library)) CHECK_FALSE((k->path == KernelPath::Blas));
}

TEST_CASE("PyTorch's rule sends small ungrouped batch-1 convolutions to im2col + BLAS, the rest to its library", "[unit][lowering]") {
    // 1 x 8 x 64 x 64 (32768 elements) -> 3x3 conv, stride 2 -> 1 x 8 x 32 x 32 (8192): the second
    // 3x3 conv is small enough, the depthwise one after it is grouped, the 5x5 one too large a kernel
    OpGraph g = build({1, 8, 64, 64}, {1, 8, 32, 32}, [](gen::Emitter& e) {
        std::string a = gen::conv(e.graph(), "/h/big", "x", "w1", {8, 8, 3, 3}, 2, 1, 1, true);
        a = gen::conv(e.graph(), "/h/small", a, "w2", {8, 8, 3, 3}, 1, 1, 1, true);
        a = gen::conv(e.graph(), "/h/dw", a, "w3", {8, 1, 3, 3}, 1, 1, 8, true);
        return gen::conv(e.graph(), "/h/five", a, "w4", {8, 8, 5, 5}, 1, 2, 1, true);
    });
    RuntimeProfile rt = profile(false, false, false);
    rt.library_ops = {"Conv"};
    rt.blas_conv_max_input_elems = 20480;
    rt.blas_threads = 1;
    std::map<std::string, bool> blas;
    const OpGraph eager = lower(g, rt);
    for (const Operator* k : kernels(eager))
        if (k->op_type == "Conv") blas[k->name] = (k->path == KernelPath::Blas);
    CHECK(blas == std::map<std::string, bool>{{"/h/big", false}, {"/h/small", true}, {"/h/dw", false}, {"/h/five", false}});
    rt.blas_conv_max_input_elems = 0;  // the frozen graph: every convolution oneDNN's
    const OpGraph frozen = lower(g, rt);
    for (const Operator* k : kernels(frozen)) CHECK_FALSE((k->path == KernelPath::Blas));
}

TEST_CASE("a library region starts at an entry operator, and a pool fed from outside it runs the reference kernel", "[unit][lowering]") {
    // x -> maxpool -> conv -> relu -> concat(relu, relu) -> maxpool -> conv: PyTorch's frozen graph
    // starts its oneDNN region at the first convolution, so the first pool (fed by the input) and
    // the second (fed by the concatenation, which oneDNN does not take) stay plain and run ATen's
    // scalar kernel; the ReLU joins the convolution's region
    OpGraph g = build({1, 8, 16, 16}, {1, 8, 4, 4}, [](gen::Emitter& e) {
        onnx::NodeProto* p1 = nullptr;
        std::string a = e.node("MaxPool", {"x"}, &p1);
        gen::set_ints(*p1, "kernel_shape", {2, 2});
        gen::set_ints(*p1, "strides", {2, 2});
        a = e.node("Relu", {gen::conv(e.graph(), "/h/c1", a, "w1", {8, 8, 3, 3}, 1, 1, 1, true)});
        onnx::NodeProto* cat = nullptr;
        a = e.node("Concat", {a, a}, &cat);
        gen::set_int(*cat, "axis", 1);
        onnx::NodeProto* p2 = nullptr;
        a = e.node("MaxPool", {a}, &p2);
        gen::set_ints(*p2, "kernel_shape", {2, 2});
        gen::set_ints(*p2, "strides", {2, 2});
        return gen::conv(e.graph(), "/h/c2", a, "w2", {8, 16, 1, 1}, 1, 0, 1, true);
    });
    RuntimeProfile rt = profile(false, false, false);
    rt.conversions = true;
    rt.library_ops = {"Conv", "Relu", "MaxPool"};
    rt.library_entry_ops = {"Conv"};
    rt.reference_ops = {"MaxPool"};
    const OpGraph plan = lower(g, rt);
    std::vector<std::string> order;
    for (const Operator* k : kernels(plan))
        order.push_back(k->op_type + (k->path == KernelPath::Reference ? "*" : ""));
    // * = the reference kernel; Reorders only where a tensor enters or leaves the region
    CHECK(order == std::vector<std::string>{"MaxPool*", "Reorder", "Conv", "Relu", "Reorder", "Concat", "MaxPool*", "Reorder",
                                            "Conv", "Reorder"});
    // a copy the library does not take (a Transpose) is no reference kernel: it has no listed operator
    OpGraph t = build({1, 8, 4, 4}, {1, 8, 4, 4}, [](gen::Emitter& e) {
        onnx::NodeProto* tr = nullptr;
        const std::string y = e.node("Transpose", {"x"}, &tr);
        gen::set_ints(*tr, "perm", {0, 1, 3, 2});
        return y;
    });
    const OpGraph transposed = lower(t, rt);
    for (const Operator* k : kernels(transposed)) CHECK(k->path == KernelPath::Machine);
    rt.library_entry_ops.clear();  // every listed operator the library's: both pools in oneDNN
    const OpGraph anywhere = lower(g, rt);
    for (const Operator* k : kernels(anywhere)) CHECK(k->path == KernelPath::Machine);
    CHECK(plan.total_macs() == g.total_macs());
}

TEST_CASE("every runtime keeps every shared model's MACs and runs each operator exactly once", "[unit][lowering][models]") {
    if (!have_shared()) {
        WARN("shared/models not found; skipped");
        return;
    }
    const std::string dir = std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes";
    std::vector<RuntimeProfile> runtimes;
    for (const auto& name : runtime_names(dir)) runtimes.push_back(load_runtime(name, dir));
    REQUIRE(runtimes.size() >= 6);
    for (const auto& e : fs::directory_iterator(shared_path("models"))) {
        if (e.path().extension() != ".onnx") continue;
        const OpGraph g = import_onnx(e.path().string()).graph;
        for (const auto& rt : runtimes) {
            if (rt.literal()) continue;
            INFO(e.path().filename().string() << " under " << rt.name);
            const OpGraph plan = lower(g, rt);
            CHECK(plan.total_macs() == g.total_macs());
            CHECK(plan.total_flops() == g.total_flops());
            std::multiset<std::string> ran;
            for (const auto& k : plan.ops()) ran.insert(k.members.begin(), k.members.end());
            CHECK(ran.size() == g.ops().size());
            for (const auto& o : g.ops()) CHECK(ran.count(o.name) == 1);
            CHECK(plan.runtime() == rt.name);
        }
    }
}

TEST_CASE("TensorRT's lowering of the BERT-like export finds every LayerNorm, GELU and epilogue", "[unit][lowering][models]") {
    if (!have_shared()) {
        WARN("shared/models not found; skipped");
        return;
    }
    const OpGraph g = import_onnx(shared_path("models/bert_like_encoder.onnx")).graph;
    std::map<std::string, int> src;
    for (const auto& o : g.ops()) ++src[o.op_type];
    const int layers = src["Erf"];  // one GELU per encoder layer
    REQUIRE(layers > 0);
    REQUIRE(src["ReduceMean"] == 4 * layers);  // two LayerNorms per layer, two means each
    const OpGraph plan = lower(g, load_runtime("tensorrt", std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes"));
    std::map<std::string, int> k;
    for (const auto& o : plan.ops()) ++k[o.op_type];
    CHECK(k["LayerNorm"] + k["Residual+LayerNorm"] == 2 * layers);
    CHECK(k["MatMul+Bias+GELU"] == layers);
    CHECK(k["MatMul+Bias+Residual"] == layers);
    CHECK(k["Attention"] == layers);  // Q K^T, scale, softmax, P V and the Q/K/V views in one kernel
    CHECK(k["Softmax"] == 0);
    CHECK(k["Transpose"] + k["Slice"] == 0);  // every view folded into its consumer: 7 kernels a layer, as TensorRT runs
    CHECK(kernels(plan).size() == static_cast<size_t>(7 * layers));
    for (const auto& o : plan.ops())
        if (o.op_type == "Attention") {
            REQUIRE(o.cost.attention.size() == 1);
            const AttentionView& a = o.cost.attention[0];
            CHECK(a.batch * a.q_len * a.kv_len * (a.head_dim + a.v_dim) == o.cost.macs);
            CHECK(a.q.tensor >= 0);
            CHECK(a.k.tensor >= 0);
            CHECK(a.v.tensor >= 0);
        }
}

TEST_CASE("an attention block with a scale and a mask becomes one attention kernel", "[unit][lowering]") {
    // q, k, v: 2 heads x 16 tokens x 8; softmax(q k^T / sqrt(8) + mask) v
    OpGraph g = build({2, 16, 8}, {2, 16, 8}, [](gen::Emitter& e) {
        gen::add_weight(e.graph(), "mask", {16, 16});
        const std::string kt = e.transpose("x", {0, 2, 1});
        const std::string s = e.node("Add", {e.node("Div", {e.node("MatMul", {"x", kt}), e.scalar(2.83f)}), "mask"});
        onnx::NodeProto* sm = nullptr;
        const std::string p = e.node("Softmax", {s}, &sm);
        gen::set_int(*sm, "axis", -1);
        return e.node("MatMul", {p, "x"});
    });
    RuntimeProfile rt = profile(true, true, true);
    rt.attention = true;
    const OpGraph plan = lower(g, rt);
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0]->op_type == "Attention");
    REQUIRE(ks[0]->cost.attention.size() == 1);
    const AttentionView& a = ks[0]->cost.attention[0];
    CHECK(a.batch == 2);
    CHECK(a.q_len == 16);
    CHECK(a.kv_len == 16);
    CHECK(a.head_dim == 8);
    CHECK(a.v_dim == 8);
    CHECK(a.ops_per_score == Approx(double(g.total_flops() - 2 * g.total_macs()) / (2 * 16 * 16)));
    CHECK(ks[0]->cost.macs == g.total_macs());
    // reads x (as Q, K and V) and the mask, writes O: the 2 x 16 x 16 scores never
    CHECK(ks[0]->cost.bytes_read == tensor(g, "x").bytes() + tensor(g, "mask").bytes() + 4);
    CHECK(ks[0]->cost.bytes_written == 2 * 16 * 8 * 4);
}

TEST_CASE("a causal mask is recognised by its values, in either polarity and as an additive mask", "[unit][lowering]") {
    auto mask = [](int64_t q, int64_t kv, int type, const std::function<double(int64_t, int64_t)>& value) {
        onnx::TensorProto t;
        t.set_data_type(type);
        for (int64_t d : {int64_t(1), int64_t(1), q, kv}) t.add_dims(d);
        for (int64_t i = 0; i < q; ++i)
            for (int64_t j = 0; j < kv; ++j) {
                if (type == onnx::TensorProto::FLOAT) t.add_float_data(static_cast<float>(value(i, j)));
                else t.add_int32_data(static_cast<int32_t>(value(i, j)));
            }
        return t;
    };
    const int B = onnx::TensorProto::BOOL, F = onnx::TensorProto::FLOAT;
    CHECK(is_causal_mask(mask(8, 8, B, [](int64_t i, int64_t j) { return j > i; })));    // true where masked out
    CHECK(is_causal_mask(mask(8, 8, B, [](int64_t i, int64_t j) { return j <= i; })));   // true where kept
    CHECK(is_causal_mask(mask(4, 8, B, [](int64_t i, int64_t j) { return j > i + 4; })));  // the last 4 of 8 positions
    CHECK(is_causal_mask(mask(8, 8, F, [](int64_t i, int64_t j) { return j > i ? -1e9 : 0.0; })));
    CHECK_FALSE(is_causal_mask(mask(8, 8, B, [](int64_t i, int64_t j) { return j >= i; })));  // off by one
    CHECK_FALSE(is_causal_mask(mask(8, 8, B, [](int64_t, int64_t) { return 0; })));
    CHECK_FALSE(is_causal_mask(mask(8, 8, F, [](int64_t i, int64_t j) { return j > i ? -1.0 : 0.0; })));  // a bias, not a mask
    // values not in the file (a shape-only export): a boolean [q, kv] constant is taken as causal
    onnx::TensorProto ext = mask(8, 8, B, [](int64_t, int64_t) { return 0; });
    ext.clear_int32_data();
    ext.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    CHECK(is_causal_mask(ext));
    ext.set_data_type(F);
    CHECK_FALSE(is_causal_mask(ext));
}

TEST_CASE("the GPT-2 export's attention blocks are causal, BERT's are not", "[unit][lowering][models]") {
    if (!have_shared()) {
        WARN("shared/models not found; skipped");
        return;
    }
    const std::string runtimes = std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes";
    for (const auto& [model, causal] : {std::pair<std::string, bool>{"gpt2_small_stack", true}, {"bert_like_encoder", false}}) {
        const OpGraph plan = lower(import_onnx(shared_path("models/" + model + ".onnx")).graph, load_runtime("tensorrt", runtimes));
        int attention = 0;
        for (const auto& k : plan.ops())
            if (k.op_type == "Attention") {
                ++attention;
                CHECK(k.cost.attention.at(0).causal == causal);
            }
        CHECK(attention > 0);
    }
}

TEST_CASE("grouped-query attention: K and V repeated by Expand fold into one attention kernel that reads them once", "[unit][lowering]") {
    // 4 query heads share 2 KV heads (torch's repeat_kv: Unsqueeze, Expand, Reshape); 16 tokens of 8
    OpGraph g = build({1, 4, 16, 8}, {1, 4, 16, 8}, [](gen::Emitter& e) {
        gen::add_input(e.graph(), "kv", {1, 2, 16, 8});
        auto repeat = [&](const std::string& t) {
            const std::string u = e.reshape(t, {1, 2, 1, 16, 8});
            return e.reshape(e.node("Expand", {u, e.ints({1, 2, 2, 16, 8})}), {1, 4, 16, 8});
        };
        const std::string k = repeat("kv"), v = repeat("kv");
        onnx::NodeProto* sm = nullptr;
        const std::string p = e.node("Softmax", {e.node("Mul", {e.node("MatMul", {"x", e.transpose(k, {0, 1, 3, 2})}), e.scalar(0.35f)})}, &sm);
        gen::set_int(*sm, "axis", -1);
        return e.node("MatMul", {p, v});
    });
    RuntimeProfile rt = profile(true, true, true);
    rt.attention = true;
    const OpGraph plan = lower(g, rt);
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0]->op_type == "Attention");
    const AttentionView& a = ks[0]->cost.attention.at(0);
    CHECK(plan.tensors()[static_cast<size_t>(a.k.tensor)].name == "kv");  // read where it lies, not the repeated copy
    CHECK(plan.tensors()[static_cast<size_t>(a.v.tensor)].name == "kv");
    // the KV heads read once (plus the scale and the views' small shape constants), not once per query head
    CHECK(ks[0]->cost.bytes_read >= tensor(g, "x").bytes() + tensor(g, "kv").bytes());
    CHECK(ks[0]->cost.bytes_read < tensor(g, "x").bytes() + tensor(g, "kv").bytes() + 256);
    CHECK(ks[0]->cost.macs == g.total_macs());
}

TEST_CASE("the Q, K and V projections of one input merge into one GEMM, grouped-query sizes included", "[unit][lowering]") {
    // x: 16 tokens of 64; Q to 64, K and V to 32 (two KV heads of four query heads), each with a bias
    OpGraph g = build({16, 64}, {16, 128}, [](gen::Emitter& e) {
        std::vector<std::string> outs;
        for (const auto& [w, n] : {std::pair<std::string, int64_t>{"wq", 64}, {"wk", 32}, {"wv", 32}}) {
            gen::add_weight(e.graph(), w, {64, n});
            gen::add_weight(e.graph(), w + "_b", {n});
            outs.push_back(e.node("Add", {e.node("MatMul", {"x", w}), w + "_b"}));
        }
        onnx::NodeProto* cat = nullptr;
        const std::string y = e.node("Concat", outs, &cat);
        gen::set_int(*cat, "axis", 1);
        return y;
    });
    RuntimeProfile rt = profile(true, false, false);
    rt.projections = true;
    const OpGraph plan = lower(g, rt);
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 2);  // the merged GEMM (with its three bias epilogues) and the Concat
    const Operator& k = *ks[0];
    CHECK(k.op_type == "MergedMatMul(3)");
    REQUIRE(k.cost.gemms.size() == 1);
    CHECK(k.cost.gemms[0].m == 16);
    CHECK(k.cost.gemms[0].k == 64);
    CHECK(k.cost.gemms[0].n == 64 + 32 + 32);
    CHECK(k.cost.macs == g.total_macs());
    CHECK(k.members.size() == 6);
    // without the pass: three GEMM kernels
    CHECK(kernels(lower(g, profile(true, false, false))).size() == 4);
}

TEST_CASE("a Gather reads only the rows it looks up, in the graph and in its kernel", "[unit][lowering]") {
    // y = table[idx] + x: a 1000 x 64 embedding table, 4 rows looked up
    OpGraph g = build({4, 64}, {4, 64}, [](gen::Emitter& e) {
        gen::add_weight(e.graph(), "table", {1000, 64});
        gen::add_int64_constant(e.graph(), "idx", {3, 1, 4, 1});
        return e.node("Add", {e.node("Gather", {"table", "idx"}), "x"});
    });
    const Operator* gather = nullptr;
    for (const auto& o : g.ops())
        if (o.op_type == "Gather") gather = &o;
    REQUIRE(gather);
    REQUIRE(gather->cost.read_elems.size() == gather->inputs.size());
    CHECK(gather->cost.read_elems[0] == 4 * 64);
    CHECK(gather->cost.bytes_read == 4 * 64 * 4 + 4 * 8);  // the rows (fp32) and the int64 indices
    const OpGraph plan = lower(g, profile(false, true, false));
    for (const auto& k : plan.ops())
        if (std::find(k.members.begin(), k.members.end(), gather->name) != k.members.end()) {
            REQUIRE(k.cost.read_elems.size() == k.inputs.size());
            CHECK(k.cost.bytes_read <= gather->cost.bytes_read + tensor(g, "x").bytes());
        }
}

TEST_CASE("a slice reads only what it copies, and a GEMM reads a sliced operand in place", "[unit][lowering]") {
    // qkv = x W (8 x 96); k = qkv[:, 32:64]; y = x' k^T-like product: MatMul(q, transpose(k))
    OpGraph g = build({8, 32}, {8, 8}, [](gen::Emitter& e) {
        gen::add_weight(e.graph(), "w", {32, 96});
        const std::string qkv = e.node("MatMul", {"x", "w"});
        const std::string q = e.node("Slice", {qkv, e.ints({0}), e.ints({32}), e.ints({1})});
        const std::string k = e.node("Slice", {qkv, e.ints({32}), e.ints({64}), e.ints({1})});
        return e.node("MatMul", {q, e.transpose(k, {1, 0})});
    });
    for (const auto& o : g.ops())
        if (o.op_type == "Slice") {
            REQUIRE_FALSE(o.cost.read_elems.empty());
            CHECK(o.cost.read_elems[0] == 8 * 32);  // a third of qkv
        }
    const OpGraph plan = lower(g, profile(false, false, true));
    const auto ks = kernels(plan);
    REQUIRE(ks.size() == 2);  // the projection, and the product reading q and k where they lie in qkv
    CHECK(ks[1]->members.size() == 4);  // MatMul, both slices, the transpose
    CHECK(ks[1]->cost.bytes_read == 2 * 8 * 32 * 4 + 6 * 8);  // two thirds of qkv, and the slices' int64 bounds
}

TEST_CASE("a vector_separate pair keeps a consumer out of its producer's vector kernel, both ways of the boundary", "[unit][lowering]") {
    // softmax then a unary operator after it: one kernel, or two when the pair says so
    OpGraph g = build({2, 16, 16}, {2, 16, 16}, [](gen::Emitter& e) {
        onnx::NodeProto* sm = nullptr;
        const std::string p = e.node("Softmax", {e.node("Mul", {"x", e.scalar(0.125f)})}, &sm);
        gen::set_int(*sm, "axis", -1);
        return e.node("Relu", {p});
    });
    CHECK(kernels(lower(g, profile(false, true, false))).size() == 1);
    RuntimeProfile rt = profile(false, true, false);
    rt.vector_separate = {{"Softmax", "Relu"}};
    const auto plan = lower(g, rt);
    REQUIRE(kernels(plan).size() == 2);
    CHECK(kernels(plan)[0]->op_type == "Softmax+Scale");
    CHECK(kernels(plan)[1]->op_type == "Relu");
    // the other order of the pair separates nothing
    rt.vector_separate = {{"Relu", "Softmax"}};
    CHECK(kernels(lower(g, rt)).size() == 1);
}

TEST_CASE("the megatron profile runs Megatron-LM's kernels: fused softmax, then the attention dropout apart", "[unit][lowering]") {
    const RuntimeProfile rt = load_runtime("megatron", std::string(ARCHSIM_SOURCE_DIR) + "/configs/runtimes");
    CHECK(std::find(rt.vector_separate.begin(), rt.vector_separate.end(), std::make_pair(std::string("Softmax"), std::string("Dropout"))) !=
          rt.vector_separate.end());
    CHECK_FALSE(rt.attention);
    const std::string bad = (fs::temp_directory_path() / "archsim_bad_separate.toml").string();
    std::ofstream(bad) << "[passes]\nvector_separate = \"Softmax Dropout\"\n";
    CHECK_THROWS_WITH(load_runtime(bad, ""), Catch::Contains("not PRODUCER>CONSUMER"));
    // its GEMM library's measured main-loop efficiency, for GPUs
    CHECK(rt.device_kind == "gpu");
    CHECK(rt.device_sets == std::vector<std::string>{"sm.mma_efficiency=0.7536"});
    std::ofstream(bad) << "[device]\nkind = \"gpu\"\nsets = \"sm.mma_efficiency\"\n";
    CHECK_THROWS_WITH(load_runtime(bad, ""), Catch::Contains("device.sets: 'sm.mma_efficiency' is not KEY=VALUE"));
    std::ofstream(bad) << "[device]\nsets = \"sm.mma_efficiency=0.5\"\n";
    CHECK_THROWS_WITH(load_runtime(bad, ""), Catch::Contains("give device.kind"));
}
