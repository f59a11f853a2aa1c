#pragma once
// What every machine model shares above its mapper: operator-class dispatch and fusion decided
// in one place, its recorder and clock, and the facts the engine asks of a machine.
#include <cstdint>
#include <optional>
#include <string>

#include "arch/common/clock.h"
#include "arch/common/kernel_memo.h"
#include "arch/common/kernel_repeats.h"
#include "arch/common/recorder.h"
#include "arch/power/power_controller.h"
#include "sim/base/precision.h"
#include "arch/common/machine.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

/// How an operator runs on a machine.
enum class Route : uint8_t {
    Skip,           ///< a view (Reshape, ...) or an operator imported unsupported: no time, no traffic
    FusedEpilogue,  ///< elementwise work done in its producer's epilogue (reads only its other inputs)
    Contraction,    ///< a GEMM view on the machine's MAC array / tensor cores / blocked GEMM
    Streaming,      ///< a bandwidth-bound kernel: elementwise, reductions, pooling, copies, thin convolutions
    Attention,      ///< a fused attention kernel of an execution plan (OpCost::attention)
};

/// Which of the machine-independent routes a machine takes (its config decides).
struct RoutingRules {
    /// Elementwise operators fuse into their producer (arch/common/fusion.h) when true.
    bool fuse_elementwise = false;
    /// Depthwise-like convolutions (fewer than 8 filters per group) stream instead of tiling.
    bool thin_grouped_conv_streams = false;
    /// GEMMs with at most this many rows (every GEMM of the operator) stream their weights
    /// (GEMV / split-K kernels); 0 = never.
    int64_t gemv_max_rows = 0;
};

/// The route `op` takes under `rules`.
Route route(const Operator& op, const OpGraph& graph, const RoutingRules& rules);

/// The tensors a fused epilogue still reads: every input but the one its producer hands over in
/// registers (the first, by the fusion rule of arch/common/fusion.h); omitted inputs left out.
std::vector<int32_t> epilogue_side_inputs(const Operator& op);

/// The epilogue of a contraction kernel of an execution plan as an elementwise operator: its
/// arithmetic (the kernel's FLOPs beyond 2 x MACs), a first input handed over in registers (-1)
/// and as further inputs what the kernel reads besides its GEMM operands (a bias, a residual, a
/// batch-norm's scale). Empty inputs beyond the first when it reads nothing else.
Operator epilogue_of(const Operator& kernel);

/// Base of the machine models: execute() routes each operator to one of the hooks below, after
/// stamping the recorder with its index. On an execution plan (graph.runtime() set) the runtime
/// has fused already: no operator is routed to a producer's epilogue, and a contraction kernel's
/// side inputs go to fused_epilogue() after its GEMMs. A model implements contraction() and streaming() (and
/// fused_epilogue() if it fuses), optionally around begin_op()/end_op(); everything else here.
class MachineBase : public Machine {
public:
    /// @param clock_mhz       the clock "cycles" in reports refer to (cycle = 1e6 / clock_mhz ps)
    /// @param static_w        static power over the whole run, W
    /// @param precision_name  the run's operand precision ("int8", ...)
    MachineBase(TraceWriter& trace, double clock_mhz, double static_w, std::string precision_name, RoutingRules rules)
        : m_rec(trace, clock_mhz * 1e6), m_clock(1e6 / clock_mhz), m_static_w(static_w), m_precision_name(std::move(precision_name)),
          m_rules(rules) {}

