#include "arch/kpu/kpu_machine.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "arch/common/buffer_memo.h"
#include "arch/common/dram_port.h"
#include "arch/common/machine_base.h"
#include "arch/common/operand_pipeline.h"
#include "arch/common/run_bytes.h"
#include "arch/kpu/kpu_config.h"
#include "arch/kpu/kpu_wave.h"
#include "arch/kpu/wavefront.h"
#include "arch/memory/tile_buffer.h"
#include "sim/base/hash.h"

namespace archsim {

namespace {

/// The KPU: a mesh of tiles of PE arrays executing contractions as pipelined wavefronts (see
/// arch/kpu/wavefront.h for the schedule), and other operators on the PEs (one operation per
/// PE per cycle). Operands flow DRAM -> DMA -> L3 -> block movers -> L2 -> streamers -> L1 ->
/// fabric; the L3 (tiles x l3.kib_per_tile) keeps activations and weight panels across waves
/// and operators with LRU replacement, so a layer whose operands do not fit re-streams them from
/// DRAM and the traffic shows it. Waves run through the shared operand pipeline (a wave's DRAM
/// reads are issued when the previous wave starts); a wave lasts as long as the slowest of its
/// wavefront, its block movers and its streamers, and each shortfall is a stall naming the cause.
class KpuMachine : public MachineBase {
public:
    KpuMachine(const KpuConfig& cfg, TraceWriter& trace)
        : MachineBase(trace, cfg.clock_mhz(), cfg.static_w, cfg.precision_name, RoutingRules{}), m_cfg(cfg),
          m_l3(cfg.tiles() * cfg.l3_kib_per_tile * 1024),
          m_l2(static_cast<size_t>(cfg.compute_tiles()), TileBuffer(cfg.l2_kib_per_tile * 512)),
          m_hops(mean_mesh_hops(cfg.tile_rows, cfg.tile_cols)), m_pipe(*this, m_clock, m_rec) {
        m_fabric = m_op_component = m_rec.compute("fabric", "compute", cfg.mac_pj_now(), cfg.peak_macs_per_cycle());
        m_dram = std::make_unique<DramPort>(m_rec, cfg.dram);
        m_dma = m_rec.memory("dma", cfg.dma_pj_per_byte);
        m_l3c = m_rec.memory("l3", cfg.l3_pj_per_byte);
        m_mover = m_rec.memory("block_mover", cfg.block_mover_pj_per_byte);
        m_l2c = m_rec.memory("l2", cfg.l2_pj_per_byte);
        m_streamer = m_rec.memory("streamer", cfg.streamer_pj_per_byte);
        m_l1c = m_rec.memory("l1", cfg.l1_pj_per_byte);
        // L3 slices are spread over the mesh: a block's operands cross mean_mesh_hops() on average
        m_noc = m_rec.compute("noc", "noc", cfg.noc_pj_per_byte_hop(), 0);
        m_mover_late = m_rec.stall_cause("block_mover", "the L3 -> L2 block movers could not deliver a wave's operands in time");
        m_streamer_late = m_rec.stall_cause("streamer", "the L2 -> L1 streamers could not feed the wavefront at its rate");
        enable_power(cfg.power_spec());
    }

    /// The power controller's clock (MachineBase::enable_power): the fabric, movers and
    /// streamers count cycles of it from the next cycle boundary; DRAM keeps its rate.
    void set_clock_mhz(double mhz) override { m_clock.retime(1e6 / mhz); }

