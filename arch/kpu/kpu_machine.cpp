#include "arch/kpu/kpu_machine.h"

#include <systemc>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "arch/kpu/kpu_config.h"
#include "arch/kpu/wavefront.h"
#include "arch/common/cycle_clock.h"
#include "arch/common/run_bytes.h"
#include "arch/memory/dma.h"
#include "sim/common/hash.h"
#include "arch/memory/dram.h"
#include "arch/memory/tile_buffer.h"
#include "traces/trace_writer.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

namespace {


/// One wave of work on the fabric: what it computes, what it moves at each level, and what it
/// must fetch from DRAM before it can start.
struct Wave {
    std::vector<FabricBlock> blocks;  ///< one per tile used (empty for PE-path operators)
    int64_t k = 0;                    ///< reduction length of each block
    int64_t compute_cycles = 0;       ///< wavefront cycles, with fill/skew/drain where they fall
    int64_t pe_ops = 0;               ///< PE operations (other operators)
    int64_t mover_bytes_max_tile = 0, streamer_bytes_max_tile = 0;
    int64_t mover_bytes = 0, streamer_bytes = 0;
    int64_t dram_read_bytes = 0, dram_write_bytes = 0;
    int64_t l3_read = 0, l3_write = 0, l2_read = 0, l2_write = 0, l1_read = 0, l1_write = 0;
    uint64_t ready_cycle = 0;
    double prefetch_ready_ps = 0;     ///< when weights prefetched by the previous operator land
    bool contraction = true;
};

/// The KPU: a mesh of tiles of PE arrays executing contractions as pipelined wavefronts (see
/// arch/kpu/wavefront.h for the schedule), and other operators on the PEs (one operation per
/// PE per cycle). Operands flow DRAM -> DMA -> L3 -> block movers -> L2 -> streamers -> L1 ->
/// fabric; the L3 (tiles x l3.kib_per_tile) keeps activations and weight panels across waves
/// and operators with LRU replacement, so a layer whose operands do not fit re-streams them from
/// DRAM and the traffic shows it. A wave's DRAM reads are issued when the previous wave starts
/// (double buffering); a wave lasts as long as the slowest of its wavefront, its block movers and
/// its streamers, and each shortfall is a stall event naming the cause.
class KpuMachine : public Machine {
public:
    KpuMachine(const KpuConfig& cfg, TraceWriter& trace)
        : m_cfg(cfg), m_clock(cfg.cycle_ps()), m_trace(trace), m_l3(cfg.tiles() * cfg.l3_kib_per_tile * 1024),
          m_l2(static_cast<size_t>(cfg.compute_tiles()), TileBuffer(cfg.l2_kib_per_tile * 512)),
          m_hops(mean_mesh_hops(cfg.tile_rows, cfg.tile_cols)) {
        const double hz = cfg.clock_mhz() * 1e6;
        m_fabric = trace.add_component({"fabric", "compute", cfg.mac_pj(), 0, 0, cfg.peak_macs_per_cycle(), hz});
        m_dram_comp = trace.add_component({"dram", "dram", 0, cfg.dram.pj_per_byte, cfg.dram.pj_per_byte, 0, hz});
        m_dma_comp = trace.add_component({"dma", "dma", 0, cfg.dma_pj_per_byte, cfg.dma_pj_per_byte, 0, hz});
        m_l3_comp = trace.add_component({"l3", "l3", 0, cfg.l3_pj_per_byte, cfg.l3_pj_per_byte, 0, hz});
        m_bm_comp = trace.add_component({"block_mover", "block_mover", 0, cfg.block_mover_pj_per_byte,
                                         cfg.block_mover_pj_per_byte, 0, hz});
        m_l2_comp = trace.add_component({"l2", "l2", 0, cfg.l2_pj_per_byte, cfg.l2_pj_per_byte, 0, hz});
        m_st_comp = trace.add_component({"streamer", "streamer", 0, cfg.streamer_pj_per_byte, cfg.streamer_pj_per_byte, 0, hz});
        m_l1_comp = trace.add_component({"l1", "l1", 0, cfg.l1_pj_per_byte, cfg.l1_pj_per_byte, 0, hz});
        // L3 slices are spread over the mesh: a block's operands cross mean_mesh_hops() on average
        m_noc_comp = trace.add_component({"noc", "noc", cfg.noc_pj_per_byte_hop, 0, 0, 0, hz});
        m_dram = std::make_unique<Dram>("dram", cfg.dram, trace, m_dram_comp, m_current_op);
        m_dma = std::make_unique<Dma>("dma", cfg.dram.transaction_bytes);
        m_dma->socket.bind(m_dram->socket);
    }

