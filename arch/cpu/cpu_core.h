#pragma once
// One CPU core's private caches and its port to the shared L3.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>

#include "arch/cpu/cache.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/line_batch.h"

namespace archsim {

/// Traffic a core's private caches saw since the last take_counts(), in lines.
struct CoreCounts {
    uint64_t l1_reads = 0, l1_writes = 0;  ///< every line the core touched (hits + misses)
    uint64_t l1_misses = 0;                ///< lines the L2 delivered (or write-allocated)
    uint64_t l2_misses = 0;                ///< lines sent on to the L3
    uint64_t l2_writebacks = 0;            ///< dirty L1 victims written into the L2
    uint64_t l2_dirtied = 0;               ///< lines a write made dirty in the L2 (each leaves it dirty once)

    CoreCounts& operator+=(const CoreCounts& o) {
        l1_reads += o.l1_reads, l1_writes += o.l1_writes, l1_misses += o.l1_misses;
        l2_misses += o.l2_misses, l2_writebacks += o.l2_writebacks, l2_dirtied += o.l2_dirtied;
        return *this;
    }
    /// The counts since `earlier` (a copy taken before).
    CoreCounts operator-(const CoreCounts& earlier) const {
        return {l1_reads - earlier.l1_reads, l1_writes - earlier.l1_writes, l1_misses - earlier.l1_misses,
                l2_misses - earlier.l2_misses, l2_writebacks - earlier.l2_writebacks, l2_dirtied - earlier.l2_dirtied};
    }
};

/// What an access that misses a core's L2 does. Fetch: reads the line from the L3 (and DRAM).
/// The packing buffers' writes overwrite whole lines whose old contents are dead, and BLIS reuses
/// the buffers from call to call, so a running process never reads them from DRAM to overwrite
/// them: NoFetch allocates the line dirty in the core's caches only (a buffer only its core
/// reads: packed A); Claim also writes it into the shared L3 as a write-allocate with no DRAM
/// read (a buffer the other cores read: packed B, which they would otherwise miss in the L3, the
/// model having no snooping, and read from DRAM).
enum class Fill : uint8_t { Fetch, NoFetch, Claim };

/// A core: private L1d and L2 (write-back, write-allocate, filled on every miss) and an
/// initiator socket to the shared L3. touch() runs one access through L1 -> L2 and queues L2
/// misses and dirty L2 victims; flush() sends the queue to the L3 as one transaction and
/// returns when it completes.
class CpuCore : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<CpuCore> socket;

    CpuCore(sc_core::sc_module_name name, int64_t index, const CpuConfig& cfg);

    /// One access to cache line `line` (byte address / line size); a write marks it dirty.
    /// Under set sampling (set_sampling()) the line stands for sample_weight() lines: every count
    /// it adds is that many. `fill`: what an L2 miss does (Fill).
    void touch_line(uint64_t line, bool write, Fill fill = Fill::Fetch) {
        (write ? m_counts.l1_writes : m_counts.l1_reads) += m_sample_w;
        access_line(line, write, fill);
    }
    /// Touches every line of [addr, addr + bytes) (under set sampling, its sampled lines; the
    /// L1's accesses are still counted line by line, exactly). `fill` says what an L2 miss does
    /// (Fill: a packing buffer's whole-line writes need no read).
    void touch(uint64_t addr, uint64_t bytes, bool write, Fill fill = Fill::Fetch) {
        if (bytes == 0) return;
        const uint64_t lb = static_cast<uint64_t>(m_line_bytes);
        // the line numbers: a shift where lines are a power of two bytes (every bundled config)
        const uint64_t first = m_line_shift >= 0 ? addr >> m_line_shift : addr / lb;
        const uint64_t last = m_line_shift >= 0 ? (addr + bytes - 1) >> m_line_shift : (addr + bytes - 1) / lb;
        if (m_sample_w == 1) {
            for (uint64_t l = first; l <= last; ++l) touch_line(l, write, fill);
            return;
        }
        touch_sampled(first, last, write, fill);
    }
    /// Touches `rows` rows of `row_bytes` bytes, `stride` bytes apart, from `addr`.
    void touch_rows(uint64_t addr, int64_t rows, uint64_t row_bytes, uint64_t stride, bool write) {
        for (int64_t r = 0; r < rows; ++r) touch(addr + static_cast<uint64_t>(r) * stride, row_bytes, write);
    }

