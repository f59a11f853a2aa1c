#include "sim/cluster/job_sim.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>

#include "arch/interconnect/link.h"
#include "traces/trace_writer.h"
#include "workloads/parallel/pipeline_schedule.h"

namespace archsim {

const char* to_string(CommScope s) {
    switch (s) {
        case CommScope::Tensor: return "tensor";
        case CommScope::Data: return "data";
        case CommScope::Pipeline: return "pipeline";
        case CommScope::Embedding: return "embedding";
        case CommScope::Expert: return "expert";
        case CommScope::ExpertData: return "expert_data";
    }
    return "?";
}

namespace {

using sc_core::SC_PS;
using sc_core::sc_time;

constexpr double kMaxTransaction = 1024.0 * 1024 * 1024;  // bytes per TLM payload (its length is 32-bit)

class JobSim;

/// One pipeline stage's representative device: its schedule, its two link ports, its gradient
/// bucket process.
class StageProc : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(StageProc);
    tlm_utils::simple_initiator_socket<StageProc> intra_port, inter_port;

    StageProc(sc_core::sc_module_name n, JobSim& sim, int64_t r);

    /// Marks input `key` as arrived and wakes the stage.
    void deliver(size_t key) {
        m_ready[key] = 1;
        m_arrived.notify(sc_core::SC_ZERO_TIME);
    }
    StageTimes times;

private:
    void run();
    void run_inference();
    void run_buckets();
    /// Sends `bytes` to stage `to` (its input `key`), blocking this stage for the transfer.
    void send(int64_t to, size_t key, double bytes);
    void wait_for(size_t key, uint32_t op);
    void run_pass(const PassCost& pass, bool last_backward_of_chunk, double grad_bytes, const char* name);
    /// Runs `op` on `group` from this device; blocks the calling process for its duration.
    /// Returns the duration, ps.
    double collective(const CommOp& op, bool exposed);
    /// Sends `bytes` on a port at `rate_cap` bytes/s starting `offset` from now; returns when
    /// the last byte leaves, relative to now.
    sc_time transfer(tlm_utils::simple_initiator_socket<StageProc>& port, double bytes, double rate_cap, sc_time offset);
    void tick(sc_time t);
    /// Counts `ps` of communication the device waited on, under `key` ("scope/level").
    void add_exposed(const std::string& key, double ps) {
        times.exposed_comm_ps += ps;
        auto it = std::find_if(times.exposed_by.begin(), times.exposed_by.end(), [&](const auto& e) { return e.first == key; });
        if (it == times.exposed_by.end()) times.exposed_by.push_back({key, ps});
        else it->second += ps;
    }

