#include "traces/trace_writer.h"

#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <stdexcept>

#include "sim/base/atomic_file.h"
#include "sim/base/error.h"
#include "traces/hdf5_types.h"

namespace archsim {

/// The buffers one /events chunk is encoded in: its events, their shuffled bytes and the
/// compressed chunk. Recycled from chunk to chunk, so that a long trace does not fault in fresh
/// pages for every chunk.
struct ChunkBuffers {
    std::vector<TraceEvent> events;
    std::vector<uint8_t> shuffled, stored;
};

/// A chunk of /events being encoded on another thread: its first row, then its buffers (`stored`
/// holds its bytes as stored).
struct PendingChunk {
    uint64_t first_row = 0;
    std::future<ChunkBuffers> encoded;
};

struct TraceFile {
    h5::Handle file;
    h5::Handle events;
    h5::Handle mem_type;
    hsize_t chunk_rows = 0;             ///< rows per /events chunk (set when it is created)
    std::deque<PendingChunk> pending;   ///< chunks encoding, oldest first
    std::vector<ChunkBuffers> spare;    ///< buffers of chunks written, for the next ones
};

/// Bytes of one /events row as stored: the compound packed (H5Tpack of the native type), which is
/// TraceEvent's fields at their own offsets without the trailing padding.
constexpr size_t kRowBytes = offsetof(TraceEvent, detail) + sizeof(uint8_t);
static_assert(offsetof(TraceEvent, dur_ps) == 8 && offsetof(TraceEvent, cycles) == 32 && offsetof(TraceEvent, op) == 40 &&
                  offsetof(TraceEvent, seq) == 44 && offsetof(TraceEvent, component) == 48 && offsetof(TraceEvent, kind) == 50 &&
                  kRowBytes == 52,
              "TraceEvent's layout is the packed /events row (traces/hdf5_types.cpp)");

#ifdef __SSE2__
/// Transposes 16 rows of 16 bytes in place: afterwards r[j] holds byte j of every row, row i's
/// at lane i (four rounds of interleaving bytes, words, double words and quad words).
static void transpose_16x16(__m128i r[16]) {
    __m128i t[16];
    for (int i = 0; i < 8; ++i) t[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]), t[i + 8] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const __m128i a = t[8 * h + 2 * i], c = t[8 * h + 2 * i + 1];
            r[8 * h + i] = _mm_unpacklo_epi16(a, c), r[8 * h + i + 4] = _mm_unpackhi_epi16(a, c);
        }
    for (int q = 0; q < 4; ++q)
        for (int i = 0; i < 2; ++i) {
            const __m128i a = r[4 * q + 2 * i], c = r[4 * q + 2 * i + 1];
            t[4 * q + i] = _mm_unpacklo_epi32(a, c), t[4 * q + i + 2] = _mm_unpackhi_epi32(a, c);
        }
    for (int o = 0; o < 8; ++o) {
        const __m128i a = t[2 * o], c = t[2 * o + 1];
        r[2 * o] = _mm_unpacklo_epi64(a, c), r[2 * o + 1] = _mm_unpackhi_epi64(a, c);
    }
}
#endif

/// One /events chunk as HDF5's filter pipeline stores it (the dataset's shuffle then deflate at
/// level 1, create_events()): `b.events` packed into `rows` rows (zero rows pad a last, partial
/// chunk), byte-shuffled into `b.shuffled` (byte j of every row together, H5Z's shuffle filter)
/// and compressed into `b.stored` with zlib's compress2 (H5Z's deflate filter). Pure: runs on a
/// worker thread while the simulation goes on. Throws std::runtime_error if zlib fails.
static void encode_chunk(ChunkBuffers& b, size_t rows) {
    // one pass over the events, 16 rows at a time: their bytes transposed in registers (16 x 16
    // byte blocks), then each plane's 16 bytes stored at once (byte j of row i goes to
    // j x rows + i); the padding rows are zero
    const std::vector<TraceEvent>& events = b.events;
    b.shuffled.assign(rows * kRowBytes, 0);
    uint8_t* planes = b.shuffled.data();
    size_t i0 = 0;
#ifdef __SSE2__
    for (; i0 + 16 <= events.size(); i0 += 16)
        for (size_t j0 = 0; j0 < kRowBytes; j0 += 16) {
            __m128i r[16];
            for (int i = 0; i < 16; ++i) {
                const uint8_t* row = reinterpret_cast<const uint8_t*>(&events[i0 + i]) + j0;
                if (j0 + 16 <= kRowBytes) {
                    r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
                } else {  // the row's last bytes only: never past the row
                    alignas(16) uint8_t tail[16] = {};
                    std::memcpy(tail, row, kRowBytes - j0);
                    r[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
                }
            }
            transpose_16x16(r);  // r[j]: byte j0 + j of the 16 rows
            for (size_t j = 0; j < 16 && j0 + j < kRowBytes; ++j)
                _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + (j0 + j) * rows + i0), r[j]);
        }
