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
    uint64_t event_count() const { return m_event_count; }
    /// A string attribute ("" if absent).
    std::string attr_string(const std::string& name) const;
    /// A numeric attribute (`def` if absent).
    double attr_double(const std::string& name, double def = 0) const;

    /// Calls `f(events, n)` for consecutive chunks of at most `chunk` events, in file order.
    void for_each_chunk(const std::function<void(const TraceEvent*, size_t)>& f, size_t chunk = 1 << 16) const;

private:
    std::string m_path;
    std::unique_ptr<TraceReadHandles> m_h;
    std::vector<ComponentInfo> m_components;
    std::vector<OpInfo> m_ops;
    uint64_t m_event_count = 0;
};

}  // namespace archsim
