#include "arch/cpu/steady_loop.h"

#include <algorithm>
#include <array>
#include <utility>

namespace archsim {

namespace {
constexpr int64_t kMaxPeriod = 8;
constexpr int64_t kPeriodsChecked = 3;  ///< windows simulated and seen to repeat before a skip
constexpr int64_t kMinWindow = 8;       ///< units per compared window, at least
constexpr double kTolerance = 0.02;     ///< relative difference allowed between windows' L2 and L3 counts
constexpr uint64_t kScanCost = 8;       ///< a skip's scans of the private caches, in accesses per cached line

}  // namespace

SteadyLoop::SteadyLoop(CpuCore& core, std::vector<MovingBox> boxes, int64_t units, bool enabled, FastForwardStats* stats)
    : m_core(core), m_boxes(std::move(boxes)), m_units(units), m_enabled(enabled && units > kPeriodsChecked * kMinWindow),
      m_stats(stats), m_line(static_cast<uint64_t>(core.line_bytes())), m_l1_start(core.l1().clock()), m_l2_start(core.l2().clock()) {
    if (m_enabled) m_recs.reserve(static_cast<size_t>(std::min<int64_t>(units, kPeriodsChecked * kMaxPeriod + 64)));
}

void SteadyLoop::begin_unit() {
    m_open.counts = m_core.counts();
    m_open.r0 = m_core.queued_reads().size();
    m_open.w0 = m_core.queued_writebacks().size();
}

void SteadyLoop::end_unit() {
    if (!m_enabled || m_skipped) return;
    m_open.counts = m_core.counts() - m_open.counts;
    m_open.r1 = m_core.queued_reads().size();
    m_open.w1 = m_core.queued_writebacks().size();
    m_recs.push_back(m_open);
}

int SteadyLoop::box_of(uint64_t line) const {
    int fixed = -2;
    for (size_t b = 0; b < m_boxes.size(); ++b)
        if (m_boxes[b].touches(line, m_line, 0, m_units)) {
            if (m_boxes[b].moves()) return static_cast<int>(b);
            fixed = -1;
        }
    return fixed;
}

SteadyLoop::Unit SteadyLoop::window_sum(int64_t a, int64_t q) const {
    Unit t;
    for (int64_t k = a; k < a + q; ++k) {
        const Unit& x = m_recs[static_cast<size_t>(k)];
        t.counts += x.counts;
        t.r1 += x.r1 - x.r0, t.w1 += x.w1 - x.w0;
    }
    return t;
}

bool SteadyLoop::repeats(int64_t a, int64_t q) const {
    const Unit x = window_sum(a, q), y = window_sum(a - q, q);
    auto near = [](uint64_t v, uint64_t w) {
        const uint64_t d = v > w ? v - w : w - v;
        return static_cast<double>(d) <= kTolerance * static_cast<double>(std::max(v, w));
    };
    // the L1's work is the loop's structure: exactly equal; what reaches the L2 and L3 varies a
    // little with the sets the boxes cover as they move: equal within kTolerance
    if (x.counts.l1_reads != y.counts.l1_reads || x.counts.l1_writes != y.counts.l1_writes || x.counts.l1_misses != y.counts.l1_misses ||
        !near(x.counts.l2_misses, y.counts.l2_misses) || !near(x.counts.l2_writebacks, y.counts.l2_writebacks) || !near(x.r1, y.r1) ||
        !near(x.w1, y.w1))
        return false;
    // and dirty lines leave the L2 as fast as the window makes them (or stay): more write-backs
    // than lines dirtied means older dirty lines (a packed operand, an earlier phase) are still
    // being pushed out, a transient that does not repeat
    if (x.w1 != 0 && !near(x.w1, x.counts.l2_dirtied)) return false;
    // every line the window sent the L3 lies in a box, so its counterpart later on is known
    for (int64_t k = a; k < a + q; ++k) {
        const Unit& u = m_recs[static_cast<size_t>(k)];
        for (size_t i = u.r0; i < u.r1; ++i)
            if (box_of(m_core.queued_reads()[i]) == -2) return false;
        for (size_t i = u.w0; i < u.w1; ++i)
            if (box_of(m_core.queued_writebacks()[i]) == -2) return false;
    }
    return true;
}

int64_t SteadyLoop::first_unit_touching(uint64_t line, int64_t from, int64_t to) const {
    auto any = [&](int64_t a, int64_t b) {
        for (const MovingBox& box : m_boxes)
            if (box.moves() && box.touches(line, m_line, a, b)) return true;
        return false;
    };
    if (!any(from, to)) return to;
    while (to - from > 1) {  // the first unit is in [from, to)
        const int64_t mid = from + (to - from) / 2;
        if (any(from, mid)) to = mid;
        else from = mid;
    }
    return from;
}

int64_t SteadyLoop::try_skip(int64_t u) {
    const int64_t done = static_cast<int64_t>(m_recs.size());
    if (done != u) return 0;
    // periods whose windows have the same length compare the same units: check each length once
    std::array<bool, kMaxPeriod + kMinWindow> unsteady{};  // q < p + kMinWindow
    for (int64_t p = 1; p <= kMaxPeriod; ++p) {
        bool whole_lines = true;
        for (const MovingBox& b : m_boxes) whole_lines &= b.shift_bytes(p) % static_cast<int64_t>(m_line) == 0;
        if (!whole_lines) continue;
        const int64_t q = p * ((kMinWindow + p - 1) / p);  // a window: whole periods, >= kMinWindow units
        if (kPeriodsChecked * q > u) return 0;
        int64_t n = (m_units - u - q) / p;  // whole periods to skip, leaving a window and the rest
        if (n < 1) return 0;
        if (unsteady[static_cast<size_t>(q)]) continue;
        bool steady = true;
        for (int64_t k = 1; k < kPeriodsChecked && steady; ++k) steady = repeats(u - k * q, q);
        if (!steady) {
            unsteady[static_cast<size_t>(q)] = true;
            continue;
        }
        // the period's misses per unit, for the eviction estimates
        CoreCounts period;
        for (int64_t k = u - p; k < u; ++k) {
            const CoreCounts& c = m_recs[static_cast<size_t>(k)].counts;
            period.l1_reads += c.l1_reads + c.l1_writes;
            period.l1_misses += c.l1_misses;
            period.l2_misses += c.l2_misses + c.l2_writebacks;
        }
        // worth it only if the accesses saved outweigh the scans of the L1 and L2 a skip costs
        const uint64_t cached = static_cast<uint64_t>(m_core.l1().sets() * m_core.l1().ways() + m_core.l2().sets() * m_core.l2().ways());
        if (period.l1_reads * static_cast<uint64_t>(n) < kScanCost * cached) return 0;
        const double l1_per_unit = static_cast<double>(period.l1_misses) / static_cast<double>(p);
        const double l2_per_unit = static_cast<double>(period.l2_misses) / static_cast<double>(p);
        // an older line the skipped units would reach while it is still cached shortens the skip
        auto limit = [&](const Cache& cache, uint64_t start, double misses_per_unit) {
            const double per_set = misses_per_unit / static_cast<double>(cache.sets());
            cache.for_each([&](const Cache::Entry& e) {
                if (e.stamp >= start || box_of(e.line) < 0) return;
                const int64_t reach = first_unit_touching(e.line, u, u + n * p);
                if (reach < u + n * p &&
                    static_cast<double>(reach - u) * per_set < static_cast<double>(cache.ways() - cache.newer_in_set(e.line, e.stamp)))
                    n = std::min(n, (reach - u) / p);
            });
        };
        limit(m_core.l2(), m_l2_start, l2_per_unit);
        limit(m_core.l1(), m_l1_start, l1_per_unit);
        if (n < 1) return 0;
        const int64_t skip = n * p;
        // the skipped units' counts and L3 lines: skipped unit s repeats unit s - k w of the
        // w units checked (k >= 1), its lines moved on k x w units
        const int64_t w = kPeriodsChecked * q;
        auto replay = [&](std::vector<uint64_t>& q, bool reads) {
            std::vector<std::vector<std::pair<uint64_t, int64_t>>> window(static_cast<size_t>(w));  // per unit: line, shift per window in lines
            for (int64_t j = 0; j < w; ++j) {
                const Unit& x = m_recs[static_cast<size_t>(u - w + j)];
                for (size_t i = reads ? x.r0 : x.w0, e = reads ? x.r1 : x.w1; i < e; ++i) {
                    const int b = box_of(q[i]);
                    window[static_cast<size_t>(j)].push_back(
                        {q[i], b < 0 ? 0 : m_boxes[static_cast<size_t>(b)].shift_bytes(w) / static_cast<int64_t>(m_line)});
                }
            }
            for (int64_t s = u; s < u + skip; ++s) {
                const int64_t k = 1 + (s - u) / w;
                for (const auto& [line, step] : window[static_cast<size_t>((s - u) % w)]) q.push_back(line + static_cast<uint64_t>(k * step));
            }
        };
        replay(m_core.queued_reads(), true);
        replay(m_core.queued_writebacks(), false);
        for (int64_t s = u; s < u + skip; ++s) m_core.add_counts(m_recs[static_cast<size_t>(u - w + (s - u) % w)].counts);
        translate_caches(u, skip, l1_per_unit, l2_per_unit);
        m_skipped = true;
        m_skip_units = skip;
        if (m_stats) {
            ++m_stats->loops;
            m_stats->units_skipped += static_cast<uint64_t>(skip);
        }
        return skip;
    }
    return 0;
}

void SteadyLoop::translate_caches(int64_t skip_start, int64_t units, double l1_per_unit, double l2_per_unit) {
    auto translate = [&](Cache& cache, uint64_t start, double misses_per_unit, std::vector<uint64_t>& out) {
        const double inserted_per_set = static_cast<double>(units) * misses_per_unit / static_cast<double>(cache.sets());
        cache.remap([&](const Cache::Entry& e, uint64_t& to) {
            const int b = box_of(e.line);
            if (e.stamp >= start) {  // brought in (or used) by this loop
                if (b < 0) return Cache::Remap::Keep;
                const MovingBox& box = m_boxes[static_cast<size_t>(b)];
                to = e.line + static_cast<uint64_t>(box.shift_bytes(units) / static_cast<int64_t>(m_line));
                return box.touches(to, m_line, 0, m_units) ? Cache::Remap::Move : Cache::Remap::Drop;
            }
            // older: gone if the skipped units' misses would have pushed it out of its set, or if
            // the skipped units would have reached it (try_skip() found they would not in time)
            if (b >= 0 && first_unit_touching(e.line, skip_start, skip_start + units) < skip_start + units) return Cache::Remap::Drop;
            const double room = static_cast<double>(cache.ways() - cache.newer_in_set(e.line, e.stamp));
            return inserted_per_set >= room ? Cache::Remap::Drop : Cache::Remap::Keep;
        }, out);
    };
    std::vector<uint64_t> l2_out, l1_out;
    translate(m_core.l2(), m_l2_start, l2_per_unit, l2_out);
    for (uint64_t line : l2_out) m_core.queued_writebacks().push_back(line);
    translate(m_core.l1(), m_l1_start, l1_per_unit, l1_out);
    for (uint64_t line : l1_out) m_core.write_back_from_l1(line);
}

}  // namespace archsim