    JobSim& m_sim;
    int64_t m_r;
    std::vector<char> m_ready;
    sc_core::sc_event m_arrived, m_bucket_added, m_buckets_done;
    std::deque<std::pair<sc_time, double>> m_buckets;  ///< (ready at, bytes)
    int64_t m_buckets_total = 0, m_buckets_finished = 0;
};

class JobSim {
public:
    explicit JobSim(const JobModel& job) : job(job) {
        if (job.inference) {
            if (int64_t(job.passes.size()) != job.pp) throw std::invalid_argument("simulate_job: one pass list per pipeline stage");
            for (const auto& p : job.passes)
                if (p.size() != job.passes[0].size()) throw std::invalid_argument("simulate_job: every stage runs the same passes");
            pass_end_ps.assign(job.passes[0].size(), 0.0);
        } else {
            schedule = pipeline_schedule(job.schedule, job.pp, job.virtual_stages, job.microbatches);
            if (int64_t(job.stages.size()) != job.pp) throw std::invalid_argument("simulate_job: one StageCost per pipeline stage");
            for (const auto& s : job.stages)
                if (int64_t(s.chunks.size()) != job.virtual_stages) throw std::invalid_argument("simulate_job: one ChunkCost per virtual stage");
        }
        for (int64_t r = 0; r < job.pp; ++r) {
            const std::string n = "stage" + std::to_string(r);
            LinkSpec intra = job.tensor.intra, inter = job.tensor.inter;
            intra.latency_ps = inter.latency_ps = 0;  // latencies come from the collective model
            intra_links.push_back(std::make_unique<Link>((n + "_intra").c_str(), intra));
            inter_links.push_back(std::make_unique<Link>((n + "_inter").c_str(), inter));
            stages.push_back(std::make_unique<StageProc>(n.c_str(), *this, r));
            stages.back()->intra_port.bind(intra_links.back()->socket);
            stages.back()->inter_port.bind(inter_links.back()->socket);
        }
    }
    std::vector<double> pass_end_ps;
    // the trace (none without a path)
    std::unique_ptr<TraceWriter> tw;
    std::vector<uint16_t> comp_compute, comp_intra, comp_inter;
    std::vector<OpInfo> ops;
    std::map<std::string, uint32_t> op_ids;
    std::map<std::string, StallCauseId> causes;
    /// The trace's operator for `name` (added on first use); 0 without a trace.
    uint32_t op_id(const std::string& name, const std::string& type) {
        if (!tw) return 0;
        auto it = op_ids.find(name);
        if (it != op_ids.end()) return it->second;
        OpInfo o;
        o.name = name, o.op_type = type, o.op_class = type == "collective" ? "communication" : "compute";
        ops.push_back(o);
        return op_ids[name] = uint32_t(ops.size() - 1);
    }
    /// Which of a stage's trace lanes an event goes on.
    enum class Lane { Compute, Intra, Inter };
    /// Records one event on stage `stage`'s `lane` (nothing without a trace).
    void emit(EventKind kind, int64_t stage, Lane lane, uint32_t op, double t0_ps, double dur_ps, double bytes = 0, double macs = 0,
              const std::string& cause = "") {
        if (!tw || dur_ps <= 0) return;
        const size_t i = size_t(stage);
        const uint16_t comp = lane == Lane::Compute ? comp_compute[i] : lane == Lane::Intra ? comp_intra[i] : comp_inter[i];
        const uint64_t ns = uint64_t(std::llround(dur_ps / 1000.0));
        tw->emit(make_event(kind, comp, op, uint64_t(std::llround(t0_ps)), uint64_t(std::llround(dur_ps)), uint64_t(bytes), uint64_t(macs),
                            kind == EventKind::Transfer || kind == EventKind::Op ? 0 : ns, 0, cause.empty() ? kNoStallCause : causes.at(cause)));
    }
    size_t key(bool fwd, int64_t chunk, int64_t mb) const {
        return size_t(((fwd ? 0 : 1) * job.virtual_stages + chunk) * job.microbatches + mb);
    }
    void account(const CommOp& op, const CollectiveCost& c, double ps, bool exposed) {
        const std::string k = std::string(to_string(op.scope)) + "/" + to_string(op.kind) + "/" + to_string(c.algorithm) + "/" + to_string(c.protocol);
        CommTotal& t = comm[k];
        t.scope = to_string(op.scope), t.kind = to_string(op.kind), t.algorithm = to_string(c.algorithm), t.protocol = to_string(c.protocol);
        t.count += 1, t.bytes += op.bytes, t.time_ps += ps;
        if (exposed) t.exposed_ps += ps;
    }

