#pragma once
// Per-operator sums of a run's events: what every metric is reduced from, whatever the trace keeps.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/trace_event.h"

namespace archsim {

/// The events of one operator on one component of one kind (and, for stalls, one cause),
/// summed: `count` events, their bytes, ops and cycles, the sum of their durations, and the
/// span from the first start to the last end (ps). Every metric of the reducer is a sum, a
/// maximum or an operator's own span, so it comes out of these rows exactly as out of the events.
struct EventSum {
    uint32_t op = 0;
    uint16_t component = 0;
    uint8_t kind = 0;
    uint8_t detail = 0;
    uint64_t count = 0;
    uint64_t bytes = 0;
    uint64_t ops = 0;
    uint64_t cycles = 0;
    uint64_t dur_sum_ps = 0;
    uint64_t first_ps = 0;  ///< earliest start
    uint64_t end_ps = 0;    ///< latest end (start + duration)
};

/// Sums events into EventSum rows, one row per (op, component, kind, detail) in the order each
/// first appears (so two summers fed the same events hold identical rows).
class EventSummer {
public:
    /// Adds `e` to its row.
    void add(const TraceEvent& e) {
        add_to(row(e.op, e.component, e.kind, e.detail, e.t_ps), e.t_ps, e.t_ps + e.dur_ps, 1, e.bytes, e.ops, e.cycles, e.dur_ps);
    }
    /// Adds a whole row (an operator's recorded sums replayed elsewhere): `r` with its times
    /// shifted by `shift_ps`, stamped with operator `op`.
    void add(const EventSum& r, uint32_t op, int64_t shift_ps);
    const std::vector<EventSum>& rows() const { return m_rows; }

private:
    /// The row of (op, component, kind, detail), created (starting at `first_ps`) on first use.
    EventSum& row(uint32_t op, uint16_t component, uint8_t kind, uint8_t detail, uint64_t first_ps) {
        const uint64_t key = (uint64_t(op) << 32) | (uint64_t(component) << 16) | (uint64_t(kind) << 8) | detail;
        if (key != m_last_key) {
            auto [it, fresh] = m_index.try_emplace(key, m_rows.size());
            if (fresh) {
                EventSum r;
                r.op = op, r.component = component, r.kind = kind, r.detail = detail;
                r.first_ps = first_ps;
                m_rows.push_back(r);
            }
            m_last = it->second;
            m_last_key = key;
        }
        return m_rows[m_last];
    }
    void add_to(EventSum& r, uint64_t start, uint64_t end, uint64_t count, uint64_t bytes, uint64_t ops, uint64_t cycles,
                uint64_t dur_sum) {
        r.first_ps = start < r.first_ps ? start : r.first_ps;
        r.end_ps = end > r.end_ps ? end : r.end_ps;
        r.count += count, r.bytes += bytes, r.ops += ops, r.cycles += cycles, r.dur_sum_ps += dur_sum;
    }
    std::vector<EventSum> m_rows;
    std::unordered_map<uint64_t, size_t> m_index;
    uint64_t m_last_key = ~uint64_t{0};
    size_t m_last = 0;
};

/// The dynamic energy of row `r` on component `c`, pJ: event_energy_pj is linear in bytes and
/// ops, so a row prices as its events do.
inline double event_sum_energy_pj(const EventSum& r, const ComponentInfo& c) {
    return event_energy_pj(make_event(static_cast<EventKind>(r.kind), r.component, r.op, 0, 0, r.bytes, r.ops), c);
}

/// The kind of trace a run writes (`archsim run --detail`): `Full` keeps every event in
/// /events; `Kernel` keeps only /event_sums (per operator, component, kind and stall cause).
/// Both hold the same /event_sums, so every metric is identical at either level.
enum class TraceDetail : uint8_t { Full, Kernel };

/// "full" or "kernel".
const char* to_string(TraceDetail d);
/// Parses "full" or "kernel"; throws UserError(`where`, ...) otherwise.
TraceDetail parse_trace_detail(const std::string& s, const std::string& where);

}  // namespace archsim
