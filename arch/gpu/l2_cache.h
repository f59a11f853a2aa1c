#pragma once
// The GPU's shared L2 as a TLM-2.0 target contended by every SM, backed by DRAM.
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "arch/common/buffer_memo.h"
#include "arch/common/data_ready.h"
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

/// The part of a tensor an access touches: the tensor (-1: none, e.g. a weight tile or a
/// workspace, which the L2 knows only by its tile key) and the fraction [lo, hi) of its bytes in
/// address order (the rows a tile covers), so a read finds the part of a resident tensor that
/// LRU has not evicted yet.
struct TensorPart {
    int32_t tensor = -1;
    double lo = 0, hi = 1;
    /// Rows [first, first + rows) of a tensor of `total` rows (any row-major unit).
    static TensorPart rows(int32_t tensor, int64_t first, int64_t rows, int64_t total) {
        if (total <= 0) return {tensor, 0, 1};
        return {tensor, static_cast<double>(first) / static_cast<double>(total),
                static_cast<double>(std::min(first + rows, total)) / static_cast<double>(total)};
    }
};

/// Carried by every SM -> L2 transaction: the part of a tensor a load reads (for the tensor's
/// resident chunks), whether it is a workspace access (a split-K partial sum: its store is
/// written back, kept resident and not sent to DRAM; a load that misses pays the write-back of
/// the evicted dirty lines and the read), and the tile's identity (its owner and place, for the
/// L2's contents).
struct TensorTag : tlm::tlm_extension<TensorTag> {
    TensorPart part;
    bool workspace = false;
    TileId tile;
    bool missed = false;  ///< set by the L2: some of the load's bytes came from DRAM
    tlm::tlm_extension_base* clone() const override { return new TensorTag(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const TensorTag&>(other); }
};

/// Models the L2 as one bandwidth server (`bytes_per_ps`) with a hit latency, holding tiles and
/// tensors with LRU replacement. A load (address = the tile's key, length = its bytes; one
/// transaction per CTA operand tile, not per 32-byte sector, for speed) hits when its tile is
/// resident; else the share of its bytes in the tensor's resident chunks hits and the rest is
/// fetched from DRAM through the DMA (then its tile is resident). A tensor a kernel wrote stays
/// resident as kChunks chunks in address order (retain()), so eviction drops its least recently
/// used part, not all of it, and a larger L2 holds a superset of it. Stores of tensors are written
/// through to DRAM (a write-back L2 writes every dirty line back in the end); workspace stores
/// are written back (see TensorTag). Each transaction is an SramRead / SramWrite event on this
/// component.
class L2Cache : public sc_core::sc_module {
public:
    /// Bound by every SM's initiator socket (a multi-passthrough socket: one target, many initiators).
    tlm_utils::multi_passthrough_target_socket<L2Cache> socket;

    L2Cache(sc_core::sc_module_name name, int64_t capacity_bytes, double bytes_per_ps, double latency_ps,
            TraceWriter& trace, uint16_t component, const uint32_t& current_op, Dma& dram_port);

    /// Marks `tensor` (`bytes`) resident as the stores that just wrote it left it: its kChunks
    /// chunks inserted in address order, so LRU keeps as much of its end as fits. Untimed
    /// bookkeeping: the stores themselves were timed as transactions.
    void retain(int32_t tensor, int64_t bytes);
    /// When the L2 is next free, ps (a kernel memo's view).
    double free_ps() const { return m_free_ps; }
    /// Its tiles (a kernel memo journals, copies and restores them: arch/common/buffer_memo.h).
    TileBuffer& lines() { return m_lines; }
    /// Sets when the L2 is next free and adds to its hit and miss counts (a memoized kernel's replay).
    void restore(double free_ps, uint64_t hits, uint64_t misses) {
        m_free_ps = free_ps;
        m_hits += hits, m_misses += misses;
    }
    /// How many chunks a resident tensor is kept as, and the `local` of its first.
    static constexpr int64_t kChunks = 64;
    static constexpr uint64_t kChunk0 = 0x5A5A0000;

    /// When each workspace tile's last store completes: a workspace load that starts before
    /// the store of its tile completed, or of a tile never stored, is a simulator bug
    /// (DataReady throws std::logic_error). Cleared by the kernel that owns the workspace.
    DataReady& workspace_ready() { return m_workspace; }

    uint64_t hits() const { return m_hits; }
    uint64_t misses() const { return m_misses; }

private:
    void b_transport(int sm, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
    /// The share of `part` in its tensor's resident chunks (marks them most recently used).
    double resident_share(const TensorPart& part);

    TileBuffer m_lines;
    double m_ps_per_byte;
    double m_latency_ps;
    double m_free_ps = 0;
    TraceWriter& m_trace;
    uint16_t m_component;
    const uint32_t& m_current_op;
    Dma& m_dram;
    uint64_t m_hits = 0, m_misses = 0;
    DataReady m_workspace;
};

}  // namespace archsim
