#include "arch/cpu/unit_replay.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace archsim {

UnitReplay::UnitReplay(std::vector<CpuCore*> cores, FastForwardStats* stats) : m_stats(stats), m_line(0), m_align_lines(1) {
    for (CpuCore* c : cores) {
        m_cores.push_back(Core{});
        m_cores.back().core = c;
        m_line = static_cast<uint64_t>(c->line_bytes());
        for (const Cache* cache : {&c->l1(), &c->l2()}) m_align_lines = std::lcm(m_align_lines, static_cast<uint64_t>(cache->sets()));
    }
}

void UnitReplay::begin_loop(std::vector<MovingRange> ranges, std::vector<int64_t> full_units, const SetSample& sample) {
    if (m_active) throw std::logic_error("unit replay: a loop begun inside another");
    m_active = true;
    m_ranges.clear();
    for (const MovingRange& r : ranges) m_ranges.push_back({r.lo / m_line, (r.hi + m_line - 1) / m_line, r.step_bytes});
    m_full = std::move(full_units);
    m_full.resize(m_cores.size(), 0);
    m_sample = sample;
    m_sampled_residue = m_sample.residue_mask();
    for (Core& c : m_cores) {
        c.units.clear();
        c.checks = 0;
        c.replay = false;
        c.unit = -1;
        c.next_block = 0;
    }
    // the period: every range's move over P units a whole number of every private cache's set spans
    m_period = 0;
    const uint64_t span = m_align_lines * m_line;
    for (int64_t p = 1; p <= kMaxPeriod && m_period == 0; ++p) {
        bool whole = true;
        for (const Lines& r : m_ranges) whole &= (static_cast<uint64_t>(p) * r.step_bytes) % span == 0;
        if (whole) m_period = p;
    }
    // the ranges' lines must not overlap (a line belongs to one range, or is fixed)
    bool disjoint = true;
    for (size_t i = 0; i < m_ranges.size(); ++i)
        for (size_t j = i + 1; j < m_ranges.size(); ++j) disjoint &= m_ranges[i].hi <= m_ranges[j].lo || m_ranges[j].hi <= m_ranges[i].lo;
    m_enabled = m_period > 0 && disjoint && !m_ranges.empty();
}

bool UnitReplay::sampled_line(uint64_t line) const {
    return !m_sample.active() || m_sampled_residue[static_cast<size_t>(line % static_cast<uint64_t>(m_sample.modulus))] != 0;
}

int UnitReplay::range_of(uint64_t line) const {
    for (size_t r = 0; r < m_ranges.size(); ++r)
        if (line >= m_ranges[r].lo && line < m_ranges[r].hi) return static_cast<int>(r);
    return -1;
}

void UnitReplay::index_ranges(Queued& q) const {
    if (q.indexed) return;
    q.indexed = true;
    if (m_ranges.size() > 254) throw std::logic_error("unit replay: more than 254 moving ranges");
    q.range1.resize(q.lines.size());
    q.span.assign(m_ranges.size(), {~uint64_t{0}, 0});
    for (size_t i = 0; i < q.lines.size(); ++i) {
        const int r = range_of(q.lines[i]);
        q.range1[i] = static_cast<uint8_t>(r + 1);
        if (r < 0) continue;
        auto& [lo, hi] = q.span[static_cast<size_t>(r)];
        lo = std::min(lo, q.lines[i]), hi = std::max(hi, q.lines[i]);
    }
}

void UnitReplay::queue_moved(const Queued& q, std::vector<uint64_t>& to) const {
    for (size_t r = 0; r < q.span.size(); ++r) {  // every line of the range stays in it if its lowest and highest do
        const auto [lo, hi] = q.span[r];
        if (lo > hi) continue;
        const int64_t by = m_shift_lines[r + 1];
        if (static_cast<int64_t>(lo) + by < static_cast<int64_t>(m_ranges[r].lo) || static_cast<int64_t>(hi) + by >= static_cast<int64_t>(m_ranges[r].hi))
            throw std::logic_error("unit replay: a recorded line moved out of its range");
    }
    const size_t n0 = to.size(), n = q.lines.size();
    to.resize(n0 + n);
    uint64_t* out = to.data() + n0;
    const int64_t* shift = m_shift_lines.data();
    for (size_t i = 0; i < n; ++i) out[i] = q.lines[i] + static_cast<uint64_t>(shift[q.range1[i]]);
}

