#include "arch/energy/process_node.h"

namespace archsim {

double node_scale_of(const ParamSet& p) { return horowitz::node_scale(p.get_real("energy.node_nm"), p.get_real("energy.vdd_v")); }

ParamDecl& horowitz_at_node(ParamDecl& d, std::function<double(const ParamSet&)> pj_at_45nm, const std::string& what) {
    return derived(
        d, [pj_at_45nm](const ParamSet& p) { return pj_at_45nm(p) * node_scale_of(p); },
        what + " (Horowitz ISSCC 2014) scaled to energy.node_nm and energy.vdd_v");
}

ParamDecl& sram_at_node(ParamDecl& d, std::function<double(const ParamSet&)> capacity_bytes, const std::string& what) {
    return derived(
        d,
        [capacity_bytes](const ParamSet& p) {
            return horowitz::sram_pj_per_byte(static_cast<int64_t>(capacity_bytes(p))) * node_scale_of(p);
        },
        "Horowitz ISSCC 2014 SRAM read energy of " + what + " (log-log in capacity), scaled to energy.node_nm and energy.vdd_v");
}

ParamDecl& mac_at_node(ParamDecl& d, Precision p, bool tf32) {
    static const char* const what[] = {"8-bit multiply 0.2 + 32-bit add 0.1 pJ", "fp16 multiply 1.1 + fp32 accumulate 0.9 pJ",
                                       "fp16 multiply x (8/11)^2 mantissa area + fp32 add 0.9 pJ", "fp32 multiply 3.7 + add 0.9 pJ",
                                       "TF32: fp32 multiply x (11/24)^2 mantissa area + fp32 add 0.9 pJ",
                                       "fp8 (E4M3): fp16 multiply x (4/11)^2 mantissa area + fp32 add 0.9 pJ"};
    const bool as_tf32 = tf32 && p == Precision::Fp32;
    const int i = as_tf32                   ? 4
                  : p == Precision::Int8    ? 0
                  : p == Precision::Fp16    ? 1
                  : p == Precision::Bf16    ? 2
                  : p == Precision::Fp8     ? 5
                                            : 3;
    return horowitz_at_node(
        d, [p, as_tf32](const ParamSet&) { return as_tf32 ? horowitz::tf32_mac_pj() : horowitz::mac_pj(p); }, what[i]);
}

}  // namespace archsim
