#pragma once
// The DRAM side of a machine in one piece: the trace component, the DRAM target and (optionally)
// the DMA engine bound to it.
#include <memory>

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
        : m_component(rec.memory("dram", cfg.pj_per_byte)),
          m_dram(std::make_unique<Dram>("dram", cfg, rec.trace(), m_component, rec.op_ref())) {
        if (!dma_name) return;
        m_dma = std::make_unique<Dma>(dma_name, cfg.transaction_bytes, cfg.per_burst);
        m_dma->socket.bind(m_dram->socket);
    }
    /// Moves `bytes` through the DMA (`write` = towards DRAM), issued `issue_delay_ps` from now;
    /// returns the absolute completion time, ps (see Dma::transfer).
    double transfer(int64_t bytes, bool write, double issue_delay_ps = 0.0) { return m_dma->transfer(bytes, write, issue_delay_ps); }
    Dma& dma() { return *m_dma; }
    Dram& target() { return *m_dram; }
    uint16_t component() const { return m_component; }

private:
    uint16_t m_component;
    std::unique_ptr<Dram> m_dram;
    std::unique_ptr<Dma> m_dma;
};

}  // namespace archsim
