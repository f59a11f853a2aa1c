#include "workloads/onnx/sequences.h"

#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "sim/base/error.h"
#include "workloads/onnx/unroller.h"

namespace archsim {

namespace {

using List = std::vector<std::string>;

bool in_default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

/// Adds the names `g`'s nodes read, their subgraphs' too, to `reads`.
void collect_reads(const onnx::GraphProto& g, std::set<std::string>& reads) {
    for (const auto& n : g.node()) {
        for (const auto& i : n.input()) reads.insert(i);
        for (const auto& a : n.attribute()) {
            if (a.has_g()) collect_reads(a.g(), reads);
            for (const auto& s : a.graphs()) collect_reads(s, reads);
        }
    }
}

/// Removes the sequence and optional builders (SequenceConstruct, SequenceEmpty, Optional) whose
/// value nothing reads and that are not graph outputs; returns how many.
int64_t remove_unread_builders(onnx::GraphProto& g) {
    int64_t removed = 0;
    for (bool again = true; again;) {
        std::set<std::string> reads;
        collect_reads(g, reads);
        for (const auto& o : g.output()) reads.insert(o.name());
        google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
        again = false;
        for (const auto& n : g.node()) {
            const bool builder = in_default_domain(n) && (n.op_type() == "SequenceConstruct" || n.op_type() == "SequenceEmpty" ||
                                                          n.op_type() == "Optional");
            if (builder && n.output_size() == 1 && !reads.count(n.output(0))) {
                again = true;
                ++removed;
                continue;
            }
            *kept.Add() = n;
        }
        if (again) g.mutable_node()->Swap(&kept);
    }
    return removed;
}

/// The rewrite of one graph: walks the nodes in order, tracking the sequences and optionals
/// whose contents are known.
class Resolver {
public:
    Resolver(onnx::ModelProto& model, const std::map<std::string, ConstTensor>& consts, const ShapeMap& shapes, int64_t opset,
             const std::string& file)
        : m_model(model), m_g(*model.mutable_graph()), m_consts(consts), m_shapes(shapes), m_opset(opset), m_file(file) {
        for (const auto& v : m_g.input()) m_types[v.name()] = &v.type();
        for (const auto& v : m_g.value_info()) m_types[v.name()] = &v.type();
        for (const auto& v : m_g.output()) m_types[v.name()] = &v.type();
    }