    /// Sends the queued L2 misses and write-backs to the L3, issued `issue_ps` after now; returns
    /// the absolute completion time, ps, and what the L3 did in `out` (then clears the queue).
    double flush(double issue_ps, L3Outcome& out);
    /// Returns the counts since the last call and zeroes them.
    CoreCounts take_counts() {
        CoreCounts c = m_counts;
        m_counts = {};
        return c;
    }
    int64_t index() const { return m_index; }

    // ---- for steady-state fast-forward (steady_loop.h) -----------------------------------------
    /// The counts since the last take_counts(), unchanged.
    const CoreCounts& counts() const { return m_counts; }
    /// Adds the counts of units skipped by fast-forward.
    void add_counts(const CoreCounts& c) { m_counts += c; }
    /// The L2 misses and write-backs queued for the L3 since the last flush(), in order.
    std::vector<uint64_t>& queued_reads() { return m_batch.reads; }
    std::vector<uint64_t>& queued_writebacks() { return m_batch.writebacks; }
    /// A dirty line leaving the L1: written into the L2 (its dirty victim queued for the L3).
    void write_back_from_l1(uint64_t line) {
        m_counts.l2_writebacks += m_sample_w;
        const Cache::Result w = m_l2.access(line, true);
        m_counts.l2_dirtied += w.dirtied ? m_sample_w : 0;
        if (w.evicted_dirty) m_batch.writebacks.push_back(w.victim);
    }
    // ---- cache set sampling (CpuMachine's large kernels) -----------------------------------------
    /// From now on only the lines of `sample` are simulated (set_sample.h: they fill exactly the
    /// sampled sets of every level, and each of those sees all of its accesses), each standing for
    /// sample.weight() lines in the miss counts and in what reaches the L3; the L1's accesses are
    /// counted exactly. SetSample::none(): every line. Leaving sampling, call
    /// Cache::replicate_sets() on each cache.
    void set_sampling(const SetSample& sample) {
        m_sample = sample;
        m_sample_w = sample.weight();
        const uint64_t mod = static_cast<uint64_t>(sample.modulus);
        m_sample_mask = (mod & (mod - 1)) == 0 ? mod - 1 : 0;
        m_batch.weight = m_sample_w;
    }
    /// Lines each simulated line stands for (1 without sampling).
    uint64_t sample_weight() const { return m_sample_w; }
    /// The core's state that its accesses change: both caches, the counts and the queued lines.
    struct Snapshot {
        Cache l1, l2;
        CoreCounts counts;
        std::vector<uint64_t> reads, writebacks;
    };
    Snapshot snapshot() const { return {m_l1, m_l2, m_counts, m_batch.reads, m_batch.writebacks}; }
    /// Puts back a snapshot() (the set sampling in force is the caller's: set_sampling()).
    void restore(const Snapshot& s) {
        m_l1 = s.l1, m_l2 = s.l2, m_counts = s.counts;
        m_batch.reads = s.reads, m_batch.writebacks = s.writebacks;
    }
    Cache& l1() { return m_l1; }
    Cache& l2() { return m_l2; }
    int64_t line_bytes() const { return m_line_bytes; }

private:
    /// touch() under set sampling: lines [first, last] counted as L1 accesses, the sampled ones
    /// among them simulated (out of line, so that the unsampled loop stays small and inlined).
    void touch_sampled(uint64_t first, uint64_t last, bool write, Fill fill);
    /// One access's way through the L1 and L2, its misses and write-backs counted x m_sample_w;
    /// an L2 miss goes to the L3 as `fill` says. An L1 hit (most accesses) stays inline; a miss
    /// goes on out of line (l1_missed).
    void access_line(uint64_t line, bool write, Fill fill = Fill::Fetch) {
        const Cache::Result r1 = m_l1.access(line, write);
        if (!r1.hit) l1_missed(line, write, fill, r1.evicted_dirty, r1.victim);  // a hit evicts nothing
    }
    /// The rest of access_line() after the L1 missed `line`: its victim, if dirty (`evicted_dirty`,
    /// `victim`), written into the L2, then the line looked up there. (The victim comes by value:
    /// a Result by reference would be stored to memory on every access, hits included.)
    void l1_missed(uint64_t line, bool write, Fill fill, bool evicted_dirty, uint64_t victim);

    int64_t m_index, m_line_bytes;
    int m_line_shift = -1;  ///< log2(m_line_bytes) where it is a power of two, else -1
    Cache m_l1, m_l2;
    LineBatch m_batch;
    CoreCounts m_counts;
    SetSample m_sample;
    uint64_t m_sample_w = 1;
    uint64_t m_sample_mask = 0;  ///< modulus - 1 where the sampling modulus is a power of two (> 1), else 0
};

}  // namespace archsim
