#include "arch/cpu/repeat_replay.h"

#include <stdexcept>

namespace archsim {

bool RepeatReplay::leave_before(size_t q, bool& sampled) {
    if (m_region < 0 || m_repeats.where(q).region == m_region) return false;
    const bool restored = m_mode == Mode::Replay && m_end_by_copy;
    sampled = m_copy.sampled;
    leave();
    return restored;
}

uint64_t RepeatReplay::accesses() const {
    uint64_t n = 0;
    for (const Cache* c : m_caches) n += c->clock();
    return n;
}

uint64_t RepeatReplay::ways() const {
    uint64_t n = 0;
    for (const Cache* c : m_caches) n += static_cast<uint64_t>(c->sets() * c->ways());
    return n;
}

uint64_t RepeatReplay::live_ways(const SetSample* live) const { return live ? ways() / live->weight() : ways(); }

void RepeatReplay::enter(int32_t region, size_t instance) {
    m_region = region;
    m_r = m_repeats.regions()[static_cast<size_t>(region)];
    m_mode = Mode::Record;
    m_instance = instance;
    m_checks = 0;
    m_gen_prev = 0;
    m_gen = ++m_gens;
    m_unkept = false;
    m_snaps.clear(), m_prev_snaps.clear();
    m_has_copy = false, m_seen_q = false;
    m_acc_copy = accesses();
}

void RepeatReplay::leave() {
    if (m_mode == Mode::Replay) {
        if (!m_end_by_copy) throw std::logic_error("repeat replay: left a region before the end of its replay");
        // the state at the region's stop is the copy's, renamed forward a whole number of periods
        const int64_t steps = static_cast<int64_t>((m_r.stop() - m_copy_at) / m_r.period);
        for (size_t i = 0; i < m_caches.size(); ++i) *m_caches[i] = m_copy.caches[i];
        rename_forward(steps, m_copy.live);
    }
    m_mode = Mode::Idle;
    m_region = -1;
    m_snaps.clear(), m_prev_snaps.clear();
    m_has_copy = false;  // its buffers stay for the next region's copies
}

void RepeatReplay::rename_forward(int64_t steps, const SetSample& live_sets) {
    const uint64_t modulus = static_cast<uint64_t>(live_sets.modulus);
    const std::vector<uint8_t> live = live_sets.residue_mask();
    std::unordered_map<int32_t, int32_t> renamed;
    for (Cache* c : m_caches)
        c->rename_lines([&](uint64_t line) {
            if (!live[line % modulus]) return line;  // a dead set: refilled before it is read
            const uint64_t to = rename(line, steps, &renamed);
            if (to == Cache::kUnmapped) throw std::logic_error("repeat replay: a cached line has no counterpart");
            return to;
        });
}

void RepeatReplay::start_instance(size_t n) {
    const bool next = n == m_instance + 1;
    m_instance = n;
    if (m_mode != Mode::Record) return;  // Replay: the records stay; Idle: nothing to record
    if (!m_prev_snaps.empty()) ++m_checks;  // the instance just ended compared with the one before
    if (m_checks >= kMaxChecks) {
        m_mode = Mode::Idle;
        m_snaps.clear(), m_prev_snaps.clear();
        return;
    }
    m_prev_snaps = next ? std::move(m_snaps) : std::map<size_t, Snapshot>{};
    m_snaps.clear();
    m_gen_prev = next ? m_gen : 0;
    m_gen = ++m_gens;
}

bool RepeatReplay::on_kernel(size_t q, uint64_t extra, MemoKey& key, const SetSample* live) {
    const KernelRepeats::Where w = m_repeats.where(q);
    if (w.region != m_region) {
        if (m_region >= 0) leave();  // leave_before() did it unless the caller skipped it
        if (w.region < 0) return false;
        enter(w.region, w.instance);
    } else if (w.instance != m_instance) {
        start_instance(w.instance);
    }
    const size_t p = m_r.period;
    if (m_mode == Mode::Replay && !m_end_by_copy && q >= m_replay_to) {
        // no copy for the region's end: the replay ends a whole number of periods after it
        // began, the caches renamed forward to there, and the rest of the region is simulated
        if (q != m_replay_to) throw std::logic_error("repeat replay: the replay's last kernel was skipped");
        rename_forward(static_cast<int64_t>((q - m_replay_from) / p), m_replay_live);
        m_mode = Mode::Idle;
    }
    if (m_mode == Mode::Idle) return false;
    key.add(uint64_t{0x5E9EA7}).add(m_region).add(uint64_t(w.offset));
    if (m_mode == Mode::Replay) {
        key.add(replay_gen(w.offset));
        return true;
    }
    // a copy at each copy point (first + tail + k x period) that is worth it, the state there
    // being the one now: the region's end is a whole number of periods after one of them
    const size_t c0 = m_r.first + m_r.tail;
    const uint64_t acc = accesses();
    if (q >= c0) {
        const size_t c = c0 + (q - c0) / p * p;
        if (!m_seen_q || c > m_q) {
            m_has_copy = false;
            if (acc - m_acc_copy >= m_worth * ways()) {
                if (m_copy.caches.size() != m_caches.size()) {
                    m_copy.caches.clear();
                    for (const Cache* cache : m_caches) m_copy.caches.push_back(*cache);
                } else {  // into the buffers of the last copy
                    for (size_t i = 0; i < m_caches.size(); ++i) m_copy.caches[i] = *m_caches[i];
                }
                m_copy.live = live ? *live : SetSample::none();
                m_copy.sampled = live != nullptr;
                m_copy_at = c, m_has_copy = true;
            }
            m_acc_copy = acc;
        }
    }
    m_q = q, m_seen_q = true;
    // compare with the same kernel one instance earlier, if it was snapshot and the period
    // between was recorded in full
    auto it = m_prev_snaps.find(w.offset);
    if (it != m_prev_snaps.end() && (!m_unkept || m_unkept_q + p < q) && it->second.extra == extra &&
        it->second.sampled == (live != nullptr) && matches(it->second, live)) {
        const size_t x = m_r.stop();
        const bool by_copy = m_has_copy && m_copy_at <= q && m_copy_at + p > q;
        const size_t to = q + (x - 1 - q) / p * p;  // without a copy: the last kernel a whole number of periods on
        if (by_copy || to > q) {
            m_mode = Mode::Replay;
            m_phase = w.offset, m_replay_from = q, m_replay_to = to, m_end_by_copy = by_copy;
            m_replay_live = live ? *live : SetSample::none();
            m_snaps.clear(), m_prev_snaps.clear();
            key.add(replay_gen(w.offset));
            return true;
        }
    }
    // snapshot the instance's first kernels for the next instance to compare with: the first
    // always, the others while the instance's accesses so far are worth them
    const bool later = w.instance + 1 < m_r.instances || (w.instance + 1 == m_r.instances && w.offset < m_r.tail);
    if (later && m_snaps.size() < kMaxOffsets && (m_snaps.empty() || acc - m_acc_snap >= m_worth * live_ways(live))) {
        m_acc_snap = acc;
        Snapshot s{contents(live), extra, live != nullptr};
        m_snaps.emplace(w.offset, std::move(s));
    }
    key.add(m_gen);
    return true;
}

void RepeatReplay::kept(bool k) {
    if (!k) m_unkept = true, m_unkept_q = m_q;
}

std::vector<uint64_t> RepeatReplay::contents(const SetSample* live) const {
    std::vector<uint64_t> out;
    out.reserve(live_ways(live));
    for (const Cache* c : m_caches)
        c->visit_lru_order([](uint64_t line) { return line; }, [&](uint64_t v) {
            out.push_back(v);
            return true;
        }, live);
    return out;
}

bool RepeatReplay::matches(const Snapshot& s, const SetSample* live) const {
    size_t i = 0;
    for (const Cache* c : m_caches) {
        const bool same = c->visit_lru_order([&](uint64_t line) { return rename(line, -1); },
                                             [&](uint64_t v) { return i < s.lines.size() && s.lines[i++] == v; }, live);
        if (!same) return false;
    }
    return i == s.lines.size();
}

uint64_t RepeatReplay::rename(uint64_t line, int64_t steps, std::unordered_map<int32_t, int32_t>* memo) const {
    const uint64_t addr = line * m_line_bytes;
    const int32_t t = m_layout.owner(addr);
    if (t < 0) return line;  // scratch (packed panels) and the nameless page: the same every instance
    auto step_from = [&](int32_t from) {
        int32_t u = steps < 0 ? m_repeats.prev(m_region, from) : from;
        for (int64_t s = 0; s < steps && u >= 0; ++s) u = m_repeats.next(m_region, u);
        return u;
    };
    // the bytes' owner, or else a view of them that the region's kernels name (a backward
    // region may read a saved activation only through a Reshape of it)
    auto step = [&] {
        int32_t u = step_from(t);
        for (const int32_t v : m_layout.views_of(t)) {
            if (u >= 0) break;
            u = step_from(v);
        }
        return u;
    };
    int32_t u = -1;
    if (memo) {
        auto found = memo->find(t);
        u = found != memo->end() ? found->second : ((*memo)[t] = step());
    } else {
        u = step();
    }
    if (u < 0) return Cache::kUnmapped;
    return (m_layout.base(u) + (addr - m_layout.base(t))) / m_line_bytes;
}

}  // namespace archsim
