#include "arch/roofline/roofline_config.h"

#include "arch/energy/process_node.h"
#include "arch/power/power_limit.h"
#include "sim/base/error.h"

namespace archsim {

const ParamBinder<RooflineConfig>& roofline_params() {
    static const ParamBinder<RooflineConfig> b = [] {
        ParamBinder<RooflineConfig> b;
        using C = RooflineConfig;
        declare_machine_basics(b, {"roofline", "none",
                                   "none: the bound of the graph as imported; each roofline config in configs/roofline/ names its detailed twin's runtime",
                                   "int8", "Operand precision (sets operand bytes, the MAC rate and the MAC energy)"});
        declare_clock_mhz(b, &C::clock_mhz, 1000.0, "Clock that cycles in reports count (the rates below are per cycle of it)");
        // defaults: the tpu kind's default array (128 x 128 MACs at every precision, 1 GHz)
        declare_per_precision<C>(b, "compute.macs_per_cycle", [](C& c) -> PerPrecision& { return c.macs_per_cycle; },
                                 {16384, 16384, 16384, 16384, 16384}, "MACs/cycle",
                                 "Device-wide peak multiply-accumulates per cycle; 0 = the device cannot run this precision");
        declare_process_node<C>(b, [](C& c) -> ProcessNode& { return c.node; }, {}, "Horowitz's own 45 nm / 0.9 V");
        declare_per_precision<C>(b, "energy.pj_per_mac", [](C& c) -> PerPrecision& { return c.pj_per_mac; }, {}, "pJ/MAC",
                                 "Energy per MAC");
        derive_mac_energies_at_node(b, "energy.pj_per_mac");
        above(b.real("vector.ops_per_cycle", [](C& c) -> double& { return c.vector_ops_per_cycle; }, 128.0, "ops/cycle",
                     "Device-wide peak of the other arithmetic (elementwise, reductions, pooling)"), 0);
        horowitz_at_node(at_least(b.real("energy.pj_per_vector_op", [](C& c) -> double& { return c.vector_pj_per_op; }, 0, "pJ/op",
                                         "Energy of one vector operation"),
                                  0),
                         [](const ParamSet&) { return horowitz::kFp32AddPj; }, "fp32 add 0.9 pJ");
        declare_memory_level<C>(b, "dram", [](C& c) -> MemoryLevel& { return c.dram; }, {34.0, horowitz::kDramPjPerByte},
                                "off-chip DRAM", "TPU v1's DDR3 34 GB/s, Jouppi et al. ISCA 2017; Horowitz 2014 energy", false);
        declare_memory_level<C>(b, "sram", [](C& c) -> MemoryLevel& { return c.sram; }, {0.0, 0.0},
                                "the on-chip level every operand passes once (global buffer, L2 or LLC)", "not modeled", true);
        declare_static_power(b, 0.0, "Static power, charged over the whole run; 0 = not modeled");
        declare_checked_limit(b, &C::tdp_w, "The part's TDP or board power limit (A100 SXM4: 400 W).");
        return b;
    }();
    return b;
}

RooflineConfig make_roofline_config(const ParamSet& p) {
    RooflineConfig c = roofline_params().build(p);
    check_machine_basics(c, [&](Precision p) { return c.macs_per_cycle.at(p); }, "compute.macs_per_cycle", "device");
    return c;
}

}  // namespace archsim
