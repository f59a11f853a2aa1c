#pragma once
// Typed configuration of the CPU model (kind = "cpu").
#include <cstdint>
#include <string>

#include "arch/common/machine_keys.h"
#include "arch/energy/process_node.h"
#include "arch/memory/dram_config.h"
#include "sim/base/precision.h"
#include "sim/base/params.h"
#include "sim/base/per_precision.h"

namespace archsim {

/// One cache level's geometry and timing.
struct CacheLevelConfig {
    int64_t kib = 0;                ///< capacity, KiB (per core for L1d/L2, shared for L3)
    int64_t ways = 0;               ///< associativity
    int64_t latency_cycles = 0;     ///< load-to-use latency, core cycles
    double bytes_per_cycle = 0;     ///< bandwidth into the level above, per core, bytes/cycle
    double pj_per_byte = 0;         ///< access energy, read or write, pJ/byte
    int64_t bytes() const { return kib * 1024; }
};

/// A multicore CPU: cores with SIMD FMA units (and AMX tiles where the part has them), private
/// L1d and L2, a shared L3 and DRAM. Filled only by make_cpu_config(), already valid.
struct CpuConfig : MachineBasics {
    std::string host_cpu;  ///< host.cpu: the machine tools/cpu-config wrote it on ("" = a published part)
    double clock_mhz = 0;
    int64_t cores = 0;
    int64_t vector_bits = 0;        ///< SIMD register width, bits (256 AVX2, 512 AVX-512)
    int64_t vector_registers = 0;   ///< architectural SIMD registers (16 AVX2, 32 AVX-512)
    PerPrecision simd_macs;  ///< SIMD MACs (FMA) per core per cycle by precision (core.macs_per_cycle.<p>); 0 = none
    PerPrecision amx_macs;   ///< AMX tile MACs per core per cycle by precision (core.amx_macs_per_cycle.<p>); 0 = none
    int64_t line_bytes = 64;
    CacheLevelConfig l1, l2, l3;
    DramConfig dram;
    double eff_gemm = 0;            ///< fraction of peak MAC rate a GEMM micro-kernel sustains
    double eff_vector = 0;          ///< fraction of peak SIMD rate non-GEMM kernels sustain
    double eff_dram = 0;            ///< fraction of peak DRAM bandwidth streams sustain
    double eff_cache = 0;           ///< fraction of the L2 -> L1 and L3 -> L2 bandwidths streams sustain
    double pack_bytes_per_cycle = 0;///< bytes a core copies per cycle while packing a block
    double blas_pack_bytes_per_cycle = 0;///< bytes of weight a core packs per cycle in the system BLAS (0 = pack_bytes_per_cycle)
    double reference_cycles_per_op = 0;  ///< cycles per operation of a framework's scalar reference kernel (0 = the SIMD rate)
    double op_overhead_us = 0;      ///< fixed cost of starting one operator (dispatch, thread fork/join), us
    bool fuse_elementwise = true;   ///< elementwise consumers run as post-ops of their producer
    bool prepacked_weights = true;  ///< weights sit in the micro-kernel's panel layout (reordered at load)
    std::string blocking_name = "analytic";  ///< gemm.blocking: "analytic" or "search"
    bool blocking_search = false;   ///< gemm.blocking = "search": the mapping search chooses each GEMM's blocking
    int64_t sample_sets = 16;       ///< cache set sampling: one set in this many simulated (1 = off; sampling.sets_per_sample)
    bool replay_repeats = true;     ///< replay repeated instances once the caches repeat (replay.repeats)
    bool replay_units = true;       ///< replay a kernel's repeated loop units once a core's caches repeat (replay.units)
    double sample_min_l3s = 2;      ///< kernels whose tensors span at least this many L3 capacities are set-sampled (sampling.min_kernel_l3s)
    ProcessNode node;        ///< what the Horowitz-derived energy defaults are scaled to
    PerPrecision mac_pj_by;  ///< energy of one SIMD or AMX MAC (FMA) by precision (energy.pj_per_mac.<p>), pJ

    double cycle_ps() const { return 1e6 / clock_mhz; }
    /// MACs per core per cycle a contraction gets in the run's precision: AMX where the part has
    /// it for that precision, else the SIMD rate, else (no native path) the fp32 rate after
    /// conversion.
    double mac_rate() const;
    /// Core cycles per byte a GEMM packs: a load and a store per byte at core.pack_bytes_per_cycle,
    /// or, for the system BLAS's driver (`blas`), its measured core.blas_pack_bytes_per_cycle
    /// where the config has one.
    double pack_cycles_per_byte(bool blas) const {
        return blas && blas_pack_bytes_per_cycle > 0 ? 1.0 / blas_pack_bytes_per_cycle : 2.0 / pack_bytes_per_cycle;
    }
    /// True when mac_rate() comes from AMX tiles.
    bool uses_amx() const;
    /// Energy of one MAC in the run's precision, pJ.
    double mac_pj() const;
    /// The period, in lines, over which set sampling picks its residues (set_sample.h): the
    /// greatest common divisor of every level's number of sets.
    int64_t sample_modulus() const;
    /// The set-sampling ratio the caches allow: the largest divisor of sample_sets that divides
    /// sample_modulus() (1: no sampling).
    int64_t sample_ratio() const;
    /// Elements of the run's precision in one SIMD register.
    int64_t lanes() const { return vector_bits / (8 * operand_bytes(precision)); }
};

/// The declared parameters of kind "cpu".
const ParamBinder<CpuConfig>& cpu_params();

/// Builds a CpuConfig from resolved values; throws UserError when a cache size is not a whole
/// number of sets.
CpuConfig make_cpu_config(const ParamSet& p);

}  // namespace archsim
