// The analytical roofline as a machine kind: the lower bound every detailed model is compared with.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "arch/common/machine_base.h"
#include "arch/common/registry.h"
#include "arch/common/run_bytes.h"
#include "arch/power/power_limit.h"
#include "arch/roofline/roofline_config.h"

namespace archsim {

namespace {

/// The roofline (Williams, Waterman and Patterson, CACM 2009), one operator at a time: an
/// operator takes max(compute time, the time of its bytes at each memory level), where compute
/// time is MACs / peak MACs per cycle for contractions and other operations / vector peak for the
/// rest, and each of its tensors crosses each level exactly once (compulsory traffic: perfect
/// reuse inside the level, no fusion across operators). The time beyond compute is recorded as
/// a `memory_bound` stall, so `bound` says whether the operator is compute- or memory-bound.
/// Operators run back to back; nothing overlaps between them. No SystemC module below the
/// dispatcher: the bound needs no contention model.
class RooflineMachine : public MachineBase {
public:
    RooflineMachine(const RooflineConfig& cfg, TraceWriter& trace)
        : MachineBase(trace, cfg.clock_mhz, cfg.static_w, cfg.precision_name, RoutingRules{}), m_cfg(cfg) {
        m_compute = m_op_component = m_rec.compute("compute", "compute", cfg.pj_per_mac.at(cfg.precision), cfg.macs_per_cycle.at(cfg.precision));
        m_vector = m_rec.compute("vector", "vector", cfg.vector_pj_per_op, cfg.vector_ops_per_cycle);
        m_levels.push_back({m_rec.memory("dram", cfg.dram.pj_per_byte), cfg.dram, EventKind::DramRead, EventKind::DramWrite});
        if (cfg.sram.bandwidth_gbps > 0)
            m_levels.push_back({m_rec.memory("sram", cfg.sram.pj_per_byte), cfg.sram, EventKind::SramRead, EventKind::SramWrite});
        m_memory_bound = m_rec.stall_cause("memory_bound", "the operator's bytes at its slowest memory level took longer than its compute");
        if (cfg.tdp_w > 0) enable_power(checked_limit_spec(cfg.static_w, cfg.tdp_w, cfg.clock_mhz));
    }

protected:
    void contraction(const Operator& op, const OpGraph& graph) override {
        bound(op, graph, {{EventKind::Fold, m_compute, static_cast<uint64_t>(op.cost.macs), m_cfg.macs_per_cycle.at(m_cfg.precision)}});
    }
    /// A copy does no arithmetic: only its bytes take time.
    void streaming(const Operator& op, const OpGraph& graph) override {
        const int64_t ops = op.cost.cls == OpClass::DataMovement ? 0 : op.cost.flops;
        bound(op, graph, {{EventKind::Vector, m_vector, static_cast<uint64_t>(ops), m_cfg.vector_ops_per_cycle}});
    }
    /// A fused attention kernel (Q K^T, scale, mask, softmax, P V): its MACs on the MAC units and
    /// its other arithmetic (flops - 2 MACs: the softmax) on the vector unit, the two overlapped
    /// (separate units), and only the bytes crossing the kernel's boundary (Q, K, V, O).
    void attention(const Operator& op, const OpGraph& graph) override {
        bound(op, graph,
              {{EventKind::Fold, m_compute, static_cast<uint64_t>(op.cost.macs), m_cfg.macs_per_cycle.at(m_cfg.precision)},
               {EventKind::Vector, m_vector, static_cast<uint64_t>(op.cost.non_mac_flops()), m_cfg.vector_ops_per_cycle}});
    }

private:
    struct Level {
        uint16_t component;
        MemoryLevel level;
        EventKind read, write;
    };

    /// Arithmetic of one operator on one unit: `ops` at `peak` per cycle.
    struct Work {
        EventKind kind;
        uint16_t unit;
        uint64_t ops;
        double peak;
    };

    /// Runs one operator: each `work` on its unit (units overlap), its tensors through every level;
    /// the operator takes the longest of them. The time beyond the slowest unit is a memory_bound stall.
    void bound(const Operator& op, const OpGraph& graph, const std::vector<Work>& work) {
        uint64_t in_bytes = 0, out_bytes = 0;
        for (int32_t t : op.inputs)
            if (t >= 0) in_bytes += static_cast<uint64_t>(read_bytes(op, t, graph.tensors()[static_cast<size_t>(t)], m_cfg.precision));
        for (int32_t t : op.outputs) out_bytes += static_cast<uint64_t>(run_bytes(graph.tensors()[static_cast<size_t>(t)], m_cfg.precision));
        std::vector<uint64_t> busy;  // each unit's cycles
        for (const Work& w : work) busy.push_back(static_cast<uint64_t>(std::ceil(static_cast<double>(w.ops) / w.peak)));
        const uint64_t compute = *std::max_element(busy.begin(), busy.end());
        uint64_t cycles = compute;
        for (const Level& l : m_levels) {  // bytes per cycle = GB/s x 1e9 / Hz
            const double bytes_per_cycle = l.level.bandwidth_gbps * 1e3 / m_cfg.clock_mhz;
            cycles = std::max(cycles, static_cast<uint64_t>(std::ceil(static_cast<double>(in_bytes + out_bytes) / bytes_per_cycle)));
        }
        const uint64_t start = m_clock.now_cycle();
        const Span span = m_clock.span(start, cycles);
        for (size_t i = 0; i < work.size(); ++i) {
            if (work[i].ops == 0 && work.size() > 1) continue;  // a unit with nothing to do in a kernel of several
            m_rec.emit(work[i].kind, work[i].unit, m_clock.span(start, busy[i]), {0, work[i].ops, busy[i]});
        }
        if (cycles > compute)
            m_rec.emit(EventKind::Stall, work.front().unit, m_clock.span(start + compute, cycles - compute), {0, 0, cycles - compute}, 0,
                       m_memory_bound);
        for (const Level& l : m_levels) {
            if (in_bytes) m_rec.emit(l.read, l.component, span, {in_bytes});
            if (out_bytes) m_rec.emit(l.write, l.component, span, {out_bytes});
        }
        m_clock.wait_until(start + cycles);
    }

    RooflineConfig m_cfg;
    uint16_t m_compute = 0, m_vector = 0;
    StallCauseId m_memory_bound = 0;
    std::vector<Level> m_levels;
};

std::unique_ptr<Machine> create_roofline(const ParamSet& p, TraceWriter& trace) {
    return std::make_unique<RooflineMachine>(make_roofline_config(p), trace);
}

}  // namespace

ARCHSIM_REGISTER_MACHINE(machine_kind<&roofline_params, &make_roofline_config>(
    "roofline", "Analytical roofline: peak compute per precision and bandwidth per memory level, operator by operator "
                "(a lower bound to compare the detailed models with)",
    &create_roofline, /*fused_attention=*/true));

}  // namespace archsim
