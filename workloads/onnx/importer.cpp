#include "workloads/onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "sim/base/error.h"
#include "workloads/onnx/causal_mask.h"
#include "workloads/onnx/const_fold.h"
#include "workloads/onnx/control_flow.h"
#include "workloads/onnx/sequences.h"
#include "workloads/onnx/input_data.h"
#include "workloads/graph/workload_ref.h"
#include "workloads/onnx/op_handlers.h"

namespace archsim {

namespace fs = std::filesystem;

namespace {

/// Largest tensor we accept (elements): a file that claims more is refused, never allocated.
/// The largest tensor accepted: 2^36 elements (256 GiB of fp32). Claims beyond it are refused, never
/// allocated (nothing here allocates by a tensor's size; the limit keeps the byte and MAC counts
/// far from int64 overflow and catches corrupt dims).
constexpr int64_t kMaxTensorElems = int64_t(1) << 36;

int64_t dtype_bytes(int32_t dt) {
    switch (dt) {
        case onnx::TensorProto_DataType_FLOAT: case onnx::TensorProto_DataType_INT32:
        case onnx::TensorProto_DataType_UINT32: return 4;
        case onnx::TensorProto_DataType_DOUBLE: case onnx::TensorProto_DataType_INT64:
        case onnx::TensorProto_DataType_UINT64: case onnx::TensorProto_DataType_COMPLEX64: return 8;
        case onnx::TensorProto_DataType_COMPLEX128: return 16;
        case onnx::TensorProto_DataType_FLOAT16: case onnx::TensorProto_DataType_BFLOAT16:
        case onnx::TensorProto_DataType_INT16: case onnx::TensorProto_DataType_UINT16: return 2;
        case onnx::TensorProto_DataType_STRING: return 8;  // a pointer per element; contents unknown
        default: return 1;  // INT8, UINT8, BOOL
    }
}

bool is_float_type(int32_t dt) {
    return dt == onnx::TensorProto_DataType_FLOAT || dt == onnx::TensorProto_DataType_DOUBLE ||
           dt == onnx::TensorProto_DataType_FLOAT16 || dt == onnx::TensorProto_DataType_BFLOAT16;
}

std::string shape_text(const google::protobuf::RepeatedField<int64_t>& dims) {
    std::string s;
    for (int i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
    return s;
}

onnx::ModelProto parse_model(const std::string& bytes, const std::string& path) {
    if (bytes.empty()) throw UserError(path, "empty file, not an ONNX model");
    if (bytes.size() > static_cast<size_t>(INT_MAX))
        throw UserError(path, "larger than 2 GiB, protobuf's limit (store the weights as ONNX external data)");
    onnx::ModelProto model;
    google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
        throw UserError(path, "not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
    if (model.ir_version() <= 0 || !model.has_graph())
        throw UserError(path, "not an ONNX model (no ir_version or no graph)");
    return model;
}

onnx::ModelProto load_model(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw UserError(path, "no such file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path, "cannot open for reading");
    return parse_model(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), path);
}

std::string node_label(const std::string& file, const onnx::NodeProto& n, int index) {
    std::string name = n.name().empty() ? ("#" + std::to_string(index)) : n.name();
    return file + ": node '" + name + "' (" + n.op_type() + ")";
}

/// Static shape of a ValueInfo if its type is a tensor with every dim known.
std::optional<std::vector<int64_t>> static_shape(const onnx::TypeProto& type) {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
    std::vector<int64_t> s;
    for (const auto& d : type.tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
        s.push_back(d.dim_value());
    }
    return s;
}

/// Binds --dim names and --batch on the model inputs.
void bind_inputs(onnx::ModelProto& model, const ImportOptions& opt, const std::string& file) {
    std::set<std::string> inits;
    for (const auto& t : model.graph().initializer()) inits.insert(t.name());
    std::set<std::string> used;
    for (auto& in : *model.mutable_graph()->mutable_input()) {
        if (inits.count(in.name()) || !in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
        auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
        for (int k = 0; k < shape->dim_size(); ++k) {
            auto* d = shape->mutable_dim(k);
            if (d->has_dim_param()) {
                auto it = opt.dims.find(d->dim_param());
                if (it != opt.dims.end()) {
                    used.insert(it->first);
                    d->set_dim_value(it->second);
                }
            }
            if (k == 0 && opt.batch) d->set_dim_value(*opt.batch);
        }
    }
    for (const auto& [name, v] : opt.dims)
        if (!used.count(name)) throw UserError(file + ": --dim " + name, "no model input has a dim named '" + name + "'");
    if (opt.batch || !opt.dims.empty()) {
        // Stored output shapes and value_info describe the old batch; let inference redo them.
        for (auto& out : *model.mutable_graph()->mutable_output())
            if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
    }
}

/// Clears the model's value_info (inference redoes it), except the shapes of outputs of nodes
/// ONNX has no schema for at the model's opset (an operator newer than the installed ONNX, such
/// as opset 20's Gelu under ONNX 1.12): inference cannot find those, and the file's own are kept.
void keep_unknown_ops_value_info(onnx::ModelProto& model) {
    std::map<std::string, int64_t> opsets;
    for (const auto& o : model.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
    std::set<std::string> keep;
    for (const auto& n : model.graph().node()) {
        const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
        const auto it = opsets.find(domain);
        if (it != opsets.end() && !onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(it->second), domain))
            for (const auto& o : n.output()) keep.insert(o);
    }
    auto* vi = model.mutable_graph()->mutable_value_info();
    int kept = 0;
    for (int i = 0; i < vi->size(); ++i)
        if (keep.count(vi->Get(i).name())) vi->SwapElements(i, kept++);
    while (vi->size() > kept) vi->RemoveLast();
}

/// ONNX's own shape inference, in place. Throws UserError with its message on a model it rejects.
void infer_in_process(onnx::ModelProto& model, const std::string& file) {
    try {
        onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
        std::string msg = e.what();
        for (auto& ch : msg)
            if (ch == '\n') ch = ' ';
        throw UserError(file, "ONNX shape inference failed: " + msg);
    }
}

/// Runs ONNX shape inference on `model`. ONNX's inference functions trust their inputs and some
/// crash on malformed models (found by fuzzing: a division by zero in the Conv/Pool shape function,
/// null dereferences on rank-0 or untyped values), so they run in a forked child: the parent
/// reads the inferred model back through a pipe, and a child that dies is one error line, not a
/// crash of archsim. The schema registry (every opset's operator schemas, built on first use:
/// about a fifth of a small run) is built before the fork, so that the child inherits it and
/// the importer's own schema lookups afterwards do not build it a second time.
void run_shape_inference(onnx::ModelProto& model, const std::string& file) {
    (void)onnx::OpSchemaRegistry::Schema("Relu", 14);
    keep_unknown_ops_value_info(model);
    int fds[2];
    if (pipe(fds) != 0) {
        infer_in_process(model, file);
        return;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        infer_in_process(model, file);
        return;
    }
    if (pid == 0) {  // child: infer, send back "E<message>" or "M<model>"
        close(fds[0]);
        const int devnull = open("/dev/null", O_WRONLY);  // whatever a crashing ONNX prints is not ours to show
        if (devnull >= 0) dup2(devnull, 2);
        std::string out;
        try {
            infer_in_process(model, file);
            out = "M" + model.SerializeAsString();
        } catch (const UserError& e) {
            out = "E" + e.reason();
        }
        for (size_t at = 0; at < out.size();) {
            const ssize_t w = write(fds[1], out.data() + at, out.size() - at);
            if (w <= 0) _exit(3);
            at += static_cast<size_t>(w);
        }
        _exit(0);
    }
    close(fds[1]);
    std::string in;
    char buf[1 << 16];
    for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) != 0;) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        in.append(buf, static_cast<size_t>(r));
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status))
        throw UserError(file, "ONNX shape inference crashed on this model (signal " + std::to_string(WTERMSIG(status)) +
                                  "): it is malformed");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || in.empty())
        throw UserError(file, "ONNX shape inference did not finish on this model: it is malformed");
    if (in[0] == 'E') throw UserError(file, in.substr(1));
    onnx::ModelProto inferred;
    if (!inferred.ParseFromArray(in.data() + 1, static_cast<int>(in.size() - 1)))
        throw UserError(file, "ONNX shape inference returned an unreadable model");
    model = std::move(inferred);
}

