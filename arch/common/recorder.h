#pragma once
// How a machine model names its components and records its events: one constructor per kind of
// component and one emission signature, so every machine's trace reads the same way.
#include <cstdint>
#include <string>

#include "arch/common/clock.h"
#include "traces/trace_event.h"

namespace archsim {

class TraceWriter;

/// What an event carries besides its time: bytes moved, operations done (MACs, vector ops,
/// byte-hops), and cycles counted towards compute or stall time (0 for an event that overlaps
/// one already counted, e.g. the second tile of a wave).
struct Amount {
    uint64_t bytes = 0;
    uint64_t ops = 0;
    uint64_t cycles = 0;
};

/// A machine's view of its trace: registers components (the reducer prices events with their
/// coefficients, so energy comes from the trace alone) and stamps every event with the operator
/// being executed. One per machine; not copyable.
class Recorder {
public:
    /// @param clock_hz the clock every component of this machine reports cycles in
    Recorder(TraceWriter& trace, double clock_hz) : m_trace(trace), m_hz(clock_hz) {}
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    /// A compute unit doing `peak_ops_per_cycle` at full use, `pj_per_op` each; its energy and
    /// traffic go to bucket `level` ("compute" for MAC arrays, "vector", a unit's own name).
    uint16_t compute(const std::string& name, const std::string& level, double pj_per_op, double peak_ops_per_cycle);
    /// A memory level or data mover charged `pj_per_byte` per byte read or written; its bucket is its name.
    uint16_t memory(const std::string& name, double pj_per_byte);
    /// A component that only carries spans (operator spans, launches, stalls): no energy.
    uint16_t lane(const std::string& name);
    /// Declares a reason this machine's compute waits (a row of the trace's /stall_causes:
    /// `name` is what reports print, `doc` one line on what waited for what); returns its id for
    /// stall events. Declaring a name again returns the same id.
    StallCauseId stall_cause(const std::string& name, const std::string& doc);

    /// The operator events are stamped with (set by the dispatcher before each operator).
    void set_op(uint32_t op) { m_op = op; }
    uint32_t op() const { return m_op; }
    /// The stamp itself, for TLM targets that record their own transactions (the DRAM).
    const uint32_t& op_ref() const { return m_op; }

    /// The event of `kind` on `component` over `span`; `seq` orders events within the operator
    /// (fold, wave, CTA or transaction number), `cause` says why a stall waited.
    TraceEvent event(EventKind kind, uint16_t component, Span span, Amount amount, uint32_t seq = 0,
                     StallCauseId cause = kNoStallCause) const {
        return make_event(kind, component, m_op, span.t_ps, span.dur_ps, amount.bytes, amount.ops, amount.cycles, seq, cause);
    }
    /// Records event(...).
    void emit(EventKind kind, uint16_t component, Span span, Amount amount, uint32_t seq = 0, StallCauseId cause = kNoStallCause);
    /// Records an event built earlier (a model that decides later which events count cycles).
    void emit(const TraceEvent& e);

    TraceWriter& trace() { return m_trace; }
    /// Mutes the trace (TraceWriter::set_muted: every event, from this machine or its DRAM,
    /// dropped) and returns whether it was muted before.
    bool mute(bool on);
    double clock_hz() const { return m_hz; }

private:
    TraceWriter& m_trace;
    double m_hz;
    uint32_t m_op = 0;
};

}  // namespace archsim
