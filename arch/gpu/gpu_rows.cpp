// A GPU's layer normalization kernel: rows normalized by CTAs, each row read twice.
#include "arch/gpu/gpu_machine_impl.h"

namespace archsim {

namespace {
/// Warps per CTA of a layer normalization kernel, one CTA per row: PyTorch's
/// vectorized_layer_norm_kernel as Nsight Compute sees it on an H100 (grid = rows, block 32 x 4;
/// tools/device/measured/h100_sxm5_80gb/ncu.csv).
constexpr int64_t kLayerNormWarps = 4;
/// The `local` of a group of rows' tiles (group g: kRowGroup0 + g), apart from a tensor's whole-tile ids.
constexpr uint64_t kRowGroup0 = 0x4C4E0000;
}  // namespace

int64_t layer_norm_row(const Operator& op, const OpGraph& graph) {
    if (op.op_type != "LayerNormalization" && op.op_type != "LayerNorm" && op.op_type != "Residual+LayerNorm") return 0;
    if (op.outputs.empty() || op.outputs[0] < 0) return 0;
    const auto& shape = graph.tensors()[static_cast<size_t>(op.outputs[0])].shape;
    return shape.empty() ? 0 : std::max<int64_t>(0, shape.back());
}

double GpuMachine::layer_norm_loads(const Operator& op, const OpGraph& graph, int64_t row) {
    const auto& ts = graph.tensors();
    const int64_t out_elems = ts[static_cast<size_t>(op.outputs[0])].elems();
    const int64_t rows = std::max<int64_t>(1, out_elems / std::max<int64_t>(1, row));
    const int64_t ctas_per_sm = std::max<int64_t>(1, std::min(m_cfg.max_ctas_per_sm, m_cfg.max_warps_per_sm / kLayerNormWarps));
    const int64_t in_flight = m_cfg.sms * ctas_per_sm;
    double done = sim_now_ps();
    // the rows (the input, and a fused residual) and their bytes: full-size inputs; the rest
    // (scale, bias) read once
    std::vector<std::pair<int32_t, int64_t>> row_inputs;
    for (int32_t t : op.inputs) {
        if (t < 0) continue;
        if (ts[static_cast<size_t>(t)].elems() >= out_elems) row_inputs.emplace_back(t, read_bytes(op, t, ts[static_cast<size_t>(t)], m_cfg.precision));
        else done = std::max(done, read_whole(op, graph, t));
    }
    for (int64_t first = 0; first < rows; first += in_flight) {
        const int64_t n = std::min(in_flight, rows - first);
        const double lo = static_cast<double>(first) / static_cast<double>(rows);
        const double hi = static_cast<double>(first + n) / static_cast<double>(rows);
        const uint64_t group = kRowGroup0 + static_cast<uint64_t>(first / in_flight);
        for (int pass = 0; pass < 2; ++pass)
            for (const auto& [t, all] : row_inputs) {
                const int64_t bytes = all / rows * n + (first + n == rows ? all % rows : 0);
                done = std::max(done, spread(TileId{t, group}, t, bytes, false, 0, lo, hi));
            }
    }
    return done;
}

}  // namespace archsim
