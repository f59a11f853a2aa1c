#include "traces/perfetto_export.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "sim/base/error.h"
#include "traces/trace_reader.h"

namespace archsim {

namespace {

constexpr int kLanes = 64;
constexpr int kBins = 500;
constexpr int kKinds = 9;

/// JSON string escaping for names (quotes, backslashes, control characters).
std::string esc(const std::string& s) {
    std::string o;
    o.reserve(s.size());
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += static_cast<char>(c);
        else if (c < 0x20) o += fmt::format("\\u{:04x}", c);
        else o += static_cast<char>(c);
    }
    return o;
}

/// A gzip stream that throws on error.
class GzOut {
public:
    explicit GzOut(const std::string& path) : m_path(path), m_f(gzopen(path.c_str(), "wb1")) {
        if (!m_f) throw UserError(path, "cannot create");
    }
    ~GzOut() {
        if (m_f) gzclose(m_f);
    }
    void write(const std::string& s) {
        if (!s.empty() && gzwrite(m_f, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size()))
            throw UserError(m_path, "write failed (disk full?)");
    }
    void close() {
        const int rc = gzclose(m_f);
        m_f = nullptr;
        if (rc != Z_OK) throw UserError(m_path, "write failed (disk full?)");
    }

private:
    std::string m_path;
    gzFile m_f;
};


}  // namespace

