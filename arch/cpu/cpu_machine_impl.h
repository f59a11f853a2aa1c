#pragma once
// The CPU machine's class, shared by its source files: cpu_machine.cpp (construction, kernel
// memoization, tensor layout, set sampling), cpu_gemm.cpp (blocked GEMMs) and cpu_stream.cpp
// (memory-bound kernels). No other part includes it: the CPU is created through cpu_machine.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "arch/common/broadcast.h"
#include "arch/common/dram_port.h"
#include "arch/common/machine_base.h"
#include "arch/common/run_bytes.h"
#include "arch/cpu/blocking.h"
#include "arch/cpu/blocking_search.h"
#include "arch/cpu/core_schedule.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_core.h"
#include "arch/cpu/repeat_replay.h"
#include "arch/cpu/shared_l3.h"
#include "arch/cpu/steady_loop.h"
#include "arch/cpu/stream_plan.h"
#include "arch/cpu/tensor_layout.h"
#include "arch/cpu/unit_replay.h"
#include "arch/power/power_limit.h"

namespace archsim {

constexpr uint64_t kTensorBase = 1ull << 30;      // activations and weights from here up
constexpr uint64_t kPackedB = 1ull << 46;         // the shared packed B panel, then each core's packed A block (packed_a())
constexpr uint64_t kPackedLarge = kPackedB + (1ull << 44);  // the same for a searched blocking larger than the config's
constexpr uint64_t kVectorChunkBytes = 64 * 1024; // a core streams a memory-bound kernel in chunks of this

/// The CPU model. Contractions run as BLIS-style blocked GEMMs (blocking.h) split over the cores:
/// per (nc, kc) panel the cores pack B together (unless the weights are prepacked), then each runs
/// its share of the mc-row blocks (rows divided evenly, as BLIS does), packing A where it is
/// reused and running mr x nr micro-kernels; barriers between the phases, as in BLIS. Every line
/// a block touches (packing reads and writes, micro-panel reads, C tile updates) goes through the
/// core's simulated L1d and L2 and the shared L3; misses decide the time. A block takes
/// pack + max(MACs / (rate x efficiency.gemm), L2 -> L1 fills at l2.bytes_per_cycle x
/// efficiency.cache, its L3 and DRAM transaction's completion): the micro-kernel overlaps its
/// operand streams with compute (hardware prefetch), packing does not. Memory-bound operators
/// stream their tensors through the same hierarchy in 64 KiB chunks per core at the SIMD rate x
/// efficiency.vector. Convolutions run as direct convolutions on their GEMM view, as oneDNN does:
/// the micro-kernel reads the input in place (no im2col copy; the kh x kw taps of an output pixel
/// map onto that pixel's channel lines, so halos between blocks are not modeled); depthwise
/// convolutions run as direct memory-bound kernels. Weights are in panel layout from load time
/// (gemm.prepacked_weights), except in kernels the runtime sends to the system BLAS (Operator::blas),
/// which packs both operands at every call at core.blas_pack_bytes_per_cycle, on Operator::threads
/// cores; kernels it runs in the framework's scalar reference code (KernelPath::Reference) take
/// core.reference_cycles_per_op per operation. Partial sums between kc slices are kept in C at the output's element
/// size. Each operator pays core.op_overhead_us (dispatch, fork/join) first. Elementwise operators
/// consuming a kernel's only output fuse into it (oneDNN post-ops) when fusion.elementwise is set.
/// Tensors live where TensorLayout puts them. Fast paths (off under `run --reference`): repeated
/// instances (a transformer's layers) replayed from the first kernel whose caches meet it as they
/// met the same kernel one instance before (repeat_replay.h; exact), a kernel's repeated loop
/// units (batched GEMM instances, mc-row blocks, streaming chunks) replayed per core once its
/// private caches repeat (unit_replay.h; exact), GEMM loops fast-forwarded once they repeat
/// (steady_loop.h), and kernels spanning at least sampling.min_kernel_l3s L3s simulated on one
/// cache set in sampling.sets_per_sample (set_sample.h, choose_sampling()).
class CpuMachine : public MachineBase {
public:
    CpuMachine(const CpuConfig& cfg, TraceWriter& trace);

