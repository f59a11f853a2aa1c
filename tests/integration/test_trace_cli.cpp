// archsim trace: summary equals metrics.json, the Perfetto export parses and its slices add up per
// component, diff of a trace with itself is empty, corrupt traces are one-line errors.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <cctype>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/cli.h"
#include "traces/trace_reader.h"

using namespace archsim::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const std::string kSrc = ARCHSIM_SOURCE_DIR;

/// Runs `model` on `config` into a fresh folder; returns the folder.
std::string run_to(const std::string& tag, const std::string& model, const std::string& config, const std::string& extra = "") {
    const std::string out = temp_dir(tag);
    CliResult r = run_archsim("run " + model + " --arch " + config + " --out " + out + " --format json " + extra);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return out;
}

std::string gunzip(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    REQUIRE(f != nullptr);
    std::string out;
    char buf[1 << 16];
    for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    gzclose(f);
    return out;
}

/// The quantity printed after `label` as "NUMBER UNIT" ("56.7 ms", "363 mJ"), in base units.
double quantity_after(const std::string& text, const std::string& label) {
    const size_t at = text.find(label);
    REQUIRE(at != std::string::npos);
    std::istringstream in(text.substr(at + label.size()));
    double v = 0;
    std::string unit;
    in >> v >> unit;
    static const std::map<std::string, double> scale = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12},
                                                        {"J", 1}, {"mJ", 1e-3}, {"uJ", 1e-6}, {"nJ", 1e-9}, {"pJ", 1e-12}};
    REQUIRE(scale.count(unit) == 1);
    return v * scale.at(unit);
}

/// The numbers of `text` (outside names such as "layers.0" or "t256") that break the unit
/// policy (docs/units.md): more than five significant digits, or an integer of five or more
/// digits without its thousands grouped.
std::vector<std::string> policy_breaks(const std::string& text) {
    std::vector<std::string> bad;
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '#' || c == '@'; };
    for (size_t i = 0; i < text.size();) {
        if (!std::isdigit(static_cast<unsigned char>(text[i])) || (i > 0 && word(text[i - 1]))) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == ',' || text[j] == '.')) ++j;
        std::string tok = text.substr(i, j - i);
        while (!tok.empty() && (tok.back() == ',' || tok.back() == '.')) tok.pop_back();
        const bool in_name = j < text.size() && (std::isalpha(static_cast<unsigned char>(text[j])) || text[j] == '_');
        if (!in_name) {
            std::string digits;
            for (char c : tok)
                if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
            const size_t lead = digits.find_first_not_of('0');
            const size_t significant = lead == std::string::npos ? 0 : digits.size() - lead;
            if (tok.find('.') != std::string::npos ? significant > 5 : (digits.size() >= 5 && tok.find(',') == std::string::npos))
                bad.push_back(tok);
        }
        i = j;
    }
    return bad;
}

/// The integer printed after `label` with its thousands grouped ("1,234,567"), as a number.
double grouped_after(const std::string& text, const std::string& label) {
    const size_t at = text.find(label);
    REQUIRE(at != std::string::npos);
    size_t i = text.find_first_not_of(' ', at + label.size());
    std::string digits;
    for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == ','); ++i)
        if (text[i] != ',') digits += text[i];
    REQUIRE(!digits.empty());
    return std::stod(digits);
}
}  // namespace

