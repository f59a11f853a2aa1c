#include "arch/cpu/cpu_machine.h"

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

namespace {

constexpr uint64_t kTensorBase = 1ull << 30;      // activations and weights from here up
constexpr uint64_t kPackedB = 1ull << 46;         // the shared packed B panel, then each core's packed A block (packed_a())
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
    CpuMachine(const CpuConfig& cfg, TraceWriter& trace)
        : MachineBase(trace, cfg.clock_mhz, cfg.static_w, cfg.precision_name,
                      RoutingRules{cfg.fuse_elementwise, /*thin_grouped_conv_streams=*/true, 0}),
          m_cfg(cfg), m_block(choose_blocking(cfg)) {
        CpuComponents c;
        c.cpu = m_op_component = m_rec.lane("cpu");
        for (int64_t i = 0; i < cfg.cores; ++i) c.cores.push_back(m_rec.compute("core" + std::to_string(i), "compute", cfg.mac_pj(), cfg.mac_rate()));
        c.vector = m_rec.compute("simd", "vector", cfg.mac_pj_by.fp32 / 2, 2 * cfg.simd_macs.fp32 * double(cfg.cores));
        c.pack = m_rec.lane("packing");
        c.l1 = m_rec.memory("l1d", cfg.l1.pj_per_byte);
        c.l2 = m_rec.memory("l2", cfg.l2.pj_per_byte);
        c.l3 = m_rec.memory("l3", cfg.l3.pj_per_byte);
        DramConfig dram = cfg.dram;
        dram.bandwidth_gbps *= cfg.eff_dram;  // what streams sustain
        m_dram = std::make_unique<DramPort>(m_rec, dram, nullptr);  // the L3 is the DRAM's initiator
        m_l3 = std::make_unique<SharedL3>("l3", cfg);
        m_l3->dram_socket.bind(m_dram->target().socket);
        for (int64_t i = 0; i < cfg.cores; ++i) {
            m_cores.push_back(std::make_unique<CpuCore>(("core" + std::to_string(i)).c_str(), i, cfg));
            m_cores.back()->socket.bind(m_l3->socket);
        }
        m_sched = std::make_unique<CoreSchedule>(m_cfg, m_cores, m_rec, std::move(c));
        std::vector<CpuCore*> cores;
        for (auto& core : m_cores) cores.push_back(core.get());
        m_units = std::make_unique<UnitReplay>(std::move(cores), &m_ff);
        m_sample = SetSample::spread(cfg.sample_ratio(), cfg.sample_modulus());
        m_launch = m_rec.stall_cause("launch", "a primitive's dispatch and thread fork/join (core.op_overhead_us)");
        if (cfg.tdp_w > 0) enable_power(checked_limit_spec(cfg.static_w, cfg.tdp_w, cfg.clock_mhz));
    }

    uint64_t units_replayed() const override { return m_units->units_replayed(); }
    std::string approximations() const override {
        std::string out;
        if (m_sampled_ops) {
            char l3s[32];
            std::snprintf(l3s, sizeof l3s, "%g", m_cfg.sample_min_l3s);
            out = "cache set sampling (1 set in " + std::to_string(m_sample.weight()) + ") on " + std::to_string(m_sampled_ops) +
                  " operator(s) spanning >= " + l3s + "x the L3";
        }
        if (m_ff.loops)
            out += (out.empty() ? "" : "; ") + std::string("steady-state fast-forward skipped ") + std::to_string(m_ff.units_skipped) +
                   " of " + std::to_string(m_ff.units_skipped + m_ff.units_run) + " GEMM loop units";
        return out;
    }