uint64_t UnitReplay::move(uint64_t line, int64_t units) const {
    const int r = range_of(line);
    if (r < 0) return line;
    const Lines& range = m_ranges[static_cast<size_t>(r)];
    // a whole number of lines: units is a multiple of the period, whose move is whole set spans
    const int64_t by = units * static_cast<int64_t>(range.step_bytes) / static_cast<int64_t>(m_line);
    const int64_t to = static_cast<int64_t>(line) + by;
    return to < static_cast<int64_t>(range.lo) || to >= static_cast<int64_t>(range.hi) ? Cache::kUnmapped : static_cast<uint64_t>(to);
}

std::vector<uint64_t> UnitReplay::contents(const Core& c, int64_t units) const {
    std::vector<uint64_t> out;
    for (const Cache* cache : caches(c))
        cache->visit_lru_order([&](uint64_t line) { return units == 0 ? line : move(line, units); },
                               [&](uint64_t v) { return out.push_back(v), true; }, m_sample.active() ? &m_sample : nullptr);
    return out;
}

bool UnitReplay::matches(const Core& c, const std::vector<uint64_t>& earlier) const {
    size_t i = 0;
    for (const Cache* cache : caches(c)) {
        const bool same = cache->visit_lru_order([&](uint64_t line) { return move(line, -m_period); },
                                                 [&](uint64_t v) { return i < earlier.size() && earlier[i++] == v; },
                                                 m_sample.active() ? &m_sample : nullptr);
        if (!same) return false;
    }
    return i == earlier.size();
}

int64_t UnitReplay::room(const Core& c, int64_t want) const {
    // per range, the highest cached line in it bounds how far the contents can move
    std::vector<uint64_t> top(m_ranges.size(), 0);
    std::vector<uint8_t> any(m_ranges.size(), 0);
    for (const Cache* cache : caches(c))
        cache->for_each([&](const Cache::Entry& e) {
            const int r = sampled_line(e.line) ? range_of(e.line) : -1;
            if (r < 0) return;
            const size_t i = static_cast<size_t>(r);
            top[i] = any[i] ? std::max(top[i], e.line) : e.line, any[i] = 1;
        });
    int64_t units = want - want % m_period;
    for (; units > 0; units -= m_period) {
        bool fits = true;
        for (size_t r = 0; r < m_ranges.size() && fits; ++r) fits = !any[r] || move(top[r], units) != Cache::kUnmapped;
        if (fits) break;
    }
    return std::max<int64_t>(units, 0);
}

void UnitReplay::stop_replay(Core& c, int64_t at_unit) {
    const int64_t units = at_unit - c.replay_from;
    if (units % m_period != 0) throw std::logic_error("unit replay: left after a partial period");
    for (Cache* cache : caches(c))
        cache->rename_lines([&](uint64_t line) {
            if (!sampled_line(line)) return line;  // a set sampling leaves alone
            const uint64_t to = move(line, units);
            if (to == Cache::kUnmapped) throw std::logic_error("unit replay: a cached line moved out of its range");
            return to;
        });
    c.replay = false;
    c.units.clear();
    c.checks = kMaxChecks;  // the units left are fewer than a period
}