    int64_t run() {
        google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
        int64_t rewritten = 0;
        for (int k = 0; k < m_g.node_size(); ++k) {
            const onnx::NodeProto n = m_g.node(k);
            Unroller u(m_g, node_label(n, k), m_opset, m_model.ir_version());
            const std::string where = m_file + ": node '" + node_label(n, k) + "' (" + n.op_type() + ")";
            if (!in_default_domain(n) || !rewrite(n, u, where)) {
                *out.Add() = n;
                continue;
            }
            ++rewritten;
            for (auto& made : u.nodes()) *out.Add() = std::move(made);
        }
        if (rewritten) m_g.mutable_node()->Swap(&out);
        return rewritten + remove_unread_builders(m_g);
    }

private:
    /// Rewrites `n` into `u`'s nodes, or returns false to keep it (recording what it builds).
    bool rewrite(const onnx::NodeProto& n, Unroller& u, const std::string& where) {
        const std::string& op = n.op_type();
        const std::string out = n.output_size() > 0 ? n.output(0) : "";
        if (out.empty()) return false;
        if (op == "SequenceConstruct") {
            m_seqs[out] = List(n.input().begin(), n.input().end());
            return false;
        }
        if (op == "SequenceEmpty") {
            m_seqs[out] = {};
            return false;
        }
        if (op == "Optional") {
            m_opts[out] = n.input_size() > 0 && !n.input(0).empty() ? std::optional<std::string>(n.input(0)) : std::nullopt;
            return false;
        }
        const std::string in = n.input_size() > 0 ? n.input(0) : "";
        const List* seq = m_seqs.count(in) ? &m_seqs.at(in) : nullptr;
        if (op == "Identity") {
            if (m_opts.count(in)) m_opts[out] = m_opts.at(in);
            if (!seq) return false;
            return build(u, out, *seq);
        }
        if (op == "OptionalHasElement") {
            std::optional<bool> has;
            if (in.empty()) has = false;
            else if (m_opts.count(in)) has = m_opts.at(in).has_value();
            else if (seq || (m_types.count(in) && m_types.at(in)->has_tensor_type())) has = true;
            if (!has) return false;
            u.node("Identity", {u.scalar(*has, true)}, out);
            return true;
        }
        if (op == "OptionalGetElement") {
            std::optional<std::string> value;
            if (m_opts.count(in)) value = m_opts.at(in);
            else if (seq || (m_types.count(in) && m_types.at(in)->has_tensor_type())) value = in;
            if (!value) return false;
            if (m_seqs.count(*value)) return build(u, out, List(m_seqs.at(*value)));
            u.node("Identity", {*value}, out);
            return true;
        }
        if (op == "SplitToSequence") return split(n, u, out);
        if (op == "SequenceMap") return map(n, u, where);
        if (!seq) return false;
        const int64_t length = static_cast<int64_t>(seq->size());
        if (op == "SequenceLength") {
            u.node("Identity", {u.scalar(length)}, out);
            return true;
        }
        if (op == "SequenceAt" || op == "SequenceErase" || op == "SequenceInsert") {
            const int at = op == "SequenceInsert" ? 2 : 1;
            const bool given = n.input_size() > at && !n.input(at).empty();
            if (!given && op == "SequenceAt") return false;
            const std::optional<int64_t> known = given ? known_scalar(m_consts, n.input(at)) : std::nullopt;
            if (given && !known) return false;  // a position computed at run time
            const int64_t pos = known ? *known : op == "SequenceErase" ? -1 : length;
            const int64_t end = op == "SequenceInsert" ? length : length - 1;
            if (pos < -length || pos > end)
                throw UserError(where, "position " + std::to_string(pos) + " is outside a sequence of " + std::to_string(length) + " tensors");
            const auto p = static_cast<size_t>(pos < 0 ? pos + length : pos);
            List list = *seq;
            if (op == "SequenceAt") {
                u.node("Identity", {list[p]}, out);
                return true;
            }
            if (op == "SequenceErase") list.erase(list.begin() + static_cast<std::ptrdiff_t>(p));
            else if (n.input_size() < 2) return false;
            else list.insert(list.begin() + static_cast<std::ptrdiff_t>(p), n.input(1));
            return build(u, out, std::move(list));
        }
        if (op == "ConcatFromSequence" && length > 0 && node_attr(n, "axis")) {
            const int64_t axis = node_attr_int(n, "axis", 0);
            if (node_attr_int(n, "new_axis", 0)) u.stack(*seq, axis, out);
            else u.concat(*seq, axis, out);
            return true;
        }
        return false;
    }

    /// Records `out` as the sequence `list` and writes its builder (SequenceConstruct, or
    /// SequenceEmpty of the declared element type), which is removed when nothing reads it.
    bool build(Unroller& u, const std::string& out, List list) {
        if (!list.empty()) {
            u.node("SequenceConstruct", list, out);
        } else {
            onnx::NodeProto* made = nullptr;
            u.node("SequenceEmpty", {}, out, &made);
            auto* a = made->add_attribute();
            a->set_name("dtype");
            a->set_type(onnx::AttributeProto::INT);
            int32_t dtype = onnx::TensorProto::FLOAT;
            auto it = m_types.find(out);
            if (it != m_types.end() && it->second->has_sequence_type() && it->second->sequence_type().elem_type().has_tensor_type() &&
                it->second->sequence_type().elem_type().tensor_type().elem_type() != 0)
                dtype = it->second->sequence_type().elem_type().tensor_type().elem_type();
            a->set_i(dtype);
        }
        m_seqs[out] = std::move(list);
        return true;
    }

