// Bad models: each gives one line naming the file and the place, never a crash.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sim/base/error.h"
#include "workloads/onnx/importer.h"

using namespace archsim;
namespace fs = std::filesystem;

namespace {

std::string tmp(const std::string& name) { return (fs::temp_directory_path() / ("archsim_bad_" + name)).string(); }

onnx::ModelProto base_model(int64_t opset = 13) {
    onnx::ModelProto m;
    m.set_ir_version(7);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("g");
    return m;
}

void add_input(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, const std::string& param = "") {
    auto* v = g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    auto* s = t->mutable_shape();
    for (auto d : dims) s->add_dim()->set_dim_value(d);
    if (!param.empty()) s->mutable_dim(0)->set_dim_param(param);
}

void add_output(onnx::GraphProto* g, const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
}

std::string save(const onnx::ModelProto& m, const std::string& name) {
    const std::string p = tmp(name);
    std::ofstream out(p, std::ios::binary);
    m.SerializeToOstream(&out);
    return p;
}

std::string error_of(const std::string& path, const ImportOptions& opt = {}) {
    try {
        import_onnx(path, opt);
    } catch (const UserError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("a missing, empty, truncated or non-ONNX file is refused in one line", "[import][bad]") {
    CHECK(error_of(tmp("nope.onnx")) == tmp("nope.onnx") + ": no such file");
    const std::string empty = tmp("empty.onnx");
    std::ofstream(empty).close();
    CHECK(error_of(empty) == empty + ": empty file, not an ONNX model");
    const std::string text = tmp("text.onnx");
    std::ofstream(text) << "this is not a protobuf";
    CHECK(error_of(text) == text + ": not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
    // a real model cut short
    auto m = base_model();
    add_input(m.mutable_graph(), "x", {1, 3, 8, 8});
    add_node(m.mutable_graph(), "Relu", {"x"}, {"y"}, "relu");
    add_output(m.mutable_graph(), "y");
    std::string bytes;
    m.SerializeToString(&bytes);
    const std::string cut = tmp("cut.onnx");
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 5);
    CHECK(error_of(cut) == cut + ": not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
}

TEST_CASE("a graph with a cycle names a node on it", "[import][bad]") {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 4});
    add_node(g, "Add", {"x", "b"}, {"a"}, "first");
    add_node(g, "Relu", {"a"}, {"b"}, "second");
    add_output(g, "b");
    const std::string p = save(m, "cycle.onnx");
    CHECK(error_of(p) == p + ": node 'first' (Add): the graph has a cycle through this node");
}

TEST_CASE("a missing initializer names the node and the input", "[import][bad]") {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 3, 8, 8});
    add_node(g, "Conv", {"x", "conv.weight"}, {"y"}, "conv1");
    add_output(g, "y");
    const std::string p = save(m, "noinit.onnx");
    CHECK(error_of(p) == p + ": node 'conv1' (Conv): input 'conv.weight' is not produced by any node, graph input or initializer");
}

TEST_CASE("a tensor produced twice is refused", "[import][bad]") {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {4});
    add_node(g, "Relu", {"x"}, {"y"}, "r1");
    add_node(g, "Neg", {"x"}, {"y"}, "r2");
    add_output(g, "y");
    const std::string p = save(m, "dup.onnx");
    CHECK(error_of(p) == p + ": node 'r2' (Neg): output 'y' is also produced by node 'r1' (Relu)");
}

TEST_CASE("a symbolic dim must be bound, and --dim binds it", "[import][bad]") {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {0, 16}, "batch");
    add_node(g, "Relu", {"x"}, {"y"}, "relu");
    add_output(g, "y");
    const std::string p = save(m, "dyn.onnx");
    CHECK(error_of(p) == p + ": input 'x': tensor 'x' has unknown dim 'batch' in shape (bind it with --dim batch=N)");
    ImportOptions opt;
    parse_dim_binding("batch=8", opt.dims);
    ImportResult r = import_onnx(p, opt);
    CHECK(r.graph.tensors()[r.graph.ops()[0].outputs[0]].shape == std::vector<int64_t>{8, 16});
    ImportOptions wrong;
    parse_dim_binding("seq=8", wrong.dims);
    CHECK(error_of(p, wrong) == p + ": --dim seq: no model input has a dim named 'seq'");
    std::map<std::string, int64_t> d;
    CHECK_THROWS_WITH(parse_dim_binding("batch=0", d), "--dim batch=0: value must be a positive integer");
}

/// A model whose x [3, 3] goes through an If on the bool input (or constant, `cond` >= 0) c,
/// each branch one operator of its own on x: Identity (then) or Relu (else).
onnx::ModelProto if_model(int cond) {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {3, 3});
    if (cond < 0) {
        auto* c = g->add_input();
        c->set_name("c");
        c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
        c->mutable_type()->mutable_tensor_type()->mutable_shape();
    } else {
        auto* c = g->add_initializer();
        c->set_name("c");
        c->set_data_type(onnx::TensorProto::BOOL);
        c->add_int32_data(cond);
    }
    auto* node = add_node(g, "If", {"c"}, {"y"}, "if");
    for (const char* branch : {"then_branch", "else_branch"}) {
        auto* a = node->add_attribute();
        a->set_name(branch);
        a->set_type(onnx::AttributeProto::GRAPH);
        onnx::GraphProto* b = a->mutable_g();
        b->set_name(branch);
        add_node(b, std::string(branch) == "then_branch" ? "Identity" : "Relu", {"x"}, {std::string(branch) + "_y"}, "op");
        auto* o = b->add_output();
        o->set_name(std::string(branch) + "_y");
        o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        for (int d = 0; d < 2; ++d) o->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    }
    add_output(g, "y");
    return m;
}