/// Collects every static shape known after inference.
ShapeMap known_shapes(const onnx::GraphProto& g) {
    ShapeMap m;
    auto add = [&](const onnx::ValueInfoProto& v) {
        if (auto s = static_shape(v.type())) m[v.name()] = *s;
    };
    for (const auto& v : g.input()) add(v);
    for (const auto& v : g.value_info()) add(v);
    for (const auto& v : g.output()) add(v);
    for (const auto& t : g.initializer()) m[t.name()] = {t.dims().begin(), t.dims().end()};
    return m;
}

/// Types the statistics outputs of BatchNormalization in training mode (running or saved mean
/// and variance, outputs 1 to 4: a [C] vector each, of the scale's type) where ONNX's inference
/// left them untyped: ONNX 1.12 types only Y of the opset 9-14 forms that PyTorch's
/// TrainingMode.TRAINING export writes.
void type_batchnorm_statistics(onnx::ModelProto& model) {
    onnx::GraphProto* g = model.mutable_graph();
    if (std::none_of(g->node().begin(), g->node().end(),
                     [](const onnx::NodeProto& n) { return n.op_type() == "BatchNormalization" && n.output_size() > 1; }))
        return;  // an inference export: nothing to type
    std::set<std::string> typed;
    std::map<std::string, const onnx::TypeProto*> types;
    for (const auto& v : g->input()) typed.insert(v.name()), types[v.name()] = &v.type();
    for (const auto& v : g->value_info()) typed.insert(v.name()), types[v.name()] = &v.type();
    for (const auto& v : g->output()) typed.insert(v.name());
    std::map<std::string, const onnx::TensorProto*> inits;
    for (const auto& t : g->initializer()) inits[t.name()] = &t;
    std::vector<onnx::ValueInfoProto> added;
    for (const auto& n : g->node()) {
        if (n.op_type() != "BatchNormalization" || n.output_size() < 2 || n.input_size() < 2) continue;
        onnx::TypeProto type;
        if (auto it = inits.find(n.input(1)); it != inits.end()) {
            type.mutable_tensor_type()->set_elem_type(it->second->data_type());
            for (const auto d : it->second->dims()) type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
        } else if (auto ty = types.find(n.input(1)); ty != types.end()) {
            type = *ty->second;
        } else {
            continue;
        }
        for (int o = 1; o < n.output_size(); ++o) {
            if (n.output(o).empty() || typed.count(n.output(o))) continue;
            onnx::ValueInfoProto v;
            v.set_name(n.output(o));
            *v.mutable_type() = type;
            added.push_back(std::move(v));
            typed.insert(n.output(o));
        }
    }
    for (auto& v : added) *g->add_value_info() = std::move(v);
}

