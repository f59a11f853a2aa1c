// The CPU's memory-bound kernels: each core streams its share through its caches in chunks
// (CpuMachine::stream_kernel; the chunks in stream_plan.h).
#include "arch/cpu/cpu_machine_impl.h"

namespace archsim {

void CpuMachine::stream_kernel(const Operator& op, const OpGraph& graph, const std::vector<int32_t>& inputs, bool write_outputs) {
    const Tensor* out = !op.outputs.empty() && op.outputs[0] >= 0 ? &graph.tensors()[static_cast<size_t>(op.outputs[0])] : nullptr;
    std::vector<StreamPlan::Stream> streams;
    for (const int32_t t : inputs) {
        if (t < 0) continue;
        const Tensor& in = graph.tensors()[static_cast<size_t>(t)];
        const int64_t bytes = read_bytes(op, t, in, m_cfg.precision);
        if (bytes > 0) streams.push_back({base(t, graph), static_cast<uint64_t>(bytes), false, out ? broadcast_period(in, *out) : 0});
    }
    if (write_outputs)
        for (int32_t t : op.outputs) {
            const int64_t bytes = t >= 0 ? bytes_of(graph.tensors()[static_cast<size_t>(t)]) : 0;
            if (bytes > 0) streams.push_back({base(t, graph), static_cast<uint64_t>(bytes), true, 0});
        }
    const bool direct = op.cost.cls == OpClass::Contraction;
    const uint64_t total_macs = direct ? static_cast<uint64_t>(op.cost.macs) : 0;
    const uint64_t total_ops = op.cost.cls == OpClass::DataMovement ? 0 : (direct ? 2 * total_macs : static_cast<uint64_t>(op.cost.flops));
    // an FMA lane does 2 FLOPs; a scalar reference kernel takes core.reference_cycles_per_op each
    const double flops_per_cycle = op.path == KernelPath::Reference && m_cfg.reference_cycles_per_op > 0
                                       ? 1.0 / m_cfg.reference_cycles_per_op
                                       : 2.0 * m_cfg.simd_macs.fp32 * m_cfg.eff_vector;
    const uint64_t cores = static_cast<uint64_t>(m_cfg.cores);
    uint64_t largest = 0;
    for (const auto& s : streams) largest = std::max(largest, (s.bytes + cores - 1) / cores);
    const uint64_t chunks_per_core = std::max<uint64_t>(1, (largest + kVectorChunkBytes - 1) / kVectorChunkBytes);
    const uint64_t blocks = chunks_per_core * cores;
    const StreamPlan plan(std::move(streams), out ? static_cast<uint64_t>(std::max<int64_t>(0, out->elems())) : 0, blocks,
                          static_cast<uint64_t>(m_cfg.line_bytes));
    std::vector<std::vector<int64_t>> queue(static_cast<size_t>(cores));
    for (uint64_t c = 0; c < cores; ++c)
        for (uint64_t q = 0; q < chunks_per_core; ++q) queue[c].push_back(static_cast<int64_t>(c * chunks_per_core + q));
    std::vector<size_t> next(static_cast<size_t>(cores), 0);
    // each core's chunks are units of one loop (unit_replay.h) when chunk q + 1 touches chunk
    // q's bytes moved by one chunk in every stream
    const bool even = replay_units() && !m_units->in_loop() && chunks_per_core >= 4 && plan.even();
    if (even)
        m_units->begin_loop(plan.ranges(), std::vector<int64_t>(cores, static_cast<int64_t>(chunks_per_core)), sample_in_force());
    for (int64_t c; (c = m_sched->next_core(next, queue)) >= 0;) {
        const uint64_t blk = static_cast<uint64_t>(queue[static_cast<size_t>(c)][next[static_cast<size_t>(c)]++]);
        CpuCore& cc = *m_cores[static_cast<size_t>(c)];
        if (even) m_units->unit_start(c, static_cast<int64_t>(next[static_cast<size_t>(c)]) - 1);
        if (!m_units->block(c)) {
            plan.touch(cc, blk);
            m_units->block_done(c);
        }
        const uint64_t ops = total_ops * (blk + 1) / blocks - total_ops * blk / blocks;
        const uint64_t macs = total_macs * (blk + 1) / blocks - total_macs * blk / blocks;
        m_sched->finish_block(c, 0, std::ceil(static_cast<double>(ops) / flops_per_cycle) * m_cfg.cycle_ps(),
                     macs, ops, 0);
    }
    if (even) m_units->end_loop();
    m_sched->barrier();
}

}  // namespace archsim