    double clock_hz() const override { return m_cfg.clock_mhz() * 1e6; }
    double static_power_w() const override { return m_cfg.static_w; }
    std::string precision() const override { return m_cfg.precision_name; }
    uint16_t op_component() const override { return m_fabric; }

    void execute(uint32_t op_index, const Operator& op, const OpGraph& graph) override {
        m_current_op = op_index;
        if (m_next_op.empty()) index_order(graph);
        if (op.cost.cls == OpClass::ShapeOnly || op.cost.cls == OpClass::Unsupported) return;
        m_graph = &graph;
        m_prefetch_for = m_next_op[op_index];
        for (auto& l2 : m_l2) l2.clear();
        m_prev_end = m_clock.now_cycle();
        m_write_done = m_prev_end;
        m_seq = 0;
        if (op.cost.cls == OpClass::Contraction) run_contraction(op, graph);
        else run_pe_op(op, graph);
        finish_outputs(op, graph);
        if (m_write_done > m_prev_end)
            stall(m_prev_end, m_write_done - m_prev_end, StallCause::WriteDrain);
        m_clock.wait_until(std::max(m_prev_end, m_write_done));
    }

private:

    // ---- events -----------------------------------------------------------------------------
    void emit(EventKind kind, uint16_t comp, uint64_t start, uint64_t cycles, uint64_t ops, uint64_t bytes,
              StallCause cause = StallCause::None, uint64_t counted_cycles = 0) {
        const uint64_t t = m_clock.to_ps(start);
        m_trace.emit(make_event(kind, comp, m_current_op, t, m_clock.to_ps(start + cycles) - t, bytes, ops, counted_cycles,
                                m_seq, cause));
    }
    void stall(uint64_t start, uint64_t cycles, StallCause cause) {
        emit(EventKind::Stall, m_fabric, start, cycles, 0, 0, cause, cycles);
    }

    // ---- memory -----------------------------------------------------------------------------
    int64_t bytes_of(const Tensor& t) const { return run_bytes(t, m_cfg.precision); }
    static uint64_t whole_key(int32_t tensor) { return mix_key(0xA11, static_cast<uint64_t>(tensor)); }

    void index_order(const OpGraph& g) {
        const auto& order = g.topo_order();
        m_next_op.assign(g.ops().size(), -1);
        for (size_t i = 0; i + 1 < order.size(); ++i) m_next_op[static_cast<size_t>(order[i])] = order[i + 1];
    }

    /// Weight prefetch across operators (what a KPU compiler schedules): once an operator's
    /// first wave is on its way, the DMA fetches the next operator's weights into free L3 space
    /// (never evicting anything) in the background; that operator's waves then wait only for
    /// what has not yet arrived.
    void prefetch_next_weights() {
        if (m_prefetch_for < 0) return;
        const Operator& next = m_graph->ops()[static_cast<size_t>(m_prefetch_for)];
        m_prefetch_for = -1;
        for (int32_t t : next.inputs) {
            if (t < 0 || m_graph->tensors()[static_cast<size_t>(t)].role != TensorRole::Weight) continue;
            const int64_t b = bytes_of(m_graph->tensors()[static_cast<size_t>(t)]);
            if (m_l3.hit(whole_key(t)) || b > m_l3.capacity_bytes() - m_l3.used_bytes()) continue;
            const uint64_t start = m_clock.now_cycle();
            const double done = m_dma->transfer(b, /*write=*/false);
            m_l3.insert(whole_key(t), b);
            m_ready_ps[t] = done;
            const uint64_t end = m_clock.cycle_at_or_after(done);
            emit(EventKind::Transfer, m_dma_comp, start, end > start ? end - start : 0, 0, static_cast<uint64_t>(b));
            emit(EventKind::SramWrite, m_l3_comp, start, end > start ? end - start : 0, 0, static_cast<uint64_t>(b));
        }
    }

