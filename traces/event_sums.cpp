#include "traces/event_sums.h"

#include "sim/base/error.h"

namespace archsim {

void EventSummer::add(const EventSum& r, uint32_t op, int64_t shift_ps) {
    const uint64_t first = uint64_t(int64_t(r.first_ps) + shift_ps), end = uint64_t(int64_t(r.end_ps) + shift_ps);
    add_to(row(op, r.component, r.kind, r.detail, first), first, end, r.count, r.bytes, r.ops, r.cycles, r.dur_sum_ps);
}

const char* to_string(TraceDetail d) { return d == TraceDetail::Full ? "full" : "kernel"; }

TraceDetail parse_trace_detail(const std::string& s, const std::string& where) {
    if (s == "full") return TraceDetail::Full;
    if (s == "kernel") return TraceDetail::Kernel;
    throw UserError(where, "unknown trace detail '" + s + "' (full: every event; kernel: per-operator sums)");
}

}  // namespace archsim
