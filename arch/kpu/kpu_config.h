#pragma once
// Typed configuration of the KPU domain-flow fabric (kind = "kpu").
#include <cstdint>
#include <string>

#include "arch/common/machine_keys.h"
#include "arch/memory/dram_config.h"
#include "arch/power/power_spec.h"
#include "sim/base/precision.h"
#include "sim/base/params.h"
#include "sim/base/per_precision.h"

namespace archsim {

/// A Stillwater KPU: a mesh of tiles, each an array of PEs, fed by DRAM -> DMA -> L3 -> block
/// movers -> L2 -> streamers -> L1 -> fabric. Filled only by make_kpu_config(), already valid.
struct KpuConfig : MachineBasics {
    std::string power_mode;                 ///< "low" | "mid" | "high": selects clock and power envelope
    double clock_low_mhz = 0, clock_mid_mhz = 0, clock_high_mhz = 0;
    double power_low_w = 0, power_mid_w = 0, power_high_w = 0;  ///< envelopes, W: the controller's limit
    double vdd_low_v = 0, vdd_mid_v = 0, vdd_high_v = 0;        ///< supply voltage per mode, V (energies hold at mid)
    double power_window_us = 10;                                ///< the power controller's window, us
    double power_step_mhz = 25;                                 ///< step between the clocks it may set, MHz
    int64_t tile_rows = 0, tile_cols = 0;   ///< tiles in the mesh
    int64_t pe_rows = 0, pe_cols = 0;       ///< PEs per tile (R x C)
    /// Tiles that can compute in each precision (0 = every tile): a fabric whose FP32 units are
    /// only in some tiles runs an FP32 model on those tiles alone.
    int64_t int8_tiles = 0, fp16_tiles = 0, bf16_tiles = 0, fp32_tiles = 0, fp8_tiles = 0;
    PerPrecision pe_macs;          ///< MACs per PE per cycle by precision (pe.macs_per_cycle.<p>)
    int64_t fill_cycles = 0, drain_cycles = 0;
    int64_t l1_kib_per_pe = 0, l2_kib_per_tile = 0, l3_kib_per_tile = 0;
    double block_mover_bytes_per_cycle = 0; ///< per tile, L3 -> L2
    double streamer_bytes_per_cycle = 0;    ///< per tile, L2 -> L1 (the skewed operand streams)
    DramConfig dram;
    PerPrecision mac_pj;           ///< energy per MAC by precision (energy.pj_per_mac.<p>), pJ
    double l1_pj_per_byte = 0, l2_pj_per_byte = 0, l3_pj_per_byte = 0;
    double dma_pj_per_byte = 0, block_mover_pj_per_byte = 0, streamer_pj_per_byte = 0;
    double noc_pj_per_flit_hop = 0;  ///< network energy per flit per hop, pJ
    int64_t noc_flit_bytes = 16;     ///< flit width, bytes

    /// Network energy per byte per hop, pJ: a flit's energy over its width.
    double noc_pj_per_byte_hop() const { return noc_pj_per_flit_hop / static_cast<double>(noc_flit_bytes); }
    /// The envelope for MachineBase::enable_power: static_w, the mode's envelope as the limit, the
    /// three modes as voltage-frequency points, energies at mid's voltage, and a first window at
    /// the clock that fits the fabric's upper bound (every unit at its peak rate at once), so a
    /// run shorter than a window never exceeds the envelope.
    PowerSpec power_spec() const;

    /// Tiles in the mesh.
    int64_t tiles() const { return tile_rows * tile_cols; }
    /// Tiles that compute in the run's precision (the `tiles.<precision>_tiles` key, capped at tiles()).
    int64_t compute_tiles() const;
    int64_t pes_per_tile() const { return pe_rows * pe_cols; }
    /// Clock of the selected power mode, MHz.
    double clock_mhz() const;
    /// Power envelope of the selected mode (published design point), W.
    double power_envelope_w() const;
    /// MACs per PE per cycle in the run's precision.
    double macs_per_pe() const;
    /// MAC energy in the run's precision, pJ.
    double mac_pj_now() const;
    /// compute_tiles() x PEs per tile x MACs per PE per cycle.
    double peak_macs_per_cycle() const { return static_cast<double>(compute_tiles() * pes_per_tile()) * macs_per_pe(); }
    /// peak_macs_per_cycle() x clock, MAC/s.
    double peak_macs_per_second() const { return peak_macs_per_cycle() * clock_mhz() * 1e6; }
    double cycle_ps() const { return 1e6 / clock_mhz(); }
};

/// The declared parameters of kind "kpu".
const ParamBinder<KpuConfig>& kpu_params();

/// Builds a KpuConfig from resolved values.
KpuConfig make_kpu_config(const ParamSet& p);

}  // namespace archsim