    // ---- the pipeline's stage (arch/common/operand_pipeline.h) --------------------------------
    /// Issues `w`'s DRAM reads now; returns the cycle its operands are in L3.
    uint64_t issue(Wave& w) {
        const uint64_t prefetched = m_clock.cycle_at_or_after(w.prefetch_ready_ps);
        if (w.dram_read_bytes <= 0) return std::max(m_clock.now_cycle(), prefetched);
        const uint64_t landed = dma(w.dram_read_bytes, /*write=*/false, {});
        return std::max(landed, prefetched);
    }
    /// Weight prefetch across operators (what a KPU compiler schedules): once an operator's first
    /// wave is on its way, the DMA fetches the next operator's weights into free L3 space (never
    /// evicting anything); that operator's waves then wait only for what has not yet arrived.
    void first_issued() {
        if (m_prefetch_for < 0) return;
        const Operator& next = m_graph->ops()[static_cast<size_t>(m_prefetch_for)];
        m_prefetch_for = -1;
        for (int32_t t : next.inputs) {
            if (t < 0 || m_graph->tensors()[static_cast<size_t>(t)].role != TensorRole::Weight) continue;
            const int64_t b = bytes_of(t);
            if (has_whole(t) || !m_l3.has_room(b)) continue;
            const uint64_t start = m_clock.now_cycle();
            m_ready_ps[t] = m_dram->transfer(b, /*write=*/false);
            insert_whole(t, b);
            const uint64_t end = m_clock.cycle_at_or_after(m_ready_ps[t]);
            emit(EventKind::Transfer, m_dma, start, end > start ? end - start : 0, {uint64_t(b)});
            emit(EventKind::SramWrite, m_l3c, start, end > start ? end - start : 0, {uint64_t(b)});
        }
    }
    uint64_t run(Wave& w, uint64_t start, uint32_t seq, bool) {
        const int64_t mover = static_cast<int64_t>(std::ceil(w.mover_bytes_max_tile / m_cfg.block_mover_bytes_per_cycle));
        const int64_t streamer = static_cast<int64_t>(std::ceil(w.streamer_bytes_max_tile / m_cfg.streamer_bytes_per_cycle));
        const uint64_t compute = static_cast<uint64_t>(w.compute_cycles);
        const uint64_t d = static_cast<uint64_t>(std::max({w.compute_cycles, mover, streamer}));
        if (w.contraction) {
            // one event per tile of work; the tiles of a wave run side by side, so only the first
            // carries the wave's cycles (the fabric's busy time), every one carries its MACs
            for (size_t i = 0; i < w.blocks.size(); ++i)
                emit(EventKind::Fold, m_fabric, start, compute, {0, uint64_t(w.blocks[i].m * w.blocks[i].n * w.k), i == 0 ? compute : 0});
        } else {
            emit(EventKind::Vector, m_fabric, start, compute, {0, uint64_t(w.pe_ops), compute});
        }
        if (d > compute)
            emit(EventKind::Stall, m_fabric, start + compute, d - compute, {0, 0, d - compute},
                 mover >= streamer ? m_mover_late : m_streamer_late);
        emit(EventKind::Transfer, m_mover, start, d, {uint64_t(w.mover_bytes)});
        emit(EventKind::Transfer, m_streamer, start, d, {uint64_t(w.streamer_bytes)});
        emit(EventKind::Transfer, m_noc, start, d, {uint64_t(w.mover_bytes), uint64_t(std::llround(w.mover_bytes * m_hops))});
        const std::pair<uint16_t, std::pair<int64_t, int64_t>> levels[] = {
            {m_l3c, {w.l3_read, w.l3_write}}, {m_l2c, {w.l2_read, w.l2_write}}, {m_l1c, {w.l1_read, w.l1_write}}};
        for (const auto& [comp, rw] : levels) {
            if (rw.first > 0) emit(EventKind::SramRead, comp, start, d, {uint64_t(rw.first)});
            if (rw.second > 0) emit(EventKind::SramWrite, comp, start, d, {uint64_t(rw.second)});
        }
        (void)seq;
        return d;
    }
    void retire(Wave&) {}
    /// A wave reads nothing an earlier wave of its operator wrote to DRAM: spills are written after a flush().
    uint64_t issue_dependent(Wave&) { return 0; }
    uint16_t stall_component(const Wave&) const { return m_fabric; }

protected:
    // ---- kernel memoization (arch/common/kernel_memo.h) ---------------------------------------
    // What a kernel depends on beyond its signature: the L3's contents in LRU order (tiles of its
    // own tensors and of the next operator's weights, which it may prefetch, by slot and place;
    // any other tile by its size only: the kernel can only evict it), when its prefetched
    // tensors arrive (relative to its start), the next operator's weights (their slots and
    // sizes) and the DRAM's state. The L2s start empty at every operator.
    // The L3 holds older layers' tiles, so its exact contents repeat only after several layers;
    // the looser key keeps only which tiles of the kernel's tensors (and of none) it holds,
    // and a replay under it first runs the recorded kernel's L3 calls (its journal) on a copy of
    // the L3 with the replaying kernel's tensors: every lookup must hit or miss as recorded and
    // every free-space check (prefetch) agree, and the copy becomes the L3 (what simulating
    // would leave).
    /// The change a kernel made: to the L3 (BufferMemo), its prefetches' arrivals relative to
    /// its end, and the DRAM's.
    struct MemoChange {
        BufferMemo::Record l3;
        std::vector<std::pair<int32_t, double>> ready;
        DramPort::MemoState dram;
    };
    bool memo_state(const Operator&, const OpGraph& graph, const std::vector<int32_t>& slots, MemoKey& key) override {
        next_ops(graph);
        m_memo_slots = slots;
        MemoKey common;  // what the loose key holds too (it extends the slots by the next weights)
        add_memo_common(graph, common);
        m_memo_common = common.value();
        key.add(m_memo_common);
        m_l3_memo.begin(m_l3, m_memo_slots, key);
        return true;
    }
    bool memo_loose_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) override {
        key.add(m_memo_common);
        m_l3_memo.add_loose(key);
        return true;
    }
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override {
        auto l3 = m_l3_memo.save(m_l3);
        if (!l3) return {};  // a tile of a tensor the kernel does not name: not replayable
        MemoChange c{std::move(*l3), {}, m_dram->memo_save(end_ps)};
        for (size_t s = 0; s < m_memo_slots.size(); ++s)
            if (auto it = m_ready_ps.find(m_memo_slots[s]); it != m_ready_ps.end()) c.ready.emplace_back(int32_t(s), it->second - end_ps);
        return c;
    }
    bool memo_replayable(const std::any& change, double, uint64_t, bool exact) override {
        return exact || m_l3_memo.check(std::any_cast<const MemoChange&>(change).l3, m_l3);
    }
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps,
                      bool exact) override {
        const auto& c = std::any_cast<const MemoChange&>(change);
        m_l3_memo.restore(c.l3, exact, m_l3);
        for (const auto& [s, rel] : c.ready) m_ready_ps[m_memo_slots[static_cast<size_t>(s)]] = end_ps + rel;
        m_dram->memo_restore(c.dram, end_ps);
    }
    bool cycle_timed() const override { return true; }