TEST_CASE("trace summary totals equal metrics.json", "[e2e][trace]") {
    const std::string model = have_shared() ? shared_path("models/resnet50.onnx") : kSrc + "/workloads/models/resnet18.onnx";
    for (const char* cfg : {"gpu/a100_sxm4_80gb.toml", "kpu/t256.toml", "cpu/host.toml"}) {
        INFO(cfg);
        const std::string out = run_to("tsum", model, kSrc + "/configs/" + cfg);
        const json m = json::parse(slurp(out + "/metrics.json"));
        CliResult r = run_archsim("trace summary " + out + "/trace.h5");
        REQUIRE(r.exit_code == 0);
        // three significant digits in their unit (docs/units.md): equal to within half the last digit
        CHECK(quantity_after(r.out, "latency      ") == Approx(m["total"]["latency_s"].get<double>()).epsilon(0.005));
        CHECK(quantity_after(r.out, "energy       ") == Approx(m["total"]["energy_j"].get<double>()).epsilon(0.005));
        CHECK(grouped_after(r.out, "MACs         ") == m["total"]["macs"].get<double>());
        // every number above the resolved config follows the unit policy
        const std::string head = r.out.substr(r.out.find("\nevents"), r.out.find("resolved config") - r.out.find("\nevents"));
        CHECK(policy_breaks(head) == std::vector<std::string>{});
        const std::string traffic = r.out.substr(r.out.find("traffic by memory level"));
        for (const auto& [level, bytes] : m["total"]["traffic_bytes"].items())
            CHECK(grouped_after(traffic, "\n  " + level + std::string(28 - level.size(), ' ') + " ") == bytes.get<double>());
        for (const char* s : {"top 10 operators by time", "top 10 operators by energy", "time_", "energy_", "stall time by cause",
                              "utilization per compute component", "resolved config"})
            CHECK(r.out.find(s) != std::string::npos);
        // ops: one row per operator, sorted, filtered
        const CliResult none = run_archsim("trace ops " + out + " --where op_type=NoSuchOp");  // a run folder stands for its trace
        CHECK(none.exit_code == 1);  // an empty answer is a warning and a non-zero exit, never silent
        CHECK(none.err.find("matches none of the") != std::string::npos);
        CliResult ops = run_archsim("trace ops " + out + "/trace.h5 --sort macs --where op_type=Conv");
        REQUIRE(ops.exit_code == 0);
        CHECK(ops.out.find(" operators\n") != std::string::npos);
        CHECK(ops.out.find("compute% and stall%: the operator's compute cycles and its stall cycles, each over its span") !=
              std::string::npos);  // the table says what its shares are shares of
        fs::remove_all(out);
    }
}

TEST_CASE("the Perfetto export parses and its slices add up per component", "[e2e][trace]") {
    const std::string out = run_to("texp", kSrc + "/workloads/models/resnet18.onnx", kSrc + "/configs/kpu/t64.toml");
    REQUIRE(run_archsim("trace export " + out + "/trace.h5 --perfetto " + out + "/t.json.gz").exit_code == 0);
    const json j = json::parse(gunzip(out + "/t.json.gz"));
    // slice time per component (tid / 64 lanes) against the trace's own events
    std::map<int64_t, double> slices;
    size_t counters = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "X") slices[(e["tid"].get<int64_t>() - 1) / 64] += e["dur"].get<double>();
        if (e["ph"] == "C") ++counters;
    }
    archsim::TraceReader tr(out + "/trace.h5");
    // 500 bins of DRAM bandwidth and compute occupancy, and power and clock per controller window
    REQUIRE_FALSE(tr.tables().power_timeline.empty());
    CHECK(counters == 1000 + 2 * tr.tables().power_timeline.size());
    std::map<int64_t, double> events;
    tr.for_each_chunk([&](const archsim::TraceEvent* ev, size_t n) {
        for (size_t i = 0; i < n; ++i) events[ev[i].component] += ev[i].dur_ps * 1e-6;
    });
    for (const auto& [comp, dur] : events) CHECK(slices[comp] == Approx(dur).epsilon(1e-6));
    CHECK(j["metadata"]["slices_written"].get<uint64_t>() == tr.event_count());
    // --max-events keeps operators and stalls, thins the rest, and says so
    CliResult capped = run_archsim("trace export " + out + "/trace.h5 --perfetto " + out + "/c.json.gz --max-events 2000");
    REQUIRE(capped.exit_code == 0);
    CHECK(capped.err.find("--max-events dropped") != std::string::npos);
    const json c = json::parse(gunzip(out + "/c.json.gz"));
    CHECK(c["metadata"]["slices_written"].get<uint64_t>() <= 2200);
    CHECK(!c["metadata"]["dropped_by_kind"].empty());
    fs::remove_all(out);
}

