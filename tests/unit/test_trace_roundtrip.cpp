// Trace writer -> HDF5 -> reader -> reducer, on a hand-made trace with known totals.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "sim/base/error.h"
#include "traces/reducer.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

using namespace archsim;
namespace fs = std::filesystem;

namespace {
std::string tmp(const std::string& name) { return (fs::temp_directory_path() / ("archsim_trace_" + name)).string(); }

TraceEvent ev(EventKind k, uint16_t comp, uint32_t op, uint64_t t, uint64_t dur, uint64_t bytes, uint64_t ops,
              uint64_t cycles) {
    return make_event(k, comp, op, t, dur, bytes, ops, cycles);
}
}  // namespace

TEST_CASE("reduced totals equal the sums of the events, energy equals the sum of its parts", "[unit][trace]") {
    const std::string path = tmp("known.h5");
    fs::remove(path);
    const uint64_t n_folds = 3 * TraceWriter::kChunkEvents / 2 + 7;  // spans several chunks
    {
        TraceWriter w(path);
        auto array = w.add_component({"array", "compute", 0.5, 0, 0, 64, 1e9});
        auto dram = w.add_component({"dram", "dram", 0, 10.0, 20.0, 0, 1e9});
        w.set_ops({{"a", "Conv", "contraction", 0, 0, "", "", ""}, {"b", "Relu", "elementwise", 0, 0, "", "", ""}});
        w.set_attr("clock_hz", 1e9);
        w.set_attr("static_power_w", 2.0);
        w.set_attr("model", std::string("hand"));
        w.set_attr("mapper", std::string("search"));
        w.set_op_mapping({0, "rows>cols", 3, 1});
        w.set_op_mapping({0, "cols>rows bands=4", 7, 3});  // a second call replaces the first
        for (uint64_t i = 0; i < n_folds; ++i) w.emit(ev(EventKind::Fold, array, 0, i * 1000, 1000, 0, 64, 1));
        w.emit(ev(EventKind::DramRead, dram, 0, 0, 500, 1000, 0, 0));
        w.emit(ev(EventKind::DramWrite, dram, 1, n_folds * 1000, 500, 300, 0, 0));
        w.emit(ev(EventKind::Stall, array, 1, n_folds * 1000, 2000, 0, 0, 2));
        w.emit(ev(EventKind::Op, array, 0, 0, n_folds * 1000, 0, 0, 0));
        w.emit(ev(EventKind::Op, array, 1, n_folds * 1000, 2000, 0, 0, 0));
        CHECK(w.event_count() == n_folds + 5);
        w.finish();
    }
    REQUIRE(fs::exists(path));
    REQUIRE_FALSE(fs::exists(path + ".tmp"));
    TraceReader r(path);
    CHECK(r.event_count() == n_folds + 5);
    Metrics m = reduce_trace(r);
    const double latency_ps = n_folds * 1000.0 + 2000.0;
    CHECK(m.latency_ps == latency_ps);
    CHECK(m.latency_cycles == static_cast<uint64_t>(latency_ps / 1000));
    CHECK(m.macs == static_cast<int64_t>(64 * n_folds));
    CHECK(m.compute_cycles == n_folds);
    CHECK(m.stall_cycles == 2);
    CHECK(m.mapper == "search");
    CHECK(m.ops[0].mapping == "cols>rows bands=4");
    CHECK(m.ops[0].mapspace == 7);
    CHECK(m.ops[0].mappings_evaluated == 3);
    CHECK(m.ops[1].mapping.empty());
    CHECK(m.traffic_bytes.at("dram") == 1300);
    CHECK(m.read_bytes.at("dram") == 1000);
    CHECK(m.write_bytes.at("dram") == 300);
    CHECK(m.energy_pj_by_part.at("compute") == Approx(0.5 * 64 * n_folds));
    CHECK(m.energy_pj_by_part.at("dram") == Approx(1000 * 10.0 + 300 * 20.0));
    CHECK(m.energy_pj_by_part.at("static") == Approx(2.0 * latency_ps));
    double parts = 0;
    for (const auto& [k, v] : m.energy_pj_by_part) parts += v;
    CHECK(m.energy_pj == Approx(parts));
    double ops = 0;
    for (const auto& o : m.ops) ops += o.energy_pj;
    CHECK(ops == Approx(m.energy_pj));  // operators tile the timeline here, so they share all energy
    CHECK(m.utilization == Approx(64.0 * n_folds / (m.latency_cycles * 64.0)));
    CHECK(m.ops[1].stall_cycles == 2);
    CHECK(m.ops[1].traffic_bytes.at("dram") == 300);
}

