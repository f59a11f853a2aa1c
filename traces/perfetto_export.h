#pragma once
// Exports a trace as Chrome trace-event JSON (what Perfetto UI and chrome://tracing open), gzipped.
#include <cstdint>
#include <map>
#include <string>

namespace archsim {

class TraceReader;

/// What an export wrote and left out.
struct PerfettoStats {
    uint64_t events_in = 0;       ///< events in the trace
    uint64_t slices_out = 0;      ///< "X" slices written (one per kept span event)
    uint64_t counters_out = 0;    ///< "C" samples written
    uint64_t tracks = 0;          ///< threads (component lanes) that received slices
    std::map<std::string, uint64_t> dropped_by_kind;  ///< events left out by --max-events, by kind
};

/// Streams `trace` to `out_path` as gzipped trace-event JSON, reading it in chunks (memory does
/// not grow with the trace). Layout: one process; per component, one thread per lane, where a
/// lane holds slices that do not overlap (concurrent DRAM transactions, CTAs or blocks get their
/// own lanes: "dram #0", "dram #1", ...; at most 64 lanes, after which slices share the last);
/// every span event is a complete ("X") slice named by its kind and operator, with bytes, ops,
/// cycles and stall cause as args; operators are slices on the operator track. Counters, 500
/// samples over the run: DRAM bandwidth (GB/s) and compute occupancy (busy fraction of all compute
/// components). Time is in microseconds. With `max_events` > 0 the slices are capped at about that
/// many: operator and stall events are always kept, and the other kinds are thinned evenly (every
/// k-th event of a kind) — the counters still cover every event. gzip level 1 (speed over size:
/// about 4 bytes per event). Throws UserError if the output cannot be written.
PerfettoStats export_perfetto(const TraceReader& trace, const std::string& out_path, uint64_t max_events = 0);

}  // namespace archsim