/// Repeats: shape inference, then fold every node whose inputs are constants, until nothing
/// folds. Folded nodes leave the graph; their outputs become initializers.
/// Control flow whose decision is then known is replaced by what it runs (control_flow.h), and
/// sequences whose contents are known are rewritten on their elements (sequences.h); the rounds
/// go on over the flat graph; `notes` gets what was assumed.
int64_t fold_constants(onnx::ModelProto& model, int64_t opset, const std::string& file, std::vector<std::string>& notes) {
    int64_t folded_total = 0;
    for (int round = 0; round < 64; ++round) {
        run_shape_inference(model, file);
        type_batchnorm_statistics(model);
        auto* g = model.mutable_graph();
        ShapeMap shapes = known_shapes(*g);
        std::map<std::string, ConstTensor> consts;
        for (const auto& t : g->initializer())
            if (auto c = const_from_proto(t)) consts[t.name()] = std::move(*c);
        std::set<std::string> graph_outputs;
        for (const auto& o : g->output()) graph_outputs.insert(o.name());

        std::vector<bool> folded(g->node_size(), false);
        std::vector<onnx::TensorProto> new_inits;
        int64_t n_folded = 0;
        for (int k = 0; k < g->node_size(); ++k) {
            const auto& node = g->node(k);
            if (node.output_size() == 0) continue;
            // keep graph outputs computed by nodes, so the model's outputs stay operators
            bool is_output = false;
            for (const auto& o : node.output()) is_output |= graph_outputs.count(o) > 0;
            if (is_output && node.op_type() != "Constant") continue;
            auto vals = fold_node(node, consts, shapes, opset);
            if (!vals || vals->size() < static_cast<size_t>(node.output_size())) continue;
            for (int o = 0; o < node.output_size(); ++o) {
                const std::string& name = node.output(o);
                if (name.empty()) continue;
                ConstTensor& c = (*vals)[o];
                shapes[name] = c.shape;
                new_inits.push_back(const_to_proto(c, name));
                consts[name] = std::move(c);
            }
            folded[k] = true;
            ++n_folded;
        }
        folded_total += n_folded;
        if (n_folded > 0) {
            google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
            for (int k = 0; k < g->node_size(); ++k)
                if (!folded[k]) *kept.Add() = g->node(k);
            g->mutable_node()->Swap(&kept);
        }
        for (auto& t : new_inits) {
            // Before IR version 4 an initializer is only visible to shape inference as a graph input.
            if (model.ir_version() < 4) {
                auto* in = g->add_input();
                in->set_name(t.name());
                auto* tt = in->mutable_type()->mutable_tensor_type();
                tt->set_elem_type(t.data_type());
                auto* shape = tt->mutable_shape();
                for (auto d : t.dims()) shape->add_dim()->set_dim_value(d);
            }
            *g->add_initializer() = std::move(t);
        }
        if (n_folded > 0) continue;
        // nothing left to fold: unroll the control flow whose decision is known, rewrite the
        // sequences whose contents are known, and at last run an If of unknown condition both ways
        if (inline_control_flow(model, consts, shapes, opset, false, notes, file) == 0 &&
            resolve_sequences(model, consts, shapes, opset, file) == 0 &&
            inline_control_flow(model, consts, shapes, opset, true, notes, file) == 0)
            break;
    }
    return folded_total;
}

