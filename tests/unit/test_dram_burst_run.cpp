// The DRAM's burst-run fast path against the burst-by-burst reference (arch/memory/dram.h):
// the same transfers through two DMA engines, one sending every burst as its own transaction.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "arch/memory/dma.h"
#include "arch/memory/dram.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

using namespace archsim;
namespace fs = std::filesystem;

namespace {

/// What a DRAM did per operator and channel-independent totals, read back from its trace.
struct Seen {
    std::vector<double> done_ps;         ///< each transfer's completion
    std::map<uint32_t, uint64_t> bytes;  ///< by transfer (stamped as the operator)
    std::map<uint32_t, uint64_t> first_ps, end_ps;
    uint64_t events = 0;
};

/// Runs `sizes` (bytes; negative = a write) issued at `delays_ps` through a DMA of `per_burst`
/// mode into a DRAM of `cfg`; the transfer's index is stamped on its events.
Seen run(DramConfig cfg, bool per_burst, const std::vector<int64_t>& sizes, const std::vector<double>& delays_ps,
         const std::string& tag) {
    cfg.per_burst = per_burst;
    const std::string path = (fs::temp_directory_path() / ("archsim_dram_" + tag + ".h5")).string();
    Seen s;
    {
        TraceWriter w(path);
        const uint16_t comp = w.add_component({"dram", "dram", 0, 1.0, 1.0, 0, 1e9});
        uint32_t op = 0;
        Dram dram(("dram_" + tag).c_str(), cfg, w, comp, op);
        Dma dma(("dma_" + tag).c_str(), cfg.transaction_bytes, per_burst);
        dma.socket.bind(dram.socket);
        std::vector<OpInfo> ops;
        for (size_t i = 0; i < sizes.size(); ++i) {
            op = static_cast<uint32_t>(i);
            s.done_ps.push_back(dma.transfer(std::llabs(sizes[i]), sizes[i] < 0, delays_ps[i]));
            ops.push_back({"t" + std::to_string(i), "Copy", "data_movement", 0, 0, "", "", ""});
        }
        w.set_ops(std::move(ops));
        w.finish();
    }
    TraceReader r(path);
    r.visit_events([&](const TraceEvent& e, const ComponentInfo&) {
        ++s.events;
        s.bytes[e.op] += e.bytes;
        auto f = s.first_ps.find(e.op);
        if (f == s.first_ps.end() || e.t_ps < f->second) s.first_ps[e.op] = e.t_ps;
        s.end_ps[e.op] = std::max(s.end_ps[e.op], e.t_ps + e.dur_ps);
    });
    fs::remove(path);
    return s;
}

}  // namespace

TEST_CASE("a burst run times its bursts as the burst-by-burst reference does, within 1 ps", "[unit][dram]") {
    // partial last bursts, runs shorter than the channels, back-to-back queueing, writes,
    // issue delays, and a bandwidth whose per-burst service time is not a whole number of ps
    const std::vector<int64_t> sizes = {64, 100, 4096, 4000, -640, 1 << 20, 3, (1 << 20) + 17, -(64 * 7 + 1), 65536};
    const std::vector<double> delays = {0, 0, 1000, 0, 0, 0, 250.5, 0, 10, 0};
    DramConfig cfg;
    cfg.bandwidth_gbps = 34.0;
    cfg.latency_ns = 100;
    cfg.transaction_bytes = 64;
    for (int64_t channels : {1, 3, 8}) {
        cfg.channels = channels;
        const std::string tag = std::to_string(channels);
        const Seen ref = run(cfg, true, sizes, delays, "ref" + tag), fast = run(cfg, false, sizes, delays, "fast" + tag);
        INFO("channels " << channels);
        REQUIRE(fast.done_ps.size() == ref.done_ps.size());
        for (size_t i = 0; i < sizes.size(); ++i) {
            INFO("transfer " << i << " of " << sizes[i] << " bytes");
            CHECK(std::fabs(fast.done_ps[i] - ref.done_ps[i]) <= 1.0);
            CHECK(fast.bytes.at(uint32_t(i)) == ref.bytes.at(uint32_t(i)));
            CHECK(fast.first_ps.at(uint32_t(i)) == ref.first_ps.at(uint32_t(i)));
            CHECK(std::llabs(int64_t(fast.end_ps.at(uint32_t(i))) - int64_t(ref.end_ps.at(uint32_t(i)))) <= 1);
        }
        // one event per channel a transfer uses, against one per burst
        CHECK(fast.events < ref.events);
        uint64_t runs = 0;
        for (int64_t b : sizes) runs += std::min<uint64_t>(uint64_t(channels), (std::llabs(b) + 63) / 64);
        CHECK(fast.events == runs);
    }
}

TEST_CASE("an ideal DRAM completes a burst run at its issue, in one event", "[unit][dram]") {
    const std::vector<int64_t> sizes = {64, 100, 1 << 20, -4000};
    const std::vector<double> delays = {0, 300, 0, 10};
    DramConfig cfg;
    cfg.ideal = true;
    cfg.channels = 4;
    const Seen ref = run(cfg, true, sizes, delays, "ideal_ref"), fast = run(cfg, false, sizes, delays, "ideal_fast");
    for (size_t i = 0; i < sizes.size(); ++i) {
        CHECK(fast.done_ps[i] == delays[i]);
        CHECK(fast.done_ps[i] == ref.done_ps[i]);
        CHECK(fast.bytes.at(uint32_t(i)) == ref.bytes.at(uint32_t(i)));
    }
    CHECK(fast.events == sizes.size());
}
