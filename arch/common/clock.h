#pragma once
// The one time idiom of the machine models: picoseconds as SystemC time (the kernel's resolution
// is 1 ps), cycles of a component clock, and the span of an event in both.
#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace archsim {

/// An event's place in time, whole picoseconds (what a trace event stores).
struct Span {
    uint64_t t_ps = 0;
    uint64_t dur_ps = 0;
};

/// Current SystemC time, ps.
inline double sim_now_ps() { return static_cast<double>(sc_core::sc_time_stamp().value()); }

/// Suspends the calling SC_THREAD until `t_ps` (rounded up to the ps); no-op if it has passed.
inline void sim_wait_until_ps(double t_ps) {
    const double now = sim_now_ps();
    if (t_ps > now) sc_core::wait(sc_core::sc_time(std::ceil(t_ps - now), sc_core::SC_PS));
}

/// The span from `start_ps` lasting `dur_ps`, each rounded to the nearest ps (models that keep
/// time in fractional ps: the GPU, the CPU).
inline Span ps_span(double start_ps, double dur_ps) {
    return {static_cast<uint64_t>(std::llround(start_ps)), static_cast<uint64_t>(std::llround(dur_ps))};
}

/// A clock of `cycle_ps` picoseconds (not necessarily a whole number). Cycle boundaries are
/// stored rounded to the ps, so a time within half a ps of a boundary belongs to it; converting
/// a boundary back and forth never gains or loses a cycle. retime() changes the period from a
/// cycle boundary on (DVFS): cycles count on, each after it lasting the new period.
class CycleClock {
public:
    explicit CycleClock(double cycle_ps) : m_cycle_ps(cycle_ps) {}

    double cycle_ps() const { return m_cycle_ps; }
    double hz() const { return 1e12 / m_cycle_ps; }
    /// The first cycle boundary at or after `ps`.
    uint64_t cycle_at_or_after(double ps) const {
        const double c = static_cast<double>(m_origin_cycle) + std::ceil((ps - static_cast<double>(m_origin_ps) - 0.5) / m_cycle_ps);
        return static_cast<uint64_t>(std::max(0.0, c));
    }
    /// The first cycle boundary at or after the current simulated time.
    uint64_t now_cycle() const { return cycle_at_or_after(sim_now_ps()); }
    /// Start of `cycle`, ps.
    uint64_t to_ps(uint64_t cycle) const {
        const double d = (static_cast<double>(cycle) - static_cast<double>(m_origin_cycle)) * m_cycle_ps;
        return static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(m_origin_ps) + std::llround(d)));
    }
    /// `ps` as a whole number of cycles, rounded to the nearest.
    uint64_t cycles_of(double ps) const { return static_cast<uint64_t>(std::llround(ps / m_cycle_ps)); }
    /// The span of `cycles` cycles from cycle `start` (models that keep time in cycles: TPU, KPU).
    Span span(uint64_t start, uint64_t cycles) const {
        const uint64_t t = to_ps(start);
        return {t, to_ps(start + cycles) - t};
    }
    /// Suspends the calling SC_THREAD until `cycle` (no-op if it has passed).
    void wait_until(uint64_t cycle) const {
        const uint64_t target = to_ps(cycle), now = sc_core::sc_time_stamp().value();
        if (target > now) sc_core::wait(sc_core::sc_time(static_cast<double>(target - now), sc_core::SC_PS));
    }
    /// From the first cycle boundary at or after now, cycles last `cycle_ps`.
    void retime(double cycle_ps) {
        const uint64_t c = now_cycle();
        m_origin_ps = to_ps(c);
        m_origin_cycle = c;
        m_cycle_ps = cycle_ps;
    }

private:
    double m_cycle_ps;
    uint64_t m_origin_cycle = 0, m_origin_ps = 0;  ///< the boundary the current period counts from
};

}  // namespace archsim
