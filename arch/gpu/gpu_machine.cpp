#include "arch/gpu/gpu_machine.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cmath>

#include "arch/gpu/cta_mapper.h"
#include "arch/gpu/gpu_config.h"
#include "arch/common/fusion.h"
#include "arch/common/run_bytes.h"
#include "arch/common/sim_time.h"
#include "arch/gpu/l2_cache.h"
#include "arch/memory/dma.h"
#include "sim/common/hash.h"
#include "arch/memory/dram.h"
#include "traces/trace_writer.h"
#include "workloads/graph/op_graph.h"

namespace archsim {

namespace {


/// One streaming multiprocessor's port to the shared L2: loads of CTA operand tiles and stores of
/// output tiles, one TLM transaction each (annotated with the tensor they belong to).
class Sm : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<Sm> socket;
    /// @param port_bytes_per_ps bandwidth of this SM's port to the L2
    Sm(sc_core::sc_module_name name, double port_bytes_per_ps)
        : sc_core::sc_module(name), socket("socket"), m_ps_per_byte(1.0 / port_bytes_per_ps) {}

    /// Sends a load (or store) of `bytes` at `issue_ps` after now through this SM's port;
    /// returns its absolute completion, ps: the later of the port's and the L2's.
    double access(uint64_t key, int64_t bytes, int32_t tensor, bool whole, bool store, double issue_ps = 0,
                  bool* missed = nullptr) {
        const double now = static_cast<double>(sc_core::sc_time_stamp().value());
        if (bytes <= 0) return now + issue_ps;
        const double port_start = std::max(now + issue_ps, m_port_free_ps);
        m_port_free_ps = port_start + static_cast<double>(bytes) * m_ps_per_byte;
        issue_ps = port_start - now;
        tlm::tlm_generic_payload p;
        TensorTag tag;
        tag.tensor = tensor;
        tag.whole = whole;
        p.set_extension(&tag);
        p.set_command(store ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
        p.set_address(key);
        p.set_data_ptr(nullptr);
        p.set_data_length(static_cast<unsigned>(std::min<int64_t>(bytes, 0x7fffffff)));
        p.set_streaming_width(p.get_data_length());
        sc_core::sc_time delay(issue_ps, sc_core::SC_PS);
        socket->b_transport(p, delay);
        p.clear_extension(&tag);
        if (missed) *missed = tag.missed;
        return std::max(m_port_free_ps, now + static_cast<double>(delay.value()));
    }

private:
    double m_ps_per_byte;
    double m_port_free_ps = 0;
};

/// The GPU: every operator becomes zero or more kernels. A kernel starts after the launch gap;
/// a GEMM-like kernel runs its CTAs in waves over the SMs (CTA tile, occupancy and waves from
/// cta_mapper.h); each CTA loads its A and B tiles through the contended L2 (misses go to DRAM),
/// runs its main loop on the tensor cores (or CUDA cores) and stores its C tile. A CTA lasts
/// max(main-loop MMA time, its loads' completion) because the multistage pipeline overlaps the
/// two; the wave ends with its slowest CTA. Memory-bound kernels move their bytes through L2/DRAM
/// at the bandwidth the targets give and compute on the CUDA cores. Elementwise operators that
/// consume a kernel's single output fuse into its epilogue when fusion.elementwise is set.
class GpuMachine : public Machine {
public:
    GpuMachine(const GpuConfig& cfg, TraceWriter& trace) : m_cfg(cfg), m_trace(trace) {
        const double hz = cfg.clock_mhz * 1e6;
        m_gpu = trace.add_component({"gpu", "gpu", 0, 0, 0, 0, hz});
        for (int64_t s = 0; s < cfg.sms; ++s)
            m_sm_comp.push_back(trace.add_component(
                {"sm" + std::to_string(s), "compute", cfg.contraction_fma_pj(), 0, 0, cfg.contraction_rate(), hz}));
        m_cuda = trace.add_component({"cuda_cores", "cuda_cores", cfg.fma_pj_fp32 / 2, 0, 0, 0, hz});
        m_l2_comp = trace.add_component({"l2", "l2", 0, cfg.l2_pj_per_byte, cfg.l2_pj_per_byte, 0, hz});
        m_smem = trace.add_component({"smem", "smem", 0, cfg.smem_pj_per_byte, cfg.smem_pj_per_byte, 0, hz});
        m_rf = trace.add_component({"registers", "registers", 0, cfg.rf_pj_per_byte, cfg.rf_pj_per_byte, 0, hz});
        m_dram_comp = trace.add_component({"dram", "dram", 0, cfg.dram.pj_per_byte, cfg.dram.pj_per_byte, 0, hz});
        m_dram = std::make_unique<Dram>("dram", cfg.dram, trace, m_dram_comp, m_current_op);
        m_dma = std::make_unique<Dma>("l2_dram_port", cfg.dram.transaction_bytes);
        m_dma->socket.bind(m_dram->socket);
        m_l2 = std::make_unique<L2Cache>("l2", cfg.l2_mib * 1024 * 1024, cfg.l2_bytes_per_cycle / cfg.cycle_ps(),
                                         cfg.l2_latency_cycles * cfg.cycle_ps(), trace, m_l2_comp, m_current_op, *m_dma);
        for (int64_t s = 0; s < cfg.sms; ++s) {
            m_sms.push_back(std::make_unique<Sm>(("sm" + std::to_string(s)).c_str(), cfg.sm_l2_bytes_per_cycle / cfg.cycle_ps()));
            m_sms.back()->socket.bind(m_l2->socket);
        }
    }