    const JobModel& job;
    std::vector<std::vector<PipeOp>> schedule;
    std::vector<std::unique_ptr<Link>> intra_links, inter_links;
    std::vector<std::unique_ptr<StageProc>> stages;
    std::map<std::string, CommTotal> comm;
    uint64_t events = 0;
};

StageProc::StageProc(sc_core::sc_module_name n, JobSim& sim, int64_t r)
    : sc_module(n), intra_port("intra_port"), inter_port("inter_port"), m_sim(sim), m_r(r) {
    m_ready.assign(sim.job.inference ? sim.job.passes[0].size() * size_t(std::max<int64_t>(1, sim.job.microbatches))
                                     : size_t(2 * sim.job.virtual_stages * sim.job.microbatches), 0);
    if (sim.job.inference) {
        SC_THREAD(run_inference);
        return;
    }
    if (sim.job.dp_overlap && sim.job.data.ranks > 1)
        for (const auto& c : sim.job.stages[r].chunks)
            m_buckets_total += c.grad_bytes > 0 ? int64_t(std::ceil(c.grad_bytes / sim.job.bucket_bytes)) : 0;
    SC_THREAD(run);
    SC_THREAD(run_buckets);
}

void StageProc::tick(sc_time t) {
    ++m_sim.events;
    sc_core::wait(t);
}

sc_time StageProc::transfer(tlm_utils::simple_initiator_socket<StageProc>& port, double bytes, double rate_cap, sc_time offset) {
    sc_time end = offset;
    const unsigned cap_mbps = unsigned(std::min(4.0e9, std::max(1.0, rate_cap / 1e6)));
    while (bytes > 0) {
        const double part = std::min(bytes, kMaxTransaction);
        tlm::tlm_generic_payload p;
        p.set_command(tlm::TLM_WRITE_COMMAND);
        p.set_data_ptr(nullptr);
        p.set_data_length(unsigned(part));
        p.set_streaming_width(cap_mbps == unsigned(part) ? cap_mbps + 1 : cap_mbps);
        sc_time d = end;
        port->b_transport(p, d);
        end = d;
        bytes -= part;
    }
    return end;
}

double StageProc::collective(const CommOp& op, bool exposed) {
    const CommGroup& g = m_sim.job.group(op.scope);
    const CollectiveCost c = collective_cost(op.kind, op.bytes, g);
    if (c.time_ps <= 0) return 0;
    const sc_time t0 = sc_core::sc_time_stamp();
    const sc_time a = transfer(intra_port, c.intra_bytes, c.intra_bytes_per_s, sc_core::SC_ZERO_TIME);
    const sc_time b = transfer(inter_port, c.inter_bytes, c.inter_bytes_per_s, c.serial ? a : sc_core::SC_ZERO_TIME);
    tick(std::max(a, b) + sc_time(c.latency_ps, SC_PS));
    const double ps = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e12;
    m_sim.account(op, c, ps, exposed);
    if (m_sim.tw) {
        const double start = t0.to_seconds() * 1e12;
        const uint32_t id = m_sim.op_id(std::string(to_string(op.scope)) + "/" + to_string(op.kind), "collective");
        m_sim.emit(EventKind::Transfer, m_r, JobSim::Lane::Intra, id, start, a.to_seconds() * 1e12, c.intra_bytes);
        m_sim.emit(EventKind::Transfer, m_r, JobSim::Lane::Inter, id, start, b.to_seconds() * 1e12, c.inter_bytes);
        if (exposed) m_sim.emit(EventKind::Stall, m_r, JobSim::Lane::Compute, id, start, ps, 0, 0, std::string(to_string(op.scope)) + "_comm");
    }
    if (exposed) add_exposed(std::string(to_string(op.scope)) + "/" + (g.nodes() > 1 ? "inter" : "intra"), ps);
    return ps;
}

void StageProc::wait_for(size_t key, uint32_t op) {
    const sc_time t0 = sc_core::sc_time_stamp();
    while (!m_ready[key]) {
        ++m_sim.events;
        sc_core::wait(m_arrived);
    }
    const double ps = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e12;
    times.idle_ps += ps;
    m_sim.emit(EventKind::Stall, m_r, JobSim::Lane::Compute, op, t0.to_seconds() * 1e12, ps, 0, 0, "pipeline_bubble");
}

void StageProc::run_pass(const PassCost& pass, bool last_backward_of_chunk, double grad_bytes, const char* name) {
    const size_t n = pass.comm.size();
    const uint32_t op = m_sim.op_id(name, "pass");
    const double start_ps = sc_core::sc_time_stamp().to_seconds() * 1e12;
    const sc_time slice(pass.compute_ps / double(n + 1), SC_PS);
    if (last_backward_of_chunk && m_buckets_total > 0 && grad_bytes > 0) {  // buckets fill through this backward pass
        const int64_t nb = int64_t(std::ceil(grad_bytes / m_sim.job.bucket_bytes));
        for (int64_t k = 0; k < nb; ++k) {
            const double bytes = std::min(m_sim.job.bucket_bytes, grad_bytes - double(k) * m_sim.job.bucket_bytes);
            m_buckets.push_back({sc_core::sc_time_stamp() + sc_time(pass.compute_ps * double(k + 1) / double(nb), SC_PS), bytes});
        }
        m_bucket_added.notify(sc_core::SC_ZERO_TIME);
    }
    for (size_t i = 0; i <= n; ++i) {
        m_sim.emit(EventKind::Fold, m_r, JobSim::Lane::Compute, op, sc_core::sc_time_stamp().to_seconds() * 1e12, slice.to_seconds() * 1e12, 0,
                   pass.macs / double(n + 1));
        tick(slice);
        times.compute_ps += slice.to_seconds() * 1e12;
        if (i < n) collective(pass.comm[i], true);
    }
    times.energy_j += pass.energy_j;
    m_sim.emit(EventKind::Op, m_r, JobSim::Lane::Compute, op, start_ps, sc_core::sc_time_stamp().to_seconds() * 1e12 - start_ps);
}

void StageProc::run_buckets() {
    while (m_buckets_finished < m_buckets_total) {
        while (m_buckets.empty()) {
            ++m_sim.events;
            sc_core::wait(m_bucket_added);
        }
        const auto [ready, bytes] = m_buckets.front();
        m_buckets.pop_front();
        if (ready > sc_core::sc_time_stamp()) tick(ready - sc_core::sc_time_stamp());
        collective({m_sim.job.gradient_reduction(), CommScope::Data, bytes}, false);
        ++m_buckets_finished;
    }
    m_buckets_done.notify(sc_core::SC_ZERO_TIME);
}

void StageProc::send(int64_t to, size_t key, double bytes) {
    const JobModel& job = m_sim.job;
    const sc_time t0 = sc_core::sc_time_stamp();
    const CommGroup pair = job.p2p_pair();
    const bool split = job.scatter_gather && job.p2p_inter_node && job.tp > 1;
    const CollectiveCost c = collective_cost(Collective::SendRecv, split ? bytes / double(job.tp) : bytes, pair);
    const sc_time a = transfer(job.p2p_inter_node ? inter_port : intra_port, c.inter_bytes + c.intra_bytes,
                               job.p2p_inter_node ? c.inter_bytes_per_s : c.intra_bytes_per_s, sc_core::SC_ZERO_TIME);
    tick(a + sc_time(c.latency_ps, SC_PS));
    const double ps = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e12;
    m_sim.account({Collective::SendRecv, CommScope::Pipeline, bytes}, c, ps, true);
    if (m_sim.tw) {
        const uint32_t id = m_sim.op_id("pipeline/send_recv", "collective");
        const double start = t0.to_seconds() * 1e12;
        m_sim.emit(EventKind::Transfer, m_r, job.p2p_inter_node ? JobSim::Lane::Inter : JobSim::Lane::Intra, id, start, a.to_seconds() * 1e12,
                   c.inter_bytes + c.intra_bytes);
        m_sim.emit(EventKind::Stall, m_r, JobSim::Lane::Compute, id, start, ps, 0, 0, "pipeline_comm");
    }
    add_exposed(std::string("pipeline/") + (job.p2p_inter_node ? "inter" : "intra"), ps);
    if (split) collective({Collective::AllGather, CommScope::Tensor, bytes}, true);  // the receiving node's gather
    m_sim.stages[to]->deliver(key);
}

void StageProc::run_inference() {
    const JobModel& job = m_sim.job;
    const auto& passes = job.passes[m_r];
    const size_t mbs = size_t(std::max<int64_t>(1, job.microbatches));
    for (size_t k = 0; k < passes.size(); ++k)
        for (size_t j = 0; j < mbs; ++j) {
            const char* name = k == 0 ? "prefill" : "decode";
            const size_t key = k * mbs + j;
            if (m_r > 0 || k > 0) wait_for(key, m_sim.op_id(name, "pass"));
            run_pass(passes[k], false, 0, name);
            if (m_r == job.pp - 1) m_sim.pass_end_ps[k] = sc_core::sc_time_stamp().to_seconds() * 1e12;
            if (m_r < job.pp - 1) send(m_r + 1, key, passes[k].send_bytes);
            else if (k + 1 < passes.size() && job.pp > 1) send(0, key + mbs, passes[k].send_bytes);
            else if (k + 1 < passes.size()) deliver(key + mbs);  // one stage: its own next token
        }
    times.end_ps = sc_core::sc_time_stamp().to_seconds() * 1e12;
}

void StageProc::run() {
    const JobModel& job = m_sim.job;
    const StageCost& st = job.stages[m_r];
    const int64_t pp = job.pp, v = job.virtual_stages, m = job.microbatches;
    for (const PipeOp& op : m_sim.schedule[m_r]) {
        const bool first = m_r == 0 && op.chunk == 0, last = m_r == pp - 1 && op.chunk == v - 1;
        const char* name = op.forward ? "forward" : "backward";
        if (op.forward ? !first : !last) wait_for(m_sim.key(op.forward, op.chunk, op.microbatch), m_sim.op_id(name, "pass"));
        const ChunkCost& cc = st.chunks[op.chunk];
        run_pass(op.forward ? cc.forward : cc.backward, !op.forward && op.microbatch == m - 1, cc.grad_bytes, name);
        // the activation (gradient) to the stage that needs it next
        int64_t to = -1, chunk = op.chunk;
        if (op.forward) {
            if (m_r < pp - 1) to = m_r + 1;
            else if (op.chunk < v - 1) to = 0, chunk = op.chunk + 1;
        } else {
            if (m_r > 0) to = m_r - 1;
            else if (op.chunk > 0) to = pp - 1, chunk = op.chunk - 1;
        }
        if (to >= 0) send(to, m_sim.key(op.forward, chunk, op.microbatch), job.p2p_bytes);
    }
    // gradients: the buckets still in flight, or one reduction over the whole shard
    double grads = 0;
    for (const auto& c : st.chunks) grads += c.grad_bytes;
    if (job.data.ranks > 1 && grads > 0) {
        if (m_buckets_total > 0) {
            const sc_time t0 = sc_core::sc_time_stamp();
            while (m_buckets_finished < m_buckets_total) {
                ++m_sim.events;
                sc_core::wait(m_buckets_done);
            }
            const double ps = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e12;
            if (ps > 0) add_exposed(job.data.nodes() > 1 ? "data/inter" : "data/intra", ps);
            if (m_sim.tw)
                m_sim.emit(EventKind::Stall, m_r, JobSim::Lane::Compute, m_sim.op_id(std::string("data/") + to_string(job.gradient_reduction()), "collective"),
                           t0.to_seconds() * 1e12, ps, 0, 0, "data_comm");
        } else {
            collective({job.gradient_reduction(), CommScope::Data, grads}, true);
        }
    }
    double expert_grads = 0;
    for (const auto& c : st.chunks) expert_grads += c.expert_grad_bytes;
    if (job.expert_data.ranks > 1 && expert_grads > 0)
        collective({job.gradient_reduction(), CommScope::ExpertData, expert_grads}, true);
    if (pp > 1 && (m_r == 0 || m_r == pp - 1) && st.embedding_grad_bytes > 0)
        collective({Collective::AllReduce, CommScope::Embedding, st.embedding_grad_bytes}, true);
    if (m_sim.tw) {
        const uint32_t id = m_sim.op_id("optimizer", "pass");
        const double now = sc_core::sc_time_stamp().to_seconds() * 1e12;
        m_sim.emit(EventKind::Fold, m_r, JobSim::Lane::Compute, id, now, st.optimizer_ps);
        m_sim.emit(EventKind::Op, m_r, JobSim::Lane::Compute, id, now, st.optimizer_ps);
    }
    tick(sc_time(st.optimizer_ps, SC_PS));
    times.compute_ps += st.optimizer_ps;
    times.energy_j += st.optimizer_j;
    if (job.zero_stage >= 1 && job.zero_stage < 3 && job.data.ranks > 1)  // the updated parameter shards back to every replica (ZeRO-3 gathers per layer instead)
        collective({Collective::AllGather, CommScope::Data, job.param_bytes_per_stage_device}, true);
    times.end_ps = sc_core::sc_time_stamp().to_seconds() * 1e12;
}

}  // namespace

