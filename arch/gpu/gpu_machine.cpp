#include "arch/gpu/gpu_machine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

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

namespace {

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
    GpuMachine(const GpuConfig& cfg, TraceWriter& trace)
        : MachineBase(trace, cfg.clock_mhz, cfg.static_w, cfg.precision_name,
                      RoutingRules{cfg.fuse_elementwise, /*thin_grouped_conv_streams=*/true, cfg.gemv_max_rows}),
          m_cfg(cfg) {
        m_gpu = m_op_component = m_rec.lane("gpu");
        for (int64_t s = 0; s < cfg.sms; ++s)
            m_sm_comp.push_back(m_rec.compute("sm" + std::to_string(s), "compute", cfg.contraction_fma_pj(), cfg.contraction_rate()));
        m_cuda = m_rec.compute("cuda_cores", "cuda_cores", cfg.cuda_mac_pj / 2, 0);
        const uint16_t l2 = m_rec.memory("l2", cfg.l2_pj_per_byte);
        m_smem = m_rec.memory("smem", cfg.smem_pj_per_byte);
        m_rf = m_rec.memory("registers", cfg.rf_pj_per_byte);
        m_launch = m_rec.stall_cause("launch", "the gap before a kernel's first CTA (launch overhead)");
        m_operand_load = m_rec.stall_cause("operand_load", "CTAs waiting for operand tiles from L2/DRAM beyond their MMA time");
        m_write_drain = m_rec.stall_cause("write_drain", "a kernel's output stores still in flight after its last wave");
        m_dram = std::make_unique<DramPort>(m_rec, cfg.sustained_dram(), "l2_dram_port");
        m_l2 = std::make_unique<L2Cache>("l2", cfg.l2_mib * 1024 * 1024, cfg.l2_bytes_per_cycle / cfg.cycle_ps(),
                                         cfg.l2_latency_cycles * cfg.cycle_ps(), trace, l2, m_rec.op_ref(), m_dram->dma());
        for (int64_t s = 0; s < cfg.sms; ++s) {
            m_sms.push_back(std::make_unique<SmPort>(("sm" + std::to_string(s)).c_str(), cfg.sm_l2_bytes_per_cycle / cfg.cycle_ps()));
            m_sms.back()->socket.bind(m_l2->socket);
        }
        enable_power(cfg.power_spec());
    }

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
    bool memo_state(const Operator&, const OpGraph&, const std::vector<int32_t>& slots, MemoKey& key) override {
        // the clock, the L2's and SM ports' busy times and the DRAM's state: both keys hold them
        const double t0 = sim_now_ps();
        MemoKey common;
        common.add(m_cfg.clock_mhz).add(std::max(0.0, m_l2->free_ps() - t0));
        for (const auto& sm : m_sms) common.add(std::max(0.0, sm->free_ps() - t0));
        m_dram->memo_key(common, t0);
        m_memo_common = common.value();
        key.add(m_memo_common);
        m_l2_memo.begin(m_l2->lines(), slots, key);
        m_memo_l2_hits = m_l2->hits(), m_memo_l2_misses = m_l2->misses();
        return true;
    }
    bool memo_loose_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) override {
        key.add(m_memo_common);
        m_l2_memo.add_loose(key);
        return true;
    }
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override {
        auto l2 = m_l2_memo.save(m_l2->lines());
        if (!l2) return {};
        MemoChange c{std::move(*l2), m_l2->free_ps() - end_ps, {}, m_l2->hits() - m_memo_l2_hits, m_l2->misses() - m_memo_l2_misses,
                     m_dram->memo_save(end_ps)};
        for (const auto& sm : m_sms) c.port_busy_after_ps.push_back(sm->free_ps() - end_ps);
        return c;
    }
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps,
                      bool exact) override {
        const auto& c = std::any_cast<const MemoChange&>(change);
        m_l2_memo.restore(c.l2, exact, m_l2->lines());
        // a server idle at the end keeps its own (earlier) free time, as simulating would
        m_l2->restore(c.l2_busy_after_ps > 0 ? end_ps + c.l2_busy_after_ps : m_l2->free_ps(), c.l2_hits, c.l2_misses);
        for (size_t s = 0; s < m_sms.size(); ++s)
            if (c.port_busy_after_ps[s] > 0) m_sms[s]->set_free_ps(end_ps + c.port_busy_after_ps[s]);
        m_dram->memo_restore(c.dram, end_ps);
    }
    bool memo_replayable(const std::any& change, double, uint64_t, bool exact) override {
        return exact || m_l2_memo.check(std::any_cast<const MemoChange&>(change).l2, m_l2->lines());
    }

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
    void fused_epilogue(const Operator& op, const OpGraph& graph) override {
        const double start = sim_now_ps();
        const double lanes = static_cast<double>(m_cfg.sms) * m_cfg.cuda_fp32_fma;
        const double compute_ps = std::ceil(static_cast<double>(op.cost.flops) / lanes) * m_cfg.cycle_ps();
        if (op.cost.flops > 0)
            m_rec.emit(EventKind::Vector, m_cuda, ps_span(start, compute_ps), {0, uint64_t(op.cost.flops), m_clock.cycles_of(compute_ps)});
        double done = start;
        for (int32_t t : epilogue_side_inputs(op))
            if (graph.tensors()[static_cast<size_t>(t)].elems() > 1)
                done = std::max(done, spread(TileId{t, 7}, t, bytes_of(graph, t), false, 0));
        if (done > start + compute_ps) stall(start + compute_ps, done - (start + compute_ps), 0, m_operand_load);
        sim_wait_until_ps(std::max(done, start + compute_ps));
    }
    /// A fused attention kernel as FlashAttention-2 runs it (flash_attention.h): per wave, each CTA
    /// loads its Q tile and streams its head's K and V blocks through L2 (the head's other query
    /// tiles hit), only those up to its diagonal under a causal mask, runs its MMAs and softmax,
    /// and stores its O tile; no score reaches L2. The trace's MACs are those executed (a causal
    /// kernel skips the masked blocks, so fewer than the graph's).
    void attention(const Operator& op, const OpGraph& graph) override {
        if (op.cost.attention.at(0).backward) {
            attention_backward(op, graph);
            return;
        }
        launch();
        const AttentionView& a = op.cost.attention.at(0);
        const FlashPlan p = plan_flash_attention(a, m_cfg);
        const int64_t eb = operand_bytes(m_cfg.precision);
        const uint64_t softmax_ops = static_cast<uint64_t>(op.cost.non_mac_flops());
        auto rows_of = [&](int64_t c) { return std::min(p.block_m, a.q_len - c % p.q_tiles * p.block_m); };
        auto kv_of = [&](int64_t c) { return flash_kv_seen(a, p, c % p.q_tiles); };
        cta_waves(
            p.ctas, p.ctas_per_sm, p.waves, [&](int64_t c, int64_t sharing) { return flash_cta_cycles(a, rows_of(c), kv_of(c), sharing, m_cfg); },
            [&](int64_t c, SmPort& sm) {
                // K and V stream in block_n rows at a time: the first kv rows (keyed per block, so
                // the head's other query tiles find the blocks they share in L2)
                const int64_t head = c / p.q_tiles, kv = kv_of(c);
                double loaded = sm.access(TileId{a.q.tensor, mix_key(11, uint64_t(c))}, rows_of(c) * a.head_dim * eb,
                                          TensorPart::rows(a.q.tensor, head * a.q_len + c % p.q_tiles * p.block_m, rows_of(c), a.batch * a.q_len), false);
                for (int64_t j = 0; j < kv; j += p.block_n) {
                    const int64_t n = std::min(p.block_n, kv - j);
                    loaded = std::max(loaded, sm.access(TileId{a.k.tensor, mix_key(mix_key(12, uint64_t(head)), uint64_t(j))}, n * a.head_dim * eb,
                                                        TensorPart::rows(a.k.tensor, head * a.kv_len + j, n, a.batch * a.kv_len), false));
                    loaded = std::max(loaded, sm.access(TileId{a.v.tensor, mix_key(mix_key(13, uint64_t(head)), uint64_t(j))}, n * a.v_dim * eb,
                                                        TensorPart::rows(a.v.tensor, head * a.kv_len + j, n, a.batch * a.kv_len), false));
                }
                return loaded;
            },
            [&](int64_t c, SmPort& sm, size_t sm_index, const Span& span, double end, uint64_t wave_cycles) {
                const int64_t rows = rows_of(c), kv = kv_of(c);
                const uint64_t scores = static_cast<uint64_t>(rows * kv), seq = static_cast<uint32_t>(c);
                m_rec.emit(EventKind::Fold, m_sm_comp[sm_index], span, {0, scores * uint64_t(a.head_dim + a.v_dim), wave_cycles}, seq);
                m_rec.emit(EventKind::Vector, m_cuda, span,
                           {0, softmax_ops * scores / uint64_t(std::max<int64_t>(1, a.batch * a.q_len * a.kv_len)), 0}, seq);
                // Q stays in shared memory; K and V tiles pass through it once per step
                const uint64_t smem = static_cast<uint64_t>((rows * a.head_dim + kv * (a.head_dim + a.v_dim)) * eb);
                m_rec.emit(EventKind::SramWrite, m_smem, span, {smem}, seq);
                m_rec.emit(EventKind::SramRead, m_smem, span, {smem}, seq);
                return sm.access(TileId{a.out.tensor, mix_key(14, uint64_t(c))}, rows * a.v_dim * eb, {}, true, end - sim_now_ps());
            });
        for (int32_t t : op.outputs) m_l2->retain(t, bytes_of(graph, t));
    }
    /// A fused attention backward kernel as FlashAttention-2 runs it (flash_attention.h,
    /// FlashBwdPlan), three launches: the pre-kernel reads O and dO per query tile and writes
    /// rowsum(dO O) (4 bytes per row); per wave, each CTA loads its K and V tiles, and per query
    /// tile it meets loads Q, dO (the head's other CTAs hit in L2) and the row statistics
    /// (logsumexp and the rowsum, 8 bytes per row), runs its MMAs and elementwise work, and adds
    /// its dQ tile into the fp32 accumulator (atomics, in L2); then it stores dK and dV; the
    /// post-kernel reads the accumulator and writes dQ. No score reaches L2.
    void attention_backward(const Operator& op, const OpGraph& graph) {
        const AttentionView& a = op.cost.attention.at(0);
        const FlashBwdPlan p = plan_flash_attention_backward(a, m_cfg);
        const int64_t eb = operand_bytes(m_cfg.precision), n_sms = m_cfg.sms;
        const int64_t q_tiles = (a.q_len + p.block_m - 1) / p.block_m;
        const uint64_t vector_ops = static_cast<uint64_t>(op.cost.non_mac_flops());
        const double all_scores = static_cast<double>(std::max<int64_t>(1, a.batch * a.q_len * a.kv_len));
        auto tile = [](uint64_t kind, int64_t head, int64_t i) { return mix_key(mix_key(kind, uint64_t(head)), uint64_t(i)); };
        auto rows_of = [&](int64_t i) { return std::min(p.block_m, a.q_len - i * p.block_m); };
        // query tile i of head h of a [batch x q_len] tensor t, and key/value tile j of one of [batch x kv_len]
        auto q_part = [&](int32_t t, int64_t h, int64_t i) { return TensorPart::rows(t, h * a.q_len + i * p.block_m, rows_of(i), a.batch * a.q_len); };
        auto kv_part = [&](int32_t t, int64_t h, int64_t j, int64_t cols) { return TensorPart::rows(t, h * a.kv_len + j * p.block_n, cols, a.batch * a.kv_len); };
        // a memory-bound launch over every (head, query tile), round robin over the SMs: every
        // tile's loads first, then its store in completion order (the L2 serves requests in the
        // order they come, so they come in time order)
        using Load = std::function<double(SmPort&, int64_t, int64_t)>;
        using Store = std::function<double(SmPort&, int64_t, int64_t, double)>;
        auto per_tile_pass = [&](const Load& load, const Store& store) {
            launch();
            std::vector<std::tuple<double, int64_t, int64_t>> ready;
            for (int64_t h = 0, c = 0; h < a.batch; ++h)
                for (int64_t i = 0; i < q_tiles; ++i, ++c) ready.emplace_back(load(*m_sms[static_cast<size_t>(c % n_sms)], h, i), h, i);
            std::vector<size_t> order(ready.size());
            for (size_t k = 0; k < order.size(); ++k) order[k] = k;
            std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return std::get<0>(ready[x]) < std::get<0>(ready[y]); });
            double done = sim_now_ps();
            for (const size_t k : order) {
                const auto& [t, h, i] = ready[k];
                done = std::max(done, store(*m_sms[static_cast<size_t>(k % static_cast<size_t>(n_sms))], h, i, t));
            }
            if (done > sim_now_ps()) stall(sim_now_ps(), done - sim_now_ps(), 0, m_operand_load);
            sim_wait_until_ps(done);
        };
        per_tile_pass(  // rowsum(dO O), 4 bytes per row
            [&](SmPort& sm, int64_t h, int64_t i) {
                const double t = sm.access(TileId{a.out.tensor, tile(41, h, i)}, rows_of(i) * a.v_dim * eb, q_part(a.out.tensor, h, i), false);
                return std::max(t, sm.access(TileId{a.d_out.tensor, tile(42, h, i)}, rows_of(i) * a.v_dim * eb, q_part(a.d_out.tensor, h, i), false));
            },
            [&](SmPort& sm, int64_t h, int64_t i, double t) {
                return sm.access(TileId{-1, tile(43, h, i)}, rows_of(i) * 4, {}, true, t - sim_now_ps());
            });
        launch();
        auto cols_of = [&](int64_t c) { return std::min(p.block_n, a.kv_len - c % p.kv_tiles * p.block_n); };
        auto q_seen_of = [&](int64_t c) { return flash_bwd_q_seen(a, p, c % p.kv_tiles); };
        auto first_q_tile = [&](int64_t c) { return q_tiles - (q_seen_of(c) + p.block_m - 1) / p.block_m; };
        cta_waves(
            p.ctas, p.ctas_per_sm, p.waves, [&](int64_t c, int64_t sharing) { return flash_bwd_cta_cycles(a, cols_of(c), q_seen_of(c), sharing, m_cfg); },
            [&](int64_t c, SmPort& sm) {
                const int64_t head = c / p.kv_tiles, j = c % p.kv_tiles, cols = cols_of(c);
                double loaded = sm.access(TileId{a.k.tensor, tile(44, head, j)}, cols * a.head_dim * eb, kv_part(a.k.tensor, head, j, cols), false);
                loaded = std::max(loaded, sm.access(TileId{a.v.tensor, tile(45, head, j)}, cols * a.v_dim * eb, kv_part(a.v.tensor, head, j, cols), false));
                for (int64_t i = first_q_tile(c); i < q_tiles; ++i) {
                    const int64_t rows = rows_of(i);
                    loaded = std::max(loaded, sm.access(TileId{a.q.tensor, tile(46, head, i)}, rows * a.head_dim * eb, q_part(a.q.tensor, head, i), false));
                    loaded = std::max(loaded, sm.access(TileId{a.d_out.tensor, tile(42, head, i)}, rows * a.v_dim * eb, q_part(a.d_out.tensor, head, i), false));
                    loaded = std::max(loaded, sm.access(TileId{-1, tile(43, head, i)}, rows * 8, {}, false));
                }
                return loaded;
            },
            [&](int64_t c, SmPort& sm, size_t sm_index, const Span& span, double end, uint64_t wave_cycles) {
                const int64_t head = c / p.kv_tiles, j = c % p.kv_tiles, cols = cols_of(c), q_seen = q_seen_of(c);
                const uint64_t scores = static_cast<uint64_t>(cols * q_seen), seq = static_cast<uint32_t>(c);
                m_rec.emit(EventKind::Fold, m_sm_comp[sm_index], span, {0, scores * uint64_t(3 * a.head_dim + 2 * a.v_dim), wave_cycles}, seq);
                m_rec.emit(EventKind::Vector, m_cuda, span, {0, static_cast<uint64_t>(static_cast<double>(vector_ops) * scores / all_scores), 0}, seq);
                // K and V stay in shared memory; each query tile's Q and dO pass through it, and dS once per tile
                const uint64_t smem = static_cast<uint64_t>((cols + q_seen) * (a.head_dim + a.v_dim) * eb) + scores * uint64_t(eb);
                m_rec.emit(EventKind::SramWrite, m_smem, span, {smem}, seq);
                m_rec.emit(EventKind::SramRead, m_smem, span, {smem}, seq);
                double done = sim_now_ps();
                for (int64_t i = first_q_tile(c); i < q_tiles; ++i)  // dQ += dS K, fp32 atomics
                    done = std::max(done, sm.access(TileId{-1, tile(47, head, i)}, rows_of(i) * a.head_dim * 4, {}, true, end - sim_now_ps()));
                done = std::max(done, sm.access(TileId{a.dk.tensor, tile(48, head, j)}, cols * a.head_dim * eb, {}, true, end - sim_now_ps()));
                return std::max(done, sm.access(TileId{a.dv.tensor, tile(49, head, j)}, cols * a.v_dim * eb, {}, true, end - sim_now_ps()));
            });
        per_tile_pass(  // the fp32 dQ accumulator to dQ
            [&](SmPort& sm, int64_t h, int64_t i) { return sm.access(TileId{-1, tile(47, h, i)}, rows_of(i) * a.head_dim * 4, {}, false); },
            [&](SmPort& sm, int64_t h, int64_t i, double t) {
                return sm.access(TileId{a.dq.tensor, tile(50, h, i)}, rows_of(i) * a.head_dim * eb, {}, true, t - sim_now_ps());
            });
        for (int32_t t : op.outputs) m_l2->retain(t, bytes_of(graph, t));
    }
    /// Bandwidth-bound kernel: inputs through L2 (a tensor still resident from its producer hits),
    /// arithmetic on the CUDA cores (one operation per core per cycle), outputs stored through L2.
    void streaming(const Operator& op, const OpGraph& graph) override {
        launch();
        const double start = sim_now_ps();
        double loads_done = start;
        for (int32_t t : op.inputs)
            if (t >= 0)
                loads_done = std::max(loads_done, spread(TileId{t, 4}, t,
                                                         read_bytes(op, t, graph.tensors()[static_cast<size_t>(t)], m_cfg.precision), false, 0));
        const bool direct_conv = op.cost.cls == OpClass::Contraction;  // a thin convolution on the CUDA cores
        const int64_t ops = direct_conv ? 2 * op.cost.macs : op.cost.cls == OpClass::DataMovement ? 0 : op.cost.flops;
        const double lanes = static_cast<double>(m_cfg.sms) * m_cfg.cuda_fp32_fma;
        const double compute_ps = std::ceil(static_cast<double>(ops) / lanes) * m_cfg.cycle_ps();
        const double end = std::max(start + compute_ps, loads_done);
        m_rec.emit(EventKind::Vector, m_cuda, ps_span(start, compute_ps), {0, uint64_t(ops), m_clock.cycles_of(compute_ps)});
        if (direct_conv) m_rec.emit(EventKind::Fold, m_sm_comp[0], ps_span(start, compute_ps), {0, uint64_t(op.cost.macs), 0});
        if (loads_done > start + compute_ps) stall(start + compute_ps, loads_done - (start + compute_ps), 0, m_operand_load);
        double stores = end;
        for (int32_t t : op.outputs) {
            stores = std::max(stores, spread(TileId{t, 5}, t, bytes_of(graph, t), true, end - sim_now_ps()));
            m_l2->retain(t, bytes_of(graph, t));  // the consumer finds it in L2 if it fits
        }
        sim_wait_until_ps(end);
        if (stores > end) stall(end, stores - end, 0, m_write_drain);
        sim_wait_until_ps(stores);
    }

