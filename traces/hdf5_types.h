#pragma once
// HDF5 compound types of the trace schema, shared by the writer and the reader (internal).
#include <hdf5.h>

#include <string>

#include "traces/event_sums.h"
#include "traces/trace_event.h"

namespace archsim::h5 {

/// RAII for an hid_t with its close function.
class Handle {
public:
    Handle() = default;
    Handle(hid_t id, herr_t (*close)(hid_t)) : m_id(id), m_close(close) {}
    ~Handle() { reset(); }
    Handle(Handle&& o) noexcept : m_id(o.m_id), m_close(o.m_close) { o.m_id = -1; }
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) { reset(); m_id = o.m_id; m_close = o.m_close; o.m_id = -1; }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    void reset() {
        if (m_id >= 0 && m_close) m_close(m_id);
        m_id = -1;
    }
    hid_t get() const { return m_id; }
    /// Gives up ownership (the caller closes it).
    hid_t release() { hid_t i = m_id; m_id = -1; return i; }
    bool valid() const { return m_id >= 0; }

private:
    hid_t m_id = -1;
    herr_t (*m_close)(hid_t) = nullptr;
};

/// In-memory compound type of TraceEvent (native layout).
hid_t event_mem_type();
/// The packed file type of TraceEvent (no padding).
hid_t event_file_type();

/// In-memory compound type of EventSum (native layout; the file type is its packed copy).
hid_t event_sum_mem_type();

/// Flat record for the /components table.
struct ComponentRecord {
    char name[48];
    char level[32];
    double pj_per_op, pj_per_byte_read, pj_per_byte_write, peak_ops_per_cycle, clock_hz;
};
hid_t component_type();

/// Flat record for the /ops table (variable-length strings for shapes).
struct OpRecord {
    char* name;
    char* op_type;
    char* op_class;
    int64_t macs;
    int64_t flops;
    char* inputs;
    char* outputs;
    char* members;
};
hid_t op_type_h5();

/// Record of the /stall_causes table (variable-length strings).
struct StallCauseRecord {
    char* name;
    char* doc;
};
hid_t stall_cause_type();

}  // namespace archsim::h5