void UnitReplay::unit_start(int64_t ci, int64_t u) {
    if (!m_active || !m_enabled) return;
    Core& c = m_cores[static_cast<size_t>(ci)];
    c.unit = u;
    c.next_block = 0;
    if (c.replay) {
        if (u < c.replay_to) return;
        stop_replay(c, c.replay_to);
    }
    const int64_t full = m_full[static_cast<size_t>(ci)];
    if (c.checks >= kMaxChecks || u >= full) {
        c.units.clear();
        return;
    }
    const int64_t p = m_period;
    // checking is worth it only while the units left cost more to simulate than the checks
    // left: decided from the last unit recorded (the first one is recorded without a snapshot,
    // so a loop not worth it costs none)
    if (!c.units.empty() && c.units.back().index == u - 1) {
        const Unit& last = c.units.back();
        uint64_t accesses = 0;
        for (const Block& b : last.blocks) accesses += (b.counts.l1_reads + b.counts.l1_writes) / std::max<uint64_t>(1, c.core->sample_weight());
        if (accesses * static_cast<uint64_t>(full - u) < kWorth * static_cast<uint64_t>(kMaxChecks - c.checks) * check_cost(c)) {
            c.checks = kMaxChecks;
            c.units.clear();
            return;
        }
    }
    // the last P units recorded in full, consecutive, the oldest with its start's contents
    const bool recorded = static_cast<int64_t>(c.units.size()) >= p && c.units.back().index == u - 1 &&
                          c.units[c.units.size() - static_cast<size_t>(p)].index == u - p &&
                          c.units[c.units.size() - static_cast<size_t>(p)].snapped;
    if (recorded) {
        ++c.checks;
        if (matches(c, c.units[c.units.size() - static_cast<size_t>(p)].start)) {
            const int64_t units = room(c, full - u);
            if (units > 0) {
                while (static_cast<int64_t>(c.units.size()) > p) c.units.pop_front();  // units u - P .. u - 1
                c.replay = true;
                c.replay_from = u;
                c.replay_to = u + units;
                m_units_replayed += static_cast<uint64_t>(units);
                return;
            }
        }
        if (c.checks >= kMaxChecks) {
            c.units.clear();
            return;
        }
    }
    const bool first = c.units.empty();
    c.units.push_back(Unit{u, {}, first ? std::vector<uint64_t>{} : contents(c, 0), !first});
    while (static_cast<int64_t>(c.units.size()) > p + 1) c.units.pop_front();
}

uint64_t UnitReplay::check_cost(const Core& c) const {
    uint64_t ways = 0;
    for (const Cache* cache : caches(c)) ways += static_cast<uint64_t>(cache->sets() * cache->ways());
    return m_sample.active() ? ways / m_sample.weight() : ways;
}

bool UnitReplay::block(int64_t ci) {
    if (!m_active || !m_enabled) return false;
    Core& c = m_cores[static_cast<size_t>(ci)];
    if (!c.replay) {
        if (m_stats && !c.units.empty() && c.units.back().index == c.unit) c.ff_at_block = *m_stats;
        return false;
    }
    // unit v repeats unit s = from - P + (v - from) mod P, moved v - s units
    const int64_t v = c.unit, p = m_period, k = (v - c.replay_from) % p;
    Unit& src = c.units[static_cast<size_t>(k)];
    if (c.next_block >= src.blocks.size()) throw std::logic_error("unit replay: a unit with more blocks than its record");
    Block& b = src.blocks[c.next_block++];
    const int64_t by = v - src.index;
    CpuCore& core = *c.core;
    core.add_counts(b.counts);
    // move(line, by) for every recorded line, each range's shift in lines computed once
    m_shift_lines.assign(1, 0);  // [0]: a fixed line stays
    for (const Lines& r : m_ranges) m_shift_lines.push_back(by * static_cast<int64_t>(r.step_bytes) / static_cast<int64_t>(m_line));
    index_ranges(b.reads);
    index_ranges(b.writebacks);
    queue_moved(b.reads, core.queued_reads());
    queue_moved(b.writebacks, core.queued_writebacks());
    if (m_stats) *m_stats += b.ff;
    return true;
}

void UnitReplay::block_done(int64_t ci) {
    if (!m_active || !m_enabled) return;
    Core& c = m_cores[static_cast<size_t>(ci)];
    if (c.replay || c.units.empty() || c.units.back().index != c.unit) return;
    Block b;
    b.counts = c.core->counts();
    b.reads.lines = c.core->queued_reads();
    b.writebacks.lines = c.core->queued_writebacks();
    if (m_stats) b.ff = *m_stats - c.ff_at_block;
    c.units.back().blocks.push_back(std::move(b));
}

void UnitReplay::end_loop() {
    if (!m_active) return;
    for (Core& c : m_cores) {
        if (c.replay) stop_replay(c, c.unit + 1);
        c.units.clear();
    }
    m_active = false;
}

}  // namespace archsim