    double clock_hz() const override { return m_cfg.clock_mhz * 1e6; }
    double static_power_w() const override { return m_cfg.static_w; }
    std::string precision() const override { return m_cfg.precision_name; }
    uint16_t op_component() const override { return m_gpu; }

    void execute(uint32_t op_index, const Operator& op, const OpGraph& graph) override {
        m_current_op = op_index;
        if (op.cost.cls == OpClass::ShapeOnly || op.cost.cls == OpClass::Unsupported) return;
        if (fused(op, graph)) {
            fused_epilogue_reads(op, graph);
            return;
        }
        if (op.cost.cls == OpClass::Contraction && !memory_bound_contraction(op)) {
            for (size_t gi = 0; gi < op.cost.gemms.size(); ++gi) {
                const GemmView& g = op.cost.gemms[gi];
                if (g.m <= 0 || g.n <= 0 || g.k <= 0) continue;
                for (int64_t rep = 0; rep < g.repeat; ++rep) gemm_kernel(op, g, gi, rep);
            }
        } else {
            memory_kernel(op, graph);
        }
    }

private:
    // ---- time ---------------------------------------------------------------------------------
    static double now_ps() { return sim_now_ps(); }
    static void wait_until_ps(double t) { sim_wait_until_ps(t); }
    uint64_t cycles_of(double ps) const { return static_cast<uint64_t>(std::llround(ps / m_cfg.cycle_ps())); }
    void emit(EventKind kind, uint16_t comp, double start, double dur, uint64_t ops, uint64_t bytes, uint64_t cycles,
              uint32_t seq, StallCause cause = StallCause::None) {
        m_trace.emit(make_event(kind, comp, m_current_op, static_cast<uint64_t>(std::llround(start)),
                                static_cast<uint64_t>(std::llround(dur)), bytes, ops, cycles, seq, cause));
    }
    void launch() {
        const double gap = m_cfg.launch_overhead_us * 1e6;
        if (gap <= 0) return;
        const double t = now_ps();
        emit(EventKind::Stall, m_gpu, t, gap, 0, 0, cycles_of(gap), 0, StallCause::Launch);
        wait_until_ps(t + gap);
    }