/// Checks the node graph before anything else reads it: every input has a source, no tensor is
/// produced twice, and there is no cycle (Kahn's algorithm over the nodes).
void check_structure(const onnx::GraphProto& g, const std::string& file) {
    for (int k = 0; k < g.node_size(); ++k)
        for (const auto& a : g.node(k).attribute())
            if (a.name() == "pads")
                for (int64_t p : a.ints())
                    if (p < 0) {
                        std::string list;
                        for (int64_t q : a.ints()) list += (list.empty() ? "" : ", ") + std::to_string(q);
                        throw UserError(node_label(file, g.node(k), k), "negative pads [" + list + "]");
                    }
    std::unordered_map<std::string, int> producer;
    for (int k = 0; k < g.node_size(); ++k)
        for (const auto& o : g.node(k).output()) {
            if (o.empty()) continue;
            auto [it, fresh] = producer.emplace(o, k);
            if (!fresh)
                throw UserError(node_label(file, g.node(k), k),
                                "output '" + o + "' is also produced by " + node_label("", g.node(it->second), it->second).substr(2));
        }
    std::set<std::string> sources;
    for (const auto& t : g.initializer()) sources.insert(t.name());
    for (const auto& v : g.input()) sources.insert(v.name());
    std::vector<int> indeg(g.node_size(), 0);
    std::vector<std::vector<int>> users(g.node_size());
    for (int k = 0; k < g.node_size(); ++k)
        for (const auto& in : g.node(k).input()) {
            if (in.empty()) continue;
            auto it = producer.find(in);
            if (it != producer.end()) {
                ++indeg[k];
                users[it->second].push_back(k);
            } else if (!sources.count(in)) {
                throw UserError(node_label(file, g.node(k), k),
                                "input '" + in + "' is not produced by any node, graph input or initializer");
            }
        }
    std::vector<int> ready;
    for (int k = 0; k < g.node_size(); ++k)
        if (indeg[k] == 0) ready.push_back(k);
    int seen = 0;
    while (!ready.empty()) {
        int v = ready.back();
        ready.pop_back();
        ++seen;
        for (int w : users[v])
            if (--indeg[w] == 0) ready.push_back(w);
    }
    if (seen != g.node_size())
        for (int k = 0; k < g.node_size(); ++k)
            if (indeg[k] > 0) throw UserError(node_label(file, g.node(k), k), "the graph has a cycle through this node");
}

}  // namespace

