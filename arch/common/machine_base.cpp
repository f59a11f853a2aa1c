#include "arch/common/machine_base.h"

#include "arch/common/fusion.h"
#include "sim/common/error.h"

namespace archsim {

Route route(const Operator& op, const OpGraph& graph, const RoutingRules& rules) {
    if (!op.cost.attention.empty()) return Route::Attention;
    switch (op.cost.cls) {
        case OpClass::ShapeOnly:
        case OpClass::Unsupported:
            return Route::Skip;
        case OpClass::Contraction: {
            if (rules.thin_grouped_conv_streams && is_thin_grouped_conv(op)) return Route::Streaming;
            if (rules.gemv_max_rows > 0 && !op.cost.gemms.empty()) {
                bool skinny = true;
                for (const auto& g : op.cost.gemms) skinny = skinny && g.m <= rules.gemv_max_rows;
                if (skinny) return Route::Streaming;
            }
            return Route::Contraction;
        }
        default:
            return rules.fuse_elementwise && graph.runtime().empty() && fuses_into_producer(op, graph) ? Route::FusedEpilogue
                                                                                                     : Route::Streaming;
    }
}

std::vector<int32_t> epilogue_side_inputs(const Operator& op) {
    std::vector<int32_t> out;
    for (size_t i = 1; i < op.inputs.size(); ++i) {
        const int32_t t = op.inputs[i];
        if (t >= 0) out.push_back(t);
    }
    return out;
}

Operator epilogue_of(const Operator& kernel) {
    Operator e;
    e.name = kernel.name;
    e.op_type = "epilogue";
    e.cost.cls = OpClass::Elementwise;
    e.cost.flops = kernel.cost.non_mac_flops();
    e.inputs = {-1};
    for (int32_t t : kernel.inputs)
        if (t >= 0 && !kernel.cost.is_gemm_operand(t)) e.inputs.push_back(t);
    return e;
}

void MachineBase::attention(const Operator& op, const OpGraph& graph) {
    // the engine checks MachineKind::fused_attention before simulating; reaching this is a bug
    throw std::logic_error("kernel '" + op.name + "': fused attention on a machine without its cost model");
}

void MachineBase::execute(uint32_t op_index, const Operator& op, const OpGraph& graph) {
    m_rec.set_op(op_index);
    const Route r = route(op, graph, m_rules);
    if (r == Route::Skip) return;
    begin_op(op, graph, r);
    switch (r) {
        case Route::FusedEpilogue: fused_epilogue(op, graph); break;
        case Route::Attention: attention(op, graph); break;
        case Route::Contraction:
            contraction(op, graph);
            if (!graph.runtime().empty() && op.members.size() > 1) fused_epilogue(epilogue_of(op), graph);
            break;
        default: streaming(op, graph); break;
    }
    end_op(op, graph, r);
}

}  // namespace archsim
