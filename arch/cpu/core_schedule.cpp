#include "arch/cpu/core_schedule.h"

#include <algorithm>

#include "arch/common/clock.h"

namespace archsim {

double CoreSchedule::end_ps() const { return *std::max_element(m_cursor.begin(), m_cursor.end()); }

void CoreSchedule::stall_now(double t_ps, double dur_ps, StallCauseId cause) {
    m_rec.emit(EventKind::Stall, m_comps.cpu, ps_span(t_ps, dur_ps), {0, 0, CycleClock(m_cfg.cycle_ps()).cycles_of(dur_ps)}, 0, cause);
    start_all(t_ps + dur_ps);
}

void CoreSchedule::pend(int64_t core, EventKind kind, uint16_t comp, double start, double dur, Amount a, StallCauseId cause) {
    m_pending.push_back({core, m_rec.event(kind, comp, ps_span(start, dur), a, m_seq++, cause)});
}

void CoreSchedule::barrier() {
    const auto slowest = std::max_element(m_cursor.begin(), m_cursor.end());
    const int64_t critical = slowest - m_cursor.begin();
    for (auto& [core, e] : m_pending) {
        if (core != critical) e.cycles = 0;
        m_rec.emit(e);
    }
    m_pending.clear();
    std::fill(m_cursor.begin(), m_cursor.end(), *slowest);
}

void CoreSchedule::finish_block(int64_t core, double pack_ps, double compute_ps, uint64_t macs, uint64_t vec_ops,
                                uint64_t packed_bytes) {
    const double start = cursor(core);
    CpuCore& cc = *m_cores[static_cast<size_t>(core)];
    const CoreCounts n = cc.take_counts();
    L3Outcome o;
    const double l3_done = cc.flush(start - sim_now_ps(), o);
    const CycleClock clock(m_cfg.cycle_ps());
    const double line = static_cast<double>(m_cfg.line_bytes);
    const double l2_ps = static_cast<double>(n.l1_misses + n.l2_writebacks) * line / (m_cfg.l2.bytes_per_cycle * m_cfg.eff_cache) * m_cfg.cycle_ps();
    const double busy = pack_ps + compute_ps;
    const double end = std::max({start + busy, start + pack_ps + l2_ps, l3_done});
    const double dur = end - start;
    const uint64_t lb = static_cast<uint64_t>(m_cfg.line_bytes);
    if (macs) pend(core, EventKind::Fold, m_comps.cores[static_cast<size_t>(core)], start, dur, {0, macs, clock.cycles_of(compute_ps)});
    if (vec_ops || (!macs && compute_ps > 0)) pend(core, EventKind::Vector, m_comps.vector, start, dur, {0, vec_ops, clock.cycles_of(compute_ps)});
    if (packed_bytes) pend(core, EventKind::Transfer, m_comps.pack, start, pack_ps, {packed_bytes});
    // ops on cache events = lines that missed that level
    if (n.l1_reads) pend(core, EventKind::SramRead, m_comps.l1, start, dur, {n.l1_reads * lb, n.l1_misses});
    if (n.l1_writes) pend(core, EventKind::SramWrite, m_comps.l1, start, dur, {n.l1_writes * lb});
    if (n.l1_misses) pend(core, EventKind::SramRead, m_comps.l2, start, dur, {n.l1_misses * lb, n.l2_misses});
    if (n.l2_writebacks) pend(core, EventKind::SramWrite, m_comps.l2, start, dur, {n.l2_writebacks * lb});
    if (n.l2_misses) pend(core, EventKind::SramRead, m_comps.l3, start, dur, {n.l2_misses * lb, o.l3_misses});
    if (o.lines > n.l2_misses) pend(core, EventKind::SramWrite, m_comps.l3, start, dur, {(o.lines - n.l2_misses) * lb});
    if (end > start + busy)
        pend(core, EventKind::Stall, m_comps.cpu, start + busy, end - start - busy, {0, 0, clock.cycles_of(end - start - busy)},
             m_operand_load);
    m_cursor[static_cast<size_t>(core)] = end;
}

int64_t CoreSchedule::next_core(const std::vector<size_t>& next, const std::vector<std::vector<int64_t>>& queue) const {
    int64_t best = -1;
    for (size_t c = 0; c < queue.size(); ++c)
        if (next[c] < queue[c].size() && (best < 0 || m_cursor[c] < m_cursor[static_cast<size_t>(best)])) best = static_cast<int64_t>(c);
    return best;
}

}  // namespace archsim
