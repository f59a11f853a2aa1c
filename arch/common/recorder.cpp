#include "arch/common/recorder.h"

#include "traces/trace_writer.h"

namespace archsim {

uint16_t Recorder::compute(const std::string& name, const std::string& level, double pj_per_op, double peak_ops_per_cycle) {
    return m_trace.add_component({name, level, pj_per_op, 0, 0, peak_ops_per_cycle, m_hz});
}

uint16_t Recorder::memory(const std::string& name, double pj_per_byte) {
    return m_trace.add_component({name, name, 0, pj_per_byte, pj_per_byte, 0, m_hz});
}

uint16_t Recorder::lane(const std::string& name) { return m_trace.add_component({name, name, 0, 0, 0, 0, m_hz}); }

StallCauseId Recorder::stall_cause(const std::string& name, const std::string& doc) { return m_trace.add_stall_cause({name, doc}); }

void Recorder::emit(EventKind kind, uint16_t component, Span span, Amount amount, uint32_t seq, StallCauseId cause) {
    m_trace.emit(event(kind, component, span, amount, seq, cause));
}

void Recorder::emit(const TraceEvent& e) { m_trace.emit(e); }

bool Recorder::mute(bool on) {
    const bool was = m_trace.muted();
    m_trace.set_muted(on);
    return was;
}

}  // namespace archsim