TEST_CASE("trace diff of a trace with itself is empty and shows moved time otherwise", "[e2e][trace]") {
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    const std::string a = run_to("tdiffa", model, kSrc + "/configs/kpu/t64.toml");
    const std::string b = run_to("tdiffb", model, kSrc + "/configs/kpu/t64.toml", "--set dram.bandwidth_gbps=16");
    CliResult same = run_archsim("trace diff " + a + "/trace.h5 " + a + "/trace.h5");
    REQUIRE(same.exit_code == 0);
    CHECK(same.out.find("no differences") != std::string::npos);
    CliResult diff = run_archsim("trace diff " + a + "/trace.h5 " + b + "/trace.h5 --top 5");
    REQUIRE(diff.exit_code == 0);
    CHECK(diff.out.find("operators changed") != std::string::npos);
    CHECK(diff.out.find("stall") != std::string::npos);  // slower DRAM: stalls appear
    // timeline: a window of one component
    CliResult tl = run_archsim("trace timeline " + a + "/trace.h5 --from 0 --to 10us --component dram --limit 3");
    REQUIRE(tl.exit_code == 0);
    CHECK(tl.out.find("events shown") != std::string::npos);
    CHECK(run_archsim("trace timeline " + a + "/trace.h5 --from 10xs").exit_code == 2);
    CHECK(run_archsim("trace timeline " + a + "/trace.h5 --from 10").exit_code == 2);  // a time needs its unit
    // a window past the end says where the trace ends and exits 1; a run's folder stands for its trace
    CliResult past = run_archsim("trace timeline " + a + " --from 10s");
    CHECK(past.exit_code == 1);
    CHECK(past.err.find("the trace's events end at") != std::string::npos);
    // the headers name the machine, and different models get a warning
    CHECK(diff.out.find("resnet18 on T64 (kpu, t64.toml") != std::string::npos);
    if (!have_shared()) return;
    const std::string c = run_to("tdiffc", shared_path("models/mlp.onnx"), kSrc + "/configs/kpu/t64.toml");
    CliResult other = run_archsim("trace diff " + a + " " + c);
    CHECK(other.exit_code == 0);
    CHECK(other.err.find("different models") != std::string::npos);
    fs::remove_all(c);
    fs::remove_all(a);
    fs::remove_all(b);
}

TEST_CASE("a corrupt or truncated trace is a one-line error", "[e2e][trace][bad]") {
    const std::string out = run_to("tbad", kSrc + "/workloads/models/resnet18.onnx", kSrc + "/configs/kpu/t64.toml");
    std::ofstream(out + "/garbage.h5") << "not a trace";
    {
        std::ifstream in(out + "/trace.h5", std::ios::binary);
        std::string head(20000, '\0');
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        std::ofstream(out + "/truncated.h5", std::ios::binary) << head;
    }
    // a replay stored by reference that names no recording (trace schema 5)
    fs::copy_file(out + "/trace.h5", out + "/badref.h5");
    REQUIRE(run_command("/usr/bin/python3 -c \"import h5py; f = h5py.File('" + out +
                        "/badref.h5', 'r+'); r = f['kernel_refs']; r[0, 1] = 99; f.close()\"").exit_code == 0);
    for (const char* f : {"garbage.h5", "truncated.h5", "missing.h5", "badref.h5"}) {
        INFO(f);
        for (const char* cmd : {"summary", "ops", "timeline"}) {
            CliResult r = run_archsim(std::string("trace ") + cmd + " " + out + "/" + f);
            CHECK(r.exit_code == 2);
            CHECK(r.err.rfind("archsim: error: " + out + "/" + f, 0) == 0);
            CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        }
    }
    fs::remove_all(out);
}

TEST_CASE("the same inputs give bit-identical traces and metrics", "[e2e][trace][determinism]") {
    for (const char* cfg : {"kpu/t64.toml", "gpu/a100_sxm4_80gb.toml", "cpu/host.toml", "tpu/tpu_128x128_ws.toml"}) {
        INFO(cfg);
        const std::string a = run_to("deta", kSrc + "/workloads/models/resnet18.onnx", kSrc + "/configs/" + cfg);
        const std::string b = run_to("detb", kSrc + "/workloads/models/resnet18.onnx", kSrc + "/configs/" + cfg);
        CHECK(slurp(a + "/metrics.json") == slurp(b + "/metrics.json"));
        archsim::TraceReader ta(a + "/trace.h5"), tb(b + "/trace.h5");
        REQUIRE(ta.event_count() == tb.event_count());
        std::vector<archsim::TraceEvent> ea, eb;
        ta.for_each_chunk([&](const archsim::TraceEvent* ev, size_t n) { ea.insert(ea.end(), ev, ev + n); });
        tb.for_each_chunk([&](const archsim::TraceEvent* ev, size_t n) { eb.insert(eb.end(), ev, ev + n); });
        REQUIRE(ea.size() == eb.size());
        size_t differ = 0;
        for (size_t i = 0; i < ea.size(); ++i) differ += std::memcmp(&ea[i], &eb[i], sizeof(archsim::TraceEvent)) != 0;
        CHECK(differ == 0);
        REQUIRE(ta.components().size() == tb.components().size());
        for (size_t i = 0; i < ta.components().size(); ++i) CHECK(ta.components()[i].name == tb.components()[i].name);
        CHECK(ta.attr_string("config") == tb.attr_string("config"));
        fs::remove_all(a);
        fs::remove_all(b);
    }
}