    // ---- graph facts --------------------------------------------------------------------------
    int64_t bytes_of(const Tensor& t) const { return run_bytes(t, m_cfg.precision); }
    /// Runs in its producer's epilogue (arch/common/fusion.h) when fusion.elementwise is set.
    bool fused(const Operator& op, const OpGraph& g) const { return m_cfg.fuse_elementwise && fuses_into_producer(op, g); }
    /// Depthwise-like convolutions run as bandwidth-bound direct kernels, as cuDNN does (fusion.h).
    /// Also skinny GEMMs (kernel.gemv_max_rows): GEMV / split-K kernels streaming the weights.
    bool memory_bound_contraction(const Operator& op) const {
        if (is_thin_grouped_conv(op)) return true;
        if (m_cfg.gemv_max_rows <= 0 || op.cost.gemms.empty()) return false;
        for (const auto& g : op.cost.gemms)
            if (g.m > m_cfg.gemv_max_rows) return false;
        return true;
    }

    /// A fused epilogue still reads its operator's other inputs (a residual for an Add, a scale
    /// for a Mul): those bytes stream through L2 right after the producing kernel.
    void fused_epilogue_reads(const Operator& op, const OpGraph& graph) {
        double done = now_ps();
        for (size_t i = 1; i < op.inputs.size(); ++i) {
            const int32_t t = op.inputs[i];
            if (t < 0 || graph.tensors()[static_cast<size_t>(t)].elems() <= 1) continue;
            const int64_t bytes = bytes_of(graph.tensors()[static_cast<size_t>(t)]);
            const int64_t n = static_cast<int64_t>(m_sms.size());
            for (int64_t sm = 0; sm < n; ++sm)
                done = std::max(done, m_sms[static_cast<size_t>(sm)]->access(mix_key(mix_key(7, uint64_t(t)), uint64_t(sm)),
                                                                              bytes / n + (sm < bytes % n ? 1 : 0), t, false, false));
        }
        if (done > now_ps())
            emit(EventKind::Stall, m_gpu, now_ps(), done - now_ps(), 0, 0, cycles_of(done - now_ps()), 0, StallCause::OperandLoad);
        wait_until_ps(done);
    }

