#pragma once
// Cycle <-> picosecond conversion and waiting on a component clock, inside an SC_THREAD.
#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace archsim {

/// A clock of `cycle_ps` picoseconds (not necessarily a whole number). Cycle boundaries are
/// stored rounded to the ps, so a time within half a ps of a boundary belongs to it; converting
/// a boundary back and forth never gains or loses a cycle.
class CycleClock {
public:
    explicit CycleClock(double cycle_ps) : m_cycle_ps(cycle_ps) {}

    double cycle_ps() const { return m_cycle_ps; }
    /// The first cycle boundary at or after `ps`.
    uint64_t cycle_at_or_after(double ps) const {
        return static_cast<uint64_t>(std::max(0.0, std::ceil((ps - 0.5) / m_cycle_ps)));
    }
    /// The first cycle boundary at or after the current simulated time.
    uint64_t now_cycle() const { return cycle_at_or_after(static_cast<double>(sc_core::sc_time_stamp().value())); }
    /// Start of `cycle`, ps.
    uint64_t to_ps(uint64_t cycle) const { return static_cast<uint64_t>(std::llround(static_cast<double>(cycle) * m_cycle_ps)); }
    /// Suspends the calling SC_THREAD until `cycle` (no-op if it has passed).
    void wait_until(uint64_t cycle) const {
        const uint64_t target = to_ps(cycle), now = sc_core::sc_time_stamp().value();
        if (target > now) sc_core::wait(sc_core::sc_time(static_cast<double>(target - now), sc_core::SC_PS));
    }

private:
    double m_cycle_ps;
};

}  // namespace archsim
