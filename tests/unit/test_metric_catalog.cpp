// The declared metrics: well formed, and the writers (metrics.json, CSV, table) emit exactly the
// declared metrics, so a new declaration shows up everywhere without further edits.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "traces/metric_catalog.h"
#include "traces/metrics_report.h"
#include "traces/reducer.h"

using namespace archsim;
using json = nlohmann::ordered_json;  // keeps the key order of the file

namespace {

/// A hand-made run: two operators (one not modeled), two components, two memory levels.
Metrics sample() {
    Metrics m;
    m.model = "hand", m.machine = "m", m.precision = "int8", m.clock_hz = 1e9;
    m.latency_ps = 4000, m.latency_cycles = 4, m.macs = 64, m.compute_cycles = 1, m.stall_cycles = 3;
    m.stall_cycles_by_cause = {{"operand_load", 3}};
    m.energy_pj_by_part = {{"compute", 32}, {"dram", 100}, {"static", 8}};
    m.energy_pj = 140;
    m.traffic_bytes = {{"dram", 10}, {"sram", 4}}, m.read_bytes = {{"dram", 6}, {"sram", 4}}, m.write_bytes = {{"dram", 4}};
    m.peak_macs_per_cycle = 64, m.utilization = 0.25, m.static_power_w = 2e-3, m.events = 9;
    OpMetrics a;
    a.name = "a", a.op_type = "Conv", a.op_class = "contraction", a.macs = 64, a.latency_ps = 1000, a.compute_cycles = 1;
    a.traffic_bytes = {{"dram", 10}}, a.bound = "compute", a.energy_pj = 134, a.utilization = 1;
    OpMetrics b;
    b.name = "b,with comma", b.op_type = "Foo", b.op_class = "unsupported", b.modeled = false, b.start_ps = 1000;
    b.latency_ps = 3000, b.stall_cycles = 3, b.stall_cycles_by_cause = {{"operand_load", 3}}, b.traffic_bytes = {{"sram", 4}};
    b.bound = "operand_load", b.energy_pj = 6;
    b.mapping = "cols>rows", b.mapspace = 5, b.mappings_evaluated = 2;
    m.ops = {a, b};
    m.unmodeled_ops = {"b,with comma"};
    m.components = {{"array", "compute", 64, 1000, 0, 0.25}, {"dram", "dram", 0, 2000, 10, 0}};
    return m;
}

std::vector<std::string> keys(const json& o) {
    std::vector<std::string> k;
    for (const auto& [key, v] : o.items()) k.push_back(key);
    return k;
}

std::vector<std::string> declared(MetricScope s) {
    std::vector<std::string> n;
    for (const MetricDecl* d : metrics_of(s)) n.push_back(d->name);
    return n;
}

}  // namespace

TEST_CASE("every metric is declared once, with a unit, a doc and a scope", "[unit][metrics]") {
    const std::set<std::string> units = {"", "s", "J", "cycles", "MAC", "FLOP", "bytes", "W", "Hz", "MAC/cycle", "1", "1/s", "1/J",
                                        "TFLOP/s", "min"};
    std::set<std::pair<int, std::string>> names;
    std::set<std::string> sweep_columns;
    for (const auto& d : metric_catalog()) {
        INFO(d.name);
        CHECK_FALSE(d.name.empty());
        CHECK(d.doc.size() > 5);
        CHECK(units.count(d.unit) == 1);
        CHECK(names.insert({static_cast<int>(d.scope), d.name}).second);
        if (!d.sweep.empty()) CHECK(sweep_columns.insert(d.sweep).second);
        if (d.scope == MetricScope::Point) CHECK((d.derive && !d.get && !d.sweep.empty()));
        else if (d.scope == MetricScope::Training) CHECK((!d.get && !d.sweep.empty()));  // training_json writes them
        else if (d.scope == MetricScope::Job || d.scope == MetricScope::Serving) CHECK(!d.get);  // run_job, run_llm_serving write them
        else CHECK(d.get);
        if (!d.report.key.empty()) CHECK(is_per_key(d.sweep));
    }
    CHECK(find_metric(MetricScope::Total, "latency_s") != nullptr);
    CHECK(column_for("traffic_{}_bytes", "dram") == "traffic_dram_bytes");
    // a job's paths: "*" stands for any one key, nothing else does
    REQUIRE(find_metric_path(MetricScope::Job, "breakdown_s.exposed_by.tensor/intra") != nullptr);
    CHECK(find_metric_path(MetricScope::Job, "breakdown_s.exposed_by.tensor/intra")->name == "breakdown_s.exposed_by.*");
    CHECK(find_metric_path(MetricScope::Job, "breakdown_s.exposed_by") == nullptr);
    CHECK(find_metric_path(MetricScope::Job, "stages[].compute_s") != nullptr);
    CHECK(find_metric_path(MetricScope::Serving, "stages[].compute_s") == nullptr);
}