    uint64_t units_replayed() const override { return m_units->units_replayed(); }
    std::string approximations() const override;

    std::string not_modeled() const override;

protected:
    // ---- kernel memoization: whole repeated instances (repeat_replay.h) -------------------------
    bool memo_epilogues() const override { return true; }
    bool memo_state(const Operator& op, const OpGraph& graph, const std::vector<int32_t>&, MemoKey& key) override;
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override;
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps, bool) override;
    void memo_kept(bool kept) override { m_replay->kept(kept); }

    void begin_op(const Operator& op, const OpGraph& graph, Route r) override;
    void end_op(const Operator&, const OpGraph&, Route) override { sim_wait_until_ps(m_sched->end_ps()); }
    void contraction(const Operator& op, const OpGraph& graph) override;
    /// Each GEMM's blocking as the run table shows it ("mc 444 kc 512 nc 4096"), with its
    /// mapspace and the blockings priced when the mapping search chooses it (searching()).
    std::optional<OpMapping> mapping_of(const Operator& op, const OpGraph& graph, Route r) override;
    void streaming(const Operator& op, const OpGraph& graph) override { stream_kernel(op, graph, op.inputs, true); }
    /// A post-op of its producer (oneDNN): reads only its other inputs.
    void fused_epilogue(const Operator& op, const OpGraph& graph) override { stream_kernel(op, graph, epilogue_side_inputs(op), false); }

private:
    // ---- graph facts --------------------------------------------------------------------------
    int64_t bytes_of(const Tensor& t) const { return run_bytes(t, m_cfg.precision); }
    /// Byte address of tensor `t` (TensorLayout).
    uint64_t base(int32_t t, const OpGraph& g) { return layout(g).base(t); }
    /// The address plan of `g` (made on first use, with the repeat replay that relies on it).
    TensorLayout& layout(const OpGraph& g);

    // ---- repeated loop units (unit_replay.h) ---------------------------------------------------
    bool replay_units() const { return memoize() && m_cfg.replay_units; }
    /// The lines the kernel now running simulates (set_sample.h): all of them unless it is set-sampled.
    SetSample sample_in_force() const { return m_sampling ? m_sample : SetSample::none(); }
    /// Whether GEMM view `g`'s units can be loop units: not a convolution read through implicit
    /// im2col, whose rows of A overlap (its last rows reach past the tensor, into bytes that are
    /// not A's and do not move with it).
    static bool even_rows(const GemmView& g) { return g.a_unique_elems <= 0 || g.a_unique_elems >= g.m * g.k; }
    /// Begins a loop over the instances (batch entries x groups) of `g` on the first `cores`
    /// cores, if its operands move by the same bytes from one instance to the next (A and C
    /// always; B unless it is a weight shared by every instance). False: no loop (a grouped
    /// weight over several batch entries moves back at every entry).
    bool begin_instance_loop(const OpGraph& graph, const GemmView& g, int64_t cores);

    // ---- kernels ------------------------------------------------------------------------------
    /// One GEMM instance (batch entry x group) of GEMM view `g`, blocked and split over the first
    /// `cores` cores. `blas`: the system BLAS's driver, which packs both operands at every call
    /// (whatever their shape, weights included) at core.blas_pack_bytes_per_cycle.
    void gemm(const OpGraph& graph, const GemmView& g, int64_t inst, int64_t cores, bool blas);
    /// Every repeat step and instance of GEMM view `g` (gemm()), a batched view's instances
    /// replayed as loop units where they move uniformly.
    void gemm_view(const OpGraph& graph, const GemmView& g, int64_t cores, bool blas);
    /// The cores `op` runs on (its thread count, at most the machine's).
    int64_t op_cores(const Operator& op) const { return op.threads > 0 ? std::min<int64_t>(op.threads, m_cfg.cores) : m_cfg.cores; }

    /// A memory-bound kernel: every core streams its share of `inputs` and
    /// outputs through its caches in chunks (stream_plan.h: broadcast operands such as a bias
    /// read whole), computing at the SIMD rate x efficiency.vector.
    void stream_kernel(const Operator& op, const OpGraph& graph, const std::vector<int32_t>& inputs, bool write_outputs);