    std::string not_modeled() const override {
        return "per-instruction core energy (fetch, decode, out-of-order scheduling, register files, clock tree): dynamic energy "
               "is the SIMD datapath's, the caches' and DRAM's only, far below a loaded CPU's (docs/power_validation.md)";
    }

protected:
    // ---- kernel memoization: whole repeated instances (repeat_replay.h) -------------------------
    bool memo_epilogues() const override { return true; }
    bool memo_state(const Operator& op, const OpGraph& graph, const std::vector<int32_t>&, MemoKey& key) override {
        if (!m_cfg.replay_repeats) return false;
        layout(graph);
        const size_t q = kernel_position(graph, static_cast<uint32_t>(&op - graph.ops().data()));
        bool sampled = false;  // leaving replayed instances: the mode in force where they end
        if (m_replay->leave_before(q, sampled) && sampled != m_sampling) {
            m_sampling = sampled;
            for (auto& core : m_cores) core->set_sampling(sample_in_force());
        }
        MemoKey extra;  // what a kernel depends on besides the caches
        extra.add(m_sampling);
        m_dram->memo_key(extra, sim_now_ps());
        m_sampled_from = m_sampled_ops, m_ff_from = m_ff;
        // under set sampling only the sampled sets are live (the others are refilled on leaving it)
        return m_replay->on_kernel(q, extra.value(), key, m_sampling ? &m_sample : nullptr);
    }
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override {
        return std::make_shared<const KernelChange>(
            KernelChange{m_dram->memo_save(end_ps), m_sampled_ops - m_sampled_from, m_ff - m_ff_from});
    }
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps, bool) override {
        const KernelChange& c = *std::any_cast<const std::shared_ptr<const KernelChange>&>(change);
        m_dram->memo_restore(c.dram, end_ps);
        m_sampled_ops += c.sampled_ops;
        m_ff += c.ff;
    }
    void memo_kept(bool kept) override { m_replay->kept(kept); }

    void begin_op(const Operator& op, const OpGraph& graph, Route r) override {
        // a kernel simulated while instances replay would meet caches that are not yet its own
        if (m_replay && m_replay->replaying()) throw std::logic_error("CPU model: kernel '" + op.name + "' simulated inside a replayed instance");
        if (r != Route::FusedEpilogue) choose_sampling(op, graph);  // an epilogue runs in its producer's mode
        m_sched->start_all(sim_now_ps());
        if (r != Route::FusedEpilogue && m_cfg.op_overhead_us > 0)  // dispatch and fork/join
            m_sched->stall_now(sim_now_ps(), m_cfg.op_overhead_us * 1e6, m_launch);
    }
    void end_op(const Operator&, const OpGraph&, Route) override { sim_wait_until_ps(m_sched->end_ps()); }
    void contraction(const Operator& op, const OpGraph& graph) override {
        const int64_t cores = op.threads > 0 ? std::min<int64_t>(op.threads, m_cfg.cores) : m_cfg.cores;
        for_each_gemm(op, [&](size_t, const GemmView& g) {
            for (int64_t rep = 0; rep < g.repeat; ++rep) {
                const int64_t insts = g.batch * g.groups;
                // a batched GEMM's instances are units of one loop (unit_replay.h), where they move uniformly
                const bool loop = insts >= 3 && begin_instance_loop(graph, g, cores);
                for (int64_t inst = 0; inst < insts; ++inst) {
                    for (int64_t c = 0; loop && c < cores; ++c) m_units->unit_start(c, inst);
                    gemm(graph, g, inst, cores, op.path == KernelPath::Blas);
                }
                if (loop) m_units->end_loop();
            }
        });
    }
    void streaming(const Operator& op, const OpGraph& graph) override { stream_kernel(op, graph, op.inputs, true); }
    /// A post-op of its producer (oneDNN): reads only its other inputs.
    void fused_epilogue(const Operator& op, const OpGraph& graph) override { stream_kernel(op, graph, epilogue_side_inputs(op), false); }

