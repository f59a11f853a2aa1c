#pragma once
// The TLM extension a core sends to the shared L3: a batch of L2 misses and write-backs.
#include <tlm>

#include <cstdint>
#include <vector>

namespace archsim {

/// What the L3 did with one batch (in lines or bytes stood for: x LineBatch::weight).
struct L3Outcome {
    uint64_t lines = 0;             ///< reads + write-backs that crossed the core's L3 port
    uint64_t l3_hits = 0, l3_misses = 0;
    uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
};

/// Lines one core's L2 missed (reads) and dirty lines it evicted (writebacks) during one block
/// of work, sent to the L3 as one TLM transaction (aggregated per block for speed; the L3 looks
/// up every line). The L3 fills in the outcome.
struct LineBatch : tlm::tlm_extension<LineBatch> {
    int64_t core = 0;
    uint64_t weight = 1;  ///< lines each listed line stands for (cache set sampling, CpuCore::set_sampling)
    std::vector<uint64_t> reads, writebacks;
    // filled by the L3, in lines (bytes) stood for
    uint64_t l3_hits = 0, l3_misses = 0;
    uint64_t dram_read_bytes = 0, dram_write_bytes = 0;

    void clear() {
        reads.clear();
        writebacks.clear();
        l3_hits = l3_misses = dram_read_bytes = dram_write_bytes = 0;
    }
    tlm::tlm_extension_base* clone() const override { return new LineBatch(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const LineBatch&>(other); }
};

}  // namespace archsim
