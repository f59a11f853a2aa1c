#include "arch/roofline/roofline_config.h"

#include "arch/common/runtime_key.h"
#include "arch/energy/process_node.h"
#include "arch/power/power_limit.h"
#include "sim/base/error.h"

namespace archsim {

const ParamBinder<RooflineConfig>& roofline_params() {
    static const ParamBinder<RooflineConfig> b = [] {
        ParamBinder<RooflineConfig> b;
        using C = RooflineConfig;
        b.string("name", [](C& c) -> std::string& { return c.name; }, "roofline", {}, "Free-text name shown in reports");
        declare_runtime_key(b, "none", "none: the bound of the graph as imported; each roofline config in configs/roofline/ names its detailed twin's runtime");
        above(b.real("clock_mhz", [](C& c) -> double& { return c.clock_mhz; }, 1000.0, "MHz",
                     "Clock that cycles in reports count (the rates below are per cycle of it)"), 0);
        b.string("precision", [](C& c) -> std::string& { return c.precision_name; }, "int8", precision_names(),
                 "Operand precision (sets operand bytes, the MAC rate and the MAC energy)");
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
        at_least(b.real("energy.static_w", [](C& c) -> double& { return c.static_w; }, 0.0, "W",
                        "Static power, charged over the whole run; 0 = not modeled"), 0);
        declare_checked_limit(b, &C::tdp_w, "The part's TDP or board power limit (A100 SXM4: 400 W).");
        return b;
    }();
    return b;
}

RooflineConfig make_roofline_config(const ParamSet& p) {
    RooflineConfig c = roofline_params().build(p);
    c.precision = parse_precision(c.precision_name, "precision");
    if (c.macs_per_cycle.at(c.precision) <= 0)
        throw UserError("compute.macs_per_cycle." + c.precision_name, "is 0: this device has no " + c.precision_name +
                                                                           " MAC rate (choose another precision)");
    check_limit_above_static("power.tdp_w", c.tdp_w, c.static_w);
    return c;
}

}  // namespace archsim
