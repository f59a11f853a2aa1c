#include "workloads/generators/onnx_builder.h"

#include <map>

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
void add_value_info(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims) { value(g.add_value_info(), name, dims); }

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

namespace archsim::gen {

void add_int64_constant(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& values) {
    auto& n = add_node(g, "Constant", name + "_const", {}, {name});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
}

void add_float_constant(onnx::GraphProto& g, const std::string& name, float value) {
    auto& n = add_node(g, "Constant", name + "_const", {}, {name});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
}

void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
}

void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
}

std::string conv(onnx::GraphProto& g, const std::string& node, const std::string& x, const std::string& weight,
                 const std::vector<int64_t>& w_dims, int64_t stride, int64_t pad, int64_t groups, bool bias) {
    add_weight(g, weight + ".weight", w_dims);
    std::vector<std::string> ins = {x, weight + ".weight"};
    if (bias) {
        add_weight(g, weight + ".bias", {w_dims[0]});
        ins.push_back(weight + ".bias");
    }
    const std::string y = node + "_output_0";
    set_conv_attributes(add_node(g, "Conv", node, ins, {y}), w_dims, stride, {pad, pad, pad, pad}, 1, groups);
    return y;
}

void set_conv_attributes(onnx::NodeProto& n, const std::vector<int64_t>& w_dims, int64_t stride, const std::vector<int64_t>& pads,
                         int64_t dilation, int64_t groups) {
    const size_t spatial = w_dims.size() - 2;
    set_ints(n, "kernel_shape", std::vector<int64_t>(w_dims.begin() + 2, w_dims.end()));
    set_ints(n, "strides", std::vector<int64_t>(spatial, stride));
    set_ints(n, "pads", pads);
    if (dilation != 1) set_ints(n, "dilations", std::vector<int64_t>(spatial, dilation));
    if (groups > 1) set_int(n, "group", groups);
}

}  // namespace archsim::gen

namespace archsim::gen {

std::string activation(onnx::GraphProto& g, const std::string& prefix, const std::string& kind, const std::string& x) {
    std::map<std::string, int> count;
    auto node = [&](const std::string& op, const std::vector<std::string>& ins) {
        int& n = count[op];
        const std::string name = prefix + "/" + op + (n ? "_" + std::to_string(n) : "");
        ++n;
        add_node(g, op, name, ins, {name + "_output_0"});
        return name + "_output_0";
    };
    if (kind == "relu") return node("Relu", {x});
    if (kind == "sigmoid") return node("Sigmoid", {x});
    if (kind == "silu") return node("Mul", {x, node("Sigmoid", {x})});
    // gelu
    add_float_constant(g, prefix + "/sqrt2", 1.41421356f);
    add_float_constant(g, prefix + "/one", 1.0f);
    add_float_constant(g, prefix + "/half", 0.5f);
    const std::string e = node("Erf", {node("Div", {x, prefix + "/sqrt2"})});
    return node("Mul", {node("Mul", {x, node("Add", {e, prefix + "/one"})}), prefix + "/half"});
}

}  // namespace archsim::gen

namespace archsim::gen {

std::string Emitter::node(const std::string& op, const std::vector<std::string>& inputs, onnx::NodeProto** out) {
    int& n = m_count[op];
    const std::string name = m_prefix + "/" + op + (n ? "_" + std::to_string(n) : "");
    ++n;
    auto& nd = add_node(m_g, op, name, inputs, {name + "_output_0"});
    if (out) *out = &nd;
    return name + "_output_0";
}

std::string Emitter::transpose(const std::string& x, const std::vector<int64_t>& perm) {
    onnx::NodeProto* n = nullptr;
    const std::string y = node("Transpose", {x}, &n);
    set_ints(*n, "perm", perm);
    return y;
}

std::string Emitter::reshape(const std::string& x, const std::vector<int64_t>& shape) { return node("Reshape", {x, ints(shape)}); }

std::string Emitter::scalar(float v) {
    const std::string s = constant_name();
    add_float_constant(m_g, s, v);
    return s;
}

std::string Emitter::boolean(bool v) {
    const std::string s = constant_name();
    auto& n = add_node(m_g, "Constant", s + "_const", {}, {s});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
    a->mutable_t()->add_int32_data(v ? 1 : 0);
    return s;
}

std::string Emitter::ints(const std::vector<int64_t>& v) {
    const std::string s = constant_name();
    add_int64_constant(m_g, s, v);
    return s;
}

std::string Emitter::linear(const std::string& x, const std::string& w, int64_t in, int64_t out, bool bias) {
    add_weight(m_g, w + ".weight", {in, out});
    std::string y = node("MatMul", {x, w + ".weight"});
    if (bias) {
        add_weight(m_g, w + ".bias", {out});
        y = node("Add", {y, w + ".bias"});
    }
    return y;
}

std::string Emitter::fc(const std::string& x, const std::string& w, int64_t in, int64_t out, bool bias) {
    add_weight(m_g, w + ".weight", {out, in});
    std::vector<std::string> ins = {x, w + ".weight"};
    if (bias) {
        add_weight(m_g, w + ".bias", {out});
        ins.push_back(w + ".bias");
    }
    onnx::NodeProto* n = nullptr;
    const std::string y = node("Gemm", ins, &n);
    set_int(*n, "transB", 1);
    return y;
}

std::string Emitter::dropout(const std::string& x, double p) {
    if (p <= 0) return x;
    onnx::NodeProto* n = nullptr;
    const std::string y = node("Dropout", {x, scalar(static_cast<float>(p)), boolean(true)}, &n);
    n->add_output(n->name() + "_mask");
    return y;
}

std::string Emitter::layer_norm(const std::string& x, const std::string& w, int64_t d) {
    add_weight(m_g, w + ".weight", {d});
    add_weight(m_g, w + ".bias", {d});
    onnx::NodeProto* n = nullptr;
    const std::string y = node("LayerNormalization", {x, w + ".weight", w + ".bias"}, &n);
    set_int(*n, "axis", -1);
    return y;
}

std::string Emitter::norm(const std::string& x, const std::string& w, int64_t d, bool rms) {
    onnx::NodeProto* rm = nullptr;
    std::string centred = x;
    if (!rms) {
        const std::string mean = node("ReduceMean", {x}, &rm);
        set_ints(*rm, "axes", {-1});
        centred = node("Sub", {x, mean});
    }
    const std::string var = node("ReduceMean", {node("Pow", {centred, scalar(2.0f)})}, &rm);
    set_ints(*rm, "axes", {-1});
    const std::string y = node("Div", {centred, node("Sqrt", {node("Add", {var, scalar(1e-5f)})})});
    add_weight(m_g, w + ".weight", {d});
    std::string out = node("Mul", {y, w + ".weight"});
    if (!rms) {
        add_weight(m_g, w + ".bias", {d});
        out = node("Add", {out, w + ".bias"});
    }
    return out;
}

}  // namespace archsim::gen