    /// Bytes operator `op` reads and writes (its tensors' run sizes).
    uint64_t op_bytes(const Operator& op, const OpGraph& graph) const {
        uint64_t bytes = 0;
        for (const auto* list : {&op.inputs, &op.outputs})
            for (const int32_t t : *list)
                if (t >= 0) bytes += static_cast<uint64_t>(std::max<int64_t>(0, bytes_of(graph.tensors()[static_cast<size_t>(t)])));
        return bytes;
    }
    /// Whether `op` runs under cache set sampling (see choose_sampling()).
    bool samples(const Operator& op, const OpGraph& graph) const {
        bool even = true;  // every line of a GEMM operand reused as often as its neighbours
        for (const GemmView& g : op.cost.gemms) even &= even_rows(g);
        const bool big = static_cast<double>(op_bytes(op, graph)) >= m_cfg.sample_min_l3s * static_cast<double>(m_cfg.l3.bytes());
        return memoize() && m_sample.active() && big && even;
    }
    /// Stores every cache's sets grouped by residue modulo the sampling modulus
    /// (Cache::group_sets: storage only, faster where most kernels run set-sampled, slower
    /// where they stream every set) when operators run under sampling move at least half of
    /// graph `g`'s bytes.
    void choose_set_storage(const OpGraph& g);

    /// Steady-state fast-forward (steady_loop.h) is one of the fast paths `--reference` turns off;
    /// it needs every line simulated (its windows compare exact L1 counts), so not under sampling.
    bool fast_forward() const { return memoize() && !m_sampling; }

    /// Cache set sampling (CpuCore::set_sampling), a fast path for kernels whose tensors span at
    /// least sampling.min_kernel_l3s L3 capacities: one set in m_sample.weight() of every cache
    /// is simulated. The sampled sets see exactly the accesses they would see in full simulation;
    /// the estimate is off where the other sets' accesses differ from theirs: a kernel near a
    /// capacity (some sets hit, others miss), or lines reused unevenly with a period of a few
    /// lines (a convolution's implicit im2col reads the lines where kc slices overlap more often
    /// than others), which is why such convolutions are never sampled. On leaving sampling the
    /// other sets are refilled from the sampled ones (Cache::replicate_sets).
    void choose_sampling(const Operator& op, const OpGraph& graph);

    // ---- GEMM blocking (blocking.h, blocking_search.h) ------------------------------------------
    /// Whether GEMM blockings are searched: gemm.blocking = "search" or `run --mapper search`
    /// (never under `--mapper fixed`).
    bool searching() const { return mapper() != Mapper::Fixed && (mapper() == Mapper::Search || m_cfg.blocking_search); }
    /// The search's view of GEMM view `g` on `cores` cores.
    CpuGemmShape gemm_shape(const GemmView& g, int64_t cores, bool blas) const;
    /// The fitted blocking of `g` on `cores` cores: the analytical one (m_block) or, when
    /// searching(), search_blocking()'s, found once per shape (m_searched).
    Blocking blocking_for(const GemmView& g, int64_t cores, bool blas);
    /// The blocking search for GEMM view `g` of `op`, once per shape (m_searched):
    /// search_blocking()'s branch and bound on the block-level model picks the best variant of
    /// the analytical blocking; when that is another blocking, the machine's own model decides
    /// between the two: each runs as a trial (trial()) from the state where the shape first
    /// runs, and the other is kept only if it is faster there without more DRAM traffic.
    const CpuBlockingChoice& searched(const Operator& op, const OpGraph& graph, const GemmView& g, int64_t cores, bool blas);
    /// What GEMM view `g` of `op` takes from the machine's present state with blocking `b` (its
    /// sampling mode chosen as begin_op would, every core starting now): simulated as the kernel
    /// would be, with the trace muted, then every cache, the DRAM, the cores' schedule and the
    /// fast-path statistics put back as they were.
    struct Trial {
        double ps = 0;            ///< until its last core is done
        uint64_t dram_bytes = 0;  ///< DRAM bytes served meanwhile
    };
    Trial trial(const Operator& op, const OpGraph& graph, const GemmView& g, int64_t cores, bool blas, const Blocking& b);
    const Blocking* m_trial_blocking = nullptr;  ///< the blocking a trial runs (trial()), else null
    /// The key of GEMM view `g` on `cores` cores for m_searched.
    uint64_t shape_key(const GemmView& g, int64_t cores, bool blas) const;