TEST_CASE("a full trace stores replayed kernels once and its expanded events sum to what the run emitted", "[e2e][trace]") {
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    for (const char* cfg : {"tpu/tpu_32x32_ws.toml", "kpu/t64.toml", "gpu/a100_sxm4_80gb.toml"}) {
        INFO(cfg);
        const std::string out = run_to("byref", model, kSrc + "/configs/" + cfg);
        archsim::TraceReader r(out + "/trace.h5");
        CHECK(r.attr_double("schema_version") == archsim::kTraceSchemaVersion);
        // every event the run emitted comes back, and the per-operator sums made from them are
        // the stored ones, row for row (times, bytes, ops, cycles and counts)
        archsim::EventSummer again;
        uint64_t n = 0;
        r.visit_events([&](const archsim::TraceEvent& e, const archsim::ComponentInfo&) { again.add(e), ++n; });
        CHECK(n == r.event_count());
        REQUIRE(again.rows().size() == r.event_sums().size());
        for (size_t i = 0; i < again.rows().size(); ++i) {
            INFO("event sum row " << i);
            CHECK(std::memcmp(&again.rows()[i], &r.event_sums()[i], sizeof(archsim::EventSum)) == 0);
        }
        // replays are stored by reference: fewer rows in /events than events emitted
        CHECK(r.attr_double("event_count") < double(r.event_count()));
        fs::remove_all(out);
    }
}

TEST_CASE("a kernel-detail trace gives the same metrics and reports with one span per operator and component and kind", "[e2e][trace]") {
    const std::string model = kSrc + "/workloads/models/resnet18.onnx";
    for (const char* cfg : {"tpu/tpu_32x32_ws.toml", "kpu/t64.toml", "gpu/a100_sxm4_80gb.toml", "cpu/host.toml"}) {
        INFO(cfg);
        const std::string full = run_to("dfull", model, kSrc + "/configs/" + cfg, "--detail full");
        const std::string kern = run_to("dkern", model, kSrc + "/configs/" + cfg, "--detail kernel");
        CHECK(slurp(full + "/metrics.json") == slurp(kern + "/metrics.json"));
        archsim::TraceReader f(full + "/trace.h5"), k(kern + "/trace.h5");
        CHECK(k.detail() == archsim::TraceDetail::Kernel);
        CHECK(k.event_count() == f.event_count());  // what the run emitted, whatever was kept
        size_t rows = 0;
        k.for_each_chunk([&](const archsim::TraceEvent*, size_t n) { rows += n; });
        CHECK(rows == 0);
        CHECK(k.event_sums().size() == f.event_sums().size());
        CHECK(fs::file_size(kern + "/trace.h5") < fs::file_size(full + "/trace.h5"));
        for (const char* cmd : {"trace summary", "trace ops"}) {
            CliResult a = run_archsim(std::string(cmd) + " " + full + "/trace.h5"), b = run_archsim(std::string(cmd) + " " + kern + "/trace.h5");
            REQUIRE(a.exit_code == 0);
            REQUIRE(b.exit_code == 0);
            auto body = [](const std::string& s) { return s.substr(s.find('\n') + 1); };  // after the trace's path
            CHECK(body(a.out) == body(b.out));
        }
        // the export shows one slice per event-sum row
        REQUIRE(run_archsim("trace export " + kern + "/trace.h5 --perfetto " + kern + "/t.json.gz").exit_code == 0);
        const json j = json::parse(gunzip(kern + "/t.json.gz"));
        size_t slices = 0;
        for (const auto& e : j["traceEvents"]) slices += e["ph"] == "X";
        CHECK(slices == k.event_sums().size());
        fs::remove_all(full);
        fs::remove_all(kern);
    }
}
