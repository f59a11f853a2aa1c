#pragma once
// The current simulated time and waiting until a later one, in picoseconds, inside an SC_THREAD.
#include <systemc>

#include <cmath>

namespace archsim {

/// Current SystemC time, ps (the kernel's resolution is 1 ps).
inline double sim_now_ps() { return static_cast<double>(sc_core::sc_time_stamp().value()); }

/// Suspends the calling SC_THREAD until `t_ps` (rounded up to the ps); no-op if it has passed.
inline void sim_wait_until_ps(double t_ps) {
    const double now = sim_now_ps();
    if (t_ps > now) sc_core::wait(sc_core::sc_time(std::ceil(t_ps - now), sc_core::SC_PS));
}

}  // namespace archsim