    void execute(uint32_t op_index, const Operator& op, const OpGraph& graph) final;
    double clock_hz() const final { return m_rec.clock_hz(); }
    double static_power_w() const final { return m_static_w; }
    std::string precision() const final { return m_precision_name; }
    uint16_t op_component() const final { return m_op_component; }
    void set_memoize(bool on) final { m_memoize = on; }
    void set_mapper(Mapper m) final { m_mapper = m; }
    uint64_t memo_hits() const final { return m_memo.hits; }
    uint64_t memo_misses() const final { return m_memo.misses; }
    void end_of_run() override;

protected:
    /// Puts the run under a power controller (arch/power/power_controller.h) acting at operator
    /// boundaries: it lowers the clock, through set_clock_mhz(), whenever a window's power
    /// exceeds spec.limit_w, records each operator's clock and voltage factor in the trace, and
    /// the power timeline, peak and unthrottled power at the end. Call from the most-derived
    /// constructor (it may call set_clock_mhz() at once when the spec starts below nominal).
    void enable_power(const PowerSpec& spec);
    /// Runs everything from now on at `mhz`: a model under a power controller overrides it.
    virtual void set_clock_mhz(double mhz) {}
    /// Whether the fast paths are on (set_memoize(); off under `run --reference`).
    bool memoize() const { return m_memoize; }
    /// How kernels are mapped (set_mapper(); Auto unless `run --mapper` says otherwise).
    Mapper mapper() const { return m_mapper; }
    /// The mapping a model with a mapping search chose for `op` (routed along `r`), for the
    /// trace's op_mappings table and the report: called for every operator that is not skipped,
    /// replayed or simulated, before its kernel runs, so every kernel of the same shapes must get
    /// the same choice (a replay reports what simulating would): a choice depends on the shapes
    /// and the config, or is made once per shape (the CPU's blocking search tries its candidates
    /// on the machine's state where the shape first runs) and kept. nullopt (the default): no
    /// mapping to report.
    virtual std::optional<OpMapping> mapping_of(const Operator& op, const OpGraph& graph, Route r) { return std::nullopt; }
    /// Before the operator's kernel (skipped operators get no call).
    virtual void begin_op(const Operator& op, const OpGraph& graph, Route r) {}
    /// Runs a contraction's GEMM views.
    virtual void contraction(const Operator& op, const OpGraph& graph) = 0;
    /// Runs a bandwidth-bound kernel.
    virtual void streaming(const Operator& op, const OpGraph& graph) = 0;
    /// Runs a fused attention kernel (op.cost.attention). A model without a fused-attention cost
    /// model keeps this default, which refuses the kernel with a UserError naming the runtime pass.
    virtual void attention(const Operator& op, const OpGraph& graph);
    /// Runs elementwise work in its producer's epilogue: an operator fused into its producer
    /// (rules.fuse_elementwise), or the epilogue of a contraction kernel of an execution plan
    /// (epilogue_of()). Its first input arrives in registers; epilogue_side_inputs() it reads.
    virtual void fused_epilogue(const Operator& op, const OpGraph& graph) {}
    /// After the operator's kernel.
    virtual void end_op(const Operator& op, const OpGraph& graph, Route r) {}

