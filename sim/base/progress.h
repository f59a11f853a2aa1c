#pragma once
// Progress of a long piece of work, for the person waiting on it: silent for the first
// `quiet_s` seconds (short runs print nothing), then a bar redrawn in place on a terminal, or a
// plain line every `line_every_s` seconds when stderr is a file or a pipe (CI logs). Owned by the
// loop it reports on; no global state.
#include <chrono>
#include <cstddef>
#include <string>

namespace archsim {

class Progress {
public:
    /// `what`: the unit counted ("operators"); `total`: how many there are; `enabled` false
    /// (--quiet) prints nothing at all. Whether stderr is a terminal is read once, here.
    Progress(std::string what, size_t total, bool enabled, double quiet_s = 2.0, double line_every_s = 5.0);
    /// `done` of the total are finished, `current` is being worked on (a name, shown cut to fit).
    /// Cheap when nothing is due: one clock read.
    void update(size_t done, const std::string& current);
    /// Ends the bar's line on a terminal (if one was drawn); prints nothing otherwise.
    void finish();
    ~Progress() { finish(); }

private:
    std::string m_what;
    size_t m_total;
    bool m_enabled, m_tty, m_drawn = false;
    double m_quiet_s, m_every_s, m_last_s = -1;
    std::chrono::steady_clock::time_point m_t0;
};

}  // namespace archsim