void parse_dim_binding(const std::string& text, std::map<std::string, int64_t>& dims) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) throw UserError("--dim " + text, "expected NAME=VALUE");
    const std::string v = text.substr(eq + 1);
    size_t pos = 0;
    long long x = 0;
    try { x = std::stoll(v, &pos); } catch (...) { pos = std::string::npos; }
    if (pos != v.size() || x < 1) throw UserError("--dim " + text, "value must be a positive integer");
    dims[text.substr(0, eq)] = x;
}

ImportResult import_onnx(const std::string& path, const ImportOptions& opt) {
    return import_onnx_model(load_model(path), path, opt);
}

ImportResult import_onnx_bytes(const std::string& bytes, const std::string& name, const ImportOptions& opt) {
    return import_onnx_model(parse_model(bytes, name), name, opt);
}

namespace {
ImportResult import_bound(onnx::ModelProto model, const std::string& path, const ImportOptions& opt);
}

ImportResult import_onnx_model(onnx::ModelProto model, const std::string& path, const ImportOptions& opt) {
    if (opt.input_files.empty()) return import_bound(std::move(model), path, opt);
    onnx::ModelProto with_values = model;
    bind_input_data(with_values, opt.input_files, path, true);
    try {
        return import_bound(std::move(with_values), path, opt);
    } catch (const UserError& e) {
        // a shape function that mishandles a value it now knows (ONNX 1.12's STFT with a known
        // frame step): the samples' dims alone, the values left to run time
        if (std::string(e.what()).find("ONNX shape inference failed") == std::string::npos) throw;
    }
    bind_input_data(model, opt.input_files, path, false);
    ImportResult r = import_bound(std::move(model), path, opt);
    r.warnings.push_back(path + ": --inputs: ONNX shape inference rejects the samples' values; their dims only are used");
    return r;
}

