#include "traces/trace_reader.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "sim/base/error.h"
#include "traces/hdf5_types.h"

namespace archsim {

/// Reads a whole 1-D compound dataset `name` of record type `type` (taken over and closed).
template <class Record>
static std::vector<Record> read_table(hid_t file, const char* name, hid_t type, const std::string& path) {
    h5::Handle t(type, H5Tclose);
    h5::Handle d(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
    if (!d.valid()) throw UserError(path, std::string("no ") + name + " dataset");
    h5::Handle space(H5Dget_space(d.get()), H5Sclose);
    hsize_t n[1] = {0};
    H5Sget_simple_extent_dims(space.get(), n, nullptr);
    std::vector<Record> recs(n[0]);
    if (n[0] && H5Dread(d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, recs.data()) < 0)
        throw UserError(path, std::string("cannot read ") + name);
    return recs;
}

/// Every double of dataset `name` (1-D, or n x k read row by row); empty when the trace has none
/// (traces written before it existed).
static std::vector<double> read_doubles(hid_t file, const char* name, const std::string& path) {
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return {};
    h5::Handle d(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
    h5::Handle space(H5Dget_space(d.get()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    std::vector<double> v(static_cast<size_t>(std::max<hssize_t>(0, n)));
    if (!v.empty() && H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
        throw UserError(path, std::string("cannot read ") + name);
    return v;
}

struct TraceReadHandles {
    h5::Handle file;
    h5::Handle events;
    h5::Handle mem_type;
};

TraceReader::TraceReader(const std::string& path) : m_path(path), m_h(std::make_unique<TraceReadHandles>()) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    if (!std::filesystem::is_regular_file(path)) throw UserError(path, "no such trace file");
    if (H5Fis_hdf5(path.c_str()) <= 0) throw UserError(path, "not an HDF5 file");
    m_h->file = h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!m_h->file.valid()) throw UserError(path, "cannot open the HDF5 file (truncated or corrupt?)");
    const double version = attr_double("schema_version", -1);
    if (version < 0) throw UserError(path, "not an archsim trace (no schema_version attribute)");
    if (static_cast<int>(version) > kTraceSchemaVersion || static_cast<int>(version) < 3)
        throw UserError(path, "trace schema version " + std::to_string(static_cast<int>(version)) +
                                  " is not one this archsim reads (3 to " + std::to_string(kTraceSchemaVersion) + ")");
    if (attr_double("complete", 0) != 1) {
        const std::string why = attr_string("stopped_by");
        throw UserError(path, "the trace is marked incomplete" + (why.empty() ? std::string() : " (the run stopped: " + why + ")"));
    }

    {
        // a chunk cache of four 65,536-event chunks (14 MiB): the replays stored by reference
        // (for_each_expanded_chunk) re-read their recordings' rows without decompressing them again
        h5::Handle dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
        H5Pset_chunk_cache(dapl.get(), 521, size_t{4} * 65536 * 56, 1.0);
        m_h->events = h5::Handle(H5Dopen2(m_h->file.get(), "events", dapl.get()), H5Dclose);
    }
    if (!m_h->events.valid()) throw UserError(path, "no events dataset");
    m_h->mem_type = h5::Handle(h5::event_mem_type(), H5Tclose);
    {
        h5::Handle space(H5Dget_space(m_h->events.get()), H5Sclose);
        hsize_t dims[1] = {0};
        H5Sget_simple_extent_dims(space.get(), dims, nullptr);
        m_event_count = dims[0];
    }
    auto components = read_table<h5::ComponentRecord>(m_h->file.get(), "components", h5::component_type(), path);
    for (const auto& r : components)
        m_components.push_back({r.name, r.level, r.pj_per_op, r.pj_per_byte_read, r.pj_per_byte_write,
                                r.peak_ops_per_cycle, r.clock_hz});
    h5::Handle op_type(h5::op_type_h5(), H5Tclose);
    auto ops = read_table<h5::OpRecord>(m_h->file.get(), "ops", H5Tcopy(op_type.get()), path);
    auto s = [](const char* p) { return p ? std::string(p) : std::string(); };
    for (const auto& r : ops)
        m_ops.push_back({s(r.name), s(r.op_type), s(r.op_class), r.macs, r.flops, s(r.inputs), s(r.outputs), s(r.members)});
    if (!ops.empty()) {
        hsize_t n[1] = {ops.size()};
        h5::Handle space(H5Screate_simple(1, n, nullptr), H5Sclose);
        H5Dvlen_reclaim(op_type.get(), space.get(), H5P_DEFAULT, ops.data());  // frees the vlen strings
    }
    m_emitted = static_cast<uint64_t>(attr_double("events_emitted", static_cast<double>(m_event_count)));
    if (attr_string("detail") == "kernel") m_detail = TraceDetail::Kernel;
    if (H5Lexists(m_h->file.get(), "event_sums", H5P_DEFAULT) > 0) {
        m_sums = read_table<EventSum>(m_h->file.get(), "event_sums", h5::event_sum_mem_type(), path);
    } else {  // schema 3: sum the events
        EventSummer summer;
        for_each_chunk([&](const TraceEvent* ev, size_t n) {
            for (size_t i = 0; i < n; ++i) summer.add(ev[i]);
        });
        m_sums = summer.rows();
    }
    m_op_clock_mhz = read_doubles(m_h->file.get(), "op_clock_mhz", path);
    m_op_energy_scale = read_doubles(m_h->file.get(), "op_energy_scale", path);
    if ((!m_op_clock_mhz.empty() && m_op_clock_mhz.size() != m_ops.size()) || m_op_energy_scale.size() != m_op_clock_mhz.size())
        throw UserError(path, "corrupt trace: op_clock_mhz / op_energy_scale do not have one row per operator");
    const std::vector<double> timeline = read_doubles(m_h->file.get(), "power_timeline", path);
    for (size_t i = 0; i + 3 < timeline.size(); i += 4)
        m_power_timeline.push_back({timeline[i], timeline[i + 1], timeline[i + 2], timeline[i + 3]});
    const std::vector<double> counters = read_doubles(m_h->file.get(), "counters", path);
    if (!counters.empty()) {
        std::stringstream names(attr_string("counter_names"));
        for (std::string n; std::getline(names, n, ',');) m_counters.names.push_back(n);
        for (size_t i = 0; i + 2 < counters.size(); i += 3) {
            if (!(counters[i + 1] >= 0 && counters[i + 1] < double(m_counters.names.size())))
                throw UserError(path, "corrupt trace: a /counters row names counter " + std::to_string(counters[i + 1]) + " of " +
                                          std::to_string(m_counters.names.size()) + " in counter_names");
            m_counters.samples.push_back({counters[i], uint32_t(counters[i + 1]), counters[i + 2]});
        }
    }
    read_kernel_refs();
    const std::vector<double> mappings = read_doubles(m_h->file.get(), "op_mappings", path);
    if (!mappings.empty()) {
        std::stringstream choices(attr_string("op_mapping_choices"));
        for (size_t i = 0; i + 2 < mappings.size(); i += 3) {
            OpMapping m;
            if (!(mappings[i] >= 0 && mappings[i] < double(m_ops.size())) || !std::getline(choices, m.choice))
                throw UserError(path, "corrupt trace: /op_mappings row " + std::to_string(i / 3) +
                                          " names no operator or has no choice in op_mapping_choices");
            m.op = static_cast<uint32_t>(mappings[i]);
            m.mapspace = static_cast<int64_t>(mappings[i + 1]), m.evaluated = static_cast<int64_t>(mappings[i + 2]);
            m_op_mappings.push_back(std::move(m));
        }
    }
    h5::Handle cause_type(h5::stall_cause_type(), H5Tclose);
    auto causes = read_table<h5::StallCauseRecord>(m_h->file.get(), "stall_causes", H5Tcopy(cause_type.get()), path);
    for (const auto& r : causes) m_stall_causes.push_back({s(r.name), s(r.doc)});
    if (!causes.empty()) {
        hsize_t n[1] = {causes.size()};
        h5::Handle space(H5Screate_simple(1, n, nullptr), H5Sclose);
        H5Dvlen_reclaim(cause_type.get(), space.get(), H5P_DEFAULT, causes.data());
    }
}

const std::string& TraceReader::stall_cause_name(StallCauseId id) const {
    static const std::string unknown = "unknown";
    return id < m_stall_causes.size() ? m_stall_causes[id].name : unknown;
}

void TraceReader::corrupt(const TraceEvent& e) const {
    throw UserError(m_path, "corrupt trace: an event names component " + std::to_string(e.component) + ", operator " +
                                std::to_string(e.op) + ", kind " + std::to_string(e.kind) + " (the tables hold " +
                                std::to_string(m_components.size()) + " components and " + std::to_string(m_ops.size()) +
                                " operators)");
}

TraceReader::~TraceReader() = default;

TraceTables TraceReader::tables() const {
    TraceTables t;
    t.model = attr_string("model");
    t.machine = attr_string("machine");
    t.precision = attr_string("precision");
    t.runtime = attr_string("runtime");
    t.approximations = attr_string("approximations");
    t.precision_from = attr_string("precision_from");
    t.runtime_from = attr_string("runtime_from");
    t.not_modeled = attr_string("not_modeled");
    t.clock_hz = attr_double("clock_hz");
    t.static_power_w = attr_double("static_power_w");
    t.power_limit_w = attr_double("power.limit_w", 0);
    t.power_clock_fixed = attr_double("power.fixed_clock", 0) != 0;
    t.power_peak_w = attr_double("power.peak_w", 0);
    t.power_unthrottled_w = attr_double("power.unthrottled_w", 0);
    t.op_clock_mhz = m_op_clock_mhz, t.op_energy_scale = m_op_energy_scale;
    t.power_timeline = m_power_timeline;
    t.op_mappings = m_op_mappings;
    t.mapper = attr_string("mapper");
    t.counters = m_counters;
    t.events = m_emitted;
    t.components = m_components;
    t.ops = m_ops;
    t.stall_causes = m_stall_causes;
    t.sums = m_sums;
    return t;
}

std::string TraceReader::attr_string(const std::string& name) const {
    if (H5Aexists(m_h->file.get(), name.c_str()) <= 0) return "";
    h5::Handle a(H5Aopen(m_h->file.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
    h5::Handle type(H5Aget_type(a.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) return "";
    size_t size = H5Tget_size(type.get());
    std::string out(size, '\0');
    h5::Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), size);
    H5Aread(a.get(), mem.get(), out.data());
    while (!out.empty() && out.back() == '\0') out.pop_back();
    return out;
}

double TraceReader::attr_double(const std::string& name, double def) const {
    if (H5Aexists(m_h->file.get(), name.c_str()) <= 0) return def;
    h5::Handle a(H5Aopen(m_h->file.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
    h5::Handle type(H5Aget_type(a.get()), H5Tclose);
    const auto cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) return def;
    double v = def;
    H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v);
    return v;
}

void TraceReader::read_kernel_refs() {
    const std::vector<double> records = read_doubles(m_h->file.get(), "kernel_records", m_path);
    const std::vector<double> refs = read_doubles(m_h->file.get(), "kernel_refs", m_path);
    if (refs.empty()) return;
    for (size_t i = 0; i + 2 < records.size(); i += 3) {
        if (!(records[i] >= 0 && records[i + 1] >= 0 && records[i + 2] >= 0 && records[i] + records[i + 1] <= double(m_event_count)))
            throw UserError(m_path, "corrupt trace: /kernel_records row " + std::to_string(i / 3) + " lies outside /events");
        m_kernel_records.push_back({uint64_t(records[i]), uint64_t(records[i + 1]), uint64_t(records[i + 2])});
    }
    uint64_t last = 0;
    for (size_t i = 0; i + 3 < refs.size(); i += 4) {
        KernelRef r{uint64_t(refs[i]), uint32_t(refs[i + 1]), uint32_t(refs[i + 2]), uint64_t(refs[i + 3])};
        if (!(refs[i + 1] >= 0 && refs[i + 1] < double(m_kernel_records.size())) || r.position < last || r.position > m_event_count ||
            r.op >= m_ops.size() || m_kernel_records[r.kernel].offset + m_kernel_records[r.kernel].count > r.position)
            throw UserError(m_path, "corrupt trace: /kernel_refs row " + std::to_string(i / 4) +
                                        " names no recording or operator, or is out of order");
        last = r.position;
        m_kernel_refs.push_back(r);
    }
}

void TraceReader::read_events(hid_t dataset, uint64_t start, size_t n, TraceEvent* out) const {
    h5::Handle fspace(H5Dget_space(dataset), H5Sclose);
    hsize_t st[1] = {start}, cnt[1] = {n};
    H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, st, nullptr, cnt, nullptr);
    h5::Handle mspace(H5Screate_simple(1, cnt, nullptr), H5Sclose);
    if (H5Dread(dataset, m_h->mem_type.get(), mspace.get(), fspace.get(), H5P_DEFAULT, out) < 0)
        throw UserError(m_path, "reading events failed at record " + std::to_string(start) + " (corrupt trace?)");
}

void TraceReader::for_each_chunk(const std::function<void(const TraceEvent*, size_t)>& f, size_t chunk) const {
    if (!m_kernel_refs.empty()) {
        for_each_expanded_chunk(f, chunk);
        return;
    }
    std::vector<TraceEvent> buf(chunk);
    for (uint64_t start = 0; start < m_event_count; start += chunk) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, m_event_count - start));
        read_events(m_h->events.get(), start, n, buf.data());
        f(buf.data(), n);
    }
}

void TraceReader::for_each_expanded_chunk(const std::function<void(const TraceEvent*, size_t)>& f, size_t chunk) const {
    std::vector<TraceEvent> out, in(chunk), recorded;
    out.reserve(chunk);
    auto put = [&](const TraceEvent& e) {
        out.push_back(e);
        if (out.size() == chunk) f(out.data(), out.size()), out.clear();
    };
    size_t ri = 0;
    // every replay whose place is before stored event `pos`, expanded in emission order
    auto expand_before = [&](uint64_t pos) {
        for (; ri < m_kernel_refs.size() && m_kernel_refs[ri].position == pos; ++ri) {
            const KernelRef& r = m_kernel_refs[ri];
            const Recording& k = m_kernel_records[r.kernel];
            for (uint64_t done = 0; done < k.count; done += chunk) {
                const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, k.count - done));
                recorded.resize(n);
                read_events(m_h->events.get(), k.offset + done, n, recorded.data());
                for (TraceEvent e : recorded) {
                    e.op = r.op;
                    e.t_ps = e.t_ps - k.origin_ps + r.origin_ps;
                    put(e);
                }
            }
        }
    };
    for (uint64_t start = 0; start < m_event_count; start += chunk) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, m_event_count - start));
        read_events(m_h->events.get(), start, n, in.data());
        for (size_t i = 0; i < n; ++i) {
            expand_before(start + i);
            put(in[i]);
        }
    }
    expand_before(m_event_count);
    if (!out.empty()) f(out.data(), out.size());
}

}  // namespace archsim
