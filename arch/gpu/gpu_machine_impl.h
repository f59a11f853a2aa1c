#pragma once
// The GPU machine's class, shared by its source files: gpu_machine.cpp (construction, kernel
// memoization, streaming kernels, launches and CTA waves), gpu_gemm.cpp (GEMM kernels),
// gpu_stream_k.cpp (a GEMM's stream-K wave) and gpu_attention.cpp (fused attention, forward and
// backward). No other part includes it: the GPU is created through gpu_machine.h.
#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arch/common/buffer_memo.h"
#include "arch/common/dram_port.h"
#include "arch/common/machine_base.h"
#include "arch/common/run_bytes.h"
#include "arch/gpu/cta_mapper.h"
#include "arch/gpu/flash_attention.h"
#include "arch/gpu/gpu_config.h"
#include "arch/gpu/l2_cache.h"
#include "arch/gpu/sm_port.h"
#include "traces/trace_writer.h"
#include "sim/base/hash.h"

namespace archsim {

/// The row length of a layer normalization kernel, elements: an ONNX LayerNormalization, or a
/// runtime's fused LayerNorm / Residual+LayerNorm kernel (the names workloads/lowering/
/// fusion_passes.cpp gives them), normalizing the last axis of its output; 0 for any other operator.
int64_t layer_norm_row(const Operator& op, const OpGraph& graph);

/// The GPU: every operator becomes zero or more kernels. A kernel starts after the launch gap;
/// a GEMM-like kernel runs its CTAs in waves over the SMs (CTA tile, occupancy and waves from
/// cta_mapper.h); each CTA loads its A and B tiles through the contended L2 (misses go to DRAM),
/// runs its main loop on the tensor cores (or CUDA cores) and stores its C tile. A CTA lasts
/// max(main-loop MMA time, its loads' completion) because the multistage pipeline overlaps the
/// two; the wave ends with its slowest CTA. Memory-bound kernels move their bytes through L2/DRAM
/// at the bandwidth the targets give and compute on the CUDA cores. Elementwise operators that
/// consume a kernel's single output fuse into its epilogue when fusion.elementwise is set.
class GpuMachine : public MachineBase {
public:
    GpuMachine(const GpuConfig& cfg, TraceWriter& trace);

protected:
    // ---- kernel memoization (arch/common/kernel_memo.h) ---------------------------------------
    // What a kernel depends on beyond its signature: the SM clock (the power controller's, which
    // changes only between operators), the L2's contents in LRU order (tiles of the kernel's
    // tensors by slot and place, others by size), when the L2 and each SM port are next free and
    // the DRAM's state, all relative to the kernel's start. The L2 keeps older layers' tiles, so its exact contents repeat late: as on the KPU, a looser
    // key keeps only which of the kernel's tiles it holds, and a replay under it first runs the
    // recorded kernel's L2 lookups and inserts (its journal) on a copy of the L2.
    struct MemoChange {
        BufferMemo::Record l2;
        double l2_busy_after_ps = 0;
        std::vector<double> port_busy_after_ps;
        uint64_t l2_hits = 0, l2_misses = 0;
        DramPort::MemoState dram;
    };
    bool memo_state(const Operator&, const OpGraph&, const std::vector<int32_t>& slots, MemoKey& key) override;
    bool memo_loose_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) override;
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override;
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps,
                      bool exact) override;
    bool memo_replayable(const std::any& change, double, uint64_t, bool exact) override;

    /// A contraction's kernels as choose_kernel picks them (cta_mapper.h: the CTA tile, split-K
    /// and raster order, searched with the kernel's cost estimate whatever --mapper says, as a
    /// library's heuristics pick them): the choice, the mapspace and the plans priced, per GEMM.
    std::optional<OpMapping> mapping_of(const Operator& op, const OpGraph& graph, Route r) override;
    void contraction(const Operator& op, const OpGraph&) override {
        for_each_gemm(op, [&](size_t gi, const GemmView& g) {
            for (int64_t rep = 0; rep < g.repeat; ++rep) gemm_kernel(g, gi, rep);
        });
    }
    /// A fused epilogue (bias, activation, residual, ...) still does its arithmetic and reads its
    /// operators' other inputs (a residual for an Add, a scale for a Mul; scalars live in
    /// registers). Its operations run on every SM's CUDA cores (one per core per cycle) after the
    /// producer's main loops, as CUTLASS 2.x epilogues do on Ampere; the side inputs stream
    /// through L2 meanwhile.
    void fused_epilogue(const Operator& op, const OpGraph& graph) override;
    /// A fused attention kernel as FlashAttention-2 runs it (flash_attention.h): per wave, each CTA
    /// loads its Q tile and streams its head's K and V blocks through L2 (the head's other query
    /// tiles hit), only those up to its diagonal under a causal mask, runs its MMAs and softmax,
    /// and stores its O tile; no score reaches L2. The trace's MACs are those executed (a causal
    /// kernel skips the masked blocks, so fewer than the graph's).
    void attention(const Operator& op, const OpGraph& graph) override;
    /// A fused attention backward kernel as FlashAttention-2 runs it (flash_attention.h,
    /// FlashBwdPlan), three launches: the pre-kernel reads O and dO per query tile and writes
    /// rowsum(dO O) (4 bytes per row); per wave, each CTA loads its K and V tiles, and per query
    /// tile it meets loads Q, dO (the head's other CTAs hit in L2) and the row statistics
    /// (logsumexp and the rowsum, 8 bytes per row), runs its MMAs and elementwise work, and adds
    /// its dQ tile into the fp32 accumulator (atomics, in L2); then it stores dK and dV; the
    /// post-kernel reads the accumulator and writes dQ. No score reaches L2.
    void attention_backward(const Operator& op, const OpGraph& graph);
    /// Bandwidth-bound kernel: inputs through L2 (a tensor still resident from its producer hits),
    /// arithmetic on the CUDA cores (one operation per core per cycle), outputs stored through L2.
    void streaming(const Operator& op, const OpGraph& graph) override;