    // ---- kernel memoization (arch/common/kernel_memo.h) ---------------------------------------
    // A kernel whose signature (add_kernel_signature) and machine state, as memo_state() describes
    // it, equal those of a kernel already simulated is replayed: its recorded events (or their
    // sums) are emitted shifted to now, time advances by its recorded span, and memo_restore()
    // applies its recorded state change. The replay is exact when memo_state() adds everything
    // of the machine's state that the kernel's timing, events and state change depend on, in
    // terms relative to the kernel (its tensors by slot, times relative to its start); each
    // event's time may differ by the rounding of the clock's period to whole ps (< 1 ps).
    /// Adds to `key` the state a kernel starting now depends on; false: simulate it (the default,
    /// for a model that does not describe its state). `slots` are the kernel's tensors (kernel_slots()).
    virtual bool memo_state(const Operator& op, const OpGraph& graph, const std::vector<int32_t>& slots, MemoKey& key) { return false; }
    /// A looser key, tried when no kernel recorded under memo_state()'s key may be replayed: a
    /// model whose state takes many layers to repeat exactly (the KPU's L3 holds older layers'
    /// tiles) keys what the kernel reads directly and checks the rest in memo_replayable() with
    /// `exact` false; false (the default): no looser key.
    virtual bool memo_loose_state(const Operator& op, const OpGraph& graph, const std::vector<int32_t>& slots, MemoKey& key) {
        return false;
    }
    /// After a recorded kernel ended at `end_ps`: its state change, in the terms memo_restore() takes.
    virtual std::any memo_save(const Operator& op, const OpGraph& graph, const std::vector<int32_t>& slots, double end_ps) { return {}; }
    /// Applies a recorded state change to a replay of `op` that ends at `end_ps` (`exact`: found
    /// under memo_state()'s key; else under memo_loose_state()'s, after memo_replayable()).
    virtual void memo_restore(const std::any& change, const Operator& op, const OpGraph& graph, const std::vector<int32_t>& slots,
                              double end_ps, bool exact) {}
    /// True for a model whose kernels start and end on cycle boundaries of m_clock (TPU, KPU): a
    /// replay then lasts the recorded number of cycles; otherwise the recorded ps.
    virtual bool cycle_timed() const { return false; }
    /// Whether the recorded kernel whose state change is `change`, lasting `dur_ps`, may be replayed
    /// from `start_ps`: a model whose state changes at times of its own (the GPU's power
    /// controller at the end of its window) says no when that would fall inside the replay.
    /// Called just before memo_restore(); `exact` as there. The default: always.
    virtual bool memo_replayable(const std::any& change, double start_ps, uint64_t dur_ps, bool exact) { return true; }

    /// Whether operators fused into their producer (Route::FusedEpilogue) go through memo_state()
    /// too. The default, false: they are always simulated, as their work depends on the graph
    /// around them; a model that memoizes whole repeated instances (kernel_repeats()) says true.
    virtual bool memo_epilogues() const { return false; }
    /// After a simulated kernel was keyed and recorded: whether its record was kept (false when
    /// the machine gave no state change or the memo's event budget was spent).
    virtual void memo_kept(bool kept) {}

    /// The repeated stretches of `graph`'s kernel sequence (execution order, every operator a
    /// kernel, skipped ones included), kernels compared by route and add_kernel_signature();
    /// computed on first use. Regions have at least 3 instances.
    const KernelRepeats& kernel_repeats(const OpGraph& graph);
    /// Operator `op_index`'s position in the execution order (kernel_repeats()' positions).
    size_t kernel_position(const OpGraph& graph, uint32_t op_index) {
        kernel_repeats(graph);
        return m_position[op_index];
    }

    /// Calls `f(gemm_index, view)` for every GEMM view of `op` with work in it.
    template <class F>
    static void for_each_gemm(const Operator& op, F&& f) {
        for (size_t gi = 0; gi < op.cost.gemms.size(); ++gi) {
            const GemmView& g = op.cost.gemms[gi];
            if (g.m > 0 && g.n > 0 && g.k > 0) f(gi, g);
        }
    }

    Recorder m_rec;
    CycleClock m_clock;
    uint16_t m_op_component = 0;  ///< where the engine records operator spans (set by the model)

private:
    /// Runs `op` along route `r` (the hooks above).
    void run(const Operator& op, const OpGraph& graph, Route r);
    /// Memoized execution: replays a recorded kernel or simulates and records it; false when the
    /// machine cannot describe its state for this kernel.
    bool run_memoized(uint32_t op_index, const Operator& op, const OpGraph& graph, Route r);

    bool m_memoize = false;
    Mapper m_mapper = Mapper::Auto;
    KernelMemo m_memo;
    const OpGraph* m_repeats_of = nullptr;  ///< the graph m_repeats describes
    KernelRepeats m_repeats;
    std::vector<size_t> m_position;         ///< execution position by operator index
    uint64_t m_memo_events = 0;  ///< events held by m_memo's entries
    double m_static_w;
    std::unique_ptr<PowerController> m_power;  ///< null: no power control or timeline
    std::string m_precision_name;
    RoutingRules m_rules;
};

}  // namespace archsim
