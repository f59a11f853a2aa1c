#include "arch/cpu/repeat_replay.h"

#include <stdexcept>

namespace archsim {

bool RepeatReplay::on_kernel(size_t q, uint64_t extra, MemoKey& key) {
    const KernelRepeats::Where w = m_repeats.where(q);
    if (w.region != m_region) {
        leave_region();
        m_region = w.region;
        if (m_region < 0) return false;
        start_instance(w.instance, extra);
    } else if (m_region < 0) {
        return false;
    } else if (w.instance != m_instance) {
        start_instance(w.instance, extra);
    }
    if (m_mode == Mode::Idle) return false;
    key.add(uint64_t{0x5E9EA7}).add(m_region).add(uint64_t(w.offset)).add(m_gen);
    return true;
}

void RepeatReplay::start_instance(size_t n, uint64_t extra) {
    if (m_mode == Mode::Replay) {  // the state at n's start is the one at n - 1's renamed: replay on
        m_instance = n;
        return;
    }
    const bool after_record = m_mode == Mode::Record && m_complete && m_instance + 1 == n;
    m_instance = n;
    if (m_checks >= kMaxChecks) {
        m_mode = Mode::Idle;
        return;
    }
    ++m_checks;
    if (after_record && extra == m_snapshot_extra && matches_snapshot()) {
        m_mode = Mode::Replay;  // replays instance n - 1's records (m_gen)
        m_replay_from = n;
        return;
    }
    m_mode = Mode::Record;
    m_gen = ++m_gens;
    m_complete = true;
    m_snapshot = contents();
    m_snapshot_extra = extra;
}

void RepeatReplay::leave_region() {
    if (m_mode == Mode::Replay) {  // instances m_replay_from .. m_instance ran as replays
        const int64_t steps = static_cast<int64_t>(m_instance - m_replay_from + 1);
        for (Cache* c : m_caches)
            c->rename_lines([&](uint64_t line) {
                const uint64_t to = rename(line, steps);
                if (to == Cache::kUnmapped) throw std::logic_error("repeat replay: a cached line has no counterpart");
                return to;
            });
    }
    m_mode = Mode::Idle;
    m_checks = 0;
    m_complete = true;
    m_snapshot.clear();
}

std::vector<uint64_t> RepeatReplay::contents() const {
    std::vector<uint64_t> out;
    for (const Cache* c : m_caches)
        c->visit_lru_order([](uint64_t line) { return line; }, [&](uint64_t v) {
            out.push_back(v);
            return true;
        });
    return out;
}

bool RepeatReplay::matches_snapshot() const {
    size_t i = 0;
    for (const Cache* c : m_caches) {
        const bool same = c->visit_lru_order([&](uint64_t line) { return rename(line, -1); },
                                             [&](uint64_t v) { return i < m_snapshot.size() && m_snapshot[i++] == v; });
        if (!same) return false;
    }
    return i == m_snapshot.size();
}

uint64_t RepeatReplay::rename(uint64_t line, int64_t steps) const {
    const uint64_t addr = line * m_line_bytes;
    const int32_t t = m_layout.owner(addr);
    if (t < 0) return line;  // scratch (packed panels) and the nameless page: the same every instance
    int32_t u = t;
    if (steps < 0) u = m_repeats.prev(t);
    for (int64_t s = 0; s < steps && u >= 0; ++s) u = m_repeats.next(u);
    if (u < 0) return Cache::kUnmapped;
    return (m_layout.base(u) + (addr - m_layout.base(t))) / m_line_bytes;
}

}  // namespace archsim
