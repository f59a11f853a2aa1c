#include "workloads/onnx/input_data.h"

#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "sim/base/error.h"
#include "workloads/onnx/const_fold.h"

namespace archsim {

namespace fs = std::filesystem;

std::vector<std::string> input_data_files(const std::string& spec) {
    if (!fs::exists(spec)) throw UserError(spec, "--inputs: no such file or directory");
    if (!fs::is_directory(spec)) return {spec};
    std::map<int, std::string> by_index;
    const std::regex name(R"(input_(\d+)\.pb)");
    for (const auto& e : fs::directory_iterator(spec)) {
        std::smatch m;
        const std::string f = e.path().filename().string();
        if (std::regex_match(f, m, name)) by_index[std::stoi(m[1])] = e.path().string();
    }
    if (by_index.empty()) throw UserError(spec, "--inputs: the directory has no input_<i>.pb files");
    std::vector<std::string> files;
    for (auto& [i, f] : by_index) files.push_back(f);
    return files;
}

namespace {

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path, "--inputs: cannot read the file");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Sets `type`'s tensor shape to `dims` (and its element type to `dtype` when it has none: a
/// model's bfloat16 input keeps its type, which test data store as uint16).
void set_shape(onnx::TypeProto_Tensor& type, const google::protobuf::RepeatedField<int64_t>& dims, int32_t dtype) {
    if (type.elem_type() == 0) type.set_elem_type(dtype);
    auto* shape = type.mutable_shape();
    shape->clear_dim();
    for (const int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

/// A control value: an integer or boolean tensor of at most kMaxFoldElems elements, or one
/// float or double (a Range's bound).
bool holds_value(const onnx::TensorProto& t) {
    using T = onnx::TensorProto;
    const std::optional<ConstTensor> c = const_from_proto(t);
    if (!c) return false;
    switch (t.data_type()) {
        case T::FLOAT:
        case T::DOUBLE: return c->elems() == 1;
        case T::INT8: case T::INT16: case T::INT32: case T::INT64:
        case T::UINT8: case T::UINT16: case T::UINT32: case T::UINT64:
        case T::BOOL: return c->elems() <= kMaxFoldElems;
        default: return false;
    }
}

}  // namespace

namespace {

/// What binding samples adds to the graph: element inputs and the nodes that gather them into
/// the sequence or optional values the model declares as inputs.
struct Expansion {
    std::vector<onnx::ValueInfoProto> inputs;
    std::vector<onnx::NodeProto> nodes;

    /// A graph input `name` typed by sample `t`'s dims and type.
    void tensor_input(const std::string& name, const onnx::TensorProto& t) {
        onnx::ValueInfoProto v;
        v.set_name(name);
        set_shape(*v.mutable_type()->mutable_tensor_type(), t.dims(), t.data_type());
        inputs.push_back(std::move(v));
    }
    /// A node `op` reading `ins`, writing `out`.
    onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins, const std::string& out) {
        onnx::NodeProto n;
        n.set_op_type(op);
        n.set_name(out + "/" + op);
        for (const auto& i : ins) n.add_input(i);
        n.add_output(out);
        nodes.push_back(std::move(n));
        return nodes.back();
    }
    /// The sequence `name` from its sample: one input "<name>/<i>" per element and a
    /// SequenceConstruct over them (SequenceEmpty of `elem_type` for an empty sample).
    void sequence(const std::string& name, const onnx::SequenceProto& seq, int32_t elem_type) {
        std::vector<std::string> elems;
        for (int i = 0; i < seq.tensor_values_size(); ++i) {
            elems.push_back(name + "/" + std::to_string(i));
            tensor_input(elems.back(), seq.tensor_values(i));
        }
        if (!elems.empty()) {
            node("SequenceConstruct", elems, name);
            return;
        }
        auto* a = node("SequenceEmpty", {}, name).add_attribute();
        a->set_name("dtype");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(elem_type != 0 ? elem_type : onnx::TensorProto::FLOAT);
    }
};

/// The element type of a sequence type, 0 when not declared.
int32_t sequence_elem_type(const onnx::TypeProto& t) {
    return t.sequence_type().elem_type().has_tensor_type() ? t.sequence_type().elem_type().tensor_type().elem_type() : 0;
}

}  // namespace

void bind_input_data(onnx::ModelProto& model, const std::vector<std::string>& files, const std::string& file, bool values) {
    onnx::GraphProto& g = *model.mutable_graph();
    std::set<std::string> inits;
    for (const auto& t : g.initializer()) inits.insert(t.name());
    std::vector<int> free;  // graph inputs without an initializer, in order
    for (int i = 0; i < g.input_size(); ++i)
        if (!inits.count(g.input(i).name())) free.push_back(i);
    if (files.size() > free.size())
        throw UserError(file + ": --inputs", std::to_string(files.size()) + " samples for " + std::to_string(free.size()) + " model inputs");
    std::set<std::string> replaced;  // inputs that become initializers or nodes
    Expansion expand;
    for (size_t k = 0; k < files.size(); ++k) {
        const std::string bytes = read_bytes(files[k]);
        int at = free[k];
        onnx::ValueInfoProto* in = g.mutable_input(at);
        if (in->type().has_sequence_type()) {
            onnx::SequenceProto seq;
            if (!seq.ParseFromString(bytes)) throw UserError(files[k], "--inputs: not a serialized onnx.SequenceProto");
            expand.sequence(in->name(), seq, sequence_elem_type(in->type()));
            replaced.insert(in->name());
            continue;
        }
        if (in->type().has_optional_type()) {
            onnx::OptionalProto opt;
            if (!opt.ParseFromString(bytes)) throw UserError(files[k], "--inputs: not a serialized onnx.OptionalProto");
            const std::string value = in->name() + "/value";
            const onnx::TypeProto& elem = in->type().optional_type().elem_type();
            if (opt.has_tensor_value()) {
                expand.tensor_input(value, opt.tensor_value());
                expand.node("Optional", {value}, in->name());
            } else if (opt.has_sequence_value()) {
                expand.sequence(value, opt.sequence_value(), elem.has_sequence_type() ? sequence_elem_type(elem) : 0);
                expand.node("Optional", {value}, in->name());
            } else {  // no value: an empty optional of the declared element type
                auto* a = expand.node("Optional", {}, in->name()).add_attribute();
                a->set_name("type");
                a->set_type(onnx::AttributeProto::TYPE_PROTO);
                *a->mutable_tp() = elem;
            }
            replaced.insert(in->name());
            continue;
        }
        onnx::TensorProto t;
        if (!t.ParseFromString(bytes)) throw UserError(files[k], "--inputs: not a serialized onnx.TensorProto");
        if (!t.name().empty()) {  // a sample that names an input binds that one
            for (const int i : free)
                if (g.input(i).name() == t.name()) at = i;
            in = g.mutable_input(at);
        }
        if (!in->type().has_tensor_type()) continue;
        set_shape(*in->mutable_type()->mutable_tensor_type(), t.dims(), t.data_type());
        if (values && holds_value(t) && t.data_type() == in->type().tensor_type().elem_type()) {
            t.set_name(in->name());
            *g.add_initializer() = t;
            // the constant is no longer an input (below IR 4 an initializer is also an input)
            if (model.ir_version() >= 4) replaced.insert(in->name());
        }
    }
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
    for (const auto& in : g.input())
        if (!replaced.count(in.name())) *kept.Add() = in;
    for (auto& v : expand.inputs) *kept.Add() = std::move(v);
    g.mutable_input()->Swap(&kept);
    if (!expand.nodes.empty()) {  // the gathering nodes first: the graph stays in topological order
        google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
        for (auto& n : expand.nodes) *nodes.Add() = std::move(n);
        for (const auto& n : g.node()) *nodes.Add() = n;
        g.mutable_node()->Swap(&nodes);
    }
}

}  // namespace archsim