TEST_CASE("metrics.json holds exactly the declared metrics, in declaration order", "[unit][metrics]") {
    const Metrics m = sample();
    const json j = json::parse(metrics_to_json(m));
    std::vector<std::string> top = declared(MetricScope::Run);
    for (const char* s : {"total", "ops", "components"}) top.push_back(s);
    CHECK(keys(j) == top);
    CHECK(keys(j["total"]) == declared(MetricScope::Total));
    // "modeled" is left out while true, the mapping's three while the machine reported none
    std::vector<std::string> op;
    for (const std::string& k : declared(MetricScope::Op))
        if (k != "modeled" && k != "mapping" && k != "mapspace" && k != "mappings_evaluated") op.push_back(k);
    REQUIRE(op.size() + 4 == declared(MetricScope::Op).size());
    CHECK(keys(j["ops"][0]) == op);
    CHECK(keys(j["ops"][1]) == declared(MetricScope::Op));
    CHECK(j["ops"][1]["modeled"] == false);
    CHECK(j["ops"][1]["mapping"] == "cols>rows");
    CHECK(j["ops"][1]["mapspace"] == 5);
    CHECK(j["ops"][1]["mappings_evaluated"] == 2);
    CHECK(keys(j["components"][1]) == declared(MetricScope::Component));
    // units follow the names: ps -> s, pJ -> J
    CHECK(j["total"]["latency_s"].get<double>() == 4000e-12);
    CHECK(j["total"]["energy_breakdown_j"]["dram"].get<double>() == 100e-12);
    CHECK(j["total"]["flops"].get<int64_t>() == 128);
    CHECK(j["total"]["stall_share"].get<double>() == 0.75);
    CHECK(j["ops"][1]["start_s"].get<double>() == 1000e-12);
    CHECK(j["components"][0]["busy_s"].get<double>() == 1000e-12);
}

TEST_CASE("the CSV has one column per declared CSV metric and key, and a TOTAL row", "[unit][metrics]") {
    const Metrics m = sample();
    std::istringstream in(render_metrics(m, ReportFormat::Csv));
    std::string head, a, b, total, extra;
    std::getline(in, head), std::getline(in, a), std::getline(in, b), std::getline(in, total);
    CHECK_FALSE(std::getline(in, extra));
    std::string want;
    for (const MetricDecl* d : metrics_of(MetricScope::Op))
        if (!d->csv.empty() && !is_per_key(d->csv)) want += (want.empty() ? "" : ",") + d->csv;
    want += ",bytes_dram,bytes_sram";
    CHECK(head == want);
    // a left-out metric (a's mapping) is an empty cell
    CHECK(a == "a,Conv,64,0,1e-09,1,0,1.34e-10,1,compute,,10,0");
    CHECK(b == "\"b,with comma\",Foo,0,1e-09,3e-09,0,3,6e-12,0,operand_load,cols>rows,0,4");
    CHECK(total == "TOTAL,,64,,4e-09,1,3,1.4e-10,0.25,,,10,4");
}

TEST_CASE("the table shows the declared columns and every run and total metric", "[unit][metrics]") {
    const std::string t = render_metrics(sample(), ReportFormat::Table);
    for (const MetricDecl* d : metrics_of(MetricScope::Op)) {
        if (d->table.header.empty()) continue;
        // a time or energy column's header names the unit the policy picked (docs/units.md)
        const std::string stem = d->unit == "s" || d->unit == "J" ? d->table.header.substr(0, d->table.header.rfind('_') + 1) : d->table.header;
        CHECK(t.find(stem) != std::string::npos);
    }
    // 1e-9 s operators: their latency column is in ns
    CHECK(t.find("latency_ns") != std::string::npos);
    for (MetricScope s : {MetricScope::Run, MetricScope::Total})
        for (const MetricDecl* d : metrics_of(s)) CHECK(t.find("\n" + d->name + " ") != std::string::npos);
    CHECK(t.find("b,with comma") != std::string::npos);
    CHECK(t.find("NOT MODELED  1 operator(s)") != std::string::npos);
}
