#pragma once
// Reads a finished HDF5 trace back: attributes, tables, and events in chunks.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "traces/trace_event.h"

namespace archsim {

struct TraceReadHandles;

/// Opens a trace written by TraceWriter. Throws UserError naming the file if it is missing, not
/// HDF5, of another schema version, or marked incomplete.
class TraceReader {
public:
    explicit TraceReader(const std::string& path);
    ~TraceReader();

    const std::vector<ComponentInfo>& components() const { return m_components; }
    const std::vector<OpInfo>& ops() const { return m_ops; }
    /// The machine's stall causes (index = TraceEvent::detail of a stall; 0 is "none").
    const std::vector<StallCauseInfo>& stall_causes() const { return m_stall_causes; }
    /// Name of stall cause `id` ("unknown" outside the table).
    const std::string& stall_cause_name(StallCauseId id) const;
    uint64_t event_count() const { return m_event_count; }
    /// A string attribute ("" if absent).
    std::string attr_string(const std::string& name) const;
    /// A numeric attribute (`def` if absent).
    double attr_double(const std::string& name, double def = 0) const;

    /// Calls `f(events, n)` for consecutive chunks of at most `chunk` events, in file order.
    void for_each_chunk(const std::function<void(const TraceEvent*, size_t)>& f, size_t chunk = 1 << 16) const;

    /// The one loop over a trace's events that every reduction and export shares: calls
    /// `f(event, component)` for every event in file order, read in chunks (memory stays flat).
    /// An event naming a component, operator or kind outside the trace's tables means a corrupt
    /// trace: throws UserError(path, ...) before `f` sees it.
    template <class F>
    void visit_events(F&& f) const {
        const size_t n_comps = m_components.size(), n_ops = m_ops.size();
        for_each_chunk([&](const TraceEvent* ev, size_t n) {
            for (size_t i = 0; i < n; ++i) {
                const TraceEvent& e = ev[i];
                if (e.component >= n_comps || e.op >= n_ops || e.kind > static_cast<uint8_t>(EventKind::Transfer)) corrupt(e);
                f(e, m_components[e.component]);
            }
        });
    }

private:
    [[noreturn]] void corrupt(const TraceEvent& e) const;
    std::string m_path;
    std::unique_ptr<TraceReadHandles> m_h;
    std::vector<ComponentInfo> m_components;
    std::vector<OpInfo> m_ops;
    std::vector<StallCauseInfo> m_stall_causes;
    uint64_t m_event_count = 0;
};

}  // namespace archsim
