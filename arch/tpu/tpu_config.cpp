#include "arch/tpu/tpu_config.h"

#include "arch/energy/process_node.h"
#include "arch/memory/dram_params.h"
#include "arch/power/power_limit.h"
#include "sim/base/per_precision.h"

namespace archsim {

double TpuConfig::mac_pj_now() const { return mac_pj.at(precision); }

const ParamBinder<TpuConfig>& tpu_params() {
    static const ParamBinder<TpuConfig> b = [] {
        ParamBinder<TpuConfig> b;
        using C = TpuConfig;
        declare_machine_basics(b, {"tpu", "xla", "xla: the TPU compiler (output, loop and input fusion; transposes folded into dot layouts)",
                                   "int8", "Operand precision (sets operand bytes and MAC energy; accumulators are 32-bit)"});
        declare_clock_mhz(b, &C::clock_mhz, 1000.0, "Clock of the array, vector unit and buffers");
        at_most(at_least(b.integer("array.rows", [](C& c) -> int64_t& { return c.rows; }, 128, "PEs",
                                   "Rows R of the systolic array"), 1), 65536);
        at_most(at_least(b.integer("array.cols", [](C& c) -> int64_t& { return c.cols; }, 128, "PEs",
                                   "Columns C of the systolic array"), 1), 65536);
        b.string("dataflow", [](C& c) -> std::string& { return c.dataflow_name; }, "ws", {"ws", "os", "is", "search"},
                 "Stationary operand: weight (ws), output (os) or input (is), as in SCALE-Sim v2; search: each "
                 "contraction's chosen by the mapping search (arch/tpu/tpu_mapping.h; ws under run --mapper fixed), which "
                 "run --mapper search also applies to a config naming one");
        at_least(b.integer("sram.ifmap_kib", [](C& c) -> int64_t& { return c.ifmap_kib; }, 6144, "KiB",
                           "Ifmap buffer, double-buffered (half fills while half feeds); default: SCALE-Sim google.cfg"), 1);
        at_least(b.integer("sram.filter_kib", [](C& c) -> int64_t& { return c.filter_kib; }, 6144, "KiB",
                           "Filter buffer, double-buffered; default: SCALE-Sim google.cfg"), 1);
        at_least(b.integer("sram.ofmap_kib", [](C& c) -> int64_t& { return c.ofmap_kib; }, 2048, "KiB",
                           "Ofmap / partial-sum buffer, double-buffered; default: SCALE-Sim google.cfg"), 1);
        DramConfig dram;  // TPU v1's DDR3 (Jouppi et al. ISCA 2017), Horowitz's DRAM energy
        dram.bandwidth_gbps = 34.0;
        dram.latency_ns = 100.0;
        dram.channels = 2;
        dram.transaction_bytes = 64;
        dram.pj_per_byte = horowitz::kDramPjPerByte;
        declare_dram_params<C>(b, [](C& c) -> DramConfig& { return c.dram; }, dram,
                               "TPU v1's DDR3 at 34 GB/s, Jouppi et al. ISCA 2017; energy 1.3 nJ per 64 bits, Horowitz ISSCC 2014");
        at_least(b.integer("vector.lanes", [](C& c) -> int64_t& { return c.vector_lanes; }, 128, "lanes",
                           "Vector-unit lanes for non-GEMM operators"), 1);
        above(b.real("vector.ops_per_lane_per_cycle", [](C& c) -> double& { return c.vector_ops_per_lane; }, 1.0,
                     "ops/lane/cycle", "Vector operations per lane per cycle"), 0);
        declare_process_node<C>(b, [](C& c) -> ProcessNode& { return c.node; }, {},
                                "Horowitz's own 45 nm / 0.9 V, so his figures apply as published");
        declare_per_precision<C>(b, "energy.pj_per_mac", [](C& c) -> PerPrecision& { return c.mac_pj; }, {}, "pJ/MAC",
                                 "Energy of one MAC", "energy.mac_pj_{}");
        derive_mac_energies_at_node(b, "energy.pj_per_mac");
        const std::pair<const char*, int> buffers[] = {{"ifmap", 0}, {"filter", 1}, {"ofmap", 2}};
        for (const auto& [buf, i] : buffers) {
            const std::string name = buf;
            sram_at_node(at_least(b.real("sram." + name + ".pj_per_byte", [i = i](C& c) -> double& { return c.sram_pj_per_byte[i]; }, 0,
                                         "pJ/byte", "Access energy of the " + name + " buffer, read or write"),
                                  0),
                         [name](const ParamSet& p) { return 1024.0 * static_cast<double>(p.get_int("sram." + name + "_kib")); },
                         "sram." + name + "_kib");
        }
        b.rename("energy.sram_pj_per_byte", "sram.<ifmap|filter|ofmap>.pj_per_byte");
        horowitz_at_node(at_least(b.real("energy.pj_per_vector_op", [](C& c) -> double& { return c.vector_op_pj; }, 0, "pJ/op",
                                         "Energy of one vector-unit operation"),
                                  0),
                         [](const ParamSet&) { return horowitz::kFp32AddPj; }, "fp32 add 0.9 pJ");
        b.rename("energy.vector_op_pj", "energy.pj_per_vector_op");
        declare_static_power(b, 0.0, "Static (leakage + idle) power, charged over the whole run; 0 = not modeled");
        declare_checked_limit(b, &C::tdp_w, "TPU v1: 75 W (Jouppi et al., ISCA 2017, Table 2).");
        return b;
    }();
    return b;
}

TpuConfig make_tpu_config(const ParamSet& p) {
    TpuConfig c = tpu_params().build(p);
    check_machine_basics(c);
    c.dataflow = c.dataflow_name == "os" ? Dataflow::OS : c.dataflow_name == "is" ? Dataflow::IS : Dataflow::WS;
    c.dataflow_search = c.dataflow_name == "search";
    return c;
}

}  // namespace archsim