    /// Makes `bytes` of panel `key` resident in L3, fetching it from DRAM on a miss; a panel of a
    /// tensor that is resident as a whole is already there (once its prefetch, if any, lands:
    /// `ready_ps` is raised to that time).
    int64_t fetch_panel(uint64_t key, int64_t bytes, int32_t tensor, double& ready_ps) {
        if (tensor >= 0 && m_l3.hit(whole_key(tensor))) {
            auto it = m_ready_ps.find(tensor);
            if (it != m_ready_ps.end()) ready_ps = std::max(ready_ps, it->second);
            return 0;
        }
        if (m_l3.hit(key)) return 0;
        m_l3.insert(key, bytes);
        return bytes;
    }

    /// Issues `w`'s DRAM reads now; returns the cycle its operands are in L3.
    uint64_t issue(Wave& w) {
        const uint64_t prefetched = m_clock.cycle_at_or_after(w.prefetch_ready_ps);
        if (w.dram_read_bytes <= 0) return std::max(m_clock.now_cycle(), prefetched);
        const uint64_t start = m_clock.now_cycle();
        const double done = m_dma->transfer(w.dram_read_bytes, /*write=*/false);
        const uint64_t ready = std::max(m_clock.cycle_at_or_after(done), prefetched);
        const uint64_t landed = m_clock.cycle_at_or_after(done);
        emit(EventKind::Transfer, m_dma_comp, start, landed > start ? landed - start : 0, 0,
             static_cast<uint64_t>(w.dram_read_bytes));
        return ready;
    }

    /// Runs `cur` (its loads already issued); issues `next`'s loads when `cur` starts.
    void step(Wave& cur, Wave* next) {
        const uint64_t start = std::max(m_prev_end, cur.ready_cycle);
        if (cur.ready_cycle > m_prev_end) stall(m_prev_end, cur.ready_cycle - m_prev_end, StallCause::OperandLoad);
        m_clock.wait_until(start);
        if (next) next->ready_cycle = issue(*next);
        const int64_t mover = static_cast<int64_t>(std::ceil(cur.mover_bytes_max_tile / m_cfg.block_mover_bytes_per_cycle));
        const int64_t streamer = static_cast<int64_t>(std::ceil(cur.streamer_bytes_max_tile / m_cfg.streamer_bytes_per_cycle));
        const int64_t compute = cur.compute_cycles;
        const int64_t duration = std::max({compute, mover, streamer});
        // compute events
        if (cur.contraction) {
            // one event per tile of work; the tiles of a wave run side by side, so only the first
            // carries the wave's cycles (the fabric's busy time), every one carries its MACs
            bool first = true;
            for (const auto& b : cur.blocks) {
                emit(EventKind::Fold, m_fabric, start, static_cast<uint64_t>(compute), static_cast<uint64_t>(b.m * b.n * cur.k),
                     0, StallCause::None, first ? static_cast<uint64_t>(compute) : 0);
                first = false;
            }
        } else {
            emit(EventKind::Vector, m_fabric, start, static_cast<uint64_t>(compute), static_cast<uint64_t>(cur.pe_ops), 0,
                 StallCause::None, static_cast<uint64_t>(compute));
        }
        if (duration > compute)
            stall(start + compute, static_cast<uint64_t>(duration - compute),
                  mover >= streamer ? StallCause::BlockMover : StallCause::Streamer);
        // data movement of the wave
        const uint64_t d = static_cast<uint64_t>(duration);
        emit(EventKind::Transfer, m_bm_comp, start, d, 0, static_cast<uint64_t>(cur.mover_bytes));
        emit(EventKind::Transfer, m_st_comp, start, d, 0, static_cast<uint64_t>(cur.streamer_bytes));
        emit(EventKind::Transfer, m_noc_comp, start, d, static_cast<uint64_t>(std::llround(cur.mover_bytes * m_hops)),
             static_cast<uint64_t>(cur.mover_bytes));
        const std::pair<uint16_t, std::pair<int64_t, int64_t>> levels[] = {
            {m_l3_comp, {cur.l3_read, cur.l3_write}}, {m_l2_comp, {cur.l2_read, cur.l2_write}}, {m_l1_comp, {cur.l1_read, cur.l1_write}}};
        for (const auto& [comp, rw] : levels) {
            if (rw.first > 0) emit(EventKind::SramRead, comp, start, d, 0, static_cast<uint64_t>(rw.first));
            if (rw.second > 0) emit(EventKind::SramWrite, comp, start, d, 0, static_cast<uint64_t>(rw.second));
        }
        ++m_seq;
        m_prev_end = start + d;
        m_clock.wait_until(m_prev_end);
    }