/// The split of a job's step a person reads first (the trace's job_summary attribute).
static std::string job_summary(const JobResult& r) {
    const double n = double(std::max<size_t>(1, r.stages.size()));
    double compute = 0, exposed = 0, idle = 0, total = 0, hidden = 0;
    std::map<std::string, double> by;
    for (const auto& st : r.stages) {
        compute += st.compute_ps, exposed += st.exposed_comm_ps, idle += st.idle_ps;
        for (const auto& [k, v] : st.exposed_by) by[k] += v;
    }
    for (const auto& c : r.comm) total += c.time_ps, hidden += c.time_ps - c.exposed_ps;
    auto s = [](double ps) { return std::to_string(ps * 1e-12).substr(0, 8) + " s"; };
    std::string out = "step " + s(r.step_ps) + " over " + std::to_string(r.stages.size()) + " pipeline stage(s)\n";
    out += "mean device: compute " + s(compute / n) + ", exposed communication " + s(exposed / n) + ", bubble " + s(idle / n) + "\n";
    for (const auto& [k, v] : by) out += "  exposed " + k + ": " + s(v / n) + "\n";
    out += "communication hidden under compute: " + s(hidden / n) + " of " + s(total / n) + " per device\n";
    return out;
}

JobResult simulate_job(const JobModel& job, const std::string& trace_path, const std::string& detail) {
    if (sc_core::sc_get_status() != sc_core::SC_ELABORATION || sc_core::sc_time_stamp() != sc_core::SC_ZERO_TIME)
        throw std::logic_error("simulate_job: SystemC has already simulated in this process");
    JobSim sim(job);
    if (!trace_path.empty()) {
        sim.tw = std::make_unique<TraceWriter>(trace_path, parse_trace_detail(detail, "--detail"));
        const double peak_per_cycle = job.device_peak_macs_per_s / 1e9;  // at the 1 GHz reference clock
        for (int64_t r = 0; r < job.pp; ++r) {
            // the stage's device energy as a mean per MAC of its passes (the device runs' totals)
            double j = 0, macs = 0;
            if (job.inference) {
                for (const auto& p : job.passes[size_t(r)]) j += p.energy_j * double(job.microbatches), macs += p.macs * double(job.microbatches);
            } else {
                for (const auto& c : job.stages[size_t(r)].chunks)
                    j += double(job.microbatches) * (c.forward.energy_j + c.backward.energy_j), macs += double(job.microbatches) * (c.forward.macs + c.backward.macs);
            }
            const std::string n = "stage" + std::to_string(r);
            sim.comp_compute.push_back(sim.tw->add_component({n, "compute", macs > 0 ? j * 1e12 / macs : 0.0, 0, 0, peak_per_cycle, 1e9}));
            sim.comp_intra.push_back(sim.tw->add_component({n + ".nvlink", "link.intra", 0, job.intra_pj_per_byte, 0, 0, 1e9}));
            sim.comp_inter.push_back(sim.tw->add_component({n + ".nic", "link.inter", 0, job.inter_pj_per_byte, 0, 0, 1e9}));
        }
        for (const char* c : {"pipeline_bubble", "tensor_comm", "pipeline_comm", "data_comm", "embedding_comm", "expert_comm", "expert_data_comm"}) {
            static const std::map<std::string, std::string> doc = {
                {"pipeline_bubble", "a stage waiting for another stage's activations or gradients (the pipeline bubble)"},
                {"tensor_comm", "a device waiting on a tensor-parallel collective"},
                {"pipeline_comm", "a device sending its activations or gradients to the next stage"},
                {"data_comm", "a device waiting on the data-parallel gradient reduction"},
                {"embedding_comm", "the first and last stage syncing the tied embedding's gradient"},
                {"expert_comm", "a device waiting on a mixture-of-experts all-to-all (dispatch or combine)"},
                {"expert_data_comm", "a device waiting on the reduction of its experts' gradients"}};
            sim.causes[c] = sim.tw->add_stall_cause({c, doc.at(c)});
        }
        sim.tw->set_attr("model", job.name);
        sim.tw->set_attr("machine", job.target);
        sim.tw->set_attr("precision", job.precision);
        sim.tw->set_attr("runtime", std::string("job"));
        sim.tw->set_attr("clock_hz", 1e9);
    }
    sc_core::sc_start();
    JobResult r;
    for (auto& s : sim.stages) {
        StageTimes t = s->times;
        r.step_ps = std::max(r.step_ps, t.end_ps);
        r.stages.push_back(t);
    }
    for (auto& t : r.stages) {  // every stage's device is busy until the slowest finishes
        t.idle_ps = std::max(0.0, r.step_ps - t.compute_ps - t.exposed_comm_ps);
    }
    for (const auto& l : sim.intra_links) r.intra_bytes += l->bytes(), r.link_queued_ps += l->queued_ps();
    for (const auto& l : sim.inter_links) r.inter_bytes += l->bytes(), r.link_queued_ps += l->queued_ps();
    for (auto& [k, t] : sim.comm) r.comm.push_back(t);
    for (size_t i = 0; i < r.stages.size(); ++i) {
        r.stages[i].energy_j += sim.intra_links[i]->bytes() * job.intra_pj_per_byte * 1e-12 + sim.inter_links[i]->bytes() * job.inter_pj_per_byte * 1e-12;
    }
    r.events = sim.events;
    r.pass_end_ps = sim.pass_end_ps;
    if (sim.tw) {
        // a stage that finished early waits for the slowest: that wait is bubble too
        for (size_t i = 0; i < r.stages.size(); ++i)
            sim.emit(EventKind::Stall, int64_t(i), JobSim::Lane::Compute, sim.op_id("step_end", "pass"), r.stages[i].end_ps, r.step_ps - r.stages[i].end_ps, 0, 0,
                     "pipeline_bubble");
        sim.tw->set_attr("job_summary", job_summary(r));
        sim.tw->set_ops(sim.ops);
        sim.tw->finish();
    }
    return r;
}

}  // namespace archsim
