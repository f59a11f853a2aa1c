#include "workloads/graph_report.h"

#include <nlohmann/json.hpp>

namespace archsim {

std::string graph_report_json(const ImportResult& r) {
    const OpGraph& g = r.graph;
    int64_t bytes = 0;
    for (const auto& o : g.ops()) bytes += o.cost.bytes_read + o.cost.bytes_written;
    nlohmann::ordered_json j;
    j["model"] = g.model_name();
    j["source"] = g.source();
    j["total"] = {{"ops", g.ops().size()},      {"macs", g.total_macs()}, {"flops", g.total_flops()},
                  {"params", g.total_params()}, {"bytes", bytes},         {"folded_nodes", r.folded_nodes},
                  {"edges", g.edge_count()}};
    j["ops"] = nlohmann::json::array();
    for (int32_t i : g.topo_order()) {
        const auto& o = g.ops()[static_cast<size_t>(i)];
        nlohmann::ordered_json x;
        x["name"] = o.name;
        x["op_type"] = o.op_type;
        x["class"] = to_string(o.cost.cls);
        x["macs"] = o.cost.macs;
        x["flops"] = o.cost.flops;
        x["params"] = o.cost.params;
        x["bytes_read"] = o.cost.bytes_read;
        x["bytes_written"] = o.cost.bytes_written;
        x["arithmetic_intensity"] = o.cost.arithmetic_intensity();
        x["inputs"] = nlohmann::json::array();
        for (auto t : o.inputs)
            if (t >= 0) x["inputs"].push_back(g.tensors()[static_cast<size_t>(t)].shape);
        x["outputs"] = nlohmann::json::array();
        for (auto t : o.outputs) x["outputs"].push_back(g.tensors()[static_cast<size_t>(t)].shape);
        if (!o.cost.gemms.empty()) {
            x["gemm"] = nlohmann::json::array();
            for (const auto& v : o.cost.gemms)
                x["gemm"].push_back({{"repeat", v.repeat}, {"batch", v.batch}, {"groups", v.groups}, {"m", v.m}, {"n", v.n}, {"k", v.k}});
        }
        j["ops"].push_back(std::move(x));
    }
    return j.dump(2) + "\n";
}

}  // namespace archsim
