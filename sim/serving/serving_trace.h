#pragma once
// A serving run's trace (traces/README.md): the device's iterations on one lane, each request's
// stages (queued, prefill, decode) on a lane per stage, and the engine's queue, batch and KV-cache
// use as counters, so `archsim trace` and its Perfetto export show the run over time.
#include <memory>
#include <string>

#include "sim/serving/serving_sim.h"
#include "traces/event_sums.h"

namespace archsim {

class TraceWriter;

/// Writes the trace of one replica's serving run to `path` as the simulation runs. Lanes
/// (components): `device.iterations` (one op span per iteration, its tokens as ops),
/// `requests.queued` (a stall from arrival to first admission), `requests.prefill` (admission to
/// first token) and `requests.decode` (first to last token), each request's spans carrying its
/// index as `seq`. Counters: queued and running requests and KV-cache tokens, at the run's
/// samples (ServingResult::samples). Energy is not priced per event (the iterations' energy is in
/// last_run.json's serving figures); the trace says so in its not_modeled attribute. Throws
/// UserError when the file cannot be written.
class ServingTrace {
public:
    ServingTrace(const std::string& path, TraceDetail detail, const std::string& model, const std::string& machine,
                 const std::string& precision);
    ~ServingTrace();
    ServingTrace(const ServingTrace&) = delete;
    ServingTrace& operator=(const ServingTrace&) = delete;

    /// One iteration: from `start_s`, `time_s` long, running `shape` (an IterationObserver).
    void iteration(double start_s, double time_s, const IterationShape& shape);
    /// The requests' stage spans and the counters from `r`, `kv_capacity_tokens` as an
    /// attribute; writes and closes the file. Times are the run's own (s from time 0).
    void finish(const ServingResult& r, int64_t kv_capacity_tokens);

private:
    std::unique_ptr<TraceWriter> m_tw;
    uint16_t m_device = 0, m_queued = 0, m_prefill = 0, m_decode = 0;
    uint8_t m_queued_cause = 0;
    uint32_t m_iterations = 0;
};

}  // namespace archsim
