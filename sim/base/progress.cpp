#include "sim/base/progress.h"

#include <unistd.h>

#include <cstdio>

namespace archsim {

Progress::Progress(std::string what, size_t total, bool enabled, double quiet_s, double line_every_s)
    : m_what(std::move(what)), m_total(total), m_enabled(enabled), m_tty(enabled && isatty(2) == 1), m_quiet_s(quiet_s),
      m_every_s(line_every_s), m_t0(std::chrono::steady_clock::now()) {}

void Progress::update(size_t done, const std::string& current) {
    if (!m_enabled) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    if (el < m_quiet_s) return;
    const double every = m_tty ? 0.2 : m_every_s;  // a bar redraws often; a log line now and then
    if (m_last_s >= 0 && el - m_last_s < every) return;
    m_last_s = el;
    const double frac = m_total ? static_cast<double>(done) / static_cast<double>(m_total) : 0.0;
    const double eta = frac > 0 ? el * (1 - frac) / frac : 0.0;
    std::string name = current.size() > 40 ? current.substr(0, 18) + "..." + current.substr(current.size() - 19) : current;
    if (m_tty) {
        const int width = 24, filled = static_cast<int>(width * frac);
        std::fprintf(stderr, "\r[%s%s] %zu/%zu %s  %.0f s, about %.0f s left  %-40s", std::string(static_cast<size_t>(filled), '#').c_str(),
                     std::string(static_cast<size_t>(width - filled), '.').c_str(), done, m_total, m_what.c_str(), el, eta, name.c_str());
        m_drawn = true;
    } else {
        std::fprintf(stderr, "archsim: %zu/%zu %s done (%.0f%%) after %.0f s, about %.0f s left; now %s\n", done, m_total, m_what.c_str(),
                     100 * frac, el, eta, name.c_str());
    }
    std::fflush(stderr);
}

void Progress::finish() {
    if (!m_drawn) return;
    std::fprintf(stderr, "\r%*s\r", 110, "");
    std::fflush(stderr);
    m_drawn = false;
}

}  // namespace archsim
