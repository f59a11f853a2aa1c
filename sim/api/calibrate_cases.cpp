#include "sim/api/calibrate_parts.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "arch/cpu/cpu_config.h"
#include "sim/api/process_pool.h"
#include "sim/base/error.h"

namespace archsim {

namespace fs = std::filesystem;

namespace {

int64_t round_to(double v, int64_t q) { return std::max<int64_t>(q, static_cast<int64_t>(std::llround(v / q)) * q); }

}  // namespace

std::vector<Case> make_cases(const CpuConfig& cfg, const std::string& scenario, bool quick) {
    const double l1 = double(cfg.l1.bytes()), l2 = double(cfg.l2.bytes()), l3 = double(cfg.l3.bytes());
    struct Level { const char* name; double target; };
    const Level levels[] = {{"l1_fit", 0.5 * l1}, {"l2_fit", 0.5 * l2}, {"l3_fit", l3 / 3}, {"dram_spill", 4 * l3}};
    std::vector<Case> cases;
    for (const auto& lv : levels) {
        if (scenario != "all" && scenario != lv.name) continue;
        auto mm = [&](int64_t m, int64_t n, int64_t k) {
            Case c;
            c.scenario = lv.name;
            c.kind = "matmul";
            c.m = m, c.n = n, c.k = k;
            cases.push_back(c);
        };
        auto conv = [&](int64_t b, int64_t ch, int64_t hw, int64_t oc, int64_t kk) {
            Case c;
            c.scenario = lv.name;
            c.kind = "conv";
            c.b = b, c.c = ch, c.h = hw, c.w = hw, c.oc = oc, c.kh = kk, c.kw = kk;
            cases.push_back(c);
        };
        const bool spill = std::string(lv.name) == "dram_spill";
        // compute-bound: square (or, beyond the L3, 256-row) matmul of ~target bytes
        if (!spill) {
            const int64_t sq = round_to(std::sqrt(lv.target / 12.0), 8);
            mm(sq, sq, sq);
            if (!quick) mm(round_to(sq * 0.5, 8), round_to(sq * 2, 8), sq);
        } else {
            const int64_t nk = round_to(std::sqrt(lv.target / 4.0), 64);
            mm(256, nk, nk);
        }
        // memory-bound: weights of ~target bytes, 1 and 8 rows
        const int64_t nk = round_to(std::sqrt(lv.target / 4.0), 16);
        mm(1, nk, nk);
        if (!quick) mm(8, nk, nk);
        // a 3x3 convolution with 64 channels whose input + output are ~target bytes
        if (std::string(lv.name) != "l1_fit") {
            const double pixels = lv.target / (2 * 64 * 4.0);
            const int64_t hw = std::max<int64_t>(4, std::llround(std::sqrt(std::min(pixels, 56.0 * 56.0))));
            const int64_t batch = std::max<int64_t>(1, std::llround(pixels / double(hw * hw)));
            conv(batch, 64, hw, 64, 3);
            if (!quick) conv(batch, 256, std::max<int64_t>(4, hw / 2), 64, 1);
        }
    }
    return cases;
}

void write_case_model(const Case& c, const std::string& path) {
    onnx::ModelProto model;
    model.set_ir_version(7);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    auto* g = model.mutable_graph();
    g->set_name(c.id());
    auto value = [](onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
        v->set_name(name);
        auto* t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(onnx::TensorProto::FLOAT);
        for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    };
    std::vector<int64_t> x_dims, w_dims, y_dims;
    if (c.kind == "matmul") {
        x_dims = {c.m, c.k}, w_dims = {c.k, c.n}, y_dims = {c.m, c.n};
    } else {
        x_dims = {c.b, c.c, c.h, c.w}, w_dims = {c.oc, c.c, c.kh, c.kw}, y_dims = {c.b, c.oc, c.h, c.w};
    }
    value(g->add_input(), "X", x_dims);
    auto* w = g->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : w_dims) w->add_dims(d);
    for (const char* name : {"warmup", "measured"}) {
        auto* node = g->add_node();
        node->set_name(name);
        node->set_op_type(c.kind == "matmul" ? "MatMul" : "Conv");
        node->add_input("X");
        node->add_input("W");
        node->add_output(std::string("Y_") + name);
        if (c.kind == "conv") {
            auto* pads = node->add_attribute();
            pads->set_name("pads");
            pads->set_type(onnx::AttributeProto::INTS);
            for (int64_t p : {c.kh / 2, c.kw / 2, (c.kh - 1) / 2, (c.kw - 1) / 2}) pads->add_ints(p);
        }
        value(g->add_output(), std::string("Y_") + name, y_dims);
    }
    std::ofstream out(path, std::ios::binary);
    if (!out || !model.SerializeToOstream(&out)) throw UserError(path, "cannot write the case model");
}

double simulate_case(const std::string& self, const std::string& model, const std::string& arch,
                     const std::vector<std::string>& sets, const std::string& dir) {
    fs::create_directories(dir);
    std::vector<std::string> args = {"run", model, "--arch", arch, "--runtime", "none", "--out", dir, "--format", "csv"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    const std::string err = dir + "/stderr.log";
    if (!exited_ok(run_child(self, {args, dir + "/report.csv", err}))) throw UserError(err, "simulating " + model + " failed (see this log)");
    std::ifstream in(dir + "/metrics.json");
    const auto m = nlohmann::json::parse(in);
    for (const auto& op : m["ops"])
        if (op["name"] == "measured") return op["latency_s"].get<double>();
    throw UserError(dir + "/metrics.json", "no operator named measured");
}

}  // namespace archsim
