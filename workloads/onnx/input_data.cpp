#include "workloads/onnx/input_data.h"

#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "sim/common/error.h"
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

void bind_input_data(onnx::ModelProto& model, const std::vector<std::string>& files, const std::string& file, bool values) {
    onnx::GraphProto& g = *model.mutable_graph();
    std::set<std::string> inits;
    for (const auto& t : g.initializer()) inits.insert(t.name());
    std::vector<int> free;  // graph inputs without an initializer, in order
    for (int i = 0; i < g.input_size(); ++i)
        if (!inits.count(g.input(i).name())) free.push_back(i);
    if (files.size() > free.size())
        throw UserError(file + ": --inputs", std::to_string(files.size()) + " samples for " + std::to_string(free.size()) + " model inputs");
    std::vector<std::string> constant;  // inputs that become initializers
    for (size_t k = 0; k < files.size(); ++k) {
        const std::string bytes = read_bytes(files[k]);
        int at = free[k];
        onnx::ValueInfoProto* in = g.mutable_input(at);
        if (in->type().has_sequence_type()) {
            onnx::SequenceProto seq;
            if (!seq.ParseFromString(bytes)) throw UserError(files[k], "--inputs: not a serialized onnx.SequenceProto");
            if (seq.tensor_values_size() == 0) continue;  // an empty sequence: nothing to shape
            const onnx::TensorProto& first = seq.tensor_values(0);
            auto* elem = in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
            set_shape(*elem, first.dims(), first.data_type());
            continue;
        }
        onnx::TensorProto t;
        if (!t.ParseFromString(bytes)) throw UserError(files[k], "--inputs: not a serialized onnx.TensorProto");
        if (!t.name().empty()) {  // a sample that names an input binds that one
            for (const int i : free)
                if (g.input(i).name() == t.name()) at = i;
            in = g.mutable_input(at);
        }
        if (!in->type().has_tensor_type()) continue;  // optionals: their element's type is the model's
        set_shape(*in->mutable_type()->mutable_tensor_type(), t.dims(), t.data_type());
        if (values && holds_value(t) && t.data_type() == in->type().tensor_type().elem_type()) {
            t.set_name(in->name());
            *g.add_initializer() = t;
            constant.push_back(in->name());
        }
    }
    if (model.ir_version() >= 4) {  // the constants are no longer inputs (below IR 4 an initializer is also an input)
        google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
        for (const auto& in : g.input())
            if (std::find(constant.begin(), constant.end(), in.name()) == constant.end()) *kept.Add() = in;
        g.mutable_input()->Swap(&kept);
    }
}

}  // namespace archsim