    void begin_op(const Operator&, const OpGraph& graph, Route) override {
        next_ops(graph);
        m_graph = &graph;
        m_prefetch_for = m_next_op[m_rec.op()];
        for (auto& l2 : m_l2) l2.clear();
        m_pipe.begin();
    }
    void contraction(const Operator& op, const OpGraph&) override {
        for_each_gemm(op, [&](size_t gi, const GemmView& g) { gemm_waves(gi, g, 0); });
        m_pipe.flush();
    }
    /// A fused attention kernel (lowering's attention pass) as three systems of recurrences on
    /// the fabric: S = Q K^T as a wavefront, the softmax (scale, mask, max, exp, sum, normalize:
    /// flops - 2 MACs operations) on the PEs over the scores, and P V as a wavefront whose P
    /// operand is where S left it. The scores are tiled through the on-chip buffers: every score
    /// block leaves the fabric through its tile's L2 into the L3 and comes back for the softmax
    /// and for P V. While all heads' scores fit the L3 they never reach DRAM; otherwise S is
    /// written to DRAM and read back for the softmax, and P likewise for P V (the literal graph's
    /// traffic). Q, K, V and O move as in any contraction. Its backward (AttentionView::backward)
    /// runs its five products as wavefronts the same way, the softmax recomputed after S and the
    /// score gradient dS formed after dP on the PEs (half of the kernel's vector operations each).
    void attention(const Operator& op, const OpGraph&) override {
        const AttentionView& a = op.cost.attention.at(0);
        const int64_t scores = a.batch * a.q_len * a.kv_len * operand_bytes(m_cfg.precision);
        const bool on_chip = scores <= m_l3.capacity_bytes();
        // the PEs' vector work on the scores, each in from L3 and back (spilled: DRAM both ways)
        auto vector_pass = [&](int64_t ops) {
            m_pipe.flush();
            Wave w;
            w.dram_read_bytes = on_chip ? 0 : scores;
            shape_pe_wave(w, ops, ops, scores, scores, /*own_pass=*/false);
            m_pipe.push(std::move(w));
            m_pipe.flush();
            if (!on_chip) m_pipe.note_write(dma(scores, /*write=*/true, m_l3c));  // its result spilled
        };
        // forward: S, softmax, P V; backward (AttentionView::backward): S, softmax recomputed,
        // dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q. A product reading a score matrix
        // (its A operand not in memory) reads it from L3, or from DRAM when spilled.
        const int64_t ops = op.cost.non_mac_flops();
        const std::vector<GemmView>& gemms = op.cost.gemms;
        for (size_t gi = 0; gi < gemms.size(); ++gi) {
            gemm_waves(gi, gemms[gi], !on_chip && gemms[gi].a.tensor < 0 ? scores : 0);
            if (!on_chip && gemms[gi].c.tensor < 0) {  // scores made: spilled
                m_pipe.flush();
                m_pipe.note_write(dma(scores, /*write=*/true, m_l3c));
            }
            if (gi == 0) vector_pass(a.backward ? ops / 2 : ops);
            if (gi == 2 && a.backward) vector_pass(ops - ops / 2);
        }
        m_pipe.flush();
    }

private:
    /// Pushes the waves of GEMM `gi` of the current operator (`g`) into the operand pipeline;
    /// the first wave also reads `extra_dram_bytes` from DRAM (an operand that is not one of
    /// `g`'s tensors: spilled attention scores).
    void gemm_waves(size_t gi, const GemmView& g, int64_t extra_dram_bytes) {
        const int64_t eb = operand_bytes(m_cfg.precision);
        const int64_t R = m_cfg.pe_rows, C = m_cfg.pe_cols;
        const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor;  // -1: on chip (a recurrent state)
        const double a_ratio = g.a_unique_elems > 0 ? std::min(1.0, double(g.a_unique_elems) / (double(g.m) * g.k)) : 1.0;
        const FabricPlan plan = plan_gemm(g, m_cfg);
        for (int64_t rep = 0; rep < g.repeat; ++rep) {
            for_each_wave(g, m_cfg, [&](int64_t wi, const std::vector<FabricBlock>& blocks) {
                Wave w;
                w.blocks = blocks;
                w.k = g.k;
                w.compute_cycles = plan.k_cycles;
                if (wi == 0) w.compute_cycles += (R - 1) + (C - 1) + m_cfg.fill_cycles;
                if (wi == plan.waves - 1) w.compute_cycles += m_cfg.drain_cycles;
                std::unordered_set<uint64_t>& seen = m_seen;  // panels this wave already asked for
                seen.clear();
                size_t tile = 0;
                for (const auto& b : blocks) {
                    TileBuffer& l2 = m_l2[tile++];
                    const int64_t a_bytes = static_cast<int64_t>(std::ceil(b.m * g.k * a_ratio)) * eb;
                    const int64_t b_bytes = g.k * b.n * eb, out_bytes = b.m * b.n * eb;
                    // a panel's place in its tensor (the key adds the tensor)
                    const uint64_t a_local = mix_key(mix_key(mix_key(1, gi), rep * 1000003 + b.instance), b.bi);
                    const uint64_t b_local = g.b_is_weight ? mix_key(mix_key(mix_key(2, gi), b.instance % g.groups), b.bj)
                                                           : mix_key(mix_key(mix_key(2, gi), rep * 1000003 + b.instance), b.bj);
                    const uint64_t a_key = tile_key(a_tensor, a_local), b_key = tile_key(b_tensor, b_local);
                    if (seen.insert(a_key).second && a_tensor >= 0) w.dram_read_bytes += fetch_panel(a_key, a_local, a_bytes, a_tensor, w.prefetch_ready_ps);
                    if (seen.insert(b_key).second) w.dram_read_bytes += fetch_panel(b_key, b_local, b_bytes, b_tensor, w.prefetch_ready_ps);
                    // a panel still in this tile's L2 (its previous block used it) is not moved again
                    const int64_t a_move = l2.hit(a_key) ? 0 : a_bytes, b_move = l2.hit(b_key) ? 0 : b_bytes;
                    if (a_move) l2.insert(a_key, a_bytes);
                    if (b_move) l2.insert(b_key, b_bytes);
                    w.add_block(a_move + b_move, out_bytes, (b.m + b.n) * g.k * eb);
                }
                if (wi == 0 && rep == 0) w.dram_read_bytes += extra_dram_bytes;
                w.l3_write += w.dram_read_bytes;  // DMA fills
                m_pipe.push(std::move(w));
            });
        }
    }

protected:
    /// A lowered contraction's fused epilogue, run as further recurrences of its wavefront: its
    /// operations on the PEs (no fill or drain of its own: the wavefront is already in flight)
    /// and its side inputs (a residual; scalars live in the PEs) from L3, fetched on a miss; the
    /// contraction's wave already wrote the kernel's output.
    void fused_epilogue(const Operator& op, const OpGraph& graph) override {
        Wave w;
        int64_t in_bytes = 0;
        for (int32_t t : epilogue_side_inputs(op)) {
            if (graph.tensors()[static_cast<size_t>(t)].elems() <= 1) continue;
            const int64_t b = bytes_of(t);
            in_bytes += b;
            if (!has_whole(t)) {
                w.dram_read_bytes += b;
                insert_whole(t, b);
            }
        }
        if (in_bytes == 0 && op.cost.flops == 0) return;
        shape_pe_wave(w, op.cost.flops, op.cost.flops, in_bytes, 0, /*own_pass=*/false);
        m_pipe.push(std::move(w));
        m_pipe.flush();
    }
    /// Other operators on the PEs: one wave, every input from L3 (fetched on a miss).
    void streaming(const Operator& op, const OpGraph& graph) override {
        Wave w;
        int64_t in_bytes = 0, out_bytes = 0, out_elems = 0;
        for (int32_t t : op.inputs) {
            if (t < 0) continue;
            const int64_t b = read_bytes(op, t, graph.tensors()[static_cast<size_t>(t)], m_cfg.precision);
            in_bytes += b;
            if (!has_whole(t)) {
                w.dram_read_bytes += b;
                insert_whole(t, b);
            }
        }
        for (int32_t t : op.outputs) {
            out_bytes += bytes_of(t);
            out_elems += graph.tensors()[t].elems();
        }
        const bool copy = op.cost.cls == OpClass::DataMovement;
        shape_pe_wave(w, copy ? 0 : op.cost.flops, copy ? out_elems : op.cost.flops, in_bytes, out_bytes, /*own_pass=*/true);
        m_pipe.push(std::move(w));
        m_pipe.flush();
    }
    /// Outputs stay in L3 when they fit (the next operator finds them there); an output that
    /// does not fit, or that no operator consumes (a model output), is written to DRAM.
    void end_op(const Operator& op, const OpGraph& graph, Route) override {
        int64_t to_dram = 0;
        for (int32_t t : op.outputs) {
            const int64_t b = bytes_of(t);
            if (b <= m_l3.capacity_bytes()) insert_whole(t, b);
            if (b > m_l3.capacity_bytes() || graph.consumer_count(t) == 0) to_dram += b;
        }
        if (to_dram > 0) m_pipe.note_write(dma(to_dram, /*write=*/true, m_l3c));
        m_pipe.drain(m_fabric);
    }

private:
    void emit(EventKind kind, uint16_t comp, uint64_t start, uint64_t cycles, Amount a, StallCauseId cause = kNoStallCause) {
        m_rec.emit(kind, comp, m_clock.span(start, cycles), a, m_pipe.seq(), cause);
    }
    /// A DMA transfer from now, recorded on the DMA (and, for writes, as the L3 read feeding it);
    /// returns the cycle it lands.
    uint64_t dma(int64_t bytes, bool write, uint16_t l3_side) {
        const uint64_t start = m_clock.now_cycle();
        const uint64_t end = m_clock.cycle_at_or_after(m_dram->transfer(bytes, write));
        emit(EventKind::Transfer, m_dma, start, end > start ? end - start : 0, {uint64_t(bytes)});
        if (write) emit(EventKind::SramRead, l3_side, start, end > start ? end - start : 0, {uint64_t(bytes)});
        return end;
    }
    /// Makes `w` a wave on the PEs (no wavefront): `ops` operations, `work` of them spread over
    /// every PE of the compute tiles (one a cycle each), plus the fabric's fill and drain when it
    /// is a pass of its own (not further recurrences of a wavefront in flight); `in_bytes` come
    /// from L3 and `out_bytes` go back, through the block movers, L2, streamers and L1, evenly
    /// over the tiles. `w.dram_read_bytes` must already hold what the DMA fills into L3 for it.
    void shape_pe_wave(Wave& w, int64_t ops, int64_t work, int64_t in_bytes, int64_t out_bytes, bool own_pass) const {
        const int64_t pes = m_cfg.compute_tiles() * m_cfg.pes_per_tile();
        w.contraction = false;
        w.pe_ops = ops;
        w.compute_cycles = (work + pes - 1) / pes + (own_pass ? m_cfg.fill_cycles + m_cfg.drain_cycles : 0);
        const int64_t moved = in_bytes + out_bytes;
        w.mover_bytes = w.streamer_bytes = moved;
        w.mover_bytes_max_tile = w.streamer_bytes_max_tile = (moved + m_cfg.compute_tiles() - 1) / m_cfg.compute_tiles();
        w.l3_read = in_bytes;
        w.l3_write = out_bytes + w.dram_read_bytes;
        w.l2_read = w.l2_write = w.l1_read = w.l1_write = moved;
    }
    int64_t bytes_of(int32_t t) const { return run_bytes(m_graph->tensors()[static_cast<size_t>(t)], m_cfg.precision); }
    /// The L3 key of the tile at `local` of `tensor` (-1: a value of no tensor).
    static uint64_t tile_key(int32_t tensor, uint64_t local) { return owned_tile_key(tensor, local); }
    static constexpr uint64_t kWhole = 0xA11;  ///< the `local` of a tensor resident as a whole
    static uint64_t whole_key(int32_t tensor) { return tile_key(tensor, kWhole); }
    void insert_whole(int32_t tensor, int64_t bytes) { m_l3.insert(whole_key(tensor), bytes, tensor, kWhole); }
    bool has_whole(int32_t tensor) { return m_l3.hit(whole_key(tensor), tensor, kWhole); }
    /// Adds to `key` what both memo keys hold: the next operator's weights (appended to the
    /// slots), when the slots' prefetched tensors arrive and the DRAM's state, relative to now.
    void add_memo_common(const OpGraph& graph, MemoKey& key) {
        const double t0 = static_cast<double>(m_clock.to_ps(m_clock.now_cycle()));
        const int32_t next = m_next_op[m_rec.op()];
        key.add(next >= 0);
        if (next >= 0)
            for (int32_t t : graph.ops()[static_cast<size_t>(next)].inputs) {
                if (t < 0 || graph.tensors()[static_cast<size_t>(t)].role != TensorRole::Weight) continue;
                key.add(memo_slot(t)).add(run_bytes(graph.tensors()[static_cast<size_t>(t)], m_cfg.precision));
            }
        for (size_t s = 0; s < m_memo_slots.size(); ++s) {
            auto it = m_ready_ps.find(m_memo_slots[s]);
            key.add(it == m_ready_ps.end() ? 0.0 : std::max(0.0, it->second - t0));
        }
        m_dram->memo_key(key, t0);
    }
    /// The operator that follows each in dispatch order (for weight prefetch), built once.
    void next_ops(const OpGraph& graph) {
        if (!m_next_op.empty()) return;
        const auto& order = graph.topo_order();
        m_next_op.assign(graph.ops().size(), -1);
        for (size_t i = 0; i + 1 < order.size(); ++i) m_next_op[static_cast<size_t>(order[i])] = order[i + 1];
    }
    /// `tensor`'s slot in m_memo_slots, appended if it has none.
    int32_t memo_slot(int32_t tensor) {
        const int32_t s = slot_index(m_memo_slots, tensor);
        if (s >= 0) return s;
        m_memo_slots.push_back(tensor);
        return static_cast<int32_t>(m_memo_slots.size() - 1);
    }
    /// Makes `bytes` of panel `key` resident in L3, fetching it from DRAM on a miss; a panel of a
    /// tensor resident as a whole is already there (once its prefetch, if any, lands: `ready_ps`
    /// is raised to that time).
    int64_t fetch_panel(uint64_t key, uint64_t local, int64_t bytes, int32_t tensor, double& ready_ps) {
        if (tensor >= 0 && has_whole(tensor)) {
            auto it = m_ready_ps.find(tensor);
            if (it != m_ready_ps.end()) ready_ps = std::max(ready_ps, it->second);
            return 0;
        }
        if (m_l3.hit(key, tensor, local)) return 0;
        m_l3.insert(key, bytes, tensor, local);
        return bytes;
    }

