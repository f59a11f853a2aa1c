#pragma once
// Buffered, chunked HDF5 trace writer (schema: traces/README.md).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/event_sums.h"
#include "traces/reducer.h"
#include "traces/trace_event.h"

namespace archsim {

struct TraceFile;  // HDF5 handles, kept out of this header

/// Writes events to `<path>.tmp` in whole chunks of kChunkEvents records (shuffle + deflate, done
/// on a worker thread while the run goes on and written as stored chunks; a run with fewer events
/// gets one chunk of exactly its events),
/// and renames it to `path` in finish(), so an interrupted run never leaves a trace that looks
/// complete. Every event is also summed per operator, component, kind and stall cause
/// (EventSummer), and the sums are stored in /event_sums; at TraceDetail::Kernel only the sums
/// are stored. The run's metrics come from those sums in memory (tables()), so they are the same
/// at every detail level. Throws UserError naming the path if it cannot be created or written.
class TraceWriter {
public:
    static constexpr size_t kChunkEvents = 1 << 16;

    explicit TraceWriter(const std::string& path, TraceDetail detail = TraceDetail::Full);
    ~TraceWriter();
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    /// Registers a component; returns its index for TraceEvent::component.
    uint16_t add_component(const ComponentInfo& c);
    /// Registers a stall cause (a cause of that name already registered keeps its index); returns
    /// its index for TraceEvent::detail. Index 0 is "none", registered by the constructor.
    StallCauseId add_stall_cause(const StallCauseInfo& c);
    /// Records the operator table (index = TraceEvent::op).
    void set_ops(std::vector<OpInfo> ops);
    /// Root attributes: model, machine, resolved config, version, ...
    void set_attr(const std::string& name, const std::string& value);
    void set_attr(const std::string& name, double value);
    void set_attr(const std::string& name, int64_t value);