private:
    int64_t bytes_of(const OpGraph& g, int32_t t) const { return run_bytes(g.tensors()[static_cast<size_t>(t)], m_cfg.precision); }
    /// A stall of the whole GPU for `dur_ps` from `from_ps`.
    void stall(double from_ps, double dur_ps, uint32_t seq, StallCauseId cause) {
        m_rec.emit(EventKind::Stall, m_gpu, ps_span(from_ps, dur_ps), {0, 0, m_clock.cycles_of(dur_ps)}, seq, cause);
    }
    /// The power controller's clock (MachineBase::enable_power): the SMs' main loops, epilogues
    /// and L2 latency run at it; the L2, the SM ports and HBM keep their rates. Cycles in the
    /// trace stay counted at the nominal clock.
    void set_clock_mhz(double mhz) override { m_cfg.clock_mhz = mhz; }
    void launch() {
        const double gap = m_cfg.kernel_gap_us() * 1e6;
        if (gap <= 0) return;
        const double t = sim_now_ps();
        stall(t, gap, 0, m_launch);
        sim_wait_until_ps(t + gap);
    }
    /// Every SM moves an equal share of `bytes` of tensor `t` through its own port; returns when the last lands.
    /// The `waves` waves of a fused attention kernel's `ctas` CTAs, `ctas_per_sm` to an SM (CTA c
    /// on SM c mod SMs of its wave; the plan's occupancy, flash_attention.h). In each wave every CTA's loads come first, all issued at the
    /// wave's start, then each CTA's end in completion order, so each SM port and the L2 see
    /// their requests in time order. `cycles(c, sharing)`: CTA c's time, cycles, with `sharing`
    /// CTAs on its SM; `load(c, sm)`: issues its loads, returns when they are in; `finish(c, sm,
    /// sm_index, span, end, wave_cycles)`: emits its events over `span` (`wave_cycles`: the
    /// wave's longest CTA, on the wave's first CTA, else 0) and issues its stores at `end`,
    /// returns when they are done. A CTA ends at the later of its loads and the L2 latency plus
    /// its time; a wave's time beyond its longest CTA is an operand_load stall, stores still
    /// draining after the last wave a write_drain stall.
    void cta_waves(int64_t ctas, int64_t ctas_per_sm, int64_t waves, const std::function<double(int64_t, int64_t)>& cycles,
                   const std::function<double(int64_t, SmPort&)>& load,
                   const std::function<double(int64_t, SmPort&, size_t, const Span&, double, uint64_t)>& finish) {
        const int64_t n_sms = m_cfg.sms, slots = n_sms * ctas_per_sm;
        const double l2_latency_ps = static_cast<double>(m_cfg.l2_latency_cycles) * m_cfg.cycle_ps();
        double kernel_end = sim_now_ps();
        for (int64_t w = 0; w < waves; ++w) {
            const double start = sim_now_ps();
            const int64_t first = w * slots, last = std::min(ctas, first + slots);
            const int64_t sharing = std::min(ctas_per_sm, (last - first + n_sms - 1) / n_sms);
            double wave_end = start, stores_done = start, cta_ps_max = 0;
            std::vector<std::pair<double, int64_t>> ends;
            ends.reserve(static_cast<size_t>(last - first));
            for (int64_t c = first; c < last; ++c) {
                const double cta_ps = cycles(c, sharing) * m_cfg.cycle_ps();
                cta_ps_max = std::max(cta_ps_max, cta_ps);
                const double loaded = load(c, *m_sms[static_cast<size_t>((c - first) % n_sms)]);
                ends.emplace_back(std::max(start + l2_latency_ps + cta_ps, loaded), c);
            }
            std::sort(ends.begin(), ends.end());
            for (const auto& [end, c] : ends) {
                const size_t sm = static_cast<size_t>((c - first) % n_sms);
                wave_end = std::max(wave_end, end);
                stores_done = std::max(stores_done, finish(c, *m_sms[sm], sm, ps_span(start, end - start), end,
                                                           c == first ? m_clock.cycles_of(cta_ps_max) : 0));
            }
            if (wave_end > start + cta_ps_max) stall(start + cta_ps_max, wave_end - (start + cta_ps_max), static_cast<uint32_t>(w), m_operand_load);
            sim_wait_until_ps(wave_end);
            kernel_end = std::max(kernel_end, stores_done);
        }
        if (kernel_end > sim_now_ps()) stall(sim_now_ps(), kernel_end - sim_now_ps(), 0, m_write_drain);
        sim_wait_until_ps(kernel_end);
    }

    double spread(TileId tile, int32_t t, int64_t bytes, bool store, double issue_ps) {
        double done = sim_now_ps();
        const int64_t n = static_cast<int64_t>(m_sms.size());
        for (int64_t sm = 0; sm < n; ++sm)
            done = std::max(done, m_sms[static_cast<size_t>(sm)]->access(TileId{tile.owner, mix_key(tile.local, uint64_t(sm))}, bytes / n + (sm < bytes % n ? 1 : 0),
                                                                          TensorPart::rows(t, sm, 1, n), store, issue_ps));
        return done;
    }

    /// One GEMM kernel: CTAs in waves (cta_mapper.h picks the tile and the split-K). A CTA loads
    /// its A and B tiles for its K range and runs its main loop; fused epilogue arithmetic is
    /// timed by fused_epilogue(). With split-K the splits of a tile add into one fp32 partial sum
    /// in turn (CUTLASS GemmSplitKSerial's semaphore): each but the first waits for the one
    /// before to store it and reads it, each but the last stores it (a workspace tile, written
    /// back: it reaches DRAM only if evicted before its reader), the last writes C.
    void gemm_kernel(const GemmView& g, size_t gi, int64_t rep) {
        launch();
        const KernelPlan plan = choose_kernel(g, m_cfg);
        const int64_t eb = operand_bytes(m_cfg.precision);
        const int32_t a_tensor = g.a.tensor, b_tensor = g.b.tensor, c_tensor = g.c.tensor;
        const double a_ratio = g.a_unique_elems > 0 ? std::min(1.0, double(g.a_unique_elems) / (double(g.m) * g.k)) : 1.0;
        const int64_t col_tiles = (g.n + plan.tile.bn - 1) / plan.tile.bn, split = plan.split_k;
        const int64_t per_instance = (g.m + plan.tile.bm - 1) / plan.tile.bm * col_tiles * split;
        const int64_t slots = m_cfg.sms * plan.ctas_per_sm;
        const double l2_latency_ps = static_cast<double>(m_cfg.l2_latency_cycles) * m_cfg.cycle_ps();
        const double dram_latency_ps = m_cfg.dram.ideal ? 0.0 : m_cfg.dram.latency_ns * 1e3;
        const double kstep = kstep_cycles(plan.tile, plan.bk, m_cfg);
        const int64_t instances = g.batch * g.groups;
        m_l2->workspace_ready().clear();                    // this kernel's partial sums are its own
        std::unordered_map<int64_t, double> partial_stored;  // CTA -> when the previous split stored its partial, for a split in a later wave
        double kernel_end = sim_now_ps();
        for (int64_t w = 0; w < plan.waves; ++w) {
            const double start = sim_now_ps();
            // the SMs of a partial (tail) wave host fewer CTAs, which share the SM among fewer
            const int64_t in_wave = std::min(plan.ctas - w * slots, slots);
            const double per_sm = static_cast<double>(std::min(plan.ctas_per_sm, (in_wave + m_cfg.sms - 1) / m_cfg.sms));
            double wave_end = start, stores_done = start, cta_ps_max = 0;
            const int64_t first = w * slots, last = std::min(plan.ctas, first + slots);
            // Loads of every CTA of the wave first (all issued at the wave's start), then the
            // epilogue stores in completion order, so the shared L2 and DRAM servers see their
            // requests in time order.
            struct Cta { int64_t index; int64_t m, n, k, sk; double end; };
            std::vector<Cta> ctas;
            ctas.reserve(static_cast<size_t>(last - first));
            for (int64_t c = first; c < last; ++c) {
                const int64_t inst = c / per_instance, r = c % per_instance, tile = r / split, sk = r % split;
                const int64_t bi = tile / col_tiles, bj = tile % col_tiles;
                const int64_t m = std::min(plan.tile.bm, g.m - bi * plan.tile.bm), n = std::min(plan.tile.bn, g.n - bj * plan.tile.bn);
                const int64_t k = std::max<int64_t>(0, std::min(plan.k_per_split, g.k - sk * plan.k_per_split));
                const int64_t k_iters = (k + plan.bk - 1) / plan.bk;
                SmPort& sm = *m_sms[static_cast<size_t>((c - first) % m_cfg.sms)];
                const TileId a_key{a_tensor, mix_key(mix_key(mix_key(1, rep * 1000003 + inst), bi), sk)};
                const TileId b_key{b_tensor, g.b_is_weight ? mix_key(mix_key(mix_key(2, gi), mix_key(inst % g.groups, bj)), sk)
                                                           : mix_key(mix_key(mix_key(2, rep * 1000003 + inst), bj), sk)};
                bool a_miss = false, b_miss = false;
                const TensorPart a_part = TensorPart::rows(a_tensor, inst * g.m + bi * plan.tile.bm, m, instances * g.m);
                const TensorPart b_part = g.b_is_weight ? TensorPart{} : TensorPart::rows(b_tensor, inst * g.k + sk * plan.k_per_split, k, instances * g.k);
                double loaded = sm.access(a_key, static_cast<int64_t>(std::ceil(m * k * a_ratio)) * eb, a_part, false, 0, &a_miss);
                loaded = std::max(loaded, sm.access(b_key, k * n * eb, b_part, false, 0, &b_miss));
                // the main loop (MMAs or shared-memory traffic) with the SM shared by the wave's CTAs on it
                const double mma_ps = static_cast<double>(k_iters) * kstep * per_sm * m_cfg.cycle_ps();
                cta_ps_max = std::max(cta_ps_max, mma_ps);
                // Little's law on the multistage pipeline: with stages - 1 K-steps in flight, each
                // taking a load latency (L2, plus DRAM on a miss), a K-step takes at least
                // latency / (stages - 1); the main loop starts after its first stage arrives.
                const double stage_latency = l2_latency_ps + ((a_miss || b_miss) ? dram_latency_ps : 0.0);
                const double loop_ps = std::max(mma_ps, static_cast<double>(k_iters) * stage_latency /
                                                            static_cast<double>(std::max<int64_t>(1, plan.tile.stages - 1)));
                ctas.push_back({c, m, n, k, sk, std::max(start + l2_latency_ps + loop_ps, loaded)});
            }
            // Epilogues, every transaction issued in time order (the L2 and DRAM serve requests
            // in the order they come). Serial split-K: a split's epilogue waits for the previous
            // split's partial-sum store (the semaphore), reads that partial (step 0), adds and
            // stores its own (step 1; the last split stores C); the first split stores at its
            // main loop's end.
            using Step = std::tuple<double, size_t, int>;  // when, which CTA, which step
            std::priority_queue<Step, std::vector<Step>, std::greater<>> steps;
            for (size_t i = 0; i < ctas.size(); ++i) {
                const Cta& cta = ctas[i];
                if (cta.sk == 0) steps.emplace(cta.end, i, 1);
                else if (auto it = partial_stored.find(cta.index); it != partial_stored.end()) {  // its predecessor ran in an earlier wave
                    steps.emplace(std::max(cta.end, it->second), i, 0);
                    partial_stored.erase(it);
                }
            }
            while (!steps.empty()) {
                const auto [at, i, step] = steps.top();
                steps.pop();
                const Cta& cta = ctas[i];
                const int64_t c = cta.index;
                SmPort& sm = *m_sms[static_cast<size_t>((c - first) % m_cfg.sms)];
                // the tile's partial sum, fp32, where every split of the tile adds into it
                const TileId partial{-1, mix_key(6, static_cast<uint64_t>(c - cta.sk))};
                if (step == 0) {
                    steps.emplace(sm.workspace(partial, cta.m * cta.n * 4, false, at - sim_now_ps()), i, 1);
                    continue;
                }
                wave_end = std::max({wave_end, cta.end, at});
                const uint32_t seq = static_cast<uint32_t>(c);
                // operands pass through shared memory into registers; accumulators stay in registers
                const uint64_t smem_bytes = static_cast<uint64_t>((cta.m + cta.n) * cta.k * eb);
                const Span span = ps_span(start, cta.end - start);
                m_rec.emit(EventKind::Fold, m_sm_comp[(c - first) % m_cfg.sms], span,
                           {0, uint64_t(cta.m * cta.n * cta.k), c == first ? m_clock.cycles_of(cta_ps_max) : 0}, seq);
                m_rec.emit(EventKind::SramRead, m_smem, span, {smem_bytes}, seq);
                m_rec.emit(EventKind::SramWrite, m_smem, span, {smem_bytes}, seq);
                m_rec.emit(EventKind::SramRead, m_rf, span, {2 * smem_bytes}, seq);
                if (cta.sk == split - 1) {  // C goes back through L2 (written through to DRAM)
                    stores_done = std::max(stores_done, sm.access(TileId{c_tensor, mix_key(3, static_cast<uint64_t>(c))}, cta.m * cta.n * eb, {},
                                                                  true, at - sim_now_ps()));
                    continue;
                }
                const double stored = sm.workspace(partial, cta.m * cta.n * 4, true, at - sim_now_ps());
                stores_done = std::max(stores_done, stored);
                if (c + 1 < last) steps.emplace(std::max(ctas[i + 1].end, stored), i + 1, 0);  // the next split, in this wave
                else partial_stored[c + 1] = stored;                                          // ... or in the next
            }
            if (wave_end > start + cta_ps_max)  // waiting for operands: the first stage, or loads slower than the MMAs
                stall(start + cta_ps_max, wave_end - (start + cta_ps_max), static_cast<uint32_t>(w), m_operand_load);
            sim_wait_until_ps(wave_end);
            kernel_end = std::max(kernel_end, stores_done);
        }
        if (kernel_end > sim_now_ps()) stall(sim_now_ps(), kernel_end - sim_now_ps(), 0, m_write_drain);
        sim_wait_until_ps(kernel_end);
        if (c_tensor >= 0) m_l2->retain(c_tensor, g.batch * g.groups * g.m * g.n * eb);
    }

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

}  // namespace

std::unique_ptr<Machine> create_gpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<GpuMachine>(make_gpu_config(params), trace);
}

}  // namespace archsim