#endif
    for (; i0 < events.size(); ++i0) {
        const uint8_t* row = reinterpret_cast<const uint8_t*>(&events[i0]);
        for (size_t j = 0; j < kRowBytes; ++j) planes[j * rows + i0] = row[j];
    }
    uLongf len = compressBound(static_cast<uLong>(b.shuffled.size()));
    b.stored.resize(len);
    if (compress2(b.stored.data(), &len, b.shuffled.data(), static_cast<uLong>(b.shuffled.size()), 1) != Z_OK)
        throw std::runtime_error("compressing a trace chunk failed");
    b.stored.resize(len);
}

const char* to_string(EventKind k) {
    switch (k) {
        case EventKind::Op: return "op";
        case EventKind::Fold: return "fold";
        case EventKind::Vector: return "vector";
        case EventKind::DramRead: return "dram_read";
        case EventKind::DramWrite: return "dram_write";
        case EventKind::SramRead: return "sram_read";
        case EventKind::SramWrite: return "sram_write";
        case EventKind::Stall: return "stall";
        case EventKind::Transfer: return "transfer";
    }
    return "?";
}

TraceWriter::TraceWriter(const std::string& path, TraceDetail detail)
    : m_path(path), m_tmp_path(temp_path_for(path)), m_file(std::make_unique<TraceFile>()), m_detail(detail) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become UserError, not stderr noise
    m_file->file = h5::Handle(H5Fcreate(m_tmp_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!m_file->file.valid()) throw UserError(m_tmp_path, "cannot create the trace file (is the directory writable?)");
    m_file->mem_type = h5::Handle(h5::event_mem_type(), H5Tclose);
    if (detail == TraceDetail::Full) m_buffer.reserve(kChunkEvents);
}

/// The events dataset, created at the first flush with chunks of `chunk_events` records: a whole
/// buffer's worth for a run that fills one, else exactly the run's events, so that a small run
/// neither allocates nor compresses a mostly empty 64 Ki-event chunk.
static h5::Handle create_events(hid_t file, hsize_t chunk_events, const std::string& tmp_path) {
    h5::Handle file_type(h5::event_file_type(), H5Tclose);
    hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {chunk_events > 0 ? chunk_events : 1};
    h5::Handle space(H5Screate_simple(1, dims, maxdims), H5Sclose);
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_chunk(dcpl.get(), 1, chunk);
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), 1);
    h5::Handle events(H5Dcreate2(file, "events", file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
    if (!events.valid()) throw UserError(tmp_path, "cannot create the events dataset");
    return events;
}

TraceWriter::~TraceWriter() {
    if (!m_finished) {
        // Interrupted (an exception unwound past us): close and delete the partial file.
        m_file.reset();
        std::remove(m_tmp_path.c_str());
    }
}

uint16_t TraceWriter::add_component(const ComponentInfo& c) {
    m_components.push_back(c);
    m_offchip.push_back(off_chip(c) ? 1 : 0);
    return static_cast<uint16_t>(m_components.size() - 1);
}

void TraceWriter::set_ops(std::vector<OpInfo> ops) { m_ops = std::move(ops); }

static void write_string_attr(hid_t obj, const std::string& name, const std::string& value) {
    h5::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), value.empty() ? 1 : value.size());
    h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
    h5::Handle a(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    H5Awrite(a.get(), type.get(), value.empty() ? "" : value.c_str());
}

