#pragma once
// The process node a machine's energies are scaled to from Horowitz's 45 nm / 0.9 V figures:
// two config keys shared by every kind, and defaults derived from them instead of literals.
#include <functional>
#include <string>

#include "arch/energy/horowitz.h"
#include "sim/base/params.h"

namespace archsim {

/// Feature size and supply voltage of the machine's logic and SRAM.
struct ProcessNode {
    double nm = horowitz::kNodeNm;  ///< feature size, nm
    double vdd_v = horowitz::kVddV; ///< supply voltage, V
};

/// The scale factor (horowitz::node_scale) of the node a resolved config declares in
/// `energy.node_nm` and `energy.vdd_v`.
double node_scale_of(const ParamSet& p);

/// Declares `energy.node_nm` and `energy.vdd_v` on `b`, bound to the ProcessNode `field` selects;
/// `source` says where the defaults come from.
template <class T>
void declare_process_node(ParamBinder<T>& b, std::function<ProcessNode&(T&)> field, const ProcessNode& defaults,
                          const std::string& source) {
    above(b.real("energy.node_nm", [field](T& c) -> double& { return field(c).nm; }, defaults.nm, "nm",
                 "Process node the Horowitz (ISSCC 2014, 45 nm) energies are scaled to, x node/45 (" + source + ")"),
          0);
    above(b.real("energy.vdd_v", [field](T& c) -> double& { return field(c).vdd_v; }, defaults.vdd_v, "V",
                 "Supply voltage the Horowitz (0.9 V) energies are scaled to, x (V/0.9)^2 (" + source + ")"),
          0);
}

/// Makes `key`'s default `pj_at_45nm()` x node_scale_of(config); `what` names the Horowitz figure.
ParamDecl& horowitz_at_node(ParamDecl& d, std::function<double(const ParamSet&)> pj_at_45nm, const std::string& what);

/// Makes `key`'s default the Horowitz SRAM energy per byte (horowitz::sram_pj_per_byte) of an
/// array of `capacity_bytes(config)`, scaled to the node.
ParamDecl& sram_at_node(ParamDecl& d, std::function<double(const ParamSet&)> capacity_bytes, const std::string& what);

/// Makes `d`'s default Horowitz's MAC energy for `p` (horowitz::mac_pj; for fp32 with `tf32`, a
/// TF32 MAC: horowitz::tf32_mac_pj) scaled to the node.
ParamDecl& mac_at_node(ParamDecl& d, Precision p, bool tf32 = false);

/// Gives `<key>.int8` ... `<key>.fp32` and `<key>.fp8`, declared with declare_per_precision, Horowitz's MAC
/// energies at the node (mac_at_node); `fp32_is_tf32`: the fp32 value is a TF32 MAC.
template <class T>
void derive_mac_energies_at_node(ParamBinder<T>& b, const std::string& key, bool fp32_is_tf32 = false) {
    for (Precision p : {Precision::Int8, Precision::Fp16, Precision::Bf16, Precision::Fp32, Precision::Fp8})
        mac_at_node(b.decl(key + "." + to_string(p)), p, fp32_is_tf32);
}

}  // namespace archsim