PerfettoStats export_perfetto(const TraceReader& trace, const std::string& out_path, uint64_t max_events) {
    PerfettoStats st;
    st.events_in = trace.event_count();
    const auto& comps = trace.components();
    const auto& ops = trace.ops();
    // pass 1: events per kind and the run's end, to thin evenly and to place the counter bins
    std::array<uint64_t, kKinds> per_kind{};
    uint64_t end_ps = 0;
    trace.visit_events([&](const TraceEvent& e, const ComponentInfo&) {
        ++per_kind[e.kind];
        end_ps = std::max<uint64_t>(end_ps, e.t_ps + e.dur_ps);
    });
    std::array<uint64_t, kKinds> stride;
    stride.fill(1);
    if (max_events > 0 && st.events_in > max_events) {
        const uint64_t always = per_kind[static_cast<int>(EventKind::Op)] + per_kind[static_cast<int>(EventKind::Stall)];
        const uint64_t rest = st.events_in - always;
        const uint64_t budget = max_events > always ? max_events - always : 0;
        for (int k = 0; k < kKinds; ++k) {
            if (k == static_cast<int>(EventKind::Op) || k == static_cast<int>(EventKind::Stall) || per_kind[k] == 0) continue;
            stride[k] = budget == 0 ? per_kind[k] + 1 : std::max<uint64_t>(1, (rest + budget - 1) / budget);
        }
    }
    // pass 2: slices, streamed; counters binned
    const double bin_ps = std::max(1.0, static_cast<double>(end_ps) / kBins);
    std::vector<double> dram_bytes(kBins, 0.0), busy_ps(kBins, 0.0);
    size_t compute_comps = 0;
    for (const auto& c : comps) compute_comps += c.level == "compute";
    std::vector<std::vector<uint64_t>> lane_end(comps.size());
    std::array<uint64_t, kKinds> seen{};
    GzOut out(out_path);
    out.write("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"model\":\"" + esc(trace.attr_string("model")) + "\",\"machine\":\"" +
              esc(trace.attr_string("machine")) + "\"},\"traceEvents\":[\n");
    out.write("{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"archsim " + esc(trace.attr_string("machine")) +
              " / " + esc(trace.attr_string("model")) + "\"}}");
    std::string buf;
    auto add_bins = [&](std::vector<double>& bins, double t0, double t1, double amount) {
        if (t1 <= t0) {
            const size_t b = std::min<size_t>(kBins - 1, static_cast<size_t>(t0 / bin_ps));
            bins[b] += amount;
            return;
        }
        const double rate = amount / (t1 - t0);
        for (size_t b = static_cast<size_t>(t0 / bin_ps); b < kBins && b * bin_ps < t1; ++b) {
            const double lo = std::max(t0, b * bin_ps), hi = std::min(t1, (b + 1) * bin_ps);
            if (hi > lo) bins[b] += rate * (hi - lo);
        }
    };
    trace.visit_events([&](const TraceEvent& e, const ComponentInfo& comp) {
        if (buf.size() > (1u << 20)) {  // stream in pieces of about 1 MiB
            out.write(buf);
            buf.clear();
        }
        const EventKind kind = static_cast<EventKind>(e.kind);
        if (kind == EventKind::DramRead || kind == EventKind::DramWrite)
            add_bins(dram_bytes, double(e.t_ps), double(e.t_ps + e.dur_ps), double(e.bytes));
        if ((kind == EventKind::Fold || kind == EventKind::Vector) && comp.level == "compute")
            add_bins(busy_ps, double(e.t_ps), double(e.t_ps + e.dur_ps), double(e.dur_ps));
        if (seen[e.kind]++ % stride[e.kind] != 0) {
            ++st.dropped_by_kind[to_string(kind)];
            return;
        }
        // the first lane of this component free at the event's start
        auto& lanes = lane_end[e.component];
        size_t lane = 0;
        while (lane < lanes.size() && lanes[lane] > e.t_ps) ++lane;
        bool new_lane = false;  // a lane is named when it opens
        if (lane == lanes.size()) {
            if (lanes.size() < kLanes) lanes.push_back(0), new_lane = true;
            else lane = kLanes - 1;
        }
        lanes[lane] = std::max(lanes[lane], e.t_ps + e.dur_ps);
        const uint64_t tid = e.component * kLanes + lane + 1;
        if (new_lane) {
            ++st.tracks;
            buf += fmt::format(",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}{}\"}}}}", tid,
                               esc(comp.name), lane ? fmt::format(" #{}", lane) : std::string());
            buf += fmt::format(",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{}}}}}", tid, tid);
        }
        const std::string& op = ops[e.op].name;
        const std::string name = kind == EventKind::Op ? op : std::string(to_string(kind));
        buf += fmt::format(",\n{{\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.6f},\"dur\":{:.6f},\"name\":\"{}\",\"args\":{{\"op\":\"{}\"",
                           tid, e.t_ps * 1e-6, e.dur_ps * 1e-6, esc(name), esc(op));
        if (e.bytes) buf += fmt::format(",\"bytes\":{}", e.bytes);
        if (e.ops) buf += fmt::format(",\"ops\":{}", e.ops);
        if (e.cycles) buf += fmt::format(",\"cycles\":{}", e.cycles);
        if (kind == EventKind::Stall) buf += fmt::format(",\"cause\":\"{}\"", trace.stall_cause_name(e.detail));
        buf += "}}";
        ++st.slices_out;
    });
    out.write(buf);
    buf.clear();
    for (int b = 0; b < kBins; ++b) {
        const double ts = b * bin_ps * 1e-6;
        buf += fmt::format(",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"DRAM bandwidth (GB/s)\",\"ts\":{:.6f},\"args\":{{\"GB/s\":{:.4f}}}}}", ts,
                           dram_bytes[b] / bin_ps * 1e3);
        buf += fmt::format(",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"compute occupancy\",\"ts\":{:.6f},\"args\":{{\"busy\":{:.5f}}}}}", ts,
                           compute_comps ? busy_ps[b] / (bin_ps * double(compute_comps)) : 0.0);
        st.counters_out += 2;
    }
    // the power controller's windows (traces/README.md, /power_timeline): power and clock as counters
    for (const PowerWindow& w : trace.tables().power_timeline) {
        buf += fmt::format(",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"power (W)\",\"ts\":{:.6f},\"args\":{{\"W\":{:.4f}}}}}", w.t_ps * 1e-6, w.power_w);
        buf += fmt::format(",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"clock (MHz)\",\"ts\":{:.6f},\"args\":{{\"MHz\":{:.1f}}}}}", w.t_ps * 1e-6,
                           w.clock_mhz);
        st.counters_out += 2;
    }
    // counters sampled by the run (traces/README.md, /counters): a serving run's queue and KV use
    const CounterSeries& cs = trace.tables().counters;
    for (const auto& c : cs.samples) {
        buf += fmt::format(",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"{}\",\"ts\":{:.6f},\"args\":{{\"value\":{:.6g}}}}}", cs.names[c.counter],
                           c.t_ps * 1e-6, c.value);
        ++st.counters_out;
    }
    std::string dropped;
    for (const auto& [k, v] : st.dropped_by_kind) dropped += (dropped.empty() ? "" : ",") + fmt::format("\"{}\":{}", k, v);
    buf += fmt::format("\n],\"metadata\":{{\"events_in_trace\":{},\"slices_written\":{},\"dropped_by_kind\":{{{}}}}}}}\n", st.events_in,
                       st.slices_out, dropped);
    out.write(buf);
    out.close();
    return st;
}

}  // namespace archsim