    /// Double-buffered wave pipeline: waves arrive from `produce`, each one's loads go out while
    /// the previous one computes.
    void run_waves(const std::function<void(const std::function<void(Wave&&)>&)>& produce) {
        std::optional<Wave> cur;
        produce([&](Wave&& w) {
            if (!cur) {
                w.ready_cycle = issue(w);
                cur = std::move(w);
                prefetch_next_weights();
                return;
            }
            step(*cur, &w);
            cur = std::move(w);
        });
        if (cur) step(*cur, nullptr);
    }

    // ---- contractions -----------------------------------------------------------------------
    void run_contraction(const Operator& op, const OpGraph& graph) {
        const int64_t eb = operand_bytes(m_cfg.precision);
        const int64_t R = m_cfg.pe_rows, C = m_cfg.pe_cols;
        run_waves([&](const std::function<void(Wave&&)>& sink) {
            for (size_t gi = 0; gi < op.cost.gemms.size(); ++gi) {
                const GemmView& g = op.cost.gemms[gi];
                if (g.m <= 0 || g.n <= 0 || g.k <= 0) continue;
                const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor;  // -1: on chip (a recurrent state)
                const double a_ratio = g.a_unique_elems > 0
                                           ? std::min(1.0, static_cast<double>(g.a_unique_elems) / (double(g.m) * g.k))
                                           : 1.0;
                const FabricPlan plan = plan_gemm(g, m_cfg);
                for (int64_t rep = 0; rep < g.repeat; ++rep) {
                    for_each_wave(g, m_cfg, [&](int64_t wi, const std::vector<FabricBlock>& blocks) {
                        Wave w;
                        w.blocks = blocks;
                        w.k = g.k;
                        w.compute_cycles = plan.k_cycles;
                        if (wi == 0) w.compute_cycles += (R - 1) + (C - 1) + m_cfg.fill_cycles;
                        if (wi == plan.waves - 1) w.compute_cycles += m_cfg.drain_cycles;
                        std::unordered_set<uint64_t> seen;
                        size_t tile = 0;
                        for (const auto& b : blocks) {
                            TileBuffer& l2 = m_l2[tile++];
                            const int64_t a_bytes = static_cast<int64_t>(std::ceil(b.m * g.k * a_ratio)) * eb;
                            const int64_t b_bytes = g.k * b.n * eb;
                            const int64_t out_bytes = b.m * b.n * eb;
                            const uint64_t a_key = mix_key(mix_key(mix_key(mix_key(1, uint64_t(a_tensor)), gi), rep * 1000003 + b.instance), b.bi);
                            const uint64_t b_key = g.b_is_weight ? mix_key(mix_key(mix_key(2, uint64_t(b_tensor)), gi), mix_key(b.instance % g.groups, b.bj))
                                                                 : mix_key(mix_key(mix_key(mix_key(2, uint64_t(b_tensor)), gi), rep * 1000003 + b.instance), b.bj);
                            if (seen.insert(a_key).second && a_tensor >= 0)
                                w.dram_read_bytes += fetch_panel(a_key, a_bytes, a_tensor, w.prefetch_ready_ps);
                            if (seen.insert(b_key).second)
                                w.dram_read_bytes += fetch_panel(b_key, b_bytes, b_tensor, w.prefetch_ready_ps);
                            // a panel still in this tile's L2 (its previous block used it) is not moved again
                            const int64_t a_move = l2.hit(a_key) ? 0 : a_bytes;
                            const int64_t b_move = l2.hit(b_key) ? 0 : b_bytes;
                            if (a_move) l2.insert(a_key, a_bytes);
                            if (b_move) l2.insert(b_key, b_bytes);
                            const int64_t moved = a_move + b_move + out_bytes;              // L3 <-> L2
                            const int64_t streamed = (b.m + b.n) * g.k * eb + out_bytes;   // L2 <-> L1, im2col expanded
                            w.mover_bytes += moved;
                            w.streamer_bytes += streamed;
                            w.mover_bytes_max_tile = std::max(w.mover_bytes_max_tile, moved);
                            w.streamer_bytes_max_tile = std::max(w.streamer_bytes_max_tile, streamed);
                            w.l3_read += a_move + b_move;
                            w.l3_write += out_bytes;
                            w.l2_write += a_move + b_move + out_bytes;
                            w.l2_read += (b.m + b.n) * g.k * eb + out_bytes;
                            w.l1_write += (b.m + b.n) * g.k * eb + out_bytes;
                            w.l1_read += (b.m + b.n) * g.k * eb + out_bytes;
                        }
                        w.l3_write += w.dram_read_bytes;  // DMA fills
                        sink(std::move(w));
                    });
                }
            }
        });
    }

