#pragma once
// The DRAM side of a machine in one piece: the trace component, the DRAM target and (optionally)
// the DMA engine bound to it.
#include <algorithm>
#include <memory>
#include <vector>

#include "arch/common/clock.h"
#include "arch/common/data_ready.h"
#include "arch/common/kernel_memo.h"

#include "arch/common/recorder.h"
#include "arch/memory/dma.h"
#include "arch/memory/dram.h"
#include "arch/memory/dram_config.h"

namespace archsim {

/// Registers component "dram" (cfg.pj_per_byte per byte read or written), builds the DRAM
/// TLM target ("dram") and, when `dma_name` is given, a DMA initiator of cfg.transaction_bytes
/// bound to it. A machine whose own module talks to DRAM (a cache) binds to target() instead.
class DramPort {
public:
    DramPort(Recorder& rec, const DramConfig& cfg, const char* dma_name = "dma")
        : m_cfg(cfg), m_component(rec.memory("dram", cfg.pj_per_byte)),
          m_dram(std::make_unique<Dram>("dram", cfg, rec.trace(), m_component, rec.op_ref())) {
        if (!dma_name) return;
        m_dma = std::make_unique<Dma>(dma_name, cfg.transaction_bytes, cfg.per_burst);
        m_dma->socket.bind(m_dram->socket);
    }
    /// Moves `bytes` through the DMA (`write` = towards DRAM), issued `issue_delay_ps` from now;
    /// returns the absolute completion time, ps (see Dma::transfer).
    double transfer(int64_t bytes, bool write, double issue_delay_ps = 0.0) { return m_dma->transfer(bytes, write, issue_delay_ps); }
    /// A transfer of data the machine itself writes and reads back, named `data_id`: a write
    /// records when the data is there (data()); a read is checked to start no earlier (a
    /// std::logic_error otherwise: see DataReady). Returns the completion time, ps.
    double transfer(int64_t bytes, bool write, double issue_delay_ps, uint64_t data_id) {
        if (!write) m_data.read_at(data_id, sim_now_ps() + issue_delay_ps);
        const double done = m_dma->transfer(bytes, write, issue_delay_ps);
        if (write) m_data.written(data_id, done);
        return done;
    }
    /// The data written through transfer(..., data_id) in the current operator.
    DataReady& data() { return m_data; }
    Dma& dma() { return *m_dma; }

    /// The DRAM's state change over one kernel (kernel memoization): each channel's busy time
    /// beyond the kernel's end, channels numbered from the one the DMA's next burst went to at the
    /// kernel's start, and how far the counters and the DMA's address moved.
    struct MemoState {
        std::vector<double> busy_after_ps;
        uint32_t transactions = 0;
        uint64_t bytes = 0, address = 0;
    };
    /// Adds what a kernel starting at `now_ps` sees of the DRAM to `key` and notes the counters:
    /// each channel's busy time beyond now, numbered from the channel the DMA's next burst goes
    /// to. The channels are identical servers and the DMA deals bursts to them in turn, so a
    /// kernel that starts at another channel with the channels' states rotated alike runs the
    /// same (its events do not name channels): the rotation is the state, not the channel.
    void memo_key(MemoKey& key, double now_ps) {
        m_phase = phase();
        const auto& free = m_dram->channel_free_ps();
        for (size_t i = 0; i < free.size(); ++i) key.add(std::max(0.0, free[(m_phase + i) % free.size()] - now_ps));
        m_start = {{}, m_dram->transactions(), m_dram->bytes_served(), m_dma ? m_dma->next_address() : 0};
    }
    /// The state change since memo_key(), for a kernel that ended at `end_ps`.
    MemoState memo_save(double end_ps) const {
        MemoState s{{}, m_dram->transactions() - m_start.transactions, m_dram->bytes_served() - m_start.bytes,
                    (m_dma ? m_dma->next_address() : 0) - m_start.address};
        const auto& free = m_dram->channel_free_ps();
        for (size_t i = 0; i < free.size(); ++i) s.busy_after_ps.push_back(std::max(0.0, free[(m_phase + i) % free.size()] - end_ps));
        return s;
    }
    /// Applies a recorded change to a replay that ends at `end_ps` (channels rotated to the
    /// replay's own starting channel, noted by its memo_key()).
    void memo_restore(const MemoState& s, double end_ps) {
        std::vector<double> free = m_dram->channel_free_ps();
        for (size_t i = 0; i < free.size(); ++i) {
            double& f = free[(m_phase + i) % free.size()];
            f = std::max(f, end_ps + s.busy_after_ps[i]);
        }
        m_dram->restore(free, s.transactions, s.bytes);
        if (m_dma) m_dma->advance(s.address);
    }
    /// Everything a transfer changes, for putting it back (CpuMachine::trial): each channel's
    /// busy time, the counters and the DMA's next address.
    struct Snapshot {
        std::vector<double> channel_free_ps;
        uint32_t transactions = 0;
        uint64_t bytes = 0, address = 0;
    };
    Snapshot snapshot() const {
        return {m_dram->channel_free_ps(), m_dram->transactions(), m_dram->bytes_served(), m_dma ? m_dma->next_address() : 0};
    }
    /// Puts back a snapshot() (the counters wrap back by their unsigned differences).
    void restore(const Snapshot& s) {
        m_dram->restore(s.channel_free_ps, s.transactions - m_dram->transactions(), s.bytes - m_dram->bytes_served());
        if (m_dma) m_dma->advance(s.address - m_dma->next_address());
    }
    Dram& target() { return *m_dram; }
    uint16_t component() const { return m_component; }

private:
    /// The channel the DMA's next burst goes to (0 without a DMA).
    size_t phase() const {
        return m_dma ? static_cast<size_t>(m_dma->next_address() / uint64_t(m_cfg.transaction_bytes) % uint64_t(m_cfg.channels)) : 0;
    }
    DramConfig m_cfg;
    MemoState m_start;
    size_t m_phase = 0;
    uint16_t m_component;
    std::unique_ptr<Dram> m_dram;
    std::unique_ptr<Dma> m_dma;
    DataReady m_data;
};

}  // namespace archsim