    /// SplitToSequence of a tensor of static shape: its pieces along `axis` as Slices (or, one
    /// element each without `keepdims`, Gathers).
    bool split(const onnx::NodeProto& n, Unroller& u, const std::string& out) {
        auto shape = m_shapes.find(n.input(0));
        if (shape == m_shapes.end()) return false;
        const auto rank = static_cast<int64_t>(shape->second.size());
        int64_t axis = node_attr_int(n, "axis", 0);
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank) return false;
        const int64_t dim = shape->second[static_cast<size_t>(axis)];
        std::vector<int64_t> sizes;
        const bool given = n.input_size() > 1 && !n.input(1).empty();
        if (given) {
            auto c = m_consts.find(n.input(1));
            if (c == m_consts.end()) return false;
            if (c->second.shape.empty()) {  // a scalar: pieces of that size, the last one shorter
                const int64_t chunk = c->second.as_int(0);
                if (chunk <= 0) return false;
                for (int64_t at = 0; at < dim; at += chunk) sizes.push_back(std::min(chunk, dim - at));
            } else {
                int64_t total = 0;
                for (int64_t i = 0; i < c->second.elems(); ++i) sizes.push_back(c->second.as_int(i)), total += sizes.back();
                if (total != dim) return false;
            }
        } else {
            sizes.assign(static_cast<size_t>(dim), 1);
        }
        if (static_cast<int64_t>(sizes.size()) > kMaxUnrolledNodes) return false;
        List parts;
        int64_t at = 0;
        for (const int64_t s : sizes) {
            parts.push_back(!given && !node_attr_int(n, "keepdims", 1) ? u.take(n.input(0), at, axis) : u.slice(n.input(0), at, at + s, axis));
            at += s;
        }
        return build(u, out, std::move(parts));
    }

    /// SequenceMap over known sequences: its body once per element, the outputs sequences of
    /// the body's outputs.
    bool map(const onnx::NodeProto& n, Unroller& u, const std::string& where) {
        const auto* body = node_attr(n, "body");
        if (!body || !body->has_g() || n.input_size() == 0 || !m_seqs.count(n.input(0))) return false;
        const size_t length = m_seqs.at(n.input(0)).size();
        for (const auto& in : n.input()) {
            if (m_seqs.count(in)) {
                if (m_seqs.at(in).size() != length)
                    throw UserError(where, "its sequences differ in length (" + std::to_string(length) + " and " +
                                               std::to_string(m_seqs.at(in).size()) + ")");
            } else if (m_types.count(in) && m_types.at(in)->has_sequence_type()) {
                return false;  // a sequence of unknown length
            }
        }
        check_unroll_size(static_cast<int64_t>(length), body->g(), where);
        std::vector<List> results(static_cast<size_t>(n.output_size()));
        for (size_t i = 0; i < length; ++i) {
            List ins;
            for (const auto& in : n.input()) ins.push_back(m_seqs.count(in) ? m_seqs.at(in)[i] : in);
            const List outs = u.body(body->g(), "iter" + std::to_string(i), ins);
            for (size_t j = 0; j < results.size() && j < outs.size(); ++j) results[j].push_back(outs[j]);
        }
        for (int j = 0; j < n.output_size(); ++j)
            if (!n.output(j).empty()) build(u, n.output(j), std::move(results[static_cast<size_t>(j)]));
        return true;
    }

    onnx::ModelProto& m_model;
    onnx::GraphProto& m_g;
    const std::map<std::string, ConstTensor>& m_consts;
    const ShapeMap& m_shapes;
    int64_t m_opset;
    const std::string& m_file;
    std::unordered_map<std::string, const onnx::TypeProto*> m_types;
    std::unordered_map<std::string, List> m_seqs;                         // known sequences: their elements
    std::unordered_map<std::string, std::optional<std::string>> m_opts;  // known optionals: their value or none
};

}  // namespace

int64_t resolve_sequences(onnx::ModelProto& model, const std::map<std::string, ConstTensor>& consts, const ShapeMap& shapes,
                          int64_t opset, const std::string& file) {
    return Resolver(model, consts, shapes, opset, file).run();
}

}  // namespace archsim