    /// Appends one event (buffered; a full buffer is written as one chunk); nothing while muted.
    void emit(const TraceEvent& e) {
        if (m_muted) return;
        const double pj = event_energy_pj(e, m_components[e.component]);
        m_dynamic_pj += pj;
        if (m_offchip[e.component]) m_offchip_pj += pj;
        record(e);
    }
    /// Starts recording what is emitted from now on (a kernel being memoized): its events when
    /// the trace keeps every event, and always their sums.
    void begin_capture();
    /// Stops recording and hands over the events (empty at kernel detail) and their sums, with
    /// times relative to `origin_ps` (the kernel's start), and their dynamic energy, pJ.
    /// `offchip_pj`: the part of it spent off chip (components of level "dram").
    void end_capture(uint64_t origin_ps, std::vector<TraceEvent>& events, std::vector<EventSum>& sums, double& dynamic_pj,
                     double& offchip_pj);
    /// Replays a recorded kernel as operator `op` from `origin_ps`: its sums, event counts as if
    /// emitted, and the recorded energy added as one sum at either detail (so both give the power
    /// controller the same numbers, to the bit). A trace that keeps every event stores the
    /// kernel by reference (schema 5): its recording's events are already in /events, where the
    /// kernel was simulated and captured (end_capture() notes the rows); the first replay of a
    /// recording adds it to /kernel_records (first row, count, origin), and every replay adds a
    /// row to /kernel_refs (position in /events, recording, op, origin_ps) that TraceReader
    /// expands in place, moved to its origin and stamped with `op`. `events` must be what
    /// end_capture() handed over, alive and unchanged for the run (the kernel memo keeps them):
    /// its address names the recording. Events of no capture, or with set_by_reference(false),
    /// are written out to /events shifted (schema 4's way).
    void replay(const std::vector<TraceEvent>& events, const std::vector<EventSum>& sums, double dynamic_pj, double offchip_pj,
                uint32_t op, uint64_t origin_ps);
    /// Whether replayed kernels are stored by reference (the default) or written out event by
    /// event (the metrics are the same either way; a test compares them).
    void set_by_reference(bool on) { m_by_reference = on; }
    /// While muted, emit() drops every event: nothing is written, summed or priced (a machine
    /// trying a mapping on its own model and putting its state back, CpuMachine::trial).
    void set_muted(bool on) { m_muted = on; }
    bool muted() const { return m_muted; }
    /// Events emitted so far (whether or not the detail level stores them).
    uint64_t event_count() const { return m_emitted; }
    /// The run so far as the reducer reads it: attributes, tables and event sums (reduce_sums()).
    TraceTables tables() const;
    TraceDetail detail() const { return m_detail; }
    /// Dynamic energy of the events emitted so far, pJ, priced as the reducer prices them
    /// (event_energy_pj): what a machine reads to estimate its own power while it runs.
    double dynamic_energy_pj() const { return m_dynamic_pj; }
    /// The part of dynamic_energy_pj() spent off chip (components of level "dram"), pJ: energy
    /// that does not scale with the core's voltage.
    double offchip_energy_pj() const { return m_offchip_pj; }
    /// Records the clock operator `op` ran at, MHz, and the factor on its on-chip event energies
    /// (the supply voltage's (V / V_ref)^2, arch/power/power_spec.h); operators not recorded ran
    /// at the nominal clock (attribute clock_hz) with factor 1.
    void set_op_power(uint32_t op, double clock_mhz, double energy_scale);
    /// Records the mapping chosen for an operator's kernel (stored as /op_mappings: op, mapspace,
    /// evaluated per row, and the attribute op_mapping_choices: the choices, one per line); a
    /// second call for the same operator replaces the first. A choice must not hold a newline
    /// (std::invalid_argument).
    void set_op_mapping(OpMapping m);
    /// Records the power controller's closed windows (stored as /power_timeline: t_ps, dur_ps,
    /// power_w, clock_mhz per row).
    void set_power_timeline(std::vector<PowerWindow> windows) { m_power_timeline = std::move(windows); }
    /// Records counters sampled over time (stored as /counters and the attribute counter_names;
    /// a name must not contain a comma: std::invalid_argument).
    void set_counters(CounterSeries counters);
    /// Writes what is buffered, the tables and `complete` (1, or 0 when `complete` is false: a run
    /// stopped by a limit, whose trace readers then refuse), closes and renames. Idempotent.
    void finish(bool complete = true);
    const std::string& path() const { return m_path; }

private:
    /// emit() less the energy accounting: sums, capture and the buffer.
    void record(const TraceEvent& e) {
        m_sums.add(e);
        ++m_emitted;
        if (m_capturing) {
            m_capture_sums.add(e);
            if (detail() == TraceDetail::Full) m_capture.push_back(e);
        }
        if (m_detail != TraceDetail::Full) return;
        m_buffer.push_back(e);
        if (m_buffer.size() == kChunkEvents) flush();
    }
    /// Starts encoding the buffer as the next /events chunk (encode_chunk() on a worker thread)
    /// and writes the oldest encoded chunks while more than two are pending.
    void flush();
    /// Waits for the oldest pending chunk and writes it (H5Dwrite_chunk: the dataset's filters
    /// already applied).
    void write_pending();
    std::string m_path;
    std::string m_tmp_path;
    std::unique_ptr<TraceFile> m_file;
    TraceDetail m_detail;
    std::vector<TraceEvent> m_buffer;
    EventSummer m_sums;
    bool m_capturing = false;
    std::vector<TraceEvent> m_capture;
    EventSummer m_capture_sums;
    uint64_t m_emitted = 0;
    std::map<std::string, std::string> m_str_attrs;  ///< what tables() reads back
    std::map<std::string, double> m_num_attrs;
    std::vector<ComponentInfo> m_components;
    std::vector<OpInfo> m_ops;
    std::vector<StallCauseInfo> m_stall_causes{{"none", "not a stall"}};
    uint64_t m_written = 0;
    double m_dynamic_pj = 0, m_offchip_pj = 0;
    std::vector<uint8_t> m_offchip;  ///< per component: 1 for level "dram"
    std::vector<double> m_op_clock_mhz, m_op_energy_scale;
    std::vector<PowerWindow> m_power_timeline;
    std::vector<OpMapping> m_op_mappings;
    std::unordered_map<uint32_t, size_t> m_op_mapping_at;  ///< operator -> its row of m_op_mappings
    /// Trace by reference (replay()): a replayed kernel's place in the event stream.
    struct KernelRef {
        uint64_t position = 0;  ///< events written to /events before it
        uint32_t kernel = 0, op = 0;
        uint64_t origin_ps = 0;
    };
    /// A recorded kernel's events in /events: its first row, how many, and its origin (ps).
    struct Recording {
        uint64_t offset = 0, count = 0, origin_ps = 0;
        int64_t id = -1;  ///< its row of /kernel_records once replayed
    };
    bool m_by_reference = true;
    bool m_muted = false;
    uint64_t m_capture_start = 0;                                  ///< /events rows before the capture began
    std::unordered_map<const TraceEvent*, Recording> m_captured;   ///< a recording's events (end_capture()) -> where they lie
    std::vector<Recording> m_kernel_records;                       ///< the recordings replayed, in /kernel_records order
    std::vector<KernelRef> m_kernel_refs;
    CounterSeries m_counters;
    bool m_finished = false;
};

}  // namespace archsim
