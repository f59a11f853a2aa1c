#include "arch/cpu/cpu_machine.h"

#include "arch/cpu/cpu_machine_impl.h"

namespace archsim {

CpuMachine::CpuMachine(const CpuConfig& cfg, TraceWriter& trace)
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

std::string CpuMachine::approximations() const {
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

std::string CpuMachine::not_modeled() const {
    return "per-instruction core energy (fetch, decode, out-of-order scheduling, register files, clock tree): dynamic energy "
           "is the SIMD datapath's, the caches' and DRAM's only, far below a loaded CPU's (docs/power_validation.md)";
}

bool CpuMachine::memo_state(const Operator& op, const OpGraph& graph, const std::vector<int32_t>&, MemoKey& key) {
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

std::any CpuMachine::memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) {
    return std::make_shared<const KernelChange>(
        KernelChange{m_dram->memo_save(end_ps), m_sampled_ops - m_sampled_from, m_ff - m_ff_from});
}

void CpuMachine::memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps, bool) {
    const KernelChange& c = *std::any_cast<const std::shared_ptr<const KernelChange>&>(change);
    m_dram->memo_restore(c.dram, end_ps);
    m_sampled_ops += c.sampled_ops;
    m_ff += c.ff;
}

void CpuMachine::begin_op(const Operator& op, const OpGraph& graph, Route r) {
    // a kernel simulated while instances replay would meet caches that are not yet its own
    if (m_replay && m_replay->replaying()) throw std::logic_error("CPU model: kernel '" + op.name + "' simulated inside a replayed instance");
    if (r != Route::FusedEpilogue) choose_sampling(op, graph);  // an epilogue runs in its producer's mode
    m_sched->start_all(sim_now_ps());
    if (r != Route::FusedEpilogue && m_cfg.op_overhead_us > 0)  // dispatch and fork/join
        m_sched->stall_now(sim_now_ps(), m_cfg.op_overhead_us * 1e6, m_launch);
}

void CpuMachine::contraction(const Operator& op, const OpGraph& graph) {
    const int64_t cores = op_cores(op);
    for_each_gemm(op, [&](size_t, const GemmView& g) { gemm_view(graph, g, cores, op.path == KernelPath::Blas); });
}

void CpuMachine::gemm_view(const OpGraph& graph, const GemmView& g, int64_t cores, bool blas) {
    for (int64_t rep = 0; rep < g.repeat; ++rep) {
        const int64_t insts = g.batch * g.groups;
        // a batched GEMM's instances are units of one loop (unit_replay.h), where they move uniformly
        const bool loop = insts >= 3 && begin_instance_loop(graph, g, cores);
        for (int64_t inst = 0; inst < insts; ++inst) {
            for (int64_t c = 0; loop && c < cores; ++c) m_units->unit_start(c, inst);
            gemm(graph, g, inst, cores, blas);
        }
        if (loop) m_units->end_loop();
    }
}

CpuMachine::Trial CpuMachine::trial(const Operator& op, const OpGraph& graph, const GemmView& g, int64_t cores, bool blas, const Blocking& b) {
    layout(graph);  // made before the snapshot: it stays
    std::vector<CpuCore::Snapshot> cores_before;
    for (const auto& core : m_cores) cores_before.push_back(core->snapshot());
    const SharedL3::Snapshot l3_before = m_l3->snapshot();
    const DramPort::Snapshot dram_before = m_dram->snapshot();
    const CoreSchedule::Snapshot sched_before = m_sched->snapshot();
    const FastForwardStats ff_before = m_ff;
    const uint64_t units_before = m_units->units_replayed(), sampled_ops_before = m_sampled_ops;
    const bool sampling_before = m_sampling;
    const bool muted_before = m_rec.mute(true);
    // as the kernel would run: its sampling mode, every core from now, blocking `b`
    choose_sampling(op, graph);
    const double start = sim_now_ps();
    m_sched->start_all(start);
    m_trial_blocking = &b;
    gemm_view(graph, g, cores, blas);
    m_sched->barrier();
    const Trial out{m_sched->end_ps() - start, m_dram->snapshot().bytes - dram_before.bytes};
    m_trial_blocking = nullptr;
    // and back: nothing of the trial remains
    for (size_t c = 0; c < m_cores.size(); ++c) m_cores[c]->restore(cores_before[c]);
    m_l3->restore(l3_before);
    m_dram->restore(dram_before);
    m_sched->restore(sched_before);
    m_ff = ff_before;
    m_units->reset_units_replayed(units_before);
    m_sampled_ops = sampled_ops_before;
    m_sampling = sampling_before;
    for (auto& core : m_cores) core->set_sampling(sample_in_force());
    m_rec.mute(muted_before);
    return out;
}

TensorLayout& CpuMachine::layout(const OpGraph& g) {
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

bool CpuMachine::begin_instance_loop(const OpGraph& graph, const GemmView& g, int64_t cores) {
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

void CpuMachine::choose_set_storage(const OpGraph& g) {
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

void CpuMachine::choose_sampling(const Operator& op, const OpGraph& graph) {
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

std::unique_ptr<Machine> create_cpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<CpuMachine>(make_cpu_config(params), trace);
}

}  // namespace archsim