private:
    int64_t bytes_of(const OpGraph& g, int32_t t) const { return run_bytes(g.tensors()[static_cast<size_t>(t)], m_cfg.precision); }
    /// A stall of the whole GPU for `dur_ps` from `from_ps`. Its cycles round a half cycle down
    /// (the duration less one part in 1e12): a duration that is a whole number of cycles and a
    /// half, computed from absolute times, would otherwise round up or down with the last bit of
    /// where the kernel started, and a memo replay (which starts the same kernel elsewhere) would
    /// count one cycle more or less than simulating it.
    void stall(double from_ps, double dur_ps, uint32_t seq, StallCauseId cause) {
        m_rec.emit(EventKind::Stall, m_gpu, ps_span(from_ps, dur_ps), {0, 0, m_clock.cycles_of(dur_ps * (1.0 - 1e-12))}, seq, cause);
    }
    /// The power controller's clock (MachineBase::enable_power): the SMs' main loops, epilogues
    /// and L2 latency run at it; the L2, the SM ports and HBM keep their rates. Cycles in the
    /// trace stay counted at the nominal clock.
    void set_clock_mhz(double mhz) override { m_cfg.clock_mhz = mhz; }
    void launch();
    /// A fused attention kernel's `ctas` CTAs, `ctas_per_sm` to an SM (the plan's occupancy,
    /// flash_attention.h), scheduled as the block scheduler does: a CTA starts on the first slot
    /// (SM x ctas_per_sm) that frees, with no barrier between waves, so a causal kernel's short
    /// CTAs (query tiles near the diagonal) make room for the next ones instead of waiting for
    /// the wave's longest. `cycles(c, sharing)`: CTA c's time, cycles, with `sharing` CTAs on its
    /// SM (min(ctas_per_sm, ceil(ctas / SMs)) throughout: the tail's SMs are not given back their
    /// idle share); `load(c, sm, issue_ps)`: issues its loads `issue_ps` after the kernel's
    /// start, returns when they are in (absolute, ps); `finish(c, sm, sm_index, span, end,
    /// compute_cycles)`: emits its events over `span` (`compute_cycles`: the kernel's span with
    /// no operand waits, on CTA 0, else 0) and issues its stores at `end`, returns when they are
    /// done. A CTA ends at the later of its loads and the L2 latency plus its time; events are
    /// taken in time order, so each SM port and the L2 see their requests in time order. The
    /// kernel's end beyond the schedule without operand waits is an operand_load stall, stores
    /// still draining after the last CTA a write_drain stall.
    void cta_waves(int64_t ctas, int64_t ctas_per_sm, const std::function<double(int64_t, int64_t)>& cycles,
                   const std::function<double(int64_t, SmPort&, double)>& load,
                   const std::function<double(int64_t, SmPort&, size_t, const Span&, double, uint64_t)>& finish);
    /// Every SM moves an equal share of `bytes` of tensor `t` (tile `tile`) through its own port,
    /// issued `issue_ps` after now (a store when `store`); returns when the last lands, ps. The
    /// shares cover the fraction [lo, hi) of the tensor's rows, in SM order (the part each load
    /// names, so the L2 counts what of it a producer left resident).
    double spread(TileId tile, int32_t t, int64_t bytes, bool store, double issue_ps, double lo = 0.0, double hi = 1.0);
    /// Input `t` of `op` read whole, spread over the SMs, issued now; returns when it lands, ps.
    double read_whole(const Operator& op, const OpGraph& graph, int32_t t);
    /// A streaming kernel's loads: each input once, issued now; returns when the last lands, ps.
    double stream_loads(const Operator& op, const OpGraph& graph);
    /// A layer normalization's loads (gpu_rows.cpp), rows of `row` elements: one CTA of
    /// kLayerNormWarps warps per row, as many rows in flight as the SMs hold such CTAs; each
    /// group of rows in flight reads its rows twice, the statistics pass (mean and variance,
    /// Welford) and then the normalizing pass, so the second read hits the L2 only while the
    /// group's rows fit it. Its weights and scalars are read once. Returns when the last lands, ps.
    double layer_norm_loads(const Operator& op, const OpGraph& graph, int64_t row);

    /// One GEMM kernel: CTAs in waves (cta_mapper.h picks the tile and the split-K). A CTA loads
    /// its A and B tiles for its K range and runs its main loop; fused epilogue arithmetic is
    /// timed by fused_epilogue(). With split-K the splits of a tile add into one fp32 partial sum
    /// in turn (CUTLASS GemmSplitKSerial's semaphore): each but the first waits for the one
    /// before to store it and reads it, each but the last stores it (a workspace tile, written
    /// back: it reaches DRAM only if evicted before its reader), the last writes C. A stream-K
    /// plan (--mapper search) runs its stream-K wave first (stream_k_wave), then its other tiles
    /// data-parallel, every wave loading in the same K chunks (stream_k_grid).
    void gemm_kernel(const GemmView& g, size_t gi, int64_t rep);
    /// A stream-K plan's first wave (gpu_stream_k.cpp; KernelPlan::sk_ctas): CTA x runs its
    /// segments (stream_k_segments) back to back, each loading its A rows and B columns over its
    /// iterations in the plan's K chunks (`grid`, stream_k_grid), all issued at the wave's start
    /// like a data-parallel wave's. A segment that does not start its tile stores an fp32 partial
    /// (workspace) when its main loop ends; the tile's owner (the segment that starts it) waits
    /// for every peer's store, reads the partials in turn and stores C (Osama et al. 2023,
    /// Algorithm 5). Raises kernel_end to its stores' completion; returns at the wave's end.
    void stream_k_wave(const GemmView& g, size_t gi, int64_t rep, const KernelPlan& plan, int64_t grid, double& kernel_end);
    /// The K chunks every wave of a stream-K plan loads its operands in: enough that the wave's
    /// tiles fit kOperandChunkBytes per chunk (operand_chunks, over the stream-K tiles and the
    /// first data-parallel wave) and at least min(k_iters, 8), so a segment that covers part of
    /// a tile's K loads about that part; the same chunks in every wave, so the data-parallel
    /// waves find in the L2 what the stream-K wave left there. At most min(k_iters, 32).
    int64_t stream_k_grid(const GemmView& g, const KernelPlan& plan) const;
    /// The places (TileId::local) of a CTA's operand tiles: A's row tile `bi` and B's column tile
    /// `bj` of GEMM instance `inst` (B shared by its group's instances when it is a weight, GEMM
    /// `gi` of the operator), K split `sk`, repeat `rep`.
    std::pair<uint64_t, uint64_t> operand_places(const GemmView& g, size_t gi, int64_t rep, int64_t inst, int64_t bi, int64_t bj,
                                                 int64_t sk) const;
    /// A CTA's (or stream-K segment's) events on SM `sm` over [start_ps, end_ps): its MACs
    /// (m x n x k) and `cycles` of compute (the wave's main loop on its first CTA, else 0),
    /// its operands through shared memory (written once, read once) and the register file.
    void cta_events(size_t sm, double start_ps, double end_ps, int64_t m, int64_t n, int64_t k, uint64_t cycles, uint32_t seq);
    /// Whether GEMMs search stream-K too (--mapper search; docs/machines/gpu.md).
    bool stream_k() const { return mapper() == Mapper::Search; }

    GpuConfig m_cfg;
    uint16_t m_gpu = 0, m_cuda = 0, m_smem = 0, m_rf = 0;
    StallCauseId m_launch = 0, m_operand_load = 0, m_write_drain = 0;
    std::vector<uint16_t> m_sm_comp;
    std::unique_ptr<DramPort> m_dram;
    std::unique_ptr<L2Cache> m_l2;
    std::vector<std::unique_ptr<SmPort>> m_sms;
    uint64_t m_memo_common = 0;  ///< the key part both memo keys hold
    BufferMemo m_l2_memo;        ///< the L2's tiles as the kernel memo sees them
    uint64_t m_memo_l2_hits = 0, m_memo_l2_misses = 0;
};

}  // namespace archsim
