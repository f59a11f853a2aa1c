#include "sim/serving/serving_trace.h"

#include <cmath>
#include <tuple>
#include <vector>

#include "traces/trace_writer.h"

namespace archsim {

namespace {

enum Op : uint32_t { kIteration = 0, kQueued = 1, kPrefill = 2, kDecode = 3 };

uint64_t ps(double s) { return s > 0 ? uint64_t(std::llround(s * 1e12)) : 0; }

}  // namespace

ServingTrace::ServingTrace(const std::string& path, TraceDetail detail, const std::string& model, const std::string& machine,
                           const std::string& precision)
    : m_tw(std::make_unique<TraceWriter>(path, detail)) {
    m_device = m_tw->add_component({"device.iterations", "compute", 0, 0, 0, 0, 1e9});
    m_queued = m_tw->add_component({"requests.queued", "serving", 0, 0, 0, 0, 1e9});
    m_prefill = m_tw->add_component({"requests.prefill", "serving", 0, 0, 0, 0, 1e9});
    m_decode = m_tw->add_component({"requests.decode", "serving", 0, 0, 0, 0, 1e9});
    m_queued_cause = m_tw->add_stall_cause({"queued", "a request waiting for a place in the batch and KV blocks"});
    std::vector<OpInfo> ops(4);
    for (const auto& [i, name, type] : {std::tuple{kIteration, "iteration", "Iteration"}, std::tuple{kQueued, "queued", "Queued"},
                                        std::tuple{kPrefill, "prefill", "Prefill"}, std::tuple{kDecode, "decode", "Decode"}})
        ops[i].name = name, ops[i].op_type = type, ops[i].op_class = "serving";
    m_tw->set_ops(std::move(ops));
    m_tw->set_attr("model", model);
    m_tw->set_attr("machine", machine);
    m_tw->set_attr("precision", precision);
    m_tw->set_attr("runtime", std::string("serving"));
    m_tw->set_attr("clock_hz", 1e9);
    m_tw->set_attr("not_modeled", std::string("energy per event: a serving trace carries time only (the iterations' energy is in "
                                              "last_run.json's serving figures)"));
}

ServingTrace::~ServingTrace() = default;

void ServingTrace::iteration(double start_s, double time_s, const IterationShape& shape) {
    m_tw->emit(make_event(EventKind::Op, m_device, kIteration, ps(start_s), ps(time_s), 0, uint64_t(shape.tokens), 0, m_iterations++));
}

void ServingTrace::finish(const ServingResult& r, int64_t kv_capacity_tokens) {
    for (size_t i = 0; i < r.request_times.size(); ++i) {
        const RequestTimes& q = r.request_times[i];
        const uint32_t seq = uint32_t(i);
        const uint64_t wait_ps = ps(q.admitted_s - q.arrival_s);  // cycles of the trace's 1 GHz clock: ns
        m_tw->emit(make_event(EventKind::Stall, m_queued, kQueued, ps(q.arrival_s), wait_ps, 0, 0, wait_ps / 1000, seq, m_queued_cause));
        m_tw->emit(make_event(EventKind::Op, m_prefill, kPrefill, ps(q.admitted_s), ps(q.first_token_s - q.admitted_s), 0, 0, 0, seq));
        m_tw->emit(make_event(EventKind::Op, m_decode, kDecode, ps(q.first_token_s), ps(q.last_token_s - q.first_token_s), 0, 0, 0, seq));
    }
    CounterSeries c;
    c.names = {"queued requests", "running requests", "KV cache (tokens)"};
    for (const ServingSample& s : r.samples) {
        const double t = s.t_s * 1e12;
        c.samples.push_back({t, 0, double(s.queued)});
        c.samples.push_back({t, 1, double(s.running)});
        c.samples.push_back({t, 2, double(s.kv_tokens)});
    }
    m_tw->set_counters(std::move(c));
    m_tw->set_attr("serving.kv_capacity_tokens", kv_capacity_tokens);
    m_tw->set_attr("serving.requests", int64_t(r.requests));
    m_tw->finish();
}

}  // namespace archsim
