#include "arch/tpu/tpu_machine.h"

#include <systemc>
#include <tlm>

#include <algorithm>
#include <cmath>
#include <optional>

#include "arch/energy/horowitz.h"
#include "arch/common/cycle_clock.h"
#include "arch/common/run_bytes.h"
#include "arch/memory/dma.h"
#include "arch/memory/dram.h"
#include "arch/tpu/systolic_mapper.h"
#include "arch/memory/tile_buffer.h"
#include "traces/trace_writer.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

namespace {

/// The TPU-style machine: executes contractions fold by fold on the systolic array with the
/// operands double-buffered from DRAM (stalling when DRAM is late), and everything else on the
/// vector unit in buffer-sized chunks. Time advances in cycles of clock_mhz.
class TpuMachine : public Machine {
public:
    TpuMachine(const TpuConfig& cfg, TraceWriter& trace)
        : m_cfg(cfg), m_clock(cfg.cycle_ps()), m_trace(trace),
          m_buffers{TileBuffer(cfg.ifmap_kib * 512), TileBuffer(cfg.filter_kib * 512), TileBuffer(cfg.ofmap_kib * 512)} {
        const double hz = cfg.clock_mhz * 1e6;
        m_array = trace.add_component({"array", "compute", cfg.mac_pj(), 0, 0, double(cfg.rows * cfg.cols), hz});
        m_vector = trace.add_component({"vector", "vector", cfg.vector_op_pj, 0, 0,
                                        double(cfg.vector_lanes) * cfg.vector_ops_per_lane, hz});
        m_dram_comp = trace.add_component({"dram", "dram", 0, cfg.dram.pj_per_byte, cfg.dram.pj_per_byte, 0, hz});
        const char* names[3] = {"sram.ifmap", "sram.filter", "sram.ofmap"};
        const int64_t kib[3] = {cfg.ifmap_kib, cfg.filter_kib, cfg.ofmap_kib};
        for (int b = 0; b < 3; ++b) {
            const double pj = cfg.sram_pj_per_byte >= 0 ? cfg.sram_pj_per_byte : horowitz::sram_pj_per_byte(kib[b] * 1024);
            m_sram_comp[b] = trace.add_component({names[b], names[b], 0, pj, pj, 0, hz});
        }
        m_dram = std::make_unique<Dram>("dram", cfg.dram, trace, m_dram_comp, m_current_op);
        m_dma = std::make_unique<Dma>("dma", cfg.dram.transaction_bytes);
        m_dma->socket.bind(m_dram->socket);
    }

    double clock_hz() const override { return m_cfg.clock_mhz * 1e6; }
    double static_power_w() const override { return m_cfg.static_w; }
    std::string precision() const override { return m_cfg.precision_name; }
    uint16_t op_component() const override { return m_array; }

    void execute(uint32_t op_index, const Operator& op, const OpGraph& graph) override {
        m_current_op = op_index;
        for (auto& b : m_buffers) b.clear();
        switch (op.cost.cls) {
            case OpClass::ShapeOnly:
            case OpClass::Unsupported:
                return;  // a view, or not modeled: no time, no traffic (listed in the report)
            case OpClass::Contraction:
                run_pipeline(op, graph, /*contraction=*/true);
                return;
            default:
                run_pipeline(op, graph, /*contraction=*/false);
                return;
        }
    }

private:
    struct Pending {
        FoldWork w;
        uint64_t ready_cycle = 0;
        bool vector = false;
    };


    /// Issues the DRAM reads of the tiles `w` misses in the buffers, now; returns the cycle at
    /// which all its operands are on chip. DMA fills count as buffer writes.
    uint64_t issue_loads(FoldWork& w) {
        double ready_ps = static_cast<double>(sc_core::sc_time_stamp().value());
        for (int l = 0; l < w.n_loads; ++l) {
            TileLoad& t = w.loads[l];
            TileBuffer& buf = m_buffers[static_cast<int>(t.buffer)];
            if (t.cacheable && buf.hit(t.key)) continue;
            if (t.dram_bytes <= 0) continue;
            ready_ps = std::max(ready_ps, m_dma->transfer(t.dram_bytes, /*write=*/false));
            w.sram_write_bytes[static_cast<int>(t.buffer)] += t.dram_bytes;
            if (t.cacheable) buf.insert(t.key, t.dram_bytes);
        }
        return m_clock.cycle_at_or_after(ready_ps);
    }

    void emit_span(EventKind kind, uint16_t comp, uint64_t start, uint64_t cycles, uint64_t ops, uint64_t bytes,
                   uint32_t seq, StallCause cause = StallCause::None) {
        const uint64_t t = m_clock.to_ps(start);
        const bool timed = kind == EventKind::Fold || kind == EventKind::Vector || kind == EventKind::Stall;
        m_trace.emit(make_event(kind, comp, m_current_op, t, m_clock.to_ps(start + cycles) - t, bytes, ops,
                                timed ? cycles : 0, seq, cause));
    }

