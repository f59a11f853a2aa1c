#pragma once
// The KPU machine's class, shared by its source files: kpu_machine.cpp (construction, kernel
// memoization, streaming kernels and epilogues) and kpu_waves.cpp (contractions as wavefronts).
// No other part includes it: the KPU is created through kpu_machine.h.
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
#include "arch/kpu/kpu_mapping.h"
#include "arch/kpu/kpu_wave.h"
#include "arch/kpu/wavefront.h"
#include "arch/memory/tile_buffer.h"
#include "sim/base/hash.h"

namespace archsim {

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
    KpuMachine(const KpuConfig& cfg, TraceWriter& trace);

    /// The power controller's clock (MachineBase::enable_power): the fabric, movers and
    /// streamers count cycles of it from the next cycle boundary; DRAM keeps its rate.
    void set_clock_mhz(double mhz) override { m_clock.retime(1e6 / mhz); }

    // ---- the pipeline's stage (arch/common/operand_pipeline.h) --------------------------------
    /// Issues `w`'s DRAM reads now; returns the cycle its operands are in L3.
    uint64_t issue(Wave& w);
    /// Weight prefetch across operators (what a KPU compiler schedules): once an operator's first
    /// wave is on its way, the DMA fetches the next operator's weights into free L3 space (never
    /// evicting anything); that operator's waves then wait only for what has not yet arrived.
    void first_issued();
    uint64_t run(Wave& w, uint64_t start, uint32_t seq, bool);
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
    bool memo_state(const Operator&, const OpGraph& graph, const std::vector<int32_t>& slots, MemoKey& key) override;
    bool memo_loose_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) override;
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override;
    bool memo_replayable(const std::any& change, double, uint64_t, bool exact) override;
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps,
                      bool exact) override;
    bool cycle_timed() const override { return true; }

    void begin_op(const Operator&, const OpGraph& graph, Route) override;
    void contraction(const Operator& op, const OpGraph&) override;
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
    void attention(const Operator& op, const OpGraph&) override;

    /// The block orders of its GEMMs (contractions and fused attention kernels), as mapping_for()
    /// chooses them from the L3 the kernel finds; kept for gemm_waves() (m_orders).
    std::optional<OpMapping> mapping_of(const Operator& op, const OpGraph& graph, Route r) override;

private:
    /// The block order GEMM `g` runs in, with its search's figures: search_mapping() under
    /// Mapper::Auto and Search, row-major (mapspace 1, nothing evaluated) under Mapper::Fixed. Searched once
    /// per distinct GEMM shape and `resident` operands (the choice depends on nothing else, so a
    /// replayed kernel, whose L3 lookups the memo checks, ran in the order it reports).
    const KpuMapping& mapping_for(const GemmView& g, ResidentOperands resident);
    /// Pushes the waves of GEMM `gi` of the current operator (`g`) into the operand pipeline;
    /// the first wave also reads `extra_dram_bytes` from DRAM (an operand that is not one of
    /// `g`'s tensors: spilled attention scores).
    void gemm_waves(size_t gi, const GemmView& g, int64_t extra_dram_bytes);

protected:
    /// A lowered contraction's fused epilogue, run as further recurrences of its wavefront: its
    /// operations on the PEs (no fill or drain of its own: the wavefront is already in flight)
    /// and its side inputs (a residual; scalars live in the PEs) from L3, fetched on a miss; the
    /// contraction's wave already wrote the kernel's output.
    void fused_epilogue(const Operator& op, const OpGraph& graph) override;
    /// Other operators on the PEs: one wave, every input from L3 (fetched on a miss).
    void streaming(const Operator& op, const OpGraph& graph) override;
    /// Outputs stay in L3 when they fit (the next operator finds them there); an output that
    /// does not fit, or that no operator consumes (a model output), is written to DRAM.
    void end_op(const Operator& op, const OpGraph& graph, Route) override;

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
    void shape_pe_wave(Wave& w, int64_t ops, int64_t work, int64_t in_bytes, int64_t out_bytes, bool own_pass) const;
    int64_t bytes_of(int32_t t) const { return run_bytes(m_graph->tensors()[static_cast<size_t>(t)], m_cfg.precision); }
    /// The L3 key of the tile at `local` of `tensor` (-1: a value of no tensor).
    static uint64_t tile_key(int32_t tensor, uint64_t local) { return owned_tile_key(tensor, local); }
    static constexpr uint64_t kWhole = 0xA11;  ///< the `local` of a tensor resident as a whole
    static uint64_t whole_key(int32_t tensor) { return tile_key(tensor, kWhole); }
    void insert_whole(int32_t tensor, int64_t bytes) { m_l3.insert(whole_key(tensor), bytes, tensor, kWhole); }
    bool has_whole(int32_t tensor) { return m_l3.hit(whole_key(tensor), tensor, kWhole); }
    /// has_whole() as a query that changes nothing (TileBuffer::holds()).
    bool holds_whole(int32_t tensor) const { return tensor >= 0 && m_l3.holds(whole_key(tensor)); }
    /// Adds to `key` what both memo keys hold: the next operator's weights (appended to the
    /// slots), when the slots' prefetched tensors arrive and the DRAM's state, relative to now.
    void add_memo_common(const OpGraph& graph, MemoKey& key);
    /// The operator that follows each in dispatch order (for weight prefetch), built once.
    void next_ops(const OpGraph& graph);
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
    int64_t fetch_panel(uint64_t key, uint64_t local, int64_t bytes, int32_t tensor, double& ready_ps);

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
    std::unordered_map<uint64_t, KpuMapping> m_mappings;  ///< mapping_for()'s, by GEMM shape and resident operands
    std::vector<BlockOrder> m_orders;                     ///< the current kernel's, by GEMM index (mapping_of())
};

}  // namespace archsim
