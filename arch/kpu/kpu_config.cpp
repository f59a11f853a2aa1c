#include "arch/kpu/kpu_config.h"

#include "arch/kpu/wavefront.h"
#include "arch/memory/dram_params.h"
#include "sim/base/error.h"

#include <algorithm>

namespace archsim {

double KpuConfig::clock_mhz() const {
    return power_mode == "low" ? clock_low_mhz : power_mode == "high" ? clock_high_mhz : clock_mid_mhz;
}

double KpuConfig::power_envelope_w() const {
    return power_mode == "low" ? power_low_w : power_mode == "high" ? power_high_w : power_mid_w;
}

PowerSpec KpuConfig::power_spec() const {
    PowerSpec s;
    s.static_w = static_w, s.limit_w = power_envelope_w(), s.window_us = power_window_us, s.nominal_mhz = clock_mhz();
    s.ref_vdd_v = vdd_mid_v, s.step_mhz = power_step_mhz;
    s.points = {{clock_low_mhz, vdd_low_v}, {clock_mid_mhz, vdd_mid_v}, {clock_high_mhz, vdd_high_v}};
    // every unit the clock drives at its peak rate at once: the MACs, each tile's streamer (L2
    // read, L1 write and read per byte) and its block mover (L3 read, L2 write, the network's
    // mean hops per byte); what the events of kpu_machine.cpp charge per byte. The DMA's DRAM
    // traffic (and its L3 writes) is measured, not bounded (PowerSpec::bound_onchip_w).
    const double tiles_n = static_cast<double>(compute_tiles()), hz = clock_mhz() * 1e6;
    const double per_cycle_pj = peak_macs_per_cycle() * mac_pj_now() +
                                tiles_n * streamer_bytes_per_cycle * (streamer_pj_per_byte + l2_pj_per_byte + 2 * l1_pj_per_byte) +
                                tiles_n * block_mover_bytes_per_cycle *
                                    (block_mover_pj_per_byte + l3_pj_per_byte + l2_pj_per_byte +
                                     noc_pj_per_byte_hop() * mean_mesh_hops(tile_rows, tile_cols));
    // (the energies hold at mid's voltage: the bound at the mode's own voltage)
    s.bound_onchip_w = per_cycle_pj * hz * 1e-12 * s.energy_scale(s.nominal_mhz);
    return s;
}

double KpuConfig::macs_per_pe() const {
    return pe_macs.at(precision);
}

int64_t KpuConfig::compute_tiles() const {
    const int64_t n = by_precision(precision, int8_tiles, fp16_tiles, bf16_tiles, fp32_tiles, fp8_tiles);
    return n > 0 ? std::min(n, tiles()) : tiles();
}

double KpuConfig::mac_pj_now() const { return mac_pj.at(precision); }

// Defaults are Stillwater's T256 design point (a published proposal, not silicon), the energies
// of Stillwater's catalogue and analytical KPU model (see shared/reference/README.md and
// docs/power_validation.md) and the catalogue's mode voltages, idle power and flit width. Numbers
// Stillwater does not publish (the FP32 rate, mover bandwidths, the power controller's window and
// clock steps) are marked as assumptions in their docs.
const ParamBinder<KpuConfig>& kpu_params() {
    static const ParamBinder<KpuConfig> b = [] {
        ParamBinder<KpuConfig> b;
        using C = KpuConfig;
        const std::string sw = "Stillwater T256 design point";
        declare_machine_basics(b, {"kpu", "kpu-domain-flow",
                                   "kpu-domain-flow: elementwise consumers and reductions as further recurrences of the same wavefront", "int8",
                                   "Operand precision (operand bytes, PE rate and MAC energy; accumulators are 32-bit)"});
        b.string("power_mode", [](C& c) -> std::string& { return c.power_mode; }, "mid", {"low", "mid", "high"},
                 "Operating point: selects clock.<mode>_mhz and power.<mode>_w");
        above(b.real("clock.low_mhz", [](C& c) -> double& { return c.clock_low_mhz; }, 450.0, "MHz", "Clock at power_mode = low (" + sw + ")"), 0);
        above(b.real("clock.mid_mhz", [](C& c) -> double& { return c.clock_mid_mhz; }, 600.0, "MHz", "Clock at power_mode = mid (" + sw + ")"), 0);
        above(b.real("clock.high_mhz", [](C& c) -> double& { return c.clock_high_mhz; }, 700.0, "MHz", "Clock at power_mode = high (" + sw + ")"), 0);
        const std::string lim = "; the power controller lowers the clock, along the voltage-frequency points of the three modes, "
                                "whenever a window's power would exceed it";
        at_least(b.real("power.low_w", [](C& c) -> double& { return c.power_low_w; }, 15.0, "W", "Power envelope at low (" + sw + ")" + lim + "; 0 = no limit"), 0);
        at_least(b.real("power.mid_w", [](C& c) -> double& { return c.power_mid_w; }, 30.0, "W", "Power envelope at mid (" + sw + ")" + lim + "; 0 = no limit"), 0);
        at_least(b.real("power.high_w", [](C& c) -> double& { return c.power_high_w; }, 50.0, "W", "Power envelope at high (" + sw + ")" + lim + "; 0 = no limit"), 0);
        const std::string cat = "Stillwater's catalogue, branes-ai/embodied-schemas kpus/stillwater/kpu_t256_32x32_lp5x16_16nm_tsmc_ffp.yaml power profiles";
        above(b.real("voltage.low_v", [](C& c) -> double& { return c.vdd_low_v; }, 0.60, "V", "Supply voltage at power_mode = low (" + cat + ")"), 0);
        above(b.real("voltage.mid_v", [](C& c) -> double& { return c.vdd_mid_v; }, 0.75, "V",
                     "Supply voltage at power_mode = mid, the one the energy.* and *.pj_per_byte energies hold at (" + cat + ")"), 0);
        above(b.real("voltage.high_v", [](C& c) -> double& { return c.vdd_high_v; }, 0.90, "V", "Supply voltage at power_mode = high (" + cat + ")"), 0);
        at_least(b.real("power.clock_step_mhz", [](C& c) -> double& { return c.power_step_mhz; }, 25.0, "MHz",
                        "Step between the clocks the power controller may set below the mode's clock (not published; an "
                        "assumption: a PLL's steps); 0 = any clock"), 0);
        above(b.real("power.window_us", [](C& c) -> double& { return c.power_window_us; }, 10.0, "us",
                     "Window the power controller averages over before it sets the next clock (not published; an assumption: "
                     "an on-die controller acting within tens of microseconds)"), 0);
        at_most(at_least(b.integer("tiles.rows", [](C& c) -> int64_t& { return c.tile_rows; }, 16, "tiles", "Rows of the tile mesh (" + sw + ")"), 1), 256);
        at_most(at_least(b.integer("tiles.cols", [](C& c) -> int64_t& { return c.tile_cols; }, 16, "tiles", "Columns of the tile mesh (" + sw + ")"), 1), 256);
        for (const std::string& prec : precision_names()) {
            const Precision p = parse_precision(prec, "precision");
            at_least(b.integer("tiles." + prec + "_tiles",
                               [p](C& c) -> int64_t& {
                                   return by_precision(p, c.int8_tiles, c.fp16_tiles, c.bf16_tiles, c.fp32_tiles, c.fp8_tiles);
                               },
                               0, "tiles", "Tiles that compute in " + prec + "; 0 = every tile (capped at the mesh)"),
                     0);
        }
        at_most(at_least(b.integer("pe.rows", [](C& c) -> int64_t& { return c.pe_rows; }, 32, "PEs", "PE rows R per tile (" + sw + ")"), 1), 1024);
        at_most(at_least(b.integer("pe.cols", [](C& c) -> int64_t& { return c.pe_cols; }, 32, "PEs", "PE columns C per tile (" + sw + ")"), 1), 1024);
        declare_per_precision<C>(b, "pe.macs_per_cycle", [](C& c) -> PerPrecision& { return c.pe_macs; }, {1.0, 0.5, 0.5, 0.25},
                                 "MACs/PE/cycle", "MACs per PE per cycle; 0 = the fabric cannot run this precision",
                                 "pe.macs_per_cycle_{}",
                                 {"T256's published ~315 TOPS = 262144 PEs x 2 x 600 MHz x 1",
                                  "half the INT8 rate, as BF16 (Stillwater's catalogue: 157.3 BF16 TFLOPS against 314.6 INT8 TOPS)",
                                  "half the INT8 rate (Stillwater's catalogue: 157.3 BF16 TFLOPS against 314.6 INT8 TOPS)",
                                  "not published; assumed half the BF16 rate"});
        at_least(b.integer("pipeline.fill_cycles", [](C& c) -> int64_t& { return c.fill_cycles; }, 32, "cycles",
                           "Pipeline fill charged once per operator pass, before the first wavefront (" + sw + ")"), 0);
        at_least(b.integer("pipeline.drain_cycles", [](C& c) -> int64_t& { return c.drain_cycles; }, 32, "cycles",
                           "Pipeline drain charged once per operator pass, after the last wavefront (" + sw + ")"), 0);
        at_least(b.integer("l1.kib_per_pe", [](C& c) -> int64_t& { return c.l1_kib_per_pe; }, 4, "KiB",
                           "L1 per PE (" + sw + "); reported only: the output-stationary schedule keeps one accumulator "
                           "and the forwarded operands per PE, so L1 capacity never limits it"), 1);
        at_least(b.integer("l2.kib_per_tile", [](C& c) -> int64_t& { return c.l2_kib_per_tile; }, 32, "KiB",
                           "L2 banks per tile, double-buffered: a tile reuses an operand panel still in its L2 half (" + sw +
                               ")"), 1);
        at_least(b.integer("l3.kib_per_tile", [](C& c) -> int64_t& { return c.l3_kib_per_tile; }, 256, "KiB",
                           "L3 per tile; the fabric's L3 is tiles x this (" + sw + ": 256 tiles x 256 KiB = 64 MiB)"), 1);
        above(b.real("block_mover.bytes_per_cycle", [](C& c) -> double& { return c.block_mover_bytes_per_cycle; }, 64.0,
                     "bytes/cycle/tile", "L3 -> L2 block-mover bandwidth per tile (not published; assumed 64)"), 0);
        above(b.real("streamer.bytes_per_cycle", [](C& c) -> double& { return c.streamer_bytes_per_cycle; }, 128.0,
                     "bytes/cycle/tile",
                     "L2 -> L1 streamer bandwidth per tile (not published; assumed (R + C) x 2 bytes: one operand row and "
                     "column per cycle at 16 bits)"), 0);
        DramConfig dram;  // T256: LPDDR5 at 256 GB/s; Stillwater's DDR energy 10 pJ/B
        dram.bandwidth_gbps = 256.0;
        dram.latency_ns = 100.0;
        dram.channels = 8;
        dram.transaction_bytes = 64;
        dram.pj_per_byte = 10.0;
        declare_dram_params<C>(b, [](C& c) -> DramConfig& { return c.dram; }, dram,
                               "T256's LPDDR5 at 256 GB/s; energy 10 pJ/B from Stillwater's KPU model");
        const std::string sm = "Stillwater's analytical KPU model";
        declare_per_precision<C>(b, "energy.pj_per_mac", [](C& c) -> PerPrecision& { return c.mac_pj; }, {0.10, 0.16, 0.16, 0.30},
                                 "pJ/MAC", "Energy of one MAC", "energy.mac_pj_{}",
                                 {sm, "not published; BF16's 0.16 of " + sm, sm, sm});
        at_least(b.real("l1.pj_per_byte", [](C& c) -> double& { return c.l1_pj_per_byte; }, 0.3, "pJ/byte", "L1 access (" + sm + ")"), 0);
        at_least(b.real("l2.pj_per_byte", [](C& c) -> double& { return c.l2_pj_per_byte; }, 0.8, "pJ/byte", "L2 access (" + sm + ")"), 0);
        at_least(b.real("l3.pj_per_byte", [](C& c) -> double& { return c.l3_pj_per_byte; }, 2.0, "pJ/byte", "L3 access (" + sm + ")"), 0);
        at_least(b.real("dma.pj_per_byte", [](C& c) -> double& { return c.dma_pj_per_byte; }, 1.5, "pJ/byte", "DMA engine, DRAM <-> L3 (" + sm + ")"), 0);
        at_least(b.real("block_mover.pj_per_byte", [](C& c) -> double& { return c.block_mover_pj_per_byte; }, 0.8, "pJ/byte", "Block mover, L3 -> L2 (" + sm + ")"), 0);
        at_least(b.real("streamer.pj_per_byte", [](C& c) -> double& { return c.streamer_pj_per_byte; }, 0.3, "pJ/byte", "Streamer, L2 -> L1 (" + sm + ")"), 0);
        at_least(b.real("noc.pj_per_flit_hop", [](C& c) -> double& { return c.noc_pj_per_flit_hop; }, 0.5, "pJ/(flit*hop)",
                        "Tile-mesh network energy per flit per hop (Stillwater's energy table, branes-ai/graphs "
                        "kpu_yaml_loader.py: 0.5 pJ per flit per hop)"), 0);
        at_least(b.integer("noc.flit_bytes", [](C& c) -> int64_t& { return c.noc_flit_bytes; }, 16, "bytes",
                           "Width of one network flit (Stillwater's catalogue: 16 B, 128 bit, on the 16 nm parts)"), 1);
        for (const char* lvl : {"l1", "l2", "l3", "dma", "block_mover", "streamer"})
            b.rename(std::string("energy.") + lvl + "_pj_per_byte", std::string(lvl) + ".pj_per_byte");
        b.rename("energy.noc_pj_per_byte_hop", "noc.pj_per_flit_hop");
        b.rename("noc.pj_per_byte_hop", "noc.pj_per_flit_hop");
        declare_static_power(b, 1.79, "Static power drawn whatever runs: the part's idle power (" + cat + ": 1.79 W, 6.0% of the 30 W default)");
        return b;
    }();
    return b;
}

KpuConfig make_kpu_config(const ParamSet& p) {
    KpuConfig c = kpu_params().build(p);
    check_machine_basics(c, [&](Precision) { return c.macs_per_pe(); }, "pe.macs_per_cycle", "fabric");
    if (!(c.clock_low_mhz < c.clock_mid_mhz && c.clock_mid_mhz < c.clock_high_mhz))
        throw UserError("clock.low_mhz", "the modes' clocks must rise from low to mid to high (" + format_value(c.clock_low_mhz) + ", " +
                                             format_value(c.clock_mid_mhz) + ", " + format_value(c.clock_high_mhz) + " MHz)");
    if (c.power_envelope_w() > 0 && c.power_envelope_w() <= c.static_w)
        throw UserError("power." + c.power_mode + "_w", "an envelope of " + format_value(c.power_envelope_w()) +
                                                            " W leaves nothing above energy.static_w (" + format_value(c.static_w) +
                                                            " W) for the fabric to run on");
    return c;
}

}  // namespace archsim
