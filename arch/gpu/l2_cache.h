#pragma once
// The GPU's shared L2 as a TLM-2.0 target contended by every SM, backed by DRAM.
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <memory>

#include "arch/common/buffer_memo.h"
#include "arch/memory/tile_buffer.h"

namespace archsim {

class TraceWriter;
class Dma;

/// A tile in the L2: the tensor it belongs to (`owner`, -1 for none) and its place there
/// (`local`, independent of the tensor's id, so a kernel memo can name the tile relative to a
/// kernel's tensors); its L2 key (the transaction's address) is key().
struct TileId {
    int32_t owner = -1;
    uint64_t local = 0;
    uint64_t key() const { return owned_tile_key(owner, local); }
};

/// Carried by every SM -> L2 transaction: the tensor the bytes belong to, and whether a store
/// writes that tensor whole (so later kernels find it resident) or, with no tensor (-1), writes
/// a workspace tile (a split-K partial sum) that stays resident under its key for its reader;
/// and the tile's identity (its owner and place, for the L2's contents).
struct TensorTag : tlm::tlm_extension<TensorTag> {
    int32_t tensor = -1;
    bool whole = false;
    TileId tile;
    bool missed = false;  ///< set by the L2: the load went to DRAM
    tlm::tlm_extension_base* clone() const override { return new TensorTag(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const TensorTag&>(other); }
};

/// Models the L2 as one bandwidth server (`bytes_per_ps`) with a hit latency, holding tiles and
/// whole tensors with LRU replacement. A load (address = the tile's key, length = its bytes; one
/// transaction per CTA operand tile, not per 32-byte sector, for speed) that misses is fetched
/// from DRAM through the DMA; stores are written through to DRAM and keep the data resident.
/// Each transaction is an SramRead / SramWrite event on this component.
class L2Cache : public sc_core::sc_module {
public:
    /// Bound by every SM's initiator socket (a multi-passthrough socket: one target, many initiators).
    tlm_utils::multi_passthrough_target_socket<L2Cache> socket;

    L2Cache(sc_core::sc_module_name name, int64_t capacity_bytes, double bytes_per_ps, double latency_ps,
            TraceWriter& trace, uint16_t component, const uint32_t& current_op, Dma& dram_port);

    /// Marks `tensor` (`bytes`) resident, as the stores that just wrote it left it, if it fits.
    /// Untimed bookkeeping: the stores themselves were timed as transactions.
    void retain(int32_t tensor, int64_t bytes) { m_lines.insert(whole_key(tensor), bytes, tensor, kWhole); }
    /// When the L2 is next free, ps (a kernel memo's view).
    double free_ps() const { return m_free_ps; }
    /// Its tiles (a kernel memo journals, copies and restores them: arch/common/buffer_memo.h).
    TileBuffer& lines() { return m_lines; }
    /// Sets when the L2 is next free and adds to its hit and miss counts (a memoized kernel's replay).
    void restore(double free_ps, uint64_t hits, uint64_t misses) {
        m_free_ps = free_ps;
        m_hits += hits, m_misses += misses;
    }
    /// The `local` of a tensor resident as a whole.
    static constexpr uint64_t kWhole = 0x5A5A;

    uint64_t hits() const { return m_hits; }
    uint64_t misses() const { return m_misses; }

private:
    void b_transport(int sm, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
    static uint64_t whole_key(int32_t tensor) { return TileId{tensor, kWhole}.key(); }

    TileBuffer m_lines;
    double m_ps_per_byte;
    double m_latency_ps;
    double m_free_ps = 0;
    TraceWriter& m_trace;
    uint16_t m_component;
    const uint32_t& m_current_op;
    Dma& m_dram;
    uint64_t m_hits = 0, m_misses = 0;
};

}  // namespace archsim