    /// Runs one fold (or vector chunk) whose loads are already issued; issues `next`'s loads
    /// when this one starts (double buffering) and this one's DRAM writes when it ends.
    void step(Pending& cur, Pending* next, bool last_of_contraction) {
        const uint64_t start = std::max(m_prev_end, cur.ready_cycle);
        if (cur.ready_cycle > m_prev_end)
            emit_span(EventKind::Stall, cur.vector ? m_vector : m_array, m_prev_end, cur.ready_cycle - m_prev_end, 0, 0,
                      m_seq, StallCause::OperandLoad);
        m_clock.wait_until(start);
        if (next) next->ready_cycle = issue_loads(next->w);
        uint64_t cycles = static_cast<uint64_t>(cur.w.cycles);
        // SCALE-Sim v2 reports a layer as the index of its last cycle (folds x per-fold - 1);
        // the last fold of a contraction is one cycle short so per-layer totals match exactly.
        if (last_of_contraction && cycles > 0) cycles -= 1;
        emit_span(cur.vector ? EventKind::Vector : EventKind::Fold, cur.vector ? m_vector : m_array, start, cycles,
                  static_cast<uint64_t>(cur.w.macs), 0, m_seq);
        cur.w.sram_read_bytes[2] += cur.w.dram_write_bytes;  // the DMA drains outputs from the ofmap buffer
        for (int b = 0; b < 3; ++b) {
            if (cur.w.sram_read_bytes[b] > 0)
                emit_span(EventKind::SramRead, m_sram_comp[b], start, cycles, 0, cur.w.sram_read_bytes[b], m_seq);
            if (cur.w.sram_write_bytes[b] > 0)
                emit_span(EventKind::SramWrite, m_sram_comp[b], start, cycles, 0, cur.w.sram_write_bytes[b], m_seq);
        }
        ++m_seq;
        const uint64_t end = start + cycles;
        m_clock.wait_until(end);
        if (cur.w.dram_write_bytes > 0) {
            const double done_ps = m_dma->transfer(cur.w.dram_write_bytes, /*write=*/true);
            m_write_done = std::max(m_write_done, m_clock.cycle_at_or_after(done_ps));
        }
        m_prev_end = end;
    }

    void run_pipeline(const Operator& op, const OpGraph& graph, bool contraction) {
        const uint64_t op_start = m_clock.now_cycle();
        m_clock.wait_until(op_start);
        m_prev_end = op_start;
        m_write_done = op_start;
        m_seq = 0;
        std::optional<Pending> cur;
        auto push = [&](const FoldWork& w, bool vector) {
            Pending next{w, 0, vector};
            if (!cur) {
                next.ready_cycle = issue_loads(next.w);
                cur = next;
                return;
            }
            step(*cur, &next, false);
            cur = next;
        };
        if (contraction) {
            int gi = 0;
            for (const auto& g : op.cost.gemms) {
                if (g.m > 0 && g.n > 0 && g.k > 0) for_each_fold(g, gi, m_cfg, [&](const FoldWork& w) { push(w, false); });
                ++gi;
            }
        } else {
            for_each_vector_chunk(op, graph, [&](const FoldWork& w) { push(w, true); });
        }
        if (cur) step(*cur, nullptr, contraction);
        if (m_write_done > m_prev_end)
            emit_span(EventKind::Stall, contraction ? m_array : m_vector, m_prev_end, m_write_done - m_prev_end, 0, 0,
                      m_seq, StallCause::WriteDrain);
        m_clock.wait_until(std::max(m_prev_end, m_write_done));
    }

    /// Non-GEMM operators on the vector unit: inputs are streamed through the ifmap buffer in
    /// chunks of half its size; each chunk costs ceil(ops / (lanes * ops_per_lane)) cycles (a copy
    /// moves one element per lane per cycle) and writes its share of the outputs.
    template <class F>
    void for_each_vector_chunk(const Operator& op, const OpGraph& graph, F&& visit) {
        auto bytes_of = [&](const Tensor& t) { return run_bytes(t, m_cfg.precision); };
        int64_t in_bytes = 0, out_bytes = 0, out_elems = 0;
        for (int32_t t : op.inputs)
            if (t >= 0) in_bytes += bytes_of(graph.tensors()[t]);
        for (int32_t t : op.outputs) {
            out_bytes += bytes_of(graph.tensors()[t]);
            out_elems += graph.tensors()[t].elems();
        }
        const int64_t ops = op.cost.cls == OpClass::DataMovement ? 0 : op.cost.flops;
        const int64_t work = op.cost.cls == OpClass::DataMovement ? out_elems : ops;
        const int64_t cap = std::max<int64_t>(1, m_buffers[0].capacity_bytes());
        const int64_t n = std::max<int64_t>(1, (in_bytes + cap - 1) / cap);
        const double rate = static_cast<double>(m_cfg.vector_lanes) * m_cfg.vector_ops_per_lane;
        auto share = [n](int64_t total, int64_t i) { return total / n + (i < total % n ? 1 : 0); };
        for (int64_t i = 0; i < n; ++i) {
            FoldWork w;
            w.macs = share(ops, i);
            w.cycles = static_cast<int64_t>(std::ceil(static_cast<double>(share(work, i)) / rate));
            w.loads[0] = {static_cast<uint64_t>(i), share(in_bytes, i), Buffer::Ifmap, false};
            w.n_loads = 1;
            w.sram_read_bytes[0] = share(in_bytes, i);
            w.sram_write_bytes[2] = share(out_bytes, i);
            w.dram_write_bytes = share(out_bytes, i);
            visit(w);
        }
    }

    TpuConfig m_cfg;
    CycleClock m_clock;
    TraceWriter& m_trace;
    TileBuffer m_buffers[3];
    uint16_t m_array = 0, m_vector = 0, m_dram_comp = 0, m_sram_comp[3] = {0, 0, 0};
    uint32_t m_current_op = 0;
    std::unique_ptr<Dram> m_dram;
    std::unique_ptr<Dma> m_dma;
    uint64_t m_prev_end = 0, m_write_done = 0;
    uint32_t m_seq = 0;
};

}  // namespace

std::unique_ptr<Machine> create_tpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<TpuMachine>(make_tpu_config(params), trace);
}

}  // namespace archsim