    // ---- kernels ------------------------------------------------------------------------------
    void gemm_kernel(const Operator& op, const GemmView& g, size_t gi, int64_t rep) {
        launch();
        const KernelPlan plan = choose_kernel(g, m_cfg);
        const int64_t eb = operand_bytes(m_cfg.precision);
        const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor, c_tensor = g.c.tensor;
        const double a_ratio = g.a_unique_elems > 0 ? std::min(1.0, double(g.a_unique_elems) / (double(g.m) * g.k)) : 1.0;
        const int64_t row_tiles = (g.m + plan.tile.bm - 1) / plan.tile.bm;
        const int64_t col_tiles = (g.n + plan.tile.bn - 1) / plan.tile.bn;
        const int64_t per_instance = row_tiles * col_tiles;
        const int64_t slots = m_cfg.sms * plan.ctas_per_sm;
        const double l2_latency_ps = static_cast<double>(m_cfg.l2_latency_cycles) * m_cfg.cycle_ps();
        const double dram_latency_ps = m_cfg.dram.ideal ? 0.0 : m_cfg.dram.latency_ns * 1e3;
        const double macs_per_cta_iter = static_cast<double>(plan.tile.bm * plan.tile.bn * plan.bk);
        double kernel_end = now_ps();
        for (int64_t w = 0; w < plan.waves; ++w) {
            const double start = now_ps();
            // the SMs of a partial (tail) wave host fewer CTAs, which share the MMA rate among fewer
            const int64_t in_wave = std::min(plan.ctas - w * slots, slots);
            const int64_t per_sm = std::min(plan.ctas_per_sm, (in_wave + m_cfg.sms - 1) / m_cfg.sms);
            const double cta_ps = static_cast<double>(plan.k_iters) * macs_per_cta_iter /
                                  (m_cfg.contraction_rate() / static_cast<double>(per_sm)) * m_cfg.cycle_ps();
            double wave_end = start + l2_latency_ps + cta_ps;
            double stores_done = start;
            const int64_t first = w * slots, last = std::min(plan.ctas, first + slots);
            // Loads of every CTA of the wave first (all issued at the wave's start), then the
            // epilogue stores in completion order, so the shared L2 and DRAM servers see their
            // requests in time order.
            struct Cta { int64_t index; int64_t m, n; double end; };
            std::vector<Cta> ctas;
            ctas.reserve(static_cast<size_t>(last - first));
            for (int64_t c = first; c < last; ++c) {
                const int64_t inst = c / per_instance, r = c % per_instance;
                const int64_t bi = r / col_tiles, bj = r % col_tiles;
                const int64_t m = std::min(plan.tile.bm, g.m - bi * plan.tile.bm);
                const int64_t n = std::min(plan.tile.bn, g.n - bj * plan.tile.bn);
                Sm& sm = *m_sms[static_cast<size_t>((c - first) % m_cfg.sms)];
                const uint64_t a_key = mix_key(mix_key(mix_key(1, uint64_t(a_tensor)), rep * 1000003 + inst), bi);
                const uint64_t b_key = g.b_is_weight ? mix_key(mix_key(mix_key(2, uint64_t(b_tensor)), gi), mix_key(inst % g.groups, bj))
                                                     : mix_key(mix_key(mix_key(2, uint64_t(b_tensor)), rep * 1000003 + inst), bj);
                const int64_t a_bytes = static_cast<int64_t>(std::ceil(m * g.k * a_ratio)) * eb;
                const int64_t b_bytes = g.k * n * eb;
                bool a_miss = false, b_miss = false;
                const double a_done = sm.access(a_key, a_bytes, a_tensor, false, false, 0, &a_miss);
                const double b_done = sm.access(b_key, b_bytes, g.b_is_weight ? -1 : b_tensor, false, false, 0, &b_miss);
                // Little's law on the multistage pipeline: with stages - 1 K-steps in flight, each
                // taking a load latency (L2, plus DRAM on a miss), a K-step takes at least
                // latency / (stages - 1); the main loop starts after its first stage arrives.
                const double stage_latency = l2_latency_ps + ((a_miss || b_miss) ? dram_latency_ps : 0.0);
                const double loop_ps = std::max(cta_ps, static_cast<double>(plan.k_iters) * stage_latency /
                                                            static_cast<double>(std::max<int64_t>(1, plan.tile.stages - 1)));
                ctas.push_back({c, m, n, std::max(start + l2_latency_ps + loop_ps, std::max(a_done, b_done))});
            }
            std::sort(ctas.begin(), ctas.end(), [](const Cta& x, const Cta& y) { return x.end < y.end; });
            for (const Cta& cta : ctas) {
                const int64_t c = cta.index;
                wave_end = std::max(wave_end, cta.end);
                const uint64_t macs = static_cast<uint64_t>(cta.m * cta.n * g.k);
                // operands pass through shared memory into registers; accumulators stay in registers
                const uint64_t smem_bytes = static_cast<uint64_t>((cta.m + cta.n) * g.k * eb);
                const double dur = cta.end - start;
                emit(EventKind::Fold, m_sm_comp[(c - first) % m_cfg.sms], start, dur, macs, 0,
                     c == first ? cycles_of(cta_ps) : 0, static_cast<uint32_t>(c));
                emit(EventKind::SramRead, m_smem, start, dur, 0, smem_bytes, 0, static_cast<uint32_t>(c));
                emit(EventKind::SramWrite, m_smem, start, dur, 0, smem_bytes, 0, static_cast<uint32_t>(c));
                emit(EventKind::SramRead, m_rf, start, dur, 0, 2 * smem_bytes, 0, static_cast<uint32_t>(c));
                // epilogue: the C tile goes back through L2 (written through to DRAM)
                Sm& sm = *m_sms[static_cast<size_t>((c - first) % m_cfg.sms)];
                const uint64_t c_key = mix_key(mix_key(3, uint64_t(c_tensor)), static_cast<uint64_t>(c));
                stores_done = std::max(stores_done, sm.access(c_key, cta.m * cta.n * eb, c_tensor, false, true, cta.end - now_ps()));
            }
            if (wave_end > start + cta_ps)  // waiting for operands: the first stage, or loads slower than the MMAs
                emit(EventKind::Stall, m_gpu, start + cta_ps, wave_end - (start + cta_ps), 0, 0,
                     cycles_of(wave_end - (start + cta_ps)), static_cast<uint32_t>(w), StallCause::OperandLoad);
            wait_until_ps(wave_end);
            kernel_end = std::max(kernel_end, stores_done);
        }
        if (kernel_end > now_ps())
            emit(EventKind::Stall, m_gpu, now_ps(), kernel_end - now_ps(), 0, 0, cycles_of(kernel_end - now_ps()), 0,
                 StallCause::WriteDrain);
        wait_until_ps(kernel_end);
        if (c_tensor >= 0) m_l2->retain(c_tensor, g.batch * g.groups * g.m * g.n * eb);
    }