template <class T>
static void write_num_attr(hid_t obj, const std::string& name, hid_t type, T value) {
    h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
    h5::Handle a(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    H5Awrite(a.get(), type, &value);
}

void TraceWriter::set_attr(const std::string& name, const std::string& value) {
    write_string_attr(m_file->file.get(), name, value);
    m_str_attrs[name] = value;
}
void TraceWriter::set_attr(const std::string& name, double value) {
    write_num_attr(m_file->file.get(), name, H5T_NATIVE_DOUBLE, value);
    m_num_attrs[name] = value;
}

void TraceWriter::begin_capture() {
    m_capturing = true;
    m_capture_start = m_written + m_buffer.size();
    m_capture.clear();
    m_capture_sums = EventSummer();
}

void TraceWriter::end_capture(uint64_t origin_ps, std::vector<TraceEvent>& events, std::vector<EventSum>& sums, double& dynamic_pj,
                              double& offchip_pj) {
    m_capturing = false;
    dynamic_pj = 0, offchip_pj = 0;
    for (auto& e : m_capture) e.t_ps -= origin_ps;
    events = std::move(m_capture);
    m_capture.clear();
    // where the recording lies in /events, found again by its events' address when it is replayed
    if (m_detail == TraceDetail::Full && !events.empty()) m_captured[events.data()] = {m_capture_start, events.size(), origin_ps, -1};
    sums = m_capture_sums.rows();
    for (auto& r : sums) {
        r.first_ps -= origin_ps, r.end_ps -= origin_ps;
        const double pj = event_sum_energy_pj(r, m_components[r.component]);
        dynamic_pj += pj;
        if (m_offchip[r.component]) offchip_pj += pj;
    }
}

void TraceWriter::replay(const std::vector<TraceEvent>& events, const std::vector<EventSum>& sums, double dynamic_pj,
                         double offchip_pj, uint32_t op, uint64_t origin_ps) {
    auto captured = m_captured.find(events.data());
    const bool by_reference = m_detail == TraceDetail::Full && m_by_reference && !m_capturing && !events.empty() &&
                              captured != m_captured.end() && captured->second.count == events.size();
    if (m_detail == TraceDetail::Full && !by_reference) {
        for (TraceEvent e : events) {
            e.op = op;
            e.t_ps += origin_ps;
            record(e);
        }
    } else {
        if (by_reference) {  // the recording's events are in /events where it ran: a reference to them (KernelRef)
            if (captured->second.id < 0) {
                captured->second.id = static_cast<int64_t>(m_kernel_records.size());
                m_kernel_records.push_back(captured->second);
            }
            m_kernel_refs.push_back({m_written + m_buffer.size(), uint32_t(captured->second.id), op, origin_ps});
        }
        for (const EventSum& r : sums) {
            m_sums.add(r, op, static_cast<int64_t>(origin_ps));
            m_emitted += r.count;
        }
    }
    m_dynamic_pj += dynamic_pj;
    m_offchip_pj += offchip_pj;
}

void TraceWriter::set_op_power(uint32_t op, double clock_mhz, double energy_scale) {
    if (m_op_clock_mhz.size() < m_ops.size()) {
        const double nominal_mhz = m_num_attrs.count("clock_hz") ? m_num_attrs.at("clock_hz") * 1e-6 : 0.0;
        m_op_clock_mhz.resize(m_ops.size(), nominal_mhz);
        m_op_energy_scale.resize(m_ops.size(), 1.0);
    }
    if (op >= m_op_clock_mhz.size()) return;
    m_op_clock_mhz[op] = clock_mhz;
    m_op_energy_scale[op] = energy_scale;
}

void TraceWriter::set_op_mapping(OpMapping m) {
    if (m.choice.find('\n') != std::string::npos) throw std::invalid_argument("mapping choice '" + m.choice + "' has a newline");
    auto [at, fresh] = m_op_mapping_at.try_emplace(m.op, m_op_mappings.size());
    if (fresh) m_op_mappings.push_back(std::move(m));
    else m_op_mappings[at->second] = std::move(m);
}

void TraceWriter::set_counters(CounterSeries counters) {
    for (const std::string& n : counters.names)
        if (n.find(',') != std::string::npos) throw std::invalid_argument("counter name '" + n + "' has a comma");
    for (const auto& c : counters.samples)
        if (c.counter >= counters.names.size()) throw std::invalid_argument("counter sample of an unnamed counter");
    m_counters = std::move(counters);
}

TraceTables TraceWriter::tables() const {
    TraceTables t;
    auto str = [&](const char* k) { auto it = m_str_attrs.find(k); return it == m_str_attrs.end() ? std::string() : it->second; };
    auto num = [&](const char* k) { auto it = m_num_attrs.find(k); return it == m_num_attrs.end() ? 0.0 : it->second; };
    t.model = str("model"), t.machine = str("machine"), t.precision = str("precision"), t.runtime = str("runtime");
    t.approximations = str("approximations");
    t.precision_from = str("precision_from"), t.runtime_from = str("runtime_from");
    t.not_modeled = str("not_modeled");
    t.clock_hz = num("clock_hz"), t.static_power_w = num("static_power_w");
    t.power_limit_w = num("power.limit_w"), t.power_peak_w = num("power.peak_w"), t.power_unthrottled_w = num("power.unthrottled_w");
    t.power_clock_fixed = num("power.fixed_clock") != 0;
    t.op_clock_mhz = m_op_clock_mhz, t.op_energy_scale = m_op_energy_scale;
    t.power_timeline = m_power_timeline;
    t.op_mappings = m_op_mappings;
    t.mapper = str("mapper");
    t.counters = m_counters;
    t.events = m_emitted;
    t.components = m_components;
    t.ops = m_ops;
    t.stall_causes = m_stall_causes;
    t.sums = m_sums.rows();
    return t;
}
void TraceWriter::set_attr(const std::string& name, int64_t value) {
    write_num_attr(m_file->file.get(), name, H5T_NATIVE_INT64, value);
}

StallCauseId TraceWriter::add_stall_cause(const StallCauseInfo& c) {
    for (size_t i = 0; i < m_stall_causes.size(); ++i)
        if (m_stall_causes[i].name == c.name) return static_cast<StallCauseId>(i);
    if (m_stall_causes.size() > 255) throw std::logic_error("more than 255 stall causes");
    m_stall_causes.push_back(c);
    return static_cast<StallCauseId>(m_stall_causes.size() - 1);
}

void TraceWriter::flush() {
    if (!m_file->events.valid()) {
        m_file->chunk_rows = std::max<hsize_t>(1, m_buffer.size());
        m_file->events = create_events(m_file->file.get(), m_file->chunk_rows, m_tmp_path);
    }
    if (m_buffer.empty()) return;
    const hsize_t n = m_buffer.size();
    hsize_t new_size[1] = {m_written + n};
    if (H5Dset_extent(m_file->events.get(), new_size) < 0) throw UserError(m_tmp_path, "cannot extend events");
    // encoded on another thread while the run goes on; written here, in order, at most two behind
    ChunkBuffers chunk;
    if (!m_file->spare.empty()) {
        chunk = std::move(m_file->spare.back());
        m_file->spare.pop_back();
    }
    chunk.events.swap(m_buffer);
    m_buffer.clear();
    m_buffer.reserve(kChunkEvents);
    const size_t rows = m_file->chunk_rows;
    m_file->pending.push_back({m_written, std::async(std::launch::async, [rows, c = std::move(chunk)]() mutable {
                                   encode_chunk(c, rows);
                                   return std::move(c);
                               })});
    m_written += n;
    while (m_file->pending.size() > 2) write_pending();
}

void TraceWriter::write_pending() {
    PendingChunk& p = m_file->pending.front();
    ChunkBuffers b;
    try {
        b = p.encoded.get();
    } catch (const std::exception& e) {
        throw UserError(m_tmp_path, std::string("writing events failed: ") + e.what());
    }
    const hsize_t offset[1] = {p.first_row};
    if (H5Dwrite_chunk(m_file->events.get(), H5P_DEFAULT, 0, offset, b.stored.size(), b.stored.data()) < 0)
        throw UserError(m_tmp_path, "writing events failed (disk full?)");
    m_file->pending.pop_front();
    b.events.clear();
    m_file->spare.push_back(std::move(b));
}

/// A 1-D dataset of doubles (or an n x `cols` one); nothing when `v` is empty.
static void write_doubles(hid_t f, const char* name, const std::vector<double>& v, hsize_t cols, const std::string& path) {
    if (v.empty()) return;
    hsize_t dims[2] = {v.size() / cols, cols};
    h5::Handle space(H5Screate_simple(cols == 1 ? 1 : 2, dims, nullptr), H5Sclose);
    h5::Handle d(H5Dcreate2(f, name, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!d.valid() || H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
        throw UserError(path, std::string("writing ") + name + " failed (disk full?)");
}

void TraceWriter::finish(bool complete) {
    if (m_finished) return;
    flush();
    while (!m_file->pending.empty()) write_pending();
    hid_t f = m_file->file.get();
    {
        std::vector<h5::ComponentRecord> recs(m_components.size());
        for (size_t i = 0; i < m_components.size(); ++i) {
            const auto& c = m_components[i];
            std::memset(&recs[i], 0, sizeof(recs[i]));
            std::strncpy(recs[i].name, c.name.c_str(), sizeof(recs[i].name) - 1);
            std::strncpy(recs[i].level, c.level.c_str(), sizeof(recs[i].level) - 1);
            recs[i].pj_per_op = c.pj_per_op;
            recs[i].pj_per_byte_read = c.pj_per_byte_read;
            recs[i].pj_per_byte_write = c.pj_per_byte_write;
            recs[i].peak_ops_per_cycle = c.peak_ops_per_cycle;
            recs[i].clock_hz = c.clock_hz;
        }
        hsize_t dims[1] = {recs.size()};
        h5::Handle type(h5::component_type(), H5Tclose);
        h5::Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
        h5::Handle d(H5Dcreate2(f, "components", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
        if (!recs.empty()) H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, recs.data());
    }
    {
        std::vector<h5::OpRecord> recs(m_ops.size());
        for (size_t i = 0; i < m_ops.size(); ++i) {
            auto& o = m_ops[i];
            recs[i] = {o.name.data(),   o.op_type.data(), o.op_class.data(), o.macs, o.flops, o.inputs.data(),
                       o.outputs.data(), o.members.data()};
        }
        hsize_t dims[1] = {recs.size()};
        h5::Handle type(h5::op_type_h5(), H5Tclose);
        h5::Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
        h5::Handle d(H5Dcreate2(f, "ops", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
        if (!recs.empty()) H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, recs.data());
    }
    {
        const auto& rows = m_sums.rows();
        hsize_t dims[1] = {rows.size()};
        h5::Handle mem(h5::event_sum_mem_type(), H5Tclose), type(H5Tcopy(mem.get()), H5Tclose);
        H5Tpack(type.get());
        h5::Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
        h5::Handle d(H5Dcreate2(f, "event_sums", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
        if (!d.valid() || (!rows.empty() && H5Dwrite(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) < 0))
            throw UserError(m_tmp_path, "writing the event sums failed (disk full?)");
    }
    {
        std::vector<h5::StallCauseRecord> recs(m_stall_causes.size());
        for (size_t i = 0; i < m_stall_causes.size(); ++i) recs[i] = {m_stall_causes[i].name.data(), m_stall_causes[i].doc.data()};
        hsize_t dims[1] = {recs.size()};
        h5::Handle type(h5::stall_cause_type(), H5Tclose);
        h5::Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
        h5::Handle d(H5Dcreate2(f, "stall_causes", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
        if (!recs.empty()) H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, recs.data());
    }
    write_doubles(f, "op_clock_mhz", m_op_clock_mhz, 1, m_tmp_path);
    write_doubles(f, "op_energy_scale", m_op_energy_scale, 1, m_tmp_path);
    {
        std::vector<double> rows;
        for (const auto& w : m_power_timeline) rows.insert(rows.end(), {w.t_ps, w.dur_ps, w.power_w, w.clock_mhz});
        write_doubles(f, "power_timeline", rows, 4, m_tmp_path);
    }
    if (!m_kernel_refs.empty()) {
        std::vector<double> records, refs;
        for (const Recording& k : m_kernel_records) records.insert(records.end(), {double(k.offset), double(k.count), double(k.origin_ps)});
        for (const KernelRef& r : m_kernel_refs) refs.insert(refs.end(), {double(r.position), double(r.kernel), double(r.op), double(r.origin_ps)});
        write_doubles(f, "kernel_records", records, 3, m_tmp_path);
        write_doubles(f, "kernel_refs", refs, 4, m_tmp_path);
    }
    if (!m_op_mappings.empty()) {
        std::vector<double> rows;
        std::string choices;
        for (const OpMapping& m : m_op_mappings) {
            rows.insert(rows.end(), {double(m.op), double(m.mapspace), double(m.evaluated)});
            choices += (choices.empty() ? "" : "\n") + m.choice;
        }
        write_doubles(f, "op_mappings", rows, 3, m_tmp_path);
        write_string_attr(f, "op_mapping_choices", choices);
    }
    if (!m_counters.names.empty()) {
        std::vector<double> rows;
        rows.reserve(m_counters.samples.size() * 3);
        for (const auto& c : m_counters.samples) rows.insert(rows.end(), {c.t_ps, double(c.counter), c.value});
        write_doubles(f, "counters", rows, 3, m_tmp_path);
        std::string names;
        for (const std::string& n : m_counters.names) names += (names.empty() ? "" : ",") + n;
        write_string_attr(f, "counter_names", names);
    }
    write_num_attr(f, "schema_version", H5T_NATIVE_INT64, static_cast<int64_t>(kTraceSchemaVersion));
    write_num_attr(f, "event_count", H5T_NATIVE_INT64, static_cast<int64_t>(m_written));
    write_num_attr(f, "events_emitted", H5T_NATIVE_INT64, static_cast<int64_t>(m_emitted));
    write_string_attr(f, "detail", to_string(m_detail));
    write_num_attr(f, "complete", H5T_NATIVE_INT64, static_cast<int64_t>(complete ? 1 : 0));
    m_file->events.reset();
    m_file->mem_type.reset();
    if (H5Fclose(m_file->file.release()) < 0) throw UserError(m_tmp_path, "closing the trace failed");
    rename_into_place(m_tmp_path, m_path);
    m_finished = true;
}

}  // namespace archsim
