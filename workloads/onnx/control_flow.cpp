#include "workloads/onnx/control_flow.h"

#include <algorithm>
#include <optional>
#include <set>

#include "sim/base/error.h"
#include "workloads/onnx/unroller.h"

namespace archsim {

namespace {

/// If: the branch `branch` ("then_branch" / "else_branch"), its outputs the node's.
void unroll_if(Unroller& u, const onnx::NodeProto& n, const std::string& branch, bool both) {
    const auto* a = node_attr(n, branch);
    const std::vector<std::string> outs = u.body(a->g(), branch == "then_branch" ? "then" : "else", {});
    for (int i = 0; i < n.output_size() && i < static_cast<int>(outs.size()); ++i)
        if (!n.output(i).empty()) u.node("Identity", {outs[static_cast<size_t>(i)]}, n.output(i));
    if (both) u.body(node_attr(n, "else_branch")->g(), "else", {});  // run for its cost; its outputs unread
}

/// Loop: `trips` iterations of the body, carried values threaded, scan outputs stacked.
void unroll_loop(Unroller& u, const onnx::NodeProto& n, int64_t trips, const std::string& where) {
    const onnx::GraphProto& body = node_attr(n, "body")->g();
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

/// Scan (opset >= 9): `length` steps; step t reads element t (or length - 1 - t, reversed) of
/// each scan input along its axis, scan outputs stacked along theirs.
void unroll_scan(Unroller& u, const onnx::NodeProto& n, int64_t length, const ShapeMap& shapes) {
    const onnx::GraphProto& body = node_attr(n, "body")->g();
    const int m = static_cast<int>(node_attr_int(n, "num_scan_inputs", 0));
    const int states = n.input_size() - m, scans = body.output_size() - states;
    std::vector<std::string> state(n.input().begin(), n.input().begin() + states);
    std::vector<std::vector<std::string>> scanned(static_cast<size_t>(std::max(0, scans)));
    for (int64_t t = 0; t < length; ++t) {
        std::vector<std::string> ins = state;
        for (int j = 0; j < m; ++j) {
            const std::string& x = n.input(states + j);
            int64_t axis = node_attr_at(n, "scan_input_axes", j, 0);
            if (axis < 0) axis += static_cast<int64_t>(shapes.at(x).size());
            ins.push_back(u.take(x, node_attr_at(n, "scan_input_directions", j, 0) ? length - 1 - t : t, axis));
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
        if (node_attr_at(n, "scan_output_directions", k, 0)) std::reverse(parts.begin(), parts.end());
        u.stack(parts, node_attr_at(n, "scan_output_axes", k, 0), n.output(states + k));
    }
}

/// Scan at opset 8: a batch axis 0 on every input, the sequence on axis 1 of the scan inputs;
/// the body runs per batch entry and step.
void unroll_scan8(Unroller& u, const onnx::NodeProto& n, int64_t batch, int64_t length) {
    const onnx::GraphProto& body = node_attr(n, "body")->g();
    const int m = static_cast<int>(node_attr_int(n, "num_scan_inputs", 0));
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
            for (int j = 0; j < m; ++j) ins.push_back(u.take(rows[static_cast<size_t>(j)], node_attr_at(n, "directions", j, 0) ? length - 1 - t : t, 0));
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
        const std::string name = node_label(n, k);
        const std::string where = file + ": node '" + name + "' (" + n.op_type() + ")";
        Unroller u(g, name, opset, model.ir_version());
        bool done = false;
        if (default_domain && n.op_type() == "If" && node_attr(n, "then_branch") && node_attr(n, "else_branch") && n.input_size() == 1) {
            if (const auto cond = known_scalar(consts, n.input(0))) {
                unroll_if(u, n, *cond ? "then_branch" : "else_branch", false);
                done = true;
            } else if (final_pass) {
                unroll_if(u, n, "then_branch", true);
                notes.push_back(where + ": condition not known at import; both branches costed, an upper bound (--inputs gives its value)");
                done = true;
            }
        } else if (default_domain && n.op_type() == "Loop" && node_attr(n, "body") && n.input_size() >= 2) {
            const auto trips = n.input(0).empty() ? std::nullopt : known_scalar(consts, n.input(0));
            const auto start = n.input(1).empty() ? std::optional<int64_t>(1) : known_scalar(consts, n.input(1));
            if (trips && start) {
                const onnx::GraphProto& body = node_attr(n, "body")->g();
                const int64_t count = *start ? std::max<int64_t>(0, *trips) : 0;
                check_unroll_size(count, body, where);
                // the body's condition: passed through (directly or by Identity) or a constant
                // runs every trip
                std::string cond_out = body.output_size() > 0 ? body.output(0).name() : "";
                for (auto it = body.node().rbegin(); it != body.node().rend(); ++it)
                    if (it->op_type() == "Identity" && it->output_size() == 1 && it->output(0) == cond_out && it->input_size() == 1)
                        cond_out = it->input(0);
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
        } else if (default_domain && n.op_type() == "Scan" && node_attr(n, "body")) {
            const int m = static_cast<int>(node_attr_int(n, "num_scan_inputs", 0));
            const bool v8 = opset < 9;
            const int first_scan = n.input_size() - m;
            if (m >= 1 && first_scan >= (v8 ? 1 : 0)) {
                auto it = shapes.find(n.input(first_scan));
                if (it != shapes.end()) {
                    const std::vector<int64_t>& s = it->second;
                    if (v8 && s.size() >= 2 && n.input(0).empty()) {
                        check_unroll_size(s[0] * s[1], node_attr(n, "body")->g(), where);
                        unroll_scan8(u, n, s[0], s[1]);
                        done = true;
                    } else if (!v8) {
                        int64_t axis = node_attr_at(n, "scan_input_axes", 0, 0);
                        if (axis < 0) axis += static_cast<int64_t>(s.size());
                        if (axis >= 0 && axis < static_cast<int64_t>(s.size())) {
                            check_unroll_size(s[static_cast<size_t>(axis)], node_attr(n, "body")->g(), where);
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