TEST_CASE("replayed kernels stored by reference read back as the events written out one by one", "[unit][trace]") {
    // a kernel (operator 0) captured as it runs, then replayed three times between stored events
    const std::vector<TraceEvent> kernel = {ev(EventKind::Fold, 0, 0, 0, 100, 0, 64, 100), ev(EventKind::DramRead, 1, 0, 10, 50, 256, 0, 0),
                                            ev(EventKind::Op, 0, 0, 0, 120, 0, 0, 0)};
    std::vector<TraceEvent> got[2];
    Metrics metrics[2];
    for (int by_ref = 0; by_ref < 2; ++by_ref) {
        const std::string path = tmp(by_ref ? "byref.h5" : "flat.h5");
        fs::remove(path);
        {
            TraceWriter w(path);
            w.set_by_reference(by_ref == 1);
            w.add_component({"array", "compute", 0.5, 0, 0, 64, 1e9});
            w.add_component({"dram", "dram", 0, 10.0, 20.0, 0, 1e9});
            w.set_ops({{"a", "Conv", "contraction", 0, 0, "", "", ""}, {"b", "Conv", "contraction", 0, 0, "", "", ""},
                       {"c", "Conv", "contraction", 0, 0, "", "", ""}, {"d", "Relu", "elementwise", 0, 0, "", "", ""}});
            w.set_attr("clock_hz", 1e9);
            w.emit(ev(EventKind::Vector, 0, 3, 0, 5, 0, 10, 5));
            w.begin_capture();
            for (TraceEvent e : kernel) e.t_ps += 5, w.emit(e);
            std::vector<TraceEvent> events;
            std::vector<EventSum> sums;
            double dynamic_pj = 0, offchip_pj = 0;
            w.end_capture(5, events, sums, dynamic_pj, offchip_pj);
            w.replay(events, sums, dynamic_pj, offchip_pj, 1, 125);
            w.replay(events, sums, dynamic_pj, offchip_pj, 2, 245);
            w.emit(ev(EventKind::Vector, 0, 3, 365, 5, 0, 10, 5));
            w.replay(events, sums, dynamic_pj, offchip_pj, 2, 370);  // at the end: after the last stored event
            CHECK(w.event_count() == 1 + 4 * 3 + 1);
            w.finish();
        }
        TraceReader r(path);
        CHECK(r.event_count() == 14);
        CHECK(r.attr_double("event_count") == (by_ref ? 5 : 14));  // stored rows: the replays are references
        r.for_each_chunk([&](const TraceEvent* e, size_t n) { got[by_ref].insert(got[by_ref].end(), e, e + n); }, 4);
        metrics[by_ref] = reduce_trace(r);
    }
    REQUIRE(got[0].size() == 14);
    REQUIRE(got[1].size() == got[0].size());
    auto fields = [](const TraceEvent& e) { return std::make_tuple(e.t_ps, e.dur_ps, e.bytes, e.ops, e.cycles, e.op, e.seq, e.component, e.kind, e.detail); };
    for (size_t i = 0; i < got[0].size(); ++i) {
        INFO(i);
        CHECK(fields(got[0][i]) == fields(got[1][i]));
    }
    CHECK(got[1][4].op == 1);
    CHECK(got[1][7].t_ps == 245);
    CHECK(got[1][13].op == 2);
    CHECK(got[1][10].t_ps == 365);
    CHECK(got[1][11].t_ps == 370);
    CHECK(metrics[0].latency_ps == metrics[1].latency_ps);
    CHECK(metrics[0].energy_pj == metrics[1].energy_pj);
    CHECK(metrics[0].traffic_bytes == metrics[1].traffic_bytes);
}

TEST_CASE("an interrupted writer leaves no trace that looks complete", "[unit][trace]") {
    const std::string path = tmp("interrupted.h5");
    fs::remove(path);
    {
        TraceWriter w(path);
        w.add_component({"array", "compute", 1, 0, 0, 1, 1e9});
        w.emit(ev(EventKind::Fold, 0, 0, 0, 1, 0, 1, 1));
        // destroyed without finish(): an exception unwound past it
    }
    CHECK_FALSE(fs::exists(path));
    CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("the reader refuses missing, non-HDF5 and truncated files", "[unit][trace]") {
    CHECK_THROWS_AS(TraceReader(tmp("does_not_exist.h5")), UserError);
    const std::string junk = tmp("junk.h5");
    std::ofstream(junk) << "not an hdf5 file";
    CHECK_THROWS_WITH(TraceReader(junk), junk + ": not an HDF5 file");
    // a real trace cut in half
    const std::string full = tmp("full.h5");
    {
        TraceWriter w(full);
        w.add_component({"array", "compute", 1, 0, 0, 1, 1e9});
        w.set_ops({{"a", "Conv", "contraction", 0, 0, "", "", ""}});
        for (int i = 0; i < 200000; ++i) w.emit(ev(EventKind::Fold, 0, 0, i, 1, 0, 1, 1));
        w.finish();
    }
    const std::string cut = tmp("cut.h5");
    const auto size = fs::file_size(full);
    {
        std::ifstream in(full, std::ios::binary);
        std::string bytes(size / 2, '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        std::ofstream(cut, std::ios::binary) << bytes;
    }
    CHECK_THROWS_AS(
        [&] {
            TraceReader r(cut);
            reduce_trace(r);
        }(),
        UserError);
}

TEST_CASE("an operator's bound names what its time went to: MACs at peak, an underused array, or a stall cause", "[unit][trace]") {
    archsim::OpMetrics o;
    // a 128 x 128 weight-stationary fold streaming 1 row: 2 x 128 + 128 + 1 - 2 = 383 cycles for
    // 128 x 128 MACs, one cycle's worth at the array's peak (16384 MACs/cycle)
    o.compute_cycles = 383;
    o.stall_cycles_by_cause = {{"operand_load", 10}};
    CHECK(archsim::bound_of(o, 383, 1) == "array_underused");
    // the same fold streaming 1024 rows: 1406 cycles, 1024 of them at full use
    o.compute_cycles = 1406;
    CHECK(archsim::bound_of(o, 1406, 1024) == "compute");
    // vector work counts as compute; a stall cause wins only with more cycles than either part
    o.compute_cycles = 383 + 400;
    CHECK(archsim::bound_of(o, 383, 1) == "compute");
    o.stall_cycles_by_cause = {{"operand_load", 500}};
    CHECK(archsim::bound_of(o, 383, 1) == "operand_load");
    o.compute_cycles = 0, o.stall_cycles_by_cause.clear();
    CHECK(archsim::bound_of(o, 0, 0) == "none");
}
