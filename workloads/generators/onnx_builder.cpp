#include "workloads/generators/onnx_builder.h"

namespace archsim::gen {

onnx::GraphProto& start_model(onnx::ModelProto& model, const std::string& name) {
    model.set_ir_version(7);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    model.set_producer_name("archsim workload generator");
    auto* g = model.mutable_graph();
    g->set_name(name);
    return *g;
}

namespace {
void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}
}  // namespace

void add_input(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims) { value(g.add_input(), name, dims); }
void add_output(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims) { value(g.add_output(), name, dims); }

void add_weight(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims) {
    auto* w = g.add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) w->add_dims(d);
}

onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
    auto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
}

void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

}  // namespace archsim::gen
