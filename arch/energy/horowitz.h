#pragma once
// Energy constants from M. Horowitz, "Computing's Energy Problem (and what we can do about it)",
// ISSCC 2014, 45 nm, 0.9 V; and the scaling rules archsim applies to them.
#include <cstdint>

#include "sim/base/precision.h"

namespace archsim::horowitz {

/// Multiply-accumulate energy at 45 nm, pJ: the multiply in the operand precision plus the add
/// in the accumulator precision (int32 for int8, fp32 for the float formats):
/// int8 0.2 + 0.1 = 0.3; fp16 1.1 + 0.9 = 2.0; fp32 3.7 + 0.9 = 4.6; bf16: the fp16 multiply
/// scaled by mantissa-multiplier area, (8/11)^2 * 1.1 = 0.58, + 0.9 = 1.48; fp8 (E4M3, the wider
/// of the two OFP8 mantissas: 4 bits with the hidden one) the same way, (4/11)^2 * 1.1 = 0.15,
/// + 0.9 = 1.05.
double mac_pj(Precision p);

/// SRAM access energy per byte for an array of `capacity_bytes`: the 64-bit read energies
/// 10 pJ (8 KiB), 20 pJ (32 KiB), 100 pJ (1 MiB) divided by 8 bytes, interpolated linearly in
/// log(capacity) vs log(energy) between those points and extrapolated with the end slopes.
double sram_pj_per_byte(int64_t capacity_bytes);

/// TF32 MAC (NVIDIA tensor cores' fp32 mode: 10-bit mantissa, 11 bits with the hidden one): the
/// fp32 multiply scaled by mantissa-multiplier area, (11/24)^2 x 3.7, plus the fp32 add 0.9 pJ.
double tf32_mac_pj();

/// The node Horowitz's figures hold at: 45 nm, 0.9 V.
constexpr double kNodeNm = 45.0, kVddV = 0.9;

/// First-order scaling of a switching energy from 45 nm / 0.9 V to `node_nm` at `vdd_v`:
/// E = C V^2 with the switched capacitance proportional to the feature size, so the factor is
/// (node_nm / 45) x (vdd_v / 0.9)^2 (classical Dennard scaling, e.g. Horowitz's own slides; it
/// overstates the gain below ~16 nm, where wires scale less than gates). 7 nm at 0.75 V: 0.108.
/// Throws std::invalid_argument for a non-positive node or voltage.
double node_scale(double node_nm, double vdd_v);

/// DRAM energy per byte: 1.3 nJ per 64-bit access (the low end of Horowitz's 1.3-2.6 nJ) over
/// its 8 bytes = 162.5 pJ/B (about 20 pJ per bit). Interface energy: not scaled with the logic node.
constexpr double kDramPjPerByte = 1300.0 / 8.0;

/// FP32 add, pJ: the default cost of one vector-unit operation.
constexpr double kFp32AddPj = 0.9;

}  // namespace archsim::horowitz
