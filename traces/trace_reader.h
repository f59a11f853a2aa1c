#pragma once
// Reads a finished HDF5 trace back: attributes, tables, and events in chunks.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "traces/reducer.h"
#include "traces/trace_event.h"

namespace archsim {

struct TraceReadHandles;

/// Opens a trace written by TraceWriter. Throws UserError naming the file if it is missing, not
/// HDF5, of a schema version it cannot read (it reads 3 and 4), or marked incomplete.
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
    /// Events the run emitted (a kernel-detail trace stores only their sums).
    uint64_t event_count() const { return m_emitted; }
    /// What the trace keeps: every event, or per-operator sums only.
    TraceDetail detail() const { return m_detail; }
    /// The per-operator event sums: /event_sums, or summed from /events for a trace of schema 3.
    const std::vector<EventSum>& event_sums() const { return m_sums; }
    /// Attributes, tables and event sums, as reduce_sums() takes them.
    TraceTables tables() const;
    const std::string& path() const { return m_path; }
    /// A string attribute ("" if absent).
    std::string attr_string(const std::string& name) const;
    /// A numeric attribute (`def` if absent).
    double attr_double(const std::string& name, double def = 0) const;

    /// Calls `f(events, n)` for consecutive chunks of at most `chunk` events of /events, in file
    /// order (none for a kernel-detail trace), each replayed kernel stored by reference (schema 5,
    /// TraceWriter::replay()) expanded in its place: its recording's rows of /events moved to its
    /// origin and stamped with its operator, read a chunk at a time (memory stays flat).
    void for_each_chunk(const std::function<void(const TraceEvent*, size_t)>& f, size_t chunk = 1 << 16) const;

    /// The one loop over a trace's events that every timeline and export shares: calls
    /// `f(event, component)` for every event in file order, read in chunks (memory stays flat).
    /// A kernel-detail trace has no events: each event-sum row is visited as one event spanning
    /// its first start to its last end, with the row's bytes, ops and cycles.
    /// An event naming a component, operator or kind outside the trace's tables means a corrupt
    /// trace: throws UserError(path, ...) before `f` sees it.
    template <class F>
    void visit_events(F&& f) const {
        const size_t n_comps = m_components.size(), n_ops = m_ops.size();
        if (m_detail == TraceDetail::Kernel) {
            for (const EventSum& r : m_sums) {
                const TraceEvent e = make_event(static_cast<EventKind>(r.kind), r.component, r.op, r.first_ps, r.end_ps - r.first_ps,
                                                r.bytes, r.ops, r.cycles, 0, r.detail);
                if (e.component >= n_comps || e.op >= n_ops || e.kind > static_cast<uint8_t>(EventKind::Transfer)) corrupt(e);
                f(e, m_components[e.component]);
            }
            return;
        }
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
    /// A replayed kernel's place in the event stream (/kernel_refs).
    struct KernelRef {
        uint64_t position = 0;  ///< stored events before it
        uint32_t kernel = 0, op = 0;
        uint64_t origin_ps = 0;
    };
    /// Reads /kernel_records and /kernel_refs (schema 5); throws UserError for a corrupt table.
    void read_kernel_refs();
    /// Reads events [start, start + n) of `dataset` into `out`.
    void read_events(int64_t dataset, uint64_t start, size_t n, TraceEvent* out) const;
    /// for_each_chunk() of a trace with replays stored by reference.
    void for_each_expanded_chunk(const std::function<void(const TraceEvent*, size_t)>& f, size_t chunk) const;
    /// A recording (/kernel_records): its first row in /events, its events, the origin they ran at.
    struct Recording {
        uint64_t offset = 0, count = 0, origin_ps = 0;
    };
    std::vector<Recording> m_kernel_records;
    std::vector<KernelRef> m_kernel_refs;
    std::string m_path;
    std::unique_ptr<TraceReadHandles> m_h;
    std::vector<ComponentInfo> m_components;
    std::vector<OpInfo> m_ops;
    std::vector<StallCauseInfo> m_stall_causes;
    uint64_t m_event_count = 0;  ///< rows of /events
    uint64_t m_emitted = 0;
    TraceDetail m_detail = TraceDetail::Full;
    std::vector<EventSum> m_sums;
    std::vector<double> m_op_clock_mhz, m_op_energy_scale;
    std::vector<PowerWindow> m_power_timeline;
    CounterSeries m_counters;
    std::vector<OpMapping> m_op_mappings;
};

}  // namespace archsim
