#pragma once
// How the CPU model runs blocks of work on its cores: each core's time cursor, the memory cost
// of a block, and BLIS-style barriers that decide which core's events count as the critical path.
#include <cstdint>
#include <memory>
#include <vector>

#include "arch/common/recorder.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_core.h"

namespace archsim {

/// The trace components a block's events land on.
struct CpuComponents {
    uint16_t cpu = 0, vector = 0, pack = 0, l1 = 0, l2 = 0, l3 = 0;
    std::vector<uint16_t> cores;
};

/// Per-core time cursors over one operator. Blocks are simulated in time order (the core free
/// first takes its next block), so the shared L3 and DRAM see requests in order; barrier() makes
/// every core wait for the slowest, as BLIS's phases do.
class CoreSchedule {
public:
    CoreSchedule(const CpuConfig& cfg, std::vector<std::unique_ptr<CpuCore>>& cores, Recorder& rec, CpuComponents comps)
        : m_cfg(cfg), m_cores(cores), m_rec(rec), m_comps(std::move(comps)), m_cursor(static_cast<size_t>(cfg.cores), 0.0),
          m_operand_load(rec.stall_cause("operand_load", "a block's cache and memory traffic took longer than its compute")) {}

    /// Every core's cursor to `t_ps` (an operator's start).
    void start_all(double t_ps) { std::fill(m_cursor.begin(), m_cursor.end(), t_ps); }
    /// When `core` is free, ps.
    double cursor(int64_t core) const { return m_cursor[static_cast<size_t>(core)]; }
    /// The latest cursor: when the operator's last block ends, ps.
    double end_ps() const;
    /// Records a whole-CPU stall (a dispatch overhead) at `t_ps` lasting `dur_ps`.
    void stall_now(double t_ps, double dur_ps, StallCauseId cause);

    /// Ends one block of work on `core` that began at `start` (its cursor): sends its L2 misses to
    /// the L3, derives its end from its busy time (packing `pack_ps` + compute `compute_ps`) and
    /// its memory traffic (L2 -> L1 fills at l2.bytes_per_cycle x efficiency.cache, its L3 and
    /// DRAM transaction's completion), and queues its events until the next barrier.
    void finish_block(int64_t core, double pack_ps, double compute_ps, uint64_t macs, uint64_t vec_ops, uint64_t packed_bytes);
    /// All cores wait for the slowest; queued events go to the trace, with compute and stall
    /// cycles counted only on the core that set the pace (the operator's critical path).
    void barrier();
    /// The core free first among those with blocks left (next[c] < queue[c].size()), or -1.
    int64_t next_core(const std::vector<size_t>& next, const std::vector<std::vector<int64_t>>& queue) const;

private:
    struct Pending {
        int64_t core;
        TraceEvent event;
    };

public:
    /// The cursors and the events queued until the next barrier, for putting them back
    /// (CpuMachine::trial).
    struct Snapshot {
        std::vector<double> cursor;
        std::vector<Pending> pending;
        uint32_t seq = 0;
    };
    Snapshot snapshot() const { return {m_cursor, m_pending, m_seq}; }
    void restore(const Snapshot& s) { m_cursor = s.cursor, m_pending = s.pending, m_seq = s.seq; }

private:
    void pend(int64_t core, EventKind kind, uint16_t comp, double start, double dur, Amount a, StallCauseId cause = kNoStallCause);

    const CpuConfig& m_cfg;
    std::vector<std::unique_ptr<CpuCore>>& m_cores;
    Recorder& m_rec;
    CpuComponents m_comps;
    std::vector<double> m_cursor;
    std::vector<Pending> m_pending;
    uint32_t m_seq = 0;
    StallCauseId m_operand_load;
};

}  // namespace archsim
