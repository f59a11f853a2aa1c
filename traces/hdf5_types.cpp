#include "traces/hdf5_types.h"

#include <cstddef>

namespace archsim::h5 {

hid_t event_mem_type() {
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(TraceEvent));
    H5Tinsert(t, "t_ps", offsetof(TraceEvent, t_ps), H5T_NATIVE_UINT64);
    H5Tinsert(t, "dur_ps", offsetof(TraceEvent, dur_ps), H5T_NATIVE_UINT64);
    H5Tinsert(t, "bytes", offsetof(TraceEvent, bytes), H5T_NATIVE_UINT64);
    H5Tinsert(t, "ops", offsetof(TraceEvent, ops), H5T_NATIVE_UINT64);
    H5Tinsert(t, "cycles", offsetof(TraceEvent, cycles), H5T_NATIVE_UINT64);
    H5Tinsert(t, "op", offsetof(TraceEvent, op), H5T_NATIVE_UINT32);
    H5Tinsert(t, "seq", offsetof(TraceEvent, seq), H5T_NATIVE_UINT32);
    H5Tinsert(t, "component", offsetof(TraceEvent, component), H5T_NATIVE_UINT16);
    H5Tinsert(t, "kind", offsetof(TraceEvent, kind), H5T_NATIVE_UINT8);
    H5Tinsert(t, "detail", offsetof(TraceEvent, detail), H5T_NATIVE_UINT8);
    return t;
}

hid_t event_file_type() {
    hid_t m = event_mem_type();
    hid_t t = H5Tcopy(m);
    H5Tclose(m);
    H5Tpack(t);
    return t;
}

hid_t event_sum_mem_type() {
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(EventSum));
    H5Tinsert(t, "op", offsetof(EventSum, op), H5T_NATIVE_UINT32);
    H5Tinsert(t, "component", offsetof(EventSum, component), H5T_NATIVE_UINT16);
    H5Tinsert(t, "kind", offsetof(EventSum, kind), H5T_NATIVE_UINT8);
    H5Tinsert(t, "detail", offsetof(EventSum, detail), H5T_NATIVE_UINT8);
    H5Tinsert(t, "count", offsetof(EventSum, count), H5T_NATIVE_UINT64);
    H5Tinsert(t, "bytes", offsetof(EventSum, bytes), H5T_NATIVE_UINT64);
    H5Tinsert(t, "ops", offsetof(EventSum, ops), H5T_NATIVE_UINT64);
    H5Tinsert(t, "cycles", offsetof(EventSum, cycles), H5T_NATIVE_UINT64);
    H5Tinsert(t, "dur_sum_ps", offsetof(EventSum, dur_sum_ps), H5T_NATIVE_UINT64);
    H5Tinsert(t, "first_ps", offsetof(EventSum, first_ps), H5T_NATIVE_UINT64);
    H5Tinsert(t, "end_ps", offsetof(EventSum, end_ps), H5T_NATIVE_UINT64);
    return t;
}

hid_t component_type() {
    hid_t s48 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s48, 48);
    hid_t s32 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s32, 32);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ComponentRecord));
    H5Tinsert(t, "name", offsetof(ComponentRecord, name), s48);
    H5Tinsert(t, "level", offsetof(ComponentRecord, level), s32);
    H5Tinsert(t, "pj_per_op", offsetof(ComponentRecord, pj_per_op), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "pj_per_byte_read", offsetof(ComponentRecord, pj_per_byte_read), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "pj_per_byte_write", offsetof(ComponentRecord, pj_per_byte_write), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "peak_ops_per_cycle", offsetof(ComponentRecord, peak_ops_per_cycle), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "clock_hz", offsetof(ComponentRecord, clock_hz), H5T_NATIVE_DOUBLE);
    H5Tclose(s48);
    H5Tclose(s32);
    return t;
}

hid_t stall_cause_type() {
    hid_t vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(StallCauseRecord));
    H5Tinsert(t, "name", offsetof(StallCauseRecord, name), vs);
    H5Tinsert(t, "doc", offsetof(StallCauseRecord, doc), vs);
    H5Tclose(vs);
    return t;
}

hid_t op_type_h5() {
    hid_t vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(OpRecord));
    H5Tinsert(t, "name", offsetof(OpRecord, name), vs);
    H5Tinsert(t, "op_type", offsetof(OpRecord, op_type), vs);
    H5Tinsert(t, "op_class", offsetof(OpRecord, op_class), vs);
    H5Tinsert(t, "macs", offsetof(OpRecord, macs), H5T_NATIVE_INT64);
    H5Tinsert(t, "flops", offsetof(OpRecord, flops), H5T_NATIVE_INT64);
    H5Tinsert(t, "inputs", offsetof(OpRecord, inputs), vs);
    H5Tinsert(t, "outputs", offsetof(OpRecord, outputs), vs);
    H5Tinsert(t, "members", offsetof(OpRecord, members), vs);
    H5Tclose(vs);
    return t;
}

}  // namespace archsim::h5