    /// Where the packed buffers of a GEMM blocked as `b` lie: the config's blocking (m_block)
    /// lays them out from kPackedB, and a searched blocking whose panel and blocks fit that
    /// layout uses it too; a larger one gets a layout of its own sizes from kPackedLarge, so that
    /// no two buffers overlap and the config's blocking keeps its addresses.
    const Blocking& pack_layout(const Blocking& b) const {
        const bool fits = b.kc * b.nc <= m_block.kc * m_block.nc && b.mc * b.kc <= m_block.mc * m_block.kc;
        return fits ? m_block : b;
    }
    /// The shared packed B panel of a GEMM blocked as `b`.
    uint64_t packed_b(const Blocking& b) const { return &pack_layout(b) == &m_block ? kPackedB : kPackedLarge; }
    /// Core `c`'s packed A buffer for a GEMM blocked as `b`: the buffers lie back to back after
    /// the packed B panel, each as large as the layout's blocking allows (fit_blocking and the
    /// row split only shrink it), so together they spread over the L3's sets as
    /// choose_blocking() assumes (buffers 2^32 apart all began in L3 set 0: 96 lines in a 16-way
    /// set, whose conflict misses grew with l1d.kib and l3.kib). Each starts at set 0 of the
    /// private L1 and L2 (sizes rounded up to a multiple of both caches' way spans), so its
    /// place in them does not move with the blocking.
    uint64_t packed_a(int64_t c, const Blocking& b) const {
        const Blocking& l = pack_layout(b);
        const uint64_t e = static_cast<uint64_t>(operand_bytes(m_cfg.precision));
        const uint64_t span = std::lcm(static_cast<uint64_t>(m_cfg.l1.bytes() / m_cfg.l1.ways), static_cast<uint64_t>(m_cfg.l2.bytes() / m_cfg.l2.ways));
        auto spans = [&](uint64_t bytes) { return (bytes + span - 1) / span * span; };
        const uint64_t b_panel = spans(static_cast<uint64_t>(l.kc * l.nc) * e);
        return packed_b(b) + b_panel + static_cast<uint64_t>(c) * spans(static_cast<uint64_t>(l.mc * l.kc) * e);
    }

    CpuConfig m_cfg;
    Blocking m_block;
    std::unordered_map<uint64_t, CpuBlockingChoice> m_searched;  ///< searched(), by GEMM shape
    std::unique_ptr<DramPort> m_dram;
    std::unique_ptr<SharedL3> m_l3;
    std::vector<std::unique_ptr<CpuCore>> m_cores;
    std::unique_ptr<CoreSchedule> m_sched;
    StallCauseId m_launch = 0;
    bool m_sampling = false;      ///< the kernel now running is set-sampled (m_sample)
    SetSample m_sample;           ///< the lines a sampled kernel simulates
    uint64_t m_sampled_ops = 0;   ///< operators run under sampling
    FastForwardStats m_ff;        ///< what steady-state fast-forward skipped
    /// What a recorded kernel changed beyond the caches (its replay applies it).
    struct KernelChange {
        DramPort::MemoState dram;
        uint64_t sampled_ops = 0;
        FastForwardStats ff;
    };
    uint64_t m_sampled_from = 0;  ///< m_sampled_ops and m_ff at the keyed kernel's start
    FastForwardStats m_ff_from;
    const OpGraph* m_layout_of = nullptr;
    std::unique_ptr<TensorLayout> m_layout;
    std::unique_ptr<RepeatReplay> m_replay;
    std::unique_ptr<UnitReplay> m_units;  ///< replays a kernel's repeated loop units per core
};

}  // namespace archsim