namespace {
ImportResult import_bound(onnx::ModelProto model, const std::string& path, const ImportOptions& opt) {
    const std::string file = path;

    int64_t opset = 0;
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (opset == 0 && model.opset_import_size() == 0) opset = 1;
    {
        const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
        auto it = ranges.find("");
        if (it != ranges.end() && opset > it->second.second)
            throw UserError(file, "opset " + std::to_string(opset) + " is newer than this build's ONNX knows (max " +
                                      std::to_string(it->second.second) + ")");
    }
    if (opt.batch && *opt.batch < 1) throw UserError(file + ": --batch", "must be >= 1");
    bind_inputs(model, opt, file);
    check_structure(model.graph(), file);

    ImportResult result{OpGraph("", file, {}, {}), {}, 0};
    result.folded_nodes = fold_constants(model, opset, file, result.warnings);
    const onnx::GraphProto& g = model.graph();

    // --- tensors -------------------------------------------------------------------------
    std::vector<Tensor> tensors;
    std::unordered_map<std::string, int32_t> index;
    auto add_tensor = [&](Tensor t) -> int32_t {
        auto it = index.find(t.name);
        if (it != index.end()) return it->second;
        index[t.name] = static_cast<int32_t>(tensors.size());
        tensors.push_back(std::move(t));
        return static_cast<int32_t>(tensors.size() - 1);
    };
    std::set<std::string> seen_inits;
    for (const auto& t : g.initializer()) {
        if (!seen_inits.insert(t.name()).second)
            throw UserError(file + ": initializer '" + t.name() + "'", "duplicate initializer name");
        if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
            for (const auto& kv : t.external_data())
                if (kv.key() == "location") {
                    const fs::path loc(kv.value());
                    bool escapes = loc.is_absolute() || loc.empty();
                    for (const auto& part : loc) escapes |= part == "..";
                    if (escapes)
                        throw UserError(file + ": initializer '" + t.name() + "'",
                                        "external data location '" + kv.value() +
                                            "' must be a relative path inside the model's folder");
                }
        Tensor x;
        x.name = t.name();
        x.onnx_dtype = t.data_type();
        x.elem_bytes = dtype_bytes(t.data_type());
        int64_t n = 1;
        for (auto d : t.dims()) {
            if (d < 0) throw UserError(file + ": initializer '" + t.name() + "'", "negative dim");
            x.shape.push_back(d);
            if (d > 0 && n > kMaxTensorElems / d)
                throw UserError(file + ": initializer '" + t.name() + "'", "claims more than 2^36 elements (" + shape_text(t.dims()) +
                                                                             "), beyond what archsim accepts");
            n *= d;
        }
        x.role = (is_float_type(t.data_type()) && n > 1) ? TensorRole::Weight : TensorRole::Constant;
        x.causal_mask = is_causal_mask(t);
        add_tensor(std::move(x));
    }
    std::unordered_map<std::string, const onnx::TypeProto*> types;
    bool container_warned = false;
    for (const auto& v : g.input()) types[v.name()] = &v.type();
    for (const auto& v : g.value_info()) types[v.name()] = &v.type();
    for (const auto& v : g.output()) types[v.name()] = &v.type();
    std::unordered_map<std::string, const onnx::NodeProto*> constructs;  // sequences gathered by SequenceConstruct
    for (const auto& n : g.node())
        if (n.op_type() == "SequenceConstruct" && n.output_size() == 1) constructs[n.output(0)] = &n;
    auto activation = [&](const std::string& name, TensorRole role, const std::string& context) -> int32_t {
        auto it = index.find(name);
        if (it != index.end()) return it->second;
        auto ty = types.find(name);
        if (ty == types.end())
            throw UserError(context, "tensor '" + name + "' has no inferred type or shape");
        // A sequence gathered from known tensors (sequences.h) is costed as all their elements,
        // flattened; other optionals and sequences by their element tensor (one element).
        if (auto sc = constructs.find(name); sc != constructs.end() && ty->second->has_sequence_type()) {
            Tensor x;
            x.name = name;
            x.role = role;
            int64_t n = 0;
            bool known = true;
            for (const auto& e : sc->second->input()) {
                auto at = index.find(e);
                if (at == index.end()) { known = false; break; }
                x.onnx_dtype = tensors[static_cast<size_t>(at->second)].onnx_dtype;
                n += tensors[static_cast<size_t>(at->second)].elems();
            }
            if (known && n > 0) {
                x.elem_bytes = dtype_bytes(x.onnx_dtype);
                x.shape = {n};
                return add_tensor(std::move(x));
            }
        }
        const onnx::TypeProto* tp = ty->second;
        bool container = false;
        for (int depth = 0; depth < 4 && !tp->has_tensor_type(); ++depth) {
            if (tp->has_optional_type()) tp = &tp->optional_type().elem_type();
            else if (tp->has_sequence_type()) tp = &tp->sequence_type().elem_type();
            else break;
            container = true;
        }
        const onnx::TypeProto& type = *tp;
        if (!type.has_tensor_type())
            throw UserError(context, "value '" + name + "' is not a tensor, optional or sequence of tensors (map types are not modeled)");
        if (container && !container_warned) {
            container_warned = true;
            result.warnings.push_back(file + ": optional/sequence values are costed as one element tensor (their length is not static)");
        }
        if (!type.tensor_type().has_shape())
            throw UserError(context, "tensor '" + name + "' has unknown rank after shape inference");
        Tensor x;
        x.name = name;
        x.role = role;
        x.onnx_dtype = type.tensor_type().elem_type();
        x.elem_bytes = dtype_bytes(x.onnx_dtype);
        int64_t n = 1;
        for (const auto& d : type.tensor_type().shape().dim()) {
            if (!d.has_dim_value() || d.dim_value() < 0) {
                std::string dn = d.has_dim_param() ? "'" + d.dim_param() + "'" : "?";
                throw UserError(context, "tensor '" + name + "' has unknown dim " + dn + " in shape" +
                                             (d.has_dim_param() ? " (bind it with --dim " + d.dim_param() + "=N)" : ""));
            }
            // a data input (floating point) with an empty dim holds nothing to compute on: the run
            // would "simulate" 0 MACs in 0 s. Integer inputs may be empty lists (axes, indices).
            if (d.dim_value() == 0 && role == TensorRole::Input && is_float_type(x.onnx_dtype))
                throw UserError(context, "tensor '" + name + "' has a zero-sized dim " + std::to_string(x.shape.size()) +
                                             ": a model input must hold data");
            if (d.dim_value() > 0 && n > kMaxTensorElems / d.dim_value())
                throw UserError(context, "tensor '" + name + "' claims more than 2^36 elements, beyond what archsim accepts");
            n *= d.dim_value();
            x.shape.push_back(d.dim_value());
        }
        return add_tensor(std::move(x));
    };
    for (const auto& v : g.input())
        if (!index.count(v.name())) activation(v.name(), TensorRole::Input, file + ": input '" + v.name() + "'");

    // --- operators -----------------------------------------------------------------------
    std::vector<Operator> ops;
    std::set<std::string> node_names;
    for (int k = 0; k < g.node_size(); ++k) {
        const auto& n = g.node(k);
        const std::string where = node_label(file, n, k);
        Operator op;
        op.name = n.name().empty() ? n.op_type() + "_" + std::to_string(k) : n.name();
        if (!node_names.insert(op.name).second) op.name += "#" + std::to_string(k);
        op.op_type = n.op_type();
        op.domain = n.domain() == "ai.onnx" ? "" : n.domain();
        op.opset = opset;
        for (const auto& o : model.opset_import())
            if (o.domain() == op.domain && !op.domain.empty()) op.opset = o.version();
        for (const auto& name : n.input()) {
            if (name.empty()) { op.inputs.push_back(-1); continue; }
            if (!index.count(name) && !types.count(name))
                throw UserError(where, "input '" + name + "' is not produced by any node, graph input or initializer");
            op.inputs.push_back(activation(name, TensorRole::Activation, where));
        }
        const OpHandler* h = find_op_handler(op.domain, op.op_type);
        const bool known_schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(op.opset), n.domain()) != nullptr;
        for (const auto& name : n.output()) {
            if (name.empty()) continue;
            if (!h && !types.count(name)) {
                // unsupported op with no schema: its outputs cannot be shaped
                if (!opt.allow_unsupported || !known_schema)
                    throw UserError(where, "unsupported operator (domain '" + (op.domain.empty() ? std::string("ai.onnx") : op.domain) +
                                               "', opset " + std::to_string(op.opset) + ")");
            }
            op.outputs.push_back(activation(name, TensorRole::Activation, where));
        }
        NodeContext ctx;
        ctx.node = &n;
        ctx.opset = op.opset;
        ctx.where = where;
        for (auto t : op.inputs) ctx.in.push_back(t >= 0 ? &tensors[t] : nullptr);
        for (auto t : op.outputs) ctx.out.push_back(&tensors[t]);
        ctx.in_ids = op.inputs;
        ctx.out_ids = op.outputs;
        if (n.op_type() == "Constant" && !op.outputs.empty())  // a mask too large to fold into an initializer
            for (const auto& a : n.attribute())
                if (a.name() == "value" && a.has_t()) tensors[static_cast<size_t>(op.outputs[0])].causal_mask = is_causal_mask(a.t());
        if (h) {
            op.cost = (*h)(ctx);
        } else if (opt.allow_unsupported) {
            op.cost.cls = OpClass::Unsupported;
            result.warnings.push_back(where + ": unsupported operator, costed as zero (--allow-unsupported)");
        } else if (op.domain.empty() && (op.op_type == "Loop" || op.op_type == "Scan")) {
            // left by control_flow.cpp: what it repeats is decided at run time
            throw UserError(where, std::string(op.op_type == "Loop" ? "trip count" : "sequence length") +
                                       " not known at import (computed at run time; --inputs gives the model's inputs); "
                                       "--allow-unsupported costs it as zero");
        } else {
            throw UserError(where, "unsupported operator (domain '" + (op.domain.empty() ? std::string("ai.onnx") : op.domain) +
                                       "', opset " + std::to_string(op.opset) + "); --allow-unsupported costs it as zero");
        }
        ops.push_back(std::move(op));
    }
    for (const auto& o : g.output()) {
        if (!index.count(o.name())) activation(o.name(), TensorRole::Activation, file + ": output '" + o.name() + "'");
        tensors[static_cast<size_t>(index.at(o.name()))].model_output = true;
    }

    std::string model_name = workload_name(path);
    if (!g.name().empty() && model_name.empty()) model_name = g.name();
    if (ops.empty()) throw UserError(file, "the graph has no operators: nothing to simulate");
    result.graph = OpGraph(model_name, file, std::move(tensors), std::move(ops));
    return result;
}

}  // namespace

}  // namespace archsim
