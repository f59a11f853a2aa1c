#pragma once
// The `dram.*` keys every machine with a DRAM interface declares, in one place.
#include <functional>
#include <string>

#include "arch/memory/dram_config.h"
#include "sim/base/params.h"

namespace archsim {

/// Declares dram.bandwidth_gbps, dram.latency_ns, dram.channels, dram.transaction_bytes,
/// dram.ideal, dram.per_burst, dram.capacity_gib and dram.pj_per_byte on `b`, bound to the DramConfig that `dram` selects in T.
/// `defaults` gives the default values and `source` the document they come from.
template <class T>
void declare_dram_params(ParamBinder<T>& b, std::function<DramConfig&(T&)> dram, const DramConfig& defaults,
                         const std::string& source) {
    above(b.real("dram.bandwidth_gbps", [dram](T& c) -> double& { return dram(c).bandwidth_gbps; },
                 defaults.bandwidth_gbps, "GB/s", "Peak DRAM bandwidth over all channels (default: " + source + ")"),
          0);
    at_least(b.real("dram.latency_ns", [dram](T& c) -> double& { return dram(c).latency_ns; }, defaults.latency_ns, "ns",
                    "Latency added to every DRAM transaction"),
             0);
    at_most(at_least(b.integer("dram.channels", [dram](T& c) -> int64_t& { return dram(c).channels; }, defaults.channels,
                               "channels", "Independent DRAM channels, interleaved per transaction"),
                     1),
            1024);
    at_most(at_least(b.integer("dram.transaction_bytes", [dram](T& c) -> int64_t& { return dram(c).transaction_bytes; },
                               defaults.transaction_bytes, "bytes",
                               "Bytes per DRAM TLM transaction, one burst (one trace event each)"),
                     1),
            1 << 30);
    b.boolean("dram.ideal", [dram](T& c) -> bool& { return dram(c).ideal; }, defaults.ideal,
              "Ideal memory: no latency, no bandwidth limit, no stalls (SCALE-Sim InterfaceBandwidth = CALC)");
    b.boolean("dram.per_burst", [dram](T& c) -> bool& { return dram(c).per_burst; }, defaults.per_burst,
              "DMA transfers as one TLM transaction and trace event per burst (the reference model); false: each "
              "transfer is one burst run timed in closed form, one event per channel, times within 1 ps of the reference");
    at_least(b.real("dram.capacity_gib", [dram](T& c) -> double& { return dram(c).capacity_gib; }, defaults.capacity_gib,
                    "GiB", "Memory size: a training step whose peak footprint exceeds it is flagged (0 = not checked)"),
             0);
    at_least(b.real("dram.pj_per_byte", [dram](T& c) -> double& { return dram(c).pj_per_byte; }, defaults.pj_per_byte,
                    "pJ/byte", "DRAM access energy, read or write (default: " + source + ")"),
             0);
}

}  // namespace archsim