    // ---- other operators on the PEs ------------------------------------------------------------
    void run_pe_op(const Operator& op, const OpGraph& graph) {
        run_waves([&](const std::function<void(Wave&&)>& sink) {
            Wave w;
            w.contraction = false;
            int64_t in_bytes = 0, out_bytes = 0, out_elems = 0;
            for (int32_t t : op.inputs) {
                if (t < 0) continue;
                const int64_t b = bytes_of(graph.tensors()[t]);
                in_bytes += b;
                if (!m_l3.hit(whole_key(t))) {
                    w.dram_read_bytes += b;
                    m_l3.insert(whole_key(t), b);
                }
            }
            for (int32_t t : op.outputs) {
                out_bytes += bytes_of(graph.tensors()[t]);
                out_elems += graph.tensors()[t].elems();
            }
            const int64_t pes = m_cfg.compute_tiles() * m_cfg.pes_per_tile();
            w.pe_ops = op.cost.cls == OpClass::DataMovement ? 0 : op.cost.flops;
            const int64_t work = op.cost.cls == OpClass::DataMovement ? out_elems : op.cost.flops;
            w.compute_cycles = (work + pes - 1) / pes + m_cfg.fill_cycles + m_cfg.drain_cycles;
            const int64_t moved = in_bytes + out_bytes;
            w.mover_bytes = w.streamer_bytes = moved;
            w.mover_bytes_max_tile = w.streamer_bytes_max_tile = (moved + m_cfg.compute_tiles() - 1) / m_cfg.compute_tiles();
            w.l3_read = in_bytes;
            w.l3_write = out_bytes + w.dram_read_bytes;
            w.l2_read = w.l2_write = w.l1_read = w.l1_write = moved;
            sink(std::move(w));
        });
    }

    /// Outputs stay in L3 when they fit (the next operator finds them there); an output that
    /// does not fit, or that no operator consumes (a model output), is written to DRAM.
    void finish_outputs(const Operator& op, const OpGraph& graph) {
        int64_t to_dram = 0;
        for (int32_t t : op.outputs) {
            const int64_t b = bytes_of(graph.tensors()[t]);
            if (b <= m_l3.capacity_bytes()) m_l3.insert(whole_key(t), b);
            if (b > m_l3.capacity_bytes() || graph.consumer_count(t) == 0) to_dram += b;
        }
        if (to_dram <= 0) return;
        const uint64_t start = m_clock.now_cycle();
        const double done = m_dma->transfer(to_dram, /*write=*/true);
        const uint64_t end = m_clock.cycle_at_or_after(done);
        emit(EventKind::Transfer, m_dma_comp, start, end > start ? end - start : 0, 0, static_cast<uint64_t>(to_dram));
        emit(EventKind::SramRead, m_l3_comp, start, end > start ? end - start : 0, 0, static_cast<uint64_t>(to_dram));
        m_write_done = std::max(m_write_done, end);
    }

    KpuConfig m_cfg;
    CycleClock m_clock;
    TraceWriter& m_trace;
    TileBuffer m_l3;
    std::vector<TileBuffer> m_l2;  ///< per compute tile; half of each L2 is resident, half fills
    double m_hops;
    uint16_t m_fabric = 0, m_dram_comp = 0, m_dma_comp = 0, m_l3_comp = 0, m_bm_comp = 0, m_l2_comp = 0, m_st_comp = 0,
             m_l1_comp = 0, m_noc_comp = 0;
    uint32_t m_current_op = 0;
    std::unique_ptr<Dram> m_dram;
    std::unique_ptr<Dma> m_dma;
    uint64_t m_prev_end = 0, m_write_done = 0;
    uint32_t m_seq = 0;
    std::vector<int32_t> m_next_op;                  ///< next operator in dispatch order
    int32_t m_prefetch_for = -1;                     ///< operator whose weights to prefetch
    const OpGraph* m_graph = nullptr;
    std::unordered_map<int32_t, double> m_ready_ps;  ///< prefetched tensor -> arrival, ps
};

}  // namespace

std::unique_ptr<Machine> create_kpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<KpuMachine>(make_kpu_config(params), trace);
}

}  // namespace archsim
