#include "workloads/onnx/control_flow.h"

#include <algorithm>
#include <optional>
#include <set>

#include "sim/common/error.h"

namespace archsim {

namespace {

/// Counts the nodes of `g` and of every subgraph inside it.
int64_t node_count(const onnx::GraphProto& g) {
    int64_t n = 0;
    for (const auto& node : g.node()) {
        ++n;
        for (const auto& a : node.attribute()) {
            if (a.has_g()) n += node_count(a.g());
            for (const auto& sub : a.graphs()) n += node_count(sub);
        }
    }
    return n;
}

/// Renames the references to `names` inside a subgraph (an If nested in a Loop body reads the
/// body's values from the outer scope).
void rename_refs(onnx::GraphProto& g, const std::map<std::string, std::string>& names) {
    for (auto& node : *g.mutable_node()) {
        for (auto& in : *node.mutable_input()) {
            auto it = names.find(in);
            if (it != names.end()) in = it->second;
        }
        for (auto& a : *node.mutable_attribute()) {
            if (a.has_g()) rename_refs(*a.mutable_g(), names);
            for (auto& sub : *a.mutable_graphs()) rename_refs(sub, names);
        }
    }
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

/// Writes the replacement of one control-flow node: new nodes and initializers, named under a
/// prefix so that every name stays unique.
class Unroller {
public:
    /// `ir_version`: below 4 an initializer is visible to shape inference only as a graph input too.
    Unroller(onnx::GraphProto& g, std::string prefix, int64_t opset, int64_t ir_version)
        : m_g(g), m_prefix(std::move(prefix)), m_opset(opset), m_declare_inputs(ir_version < 4) {}

    /// Copies `body`'s initializers and nodes under "<prefix>/<tag>/": body input i reads
    /// `inputs[i]`; other names the body does not define are the outer scope's. Returns the
    /// outer names of the body's outputs.
    std::vector<std::string> body(const onnx::GraphProto& body, const std::string& tag, const std::vector<std::string>& inputs) {
        const std::string p = m_prefix + "/" + tag + "/";
        std::map<std::string, std::string> names;
        for (int i = 0; i < body.input_size() && i < static_cast<int>(inputs.size()); ++i) names[body.input(i).name()] = inputs[static_cast<size_t>(i)];
        for (const auto& t : body.initializer()) {
            if (names.count(t.name())) continue;  // a default value the caller binds
            onnx::TensorProto c = t;
            c.set_name(p + t.name());
            names[t.name()] = c.name();
            add_initializer(std::move(c));
        }
        int k = 0;
        for (const auto& node : body.node()) {
            onnx::NodeProto n = node;
            n.set_name(p + (node.name().empty() ? node.op_type() + "_" + std::to_string(k) : node.name()));
            ++k;
            for (auto& in : *n.mutable_input()) {
                auto it = names.find(in);
                if (it != names.end()) in = it->second;
            }
            for (auto& out : *n.mutable_output()) {
                if (out.empty()) continue;
                names[out] = p + out;
                out = p + out;
            }
            for (auto& a : *n.mutable_attribute()) {
                if (a.has_g()) rename_refs(*a.mutable_g(), names);
                for (auto& sub : *a.mutable_graphs()) rename_refs(sub, names);
            }
            m_nodes.push_back(std::move(n));
        }
        std::vector<std::string> outs;
        for (const auto& o : body.output()) {
            auto it = names.find(o.name());
            outs.push_back(it != names.end() ? it->second : o.name());
        }
        return outs;
    }

    /// An int64 (or bool) scalar initializer; returns its name.
    std::string scalar(int64_t v, bool boolean = false) {
        onnx::TensorProto t;
        t.set_name(m_prefix + "/c" + std::to_string(m_consts++));
        t.set_data_type(boolean ? onnx::TensorProto::BOOL : onnx::TensorProto::INT64);
        if (boolean) t.add_int32_data(v != 0);
        else t.add_int64_data(v);
        return add_initializer(std::move(t));
    }
    /// A 1-D int64 initializer; returns its name.
    std::string ints(const std::vector<int64_t>& v) {
        onnx::TensorProto t;
        t.set_name(m_prefix + "/c" + std::to_string(m_consts++));
        t.set_data_type(onnx::TensorProto::INT64);
        t.add_dims(static_cast<int64_t>(v.size()));
        for (int64_t x : v) t.add_int64_data(x);
        return add_initializer(std::move(t));
    }

    /// A node of `op` on `inputs` writing `output` (a fresh name when empty); returns the output.
    std::string node(const std::string& op, const std::vector<std::string>& inputs, std::string output = "",
                     onnx::NodeProto** made = nullptr) {
        onnx::NodeProto n;
        n.set_op_type(op);
        n.set_name(m_prefix + "/" + op + "_" + std::to_string(m_nodes.size()));
        for (const auto& i : inputs) n.add_input(i);
        if (output.empty()) output = n.name() + "_output_0";
        n.add_output(output);
        m_nodes.push_back(std::move(n));
        if (made) *made = &m_nodes.back();
        return output;
    }

    /// `x` with its axis `axis` (of rank `rank` after) added, as the opset spells Unsqueeze.
    std::string unsqueeze(const std::string& x, int64_t axis) {
        if (m_opset >= 13) return node("Unsqueeze", {x, ints({axis})});
        onnx::NodeProto* n = nullptr;
        const std::string y = node("Unsqueeze", {x}, "", &n);
        auto* a = n->add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(axis);
        return y;
    }

    /// Element `index` of `x` along `axis` (the axis removed): Gather with a scalar index.
    std::string take(const std::string& x, int64_t index, int64_t axis) {
        onnx::NodeProto* n = nullptr;
        const std::string y = node("Gather", {x, scalar(index)}, "", &n);
        auto* a = n->add_attribute();
        a->set_name("axis");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(axis);
        return y;
    }

    /// `parts` stacked along a new axis `axis` (Unsqueeze each, Concat), written to `output` (a
    /// fresh name when empty); returns the output.
    std::string stack(const std::vector<std::string>& parts, int64_t axis, const std::string& output = "") {
        std::vector<std::string> u;
        for (const auto& p : parts) u.push_back(unsqueeze(p, axis));
        onnx::NodeProto* n = nullptr;
        const std::string y = node("Concat", u, output, &n);
        auto* a = n->add_attribute();
        a->set_name("axis");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(axis);
        return y;
    }

    std::vector<onnx::NodeProto>& nodes() { return m_nodes; }

private:
    std::string add_initializer(onnx::TensorProto t) {
        if (m_declare_inputs) {
            auto* in = m_g.add_input();
            in->set_name(t.name());
            auto* tt = in->mutable_type()->mutable_tensor_type();
            tt->set_elem_type(t.data_type());
            auto* shape = tt->mutable_shape();
            for (const int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
        }
        *m_g.add_initializer() = t;
        return t.name();
    }

    onnx::GraphProto& m_g;
    std::string m_prefix;
    int64_t m_opset;
    bool m_declare_inputs;
    int64_t m_consts = 0;
    std::vector<onnx::NodeProto> m_nodes;
};

/// The node's name, or its op type and position, for names and messages.
std::string label(const onnx::NodeProto& n, int k) { return n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name(); }

std::optional<int64_t> known_int(const std::map<std::string, ConstTensor>& consts, const std::string& name) {
    auto it = consts.find(name);
    if (it == consts.end() || it->second.elems() != 1) return std::nullopt;
    return it->second.as_int(0);
}

void check_size(int64_t iterations, const onnx::GraphProto& body, const std::string& where) {
    const int64_t per = std::max<int64_t>(1, node_count(body));
    if (iterations > kMaxUnrolledNodes / per)
        throw UserError(where, std::to_string(iterations) + " iterations of " + std::to_string(per) + " operators exceed the " +
                                   std::to_string(kMaxUnrolledNodes) + " operators archsim unrolls");
}

/// If: the branch `branch` ("then_branch" / "else_branch"), its outputs the node's.
void unroll_if(Unroller& u, const onnx::NodeProto& n, const std::string& branch, bool both) {
    const auto* a = attr(n, branch);
    const std::vector<std::string> outs = u.body(a->g(), branch == "then_branch" ? "then" : "else", {});
    for (int i = 0; i < n.output_size() && i < static_cast<int>(outs.size()); ++i)
        if (!n.output(i).empty()) u.node("Identity", {outs[static_cast<size_t>(i)]}, n.output(i));
    if (both) u.body(attr(n, "else_branch")->g(), "else", {});  // run for its cost; its outputs unread
}

/// Loop: `trips` iterations of the body, carried values threaded, scan outputs stacked.
void unroll_loop(Unroller& u, const onnx::NodeProto& n, int64_t trips, const std::string& where) {
    const onnx::GraphProto& body = attr(n, "body")->g();
    const int carried = n.input_size() - 2;
    const int scans = body.output_size() - 1 - carried;
    if (carried < 0 || scans < 0 || body.input_size() != carried + 2)
        throw UserError(where, "Loop body's inputs and outputs do not match the node's");
    if (trips == 0 && scans > 0) throw UserError(where, "a Loop of 0 iterations with scan outputs (empty tensors) is not modeled");
    std::vector<std::string> state(n.input().begin() + 2, n.input().end());
    std::vector<std::vector<std::string>> scanned(static_cast<size_t>(scans));
    const std::string truth = u.scalar(1, true);
    for (int64_t i = 0; i < trips; ++i) {
        std::vector<std::string> ins = {u.scalar(i), truth};
        ins.insert(ins.end(), state.begin(), state.end());
        const std::vector<std::string> outs = u.body(body, "iter" + std::to_string(i), ins);
        for (int j = 0; j < carried; ++j) state[static_cast<size_t>(j)] = outs[static_cast<size_t>(1 + j)];
        for (int k = 0; k < scans; ++k) scanned[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(1 + carried + k)]);
    }
    for (int j = 0; j < carried && j < n.output_size(); ++j)
        if (!n.output(j).empty()) u.node("Identity", {state[static_cast<size_t>(j)]}, n.output(j));
    for (int k = 0; k < scans && carried + k < n.output_size(); ++k)
        if (!n.output(carried + k).empty()) u.stack(scanned[static_cast<size_t>(k)], 0, n.output(carried + k));
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
    const auto* a = attr(n, name);
    return a ? a->i() : def;
}
int64_t attr_at(const onnx::NodeProto& n, const std::string& name, int k, int64_t def) {
    const auto* a = attr(n, name);
    return a && k < a->ints_size() ? a->ints(k) : def;
}

/// Scan (opset >= 9): `length` steps; step t reads element t (or length - 1 - t, reversed) of
/// each scan input along its axis, scan outputs stacked along theirs.
void unroll_scan(Unroller& u, const onnx::NodeProto& n, int64_t length, const ShapeMap& shapes) {
    const onnx::GraphProto& body = attr(n, "body")->g();
    const int m = static_cast<int>(attr_int(n, "num_scan_inputs", 0));
    const int states = n.input_size() - m, scans = body.output_size() - states;
    std::vector<std::string> state(n.input().begin(), n.input().begin() + states);
    std::vector<std::vector<std::string>> scanned(static_cast<size_t>(std::max(0, scans)));
    for (int64_t t = 0; t < length; ++t) {
        std::vector<std::string> ins = state;
        for (int j = 0; j < m; ++j) {
            const std::string& x = n.input(states + j);
            int64_t axis = attr_at(n, "scan_input_axes", j, 0);
            if (axis < 0) axis += static_cast<int64_t>(shapes.at(x).size());
            ins.push_back(u.take(x, attr_at(n, "scan_input_directions", j, 0) ? length - 1 - t : t, axis));
        }
        const std::vector<std::string> outs = u.body(body, "iter" + std::to_string(t), ins);
        for (int j = 0; j < states; ++j) state[static_cast<size_t>(j)] = outs[static_cast<size_t>(j)];
        for (int k = 0; k < scans; ++k) scanned[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(states + k)]);
    }
    for (int j = 0; j < states && j < n.output_size(); ++j)
        if (!n.output(j).empty()) u.node("Identity", {state[static_cast<size_t>(j)]}, n.output(j));
    for (int k = 0; k < scans && states + k < n.output_size(); ++k) {
        if (n.output(states + k).empty()) continue;
        std::vector<std::string>& parts = scanned[static_cast<size_t>(k)];
        if (attr_at(n, "scan_output_directions", k, 0)) std::reverse(parts.begin(), parts.end());
        u.stack(parts, attr_at(n, "scan_output_axes", k, 0), n.output(states + k));
    }
}

/// Scan at opset 8: a batch axis 0 on every input, the sequence on axis 1 of the scan inputs;
/// the body runs per batch entry and step.
void unroll_scan8(Unroller& u, const onnx::NodeProto& n, int64_t batch, int64_t length) {
    const onnx::GraphProto& body = attr(n, "body")->g();
    const int m = static_cast<int>(attr_int(n, "num_scan_inputs", 0));
    const int states = n.input_size() - 1 - m, scans = body.output_size() - states;
    std::vector<std::vector<std::string>> final_states(static_cast<size_t>(states)), batch_scans(static_cast<size_t>(std::max(0, scans)));
    for (int64_t b = 0; b < batch; ++b) {
        std::vector<std::string> state;
        for (int j = 0; j < states; ++j) state.push_back(u.take(n.input(1 + j), b, 0));
        std::vector<std::string> rows;
        for (int j = 0; j < m; ++j) rows.push_back(u.take(n.input(1 + states + j), b, 0));
        std::vector<std::vector<std::string>> scanned(static_cast<size_t>(std::max(0, scans)));
        for (int64_t t = 0; t < length; ++t) {
            std::vector<std::string> ins = state;
            for (int j = 0; j < m; ++j) ins.push_back(u.take(rows[static_cast<size_t>(j)], attr_at(n, "directions", j, 0) ? length - 1 - t : t, 0));
            const std::vector<std::string> outs = u.body(body, "b" + std::to_string(b) + "/iter" + std::to_string(t), ins);
            for (int j = 0; j < states; ++j) state[static_cast<size_t>(j)] = outs[static_cast<size_t>(j)];
            for (int k = 0; k < scans; ++k) scanned[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(states + k)]);
        }
        for (int j = 0; j < states; ++j) final_states[static_cast<size_t>(j)].push_back(state[static_cast<size_t>(j)]);
        for (int k = 0; k < scans; ++k) batch_scans[static_cast<size_t>(k)].push_back(u.stack(scanned[static_cast<size_t>(k)], 0));
    }
    for (int j = 0; j < states && j < n.output_size(); ++j)
        if (!n.output(j).empty()) u.stack(final_states[static_cast<size_t>(j)], 0, n.output(j));
    for (int k = 0; k < scans && states + k < n.output_size(); ++k)
        if (!n.output(states + k).empty()) u.stack(batch_scans[static_cast<size_t>(k)], 0, n.output(states + k));
}

}  // namespace