    /// Bandwidth-bound kernel: inputs through L2 (a tensor still resident from its producer hits),
    /// arithmetic on the CUDA cores (one operation per core per cycle), outputs stored through L2.
    void memory_kernel(const Operator& op, const OpGraph& graph) {
        launch();
        const double start = now_ps();
        double loads_done = start;
        // every SM streams an equal share of every tensor through its own port
        auto spread = [&](int32_t t, int64_t bytes, bool store, double issue_ps) {
            double done = start;
            const int64_t n = static_cast<int64_t>(m_sms.size());
            for (int64_t sm = 0; sm < n; ++sm) {
                const int64_t share = bytes / n + (sm < bytes % n ? 1 : 0);
                done = std::max(done, m_sms[static_cast<size_t>(sm)]->access(mix_key(mix_key(store ? 5 : 4, uint64_t(t)), uint64_t(sm)),
                                                                              share, t, false, store, issue_ps));
            }
            return done;
        };
        for (int32_t t : op.inputs)
            if (t >= 0) loads_done = std::max(loads_done, spread(t, bytes_of(graph.tensors()[t]), false, 0));
        int64_t ops = op.cost.cls == OpClass::DataMovement ? 0 : op.cost.flops;
        if (op.cost.cls == OpClass::Contraction) ops = 2 * op.cost.macs;  // direct (depthwise) conv on CUDA cores
        const double lanes = static_cast<double>(m_cfg.sms) * m_cfg.cuda_fp32_fma;
        const double compute_ps = std::ceil(static_cast<double>(ops) / lanes) * m_cfg.cycle_ps();
        double end = std::max(start + compute_ps, loads_done);
        emit(EventKind::Vector, m_cuda, start, compute_ps, static_cast<uint64_t>(ops), 0, cycles_of(compute_ps), 0);
        if (op.cost.cls == OpClass::Contraction)
            emit(EventKind::Fold, m_sm_comp[0], start, compute_ps, static_cast<uint64_t>(op.cost.macs), 0, 0, 0);
        if (loads_done > start + compute_ps)
            emit(EventKind::Stall, m_gpu, start + compute_ps, loads_done - (start + compute_ps), 0, 0,
                 cycles_of(loads_done - (start + compute_ps)), 0, StallCause::OperandLoad);
        double stores = end;
        for (int32_t t : op.outputs) {
            const int64_t bytes = bytes_of(graph.tensors()[t]);
            stores = std::max(stores, spread(t, bytes, true, end - now_ps()));
            m_l2->retain(t, bytes);  // the consumer finds it in L2 if it fits
        }
        wait_until_ps(end);
        if (stores > end) emit(EventKind::Stall, m_gpu, end, stores - end, 0, 0, cycles_of(stores - end), 0, StallCause::WriteDrain);
        wait_until_ps(stores);
    }

    GpuConfig m_cfg;
    TraceWriter& m_trace;
    uint16_t m_gpu = 0, m_cuda = 0, m_l2_comp = 0, m_smem = 0, m_rf = 0, m_dram_comp = 0;
    std::vector<uint16_t> m_sm_comp;
    uint32_t m_current_op = 0;
    std::unique_ptr<Dram> m_dram;
    std::unique_ptr<Dma> m_dma;
    std::unique_ptr<L2Cache> m_l2;
    std::vector<std::unique_ptr<Sm>> m_sms;
};

}  // namespace

std::unique_ptr<Machine> create_gpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<GpuMachine>(make_gpu_config(params), trace);
}

}  // namespace archsim