    KpuConfig m_cfg;
    TileBuffer m_l3;
    std::vector<TileBuffer> m_l2;  ///< per compute tile; half of each L2 is resident, half fills
    double m_hops;
    OperandPipeline<Wave, KpuMachine> m_pipe;
    std::unique_ptr<DramPort> m_dram;
    StallCauseId m_mover_late = 0, m_streamer_late = 0;
    uint16_t m_fabric = 0, m_dma = 0, m_l3c = 0, m_mover = 0, m_l2c = 0, m_streamer = 0, m_l1c = 0, m_noc = 0;
    std::vector<int32_t> m_next_op;                  ///< next operator in dispatch order
    int32_t m_prefetch_for = -1;                     ///< operator whose weights to prefetch
    const OpGraph* m_graph = nullptr;
    std::unordered_map<int32_t, double> m_ready_ps;  ///< prefetched tensor -> arrival, ps
    std::unordered_set<uint64_t> m_seen;             ///< gemm_waves' per-wave scratch (kept to reuse its buckets)
    std::vector<int32_t> m_memo_slots;               ///< the kernel's tensors, then the next operator's weights
    uint64_t m_memo_common = 0;                      ///< the key part both memo keys hold
    BufferMemo m_l3_memo;                            ///< the L3 as the kernel memo sees it
};

}  // namespace

std::unique_ptr<Machine> create_kpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<KpuMachine>(make_kpu_config(params), trace);
}

}  // namespace archsim