int64_t inline_control_flow(onnx::ModelProto& model, const std::map<std::string, ConstTensor>& consts, const ShapeMap& shapes,
                            int64_t opset, bool final_pass, std::vector<std::string>& notes, const std::string& file) {
    onnx::GraphProto& g = *model.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    int64_t replaced = 0;
    for (int k = 0; k < g.node_size(); ++k) {
        const onnx::NodeProto n = g.node(k);
        const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
        const std::string name = label(n, k);
        const std::string where = file + ": node '" + name + "' (" + n.op_type() + ")";
        Unroller u(g, name, opset, model.ir_version());
        bool done = false;
        if (default_domain && n.op_type() == "If" && attr(n, "then_branch") && attr(n, "else_branch") && n.input_size() == 1) {
            if (const auto cond = known_int(consts, n.input(0))) {
                unroll_if(u, n, *cond ? "then_branch" : "else_branch", false);
                done = true;
            } else if (final_pass) {
                unroll_if(u, n, "then_branch", true);
                notes.push_back(where + ": condition not known at import; both branches costed, an upper bound (--inputs gives its value)");
                done = true;
            }
        } else if (default_domain && n.op_type() == "Loop" && attr(n, "body") && n.input_size() >= 2) {
            const auto trips = n.input(0).empty() ? std::nullopt : known_int(consts, n.input(0));
            const auto start = n.input(1).empty() ? std::optional<int64_t>(1) : known_int(consts, n.input(1));
            if (trips && start) {
                const onnx::GraphProto& body = attr(n, "body")->g();
                const int64_t count = *start ? std::max<int64_t>(0, *trips) : 0;
                check_size(count, body, where);
                // the body's condition: passed through or a constant true runs every trip
                const std::string& cond_out = body.output_size() > 0 ? body.output(0).name() : "";
                bool exits = body.input_size() < 2 || cond_out != body.input(1).name();
                for (const auto& t : body.initializer())
                    if (t.name() == cond_out) exits = false;
                for (const auto& bn : body.node())
                    if (bn.op_type() == "Constant" && bn.output_size() == 1 && bn.output(0) == cond_out) exits = false;
                unroll_loop(u, n, count, where);
                if (exits && count > 0)
                    notes.push_back(where + ": its body computes its own condition; unrolled to the trip count " + std::to_string(count) +
                                    ", an upper bound");
                done = true;
            }
        } else if (default_domain && n.op_type() == "Scan" && attr(n, "body")) {
            const int m = static_cast<int>(attr_int(n, "num_scan_inputs", 0));
            const bool v8 = opset < 9;
            const int first_scan = n.input_size() - m;
            if (m >= 1 && first_scan >= (v8 ? 1 : 0)) {
                auto it = shapes.find(n.input(first_scan));
                if (it != shapes.end()) {
                    const std::vector<int64_t>& s = it->second;
                    if (v8 && s.size() >= 2 && n.input(0).empty()) {
                        check_size(s[0] * s[1], attr(n, "body")->g(), where);
                        unroll_scan8(u, n, s[0], s[1]);
                        done = true;
                    } else if (!v8) {
                        int64_t axis = attr_at(n, "scan_input_axes", 0, 0);
                        if (axis < 0) axis += static_cast<int64_t>(s.size());
                        if (axis >= 0 && axis < static_cast<int64_t>(s.size())) {
                            check_size(s[static_cast<size_t>(axis)], attr(n, "body")->g(), where);
                            unroll_scan(u, n, s[static_cast<size_t>(axis)], shapes);
                            done = true;
                        }
                    }
                }
            }
        }
        if (!done) {
            *kept.Add() = n;
            continue;
        }
        ++replaced;
        for (auto& made : u.nodes()) *kept.Add() = std::move(made);
    }
    if (replaced) g.mutable_node()->Swap(&kept);
    return replaced;
}

}  // namespace archsim