private:
    // ---- graph facts --------------------------------------------------------------------------
    int64_t bytes_of(const Tensor& t) const { return run_bytes(t, m_cfg.precision); }
    /// Byte address of tensor `t` (TensorLayout).
    uint64_t base(int32_t t, const OpGraph& g) { return layout(g).base(t); }
    /// The address plan of `g` (made on first use, with the repeat replay that relies on it).
    TensorLayout& layout(const OpGraph& g) {
        if (m_layout_of == &g) return *m_layout;
        // corresponding lines of repeated instances share a set in every cache: align to the
        // least common multiple of the caches' set spans
        uint64_t align = 4096;
        std::vector<Cache*> caches;
        for (auto& core : m_cores) caches.push_back(&core->l1()), caches.push_back(&core->l2());
        caches.push_back(&m_l3->cache());
        for (const Cache* c : caches) align = std::lcm(align, static_cast<uint64_t>(c->sets() * c->line_bytes()));
        m_layout = std::make_unique<TensorLayout>(g, kernel_repeats(g), m_cfg.precision, kTensorBase, align,
                                                  static_cast<uint64_t>(m_cfg.sample_modulus() * m_cfg.line_bytes));
        m_replay = std::make_unique<RepeatReplay>(kernel_repeats(g), *m_layout, std::move(caches), m_cfg.line_bytes);
        m_layout_of = &g;
        choose_set_storage(g);
        return *m_layout;
    }

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
    bool begin_instance_loop(const OpGraph& graph, const GemmView& g, int64_t cores) {
        if (!replay_units() || !even_rows(g)) return false;
        const uint64_t e = static_cast<uint64_t>(operand_bytes(m_cfg.precision));
        const int64_t insts = g.batch * g.groups;
        const uint64_t a_step = static_cast<uint64_t>(g.m * g.k) * e;
        const uint64_t b_step = static_cast<uint64_t>(g.k * g.n) * e, c_step = static_cast<uint64_t>(g.m * g.n) * e;
        std::vector<MovingRange> ranges;
        auto add = [&](int32_t t, uint64_t step) {
            const uint64_t lo = base(t, graph);
            ranges.push_back({lo, lo + static_cast<uint64_t>(insts) * step, step});
        };
        add(g.a.tensor, a_step);
        if (!g.b_is_weight || g.batch == 1) {
            if (!(g.b_is_weight && g.groups == 1)) add(g.b.tensor, b_step);
        } else if (g.groups > 1) {
            return false;
        }
        add(g.c.tensor, c_step);
        std::vector<int64_t> full(static_cast<size_t>(m_cfg.cores), 0);
        std::fill(full.begin(), full.begin() + cores, insts);
        m_units->begin_loop(std::move(ranges), std::move(full), sample_in_force());
        return true;
    }

    // ---- kernels ------------------------------------------------------------------------------
    /// One GEMM instance (batch entry x group) of GEMM view `g`, blocked and split over the first
    /// `cores` cores. `blas`: the system BLAS's driver, which packs both operands at every call
    /// (whatever their shape, weights included) at core.blas_pack_bytes_per_cycle.
    void gemm(const OpGraph& graph, const GemmView& g, int64_t inst, int64_t cores, bool blas) {
        Blocking b = fit_blocking(m_block, g.m, g.n, g.k);
        // BLIS divides the ic loop's rows evenly among the threads: mc shrinks so that every core
        // gets the same rows (split_rows; fewer rows than cores x mr split the columns too,
        // below). The cache sizes only cap a block: a larger L2 (a larger mc) once left M = 784
        // in one block of 784 rows on 4 of 96 cores.
        if (g.m > b.mc || cores > 1) b.mc = split_rows(g.m, b.mc, b.mr, cores);
        const uint64_t e = static_cast<uint64_t>(operand_bytes(m_cfg.precision));
        const int32_t a_t = g.a.tensor, b_t = g.b.tensor, c_t = g.c.tensor;
        // A: row-major with `a_cols` distinct columns per row (implicit im2col folds the taps)
        const int64_t a_unique = g.a_unique_elems > 0 ? std::min(g.a_unique_elems, g.m * g.k) : g.m * g.k;
        const int64_t a_cols = std::max<int64_t>(1, std::min<int64_t>(g.k, (a_unique + g.m - 1) / g.m));
        const uint64_t a_base = base(a_t, graph) + static_cast<uint64_t>(inst * a_unique) * e;
        const int64_t group = inst % g.groups;
        const uint64_t b_base = base(b_t, graph) + static_cast<uint64_t>((g.b_is_weight ? group : inst) * g.k * g.n) * e;
        const uint64_t c_base = base(c_t, graph) + static_cast<uint64_t>(inst * g.m * g.n) * e;
        const double rate = m_cfg.mac_rate() * m_cfg.eff_gemm;
        // BLIS packs an operand to reuse it; one used by a single micro-kernel row (m <= mr) or
        // column (n <= nr) of calls is read in place, as oneDNN's GEMV-like kernels do. Weights
        // reordered at load time are already in panel layout. A convolution's input is read in
        // place (oneDNN's direct convolution on a blocked layout: no im2col copy).
        const bool prepacked = g.b_is_weight && m_cfg.prepacked_weights && !blas;
        const bool pack_b = blas || (g.m > b.mr && !prepacked), pack_a = blas || (g.n > b.nr && !g.a.in_place);
        // cycles per packed byte: a load and a store per byte at core.pack_bytes_per_cycle, or the
        // BLAS's measured rate per byte packed
        const double pack_cycles_per_byte = blas && m_cfg.blas_pack_bytes_per_cycle > 0 ? 1.0 / m_cfg.blas_pack_bytes_per_cycle
                                                                                       : 2.0 / m_cfg.pack_bytes_per_cycle;
        for (int64_t jc = 0; jc < g.n; jc += b.nc) {
            const int64_t ncb = std::min(b.nc, g.n - jc);
            for (int64_t pc = 0; pc < g.k; pc += b.kc) {
                const int64_t kcb = std::min(b.kc, g.k - pc);
                // the cores pack the kc x nc B panel together, kc rows split among them
                const int64_t rows_per = (kcb + cores - 1) / cores;
                for (int64_t c = 0; c < cores && pack_b; ++c) {
                    const int64_t r0 = c * rows_per, rows = std::min(rows_per, kcb - r0);
                    if (rows <= 0) break;
                    CpuCore& cc = *m_cores[static_cast<size_t>(c)];
                    if (!m_units->block(c)) {
                        cc.touch_rows(b_base + static_cast<uint64_t>((pc + r0) * g.n + jc) * e, rows, static_cast<uint64_t>(ncb) * e,
                                      static_cast<uint64_t>(g.n) * e, false);
                        cc.touch(kPackedB + static_cast<uint64_t>(r0 * ncb) * e, static_cast<uint64_t>(rows * ncb) * e, true, Fill::Claim);
                        m_units->block_done(c);
                    }
                    const uint64_t bytes = static_cast<uint64_t>(rows * ncb) * e;
                    m_sched->finish_block(c, static_cast<double>(bytes) * pack_cycles_per_byte * m_cfg.cycle_ps(), 0, 0, 0, bytes);
                }
                if (pack_b) m_sched->barrier();
                // macro-kernel work: mc-row blocks; with fewer blocks than cores, split the nr panels too
                const int64_t ic_blocks = (g.m + b.mc - 1) / b.mc;
                const int64_t panels = (ncb + b.nr - 1) / b.nr;
                const int64_t jsplit = ic_blocks >= cores ? 1 : std::min(panels, (cores + ic_blocks - 1) / ic_blocks);
                std::vector<std::vector<int64_t>> queue(static_cast<size_t>(cores));
                for (int64_t w = 0; w < ic_blocks * jsplit; ++w) queue[static_cast<size_t>(w % cores)].push_back(w);
                std::vector<size_t> next(static_cast<size_t>(cores), 0);
                // a core's mc-row blocks are units of one loop (unit_replay.h): A's rows and C's move
                // down by `cores` blocks from one to the next, the packed operands stay
                const bool block_loop = replay_units() && even_rows(g) && !m_units->in_loop() && jsplit == 1 && ic_blocks >= 4 * cores;
                if (block_loop) {
                    const uint64_t rows = static_cast<uint64_t>(cores * b.mc);
                    const uint64_t a0 = a_base, c0 = c_base;
                    std::vector<int64_t> full(static_cast<size_t>(m_cfg.cores), 0);
                    for (int64_t c = 0; c < cores; ++c)
                        for (const int64_t w : queue[static_cast<size_t>(c)]) full[static_cast<size_t>(c)] += (w + 1) * b.mc <= g.m;
                    m_units->begin_loop({{a0, a0 + static_cast<uint64_t>(g.m * a_cols) * e, rows * static_cast<uint64_t>(a_cols) * e},
                                         {c0, c0 + static_cast<uint64_t>(g.m * g.n) * e, rows * static_cast<uint64_t>(g.n) * e}},
                                        std::move(full), sample_in_force());
                }
                for (int64_t c; (c = m_sched->next_core(next, queue)) >= 0;) {
                    const int64_t w = queue[static_cast<size_t>(c)][next[static_cast<size_t>(c)]++];
                    const int64_t ib = w / jsplit, js = w % jsplit;
                    const int64_t ic = ib * b.mc, mcb = std::min(b.mc, g.m - ic);
                    const int64_t p0 = js * panels / jsplit, p1 = (js + 1) * panels / jsplit;
                    CpuCore& cc = *m_cores[static_cast<size_t>(c)];
                    if (block_loop) m_units->unit_start(c, static_cast<int64_t>(next[static_cast<size_t>(c)]) - 1);
                    const bool replayed = m_units->block(c);
                    const uint64_t ap = packed_a(c);
                    // pack the A block: its rows' source bytes, into this core's buffer
                    const int64_t src_cols = std::min<int64_t>(kcb, a_cols);
                    const int64_t src_col0 = (pc % a_cols + src_cols <= a_cols) ? pc % a_cols : a_cols - src_cols;
                    if (pack_a && !replayed) {
                        cc.touch_rows(a_base + static_cast<uint64_t>(ic * a_cols + src_col0) * e, mcb,
                                      static_cast<uint64_t>(src_cols) * e, static_cast<uint64_t>(a_cols) * e, false);
                        cc.touch(ap, static_cast<uint64_t>(mcb * kcb) * e, true, Fill::NoFetch);
                    }
                    const uint64_t packed = pack_a ? static_cast<uint64_t>(mcb * kcb) * e : 0;
                    const uint64_t a_row = static_cast<uint64_t>(a_cols) * e, c_row = static_cast<uint64_t>(g.n) * e;
                    const uint64_t a_src = a_base + static_cast<uint64_t>(ic * a_cols + src_col0) * e;
                    const uint64_t c_blk = c_base + static_cast<uint64_t>(ic * g.n + jc) * e;
                    // B micro-panel jr (kcb x cols): where the micro-kernel reads it
                    auto b_panel = [&](int64_t jr, int64_t cols) {
                        if (pack_b) return MovingBox::contiguous(kPackedB + static_cast<uint64_t>(jr * b.nr * kcb) * e, static_cast<uint64_t>(kcb * cols) * e, 0);
                        if (prepacked)  // panel (jc / nr + jr) of K x nr, rows pc.. contiguous
                            return MovingBox::contiguous(b_base + static_cast<uint64_t>(((jc / b.nr + jr) * g.k + pc) * b.nr) * e,
                                                         static_cast<uint64_t>(kcb * cols) * e, 0);
                        return MovingBox::down(b_base + static_cast<uint64_t>(pc * g.n + jc + jr * b.nr) * e, kcb,
                                               static_cast<uint64_t>(cols) * e, c_row, 0);
                    };
                    // one mr x cols micro-kernel call: its A micro-panel, B micro-panel and C tile
                    auto micro = [&](int64_t jr, int64_t ir, int64_t rows, int64_t cols) {
                        if (pack_a) cc.touch(ap + static_cast<uint64_t>(ir * kcb) * e, static_cast<uint64_t>(rows * kcb) * e, false);
                        else cc.touch_rows(a_src + static_cast<uint64_t>(ir) * a_row, rows, static_cast<uint64_t>(src_cols) * e, a_row, false);
                        const MovingBox bp = b_panel(jr, cols);
                        cc.touch_rows(bp.base, bp.rows, bp.row_bytes, bp.stride, false);
                        cc.touch_rows(c_blk + static_cast<uint64_t>(ir) * c_row + static_cast<uint64_t>(jr * b.nr) * e, rows,
                                      static_cast<uint64_t>(cols) * e, c_row, true);
                    };
                    const MovingBox a_fixed = pack_a ? MovingBox::contiguous(ap, static_cast<uint64_t>(mcb * kcb) * e, 0)
                                                     : MovingBox::down(a_src, mcb, static_cast<uint64_t>(src_cols) * e, a_row, 0);
                    // a column of micro-kernels (micro-panel jr of B down the block's rows), its
                    // mr-row calls fast-forwarded once they repeat (A and C move down, B stays)
                    auto column = [&](int64_t jr, int64_t cols) {
                        const int64_t full = mcb / b.mr;
                        std::vector<MovingBox> boxes{
                            pack_a ? MovingBox::contiguous(ap, static_cast<uint64_t>(b.mr * kcb) * e, static_cast<uint64_t>(b.mr * kcb) * e)
                                   : MovingBox::down(a_src, b.mr, static_cast<uint64_t>(src_cols) * e, a_row, b.mr),
                            b_panel(jr, cols), MovingBox::down(c_blk - static_cast<uint64_t>(jc) * e, b.mr, c_row, c_row, b.mr)};
                        SteadyLoop rows_loop(cc, std::move(boxes), full, fast_forward(), &m_ff);
                        rows_loop.run([&](int64_t q) { micro(jr, q * b.mr, b.mr, cols); });
                        if (mcb % b.mr) micro(jr, full * b.mr, mcb % b.mr, cols);
                    };
                    if (!replayed) {
                        // the block's columns, fast-forwarded once they repeat (B and C move right, A stays;
                        // C's box spans every row of C, as older rows' tiles leave the L2 in step)
                        const int64_t full_cols = std::min(p1, ncb / b.nr) - p0;
                        {
                            MovingBox b_move = b_panel(p0, b.nr);
                            if (pack_b) b_move = MovingBox::contiguous(b_move.base, b_move.row_bytes, static_cast<uint64_t>(kcb * b.nr) * e);
                            else if (prepacked) b_move = MovingBox::contiguous(b_move.base, b_move.row_bytes, static_cast<uint64_t>(g.k * b.nr) * e);
                            else b_move.col_step = static_cast<uint64_t>(b.nr) * e;
                            const MovingBox c_move = MovingBox::right(c_base + static_cast<uint64_t>(jc + p0 * b.nr) * e, g.m,
                                                                      static_cast<uint64_t>(b.nr) * e, c_row, static_cast<uint64_t>(b.nr) * e);
                            SteadyLoop cols_loop(cc, {a_fixed, b_move, c_move}, std::max<int64_t>(0, full_cols), fast_forward(), &m_ff);
                            cols_loop.run([&](int64_t j) { column(p0 + j, b.nr); });
                        }
                        for (int64_t jr = p0 + std::max<int64_t>(0, full_cols); jr < p1; ++jr) column(jr, std::min(b.nr, ncb - jr * b.nr));
                        m_units->block_done(c);
                    }
                    const int64_t cols_done = std::min(p1 * b.nr, ncb) - p0 * b.nr;
                    const uint64_t macs = static_cast<uint64_t>(mcb * cols_done * kcb);
                    m_sched->finish_block(c, static_cast<double>(packed) * pack_cycles_per_byte * m_cfg.cycle_ps(),
                                 static_cast<double>(macs) / rate * m_cfg.cycle_ps(), macs, 0, packed);
                }
                if (block_loop) m_units->end_loop();
                m_sched->barrier();
            }
        }
    }

    /// A memory-bound kernel: every core streams its share of `inputs` and
    /// outputs through its caches in chunks (stream_plan.h: broadcast operands such as a bias
    /// read whole), computing at the SIMD rate x efficiency.vector.
    void stream_kernel(const Operator& op, const OpGraph& graph, const std::vector<int32_t>& inputs, bool write_outputs) {
        const Tensor* out = !op.outputs.empty() && op.outputs[0] >= 0 ? &graph.tensors()[static_cast<size_t>(op.outputs[0])] : nullptr;
        std::vector<StreamPlan::Stream> streams;
        for (const int32_t t : inputs) {
            if (t < 0) continue;
            const Tensor& in = graph.tensors()[static_cast<size_t>(t)];
            const int64_t bytes = read_bytes(op, t, in, m_cfg.precision);
            if (bytes > 0) streams.push_back({base(t, graph), static_cast<uint64_t>(bytes), false, out ? broadcast_period(in, *out) : 0});
        }
        if (write_outputs)
            for (int32_t t : op.outputs) {
                const int64_t bytes = t >= 0 ? bytes_of(graph.tensors()[static_cast<size_t>(t)]) : 0;
                if (bytes > 0) streams.push_back({base(t, graph), static_cast<uint64_t>(bytes), true, 0});
            }
        const bool direct = op.cost.cls == OpClass::Contraction;
        const uint64_t total_macs = direct ? static_cast<uint64_t>(op.cost.macs) : 0;
        const uint64_t total_ops = op.cost.cls == OpClass::DataMovement ? 0 : (direct ? 2 * total_macs : static_cast<uint64_t>(op.cost.flops));
        // an FMA lane does 2 FLOPs; a scalar reference kernel takes core.reference_cycles_per_op each
        const double flops_per_cycle = op.path == KernelPath::Reference && m_cfg.reference_cycles_per_op > 0
                                           ? 1.0 / m_cfg.reference_cycles_per_op
                                           : 2.0 * m_cfg.simd_macs.fp32 * m_cfg.eff_vector;
        const uint64_t cores = static_cast<uint64_t>(m_cfg.cores);
        uint64_t largest = 0;
        for (const auto& s : streams) largest = std::max(largest, (s.bytes + cores - 1) / cores);
        const uint64_t chunks_per_core = std::max<uint64_t>(1, (largest + kVectorChunkBytes - 1) / kVectorChunkBytes);
        const uint64_t blocks = chunks_per_core * cores;
        const StreamPlan plan(std::move(streams), out ? static_cast<uint64_t>(std::max<int64_t>(0, out->elems())) : 0, blocks,
                              static_cast<uint64_t>(m_cfg.line_bytes));
        std::vector<std::vector<int64_t>> queue(static_cast<size_t>(cores));
        for (uint64_t c = 0; c < cores; ++c)
            for (uint64_t q = 0; q < chunks_per_core; ++q) queue[c].push_back(static_cast<int64_t>(c * chunks_per_core + q));
        std::vector<size_t> next(static_cast<size_t>(cores), 0);
        // each core's chunks are units of one loop (unit_replay.h) when chunk q + 1 touches chunk
        // q's bytes moved by one chunk in every stream
        const bool even = replay_units() && !m_units->in_loop() && chunks_per_core >= 4 && plan.even();
        if (even)
            m_units->begin_loop(plan.ranges(), std::vector<int64_t>(cores, static_cast<int64_t>(chunks_per_core)), sample_in_force());
        for (int64_t c; (c = m_sched->next_core(next, queue)) >= 0;) {
            const uint64_t blk = static_cast<uint64_t>(queue[static_cast<size_t>(c)][next[static_cast<size_t>(c)]++]);
            CpuCore& cc = *m_cores[static_cast<size_t>(c)];
            if (even) m_units->unit_start(c, static_cast<int64_t>(next[static_cast<size_t>(c)]) - 1);
            if (!m_units->block(c)) {
                plan.touch(cc, blk);
                m_units->block_done(c);
            }
            const uint64_t ops = total_ops * (blk + 1) / blocks - total_ops * blk / blocks;
            const uint64_t macs = total_macs * (blk + 1) / blocks - total_macs * blk / blocks;
            m_sched->finish_block(c, 0, std::ceil(static_cast<double>(ops) / flops_per_cycle) * m_cfg.cycle_ps(),
                         macs, ops, 0);
        }
        if (even) m_units->end_loop();
        m_sched->barrier();
    }

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
    void choose_set_storage(const OpGraph& g) {
        uint64_t sampled = 0, all = 0;
        for (const Operator& op : g.ops()) {
            const uint64_t bytes = op_bytes(op, g);
            all += bytes;
            if (samples(op, g)) sampled += bytes;
        }
        const int64_t group = 2 * sampled >= all && sampled > 0 ? m_sample.modulus : 1;
        for (auto& core : m_cores) core->l1().group_sets(group), core->l2().group_sets(group);
        m_l3->cache().group_sets(group);
    }

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
    void choose_sampling(const Operator& op, const OpGraph& graph) {
        const bool sample = samples(op, graph);
        if (sample) ++m_sampled_ops;
        if (sample == m_sampling) return;
        if (m_sampling) {  // back to every line: refill the sets sampling left alone
            for (auto& core : m_cores) core->l1().replicate_sets(m_sample), core->l2().replicate_sets(m_sample);
            m_l3->cache().replicate_sets(m_sample);
        }
        m_sampling = sample;
        for (auto& core : m_cores) core->set_sampling(sample_in_force());
    }

    /// Core `c`'s packed A buffer: the buffers lie back to back after the packed B panel, each
    /// as large as the config's blocking allows (fit_blocking and the row split only shrink it),
    /// so together they spread over the L3's sets as choose_blocking() assumes (buffers 2^32
    /// apart all began in L3 set 0: 96 lines in a 16-way set, whose conflict misses grew with
    /// l1d.kib and l3.kib). Each starts at set 0 of the private L1 and L2 (sizes rounded up to
    /// a multiple of both caches' way spans), so its place in them does not move with the blocking.
    uint64_t packed_a(int64_t c) const {
        const uint64_t e = static_cast<uint64_t>(operand_bytes(m_cfg.precision));
        const uint64_t span = std::lcm(static_cast<uint64_t>(m_cfg.l1.bytes() / m_cfg.l1.ways), static_cast<uint64_t>(m_cfg.l2.bytes() / m_cfg.l2.ways));
        auto spans = [&](uint64_t bytes) { return (bytes + span - 1) / span * span; };
        const uint64_t b_panel = spans(static_cast<uint64_t>(m_block.kc * m_block.nc) * e);
        return kPackedB + b_panel + static_cast<uint64_t>(c) * spans(static_cast<uint64_t>(m_block.mc * m_block.kc) * e);
    }

    CpuConfig m_cfg;
    Blocking m_block;
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

}  // namespace

std::unique_ptr<Machine> create_cpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<CpuMachine>(make_cpu_config(params), trace);
}

}  // namespace archsim