TEST_CASE("an unsupported operator is an error, or a listed zero-cost node when allowed", "[import][bad]") {
    auto m = base_model();
    auto* dom = m.add_opset_import();
    dom->set_domain("com.example");
    dom->set_version(1);
    auto* g = m.mutable_graph();
    add_input(g, "x", {3, 3});
    add_node(g, "Foo", {"x"}, {"y"}, "foo")->set_domain("com.example");
    add_output(g, "y");  // its shape declared: no schema infers it
    for (int d = 0; d < 2; ++d) g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    const std::string p = save(m, "unsupported.onnx");
    CHECK(error_of(p) == p + ": node 'foo' (Foo): unsupported operator (domain 'com.example', opset 1); "
                             "--allow-unsupported costs it as zero");
    ImportOptions allow;
    allow.allow_unsupported = true;
    ImportResult r = import_onnx(p, allow);
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.graph.ops()[0].cost.cls == OpClass::Unsupported);
    CHECK(r.graph.ops()[0].cost.macs == 0);
}

TEST_CASE("an If runs its taken branch when its condition is known, else both, said as an upper bound", "[import][control]") {
    for (const int cond : {1, 0}) {
        const ImportResult r = import_onnx(save(if_model(cond), "if_known.onnx"));
        REQUIRE(r.graph.ops().size() == 2);  // the branch's operator and the Identity to y
        CHECK(r.graph.ops()[0].op_type == (cond ? "Identity" : "Relu"));
        CHECK(r.graph.ops()[0].name == "if/" + std::string(cond ? "then" : "else") + "/op");
        CHECK(r.warnings.empty());
    }
    const std::string p = save(if_model(-1), "if_unknown.onnx");
    const ImportResult r = import_onnx(p);
    std::set<std::string> types;
    for (const Operator& op : r.graph.ops()) types.insert(op.op_type);
    CHECK(types.count("Identity"));
    CHECK(types.count("Relu"));
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0] == p + ": node 'if' (If): condition not known at import; both branches costed, an upper bound (--inputs gives its value)");
}

TEST_CASE("SequenceAt of a known sequence reads its element, and a position outside it is refused", "[import][control]") {
    auto model = [](int64_t pos) {
        auto m = base_model();
        auto* g = m.mutable_graph();
        add_input(g, "a", {2, 3});
        add_input(g, "b", {4, 3});
        auto* p = g->add_initializer();
        p->set_name("pos");
        p->set_data_type(onnx::TensorProto_DataType_INT64);
        p->add_int64_data(pos);
        add_node(g, "SequenceConstruct", {"a", "b"}, {"s"}, "seq");
        add_node(g, "SequenceAt", {"s", "pos"}, {"e"}, "at");
        add_node(g, "Relu", {"e"}, {"y"}, "relu");
        add_output(g, "y");
        return m;
    };
    for (const int64_t pos : {1, -1}) {
        const ImportResult r = import_onnx(save(model(pos), "seq_at.onnx"));
        REQUIRE(r.graph.ops().size() == 2);  // the element read (Identity) and the Relu on it
        CHECK(r.graph.ops()[0].op_type == "Identity");
        CHECK(r.graph.ops()[1].cost.flops == 4 * 3);  // b's 12 elements
        CHECK(r.warnings.empty());
    }
    const std::string p = save(model(2), "seq_at_outside.onnx");
    CHECK(error_of(p) == p + ": node 'at' (SequenceAt): position 2 is outside a sequence of 2 tensors");
}

TEST_CASE("an opset newer than the ONNX library is refused", "[import][bad]") {
    auto m = base_model(99);
    add_input(m.mutable_graph(), "x", {4});
    add_node(m.mutable_graph(), "Relu", {"x"}, {"y"}, "relu");
    add_output(m.mutable_graph(), "y");
    const std::string p = save(m, "opset.onnx");
    CHECK_THAT(error_of(p), Catch::StartsWith(p + ": opset 99 is newer than this build's ONNX knows"));
}

TEST_CASE("mismatched Conv channels are refused with both shapes", "[import][bad]") {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 3, 8, 8});
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (int64_t d : {8, 4, 3, 3}) w->add_dims(d);
    w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto* loc = w->add_external_data();
    loc->set_key("location");
    loc->set_value("weights.bin");
    add_node(g, "Conv", {"x", "w"}, {"y"}, "conv");
    add_output(g, "y");
    const std::string p = save(m, "conv_channels.onnx");
    CHECK_THAT(error_of(p), Catch::StartsWith(p + ": ") && Catch::Contains("conv"));
}

TEST_CASE("external data outside the model's folder is refused", "[import][bad]") {
    for (const char* where : {"../secret.bin", "/etc/passwd"}) {
        auto m = base_model();
        auto* g = m.mutable_graph();
        add_input(g, "x", {1, 4});
        auto* w = g->add_initializer();
        w->set_name("w");
        w->set_data_type(onnx::TensorProto_DataType_FLOAT);
        for (int64_t d : {4, 4}) w->add_dims(d);
        w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
        auto* loc = w->add_external_data();
        loc->set_key("location");
        loc->set_value(where);
        add_node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
        add_output(g, "y");
        const std::string p = save(m, "escape.onnx");
        CHECK(error_of(p) == p + ": initializer 'w': external data location '" + where +
                                 "' must be a relative path inside the model's folder");
    }
}
