#pragma once
// The record every machine model emits: one fixed-size struct per event (schema in README.md).
#include <cstdint>
#include <string>
#include <vector>

namespace archsim {

/// Version of the HDF5 trace schema; readers refuse other versions.
constexpr int kTraceSchemaVersion = 5;

/// What an event is. Spans have a start and a duration; all times are picoseconds.
enum class EventKind : uint8_t {
    Op = 0,         ///< an operator, from dispatch to its last write (span)
    Fold = 1,       ///< one fold of a contraction on a MAC array (span; ops = MACs, cycles)
    Vector = 2,     ///< a chunk of vector-unit work (span; ops = vector operations, cycles)
    DramRead = 3,   ///< one DRAM transaction read (span on a channel; bytes)
    DramWrite = 4,  ///< one DRAM transaction written (span on a channel; bytes)
    SramRead = 5,   ///< bytes read from an on-chip buffer during one fold (span = the fold)
    SramWrite = 6,  ///< bytes written to an on-chip buffer during one fold
    Stall = 7,      ///< compute waiting (span; cycles; detail = StallCauseId)
    Transfer = 8,   ///< a data mover (DMA, block mover, streamer, network) moving bytes (span; bytes;
                    ///< ops = byte-hops for a network)
};

/// Why compute waited: an index into the trace's /stall_causes table, which each machine fills
/// with the causes it declares (Recorder::stall_cause). 0 is "none" in every trace.
using StallCauseId = uint8_t;
constexpr StallCauseId kNoStallCause = 0;

/// One row of /stall_causes: a short snake_case name (what reports print) and one line saying
/// what waited for what.
struct StallCauseInfo {
    std::string name;
    std::string doc;
};

/// Name of an EventKind ("op", "fold", ...).
const char* to_string(EventKind k);

/// One trace record (56 bytes in memory, written packed to HDF5).
struct TraceEvent {
    uint64_t t_ps = 0;       ///< start time, ps
    uint64_t dur_ps = 0;     ///< duration, ps
    uint64_t bytes = 0;      ///< bytes moved (memory events)
    uint64_t ops = 0;        ///< MACs (fold) or vector operations (vector)
    uint64_t cycles = 0;     ///< cycles of the component's clock (fold, vector, stall)
    uint32_t op = 0;         ///< operator index into /ops
    uint32_t seq = 0;        ///< fold index within the operator, or transaction number
    uint16_t component = 0;  ///< index into /components
    uint8_t kind = 0;        ///< EventKind
    uint8_t detail = 0;      ///< StallCauseId for stalls (index into /stall_causes), 0 otherwise
};

/// Builds an event from its named parts (fields not given are zero).
inline TraceEvent make_event(EventKind kind, uint16_t component, uint32_t op, uint64_t t_ps, uint64_t dur_ps,
                             uint64_t bytes = 0, uint64_t ops = 0, uint64_t cycles = 0, uint32_t seq = 0,
                             StallCauseId cause = kNoStallCause) {
    TraceEvent e;
    e.t_ps = t_ps;
    e.dur_ps = dur_ps;
    e.bytes = bytes;
    e.ops = ops;
    e.cycles = cycles;
    e.op = op;
    e.seq = seq;
    e.component = component;
    e.kind = static_cast<uint8_t>(kind);
    e.detail = cause;
    return e;
}

/// One component of a machine: a compute unit or a memory level. The reducer prices events
/// with these coefficients, so energy is derived from the trace alone.
struct ComponentInfo {
    std::string name;             ///< e.g. "array", "vector", "dram", "sram.ifmap"
    std::string level;            ///< traffic/energy bucket: "compute", "vector", "dram", "sram.ifmap", ...
    double pj_per_op = 0;         ///< compute: energy per MAC or vector op, pJ
    double pj_per_byte_read = 0;  ///< memory: energy per byte read, pJ
    double pj_per_byte_write = 0; ///< memory: energy per byte written, pJ
    double peak_ops_per_cycle = 0;///< compute: MACs (or ops) per cycle at full use
    double clock_hz = 0;          ///< the component's clock
};

/// The dynamic energy of event `e` on component `c`, pJ: a Fold or Vector event's operations at
/// pj_per_op, a read's or write's bytes at the component's per-byte energy, a Transfer's bytes
/// (read side) plus its operations (byte-hops on a network); 0 for spans and stalls. The one
/// pricing rule the reducer and a machine's power estimate share.
inline double event_energy_pj(const TraceEvent& e, const ComponentInfo& c);

/// Whether `c` is off chip (level "dram"): its energy does not scale with the core's supply
/// voltage (arch/power/power_spec.h), so no operator's voltage factor applies to it.
inline bool off_chip(const ComponentInfo& c) { return c.level == "dram"; }

inline double event_energy_pj(const TraceEvent& e, const ComponentInfo& c) {
    switch (static_cast<EventKind>(e.kind)) {
        case EventKind::Fold:
        case EventKind::Vector:
            return static_cast<double>(e.ops) * c.pj_per_op;
        case EventKind::DramRead:
        case EventKind::SramRead:
            return static_cast<double>(e.bytes) * c.pj_per_byte_read;
        case EventKind::DramWrite:
        case EventKind::SramWrite:
            return static_cast<double>(e.bytes) * c.pj_per_byte_write;
        case EventKind::Transfer:
            return static_cast<double>(e.bytes) * c.pj_per_byte_read + static_cast<double>(e.ops) * c.pj_per_op;
        default:
            return 0.0;
    }
}

/// One operator as recorded in the trace (static information from the operator graph).
/// One averaging window of a machine's power controller (arch/power/power_controller.h).
struct PowerWindow {
    double t_ps = 0;       ///< window start, ps
    double dur_ps = 0;     ///< its length, ps
    double power_w = 0;    ///< average power over it, static included, W
    double clock_mhz = 0;  ///< the clock it ran at, MHz
};

/// Samples of named counters over time (a serving run's queue length and KV-cache use): one
/// row per sample, stored as /counters (t_ps, counter index, value) with the names in the root
/// attribute counter_names (comma-separated, in index order).
struct CounterSeries {
    std::vector<std::string> names;  ///< with their units, e.g. "queued requests", "KV cache (tokens)"
    struct Sample {
        double t_ps = 0;
        uint32_t counter = 0;  ///< index into names
        double value = 0;
    };
    std::vector<Sample> samples;  ///< in time order
};

/// The mapping a machine's search chose for one kernel (operator `op`): `choice` in the model's
/// terms (the KPU's block order: "cols>rows", "rows>cols bands=8"; several GEMMs of one kernel
/// separated by "; "), the distinct mappings it considered (`mapspace`) and how many it priced
/// with its cost model (`evaluated`; the rest were pruned by a bound). Stored as /op_mappings.
struct OpMapping {
    uint32_t op = 0;
    std::string choice;
    int64_t mapspace = 0, evaluated = 0;

    /// Adds one GEMM's search to the kernel's: its mapspace and evaluations, and its choice
    /// unless the kernel already names it.
    void add(const std::string& c, int64_t space, int64_t eval) {
        mapspace += space, evaluated += eval;
        for (size_t at = 0; at <= choice.size();) {
            size_t end = choice.find("; ", at);
            if (end == std::string::npos) end = choice.size();
            if (!choice.empty() && choice.compare(at, end - at, c) == 0) return;
            at = end + 2;
        }
        choice += (choice.empty() ? "" : "; ") + c;
    }
};

struct OpInfo {
    std::string name;
    std::string op_type;
    std::string op_class;
    int64_t macs = 0;
    int64_t flops = 0;
    std::string inputs;   ///< shapes, e.g. "1x64x56x56;64x64x3x3"
    std::string outputs;
    std::string members;  ///< a kernel of an execution plan: the source operators it runs, one name per line; "" otherwise
};

}  // namespace archsim
